//! `UdpSocket`: Go's `net.UDPConn`.

use super::{first_ok, resolve, Io};
use goro_runtime::__private::io::Direction;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Instant;

/// A UDP socket (Go's `net.UDPConn`). Every method takes `&self`: share it behind an `Arc`
/// between a G that sends and one that receives. Closed when dropped (after leaving the
/// netpoller).
///
/// Registered with the netpoller of the runtime whose G made it: once that runtime is dropped,
/// `send`, `send_to`, `recv` and `recv_from` fail at once with an [`io::ErrorKind::Other`]
/// error, `goro: the runtime this socket was registered with has shut down`, one already
/// waiting included. See [A socket belongs to its runtime](super#a-socket-belongs-to-its-runtime).
///
/// ```
/// use goro::net::UdpSocket;
/// goro::run(async {
///     let a = UdpSocket::bind("127.0.0.1:0").await?;
///     let b = UdpSocket::bind("127.0.0.1:0").await?;
///     a.send_to(b"ping", b.local_addr()?).await?;
///     let mut buf = [0; 16];
///     let (n, from) = b.recv_from(&mut buf).await?;
///     assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
///     Ok::<_, std::io::Error>(())
/// })
/// .unwrap();
/// ```
pub struct UdpSocket {
    io: Io<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds a UDP socket to `addr` (Go's `net.ListenUDP`/`ListenPacket`); port 0 picks a free
    /// port. With several addresses, the first that binds wins. Binding never waits.
    ///
    /// # Errors
    /// The bind's error; outside a goro runtime, an error naming `goro::run`.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let s = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert_ne!(s.local_addr()?.port(), 0);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let addrs = resolve(addr)?;
        let sock = first_ok(&addrs, mio::net::UdpSocket::bind)?;
        Ok(UdpSocket { io: Io::new(sock)? })
    }

