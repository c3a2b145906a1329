//! The dynamic select: cases built at run time, Go's `reflect.Select`.

use super::cases::{Case, RecvCase, SendCase};
use super::Core;
use crate::error::SendError;
use crate::handles::{Receiver, Sender};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

/// A select over a list of cases built at run time (Go's `reflect.Select`), for when the number
/// of channels is not known at compile time or exceeds `select!`'s 64.
///
/// Add cases with [`recv`](Select::recv) and [`send`](Select::send) (each returns a typed token),
/// optionally a [`default`](Select::default), then [`wait`](Select::wait) once: it returns the
/// index of the case that fired (`None` for the default), and the fired case's outcome is taken
/// with the matching token. Exactly one case fires, chosen uniformly among the ready ones; the
/// same guarantees as `select!` hold, cancellation included.
///
/// ```
/// goro::run(async {
///     let chans: Vec<_> = (0..100).map(|_| goro::chan::<usize>(1)).collect();
///     chans[42].0.send(42).await.unwrap();
///     let mut sel = goro::chan::Select::new();
///     let tokens: Vec<_> = chans.iter().map(|(_, rx)| sel.recv(rx)).collect();
///     let fired = sel.wait().await.unwrap();
///     assert_eq!(fired, 42);
///     assert_eq!(sel.recv_result(tokens[fired]), Some(42));
/// });
/// ```
pub struct Select<'a> {
    id: u64,
    cases: Vec<Pin<Box<dyn Case + Send + 'a>>>,
    has_default: bool,
    /// Boxed: the cases' sudogs point at it, and the `Select` itself may move.
    core: Pin<Box<Core>>,
    fired: Option<Option<usize>>,
}

/// The token of a receive case of a [`Select`]: compare it with what `wait` returned, and take
/// the value with [`Select::recv_result`].
pub struct RecvToken<T> {
    select: u64,
    index: usize,
    _t: PhantomData<fn() -> T>,
}

/// The token of a send case of a [`Select`]; see [`Select::send_result`].
pub struct SendToken<T> {
    select: u64,
    index: usize,
    _t: PhantomData<fn() -> T>,
}

macro_rules! token_impls {
    ($t:ident) => {
        impl<T> $t<T> {
            /// The index of the case (what [`Select::wait`] returns when it fires).
            pub fn index(&self) -> usize {
                self.index
            }
        }
        impl<T> Clone for $t<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $t<T> {}
        impl<T> PartialEq<usize> for $t<T> {
            fn eq(&self, other: &usize) -> bool {
                self.index == *other
            }
        }
        impl<T> fmt::Debug for $t<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($t)).field(&self.index).finish()
            }
        }
    };
}
token_impls!(RecvToken);
token_impls!(SendToken);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Default for Select<'_> {
    fn default() -> Self {
        Select::new()
    }
}

