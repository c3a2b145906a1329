//! Go's `net` package for Gs: [`TcpListener`], [`TcpStream`] and [`UdpSocket`] on the runtime's
//! netpoller.
//!
//! A G waiting for a socket parks in the netpoller (Go's `pollDesc`) and costs no thread: a
//! thousand idle connections are a thousand parked Gs and the runtime's usual handful of Ms.
//! The sockets are non-blocking [mio] sockets, registered with the runtime of the G that made
//! them; every constructor must be called from a G (inside [`goro::run`](crate::run)), and
//! returns an error naming `goro::run` anywhere else.
//!
//! | Go | goro |
//! |----|------|
//! | `net.Listen("tcp", addr)` | [`TcpListener::bind(addr).await`](TcpListener::bind) |
//! | `ln.Accept()` | [`listener.accept().await`](TcpListener::accept) → `(TcpStream, SocketAddr)` |
//! | `net.Dial("tcp", addr)` | [`TcpStream::connect(addr).await`](TcpStream::connect) |
//! | `conn.Read(b)`, `conn.Write(b)` | [`stream.read(&mut b).await`](TcpStream::read), [`stream.write(&b).await`](TcpStream::write) (`write` may be short: [`write_all`](TcpStream::write_all) is Go's `Write`) |
//! | `io.ReadFull(conn, b)` | [`stream.read_exact(&mut b).await`](TcpStream::read_exact) |
//! | `conn.(*net.TCPConn).CloseWrite()` | [`stream.shutdown(Shutdown::Write)`](TcpStream::shutdown) |
//! | `conn.Close()` | `drop(stream)` |
//! | `net.ListenPacket("udp", addr)` | [`UdpSocket::bind(addr).await`](UdpSocket::bind) |
//! | `net.Pipe()` | [`pipe()`](pipe()) → `(Pipe, Pipe)`: in memory, synchronous, with deadlines; in a `goro::synctest` bubble a G blocked on it is durably blocked |
//! | `io.Reader` / `io.Writer` | [`futures_io::AsyncRead`] / [`futures_io::AsyncWrite`] |
//!
//! As in Go, one G may read a connection while another writes it: the I/O methods take
//! `&self`, so share the stream behind an `Arc` (or [`split`](TcpStream::split) it). Several Gs
//! reading (or several writing) the same socket take turns, as Go's `fdMutex` makes them.
//!
//! ```
//! use goro::net::{TcpListener, TcpStream};
//! goro::run(async {
//!     // func main() { ln, _ := net.Listen("tcp", "127.0.0.1:0"); go serve(ln); ... }
//!     let ln = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = ln.local_addr()?;
//!     goro::go(async move {
//!         let (conn, _) = ln.accept().await?;
//!         let mut buf = [0; 5];
//!         conn.read_exact(&mut buf).await?;
//!         conn.write_all(&buf).await // echo
//!     });
//!     let conn = TcpStream::connect(addr).await?;
//!     conn.write_all(b"hello").await?;
//!     let mut buf = [0; 5];
//!     conn.read_exact(&mut buf).await?;
//!     assert_eq!(&buf, b"hello");
//!     Ok::<_, std::io::Error>(())
//! })
//! .unwrap();
//! ```
//!
//! # Cancellation
//!
//! Dropping a future of this module is safe; what it did before is what its method documents.
//! In short: a dropped `read`, `write`, `accept`, `recv`, `recv_from`, `send`, `send_to` or
//! `connect` did nothing that the next call does not see (a read never read any data, a write
//! wrote nothing, an accept dequeued no connection); a dropped `read_exact` or `write_all` may
//! have moved part of its buffer.
//!
//! # A socket belongs to its runtime
//!
//! A socket is registered with the netpoller of the runtime whose G made it, and that poller
//! is what wakes an operation waiting on it. While that runtime lives, the socket works from
//! anywhere: a G of another runtime, a plain thread under some other executor, code generic
//! over the [`futures_io`] traits. Once the runtime is dropped (say the socket came back out of
//! [`Runtime::block_on`](crate::runtime::Runtime::block_on)), no poller will ever report it ready, so
//! every operation that goes through the poller fails at once: `read`, `read_exact`, `write`,
//! `write_all`, `accept`, `recv`, `recv_from`, `send`, `send_to`, on the socket, its split
//! halves and through the traits. The error is [`io::ErrorKind::Other`] with the message
//! `goro: the runtime this socket was registered with has shut down` (tokio answers the same
//! case with `Other` too). An operation already waiting when the runtime shuts down is woken
//! with that error. An operation that could have completed without waiting (data already
//! there, room in the send buffer) fails all the same: whether it works must not depend on
//! timing. What does not involve the poller keeps working (`local_addr`, `peer_addr`,
//! `shutdown`, `set_nodelay`), and dropping the socket closes it as usual. A socket made in a
//! G's destructor while its runtime shuts down is refused with the same error.
//!
//! ```
//! use goro::net::{TcpListener, TcpStream};
//! let rt = goro::runtime::Builder::new().build()?;
//! let (ln, conn) = rt.block_on(async {
//!     let ln = TcpListener::bind("127.0.0.1:0").await?;
//!     let conn = TcpStream::connect(ln.local_addr()?).await?;
//!     Ok::<_, std::io::Error>((ln, conn))
//! })?;
//! drop(rt); // the sockets' netpoller is gone
//! let err = goro::run(async { conn.read(&mut [0; 8]).await }).unwrap_err();
//! assert_eq!(err.kind(), std::io::ErrorKind::Other);
//! assert!(err.to_string().contains("has shut down"));
//! assert_eq!(conn.peer_addr()?, ln.local_addr()?); // not an I/O wait: still fine
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Name resolution
//!
//! Addresses are anything [`std::net::ToSocketAddrs`] takes: a `SocketAddr`, `"127.0.0.1:80"`,
//! `("example.com", 80)`. A host name is resolved with the system resolver, which blocks the
//! calling M for the lookup (as Go's cgo resolver does); the lookup runs inside
//! [`goro::syscall`](crate::syscall), so the G's P goes on running the other Gs meanwhile.

