//! The blocking halves of send and receive: futures that queue a [`Sudog`] when the operation
//! cannot complete at once, and the thread-blocking versions built on them.
//!
//! # Cancellation
//!
//! Any of these futures may be dropped at any await point (a `select!` of another crate, a
//! timeout, an aborted G). Dropping one:
//! - unlinks its sudog if it is still queued, so no peer will touch it again;
//! - for a receive that a sender already completed (the value sits in the sudog but was never
//!   returned), gives the value back to the channel: to the next waiting receiver, or the front
//!   of the buffer. A send that returned `Ok` was therefore received, or will be, by somebody.
//! - for a send that had not completed, drops the unsent value with the future: it was never
//!   sent, and no receiver will see it.

use crate::chan::{Chan, Inner};
use crate::error::{SendError, TryRecvError, TrySendError};
use crate::loom::Ordering::*;
use crate::waitq::{Sudog, CLOSED, DONE, WAITING};
use goro_runtime::WaitReason;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs `f` under the channel lock if `sudog` is still `WAITING` (so still queued and its waker
/// ours to update); returns whether it was. Peers settle sudogs only under the lock, so the
/// answer cannot change while `f` runs.
fn if_waiting<T>(sudog: &Sudog<T>, chan: &Chan<T>, f: impl FnOnce(&mut Inner<T>)) -> bool {
    if sudog.state.load(Acquire) != WAITING {
        return false;
    }
    let mut g = chan.lock();
    if sudog.state.load(Acquire) != WAITING {
        return false;
    }
    f(&mut g);
    true
}

/// The reusable state of one receive: its sudog and whether it is queued.
pub(crate) struct RecvOp<T> {
    sudog: Sudog<T>,
    parked: bool,
}

impl<T> RecvOp<T> {
    pub(crate) fn new() -> RecvOp<T> {
        RecvOp { sudog: Sudog::new(), parked: false }
    }

    /// Polls the receive; on `Ready` the op is reset and may be polled again for the next value.
    ///
    /// # Safety
    /// `self` is pinned (it never moves while parked), and `chan` is the same channel on every
    /// call until the op is ready or cancelled.
    pub(crate) unsafe fn poll(&mut self, chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.parked {
            // SAFETY (closure): under the lock, a WAITING sudog is queued and ours to update.
            if if_waiting(&self.sudog, chan, |_| unsafe { self.sudog.set_waker(cx.waker()) }) {
                return Poll::Pending;
            }
            // Settled (the Acquire load in `if_waiting` saw it): the slot is ours again.
            let state = self.sudog.state.load(Acquire);
            self.parked = false;
            // SAFETY: settled, not queued: the slot is ours.
            let v = unsafe { self.sudog.take_elem() };
            // SAFETY: not queued, ours.
            unsafe { self.sudog.reset() };
            debug_assert_eq!(v.is_some(), state == DONE);
            return Poll::Ready(v);
        }
        let mut g = chan.lock();
        match g.try_recv() {
            Ok((v, w)) => {
                drop(g);
                if let Some(w) = w {
                    w.wake();
                }
                Poll::Ready(Some(v))
            }
            Err(TryRecvError::Closed) => Poll::Ready(None),
            Err(TryRecvError::Empty) => {
                // SAFETY: we hold the lock; the sudog is pinned with `self` and is unlinked by
                // `cancel` (or settled by a peer) before it can be freed.
                unsafe {
                    self.sudog.set_waker(cx.waker());
                    g.park_recv(&self.sudog);
                }
                self.parked = true;
                drop(g);
                goro_runtime::set_wait_reason(WaitReason::ChanReceive);
                Poll::Pending
            }
        }
    }

    /// Undoes a pending receive (see the module docs).
    ///
    /// # Safety
    /// As for [`poll`](Self::poll).
    pub(crate) unsafe fn cancel(&mut self, chan: &Chan<T>) {
        if !self.parked {
            return;
        }
        self.parked = false;
        // SAFETY (closure): under the lock; a WAITING sudog is queued on this channel's recvq.
        if if_waiting(&self.sudog, chan, |g| unsafe {
            g.recvq.remove(&self.sudog);
        }) {
            return;
        }
        // Settled but never returned: a value handed to us goes back.
        // SAFETY: settled: the slot is ours.
        if let Some(v) = unsafe { self.sudog.take_elem() } {
            let w = chan.lock().give_back(v);
            if let Some(w) = w {
                w.wake();
            }
        }
        // SAFETY: not queued, ours.
        unsafe { self.sudog.reset() };
    }
}

/// The reusable state of one send.
pub(crate) struct SendOp<T> {
    sudog: Sudog<T>,
    parked: bool,
}

impl<T> SendOp<T> {
    pub(crate) fn new() -> SendOp<T> {
        SendOp { sudog: Sudog::new(), parked: false }
    }

    /// Polls the send of `value` (taken on the first poll).
    ///
    /// # Safety
    /// As for [`RecvOp::poll`].
    pub(crate) unsafe fn poll(
        &mut self,
        chan: &Chan<T>,
        value: &mut Option<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        if self.parked {
            // SAFETY (closure): under the lock, a WAITING sudog is queued and ours to update.
            if if_waiting(&self.sudog, chan, |_| unsafe { self.sudog.set_waker(cx.waker()) }) {
                return Poll::Pending;
            }
            return match self.sudog.state.load(Acquire) {
                DONE => {
                    self.parked = false;
                    // SAFETY: settled, not queued.
                    unsafe { self.sudog.reset() };
                    Poll::Ready(Ok(()))
                }
                CLOSED => {
                    self.parked = false;
                    // SAFETY: settled: the slot (still holding our value) is ours.
                    let v = unsafe { self.sudog.take_elem() }.expect("a refused send keeps its value");
                    // SAFETY: not queued, ours.
                    unsafe { self.sudog.reset() };
                    Poll::Ready(Err(SendError(v)))
                }
                s => unreachable!("goro: sudog state {s}"),
            };
        }
        let v = value.take().expect("goro: send future polled after it completed");
        let mut g = chan.lock();
        match g.try_send(v) {
            Ok(w) => {
                drop(g);
                if let Some(w) = w {
                    w.wake();
                }
                Poll::Ready(Ok(()))
            }
            Err(TrySendError::Closed(v)) => Poll::Ready(Err(SendError(v))),
            Err(TrySendError::Full(v)) => {
                // SAFETY: as in RecvOp::poll.
                unsafe {
                    self.sudog.put_elem(v);
                    self.sudog.set_waker(cx.waker());
                    g.park_send(&self.sudog);
                }
                self.parked = true;
                drop(g);
                goro_runtime::set_wait_reason(WaitReason::ChanSend);
                Poll::Pending
            }
        }
    }

    /// Undoes a pending send: the unsent value is dropped with the op.
    ///
    /// # Safety
    /// As for [`RecvOp::poll`].
    pub(crate) unsafe fn cancel(&mut self, chan: &Chan<T>) {
        if !self.parked {
            return;
        }
        self.parked = false;
        // SAFETY (closure): under the lock; a WAITING sudog is queued on this channel's sendq.
        if_waiting(&self.sudog, chan, |g| unsafe {
            g.sendq.remove(&self.sudog);
        });
    }
}

/// The future of [`Receiver::recv`](crate::Receiver::recv): `Some(value)`, or `None` once the
/// channel is closed and drained.
///
/// Cancel-safe: if it is dropped after a sender handed it a value, the value goes back into the
/// channel for the next receiver (see the [module docs](self)).
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Recv<'a, T> {
    pub(crate) chan: &'a Chan<T>,
    pub(crate) op: RecvOp<T>,
}

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        // SAFETY: `op` is never moved out of the pinned future; `chan` is fixed.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `op` is pinned inside `self`, and always used with `this.chan`.
        unsafe { this.op.poll(this.chan, cx) }
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropping in place: `op` has not moved since it was pinned.
        unsafe { self.op.cancel(self.chan) }
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv").field("parked", &self.op.parked).finish()
    }
}

/// The future of [`Sender::send`](crate::Sender::send): `Ok(())` once a receiver has the value
/// (unbuffered) or it is buffered, `Err(SendError(value))` if the channel is closed or has no
/// receivers left.
///
/// Dropping it before it completes drops the value unsent; no receiver will see it.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Send<'a, T> {
    pub(crate) chan: &'a Chan<T>,
    pub(crate) value: Option<T>,
    pub(crate) op: SendOp<T>,
}

impl<T> Future for Send<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `op` is never moved out of the pinned future; `chan` is fixed.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `op` is pinned inside `self`, and always used with `this.chan`.
        unsafe { this.op.poll(this.chan, &mut this.value, cx) }
    }
}

impl<T> Drop for Send<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropping in place: `op` has not moved since it was pinned.
        unsafe { self.op.cancel(self.chan) }
    }
}

impl<T> fmt::Debug for Send<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Send").field("parked", &self.op.parked).finish()
    }
}
