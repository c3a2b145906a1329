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

use crate::chan::{Chan, Guard, Inner};
use crate::error::{SendError, TryRecvError, TrySendError};
use crate::loom::Ordering::*;
use crate::waitq::{Sudog, CLOSED, DONE, WAITING};
use goro_runtime::WaitReason;
use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
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

/// A sudog that is written only when its operation has to wait.
///
/// It is initialised exactly while `parked` is set (from the moment the op queues it until the
/// op has seen it settled, or unlinked it, and dropped it in place). An op that completes at
/// once, the common case, never touches it: creating, polling and dropping such a future
/// writes two words and takes the channel lock once.
struct LazySudog<T> {
    sudog: MaybeUninit<Sudog<T>>,
    parked: bool,
}

impl<T> LazySudog<T> {
    #[inline]
    fn new() -> LazySudog<T> {
        LazySudog { sudog: MaybeUninit::uninit(), parked: false }
    }

    /// Writes a fresh sudog and marks it parked (the caller queues it next, under the lock).
    fn park(&mut self) -> &Sudog<T> {
        debug_assert!(!self.parked);
        self.sudog.write(Sudog::waiting());
        self.parked = true;
        // SAFETY: written just above.
        unsafe { self.sudog.assume_init_ref() }
    }

    /// The sudog.
    ///
    /// # Safety
    /// `self.parked` (the sudog is initialised).
    #[inline]
    unsafe fn get(&self) -> &Sudog<T> {
        debug_assert!(self.parked);
        // SAFETY: caller contract: initialised while parked.
        unsafe { self.sudog.assume_init_ref() }
    }

    /// Drops the sudog in place and clears `parked`.
    ///
    /// # Safety
    /// `self.parked`, and the sudog is not queued (settled, or unlinked by us).
    unsafe fn unpark(&mut self) {
        self.parked = false;
        // SAFETY: caller contract: initialised, and no peer can reach it any more.
        unsafe { self.sudog.assume_init_drop() };
    }
}

/// The reusable state of one receive: its sudog, written only when the receive has to wait.
pub(crate) struct RecvOp<T> {
    sg: LazySudog<T>,
}

impl<T> RecvOp<T> {
    #[inline]
    pub(crate) fn new() -> RecvOp<T> {
        RecvOp { sg: LazySudog::new() }
    }

    /// Polls the receive; on `Ready` the op is reset and may be polled again for the next value.
    ///
    /// Each path that returns `Pending` because the op waits records the G's wait reason there
    /// (the runtime clears it at every poll): the paths out of line, so that the inlined fast
    /// path carries none of that code. A `Pending` from a yield point records none: the G is
    /// runnable then.
    ///
    /// # Safety
    /// `self` is pinned (it never moves while parked), and `chan` is the same channel on every
    /// call until the op is ready or cancelled.
    #[inline]
    pub(crate) unsafe fn poll(&mut self, chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        chan.check_bubble();
        if self.sg.parked {
            // SAFETY: caller contract.
            return unsafe { self.poll_parked(chan, cx) };
        }
        // A yield point: if sysmon asked this G to yield, do so before touching the channel.
        std::task::ready!(goro_runtime::coop::poll_proceed(cx));
        let mut g = chan.lock();
        if let Some(v) = g.try_recv_fast() {
            drop(g);
            return Poll::Ready(Some(v));
        }
        // SAFETY: caller contract.
        unsafe { self.poll_locked(g, cx) }
    }

    /// The first poll's full path, with the lock held: a blocked sender to take from (or to
    /// refill the buffer from), a closed channel, or park.
    ///
    /// # Safety
    /// As for [`poll`](Self::poll); `g` locks the op's channel; not parked.
    #[inline(never)]
    unsafe fn poll_locked(&mut self, mut g: Guard<'_, T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let chan = g.chan();
        match g.try_recv(&chan.returned) {
            Ok((v, w)) => {
                drop(g);
                if let Some(w) = w {
                    w.wake();
                }
                Poll::Ready(Some(v))
            }
            Err(TryRecvError::Closed) => Poll::Ready(None),
            Err(TryRecvError::Empty) => {
                let sg = self.sg.park();
                // SAFETY: we hold the lock; the sudog is pinned with `self` and is unlinked by
                // `cancel` (or settled by a peer) before it can be freed.
                unsafe {
                    sg.set_waker(cx.waker());
                    g.park_recv(sg);
                }
                drop(g);
                chan.park_reason(WaitReason::ChanReceive);
                Poll::Pending
            }
        }
    }

