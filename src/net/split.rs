//! The halves of a split [`TcpStream`]: one reads, the other writes, each through `&mut self`
//! (no other G can use its direction, so they skip the turn-taking lock).

use super::{read_exact_with, write_all_with, TcpStream};
use std::error::Error;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Defines the read half `$name` (holding `$field: $ty`, which derefs to a `TcpStream`).
macro_rules! read_half {
    ($(#[$doc:meta])* $name:ident $(<$lt:lifetime>)?, $ty:ty) => {
        $(#[$doc])*
        pub struct $name$(<$lt>)? {
            pub(crate) stream: $ty,
        }

        impl$(<$lt>)? $name$(<$lt>)? {
            /// [`TcpStream::read`] on this half. Cancel-safe: a dropped read read nothing.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            /// #   let (server, _) = ln.accept().await?;
            ///     let (mut r, _w) = conn.into_split();
            ///     server.write_all(b"x").await?;
            ///     let mut buf = [0; 8];
            ///     assert_eq!(r.read(&mut buf).await?, 1);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                poll_fn(|cx| self.stream.io.poll_read(cx, buf)).await
            }

            /// [`TcpStream::read_exact`] on this half. Not cancel-safe: dropped midway, the
            /// bytes it read are lost.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            /// #   let (server, _) = ln.accept().await?;
            ///     let (mut r, _w) = conn.into_split();
            ///     server.write_all(b"xyz").await?;
            ///     let mut buf = [0; 3];
            ///     r.read_exact(&mut buf).await?;
            ///     assert_eq!(&buf, b"xyz");
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub async fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
                let io = &self.stream.io;
                read_exact_with(buf, |cx, b| io.poll_read(cx, b)).await
            }

            /// The remote address.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            ///     let (r, _w) = conn.into_split();
            ///     assert_eq!(r.peer_addr()?, ln.local_addr()?);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                self.stream.peer_addr()
            }

            /// The local address.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            ///     let here = conn.local_addr()?;
            ///     let (r, _w) = conn.into_split();
            ///     assert_eq!(r.local_addr()?, here);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr> {
                self.stream.local_addr()
            }
        }

        impl$(<$lt>)? futures_io::AsyncRead for $name$(<$lt>)? {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
                self.stream.io.poll_read(cx, buf)
            }

            fn poll_read_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &mut [io::IoSliceMut<'_>],
            ) -> Poll<io::Result<usize>> {
                self.stream.io.poll_read_vectored(cx, bufs)
            }
        }

        impl$(<$lt>)? fmt::Debug for $name$(<$lt>)? {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&*self.stream).finish()
            }
        }
    };
}

