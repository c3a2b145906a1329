//! The cases of a select: a receive or a send on one channel, type-erased behind [`Case`] so a
//! select over channels of different element types is one loop.
//!
//! A case owns its sudog and its outcome. It is pinned for as long as a select may have armed it
//! (the `select!` expansion pins each case on the stack; the dynamic `Select` boxes them), and
//! its own `Drop` unlinks the sudog if it is somehow still queued, so no queue can ever point at
//! a freed case, even if the select future is leaked.

use crate::chan::Chan;
use crate::error::{SendError, TryRecvError, TrySendError};
use crate::handles::{Receiver, Sender};
use crate::loom::AtomicBool;
use crate::loom::{Ordering::*, UnsafeCell};
use crate::waitq::{SelectShared, Sudog, CLOSED, DONE, WAITING};
use std::pin::Pin;
use std::task::Waker;

/// One case of a select, as the select algorithm sees it.
///
/// All `unsafe` methods require that the calling thread holds the case's channel lock (taken
/// through [`lock`](Case::lock)) and that the case is pinned. That lock is what makes a case
/// `Sync`: every access to its interior state through `&self` happens under it (nil-channel
/// cases have no state to touch), and results are taken out through `Pin<&mut Self>`.
#[doc(hidden)]
pub trait Case: Sync + sealed::Sealed {
    /// The lock-order key of the case's channel (its address); `None` for a nil channel.
    fn key(&self) -> Option<usize>;
    /// Whether it is a send case (for the wait reason of a select on nil channels).
    fn is_send(&self) -> bool;
    /// The synctest bubble of the case's channel (`None` for a nil channel).
    fn bubble(&self) -> Option<u64>;
    /// Locks the case's channel.
    fn lock(&self);
    /// # Safety
    /// The caller holds the lock.
    unsafe fn unlock(&self);
    /// The select's first pass, one case at a time: locks the case's channel, completes the
    /// operation if it can (as [`try_complete`](Case::try_complete)), unlocks. `false` for a
    /// nil channel. One virtual call per case tried, with the channel's inlined fast path.
    fn try_alone(&self, wake: &mut Option<Waker>) -> bool;
    /// Pass 1: completes the operation now if it can; the waker of the peer it completed (at
    /// most one) goes to `wake`.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn try_complete(&self, wake: &mut Option<Waker>) -> bool;
    /// Pass 2: queues the case's sudog as case `idx` of `sel`.
    ///
    /// # Safety
    /// See the trait docs; `sel` outlives the armed state.
    unsafe fn arm(&self, sel: *const SelectShared, idx: usize);
    /// Pass 3: unlinks the sudog if it is still queued (a case that lost).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn disarm(&self);
    /// Pass 3 for the winner, which a peer settled: moves the outcome into the case's result.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn settle(&self);
    /// The select will not return this case's result (it is being dropped after the case won):
    /// a received value goes back to the channel (the waker of a receiver it went to, to `wake`).
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn abandon(&self, wake: &mut Option<Waker>);
    /// Whether the case fired for good and cannot fire again (a send whose value is gone).
    ///
    /// # Safety
    /// No select is using the case.
    unsafe fn spent(&self) -> bool {
        false
    }
}

/// Locks the channel of a case, if it has one (a nil case has nothing to lock).
fn lock_opt<T>(chan: Option<&Chan<T>>) {
    if let Some(c) = chan {
        c.raw_lock();
    }
}

/// Unlocks what [`lock_opt`] locked.
///
/// # Safety
/// The caller holds the lock of `chan` (if any).
unsafe fn unlock_opt<T>(chan: Option<&Chan<T>>) {
    if let Some(c) = chan {
        // SAFETY: caller contract.
        unsafe { c.raw_unlock() }
    }
}

mod sealed {
    /// Only this crate's cases are cases: the select algorithm trusts `key` to be stable.
    pub trait Sealed {}
    impl<T> Sealed for super::RecvCase<'_, T> {}
    impl<T> Sealed for super::SendCase<'_, T> {}
}