    /// A later poll while parked: still waiting (refresh the waker), or settled by a peer.
    ///
    /// # Safety
    /// As for [`poll`](Self::poll); parked.
    #[inline(never)]
    unsafe fn poll_parked(&mut self, chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        // SAFETY: parked.
        let sg = unsafe { self.sg.get() };
        // SAFETY (closure): under the lock, a WAITING sudog is queued and ours to update.
        if if_waiting(sg, chan, |_| unsafe { sg.set_waker(cx.waker()) }) {
            chan.park_reason(WaitReason::ChanReceive);
            return Poll::Pending;
        }
        // Settled (the Acquire load in `if_waiting` saw it): the slot is ours again.
        let state = sg.state.load(Acquire);
        // SAFETY: settled, not queued: the slot is ours.
        let v = unsafe { sg.take_elem() };
        debug_assert_eq!(v.is_some(), state == DONE);
        if v.is_some() {
            // A value handed to us reaches its user now: it is no longer in flight.
            chan.claim();
        }
        goro_runtime::__private::profile::block_event(sg.t0);
        // SAFETY: settled: no peer reaches it any more.
        unsafe { self.sg.unpark() };
        Poll::Ready(v)
    }

    /// Undoes a pending receive (see the module docs).
    ///
    /// # Safety
    /// As for [`poll`](Self::poll).
    #[inline]
    pub(crate) unsafe fn cancel(&mut self, chan: &Chan<T>) {
        if self.sg.parked {
            // SAFETY: caller contract.
            unsafe { self.cancel_parked(chan) }
        }
    }

    /// # Safety
    /// As for [`poll`](Self::poll); parked.
    #[cold]
    unsafe fn cancel_parked(&mut self, chan: &Chan<T>) {
        // SAFETY: parked.
        let sg = unsafe { self.sg.get() };
        // SAFETY (closure): under the lock; a WAITING sudog is queued on this channel's recvq.
        let unlinked = if_waiting(sg, chan, |g| unsafe {
            g.recvq.remove(sg);
        });
        if !unlinked {
            // Settled but never returned: a value handed to us goes back.
            // SAFETY: settled: the slot is ours.
            if let Some(v) = unsafe { sg.take_elem() } {
                let w = chan.lock().give_back(v, true);
                if let Some(w) = w {
                    w.wake();
                }
            }
        }
        // SAFETY: unlinked by us or settled: no peer reaches it any more.
        unsafe { self.sg.unpark() };
    }
}

/// The reusable state of one send; its sudog is written only when the send has to wait.
pub(crate) struct SendOp<T> {
    sg: LazySudog<T>,
}

impl<T> SendOp<T> {
    #[inline]
    pub(crate) fn new() -> SendOp<T> {
        SendOp { sg: LazySudog::new() }
    }

    /// Whether a send is waiting (queued, or settled and not yet seen by a poll).
    #[inline]
    pub(crate) fn is_parked(&self) -> bool {
        self.sg.parked
    }

    /// Polls the send of `value` (taken on the first poll).
    ///
    /// # Safety
    /// As for [`RecvOp::poll`].
    #[inline]
    pub(crate) unsafe fn poll(
        &mut self,
        chan: &Chan<T>,
        value: &mut Option<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        chan.check_bubble();
        if self.sg.parked {
            // SAFETY: caller contract.
            return unsafe { self.poll_parked(chan, cx) };
        }
        // A yield point (before the value is taken: nothing has happened yet).
        std::task::ready!(goro_runtime::coop::poll_proceed(cx));
        let v = value.take().expect("goro: send future polled after it completed");
        let mut g = chan.lock();
        match g.try_send_fast(v) {
            Ok(()) => {
                drop(g);
                Poll::Ready(Ok(()))
            }
            // SAFETY: caller contract.
            Err(v) => unsafe { self.poll_locked(g, v, cx) },
        }
    }

