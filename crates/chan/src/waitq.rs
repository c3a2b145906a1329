//! sudogs and the wait queues of a channel (Go's `sudog`, `waitq`).
//!
//! A sudog is the record of one waiting operation: who to wake, the element slot (the value a
//! blocked sender offers, or the value handed to a blocked receiver), and the outcome. Go
//! allocates and pools sudogs because a goroutine's stack can move; a pinned Rust future cannot
//! move, so here a sudog lives *inside* the pinned `send`/`recv`/`select` future (or on the stack
//! of a thread blocked in a `*_blocking` call) and the channel's queues link to it in place.
//! A blocking operation therefore allocates nothing.
//!
//! # Protocol
//!
//! All links, the `queued` flag, the element slot and the waker of a *queued* sudog are
//! guarded by its channel's lock. A peer that completes a waiter does, under that lock:
//! unlink it, (for a select: win the select's CAS), move the element, take the waker, and last
//! store the outcome in `state` with `Release`. From then on the peer never touches the sudog
//! (it wakes the waker it took after unlocking). The owner may read `state` without the lock:
//! seeing `DONE`/`CLOSED` with `Acquire` makes the element slot its own again, and it may free
//! the sudog at once. Seeing `WAITING`, it must take the lock before touching anything.
//!
//! A sudog that belongs to a `select` carries a pointer to the select's shared state instead of
//! a waker. The select future outlives every peer access to that state because it locks each
//! of its channels before it completes or is dropped (and peers only touch it under one of those
//! locks).

use crate::loom::{AtomicU8, AtomicUsize, Ordering::*, RawLock, UnsafeCell};
use std::marker::PhantomPinned;
use std::ptr;
use std::task::Waker;

/// The operation has not completed.
pub(crate) const WAITING: u8 = 0;
/// A peer completed it: a receiver's slot holds the value, a sender's value was taken.
pub(crate) const DONE: u8 = 1;
/// The channel was closed (or, for a sender, every receiver went away): a receiver gets
/// `None`, a sender's value is still in its slot, to be returned.
pub(crate) const CLOSED: u8 = 2;

/// Who to wake when a sudog completes.
pub(crate) enum Waiter {
    None,
    Waker(Waker),
    /// Case `case` of the select whose state is at `sel`.
    Select {
        sel: *const SelectShared,
        case: usize,
    },
}

pub(crate) struct Sudog<T> {
    prev: UnsafeCell<*const Sudog<T>>,
    next: UnsafeCell<*const Sudog<T>>,
    queued: UnsafeCell<bool>,
    pub(crate) elem: UnsafeCell<Option<T>>,
    pub(crate) waiter: UnsafeCell<Waiter>,
    pub(crate) state: AtomicU8,
    /// When its owner started to wait, for the block profile (`goro_runtime::profile`), or 0.
    /// The owner's alone: written before the sudog is queued, read after it is settled.
    pub(crate) t0: u64,
    _pin: PhantomPinned,
}

// SAFETY: a sudog is shared between its owner and the peers of its channel only under the
// protocol above (the lock, or the Release/Acquire hand-over of `state`); the element moves
// between threads, hence `T: Send`.
unsafe impl<T: Send> Send for Sudog<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Sudog<T> {}

impl<T> Sudog<T> {
    #[inline]
    pub(crate) fn new() -> Sudog<T> {
        Sudog {
            prev: UnsafeCell::new(ptr::null()),
            next: UnsafeCell::new(ptr::null()),
            queued: UnsafeCell::new(false),
            elem: UnsafeCell::new(None),
            waiter: UnsafeCell::new(Waiter::None),
            state: AtomicU8::new(WAITING),
            t0: 0,
            _pin: PhantomPinned,
        }
    }

    /// A sudog whose owner starts to wait now ([`t0`](Self::t0) from the block profile's
    /// clock, if the profile is on).
    #[inline]
    pub(crate) fn waiting() -> Sudog<T> {
        Sudog { t0: goro_runtime::__private::profile::wait_start(), ..Sudog::new() }
    }

