//! Go's `http.Server` shape on hyper: [`Server`], [`serve`], [`serve_with_context`].

use super::conn::{self, Limits};
use super::{Error, Executor, Timer, Transport};
use crate::chan::Receiver;
use crate::context::Context;
use crate::net::TcpListener;
use crate::sync::WaitGroup;
use http_body::Body;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::server::conn::auto;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// An HTTP server's settings (Go's `http.Server`): its timeouts. [`serve`](Server::serve)
/// and [`serve_with_context`](Server::serve_with_context) run it on a listener, one G per
/// connection, each speaking HTTP/1.1 or HTTP/2 as the client chooses.
///
/// | Go | goro |
/// |----|------|
/// | `srv := &http.Server{ReadHeaderTimeout: 5 * time.Second}` | `let srv = Server::new().read_header_timeout(Duration::from_secs(5));` |
/// | `srv.IdleTimeout = 2 * time.Minute` | `.idle_timeout(Duration::from_secs(120))` |
/// | `srv.Serve(l)` | `srv.serve(l, service).await` |
/// | `srv.Shutdown(ctx)` | `srv.serve_with_context(&ctx, l, service).await` returns once `ctx` is done and every request it had begun has been answered |
///
/// The defaults: a 30 s `ReadHeaderTimeout` (hyper's own default, which keeps a slowloris
/// client from holding a G forever; Go's zero value has none) and no `IdleTimeout` (Go's: an
/// idle keep-alive connection stays open until the client closes it).
///
/// ```
/// use goro::hyper::Server;
/// use http_body_util::Full;
/// use hyper::body::Bytes;
/// use hyper::service::service_fn;
/// use std::time::Duration;
/// goro::run(async {
///     let ln = goro::net::TcpListener::bind("127.0.0.1:0").await?;
///     let (ctx, cancel) = goro::context::with_cancel(&goro::context::Context::background());
///     let server = goro::go(async move {
///         let hello = service_fn(|_req| async {
///             Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from("Hello, World!"))))
///         });
///         Server::new()
///             .read_header_timeout(Duration::from_secs(5))
///             .idle_timeout(Duration::from_secs(120))
///             .serve_with_context(&ctx, ln, hello)
///             .await
///     });
///     cancel(); // Go's srv.Shutdown: stop accepting, finish what was begun
///     server.await.unwrap()
/// })
/// .unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Server {
    limits: Limits,
    builder: auto::Builder<Executor>,
}

impl Default for Server {
    fn default() -> Server {
        Server::new()
    }
}

impl Server {
    /// A server with the default settings (see [`Server`]).
    pub fn new() -> Server {
        let mut builder = auto::Builder::new(Executor);
        // The header and idle timeouts are `conn`'s, Go's two; hyper's own header timer would
        // count a keep-alive connection's idle time against the header's.
        builder.http1().timer(Timer).header_read_timeout(None);
        builder.http2().timer(Timer);
        Server { limits: Limits { read_header: Some(Duration::from_secs(30)), idle: None }, builder }
    }

    /// Go's `ReadHeaderTimeout`: how long a request's header may take to arrive, from the
    /// connection's start for its first request and from the request's first byte for the
    /// next ones. Past it the connection is closed. `None`: no limit.
    pub fn read_header_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Server {
        self.limits.read_header = timeout.into();
        self
    }

    /// Go's `IdleTimeout`: how long a keep-alive connection may wait for its next request
    /// once the last response has been written. Past it the connection is closed. `None`: no
    /// limit.
    pub fn idle_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Server {
        self.limits.idle = timeout.into();
        self
    }

