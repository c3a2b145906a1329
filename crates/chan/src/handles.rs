//! `Sender` and `Receiver`: the two ends of a channel, and the channel constructor.

use crate::chan::{wake_all, Chan};
use crate::error::{SendError, TryRecvError, TrySendError};
use crate::loom::Ordering::*;
use crate::ops::{Recv, RecvOp, Send, SendOp};
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Makes a channel of `cap` slots: Go's `make(chan T, cap)`.
///
/// `cap == 0` is an unbuffered channel: a send completes only when a receiver takes the value.
/// Both ends can be cloned (many senders, many receivers) and sent to other Gs or threads. The
/// channel closes when [`Sender::close`] is called or when every `Sender` is gone.
///
/// ```
/// goro::run(async {
///     let (tx, rx) = goro::chan::<String>(0);
///     goro::go(async move {
///         tx.send("ping".to_string()).await.unwrap();
///     });
///     assert_eq!(rx.recv().await.as_deref(), Some("ping"));
///     // The only sender is gone: the channel is closed.
///     assert_eq!(rx.recv().await, None);
/// });
/// ```
pub fn chan<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    pair(Chan::new(cap))
}

/// A channel of every synctest bubble and of none: usable anywhere, and a wait on it is durable
/// in any bubble. For a channel that nothing ever sends on or closes (the `done()` of
/// `goro::context`'s roots, Go's nil channel): no G can wake its waiters, inside a bubble or
/// out. Not part of the stable API.
#[doc(hidden)]
pub fn chan_of_every_bubble<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    let mut c = Chan::new(cap);
    c.bubble = goro_runtime::__private::synctest::ANY;
    pair(c)
}

fn pair<T>(chan: Chan<T>) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(chan);
    (Sender { chan: chan.clone(), sink: Exclusive(None) }, Receiver { chan, stream: None })
}

/// The sending end of a channel (Go's `chan<- T`).
///
/// Cloning makes another sender of the same channel; the channel closes when the last one is
/// dropped (or on [`close`](Self::close)).
///
/// A `Sender` is also a [`futures_sink::Sink`], for code written against that trait (a
/// `stream.forward(tx)`): see [the impl](#impl-Sink%3CT%3E-for-Sender%3CT%3E).
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
    /// The send in progress of the `Sink` impl, boxed so the `Sender` may move between polls
    /// while its sudog stays put. Reached only through `&mut self`.
    sink: Exclusive<Option<Pin<Box<SinkSlot<T>>>>>,
}

/// The `Sink` impl's one item in flight and its send.
struct SinkSlot<T> {
    value: Option<T>,
    op: SendOp<T>,
}

/// A value reached only through `&mut` (std's unstable `Exclusive`): sharing `&Exclusive<X>`
/// between threads gives access to nothing, so it is `Sync` whatever `X` is.
struct Exclusive<X>(X);

// SAFETY: no method reaches the inner value through `&self`; `&mut self` is exclusive.
unsafe impl<X: std::marker::Send> Sync for Exclusive<X> {}

/// The receiving end of a channel (Go's `<-chan T`).
///
/// Cloning makes another receiver of the same channel; each value goes to exactly one receiver.
/// When the last receiver is dropped, every blocked and later send fails with its value back.
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
    /// The receive in progress of `Stream::poll_next`, boxed so the `Receiver` may move between
    /// polls while its sudog stays put.
    stream: Option<Pin<Box<RecvOp<T>>>>,
}