impl<'a> Select<'a> {
    /// An empty select. With no case and no default, `wait` waits forever (Go's `select {}`).
    ///
    /// ```
    /// let mut sel = goro::chan::Select::new();
    /// sel.default();
    /// assert_eq!(sel.wait_blocking(), None);
    /// ```
    pub fn new() -> Select<'a> {
        Select {
            id: NEXT_ID.fetch_add(1, Relaxed),
            cases: Vec::new(),
            has_default: false,
            core: Box::pin(Core::new()),
            fired: None,
        }
    }

    /// Adds a receive case on `rx` (`None`: a nil channel, never ready).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(1);
    /// tx.try_send(7).unwrap();
    /// let mut sel = goro::chan::Select::new();
    /// let nil = sel.recv(None::<&goro::chan::Receiver<u8>>);
    /// let t = sel.recv(&rx);
    /// assert_eq!(sel.wait_blocking(), Some(t.index()));
    /// assert_eq!(sel.recv_result(t), Some(7));
    /// # let _ = nil;
    /// ```
    pub fn recv<T: Send + 'a>(&mut self, rx: impl Into<Option<&'a Receiver<T>>>) -> RecvToken<T> {
        self.assert_open();
        let index = self.cases.len();
        self.cases.push(Box::pin(RecvCase::new(rx.into())));
        RecvToken { select: self.id, index, _t: PhantomData }
    }

    /// Adds a case sending `value` on `tx` (`None`: a nil channel). If another case fires, the
    /// value is not sent and is dropped with the `Select`.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(1);
    /// let mut sel = goro::chan::Select::new();
    /// let t = sel.send(&tx, 9);
    /// assert_eq!(sel.wait_blocking(), Some(t.index()));
    /// assert!(sel.send_result(t).is_ok());
    /// assert_eq!(rx.try_recv(), Ok(9));
    /// ```
    pub fn send<T: Send + 'a>(&mut self, tx: impl Into<Option<&'a Sender<T>>>, value: T) -> SendToken<T> {
        self.assert_open();
        let index = self.cases.len();
        self.cases.push(Box::pin(SendCase::new(tx.into(), value)));
        SendToken { select: self.id, index, _t: PhantomData }
    }

    /// Adds a `default` case: `wait` returns `None` at once if no case is ready.
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::<u8>(0);
    /// let mut sel = goro::chan::Select::new();
    /// sel.recv(&rx);
    /// sel.default();
    /// assert_eq!(sel.wait_blocking(), None);
    /// ```
    pub fn default(&mut self) {
        self.assert_open();
        self.has_default = true;
    }

    /// The number of cases (not counting `default`).
    ///
    /// ```
    /// let (_tx, rx) = goro::chan::<u8>(0);
    /// let mut sel = goro::chan::Select::new();
    /// sel.recv(&rx);
    /// assert_eq!(sel.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// Whether there are no cases.
    ///
    /// ```
    /// assert!(goro::chan::Select::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }

    fn assert_open(&self) {
        assert!(self.fired.is_none(), "goro: Select cases added after it fired");
    }

    /// Waits until one case fires; returns its index, or `None` for the default. A `Select`
    /// fires once: waiting again returns the same answer.
    ///
    /// ```
    /// goro::run(async {
    ///     let (tx, rx) = goro::chan::<u8>(0);
    ///     goro::go(async move { tx.send(1).await.unwrap() });
    ///     let mut sel = goro::chan::Select::new();
    ///     let t = sel.recv(&rx);
    ///     assert_eq!(sel.wait().await, Some(t.index()));
    /// });
    /// ```
    pub fn wait(&mut self) -> Wait<'_, 'a> {
        Wait { select: self }
    }

    /// [`wait`](Self::wait) on a plain thread.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(1);
    /// tx.try_send(1).unwrap();
    /// let mut sel = goro::chan::Select::new();
    /// let t = sel.recv(&rx);
    /// assert_eq!(sel.wait_blocking(), Some(t.index()));
    /// ```
    #[track_caller]
    pub fn wait_blocking(&mut self) -> Option<usize> {
        goro_runtime::__private::block_on_thread_for("`sel.wait().await`", self.wait())
    }

    /// The outcome of receive case `token`, which must be the case that fired: `Some(v)`, or
    /// `None` if the channel was closed.
    ///
    /// # Panics
    /// If `token` is from another `Select`, or its case did not fire, or was taken already.
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(1);
    /// drop(tx);
    /// let mut sel = goro::chan::Select::new();
    /// let t = sel.recv(&rx);
    /// sel.wait_blocking();
    /// assert_eq!(sel.recv_result(t), None);
    /// ```
    pub fn recv_result<T: Send + 'a>(&mut self, token: RecvToken<T>) -> Option<T> {
        let case = self.fired_case(token.select, token.index);
        // SAFETY: the token was made by `recv::<T>` of this very select (same id) for this index,
        // so the boxed case is a `RecvCase<'a, T>`.
        let case =
            unsafe { case.map_unchecked_mut(|c| &mut *(c as *mut (dyn Case + Send + 'a) as *mut RecvCase<'a, T>)) };
        case.take()
    }

    /// The outcome of send case `token`, which must be the case that fired.
    ///
    /// # Panics
    /// As for [`recv_result`](Self::recv_result).
    ///
    /// ```
    /// let (tx, rx) = goro::chan::<u8>(1);
    /// drop(rx);
    /// let mut sel = goro::chan::Select::new();
    /// let t = sel.send(&tx, 5);
    /// sel.wait_blocking();
    /// assert_eq!(sel.send_result(t).unwrap_err().0, 5);
    /// ```
    pub fn send_result<T: Send + 'a>(&mut self, token: SendToken<T>) -> Result<(), SendError<T>> {
        let case = self.fired_case(token.select, token.index);
        // SAFETY: as in `recv_result`, for `send::<T>`.
        let case =
            unsafe { case.map_unchecked_mut(|c| &mut *(c as *mut (dyn Case + Send + 'a) as *mut SendCase<'a, T>)) };
        case.take()
    }

    fn fired_case(&mut self, select: u64, index: usize) -> Pin<&mut (dyn Case + Send + 'a)> {
        assert_eq!(select, self.id, "goro: a token of another Select");
        assert_eq!(self.fired, Some(Some(index)), "goro: Select::*_result for a case that did not fire");
        self.cases[index].as_mut()
    }
}

/// The future of [`Select::wait`]: the index of the case that fired, or `None` for the default.
///
/// Cancel-safe: dropped while it waits, it unlinks every case; a value a sender had already
/// handed to a receive case goes back to its channel, and the `Select` may be waited on again.
/// A send case that fired cannot be undone: the `Select` then stays fired with it.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Wait<'s, 'a> {
    select: &'s mut Select<'a>,
}

impl Future for Wait<'_, '_> {
    type Output = Option<usize>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<usize>> {
        let sel = &mut *self.select;
        if let Some(f) = sel.fired {
            return Poll::Ready(f);
        }
        let cases: Vec<&dyn Case> = sel.cases.iter().map(|c| &**c as &dyn Case).collect();
        let out = sel.core.poll(&cases, sel.has_default, cx);
        if let Poll::Ready(f) = out {
            sel.fired = Some(f);
        }
        out
    }
}

impl Drop for Wait<'_, '_> {
    fn drop(&mut self) {
        let sel = &mut *self.select;
        let cases: Vec<&dyn Case> = sel.cases.iter().map(|c| &**c as &dyn Case).collect();
        // A receive that fired while nobody was polling gives its value back, and the select
        // may be waited on again; a send that fired cannot be undone, so the select stays
        // fired with it (the next `wait` returns it at once).
        if let Some(w) = sel.core.cancel(&cases) {
            // SAFETY: the wait is over; `&mut Select` gives exclusive access to the cases.
            if unsafe { cases[w].spent() } {
                sel.fired = Some(Some(w));
            }
        }
    }
}

impl fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Select").field("cases", &self.cases.len()).field("default", &self.has_default).finish()
    }
}

impl fmt::Debug for Wait<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait").finish_non_exhaustive()
    }
}
