//! The service of `service.rs` served by hyper on tokio, as hyper-util's examples do: a task
//! per connection, HTTP/1.1 and HTTP/2 (hyper-util's auto builder with `TokioExecutor`, the
//! connection as `TokioIo`), hyper's defaults (no timer, so no header timeout), `TCP_NODELAY`
//! as goro and Go set it, on a multi-thread runtime with 2 workers. The accept loop is a task
//! too, so that only the 2 workers run (the thread of `block_on` only waits for it).
//!
//! `benches/http.sh` runs it; by hand:
//!
//! ```sh
//! cargo run --release -p goro-benches --example http_tokio -- 127.0.0.1:8080
//! ```
//!
//! The one argument is the address to listen on (default `127.0.0.1:0`, a free port); the
//! first line on stdout is `http://ADDR`.

#[path = "service.rs"]
mod service;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;

async fn serve(ln: tokio::net::TcpListener) -> std::io::Result<()> {
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        let (stream, _) = ln.accept().await?;
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        tokio::spawn(async move {
            // The connection's error is its client's business.
            let _ = builder.serve_connection(TokioIo::new(stream), service_fn(service::handle)).await;
        });
    }
}

fn main() -> std::io::Result<()> {
    let addr = service::listen_addr();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(service::WORKERS).enable_all().build()?;
    rt.block_on(async move {
        let ln = tokio::net::TcpListener::bind(addr.as_str()).await?;
        service::announce(ln.local_addr()?);
        tokio::spawn(serve(ln)).await.expect("the accept loop panicked")
    })
}
