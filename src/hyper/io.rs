//! hyper's I/O traits over goro's connections: [`Io`].

use crate::net::{Pipe, TcpStream};
use hyper::rt::ReadBufCursor;
use std::io;
use std::mem::MaybeUninit;
use std::net::Shutdown;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// A goro connection as hyper's [`Read`](hyper::rt::Read) and [`Write`](hyper::rt::Write):
/// over a [`TcpStream`], or a [`Pipe`] (`goro::net::pipe()`, for a server tested in a
/// [`synctest`](crate::synctest) bubble).
///
/// Over a `TcpStream` a read goes straight from the socket into hyper's buffer (no zeroing of
/// the buffer first, no copy between), and a write hands hyper's buffers to `writev(2)` as they
/// are (the headers and the body in one call, without joining them).
///
/// ```
/// use goro::hyper::Io;
/// use goro::net::{TcpListener, TcpStream};
/// goro::run(async {
///     let ln = TcpListener::bind("127.0.0.1:0").await?;
///     let conn = TcpStream::connect(ln.local_addr()?).await?;
///     let io = Io::new(conn); // hand it to hyper's `serve_connection` or `handshake`
///     assert_eq!(io.get_ref().peer_addr()?, ln.local_addr()?);
///     Ok::<_, std::io::Error>(())
/// })
/// .unwrap();
/// ```
#[derive(Debug)]
pub struct Io<T> {
    inner: T,
}

impl<T> Io<T> {
    /// Wraps a connection.
    pub fn new(inner: T) -> Io<T> {
        Io { inner }
    }

    /// The connection.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The connection, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the connection.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: Transport> hyper::rt::Read for Io<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        read_into(&self.inner, cx, buf).map_ok(drop)
    }
}

impl<T: Transport> hyper::rt::Write for Io<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.inner.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        T::VECTORED
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.inner.shutdown_write())
    }
}

/// Reads from `conn` into the unfilled part of hyper's buffer; returns how many bytes came
/// (0: the peer closed its side).
pub(super) fn read_into<T: Transport>(
    conn: &T,
    cx: &mut Context<'_>,
    mut buf: ReadBufCursor<'_>,
) -> Poll<io::Result<usize>> {
    // SAFETY: `as_mut` hands out the unfilled part of hyper's buffer, which must not be
    // de-initialized: `poll_read_uninit`'s contract is to only write into it.
    let n = ready!(conn.poll_read_uninit(cx, unsafe { buf.as_mut() }))?;
    // SAFETY: `poll_read_uninit` initialized the first `n` bytes of the unfilled part.
    unsafe { buf.advance(n) };
    Poll::Ready(Ok(n))
}

/// A connection goro serves HTTP on: [`TcpStream`] and [`Pipe`]. Sealed: its methods are
/// goro's own.
pub trait Transport: sealed::Sealed + Send + Unpin + 'static {}

impl Transport for TcpStream {}
impl Transport for Pipe {}

pub(super) mod sealed {
    use super::*;

    /// What [`Io`](super::Io) needs of a connection.
    pub trait Sealed {
        /// Whether `poll_write_vectored` writes several buffers in one call.
        const VECTORED: bool;

        /// Reads into `buf`, which may be uninitialized, and initializes (at least) the first
        /// `n` bytes it returns; it writes into `buf` and never reads it.
        fn poll_read_uninit(&self, cx: &mut Context<'_>, buf: &mut [MaybeUninit<u8>]) -> Poll<io::Result<usize>>;

        fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;

        fn poll_write_vectored(&self, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
            let buf = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
            self.poll_write(cx, buf)
        }

        fn shutdown_write(&self) -> io::Result<()>;
    }
}

impl sealed::Sealed for TcpStream {
    const VECTORED: bool = true;

    fn poll_read_uninit(&self, cx: &mut Context<'_>, buf: &mut [MaybeUninit<u8>]) -> Poll<io::Result<usize>> {
        self.io.poll_read_uninit(cx, buf)
    }

    fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write(cx, buf)
    }

    fn poll_write_vectored(&self, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        self.io.poll_write_vectored(cx, bufs)
    }

    fn shutdown_write(&self) -> io::Result<()> {
        match self.shutdown(Shutdown::Write) {
            // The peer went first: the write half is as closed as it gets.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }
}

/// The most a read over a [`Pipe`] zeroes of hyper's buffer first (a pipe hands over what the
/// writer wrote, a request or a response at a time).
const PIPE_READ_MAX: usize = 16 * 1024;

impl sealed::Sealed for Pipe {
    const VECTORED: bool = false;

    fn poll_read_uninit(&self, cx: &mut Context<'_>, buf: &mut [MaybeUninit<u8>]) -> Poll<io::Result<usize>> {
        let len = buf.len().min(PIPE_READ_MAX);
        let buf = &mut buf[..len];
        buf.fill(MaybeUninit::new(0));
        // SAFETY: every byte of `buf` was initialized just above, and `MaybeUninit<u8>` has
        // `u8`'s layout.
        let bytes = unsafe { &mut *(buf as *mut [MaybeUninit<u8>] as *mut [u8]) };
        futures_io::AsyncRead::poll_read(Pin::new(&mut &*self), cx, bytes)
    }

    fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        futures_io::AsyncWrite::poll_write(Pin::new(&mut &*self), cx, buf)
    }

    fn shutdown_write(&self) -> io::Result<()> {
        self.close_write();
        Ok(())
    }
}
