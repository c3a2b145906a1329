//! The service of `service.rs` served by `goro::hyper::serve`: one G per connection, HTTP/1.1
//! and HTTP/2 (hyper-util's auto builder), the server's defaults (a 30 s `ReadHeaderTimeout`,
//! no `IdleTimeout`), on a goro runtime with 2 Ps. The main G runs the accept loop, as Go's
//! `http.Serve` runs in `main`.
//!
//! `benches/http.sh` runs it; by hand:
//!
//! ```sh
//! cargo run --release -p goro-benches --example http_goro -- 127.0.0.1:8080
//! ```
//!
//! The one argument is the address to listen on (default `127.0.0.1:0`, a free port); the
//! first line on stdout is `http://ADDR`. `--no-timeouts` after it serves with neither timeout
//! (`Server::new().read_header_timeout(None)`), to measure what the timeouts' bookkeeping costs.

#[path = "service.rs"]
mod service;

use hyper::service::service_fn;

fn main() -> std::io::Result<()> {
    let addr = service::listen_addr();
    let no_timeouts = std::env::args().skip(2).any(|a| a == "--no-timeouts");
    let rt = goro::runtime::Builder::new().max_procs(service::WORKERS).build()?;
    rt.block_on(async move {
        let ln = goro::net::TcpListener::bind(addr.as_str()).await?;
        service::announce(ln.local_addr()?);
        let svc = service_fn(service::handle);
        if no_timeouts {
            goro::hyper::Server::new().read_header_timeout(None).serve(ln, svc).await
        } else {
            goro::hyper::serve(ln, svc).await
        }
    })
}