/// Defines the write half `$name` (holding `$field: $ty`, which derefs to a `TcpStream`).
macro_rules! write_half {
    ($(#[$doc:meta])* $name:ident $(<$lt:lifetime>)?, $ty:ty) => {
        $(#[$doc])*
        pub struct $name$(<$lt>)? {
            pub(crate) stream: $ty,
        }

        impl$(<$lt>)? $name$(<$lt>)? {
            /// [`TcpStream::write`] on this half. Cancel-safe: a dropped write wrote nothing.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            ///     let (_r, mut w) = conn.into_split();
            ///     assert!(w.write(b"abc").await? > 0);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                poll_fn(|cx| self.stream.io.poll_write(cx, buf)).await
            }

            /// [`TcpStream::write_all`] on this half. Not cancel-safe: dropped midway, part of
            /// `buf` may have been sent.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            /// #   let (server, _) = ln.accept().await?;
            ///     let (_r, mut w) = conn.into_split();
            ///     w.write_all(b"abc").await?;
            ///     let mut buf = [0; 3];
            ///     server.read_exact(&mut buf).await?;
            ///     assert_eq!(&buf, b"abc");
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
                let io = &self.stream.io;
                write_all_with(buf, |cx, b| io.poll_write(cx, b)).await
            }

            /// Does nothing, as [`TcpStream::flush`].
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            ///     let (_r, mut w) = conn.into_split();
            ///     w.flush().await
            /// })
            /// .unwrap();
            /// ```
            pub async fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }

            /// Shuts down the write direction (Go's `CloseWrite`): the peer reads end-of-stream
            /// after the data sent so far.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            /// #   let (server, _) = ln.accept().await?;
            ///     let (_r, mut w) = conn.into_split();
            ///     w.shutdown()?;
            ///     assert_eq!(server.read(&mut [0; 4]).await?, 0);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub fn shutdown(&mut self) -> io::Result<()> {
                self.stream.shutdown(Shutdown::Write)
            }

            /// The remote address.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            ///     let (_r, w) = conn.into_split();
            ///     assert_eq!(w.peer_addr()?, ln.local_addr()?);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                self.stream.peer_addr()
            }

            /// The local address.
            ///
            /// ```
            /// # use goro::net::{TcpListener, TcpStream};
            /// goro::run(async {
            /// #   let ln = TcpListener::bind("127.0.0.1:0").await?;
            /// #   let conn = TcpStream::connect(ln.local_addr()?).await?;
            ///     let here = conn.local_addr()?;
            ///     let (_r, w) = conn.into_split();
            ///     assert_eq!(w.local_addr()?, here);
            /// #   Ok::<_, std::io::Error>(())
            /// })
            /// .unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr> {
                self.stream.local_addr()
            }
        }

        /// `poll_close` shuts down the write direction.
        impl$(<$lt>)? futures_io::AsyncWrite for $name$(<$lt>)? {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                self.stream.io.poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                self.stream.io.poll_write_vectored(cx, bufs)
            }

            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.stream.shutdown(Shutdown::Write))
            }
        }

        impl$(<$lt>)? fmt::Debug for $name$(<$lt>)? {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&*self.stream).finish()
            }
        }
    };
}

read_half!(
    /// The read half of a [`TcpStream`] borrowed by [`TcpStream::split`]. Fails as the
    /// stream does once its runtime is gone.
    ReadHalf<'a>, &'a TcpStream
);

write_half!(
    /// The write half of a [`TcpStream`] borrowed by [`TcpStream::split`]. Fails as the
    /// stream does once its runtime is gone.
    WriteHalf<'a>, &'a TcpStream
);

read_half!(
    /// The read half of a [`TcpStream`] split by [`TcpStream::into_split`]: give it to the G
    /// that reads. The connection closes once both halves are dropped. Fails as the stream
    /// does once its runtime is gone (see [`TcpStream`]).
    OwnedReadHalf, Arc<TcpStream>
);

write_half!(
    /// The write half of a [`TcpStream`] split by [`TcpStream::into_split`]: give it to the G
    /// that writes. Dropping it does not shut the connection down (as in Go, only closing the
    /// whole connection does); call [`shutdown`](OwnedWriteHalf::shutdown) for that. Fails as
    /// the stream does once its runtime is gone (see [`TcpStream`]).
    OwnedWriteHalf, Arc<TcpStream>
);

impl OwnedReadHalf {
    /// Puts the halves of one [`into_split`](TcpStream::into_split) back together; two halves
    /// of different streams are returned in the error.
    ///
    /// ```
    /// use goro::net::{TcpListener, TcpStream};
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let a = TcpStream::connect(ln.local_addr()?).await?;
    ///     let b = TcpStream::connect(ln.local_addr()?).await?;
    ///     let (ra, wa) = a.into_split();
    ///     let (rb, wb) = b.into_split();
    ///     let err = ra.reunite(wb).unwrap_err();
    ///     let (ra, wb) = (err.0, err.1);
    ///     let _a = ra.reunite(wa).unwrap();
    ///     let _b = rb.reunite(wb).unwrap();
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.stream, &other.stream) {
            return Err(ReuniteError(self, other));
        }
        drop(other);
        Ok(Arc::into_inner(self.stream).expect("the two halves held the only references"))
    }
}

/// Two halves of different streams given to [`OwnedReadHalf::reunite`]; here they are back.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves that are not from the same stream")
    }
}

impl Error for ReuniteError {}
