//! HTTP from goroutines: [hyper] 1.x on goro (the cargo feature `hyper`).
//!
//! A server is Go's: one G per connection, each speaking HTTP/1.1 or HTTP/2 as its client
//! chooses, with Go's `ReadHeaderTimeout` and `IdleTimeout`, and Go's graceful
//! `Shutdown`. A handler is a hyper [`Service`](hyper::service::Service) (`service_fn`), or
//! any tower `Service`, an axum `Router` among them, through [`TowerToHyperService`].
//!
//! | Go | goro |
//! |----|------|
//! | `http.Serve(l, handler)` | [`serve(listener, service).await`](serve) |
//! | `srv.Shutdown(ctx)` | [`serve_with_context(&ctx, listener, service).await`](serve_with_context) returns once `ctx` is done and every request begun has been answered |
//! | `http.Server{ReadHeaderTimeout, IdleTimeout}` | [`Server::new().read_header_timeout(d).idle_timeout(d)`](Server) |
//! | `srv.ServeConn`-like, on a `net.Pipe` in a test | [`Server::serve_connection(conn, service)`](Server::serve_connection) |
//! | (runtime glue) | [`Executor`] (spawns a G), [`Timer`] (goro's timers, the bubble's clock in `synctest`), [`Io`] (a [`TcpStream`](crate::net::TcpStream) or [`Pipe`](crate::net::Pipe) as hyper's I/O) |
//!
//! A client is hyper's own (`hyper::client::conn::http1::handshake(Io::new(stream))`), its
//! connection driven by a G: see `examples/http_client.rs`.
//!
//! ```
//! use http_body_util::Full;
//! use hyper::body::Bytes;
//! use hyper::service::service_fn;
//! use hyper::{Request, Response};
//! use std::convert::Infallible;
//!
//! // func hello(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "Hello, World!") }
//! async fn hello(_req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from("Hello, World!"))))
//! }
//!
//! goro::run(async {
//!     let ln = goro::net::TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = ln.local_addr()?;
//!     goro::go(goro::hyper::serve(ln, service_fn(hello))); // go http.Serve(l, handler)
//!
//!     // A request by hand: HTTP/1.1 is text.
//!     let conn = goro::net::TcpStream::connect(addr).await?;
//!     conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await?;
//!     let mut response = Vec::new();
//!     let mut buf = [0; 1024];
//!     loop {
//!         match conn.read(&mut buf).await? {
//!             0 => break,
//!             n => response.extend_from_slice(&buf[..n]),
//!         }
//!     }
//!     let response = String::from_utf8(response).unwrap();
//!     assert!(response.starts_with("HTTP/1.1 200 OK"));
//!     assert!(response.ends_with("Hello, World!"));
//!     Ok::<_, std::io::Error>(())
//! })
//! .unwrap();
//! ```

mod conn;
mod io;
mod rt;
mod server;

pub use hyper_util::service::TowerToHyperService;
pub use io::{Io, Transport};
pub use rt::{Executor, Timer};
pub use server::{serve, serve_with_context, Server};

/// The error of a connection: hyper's, or what the service or its body failed with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
