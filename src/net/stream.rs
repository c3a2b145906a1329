//! `TcpStream`: Go's `net.TCPConn`.

use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use super::{read_exact_with, resolve, write_all_with, Io};
use goro_runtime::__private::io::Direction;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

/// A TCP connection (Go's `net.TCPConn`), made by [`connect`](TcpStream::connect) or
/// [`TcpListener::accept`](super::TcpListener::accept). Closed when dropped (after leaving the
/// netpoller).
///
/// The I/O methods take `&self`: one G may read while another writes, the stream shared
/// behind an `Arc` as Go code shares a `net.Conn`. Gs reading at once (or writing at once)
/// take turns. The [`futures_io::AsyncRead`]/[`AsyncWrite`](futures_io::AsyncWrite) impls
/// take `&mut self`; for a reader and a writer through the traits, [`split`](TcpStream::split)
/// or [`into_split`](TcpStream::into_split) the stream.
///
/// Registered with the netpoller of the runtime whose G made it: once that runtime is dropped,
/// every I/O method (and those of its halves and the [`futures_io`] traits) fails at once with
/// an [`io::ErrorKind::Other`] error, `goro: the runtime this socket was registered with has
/// shut down`, one already waiting included. See
/// [A socket belongs to its runtime](super#a-socket-belongs-to-its-runtime).
///
/// ```
/// use goro::net::{TcpListener, TcpStream};
/// use std::sync::Arc;
/// goro::run(async {
///     let ln = TcpListener::bind("127.0.0.1:0").await?;
///     let client = TcpStream::connect(ln.local_addr()?).await?;
///     let (server, _) = ln.accept().await?;
///     // One G writes, another reads the same connection.
///     let client = Arc::new(client);
///     let writer = goro::go({
///         let client = client.clone();
///         async move { client.write_all(b"ping").await }
///     });
///     let mut buf = [0; 4];
///     server.read_exact(&mut buf).await?;
///     server.write_all(b"pong").await?;
///     client.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"pong");
///     writer.await.unwrap()
/// })
/// .unwrap();
/// ```
pub struct TcpStream {
    pub(crate) io: Io<mio::net::TcpStream>,
}

