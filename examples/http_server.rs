//! Go's net/http hello world, a JSON handler, and Rob Pike's "Google Search" handler (fan out to
//! three backends in goroutines, gather with a `select` and a timeout), served by hyper from
//! goroutines with `goro::hyper`, and shut down gracefully on Ctrl-C. The Go original:
//!
//! ```go
//! type Greeting struct {
//!     Message string `json:"message"`
//!     Method  string `json:"method"`
//!     Path    string `json:"path"`
//! }
//!
//! type Results struct {
//!     Query    string   `json:"query"`
//!     Results  []string `json:"results"`
//!     TimedOut bool     `json:"timed_out"`
//! }
//!
//! func search(w http.ResponseWriter, r *http.Request) {
//!     q := r.URL.Query().Get("q")
//!     done := make(chan struct{})
//!     defer close(done) // the backends still running give up when the handler returns
//!     c := make(chan string, 3)
//!     for _, b := range []string{"web", "image", "video"} {
//!         go func(b string) {
//!             select {
//!             case <-time.After(latency(b, r)):
//!                 c <- fmt.Sprintf("%s result for %q", b, q)
//!             case <-done:
//!             }
//!         }(b)
//!     }
//!     res := Results{Query: q, Results: []string{}}
//!     timeout := time.After(200 * time.Millisecond)
//! gather:
//!     for i := 0; i < 3; i++ {
//!         select {
//!         case s := <-c:
//!             res.Results = append(res.Results, s)
//!         case <-timeout:
//!             res.TimedOut = true
//!             break gather
//!         }
//!     }
//!     w.Header().Set("Content-Type", "application/json")
//!     json.NewEncoder(w).Encode(res)
//! }
//!
//! func main() {
//!     http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
//!         if r.URL.Path != "/" {
//!             http.NotFound(w, r)
//!             return
//!         }
//!         io.WriteString(w, "Hello, World!\n")
//!     })
//!     http.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
//!         w.Header().Set("Content-Type", "application/json")
//!         json.NewEncoder(w).Encode(Greeting{"Hello, World!", r.Method, r.URL.Path})
//!     })
//!     http.HandleFunc("/search", search)
//!
//!     ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//!     defer stop()
//!     srv := &http.Server{Addr: "127.0.0.1:8080"}
//!     go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
//!     if err := srv.ListenAndServe(); err != http.ErrServerClosed {
//!         log.Fatal(err)
//!     }
//! }
//! ```
//!
//! Here the routing is a `match` on the path in one `service_fn` (what Go's `DefaultServeMux`
//! does for these three paths), and `goro::hyper::serve_with_context` is `ListenAndServe` and
//! `Shutdown` in one call: it returns once the context is done and every request it had begun
//! has been answered. The backends are fakes that answer after 10, 20 and 30 ms; `slow=KIND` in
//! the query makes one of them take 2 s, past the handler's 200 ms timeout (Pike's talk uses
//! 80 ms). The query is split on `&` and `=` but not percent-decoded.
//!
//! Serve on 127.0.0.1:8080 (or the port given as the argument) until Ctrl-C:
//!
//! ```text
//! cargo run --release --features hyper --example http_server [PORT]
//! ```
//!
//! With the argument `--self-test` it serves on a port the system picks, requests every endpoint
//! with hyper's client over `goro::hyper::Io` (one keep-alive connection), checks each answer,
//! sends itself SIGINT (as Ctrl-C would), checks that the server shut down and that no G is
//! left, and exits 0:
//!
//! ```text
//! cargo run --release --features hyper --example http_server -- --self-test
//! ```

use goro::context::Context;
use goro::hyper::Error;
use goro::net::{TcpListener, TcpStream};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{self, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::time::{Duration, Instant};

/// The fake backends and how long each takes to answer.
const BACKENDS: [(&str, Duration); 3] =
    [("web", Duration::from_millis(10)), ("image", Duration::from_millis(20)), ("video", Duration::from_millis(30))];
/// How long a backend named by `slow=` takes.
const SLOW: Duration = Duration::from_secs(2);
/// How long the search handler waits for its backends.
const SEARCH_TIMEOUT: Duration = Duration::from_millis(200);

/// The answer of `/json`.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Greeting {
    message: String,
    method: String,
    path: String,
}