mod listener;
mod pipe;
mod split;
mod stream;
mod udp;

pub use listener::TcpListener;
pub use pipe::{pipe, Pipe};
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use stream::TcpStream;
pub use udp::UdpSocket;

use goro_runtime::__private::io::{Direction, ReadyEvent, Registration};
use goro_runtime::__private::time::RawTimer;
use std::fmt;
use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::task::{ready, Context, Poll, Wake, Waker};
use std::time::Instant;

/// A mio socket registered with the netpoller, plus one turn-taking lock per direction (Go's
/// `fdMutex`), so Gs sharing the socket through `&self` wait for their turn on the lock, and
/// one [`Waiters`] per direction: the registration keeps one waker per direction, and the
/// waiters' set is what it wakes, so tasks polling one direction at once through the
/// `futures_io` traits on `&TcpStream` (which cannot take turns) are all woken, and so is an
/// operation whose deadline changed.
pub(crate) struct Io<S: mio::event::Source> {
    source: S,
    reg: Registration,
    read_turn: crate::sync::Mutex<()>,
    write_turn: crate::sync::Mutex<()>,
    /// Made on first use (the first wait or deadline in that direction).
    dirs: [OnceLock<Dir>; 2],
}

/// One direction's waiters and deadline.
struct Dir {
    waiters: Arc<Waiters>,
    /// A waker of `waiters`: what the registration holds while anybody waits.
    mux: Waker,
    /// The deadline's timer, made by the first deadline in the future. Kept here, not in
    /// `waiters`, which the timer's function holds (weakly, but a strong reference it upgraded
    /// may be the last): dropping the timer inside its own function would deadlock.
    timer: StdMutex<Option<RawTimer>>,
}