/// A receive case: `recv(rx) -> v`.
#[doc(hidden)]
pub struct RecvCase<'a, T> {
    chan: Option<&'a Chan<T>>,
    sudog: Sudog<T>,
    armed: AtomicBool,
    result: UnsafeCell<Option<Option<T>>>,
    /// `result` holds a value a sender handed to the sudog, which counts as in flight on the
    /// channel until it is taken or given back (see `Chan::returned`).
    counted: AtomicBool,
}

impl<'a, T> RecvCase<'a, T> {
    /// A case on `rx`, or a nil-channel case for `None`.
    #[inline]
    pub fn new(rx: Option<&'a Receiver<T>>) -> RecvCase<'a, T> {
        RecvCase {
            chan: rx.map(Receiver::chan),
            sudog: Sudog::new(),
            armed: AtomicBool::new(false),
            result: UnsafeCell::new(None),
            counted: AtomicBool::new(false),
        }
    }

    /// The outcome, once the select chose this case: `Some(v)` or `None` (closed).
    pub fn take(self: Pin<&mut Self>) -> Option<T> {
        // SAFETY: `&mut` access: no select is using the case any more.
        let v =
            self.result.with_mut(|r| unsafe { (*r).take() }).expect("goro: select case taken twice or before it fired");
        if self.counted.swap(false, Relaxed) {
            if let Some(c) = self.chan {
                c.claim();
            }
        }
        v
    }

    fn set_result(&self, v: Option<T>) {
        // SAFETY: the select owning the case is the only user of the slot.
        self.result.with_mut(|r| unsafe { *r = Some(v) });
    }
}

// SAFETY: see the `Case` docs: interior state is only touched under the channel lock or
// through `&mut`; the element moves between threads, hence `T: Send`.
unsafe impl<T: Send> Sync for RecvCase<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for RecvCase<'_, T> {}

impl<T: Send> Case for RecvCase<'_, T> {
    fn is_send(&self) -> bool {
        false
    }
    fn key(&self) -> Option<usize> {
        self.chan.map(Chan::addr)
    }
    fn bubble(&self) -> Option<u64> {
        self.chan.map(|c| c.bubble)
    }

    fn try_alone(&self, wake: &mut Option<Waker>) -> bool {
        let Some(c) = self.chan else { return false };
        c.check_bubble();
        c.raw_lock();
        // SAFETY: we hold the lock, and this is the only live `&mut Inner` of the channel.
        let fast = unsafe { c.inner_locked() }.try_recv_fast();
        let done = match fast {
            Some(v) => {
                self.set_result(Some(v));
                true
            }
            // SAFETY: we hold the lock.
            None => unsafe { self.try_complete(wake) },
        };
        // SAFETY: locked above.
        unsafe { c.raw_unlock() };
        done
    }

    fn lock(&self) {
        lock_opt(self.chan);
    }

    unsafe fn unlock(&self) {
        // SAFETY: caller contract.
        unsafe { unlock_opt(self.chan) }
    }

    unsafe fn try_complete(&self, wake: &mut Option<Waker>) -> bool {
        let Some(c) = self.chan else { return false };
        // SAFETY: caller holds the lock; this is the only live `&mut Inner` of the channel.
        match unsafe { c.inner_locked() }.try_recv(&c.returned) {
            Ok((v, w)) => {
                *wake = w;
                self.set_result(Some(v));
                true
            }
            Err(TryRecvError::Closed) => {
                self.set_result(None);
                true
            }
            Err(TryRecvError::Empty) => false,
        }
    }

    unsafe fn arm(&self, sel: *const SelectShared, idx: usize) {
        let Some(c) = self.chan else { return };
        // SAFETY: caller holds the lock and the case is pinned; `Drop` unlinks it.
        unsafe {
            self.sudog.reset();
            self.sudog.set_select(sel, idx);
            c.inner_locked().park_recv(&self.sudog);
        }
        self.armed.store(true, Relaxed);
    }

    unsafe fn disarm(&self) {
        let Some(c) = self.chan else { return };
        if self.armed.swap(false, Relaxed) {
            // SAFETY: caller holds the lock; the sudog is on this channel's recvq or unlinked.
            unsafe { c.inner_locked().recvq.remove(&self.sudog) };
        }
    }

