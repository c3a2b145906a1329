//! One connection's G: hyper's connection future, Go's header and idle timeouts, and the
//! graceful shutdown.
//!
//! Go's server arms a read deadline on the connection: `ReadHeaderTimeout` from the start of
//! a request (the connection's start for the first), `IdleTimeout` from the end of a
//! response. Here the connection's [`Activity`] says which phase it is in: [`Watched`] notes
//! the first bytes of a request as they are read, [`Tracked`] the start of a request (its
//! header parsed, the service called) and its end (the response's body dropped by hyper once
//! written). The connection's G computes the deadline after each poll of the connection.
//!
//! The timer is re-armed lazily: a later deadline leaves it where it is, and when it fires
//! the deadline is computed again. A busy keep-alive connection so costs no timer operation
//! per request (Go re-arms its deadline per request); its timer fires once per timeout.

use super::io::{read_into, Transport};
use super::{Error, Executor, Io};
use crate::chan::Receiver;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::rt::ReadBufCursor;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::server::conn::auto;
use pin_project_lite::pin_project;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

/// Go's `ReadHeaderTimeout` and `IdleTimeout`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) read_header: Option<Duration>,
    pub(super) idle: Option<Duration>,
}

/// How long an idle connection told to close (an HTTP/2 one sent a `GOAWAY`) may take to do
/// so before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Serves `conn` with `service` until the client closes it, a timeout of `limits` closes it,
/// or `done` is closed and the connection has shut down gracefully.
pub(super) async fn serve<T, S, B>(
    builder: &auto::Builder<Executor>,
    limits: Limits,
    conn: T,
    service: S,
    done: Option<&Receiver<()>>,
) -> Result<(), Error>
where
    T: Transport,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Error>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Error>,
{
    // In a bubble the connection's G is durably blocked when hyper waits on its own tasks
    // (HTTP/2's streams): they are Gs of the bubble too.
    if limits.read_header.is_none() && limits.idle.is_none() {
        let conn = pin!(builder.serve_connection(Io::new(conn), service));
        return crate::synctest::durable(drive(conn, |c| c.graceful_shutdown(), done, None)).await;
    }
    let activity = Arc::new(Activity::new(limits));
    let io = Watched { io: Io::new(conn), activity: activity.clone() };
    let service = Tracked { inner: service, activity: activity.clone() };
    let conn = pin!(builder.serve_connection(io, service));
    crate::synctest::durable(drive(conn, |c| c.graceful_shutdown(), done, Some((&activity, limits)))).await
}

/// Polls `conn` to its end; shuts it down gracefully once `done` is closed, and closes it at
/// the deadlines of `watch`.
async fn drive<F>(
    mut conn: Pin<&mut F>,
    graceful: impl Fn(Pin<&mut F>),
    done: Option<&Receiver<()>>,
    watch: Option<(&Activity, Limits)>,
) -> Result<(), Error>
where
    F: Future<Output = Result<(), Error>>,
{
    let mut done = pin!(async {
        match done {
            Some(done) => drop(done.recv().await),
            None => std::future::pending().await,
        }
    });
    let mut shutting_down = false;
    // After an idle timeout: when the connection, told to close, is dropped if still open.
    let mut close_by: Option<Instant> = None;
    let mut timer: Option<crate::time::Sleep> = None;
    poll_fn(|cx| loop {
        if let Poll::Ready(r) = conn.as_mut().poll(cx) {
            return Poll::Ready(r);
        }
        if !shutting_down && done.as_mut().poll(cx).is_ready() {
            shutting_down = true;
            graceful(conn.as_mut());
            continue;
        }
        let Some((activity, limits)) = watch else { return Poll::Pending };
        let want = close_by.or_else(|| activity.deadline(limits));
        if let Some(want) = want {
            match &mut timer {
                Some(t) if t.deadline().is_some_and(|at| at <= want) => {}
                Some(t) => Pin::new(t).reset(want),
                None => timer = Some(crate::time::sleep_until(want)),
            }
        }
        let Some(t) = &mut timer else { return Poll::Pending };
        if Pin::new(t).poll(cx).is_pending() {
            return Poll::Pending;
        }
        timer = None;
        match want {
            Some(want) if want <= crate::time::now() => {
                if close_by.is_some() || activity.in_header() {
                    // A header that did not come in time (Go closes the connection; no
                    // request of it is in flight), or a close that did not happen in time.
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "http: timeout").into()));
                }
                // Idle: HTTP/1 closes at once, HTTP/2 says `GOAWAY` first.
                graceful(conn.as_mut());
                shutting_down = true;
                close_by = Some(want + CLOSE_GRACE);
            }
            // The deadline moved on since the timer was armed: arm it again.
            _ => {}
        }
    })
    .await
}

