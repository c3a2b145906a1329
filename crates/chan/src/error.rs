//! The errors of channel operations. Every error that concerns a value carries the value back:
//! a send that did not happen never loses what it was given.

use std::fmt;

/// A send on a channel that is closed, or whose receivers are all gone. The value comes back.
///
/// ```
/// goro::run(async {
///     let (tx, rx) = goro::chan::<i32>(1);
///     tx.close();
///     let err = tx.send(7).await.unwrap_err();
///     assert_eq!(err.0, 7);
///     assert_eq!(err.into_inner(), 7);
///     drop(rx);
/// });
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<&str>(0);
    /// drop(rx);
    /// assert_eq!(tx.send_blocking("lost?").unwrap_err().into_inner(), "lost?");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("send on closed channel")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// Why [`try_send`](crate::Sender::try_send) did not send. The value comes back.
///
/// ```
/// let (tx, _rx) = goro::chan::<u8>(1);
/// tx.try_send(1).unwrap();
/// match tx.try_send(2) {
///     Err(goro::chan::TrySendError::Full(v)) => assert_eq!(v, 2),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// No receiver is waiting and the buffer is full (for `cap == 0`: no receiver is waiting).
    Full(T),
    /// The channel is closed, or every receiver is gone.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::<u8>(0);
    /// assert_eq!(tx.try_send(9).unwrap_err().into_inner(), 9);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }

    /// Whether the send failed because the channel was full.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::<u8>(0);
    /// assert!(tx.try_send(1).unwrap_err().is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the send failed because the channel was closed.
    ///
    /// ```
    /// let (tx, _rx) = goro::chan::<u8>(1);
    /// tx.close();
    /// assert!(tx.try_send(1).unwrap_err().is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("channel is full"),
            TrySendError::Closed(_) => f.write_str("send on closed channel"),
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> TrySendError<T> {
        TrySendError::Closed(e.0)
    }
}

/// Why [`try_recv`](crate::Receiver::try_recv) returned no value.
///
/// ```
/// let (tx, rx) = goro::chan::<u8>(1);
/// assert_eq!(rx.try_recv(), Err(goro::chan::TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(goro::chan::TryRecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing to receive right now.
    Empty,
    /// The channel is closed and drained.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("channel is empty"),
            TryRecvError::Closed => f.write_str("channel is closed and drained"),
        }
    }
}

impl std::error::Error for TryRecvError {}