    unsafe fn settle(&self) {
        // The peer settled the sudog under the lock we hold now.
        let v = match self.sudog.state.load(Acquire) {
            DONE => {
                // Handed by a peer: in flight until `take` or a give-back (`Chan::returned`).
                self.counted.store(true, Relaxed);
                // SAFETY: settled: the slot is ours.
                Some(unsafe { self.sudog.take_elem() }.expect("a completed receive holds its value"))
            }
            CLOSED => None,
            s => unreachable!("goro: select winner's sudog is in state {s}"),
        };
        self.set_result(v);
    }

    unsafe fn abandon(&self, wake: &mut Option<Waker>) {
        // SAFETY: the select is done with the slot.
        let v = self.result.with_mut(|r| unsafe { (*r).take() }).flatten();
        if let (Some(v), Some(c)) = (v, self.chan) {
            // SAFETY: caller holds the lock.
            *wake = unsafe { c.inner_locked() }.give_back(v, self.counted.swap(false, Relaxed));
        }
    }
}

impl<T> Drop for RecvCase<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // The common case: the select returned this case's value or never touched the case.
        // SAFETY: the select has finished with the slot (the case is being dropped).
        if self.chan.is_none() || (!self.armed.load(Relaxed) && self.result.with(|r| unsafe { (*r).is_none() })) {
            return;
        }
        self.drop_slow();
    }
}

impl<T> RecvCase<'_, T> {
    /// The rest of `drop`: the case is still queued, or holds a value nobody took.
    #[cold]
    fn drop_slow(&mut self) {
        let Some(c) = self.chan else { return };
        let queued = self.armed.load(Relaxed);
        // SAFETY: the select has finished with the slot (the case is being dropped).
        let unreturned = self.result.with_mut(|r| unsafe { (*r).take() }).flatten();
        if !queued && unreturned.is_none() {
            return;
        }
        let mut wake = Vec::new();
        c.raw_lock();
        // SAFETY: we hold the lock; the case is pinned until this drop returns.
        unsafe {
            if queued {
                self.armed.store(false, Relaxed);
                c.inner_locked().recvq.remove(&self.sudog);
                if self.sudog.state.load(Acquire) == DONE {
                    // Won by a peer but never observed (the select future was leaked).
                    if let Some(v) = self.sudog.take_elem() {
                        wake.extend(c.inner_locked().give_back(v, true));
                    }
                }
            }
            if let Some(v) = unreturned {
                wake.extend(c.inner_locked().give_back(v, self.counted.swap(false, Relaxed)));
            }
            c.raw_unlock();
        }
        crate::chan::wake_all(wake);
    }
}

/// A send case: `send(tx, v) -> res`.
#[doc(hidden)]
pub struct SendCase<'a, T> {
    chan: Option<&'a Chan<T>>,
    value: UnsafeCell<Option<T>>,
    sudog: Sudog<T>,
    armed: AtomicBool,
    result: UnsafeCell<Option<Result<(), SendError<T>>>>,
}

impl<'a, T> SendCase<'a, T> {
    /// A case sending `value` on `tx`, or a nil-channel case for `None`.
    #[inline]
    pub fn new(tx: Option<&'a Sender<T>>, value: T) -> SendCase<'a, T> {
        SendCase {
            chan: tx.map(Sender::chan),
            value: UnsafeCell::new(Some(value)),
            sudog: Sudog::new(),
            armed: AtomicBool::new(false),
            result: UnsafeCell::new(None),
        }
    }

    /// The outcome, once the select chose this case.
    pub fn take(self: Pin<&mut Self>) -> Result<(), SendError<T>> {
        // SAFETY: `&mut` access: no select is using the case any more.
        self.result.with_mut(|r| unsafe { (*r).take() }).expect("goro: select case taken twice or before it fired")
    }

    fn set_result(&self, v: Result<(), SendError<T>>) {
        // SAFETY: the select owning the case is the only user of the slot.
        self.result.with_mut(|r| unsafe { *r = Some(v) });
    }

    fn take_value(&self) -> Option<T> {
        // SAFETY: only the owning select touches `value`.
        self.value.with_mut(|v| unsafe { (*v).take() })
    }

    fn put_value(&self, v: T) {
        // SAFETY: as above.
        self.value.with_mut(|slot| unsafe { *slot = Some(v) });
    }
}

// SAFETY: as for RecvCase.
unsafe impl<T: Send> Sync for SendCase<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for SendCase<'_, T> {}

impl<T: Send> Case for SendCase<'_, T> {
    fn is_send(&self) -> bool {
        true
    }
    fn key(&self) -> Option<usize> {
        self.chan.map(Chan::addr)
    }
    fn bubble(&self) -> Option<u64> {
        self.chan.map(|c| c.bubble)
    }