/// The tasks waiting in one direction, and its deadline (Go's `pollDesc` `rd`/`wd` and their
/// timers).
///
/// Protocol: a task that finds the socket not ready adds its waker, then checks the deadline
/// and the readiness again; the netpoller (readiness) and the deadline timer or a
/// `set_deadline` (expiry, or a new deadline) wake every waker in the set. A waker added before
/// such a wake is woken by it; one added after it finds the readiness or the expiry on its
/// second check. Woken tasks that find nothing to do add themselves again.
struct Waiters {
    wakers: StdMutex<Vec<Waker>>,
    /// Whether a deadline is set (the fast path reads only this).
    has_deadline: AtomicBool,
    /// The deadline's timer fired (or the deadline was set in the past).
    expired: AtomicBool,
    deadline: StdMutex<Option<Instant>>,
}

impl Waiters {
    fn new() -> Waiters {
        Waiters {
            wakers: StdMutex::new(Vec::new()),
            has_deadline: AtomicBool::new(false),
            expired: AtomicBool::new(false),
            deadline: StdMutex::new(None),
        }
    }

    fn add(&self, w: &Waker) {
        let mut ws = lock(&self.wakers);
        if !ws.iter().any(|x| x.will_wake(w)) {
            ws.push(w.clone());
        }
    }

    /// Wakes every waiter (after unlocking).
    fn wake_all(&self) {
        let mut ws = std::mem::take(&mut *lock(&self.wakers));
        for w in ws.drain(..) {
            w.wake();
        }
        // Give the allocation back for the next round, unless somebody queued meanwhile.
        let mut cur = lock(&self.wakers);
        if cur.is_empty() {
            *cur = ws;
        }
    }

    /// Whether an operation now must fail with `TimedOut`.
    #[inline]
    fn past_deadline(&self) -> bool {
        if !self.has_deadline.load(Acquire) {
            return false;
        }
        self.expired.load(Acquire) || lock(&self.deadline).is_some_and(|at| crate::time::now() >= at)
    }
}

impl Wake for Waiters {
    fn wake(self: Arc<Self>) {
        self.wake_all();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_all();
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Go's `os.ErrDeadlineExceeded`: `i/o timeout`, as `io::ErrorKind::TimedOut`.
pub(crate) fn deadline_exceeded() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "i/o timeout")
}

impl<S: mio::event::Source> Io<S> {
    /// Registers `source` with the calling G's runtime, for reading and writing.
    pub(crate) fn new(mut source: S) -> io::Result<Io<S>> {
        let reg = Registration::new(&mut source, mio::Interest::READABLE | mio::Interest::WRITABLE)?;
        Ok(Io {
            source,
            reg,
            read_turn: crate::sync::Mutex::new(()),
            write_turn: crate::sync::Mutex::new(()),
            dirs: [OnceLock::new(), OnceLock::new()],
        })
    }

    fn dir(&self, dir: Direction) -> &Dir {
        let i = match dir {
            Direction::Read => 0,
            Direction::Write => 1,
        };
        self.dirs[i].get_or_init(|| {
            let waiters = Arc::new(Waiters::new());
            Dir { mux: Waker::from(waiters.clone()), waiters, timer: StdMutex::new(None) }
        })
    }