impl<T> Sender<T> {
    /// Sends `value` (Go's `ch <- v`): waits until a receiver takes it (unbuffered) or there is
    /// room in the buffer.
    ///
    /// Returns `Err(SendError(value))` if the channel is closed or every receiver is gone,
    /// also when that happens while the send waits: the value is never lost. Dropping the future
    /// before it completes drops the value unsent.
    ///
    /// ```
    /// goro::run(async {
    ///     let (tx, rx) = goro::chan(1);
    ///     tx.send(1).await.unwrap();
    ///     assert_eq!(rx.recv().await, Some(1));
    ///     drop(rx);
    ///     assert_eq!(tx.send(2).await.unwrap_err().0, 2);
    /// });
    /// ```
    #[inline]
    pub fn send(&self, value: T) -> Send<'_, T> {
        Send { chan: &self.chan, value: Some(value), op: SendOp::new() }
    }

    /// Sends without waiting: Go's `select { case ch <- v: default: }`.
    ///
    /// ```
    /// let (tx, rx) = goro::chan(1);
    /// assert!(tx.try_send(1).is_ok());
    /// assert!(tx.try_send(2).unwrap_err().is_full());
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.check_bubble();
        let w = self.chan.lock().try_send(value)?;
        if let Some(w) = w {
            w.wake();
        }
        Ok(())
    }

    /// Sends from a plain thread, parking the thread (not a G) until the send completes.
    ///
    /// Works with no runtime at all. Inside a G use `send(..).await`: this call would block the
    /// whole M.
    ///
    /// ```
    /// let (tx, rx) = goro::chan(0);
    /// let t = std::thread::spawn(move || tx.send_blocking(5));
    /// assert_eq!(rx.recv_blocking(), Some(5));
    /// t.join().unwrap().unwrap();
    /// ```
    #[track_caller]
    pub fn send_blocking(&self, value: T) -> Result<(), SendError<T>> {
        goro_runtime::__private::block_on_thread_for("`tx.send(v).await`", self.send(value))
    }

    /// Makes the channel never close by its senders going away (an explicit `close` still
    /// closes it): for channels whose sender is an implementation detail, such as a timer's
    /// (Go's timer channels are never closed). Not part of the stable API.
    #[doc(hidden)]
    pub fn keep_open(&self) {
        // A sender count that no handle will ever give back: the last real sender's drop does
        // not reach zero. The channel's memory is still freed with its last handle.
        self.chan.senders.fetch_add(1, Relaxed);
    }

    /// Closes the channel (Go's `close(ch)`): receivers drain the buffer, then get `None`;
    /// blocked and later sends fail with their value back. Returns `true` if this call closed
    /// it, `false` if it was already closed (Go panics there).
    ///
    /// Cancellation adds one rule Go does not need: while a value handed to a receive future
    /// (its send reported `Ok`) has not been returned by that future, other receivers do not
    /// see the channel as drained (`try_recv` says `Empty`, `recv` waits): if that future is
    /// dropped, the value comes back to them. (A receive future that is leaked with a value,
    /// e.g. by `mem::forget`, therefore keeps the others waiting.)
    ///
    /// ```
    /// let (tx, rx) = goro::chan(2);
    /// tx.try_send(1).unwrap();
    /// assert!(tx.close());
    /// assert!(!tx.close());
    /// assert_eq!(rx.recv_blocking(), Some(1));
    /// assert_eq!(rx.recv_blocking(), None);
    /// ```
    #[track_caller]
    pub fn close(&self) -> bool {
        self.chan.check_bubble();
        close(&self.chan)
    }

    /// Whether a send would fail now: the channel is closed or has no receivers left.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<()>(0);
    /// assert!(!tx.is_closed());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        let g = self.chan.lock();
        g.closed || g.rx_gone
    }

    /// Values in the buffer (Go's `len(ch)`).
    ///
    /// ```
    /// let (tx, _rx) = goro::chan(4);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.lock().len()
    }

    /// Whether the buffer is empty.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::<u8>(4);
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's size (Go's `cap(ch)`).
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::<u8>(4);
    /// assert_eq!(tx.capacity(), 4);
    /// ```
    pub fn capacity(&self) -> usize {
        self.chan.cap
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// Whether both handles belong to the same channel.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(0);
    /// assert!(tx.same_channel(&tx.clone()));
    /// # drop(rx);
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

fn close<T>(chan: &Chan<T>) -> bool {
    let mut wake = Vec::new();
    let closed = chan.lock().close(&mut wake, &chan.returned);
    wake_all(wake);
    closed
}

impl<T> Receiver<T> {
    /// Receives a value (Go's `v, ok := <-ch`): `Some(v)`, or `None` once the channel is closed
    /// and its buffer drained.
    ///
    /// Cancel-safe: if the future is dropped after a sender handed it a value, the value goes
    /// back into the channel for the next receiver; nothing is lost.
    ///
    /// ```
    /// goro::run(async {
    ///     let (tx, rx) = goro::chan(0);
    ///     goro::go(async move { tx.send(42).await.unwrap() });
    ///     assert_eq!(rx.recv().await, Some(42));
    ///     assert_eq!(rx.recv().await, None);
    /// });
    /// ```
    #[inline]
    pub fn recv(&self) -> Recv<'_, T> {
        Recv { chan: &self.chan, op: RecvOp::new() }
    }

    /// Receives without waiting.
    ///
    /// ```
    /// let (tx, rx) = goro::chan(1);
    /// assert_eq!(rx.try_recv(), Err(goro::chan::TryRecvError::Empty));
    /// tx.try_send(3).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.check_bubble();
        let (v, w) = self.chan.lock().try_recv(&self.chan.returned)?;
        if let Some(w) = w {
            w.wake();
        }
        Ok(v)
    }

    /// Receives on a plain thread, parking the thread (not a G). Works with no runtime at all;
    /// inside a G use `recv().await`.
    ///
    /// ```
    /// let (tx, rx) = goro::chan(0);
    /// std::thread::spawn(move || tx.send_blocking("hi").unwrap());
    /// assert_eq!(rx.recv_blocking(), Some("hi"));
    /// ```
    #[track_caller]
    pub fn recv_blocking(&self) -> Option<T> {
        goro_runtime::__private::block_on_thread_for("`rx.recv().await`", self.recv())
    }

    /// A blocking iterator over the received values, ending when the channel is closed and
    /// drained: Go's `for v := range ch` on a plain thread.
    ///
    /// ```
    /// let (tx, rx) = goro::chan(3);
    /// for i in 0..3 {
    ///     tx.try_send(i).unwrap();
    /// }
    /// drop(tx);
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// Whether the channel is closed (by [`Sender::close`] or because every sender is gone).
    /// Buffered values may still be waiting.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(1);
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.chan.lock().closed
    }

    /// Values in the buffer (Go's `len(ch)`).
    ///
    /// ```
    /// let (tx, rx) = goro::chan(2);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.lock().len()
    }

    /// Whether the buffer is empty.
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::<u8>(2);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's size (Go's `cap(ch)`).
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::<u8>(2);
    /// assert_eq!(rx.capacity(), 2);
    /// ```
    pub fn capacity(&self) -> usize {
        self.chan.cap
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// Whether both handles belong to the same channel.
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::<u8>(0);
    /// assert!(rx.same_channel(&rx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

/// The iterator of [`Receiver::iter`].
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    #[track_caller]
    fn next(&mut self) -> Option<T> {
        goro_runtime::__private::block_on_thread_for("`while let Some(v) = rx.recv().await`", self.rx.recv())
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> futures_core::Stream for Receiver<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        let op = this.stream.get_or_insert_with(|| Box::pin(RecvOp::new()));
        // SAFETY: the op is pinned in its box and always used with this receiver's channel.
        unsafe { op.as_mut().get_unchecked_mut().poll(&this.chan, cx) }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        self.chan.senders.fetch_add(1, Relaxed);
        Sender { chan: self.chan.clone(), sink: Exclusive(None) }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Receiver<T> {
        self.chan.receivers.fetch_add(1, Relaxed);
        Receiver { chan: self.chan.clone(), stream: None }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.sink.0.as_mut() {
            // SAFETY: pinned in its box, used with this channel only.
            unsafe { slot.as_mut().get_unchecked_mut().op.cancel(&self.chan) };
        }
        if self.chan.senders.fetch_sub(1, AcqRel) == 1 {
            close(&self.chan);
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let Some(op) = self.stream.as_mut() {
            // SAFETY: pinned in its box, used with this channel.
            unsafe { op.as_mut().get_unchecked_mut().cancel(&self.chan) };
        }
        if self.chan.receivers.fetch_sub(1, AcqRel) == 1 {
            let mut wake = Vec::new();
            let unreceivable = self.chan.lock().receivers_gone(&mut wake);
            wake_all(wake);
            drop(unreceivable);
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").field("capacity", &self.chan.cap).finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").field("capacity", &self.chan.cap).finish_non_exhaustive()
    }
}

// `Send`/`Sync` come from `Arc<Chan<T>>` (for `T: Send`) and, for `Receiver`, the boxed op.

/// Sends as [`Sender::send`] does, one item at a time: `poll_ready` is ready once the previous
/// item has been sent (a receiver took it, or it is buffered), so a `Sender` is a sink with
/// room for one item in flight. The error gives the item back (the channel is closed, or every
/// receiver is gone). `poll_close` flushes, then closes the channel (Go's `close(ch)`: for
/// every sender, as `futures`' channels do), so `stream.forward(tx)` ends the receivers'
/// `for v := range ch` when the stream ends.
///
/// As with any `Sink`, an item given to `start_send` and not yet flushed when the `Sender` is
/// dropped is dropped unsent.
///
/// ```
/// use futures_sink::Sink;
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// goro::run(async {
///     let (mut tx, rx) = goro::chan::<u32>(0);
///     goro::go(async move {
///         for i in 0..3 {
///             poll_fn(|cx| Pin::new(&mut tx).poll_ready(cx)).await.unwrap();
///             Pin::new(&mut tx).start_send(i).unwrap();
///         }
///         poll_fn(|cx| Pin::new(&mut tx).poll_close(cx)).await.unwrap();
///     });
///     let mut got = Vec::new();
///     while let Some(v) = rx.recv().await {
///         got.push(v);
///     }
///     assert_eq!(got, [0, 1, 2]);
/// });
/// ```
impl<T> futures_sink::Sink<T> for Sender<T> {
    type Error = SendError<T>;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        self.poll_flush(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: T) -> Result<(), SendError<T>> {
        let this = self.get_mut();
        let slot = this.sink.0.get_or_insert_with(|| Box::pin(SinkSlot { value: None, op: SendOp::new() }));
        // SAFETY: not moved out of its box.
        let slot = unsafe { slot.as_mut().get_unchecked_mut() };
        assert!(
            slot.value.is_none() && !slot.op.is_parked(),
            "goro: Sink::start_send on a Sender before poll_ready returned Ready"
        );
        slot.value = Some(item);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        let this = self.get_mut();
        let Some(slot) = this.sink.0.as_mut() else { return Poll::Ready(Ok(())) };
        // SAFETY: not moved out of its box.
        let slot = unsafe { slot.as_mut().get_unchecked_mut() };
        if slot.value.is_none() && !slot.op.is_parked() {
            return Poll::Ready(Ok(()));
        }
        // SAFETY: the op is pinned in its box and always used with this sender's channel.
        unsafe { slot.op.poll(&this.chan, &mut slot.value, cx) }
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        std::task::ready!(self.as_mut().poll_flush(cx))?;
        self.close();
        Poll::Ready(Ok(()))
    }
}