    fn try_alone(&self, wake: &mut Option<Waker>) -> bool {
        let Some(c) = self.chan else { return false };
        c.check_bubble();
        c.raw_lock();
        let v = self.take_value().expect("goro: send case without its value");
        // SAFETY: we hold the lock, and this is the only live `&mut Inner` of the channel.
        let done = match unsafe { c.inner_locked() }.try_send_fast(v) {
            Ok(()) => {
                self.set_result(Ok(()));
                true
            }
            Err(v) => {
                self.put_value(v);
                // SAFETY: we hold the lock.
                unsafe { self.try_complete(wake) }
            }
        };
        // SAFETY: locked above.
        unsafe { c.raw_unlock() };
        done
    }

    fn lock(&self) {
        lock_opt(self.chan);
    }

    unsafe fn unlock(&self) {
        // SAFETY: caller contract.
        unsafe { unlock_opt(self.chan) }
    }

    unsafe fn try_complete(&self, wake: &mut Option<Waker>) -> bool {
        let Some(c) = self.chan else { return false };
        let v = self.take_value().expect("goro: send case without its value");
        // SAFETY: caller holds the lock.
        match unsafe { c.inner_locked() }.try_send(v) {
            Ok(w) => {
                *wake = w;
                self.set_result(Ok(()));
                true
            }
            Err(TrySendError::Closed(v)) => {
                // Go panics here; goro makes the case ready with the value back.
                self.set_result(Err(SendError(v)));
                true
            }
            Err(TrySendError::Full(v)) => {
                self.put_value(v);
                false
            }
        }
    }

    unsafe fn arm(&self, sel: *const SelectShared, idx: usize) {
        let Some(c) = self.chan else { return };
        let v = self.take_value().expect("goro: send case without its value");
        // SAFETY: caller holds the lock and the case is pinned; `Drop` unlinks it.
        unsafe {
            self.sudog.reset();
            self.sudog.put_elem(v);
            self.sudog.set_select(sel, idx);
            c.inner_locked().park_send(&self.sudog);
        }
        self.armed.store(true, Relaxed);
    }

    unsafe fn disarm(&self) {
        let Some(c) = self.chan else { return };
        if self.armed.swap(false, Relaxed) {
            // SAFETY: caller holds the lock; the sudog is on this channel's sendq or unlinked.
            unsafe { c.inner_locked().sendq.remove(&self.sudog) };
            if self.sudog.state.load(Acquire) == WAITING {
                // Lost: the value was not sent; the case keeps it (and drops it with itself).
                // SAFETY: unlinked and unsettled: the slot is ours.
                if let Some(v) = unsafe { self.sudog.take_elem() } {
                    self.put_value(v);
                }
            }
        }
    }

    unsafe fn settle(&self) {
        let r = match self.sudog.state.load(Acquire) {
            DONE => Ok(()),
            // SAFETY: settled: the slot (still holding our value) is ours.
            CLOSED => Err(SendError(unsafe { self.sudog.take_elem() }.expect("a refused send keeps its value"))),
            s => unreachable!("goro: select winner's sudog is in state {s}"),
        };
        self.set_result(r);
    }

    unsafe fn abandon(&self, _wake: &mut Option<Waker>) {
        // A send that happened stays sent; a refused value is dropped with the case.
    }

    unsafe fn spent(&self) -> bool {
        // SAFETY: caller contract: nobody else touches the slot.
        self.value.with(|v| unsafe { (*v).is_none() })
    }
}

impl<T> Drop for SendCase<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let Some(c) = self.chan else { return };
        if !self.armed.load(Relaxed) {
            return;
        }
        c.raw_lock();
        // SAFETY: we hold the lock; the case is pinned until this drop returns.
        unsafe {
            c.inner_locked().sendq.remove(&self.sudog);
            c.raw_unlock();
        }
    }
}