    /// The first poll's full path, with the lock held: a receiver to hand `v` to, a closed
    /// channel, or park with `v` in the sudog.
    ///
    /// # Safety
    /// As for [`RecvOp::poll`]; `g` locks the op's channel; not parked.
    #[inline(never)]
    unsafe fn poll_locked(
        &mut self,
        mut g: Guard<'_, T>,
        v: T,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        let chan = g.chan();
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
                let sg = self.sg.park();
                // SAFETY: as in RecvOp::poll_locked.
                unsafe {
                    sg.put_elem(v);
                    sg.set_waker(cx.waker());
                    g.park_send(sg);
                }
                drop(g);
                chan.park_reason(WaitReason::ChanSend);
                Poll::Pending
            }
        }
    }

    /// # Safety
    /// As for [`RecvOp::poll`]; parked.
    #[inline(never)]
    unsafe fn poll_parked(&mut self, chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        // SAFETY: parked.
        let sg = unsafe { self.sg.get() };
        // SAFETY (closure): under the lock, a WAITING sudog is queued and ours to update.
        if if_waiting(sg, chan, |_| unsafe { sg.set_waker(cx.waker()) }) {
            chan.park_reason(WaitReason::ChanSend);
            return Poll::Pending;
        }
        let out = match sg.state.load(Acquire) {
            DONE => Ok(()),
            // SAFETY: settled: the slot (still holding our value) is ours.
            CLOSED => Err(SendError(unsafe { sg.take_elem() }.expect("a refused send keeps its value"))),
            s => unreachable!("goro: sudog state {s}"),
        };
        goro_runtime::__private::profile::block_event(sg.t0);
        // SAFETY: settled: no peer reaches it any more.
        unsafe { self.sg.unpark() };
        Poll::Ready(out)
    }

    /// Undoes a pending send: the unsent value is dropped with the op.
    ///
    /// # Safety
    /// As for [`RecvOp::poll`].
    #[inline]
    pub(crate) unsafe fn cancel(&mut self, chan: &Chan<T>) {
        if self.sg.parked {
            // SAFETY: caller contract.
            unsafe { self.cancel_parked(chan) }
        }
    }

    /// # Safety
    /// As for [`RecvOp::poll`]; parked.
    #[cold]
    unsafe fn cancel_parked(&mut self, chan: &Chan<T>) {
        // SAFETY: parked.
        let sg = unsafe { self.sg.get() };
        // SAFETY (closure): under the lock; a WAITING sudog is queued on this channel's sendq.
        if_waiting(sg, chan, |g| unsafe {
            g.sendq.remove(sg);
        });
        // SAFETY: unlinked by us or settled; dropping it drops an unsent value with it.
        unsafe { self.sg.unpark() };
    }
}

/// The future of [`Receiver::recv`](crate::Receiver::recv): `Some(value)`, or `None` once the
/// channel is closed and drained.
///
/// Cancel-safe: if it is dropped after a sender handed it a value, the value goes back into the
/// channel for the next receiver.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Recv<'a, T> {
    pub(crate) chan: &'a Chan<T>,
    pub(crate) op: RecvOp<T>,
}

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        // SAFETY: `op` is never moved out of the pinned future; `chan` is fixed.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `op` is pinned inside `self`, and always used with `this.chan`.
        unsafe { this.op.poll(this.chan, cx) }
    }
}

impl<T> Drop for Recv<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropping in place: `op` has not moved since it was pinned.
        unsafe { self.op.cancel(self.chan) }
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv").field("parked", &self.op.sg.parked).finish()
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

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `op` is never moved out of the pinned future; `chan` is fixed.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `op` is pinned inside `self`, and always used with `this.chan`.
        unsafe { this.op.poll(this.chan, &mut this.value, cx) }
    }
}

impl<T> Drop for Send<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropping in place: `op` has not moved since it was pinned.
        unsafe { self.op.cancel(self.chan) }
    }
}

impl<T> fmt::Debug for Send<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Send").field("parked", &self.op.sg.parked).finish()
    }
}
