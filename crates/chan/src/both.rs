//! [`Chan`]: both ends of a channel in one handle, Go's `chan T` value.

use crate::error::{SendError, TryRecvError, TrySendError};
use crate::handles::{chan, Receiver, Sender};
use crate::ops::{Recv, Send};
use std::fmt;

/// A channel as Go has it: one value that can send, receive and close (Go's `chan T`), for
/// code ported line by line.
///
/// `Chan` holds both ends, so it never closes by itself: as in Go, only [`close`](Chan::close)
/// closes it, and a receive waits (rather than returning `None`) as long as the channel is
/// open, even if no other handle can send. Cloning is copying a Go channel value: every clone
/// is the same channel.
///
/// The split pair of [`goro::chan`](crate::chan()) (a [`Sender`] and a [`Receiver`]) is the
/// Rust shape of the same channel, with rules a `Chan` gives up: the channel closes once every
/// `Sender` is gone (a `for v := range ch` loop ends without an explicit `close`), and sends
/// fail once every `Receiver` is gone. Use `Chan` where a Go program passes one channel value
/// around and closes it explicitly; use the pair where a direction is part of the type (Go's
/// `chan<- T` and `<-chan T`) or the channel should close when its producers are done.
/// [`sender`](Chan::sender), [`receiver`](Chan::receiver) and [`into_split`](Chan::into_split)
/// turn a `Chan` into ends.
///
/// ```
/// use goro::Chan;
/// goro::run(async {
///     // ch := make(chan int)
///     let ch = Chan::<i32>::new(0);
///     // go func() { for i := 0; i < 3; i++ { ch <- i }; close(ch) }()
///     let c = ch.clone();
///     goro::go(async move {
///         for i in 0..3 {
///             c.send(i).await.unwrap();
///         }
///         c.close();
///     });
///     // for v := range ch { sum += v }
///     let mut sum = 0;
///     while let Some(v) = ch.recv().await {
///         sum += v;
///     }
///     assert_eq!(sum, 3);
/// });
/// ```
///
/// A `Chan` may be named in a `select!` case, as a receiver or a sender.
pub struct Chan<T> {
    tx: Sender<T>,
    rx: Receiver<T>,
}

impl<T> Chan<T> {
    /// A channel of `cap` slots (Go's `make(chan T, cap)`; 0 is unbuffered).
    ///
    /// ```
    /// let ch = goro::Chan::<u8>::new(2);
    /// assert_eq!((ch.len(), ch.capacity()), (0, 2));
    /// ```
    pub fn new(cap: usize) -> Chan<T> {
        let (tx, rx) = chan(cap);
        Chan { tx, rx }
    }

