//! The service every Rust server of `benches/http.sh` runs, included by `goro_server.rs` and
//! `tokio_server.rs` with `#[path]`, so that both serve this very code: TechEmpower's two
//! simplest tests, as `benches/go/httpserver` serves them with Go's `net/http`.
//!
//! - `GET /plaintext`: `Hello, World!`, `text/plain`.
//! - `GET /json`: `{"message":"Hello, World!"}`, `application/json`, serialized per request
//!   (serde's derive and `serde_json`, as Go's handler calls `json.Marshal`).
//! - anything else: 404 with an empty body.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde::Serialize;
use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;

/// The runtime's worker threads (goro's Ps, tokio's workers), as Go's `GOMAXPROCS=2`.
pub const WORKERS: usize = 2;

/// The address to listen on: the first argument, else a free port of the loopback.
pub fn listen_addr() -> String {
    std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".to_owned())
}

/// Tells `benches/http.sh` where the server listens: `http://ADDR`, one line on stdout.
pub fn announce(addr: SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http://{addr}");
    let _ = out.flush();
}

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

/// The handler, a hyper service through `service_fn(handle)`.
pub async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (content_type, body) = match req.uri().path() {
        "/plaintext" => ("text/plain", Bytes::from_static(b"Hello, World!")),
        "/json" => {
            let json = serde_json::to_vec(&Message { message: "Hello, World!" }).expect("a struct of a string");
            ("application/json", Bytes::from(json))
        }
        _ => {
            let mut res = Response::new(Full::new(Bytes::new()));
            *res.status_mut() = StatusCode::NOT_FOUND;
            return Ok(res);
        }
    };
    let mut res = Response::new(Full::new(body));
    res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(res)
}