    /// Wraps a bound std socket (made non-blocking here) for use by Gs.
    ///
    /// # Errors
    /// Outside a goro runtime (naming `goro::run`), or if the socket cannot be made
    /// non-blocking or registered.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let s = UdpSocket::from_std(std::net::UdpSocket::bind("127.0.0.1:0")?)?;
    ///     assert_ne!(s.local_addr()?.port(), 0);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket { io: Io::new(mio::net::UdpSocket::from_std(socket))? })
    }

    /// Sets the socket's default peer (Go's `DialUDP`): [`send`](UdpSocket::send) goes there
    /// and [`recv`](UdpSocket::recv) only takes its datagrams. With several addresses, the
    /// first that works wins. Never waits (a host name's resolution blocks; see the
    /// [module docs](super)).
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let a = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let b = UdpSocket::bind("127.0.0.1:0").await?;
    ///     a.connect(b.local_addr()?).await?;
    ///     assert_eq!(a.peer_addr()?, b.local_addr()?);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let addrs = resolve(addr)?;
        first_ok(&addrs, |a| self.io.source().connect(a))
    }

    /// Sends `buf` as one datagram to `target` (Go's `WriteTo`); returns the bytes sent. If
    /// `target` resolves to several addresses, the first is used.
    ///
    /// # Cancel safety
    /// Cancel-safe: a dropped `send_to` sent nothing.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let a = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let b = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert_eq!(a.send_to(b"hey", b.local_addr()?).await?, 3);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let target = crate::syscall(|| target.to_socket_addrs())?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "could not resolve to any address"))?;
        let _turn = self.io.turn(Direction::Write).await;
        poll_fn(|cx| self.io.poll_op(cx, Direction::Write, || self.io.source().send_to(buf, target))).await
    }

    /// Waits for one datagram and copies it into `buf` (Go's `ReadFrom`); returns its length
    /// and sender. A datagram longer than `buf` is truncated (the rest is lost, as in Go).
    ///
    /// # Cancel safety
    /// Cancel-safe: a dropped `recv_from` took no datagram.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let a = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let b = UdpSocket::bind("127.0.0.1:0").await?;
    ///     a.send_to(b"12345", b.local_addr()?).await?;
    ///     let mut buf = [0; 3];
    ///     let (n, from) = b.recv_from(&mut buf).await?;
    ///     assert_eq!((n, &buf, from), (3, b"123", a.local_addr()?));
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let _turn = self.io.turn(Direction::Read).await;
        poll_fn(|cx| self.io.poll_op(cx, Direction::Read, || self.io.source().recv_from(buf))).await
    }

    /// Sends `buf` as one datagram to the [`connect`](UdpSocket::connect)ed peer (Go's
    /// `Write` on a dialed `UDPConn`).
    ///
    /// # Errors
    /// `NotConnected` (or the system's equivalent) if the socket has no peer; on a connected
    /// socket, an earlier datagram's ICMP error (`ConnectionRefused`) may show up here.
    ///
    /// # Cancel safety
    /// Cancel-safe: a dropped `send` sent nothing.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let a = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let b = UdpSocket::bind("127.0.0.1:0").await?;
    ///     a.connect(b.local_addr()?).await?;
    ///     a.send(b"to b").await?;
    ///     let mut buf = [0; 8];
    ///     let (n, _) = b.recv_from(&mut buf).await?;
    ///     assert_eq!(&buf[..n], b"to b");
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        let _turn = self.io.turn(Direction::Write).await;
        poll_fn(|cx| self.io.poll_op(cx, Direction::Write, || self.io.source().send(buf))).await
    }

    /// Waits for one datagram from the [`connect`](UdpSocket::connect)ed peer (Go's `Read` on
    /// a dialed `UDPConn`); truncates as [`recv_from`](UdpSocket::recv_from) does.
    ///
    /// # Cancel safety
    /// Cancel-safe: a dropped `recv` took no datagram.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let a = UdpSocket::bind("127.0.0.1:0").await?;
    ///     let b = UdpSocket::bind("127.0.0.1:0").await?;
    ///     b.connect(a.local_addr()?).await?;
    ///     a.send_to(b"to b", b.local_addr()?).await?;
    ///     let mut buf = [0; 8];
    ///     let n = b.recv(&mut buf).await?;
    ///     assert_eq!(&buf[..n], b"to b");
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let _turn = self.io.turn(Direction::Read).await;
        poll_fn(|cx| self.io.poll_op(cx, Direction::Read, || self.io.source().recv(buf))).await
    }

    /// Sets the read and write deadlines (Go's `conn.SetDeadline`): past it, `recv`,
    /// `recv_from`, `send` and `send_to` fail with [`io::ErrorKind::TimedOut`] (`i/o timeout`,
    /// Go's `os.ErrDeadlineExceeded`), those already waiting too. `None` clears them. See
    /// [`TcpStream::set_deadline`](super::TcpStream::set_deadline).
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     sock.set_deadline(Some(Instant::now() + Duration::from_millis(5)))?;
    ///     let err = sock.recv_from(&mut [0; 8]).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.set_read_deadline(deadline)?;
        self.set_write_deadline(deadline)
    }

    /// Sets the read deadline only (Go's `SetReadDeadline`): `recv` and `recv_from`.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// use std::time::Instant;
    /// goro::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     sock.set_read_deadline(Some(Instant::now()))?;
    ///     assert!(sock.recv_from(&mut [0; 8]).await.is_err());
    ///     sock.set_read_deadline(None)?;
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_read_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.io.set_deadline(Direction::Read, deadline)
    }

    /// Sets the write deadline only (Go's `SetWriteDeadline`): `send` and `send_to`.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// use std::time::Instant;
    /// goro::run(async {
    ///     let sock = UdpSocket::bind("127.0.0.1:0").await?;
    ///     sock.set_write_deadline(Some(Instant::now()))?;
    ///     let err = sock.send_to(b"x", sock.local_addr()?).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_write_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.io.set_deadline(Direction::Write, deadline)
    }

    /// The address the socket is bound to (Go's `LocalAddr`).
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let s = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert!(s.local_addr()?.ip().is_loopback());
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// The [`connect`](UdpSocket::connect)ed peer (Go's `RemoteAddr`); `NotConnected` if none.
    ///
    /// ```
    /// use goro::net::UdpSocket;
    /// goro::run(async {
    ///     let s = UdpSocket::bind("127.0.0.1:0").await?;
    ///     assert_eq!(s.peer_addr().unwrap_err().kind(), std::io::ErrorKind::NotConnected);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().peer_addr()
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UdpSocket").field(&self.io).finish()
    }
}