    /// Sends `value` (Go's `ch <- v`); see [`Sender::send`]. `Err(SendError(value))` once the
    /// channel is closed: the value comes back.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropped before it completes, it sent nothing (the value is dropped with it).
    ///
    /// ```
    /// goro::run(async {
    ///     let ch = goro::Chan::new(1);
    ///     ch.send(1).await.unwrap();
    ///     assert_eq!(ch.recv().await, Some(1));
    /// });
    /// ```
    #[inline]
    pub fn send(&self, value: T) -> Send<'_, T> {
        self.tx.send(value)
    }

    /// Receives (Go's `v, ok := <-ch`): `None` once the channel is closed and drained; see
    /// [`Receiver::recv`].
    ///
    /// # Cancel safety
    /// Cancel-safe: a value handed to a dropped receive goes back to the channel.
    ///
    /// ```
    /// goro::run(async {
    ///     let ch = goro::Chan::<u8>::new(0);
    ///     let c = ch.clone();
    ///     goro::go(async move { c.send(9).await.unwrap() });
    ///     assert_eq!(ch.recv().await, Some(9));
    /// });
    /// ```
    #[inline]
    pub fn recv(&self) -> Recv<'_, T> {
        self.rx.recv()
    }

    /// Sends without waiting; see [`Sender::try_send`].
    ///
    /// ```
    /// let ch = goro::Chan::new(1);
    /// ch.try_send(1).unwrap();
    /// assert!(ch.try_send(2).unwrap_err().is_full());
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.tx.try_send(value)
    }

    /// Receives without waiting; see [`Receiver::try_recv`].
    ///
    /// ```
    /// let ch = goro::Chan::new(1);
    /// assert_eq!(ch.try_recv(), Err(goro::chan::TryRecvError::Empty));
    /// ch.try_send(5).unwrap();
    /// assert_eq!(ch.try_recv(), Ok(5));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.rx.try_recv()
    }

    /// [`send`](Chan::send) from a plain thread; see [`Sender::send_blocking`].
    ///
    /// ```
    /// let ch = goro::Chan::new(0);
    /// let c = ch.clone();
    /// let t = std::thread::spawn(move || c.send_blocking(1));
    /// assert_eq!(ch.recv_blocking(), Some(1));
    /// t.join().unwrap().unwrap();
    /// ```
    #[track_caller]
    pub fn send_blocking(&self, value: T) -> Result<(), SendError<T>> {
        self.tx.send_blocking(value)
    }

    /// [`recv`](Chan::recv) from a plain thread; see [`Receiver::recv_blocking`].
    ///
    /// ```
    /// let ch = goro::Chan::new(1);
    /// ch.try_send("x").unwrap();
    /// ch.close();
    /// assert_eq!(ch.recv_blocking(), Some("x"));
    /// assert_eq!(ch.recv_blocking(), None);
    /// ```
    #[track_caller]
    pub fn recv_blocking(&self) -> Option<T> {
        self.rx.recv_blocking()
    }

    /// Closes the channel (Go's `close(ch)`); `true` if this call closed it, `false` if it was
    /// closed already (Go panics there). See [`Sender::close`].
    ///
    /// ```
    /// let ch = goro::Chan::<()>::new(0);
    /// assert!(ch.close());
    /// assert!(!ch.close());
    /// assert!(ch.is_closed());
    /// ```
    pub fn close(&self) -> bool {
        self.tx.close()
    }

    /// Whether [`close`](Chan::close) was called (buffered values may still wait).
    ///
    /// ```
    /// let ch = goro::Chan::<u8>::new(1);
    /// assert!(!ch.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.rx.is_closed()
    }

    /// Values in the buffer (Go's `len(ch)`).
    ///
    /// ```
    /// let ch = goro::Chan::new(3);
    /// ch.try_send(1).unwrap();
    /// assert_eq!(ch.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// Whether the buffer is empty.
    ///
    /// ```
    /// assert!(goro::Chan::<u8>::new(3).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// The buffer's size (Go's `cap(ch)`): `capacity`, as on [`Sender`] and [`Receiver`].
    ///
    /// ```
    /// assert_eq!(goro::Chan::<u8>::new(3).capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.rx.capacity()
    }

    /// The old name of [`capacity`](Chan::capacity).
    #[deprecated(note = "use `capacity()`, the one name for a channel's size on Chan, Sender and Receiver")]
    pub fn cap(&self) -> usize {
        self.capacity()
    }

    /// A sending end of this channel (Go's conversion to `chan<- T`). While the `Chan` (or any
    /// clone) lives, the channel stays open whatever happens to this `Sender`.
    ///
    /// ```
    /// let ch = goro::Chan::new(1);
    /// let tx = ch.sender();
    /// tx.try_send(4).unwrap();
    /// drop(tx);
    /// assert!(!ch.is_closed());
    /// assert_eq!(ch.try_recv(), Ok(4));
    /// ```
    pub fn sender(&self) -> Sender<T> {
        self.tx.clone()
    }

    /// A receiving end of this channel (Go's conversion to `<-chan T`). Once every `Chan`
    /// clone and every `Sender` is gone nobody can send, and it sees the channel closed.
    ///
    /// ```
    /// let ch = goro::Chan::new(1);
    /// let rx = ch.receiver();
    /// ch.try_send(2).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(2));
    /// ```
    pub fn receiver(&self) -> Receiver<T> {
        self.rx.clone()
    }

    /// The split pair, in place of this handle: from then on the Rust rules of
    /// [`goro::chan`](crate::chan()) apply (the channel closes when its last `Sender` is
    /// dropped, if no `Chan` clone still holds it). Also `From<Chan<T>> for (Sender<T>,
    /// Receiver<T>)`.
    ///
    /// ```
    /// let ch = goro::Chan::new(1);
    /// let (tx, rx) = ch.into_split();
    /// tx.try_send(1).unwrap();
    /// drop(tx); // the last sender: closed
    /// assert_eq!(rx.recv_blocking(), Some(1));
    /// assert_eq!(rx.recv_blocking(), None);
    /// ```
    pub fn into_split(self) -> (Sender<T>, Receiver<T>) {
        (self.tx, self.rx)
    }

    pub(crate) fn receiver_ref(&self) -> &Receiver<T> {
        &self.rx
    }

    pub(crate) fn sender_ref(&self) -> &Sender<T> {
        &self.tx
    }
}

impl<T> Clone for Chan<T> {
    fn clone(&self) -> Chan<T> {
        Chan { tx: self.tx.clone(), rx: self.rx.clone() }
    }
}

impl<T> From<Chan<T>> for (Sender<T>, Receiver<T>) {
    fn from(c: Chan<T>) -> (Sender<T>, Receiver<T>) {
        c.into_split()
    }
}

impl<T> fmt::Debug for Chan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chan").field("capacity", &self.capacity()).field("len", &self.len()).finish_non_exhaustive()
    }
}
