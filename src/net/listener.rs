//! `TcpListener`: Go's `net.TCPListener`.

use super::{first_ok, resolve, Io, TcpStream};
use goro_runtime::__private::io::Direction;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// A TCP socket listening for connections (Go's `net.Listen("tcp", addr)`). Closed when
/// dropped (after leaving the netpoller).
///
/// Registered with the netpoller of the runtime whose G made it: once that runtime is dropped,
/// [`accept`](TcpListener::accept) fails at once with an [`io::ErrorKind::Other`] error, `goro:
/// the runtime this socket was registered with has shut down`, one already waiting included.
/// See [A socket belongs to its runtime](super#a-socket-belongs-to-its-runtime).
///
/// ```
/// use goro::net::{TcpListener, TcpStream};
/// goro::run(async {
///     let ln = TcpListener::bind("127.0.0.1:0").await?;
///     let addr = ln.local_addr()?;
///     // for { conn, _ := ln.Accept(); go handle(conn) }
///     goro::go(async move {
///         loop {
///             let Ok((conn, _)) = ln.accept().await else { return };
///             goro::go(async move {
///                 let mut buf = [0; 64];
///                 while let Ok(n @ 1..) = conn.read(&mut buf).await {
///                     if conn.write_all(&buf[..n]).await.is_err() {
///                         return;
///                     }
///                 }
///             });
///         }
///     });
///     for i in 0..3u8 {
///         let conn = TcpStream::connect(addr).await?;
///         conn.write_all(&[i]).await?;
///         let mut b = [0];
///         conn.read_exact(&mut b).await?;
///         assert_eq!(b, [i]);
///     }
///     Ok::<_, std::io::Error>(())
/// })
/// .unwrap();
/// ```
pub struct TcpListener {
    io: Io<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds a listener to `addr` (Go's `net.Listen("tcp", addr)`); port 0 picks a free port
    /// (see [`local_addr`](TcpListener::local_addr)). With several addresses, the first that
    /// binds wins. `async` for the API's sake: binding never waits (but resolving a host name
    /// does block; see the [module docs](super)).
    ///
    /// # Errors
    /// The bind's error (`AddrInUse`, ...); outside a goro runtime, an error naming
    /// `goro::run`.
    ///
    /// ```
    /// use goro::net::TcpListener;
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let taken = ln.local_addr()?;
    ///     let err = TcpListener::bind(taken).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let addrs = resolve(addr)?;
        let ln = first_ok(&addrs, mio::net::TcpListener::bind)?;
        Ok(TcpListener { io: Io::new(ln)? })
    }

    /// Wraps a bound std listener (made non-blocking here) for use by Gs.
    ///
    /// # Errors
    /// Outside a goro runtime (naming `goro::run`), or if the socket cannot be made
    /// non-blocking or registered.
    ///
    /// ```
    /// use goro::net::TcpListener;
    /// goro::run(async {
    ///     let std_ln = std::net::TcpListener::bind("127.0.0.1:0")?;
    ///     let ln = TcpListener::from_std(std_ln)?;
    ///     assert!(ln.local_addr()?.port() != 0);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener { io: Io::new(mio::net::TcpListener::from_std(listener))? })
    }

    /// Waits for the next connection (Go's `Accept`) and returns it with the peer's address.
    /// Several Gs may accept on one listener at once; each connection goes to one of them.
    ///
    /// # Errors
    /// The accept's error (e.g. `EMFILE` when out of descriptors: the listener stays usable).
    ///
    /// # Cancel safety
    /// Cancel-safe: an accept dropped before it completes took no connection from the queue.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let client = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (server, peer) = ln.accept().await?;
    ///     assert_eq!(peer, client.local_addr()?);
    ///     assert_eq!(server.local_addr()?, ln.local_addr()?);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let _turn = self.io.turn(Direction::Read).await;
        let (stream, peer) = poll_fn(|cx| self.io.poll_op(cx, Direction::Read, || self.io.source().accept())).await?;
        Ok((TcpStream::new(stream)?, peer))
    }

    /// Sets the deadline of [`accept`](TcpListener::accept) (Go's `TCPListener.SetDeadline`):
    /// past it, accepting (a waiting accept too) fails with [`io::ErrorKind::TimedOut`].
    /// `None` clears it.
    ///
    /// ```
    /// use goro::net::TcpListener;
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     ln.set_deadline(Some(Instant::now() + Duration::from_millis(5)))?;
    ///     let err = ln.accept().await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_deadline(&self, deadline: Option<std::time::Instant>) -> io::Result<()> {
        self.io.set_deadline(Direction::Read, deadline)
    }

    /// The address the listener is bound to (Go's `Addr`).
    ///
    /// ```
    /// use goro::net::TcpListener;
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let addr = ln.local_addr()?;
    ///     assert!(addr.ip().is_loopback() && addr.port() != 0);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TcpListener").field(&self.io).finish()
    }
}