/// Waits for `fut` unless `done` is closed first (`None`).
pub(super) async fn unless_done<F: Future>(fut: F, done: &Receiver<()>) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut closed = pin!(done.recv());
    poll_fn(|cx| {
        // `done` first: a listener with a backlog is always ready.
        if closed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        fut.as_mut().poll(cx).map(Some)
    })
    .await
}

/// Which phase a connection is in, for its deadlines. Written by the connection's G, except
/// [`end`](Activity::end), which an HTTP/2 stream's G calls.
pub(super) struct Activity {
    origin: Instant,
    /// Requests begun and not yet answered.
    in_flight: AtomicUsize,
    /// When the first bytes of the next request came, in ns since `origin`, plus 1; 0 while
    /// none has come (or a request is in flight).
    header_since: AtomicU64,
    /// When the last response ended, in ns since `origin` (kept only with an `IdleTimeout`:
    /// a read of the clock per request saved otherwise).
    idle_since: AtomicU64,
    track_idle: bool,
}

impl Activity {
    fn new(limits: Limits) -> Activity {
        // The first request's header is timed from the connection's start, as in Go.
        Activity {
            origin: crate::time::now(),
            in_flight: AtomicUsize::new(0),
            header_since: AtomicU64::new(1),
            idle_since: AtomicU64::new(0),
            track_idle: limits.idle.is_some(),
        }
    }

    fn elapsed(&self) -> u64 {
        u64::try_from((crate::time::now() - self.origin).as_nanos()).unwrap_or(u64::MAX - 1)
    }

    /// `n` bytes were read.
    fn on_read(&self, n: usize) {
        if n > 0 && self.header_since.load(Relaxed) == 0 && self.in_flight.load(Relaxed) == 0 {
            self.header_since.store(self.elapsed() + 1, Relaxed);
        }
    }

    /// A request's header was parsed and the service called.
    fn begin(&self) {
        self.in_flight.fetch_add(1, Relaxed);
        self.header_since.store(0, Relaxed);
    }

    /// A response was written (its body dropped).
    fn end(&self) {
        // Before the decrement that may make the connection idle: whoever sees it idle sees
        // when it became so.
        if self.track_idle {
            self.idle_since.store(self.elapsed(), Relaxed);
        }
        self.in_flight.fetch_sub(1, Release);
    }

    fn in_header(&self) -> bool {
        self.in_flight.load(Acquire) == 0 && self.header_since.load(Relaxed) != 0
    }

    /// When the connection times out in its current phase.
    fn deadline(&self, limits: Limits) -> Option<Instant> {
        if self.in_flight.load(Acquire) > 0 {
            return None;
        }
        let at = |since: u64, d: Duration| self.origin.checked_add(Duration::from_nanos(since))?.checked_add(d);
        match self.header_since.load(Relaxed) {
            0 => at(self.idle_since.load(Relaxed), limits.idle?),
            h => at(h - 1, limits.read_header?),
        }
    }
}

/// A connection that notes in its [`Activity`] when a request's first bytes are read.
struct Watched<T> {
    io: Io<T>,
    activity: Arc<Activity>,
}

impl<T: Transport> hyper::rt::Read for Watched<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        let n = ready!(read_into(self.io.get_ref(), cx, buf))?;
        self.activity.on_read(n);
        Poll::Ready(Ok(()))
    }
}

impl<T: Transport> hyper::rt::Write for Watched<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// A service that notes in its [`Activity`] when each request begins and ends.
struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

/// Ends its request in the [`Activity`] when dropped: with the response's body (written), or
/// with the service's future if it failed or was dropped.
struct End(Arc<Activity>);

impl Drop for End {
    fn drop(&mut self) {
        self.0.end();
    }
}

impl<S, B> Service<Request<Incoming>> for Tracked<S>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
{
    type Response = Response<TrackedBody<B>>;
    type Error = S::Error;
    type Future = TrackedFuture<S::Future>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.activity.begin();
        let end = End(self.activity.clone());
        TrackedFuture { fut: self.inner.call(req), end: Some(end) }
    }
}

pin_project! {
    /// The service's future, holding its request's [`End`].
    struct TrackedFuture<F> {
        #[pin]
        fut: F,
        end: Option<End>,
    }
}

impl<F, B, E> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<TrackedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let res = ready!(this.fut.poll(cx));
        let end = this.end.take();
        Poll::Ready(res.map(|r| r.map(|inner| TrackedBody { inner, _end: end })))
    }
}

pin_project! {
    /// The response's body, holding its request's [`End`] until hyper drops it.
    pub(super) struct TrackedBody<B> {
        #[pin]
        inner: B,
        _end: Option<End>,
    }
}

impl<B: Body> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