    /// Ready when the socket is ready in `dir` (see [`Registration::poll_ready`]); fails with
    /// `TimedOut` once the direction's deadline has passed, whatever the readiness (Go's
    /// `netpollcheckerr` comes first too).
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>, dir: Direction) -> Poll<io::Result<ReadyEvent>> {
        let d = self.dir(dir);
        if d.waiters.past_deadline() {
            return Poll::Ready(Err(deadline_exceeded()));
        }
        let mut mux = Context::from_waker(&d.mux);
        if let Poll::Ready(r) = self.reg.poll_ready(&mut mux, dir) {
            return Poll::Ready(r);
        }
        // Not ready: join the waiters, then look again (the protocol of `Waiters`).
        d.waiters.add(cx.waker());
        if d.waiters.past_deadline() {
            return Poll::Ready(Err(deadline_exceeded()));
        }
        self.reg.poll_ready(&mut mux, dir)
    }

    /// Sets the deadline of direction `dir` (Go's `SetReadDeadline`/`SetWriteDeadline`):
    /// `None` clears it. Wakes the operations waiting in that direction, which look at the new
    /// deadline.
    pub(crate) fn set_deadline(&self, dir: Direction, at: Option<Instant>) -> io::Result<()> {
        let d = self.dir(dir);
        let w = &d.waiters;
        {
            // Serialises deadline changes of this direction.
            let mut timer = lock(&d.timer);
            // Once `stop` returns the old arming cannot fire (the timer's guarantee), so it
            // cannot set `expired` for the deadline being replaced.
            if let Some(t) = &*timer {
                t.stop();
            }
            w.expired.store(false, Release);
            *lock(&w.deadline) = at;
            w.has_deadline.store(at.is_some(), Release);
            match at {
                None => {}
                Some(at) if at <= crate::time::now() => w.expired.store(true, Release),
                Some(at) => {
                    let t = timer.get_or_insert_with(|| {
                        // Holds the waiters weakly: the socket owns the timer, not the reverse.
                        let weak = Arc::downgrade(w);
                        self.reg.timer(move || {
                            if let Some(w) = weak.upgrade() {
                                w.expired.store(true, Release);
                                w.wake_all();
                            }
                            true
                        })
                    });
                    t.reset(Some(at), None);
                }
            }
        }
        w.wake_all();
        Ok(())
    }

    pub(crate) fn source(&self) -> &S {
        &self.source
    }

    pub(crate) fn registration(&self) -> &Registration {
        &self.reg
    }

    /// Runs `op` once the socket is ready in `dir`, waiting again on `WouldBlock`. Not
    /// turn-taking: the caller is the only G using direction `dir` (it holds `&mut` or a turn).
    ///
    /// Every socket operation is a yield point (it asks `coop::poll_proceed` first, before
    /// doing anything, so a preempted operation did nothing): a G whose socket is always
    /// ready still yields its P when sysmon asks.
    pub(crate) fn poll_op<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        ready!(goro_runtime::coop::poll_proceed(cx));
        loop {
            let ev = ready!(self.poll_ready(cx, dir))?;
            match op() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.reg.clear_readiness(ev),
                r => return Poll::Ready(r),
            }
        }
    }

    /// [`poll_op`](Self::poll_op) for a byte-stream transfer of `len` bytes: a short transfer
    /// means the socket's buffer was drained (or filled), so the readiness is forgotten at once
    /// and the next call waits instead of trying a syscall bound to say `WouldBlock` (tokio
    /// does the same). An event that arrived meanwhile keeps its readiness (the tick moved on).
    pub(crate) fn poll_transfer(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        len: usize,
        mut op: impl FnMut() -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        ready!(goro_runtime::coop::poll_proceed(cx));
        loop {
            let ev = ready!(self.poll_ready(cx, dir))?;
            match op() {
                Ok(n) if n > 0 && n < len && !ev.is_closed() => {
                    self.reg.clear_readiness(ev);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.reg.clear_readiness(ev),
                r => return Poll::Ready(r),
            }
        }
    }

    /// Waits for this G's turn to use direction `dir` (Go's `fdMutex`): every `&self` I/O
    /// method holds it while it waits for readiness. Cancel-safe: a dropped wait took no turn.
    pub(crate) async fn turn(&self, dir: Direction) -> crate::sync::MutexGuard<'_, ()> {
        let turn = match dir {
            Direction::Read => &self.read_turn,
            Direction::Write => &self.write_turn,
        };
        match turn.try_lock() {
            Some(t) => t,
            None => turn.lock().await,
        }
    }
}