impl TcpStream {
    pub(crate) fn new(stream: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream { io: Io::new(stream)? })
    }

    /// Opens a connection to `addr` (Go's `net.Dial("tcp", addr)`), trying each address it
    /// resolves to in turn; the error is the last address's.
    ///
    /// # Errors
    /// The connection's error (`ConnectionRefused`, ...); outside a goro runtime, an error
    /// naming `goro::run`.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the attempt and closes its socket.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     assert_eq!(conn.peer_addr()?, ln.local_addr()?);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let addrs = resolve(addr)?;
        let mut last = None;
        for a in addrs {
            match TcpStream::connect_addr(a).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("resolve returns at least one address"))
    }

    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        // A non-blocking connect: the socket turns writable once the handshake is over, in
        // success or failure (tokio's `connect_mio`).
        let stream = TcpStream::new(mio::net::TcpStream::connect(addr)?)?;
        let reg = stream.io.registration();
        poll_fn(|cx| loop {
            let ev = ready!(reg.poll_ready(cx, Direction::Write))?;
            if let Some(e) = stream.io.source().take_error()? {
                return Poll::Ready(Err(e));
            }
            match stream.io.source().peer_addr() {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e) if e.kind() == io::ErrorKind::NotConnected && !ev.is_closed() => {
                    // Not connected yet: a spurious wake-up.
                    reg.clear_readiness(ev);
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        })
        .await?;
        Ok(stream)
    }

    /// Wraps a connected std stream (made non-blocking here) for use by Gs.
    ///
    /// # Errors
    /// Outside a goro runtime (naming `goro::run`), or if the socket cannot be made
    /// non-blocking or registered.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     // A blocking connect to a local listener: fine in a doctest, not in a real G.
    ///     let std_stream = std::net::TcpStream::connect(ln.local_addr()?)?;
    ///     let conn = TcpStream::from_std(std_stream)?;
    ///     let (server, _) = ln.accept().await?;
    ///     server.write_all(b"hi").await?;
    ///     let mut buf = [0; 2];
    ///     conn.read_exact(&mut buf).await?;
    ///     assert_eq!(&buf, b"hi");
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        TcpStream::new(mio::net::TcpStream::from_std(stream))
    }

    /// Reads into `buf`, waiting until at least one byte is there; returns how many it read,
    /// `0` once the peer has closed its side (or if `buf` is empty). Go's `conn.Read`.
    ///
    /// # Cancel safety
    /// Cancel-safe: a read that is dropped before it completes has read nothing.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, _) = ln.accept().await?;
    ///     server.write_all(b"abc").await?;
    ///     drop(server); // close: the client reads the bytes, then 0
    ///     let mut got = Vec::new();
    ///     let mut buf = [0; 16];
    ///     loop {
    ///         match conn.read(&mut buf).await? {
    ///             0 => break,
    ///             n => got.extend_from_slice(&buf[..n]),
    ///         }
    ///     }
    ///     assert_eq!(got, b"abc");
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let _turn = self.io.turn(Direction::Read).await;
        poll_fn(|cx| self.io.poll_read(cx, buf)).await
    }

    /// Reads exactly `buf.len()` bytes (Go's `io.ReadFull`); `UnexpectedEof` if the peer
    /// closes first. Other readers of the stream wait until it is done.
    ///
    /// # Cancel safety
    /// Not cancel-safe: dropped midway, the bytes it had read are lost.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, _) = ln.accept().await?;
    ///     server.write_all(b"12").await?;
    ///     server.write_all(b"345").await?;
    ///     let mut buf = [0; 5];
    ///     conn.read_exact(&mut buf).await?;
    ///     assert_eq!(&buf, b"12345");
    ///     drop(server);
    ///     let err = conn.read_exact(&mut buf).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        let _turn = self.io.turn(Direction::Read).await;
        read_exact_with(buf, |cx, b| self.io.poll_read(cx, b)).await
    }

    /// Writes some of `buf`, waiting until the socket takes at least one byte; returns how
    /// many it wrote (possibly fewer than `buf.len()`: [`write_all`](TcpStream::write_all) is
    /// Go's `conn.Write`).
    ///
    /// # Cancel safety
    /// Cancel-safe: a write that is dropped before it completes has written nothing.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let n = conn.write(b"hello").await?;
    ///     assert!(n > 0 && n <= 5);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let _turn = self.io.turn(Direction::Write).await;
        poll_fn(|cx| self.io.poll_write(cx, buf)).await
    }

    /// Writes all of `buf` (Go's `conn.Write`), waiting as long as the socket's buffer is
    /// full. Other writers of the stream wait until it is done, so writes do not interleave.
    ///
    /// # Cancel safety
    /// Not cancel-safe: dropped midway, part of `buf` may have been sent.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, _) = ln.accept().await?;
    ///     conn.write_all(&[7; 1000]).await?;
    ///     let mut buf = vec![0; 1000];
    ///     server.read_exact(&mut buf).await?;
    ///     assert!(buf.iter().all(|&b| b == 7));
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        let _turn = self.io.turn(Direction::Write).await;
        write_all_with(buf, |cx, b| self.io.poll_write(cx, b)).await
    }

    /// Does nothing: a `TcpStream` has no buffer of its own (what `write` returned is with the
    /// kernel). Here for code written against buffered writers.
    ///
    /// # Cancel safety
    /// Cancel-safe (it is ready at once).
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     conn.write_all(b"x").await?;
    ///     conn.flush().await
    /// })
    /// .unwrap();
    /// ```
    pub async fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    /// Shuts down the read half, the write half or both (Go's `CloseRead`/`CloseWrite`).
    /// After `Shutdown::Write` the peer reads end-of-stream once it has read what was sent.
    /// Never waits, so it is not `async` (the kernel sends the FIN on its own).
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::net::Shutdown;
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, _) = ln.accept().await?;
    ///     conn.write_all(b"last words").await?;
    ///     conn.shutdown(Shutdown::Write)?;
    ///     let mut buf = [0; 10];
    ///     server.read_exact(&mut buf).await?;
    ///     assert_eq!(server.read(&mut buf).await?, 0); // end of stream
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.source().shutdown(how)
    }

    /// The remote address (Go's `RemoteAddr`).
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, _) = ln.accept().await?;
    ///     assert_eq!(server.peer_addr()?, conn.local_addr()?);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }

    /// The local address (Go's `LocalAddr`).
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     assert!(conn.local_addr()?.ip().is_loopback());
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// Sets `TCP_NODELAY` (Go's `SetNoDelay`). Go sets it on every TCP connection; goro, like
    /// std, leaves the system's default (off) unless asked.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     conn.set_nodelay(true)?;
    ///     assert!(conn.nodelay()?);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.source().set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set; see [`set_nodelay`](TcpStream::set_nodelay).
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     assert!(!conn.nodelay()?);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.source().nodelay()
    }

    /// Sets the read and write deadlines (Go's `conn.SetDeadline`): once `deadline` has passed,
    /// every read and write, waiting or not, fails with [`io::ErrorKind::TimedOut`] (`i/o
    /// timeout`, Go's `os.ErrDeadlineExceeded`), even if it could have completed. `None`
    /// clears them. A new deadline applies to the operations already waiting too: they are
    /// woken and look at it, so setting a deadline in the past (`Instant::now()`) unblocks a
    /// read from another G, as in Go. A later deadline makes the socket usable again.
    ///
    /// A `read_exact` or `write_all` that times out has moved part of its buffer (Go's
    /// `Write` returns the count with the error; here it is lost with the future).
    ///
    /// # Errors
    /// None today; `io::Result` as in Go, for errors a later version may report.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let _server = ln.accept().await?; // silent peer
    ///     conn.set_deadline(Some(Instant::now() + Duration::from_millis(10)))?;
    ///     let err = conn.read(&mut [0; 8]).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     conn.set_deadline(None)?; // usable again
    ///     conn.write_all(b"ok").await
    /// })
    /// .unwrap();
    /// ```
    pub fn set_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.set_read_deadline(deadline)?;
        self.set_write_deadline(deadline)
    }

    /// Sets the read deadline only (Go's `SetReadDeadline`); see
    /// [`set_deadline`](TcpStream::set_deadline). Go's idle-timeout idiom, a deadline pushed
    /// forward before each read, ports as is.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = std::sync::Arc::new(TcpStream::connect(ln.local_addr()?).await?);
    ///     let _server = ln.accept().await?;
    ///     let c = conn.clone();
    ///     let reader = goro::go(async move { c.read(&mut [0; 8]).await });
    ///     goro::time::sleep(Duration::from_millis(5)).await;
    ///     conn.set_read_deadline(Some(Instant::now()))?; // wakes the waiting read
    ///     let err = reader.await.unwrap().unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_read_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.io.set_deadline(Direction::Read, deadline)
    }

    /// Sets the write deadline only (Go's `SetWriteDeadline`); see
    /// [`set_deadline`](TcpStream::set_deadline).
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// use std::time::Instant;
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     conn.set_write_deadline(Some(Instant::now()))?;
    ///     let err = conn.write(b"late").await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_write_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.io.set_deadline(Direction::Write, deadline)
    }

    /// Borrows the stream as a read half and a write half, each with the
    /// [`futures_io`] trait of its direction, for a reader and a writer at once (the halves
    /// may go to two Gs of a scope that outlives neither, e.g. two futures joined by one G).
    ///
    /// ```
    /// use futures_io::{AsyncRead, AsyncWrite};
    /// use goro::net::{TcpListener, TcpStream};
    /// fn is_reader<R: AsyncRead>(_: &R) {}
    /// fn is_writer<W: AsyncWrite>(_: &W) {}
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let mut conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (r, mut w) = conn.split();
    ///     is_reader(&r);
    ///     is_writer(&w);
    ///     w.write_all(b"x").await?;
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf { stream: self }, WriteHalf { stream: self })
    }

    /// Splits the stream into an owned read half and an owned write half, which can go to
    /// two Gs (Go's one-goroutine-reads, one-writes). The connection closes when both are
    /// dropped; [`OwnedReadHalf::reunite`] puts them back together.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let conn = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, _) = ln.accept().await?;
    ///     let (mut r, mut w) = conn.into_split();
    ///     let writer = goro::go(async move { w.write_all(b"hi").await });
    ///     let mut buf = [0; 2];
    ///     server.read_exact(&mut buf).await?;
    ///     server.write_all(&buf).await?;
    ///     r.read_exact(&mut buf).await?;
    ///     assert_eq!(&buf, b"hi");
    ///     writer.await.unwrap()
    /// })
    /// .unwrap();
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let stream = Arc::new(self);
        (OwnedReadHalf { stream: stream.clone() }, OwnedWriteHalf { stream })
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TcpStream").field(&self.io).finish()
    }
}