    /// Takes the element.
    ///
    /// # Safety
    /// The caller holds the channel lock, or saw `state != WAITING` (the slot is its own).
    pub(crate) unsafe fn take_elem(&self) -> Option<T> {
        // SAFETY: caller contract.
        self.elem.with_mut(|e| unsafe { (*e).take() })
    }

    /// Puts an element in the slot.
    ///
    /// # Safety
    /// As for [`take_elem`](Self::take_elem).
    pub(crate) unsafe fn put_elem(&self, v: T) {
        // SAFETY: caller contract.
        self.elem.with_mut(|e| unsafe { *e = Some(v) });
    }

    /// Whether it is linked into a queue.
    ///
    /// # Safety
    /// The caller holds the channel lock.
    pub(crate) unsafe fn is_queued(&self) -> bool {
        // SAFETY: caller contract.
        self.queued.with(|q| unsafe { *q })
    }

    /// Replaces the waker unless the current one would wake the same task.
    ///
    /// # Safety
    /// The caller holds the channel lock and the sudog is queued (or not yet shared).
    pub(crate) unsafe fn set_waker(&self, w: &Waker) {
        // SAFETY: caller contract.
        self.waiter.with_mut(|slot| unsafe {
            match &*slot {
                Waiter::Waker(old) if old.will_wake(w) => {}
                _ => *slot = Waiter::Waker(w.clone()),
            }
        });
    }

    /// Marks it as a case of a select.
    ///
    /// # Safety
    /// As for [`set_waker`](Self::set_waker).
    pub(crate) unsafe fn set_select(&self, sel: *const SelectShared, case: usize) {
        // SAFETY: caller contract.
        self.waiter.with_mut(|slot| unsafe { *slot = Waiter::Select { sel, case } });
    }

    /// Resets a sudog whose owner will wait again (a select re-arming, `Stream`'s reused
    /// sudog).
    ///
    /// # Safety
    /// The sudog is not queued and the caller owns it.
    pub(crate) unsafe fn reset(&self) {
        self.state.store(WAITING, Relaxed);
    }
}

/// The part of a select that its sudogs point to: who won, and the waker of the select.
#[doc(hidden)]
pub struct SelectShared {
    /// `NONE`, or the index of the case that fired.
    winner: AtomicUsize,
    lock: RawLock,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `winner` is atomic; `waker` is only touched under `lock`.
unsafe impl Send for SelectShared {}
// SAFETY: as above.
unsafe impl Sync for SelectShared {}

impl SelectShared {
    pub(crate) const NONE: usize = usize::MAX;

    #[inline]
    pub(crate) fn new() -> SelectShared {
        SelectShared { winner: AtomicUsize::new(Self::NONE), lock: RawLock::new(), waker: UnsafeCell::new(None) }
    }

    /// The case that fired, if one did.
    pub(crate) fn winner(&self) -> Option<usize> {
        let w = self.winner.load(Acquire);
        (w != Self::NONE).then_some(w)
    }

    /// A peer claims the select for `case`; `false` if another case already won.
    pub(crate) fn try_win(&self, case: usize) -> bool {
        self.winner.compare_exchange(Self::NONE, case, AcqRel, Acquire).is_ok()
    }

    /// Resets for a new round (the select is not armed on any channel).
    pub(crate) fn reset(&self) {
        self.winner.store(Self::NONE, Relaxed);
    }

    pub(crate) fn set_waker(&self, w: &Waker) {
        self.lock.lock();
        // SAFETY: under `lock`.
        self.waker.with_mut(|slot| unsafe {
            match &*slot {
                Some(old) if old.will_wake(w) => {}
                _ => *slot = Some(w.clone()),
            }
        });
        // SAFETY: we hold it.
        unsafe { self.lock.unlock() };
    }

    pub(crate) fn take_waker(&self) -> Option<Waker> {
        self.lock.lock();
        // SAFETY: under `lock`.
        let w = self.waker.with_mut(|slot| unsafe { (*slot).take() });
        // SAFETY: we hold it.
        unsafe { self.lock.unlock() };
        w
    }
}

/// A FIFO of sudogs (Go's `waitq`), linked through the sudogs themselves.
pub(crate) struct WaitQueue<T> {
    head: *const Sudog<T>,
    tail: *const Sudog<T>,
}

impl<T> WaitQueue<T> {
    pub(crate) const fn new() -> WaitQueue<T> {
        WaitQueue { head: ptr::null(), tail: ptr::null() }
    }