impl<S: mio::event::Source> Io<S>
where
    for<'a> &'a S: Read + Write,
{
    pub(crate) fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.poll_transfer(cx, Direction::Read, len, || (&self.source).read(buf))
    }

    pub(crate) fn poll_read_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        let len = bufs.iter().map(|b| b.len()).sum();
        self.poll_transfer(cx, Direction::Read, len, || (&self.source).read_vectored(bufs))
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_transfer(cx, Direction::Write, buf.len(), || (&self.source).write(buf))
    }

    pub(crate) fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len = bufs.iter().map(|b| b.len()).sum();
        self.poll_transfer(cx, Direction::Write, len, || (&self.source).write_vectored(bufs))
    }
}

impl Io<mio::net::TcpStream> {
    /// [`poll_read`](Self::poll_read) into memory that may be uninitialized (hyper's read
    /// buffer), so that a reader need not zero its buffer before every read.
    #[cfg_attr(not(feature = "hyper"), allow(dead_code))]
    pub(crate) fn poll_read_uninit(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        let len = buf.len();
        let ptr = buf.as_mut_ptr().cast::<u8>();
        self.poll_transfer(cx, Direction::Read, len, || {
            // SAFETY: `ptr..ptr + len` is `buf`, borrowed mutably for this call and valid for
            // writes. The slice made from it is handed only to `read(2)` (mio's `read` on a
            // socket is `recv`), which writes into it and never reads it; nothing reads a byte
            // of it past what the call returns. tokio's `TcpStream::poll_read` rests on the
            // same contract.
            let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
            (&self.source).read(bytes)
        })
    }
}

/// Go's `io.ReadFull` over `read`: `UnexpectedEof` if the peer closes first.
pub(crate) async fn read_exact_with(
    mut buf: &mut [u8],
    mut read: impl FnMut(&mut Context<'_>, &mut [u8]) -> Poll<io::Result<usize>>,
) -> io::Result<()> {
    while !buf.is_empty() {
        match poll_fn(|cx| read(cx, buf)).await {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` through `write` (Go's `Write`, which never returns short).
pub(crate) async fn write_all_with(
    mut buf: &[u8],
    mut write: impl FnMut(&mut Context<'_>, &[u8]) -> Poll<io::Result<usize>>,
) -> io::Result<()> {
    while !buf.is_empty() {
        match poll_fn(|cx| write(cx, buf)).await {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl<S: mio::event::Source> Drop for Io<S> {
    fn drop(&mut self) {
        // Out of the poller before the socket closes (the field drops after this): a closed
        // descriptor's number may be reused by the next socket at once.
        let _ = self.reg.deregister(&mut self.source);
    }
}

impl<S: mio::event::Source + fmt::Debug> fmt::Debug for Io<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.source.fmt(f)
    }
}

/// The addresses `addr` names. A host name goes to the system resolver, which blocks: inside
/// `goro::syscall`, so the P goes to another M meanwhile (for an IP address, two atomics).
pub(crate) fn resolve(addr: impl ToSocketAddrs) -> io::Result<Vec<SocketAddr>> {
    #[cfg(loom)]
    goro_runtime::__private::refuse_io_in_model("goro::net");
    let addrs: Vec<SocketAddr> = crate::syscall(|| addr.to_socket_addrs().map(Iterator::collect))?;
    if addrs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "could not resolve to any address"));
    }
    Ok(addrs)
}

/// Tries `f` on each address in turn, returning the first success or the last error (Go's
/// dialer, sequentially).
pub(crate) fn first_ok<T>(addrs: &[SocketAddr], mut f: impl FnMut(SocketAddr) -> io::Result<T>) -> io::Result<T> {
    let mut last = None;
    for &a in addrs {
        match f(a) {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("resolve returns at least one address"))
}