/// Reads as [`TcpStream::read`] does, through `&mut self` (no other reader can exist).
impl futures_io::AsyncRead for TcpStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io.poll_read(cx, buf)
    }

    fn poll_read_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.poll_read_vectored(cx, bufs)
    }
}

/// Writes as [`TcpStream::write`] does, through `&mut self`; `poll_close` shuts down the
/// write half.
impl futures_io::AsyncWrite for TcpStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown(Shutdown::Write))
    }
}

/// Reads as [`TcpStream::read`] does, through a shared reference (as `std`'s `Read for
/// &TcpStream`), so a reader and a writer can use the traits on one `Arc<TcpStream>`.
/// These polls do not take turns with the async methods: two tasks reading at once through
/// it get interleaved bytes, as with `std`. Every task waiting is woken when the socket
/// becomes ready (none waits forever because another polled after it).
///
/// ```
/// use futures_io::{AsyncRead, AsyncWrite};
/// use goro::net::{TcpListener, TcpStream};
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// goro::run(async {
///     let ln = TcpListener::bind("127.0.0.1:0").await?;
///     let conn = std::sync::Arc::new(TcpStream::connect(ln.local_addr()?).await?);
///     let (server, _) = ln.accept().await?;
///     let c = conn.clone();
///     goro::go(async move {
///         let mut w: &TcpStream = &c;
///         poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"hi")).await
///     });
///     let mut buf = [0; 2];
///     server.read_exact(&mut buf).await?;
///     server.write_all(b"yo").await?;
///     let mut r: &TcpStream = &conn;
///     let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await?;
///     assert_eq!(&buf[..n], &b"yo"[..n]);
///     Ok::<_, std::io::Error>(())
/// })
/// .unwrap();
/// ```
impl futures_io::AsyncRead for &TcpStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io.poll_read(cx, buf)
    }

    fn poll_read_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.poll_read_vectored(cx, bufs)
    }
}

/// Writes as [`TcpStream::write`] does, through a shared reference; see the `AsyncRead` impl
/// for `&TcpStream`. `poll_close` shuts down the write half.
impl futures_io::AsyncWrite for &TcpStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown(Shutdown::Write))
    }
}