/// The answer of `/search`.
#[derive(Serialize, Deserialize, Debug)]
struct Results {
    query: String,
    results: Vec<String>,
    timed_out: bool,
}

type Body = Full<Bytes>;

/// The handler: routes by path (Go's `http.HandleFunc` calls on `DefaultServeMux`).
async fn route(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    Ok(match req.uri().path() {
        "/" => text(StatusCode::OK, "Hello, World!\n"),
        "/json" => json(&Greeting {
            message: "Hello, World!".into(),
            method: req.method().to_string(),
            path: req.uri().path().into(),
        }),
        "/search" => {
            let q = query_value(&req, "q").unwrap_or_default();
            let slow = query_value(&req, "slow");
            json(&search(q, slow.as_deref()).await)
        }
        _ => text(StatusCode::NOT_FOUND, "404 page not found\n"), // http.NotFound
    })
}

/// Go's `r.URL.Query().Get(key)` (without the percent-decoding).
fn query_value(req: &Request<Incoming>, key: &str) -> Option<String> {
    req.uri().query()?.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v.into())
}

/// Asks every backend at once, each in a G of its own, and gathers what answers within
/// `SEARCH_TIMEOUT` (Pike's "Google Search 2.1").
async fn search(q: String, slow: Option<&str>) -> Results {
    // done := make(chan struct{}); defer close(done): `done` closes when the handler returns
    // (its only sender is dropped), and a backend still waiting gives up.
    let (_done, quit) = goro::chan::<()>(0);
    // c := make(chan string, 3): buffered, so that a backend never waits to deliver.
    let (c, results) = goro::chan::<String>(BACKENDS.len());
    for (kind, latency) in BACKENDS {
        let latency = if slow == Some(kind) { SLOW } else { latency };
        let (c, quit, q) = (c.clone(), quit.clone(), q.clone());
        goro::go! {
            goro::select! {
                recv(goro::time::after(latency)) -> _ => { let _ = c.send(format!("{kind} result for {q:?}")).await; },
                recv(quit) -> _ => {}, // the handler gave up on us
            }
        };
    }
    let mut res = Results { query: q, results: Vec::new(), timed_out: false };
    let timeout = goro::time::after(SEARCH_TIMEOUT);
    for _ in 0..BACKENDS.len() {
        goro::select! {
            recv(results) -> s => res.results.extend(s),
            recv(timeout) -> _ => {
                res.timed_out = true;
                break;
            }
        }
    }
    res
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// `w.Header().Set("Content-Type", "application/json"); json.NewEncoder(w).Encode(v)`.
fn json<T: Serialize>(v: &T) -> Response<Body> {
    let mut body = serde_json::to_vec(v).expect("plain structs serialize");
    body.push(b'\n'); // as Go's Encoder writes
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

#[goro::main]
async fn main() -> Result<(), Error> {
    // ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
    let (ctx, stop) =
        goro::signal::notify_context(&Context::background(), [goro::signal::SIGINT, goro::signal::SIGTERM]);
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some("--self-test") {
        let r = self_test(&ctx).await;
        stop();
        return r;
    }
    let port: u16 = match arg {
        Some(p) => p.parse().map_err(|e| format!("usage: http_server [PORT | --self-test]: {p:?}: {e}"))?,
        None => 8080,
    };
    let ln = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = ln.local_addr()?;
    println!("listening on http://{addr}/ (Ctrl-C to stop); try:");
    println!("  curl http://{addr}/");
    println!("  curl http://{addr}/json");
    println!("  curl 'http://{addr}/search?q=goro'");
    println!("  curl 'http://{addr}/search?q=goro&slow=video'   # one backend misses the {SEARCH_TIMEOUT:?} timeout");
    goro::hyper::serve_with_context(&ctx, ln, service_fn(route)).await?;
    stop(); // defer stop(): a second Ctrl-C ends the program at once again
    println!("shut down: every request begun was answered");
    Ok(())
}

/// Serves on a port the system picks, checks every endpoint, and shuts down as Ctrl-C would.
async fn self_test(ctx: &Context) -> Result<(), Error> {
    let start = Instant::now();
    let gs_before = goro::runtime::num_goroutine();
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    let server = {
        let ctx = ctx.clone();
        goro::go(async move { goro::hyper::serve_with_context(&ctx, ln, service_fn(route)).await })
    };
    println!("self-test: serving on http://{addr}/");

    // The client: hyper's HTTP/1 connection over a goro TcpStream, driven by a G of its own.
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(goro::hyper::Io::new(TcpStream::connect(addr).await?)).await?;
    let client_conn = goro::go(conn);

    let (status, ctype, body) = get(&mut sender, "/").await?;
    println!("GET /                         -> {status}: {body:?}");
    assert_eq!(
        (status, ctype.as_str(), body.as_str()),
        (StatusCode::OK, "text/plain; charset=utf-8", "Hello, World!\n")
    );

    let (status, ctype, body) = get(&mut sender, "/json").await?;
    println!("GET /json                     -> {status}: {}", body.trim_end());
    assert_eq!((status, ctype.as_str()), (StatusCode::OK, "application/json"));
    let greeting: Greeting = serde_json::from_str(&body)?;
    assert_eq!(
        greeting,
        Greeting { message: "Hello, World!".into(), method: Method::GET.to_string(), path: "/json".into() }
    );

    // Every backend answers in time.
    let t = Instant::now();
    let (status, _, body) = get(&mut sender, "/search?q=goro").await?;
    let took = t.elapsed();
    println!("GET /search?q=goro            -> {status} in {took:.1?}: {}", body.trim_end());
    let res: Results = serde_json::from_str(&body)?;
    assert_eq!((status, res.query.as_str(), res.timed_out), (StatusCode::OK, "goro", false));
    let mut got = res.results.clone();
    got.sort();
    assert_eq!(got, ["image result for \"goro\"", "video result for \"goro\"", "web result for \"goro\""]);
    assert!(took < SEARCH_TIMEOUT, "all three answered, so the handler did not wait for its timeout");

    // The video backend misses the deadline: the handler answers with the other two at 200 ms.
    let t = Instant::now();
    let (status, _, body) = get(&mut sender, "/search?q=goro&slow=video").await?;
    let took = t.elapsed();
    println!("GET /search?q=goro&slow=video -> {status} in {took:.1?}: {}", body.trim_end());
    let res: Results = serde_json::from_str(&body)?;
    assert_eq!((status, res.timed_out), (StatusCode::OK, true));
    let mut got = res.results.clone();
    got.sort();
    assert_eq!(got, ["image result for \"goro\"", "web result for \"goro\""]);
    assert!(took >= SEARCH_TIMEOUT && took < SLOW, "answered at the timeout, not after the slow backend: {took:?}");

    let (status, _, body) = get(&mut sender, "/nope").await?;
    println!("GET /nope                     -> {status}: {body:?}");
    assert_eq!((status, body.as_str()), (StatusCode::NOT_FOUND, "404 page not found\n"));

    // Hang up: dropping the sender ends the client's connection, and its G.
    drop(sender);
    client_conn.await.expect("the client's connection G panicked")?;

    // Ctrl-C, as the user would press it: the context is cancelled and the server shuts down.
    goro::signal::raise(goro::signal::SIGINT)?;
    let served = goro::time::timeout(Duration::from_secs(5), server).await.expect("the server did not shut down");
    served.expect("the server's G panicked")?;
    assert!(ctx.err().is_some(), "the server returned because SIGINT cancelled its context");
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed after the shutdown");

    // Every G of the server (its connection's, the backends the slow search gave up on) is gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    while goro::runtime::num_goroutine() > gs_before {
        assert!(Instant::now() < deadline, "goroutines left: {} > {gs_before}", goro::runtime::num_goroutine());
        goro::time::sleep(Duration::from_millis(1)).await;
    }
    println!("self-test passed: shut down on SIGINT, no goroutine left, {:.1?} in all", start.elapsed());
    Ok(())
}

/// `GET path` on the client's keep-alive connection: the status, the Content-Type and the body.
async fn get(sender: &mut SendRequest<Empty<Bytes>>, path: &str) -> Result<(StatusCode, String, String), Error> {
    sender.ready().await?; // the previous response is read: the connection takes the next request
    let req = Request::get(path).header(header::HOST, "127.0.0.1").body(Empty::new())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status();
    let ctype = resp.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("?").to_owned());
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, ctype.unwrap_or_default(), String::from_utf8(body.to_vec())?))
}