    /// Whether no sudog is queued (the caller holds the channel lock). The operations' fast
    /// paths test this before anything else: an empty queue is the common case.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Appends `sg`.
    ///
    /// # Safety
    /// The caller holds the channel lock; `sg` is pinned, not queued, and stays valid until it
    /// is unlinked (its owner unlinks it before it is freed).
    pub(crate) unsafe fn push_back(&mut self, sg: &Sudog<T>) {
        let p = sg as *const Sudog<T>;
        // SAFETY: caller contract; `tail` (if any) is a live queued sudog.
        unsafe {
            debug_assert!(!sg.is_queued());
            sg.prev.with_mut(|x| *x = self.tail);
            sg.next.with_mut(|x| *x = ptr::null());
            sg.queued.with_mut(|q| *q = true);
            match self.tail.as_ref() {
                Some(t) => t.next.with_mut(|x| *x = p),
                None => self.head = p,
            }
        }
        self.tail = p;
    }

    /// Unlinks `sg` if it is queued here; returns whether it was.
    ///
    /// # Safety
    /// The caller holds the channel lock, and `sg` is either queued in *this* queue or not
    /// queued at all.
    #[inline]
    pub(crate) unsafe fn remove(&mut self, sg: &Sudog<T>) -> bool {
        // SAFETY: caller contract; neighbours of a queued sudog are live queued sudogs.
        unsafe {
            if !sg.is_queued() {
                return false;
            }
            let prev = sg.prev.with(|x| *x);
            let next = sg.next.with(|x| *x);
            match prev.as_ref() {
                Some(p) => p.next.with_mut(|x| *x = next),
                None => self.head = next,
            }
            match next.as_ref() {
                Some(n) => n.prev.with_mut(|x| *x = prev),
                None => self.tail = prev,
            }
            sg.prev.with_mut(|x| *x = ptr::null());
            sg.next.with_mut(|x| *x = ptr::null());
            sg.queued.with_mut(|q| *q = false);
        }
        true
    }

    /// Go's `dequeue`: the first waiter that can still be completed, with the waker to call.
    /// Select sudogs whose select already fired elsewhere are unlinked and skipped.
    ///
    /// The caller must then settle the returned sudog (element, then `state`) before it
    /// releases the lock.
    ///
    /// # Safety
    /// The caller holds the channel lock.
    #[inline]
    pub(crate) unsafe fn dequeue<'a>(&mut self) -> Option<(&'a Sudog<T>, Option<Waker>)> {
        loop {
            // SAFETY: a queued sudog is valid while linked (owners unlink before freeing).
            let sg: &'a Sudog<T> = unsafe { self.head.as_ref()? };
            // SAFETY: caller holds the lock; `sg` is queued here.
            unsafe { self.remove(sg) };
            // SAFETY: under the lock, the waiter of a queued sudog is ours to read/take.
            let waker = sg.waiter.with_mut(|w| unsafe {
                match &mut *w {
                    Waiter::Waker(_) => match std::mem::replace(&mut *w, Waiter::None) {
                        Waiter::Waker(k) => Some(Some(k)),
                        _ => unreachable!(),
                    },
                    Waiter::Select { sel, case } => {
                        // The select stays alive while we hold one of its channels' locks.
                        let sel = &**sel;
                        if sel.try_win(*case) {
                            Some(sel.take_waker())
                        } else {
                            None
                        }
                    }
                    Waiter::None => Some(None),
                }
            });
            if let Some(waker) = waker {
                return Some((sg, waker));
            }
        }
    }

    /// Unlinks every waiter that can still be completed (for `close`), handing each to `f`.
    ///
    /// # Safety
    /// As for [`dequeue`](Self::dequeue).
    pub(crate) unsafe fn drain(&mut self, mut f: impl FnMut(&Sudog<T>, Option<Waker>)) {
        // SAFETY: caller contract.
        while let Some((sg, w)) = unsafe { self.dequeue() } {
            f(sg, w);
        }
    }
}