    /// Go's `srv.Serve(l)`: accepts connections forever, serving each on a G of its own.
    /// Returns only when accepting fails for good (a listener whose descriptor limit is
    /// reached waits and tries again, as Go's does).
    ///
    /// # Errors
    /// The listener's error, at once; the connections it accepted go on being served by their
    /// Gs (Go's `Serve` does the same).
    pub fn serve<S, B>(
        &self,
        listener: TcpListener,
        service: S,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static
    where
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Error>,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Error>,
    {
        self.clone().accept_loop(None, listener, service)
    }

    /// Serves as [`serve`](Server::serve) until `ctx` is done, then shuts down as Go's
    /// `srv.Shutdown` does: stops accepting (the listener is closed), closes the idle
    /// connections, lets every request already begun finish and its connection close (an
    /// HTTP/2 client is told with a `GOAWAY`), and returns `Ok(())` once every connection's G
    /// has ended.
    ///
    /// A request whose client hung up is not waited for: hyper drops its handler's future
    /// when it sees the connection close (Go would cancel the request's context and let the
    /// handler return by itself). Work that must finish belongs in a G of its own.
    ///
    /// # Errors
    /// The listener's error, at once, as [`serve`](Server::serve) returns it.
    pub fn serve_with_context<S, B>(
        &self,
        ctx: &Context,
        listener: TcpListener,
        service: S,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static
    where
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Error>,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Error>,
    {
        self.clone().accept_loop(Some(ctx.done()), listener, service)
    }

    /// Serves one connection on the calling G (a [`TcpStream`](crate::net::TcpStream), or a
    /// [`Pipe`](crate::net::Pipe) in a test) with this server's timeouts, until the client
    /// closes it or a timeout does.
    ///
    /// # Errors
    /// hyper's error for the connection (a malformed request, a timeout, an I/O error).
    pub fn serve_connection<T, S, B>(
        &self,
        conn: T,
        service: S,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static
    where
        T: Transport,
        S: Service<Request<Incoming>, Response = Response<B>> + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Error>,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Error>,
    {
        let this = self.clone();
        async move { conn::serve(&this.builder, this.limits, conn, service, None).await }
    }

    async fn accept_loop<S, B>(self, done: Option<Receiver<()>>, listener: TcpListener, service: S) -> io::Result<()>
    where
        S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Error>,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Error>,
    {
        let shared = Arc::new((self.builder, self.limits));
        let conns = WaitGroup::new();
        let mut backoff = Duration::ZERO;
        let result = loop {
            let accepted = match &done {
                None => listener.accept().await,
                Some(done) => match conn::unless_done(listener.accept(), done).await {
                    Some(r) => r,
                    None => break Ok(()),
                },
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => match retry_after(&e, &mut backoff) {
                    Some(wait) => {
                        crate::time::sleep(wait).await;
                        continue;
                    }
                    None => break Err(e),
                },
            };
            backoff = Duration::ZERO;
            // Go's `net.Dial` and `Accept` set TCP_NODELAY: a response goes out when written.
            let _ = stream.set_nodelay(true);
            let shared = shared.clone();
            let service = service.clone();
            let done = done.clone();
            let conns = conns.clone();
            conns.add(1);
            drop(crate::go(async move {
                // Done even if the connection's G unwinds: a shutdown waits for no G that ended.
                let _done = Done(&conns);
                // The connection's error is its client's business (Go logs it to ErrorLog).
                let _ =
                    super::rt::recover(peer, conn::serve(&shared.0, shared.1, stream, service, done.as_ref())).await;
            }));
        };
        // Go's Shutdown closes the listeners first, then waits for the connections. A failed
        // listener returns at once, as Go's Serve does: the connections it accepted go on,
        // each on its G.
        drop(listener);
        if result.is_ok() {
            conns.wait().await;
        }
        result
    }
}

/// Marks a connection's G done in the server's `WaitGroup` when dropped.
struct Done<'a>(&'a WaitGroup);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.done();
    }
}

/// Go's `srv.Serve`'s rule for a failed `Accept`: a temporary error (out of descriptors, a
/// connection aborted before it was accepted) is waited out, 5 ms doubling up to 1 s; any
/// other ends serving.
fn retry_after(e: &io::Error, backoff: &mut Duration) -> Option<Duration> {
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    const ENOBUFS: i32 = 105;
    const ENOMEM: i32 = 12;
    match e.kind() {
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted => {
            return Some(Duration::ZERO)
        }
        _ => {}
    }
    if !matches!(e.raw_os_error(), Some(EMFILE | ENFILE | ENOBUFS | ENOMEM)) {
        return None;
    }
    *backoff = if backoff.is_zero() { Duration::from_millis(5) } else { (*backoff * 2).min(Duration::from_secs(1)) };
    Some(*backoff)
}

/// Go's `http.Serve(l, handler)`: [`Server::new()`](Server::new)`.serve(listener, service)`.
///
/// # Errors
/// The listener's error.
///
/// ```no_run
/// use http_body_util::Full;
/// use hyper::body::Bytes;
/// use hyper::service::service_fn;
/// #[goro::main]
/// async fn main() -> std::io::Result<()> {
///     let ln = goro::net::TcpListener::bind("127.0.0.1:8080").await?;
///     goro::hyper::serve(ln, service_fn(|_req| async {
///         Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from("Hello, World!\n"))))
///     }))
///     .await
/// }
/// ```
pub fn serve<S, B>(listener: TcpListener, service: S) -> impl Future<Output = io::Result<()>> + Send + 'static
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Error>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Error>,
{
    Server::new().serve(listener, service)
}

/// Serves until `ctx` is done, then shuts down gracefully (Go's `srv.Shutdown`):
/// [`Server::new()`](Server::new)`.serve_with_context(ctx, listener, service)`.
///
/// # Errors
/// The listener's error.
pub fn serve_with_context<S, B>(
    ctx: &Context,
    listener: TcpListener,
    service: S,
) -> impl Future<Output = io::Result<()>> + Send + 'static
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Error>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Error>,
{
    Server::new().serve_with_context(ctx, listener, service)
}
