//! The lock itself, without the data: Go's `sync.Mutex` algorithm (`src/sync/mutex.go`, Go
//! 1.9 to 1.23) on one atomic word, with goro's [`WaitList`] in the role of the runtime
//! semaphore that Go's waiters sleep on, and cancellation, which Go does not have.
//!
//! # The state word
//!
//! ```text
//!   bit 0  LOCKED     somebody holds the lock
//!   bit 1  WOKEN      a waiter was woken (or a spinning locker announced itself) and is about
//!                     to compete for the lock: an unlock need not wake anyone else
//!   bit 2  STARVING   starvation mode: the lock goes straight to the front waiter
//!   3..    waiters    the number of nodes queued on the wait list
//! ```
//!
//! # Normal mode
//!
//! An unlock clears `LOCKED` (one `fetch_sub`); if there are waiters and nobody is `WOKEN`, it
//! pops the front waiter, counts it out of `waiters`, sets `WOKEN` and wakes it. The woken
//! waiter does not own the lock: it competes with lockers that arrive meanwhile (barging), who
//! are already running and usually win. A locker that finds the lock held may first spin a
//! little (at most [`ACTIVE_SPIN`] rounds of about 1 µs, and only where spinning can help: Go's
//! `runtime_canSpin`; the `spin` module says when and how long), setting `WOKEN` if it can so
//! that the unlock it hopes for does not also wake a waiter. A woken waiter that loses queues again
//! at the *front* (Go's `queueLifo`).
//!
//! # Starvation mode
//!
//! A woken waiter that has waited more than [`STARVATION_THRESHOLD`] (1 ms) since it first
//! queued, and loses again, sets `STARVING` as it requeues. From then on an unlock hands the
//! lock to the front waiter directly (Go's `handoff`): under the list lock it pops the waiter,
//! sets `LOCKED` again on its behalf and counts it out of `waiters`; between the `fetch_sub`
//! that cleared `LOCKED` and that moment, `STARVING` alone keeps everybody else out. Arrivals
//! neither barge nor spin while `STARVING` is set; they queue at the back. The mode ends when the
//! lock is handed to the last waiter (the unlock clears `STARVING`) or to one that waited less
//! than the threshold (it clears `STARVING` itself), as in Go.
//!
//! # Invariants
//!
//! 1. `waiters` changes only under the list's lock, together with the list itself: whenever the
//!    lock is free, `waiters` is the length of the list. (Go counts a waiter in before it
//!    reaches the semaphore, and the semaphore's own count covers the gap; here the two steps
//!    are one, so a dropped waiter can take itself out of both at once.)
//! 2. `WOKEN` has one owner, who clears it: the woken waiter (when it next competes, or when it
//!    is dropped; then it wakes the next waiter if the lock is free, so no wake-up is lost), or
//!    the spinning locker that set it (before its poll returns). It is only set when clear.
//! 3. `STARVING` is set only by the owner of `WOKEN`, in the same CAS that clears `WOKEN`, and
//!    nobody sets `WOKEN` while `STARVING` is set: the two are never set together.
//! 4. `STARVING` implies `LOCKED`, except between an unlock's `fetch_sub` and its hand-off; and,
//!    outside those windows, at least one waiter: the last waiter leaving (being handed the lock
//!    or dropped) clears it.
//! 5. A waiter's node is completed with [`WOKEN_UP`] only by a normal-mode wake-up that set
//!    `WOKEN` for it, and with [`HANDED_OFF`] only by a hand-off that set `LOCKED` for it.
//!
//! # Memory ordering
//!
//! Every RMW that takes `LOCKED` for its caller is `Acquire`, the unlock's `fetch_sub` is
//! `Release`, and every other change of the word is an RMW too, so the holder's writes are
//! visible to the next holder through the release sequence. A hand-off sets `LOCKED` for the
//! recipient, which does not touch the word: there the unlocker's writes reach it through the
//! wait list (its lock, then the `Release` store of the node's outcome that the recipient reads
//! with `Acquire`).
//!
//! # Cancellation
//!
//! A dropped [`LockOp`] that is still queued leaves the list and `waiters` in one step (clearing
//! `STARVING` if it was the last waiter behind a held lock). One that was woken but not polled
//! again clears `WOKEN` and passes the wake-up on (invariant 2). One that was handed the lock
//! unlocks it again, which hands it on in turn.

use super::spin::Spin;
#[cfg(doc)]
use super::spin::ACTIVE_SPIN;
use crate::loom::{AtomicUsize, Ordering::*};
use crate::waitlist::{Locked, Node, WaitList, WAITING};
use goro_runtime::WaitReason;
use std::task::{Context, Poll};
#[cfg(not(loom))]
use std::time::{Duration, Instant};

/// Somebody holds the lock.
pub(super) const LOCKED: usize = 1;
/// A woken waiter or a spinning locker is about to compete: unlock wakes nobody.
pub(super) const WOKEN: usize = 2;
/// Starvation mode: unlock hands the lock to the front waiter.
pub(super) const STARVING: usize = 4;
/// `waiters` starts at this bit.
pub(super) const WAITER_SHIFT: u32 = 3;
/// One waiter in the state word.
pub(super) const WAITER: usize = 1 << WAITER_SHIFT;

/// A waiter that has waited longer than this since it first queued switches to starvation mode
/// (Go's `starvationThresholdNs`).
#[cfg(not(loom))]
pub(super) const STARVATION_THRESHOLD: Duration = Duration::from_millis(1);

/// A node's outcome: woken in normal mode, with `WOKEN` set on its behalf; it must compete.
const WOKEN_UP: u8 = 1;
/// A node's outcome: the lock was handed to it in starvation mode (`LOCKED` is set for it).
const HANDED_OFF: u8 = 2;

/// The lock word and the wait list.
pub(crate) struct RawMutex {
    state: AtomicUsize,
    waiters: WaitList,
    /// Under loom there is no clock: this says whether a woken waiter counts as having waited
    /// longer than the threshold, so that models can reach starvation mode (or stay out of it).
    #[cfg(loom)]
    force_starving: bool,
    /// The unit tests' stand-in for [`STARVATION_THRESHOLD`] (zero or "never", so that they do
    /// not depend on how fast the machine is).
    #[cfg(all(test, not(loom)))]
    pub(super) threshold_ns: crate::loom::AtomicU64,
}

impl RawMutex {
    pub(crate) fn new() -> RawMutex {
        RawMutex {
            state: AtomicUsize::new(0),
            waiters: WaitList::new(()),
            #[cfg(loom)]
            force_starving: false,
            #[cfg(all(test, not(loom)))]
            threshold_ns: crate::loom::AtomicU64::new(STARVATION_THRESHOLD.as_nanos() as u64),
        }
    }

    /// A mutex on which every woken waiter counts as having waited longer than the starvation
    /// threshold (the loom models' stand-in for the clock).
    #[cfg(all(test, loom))]
    pub(crate) fn new_starving() -> RawMutex {
        RawMutex { force_starving: true, ..RawMutex::new() }
    }

    /// The state word (for the tests).
    #[cfg(test)]
    pub(crate) fn state(&self) -> usize {
        self.state.load(Relaxed)
    }

    /// Go's `TryLock`: takes the lock if it is free and not being handed off; never waits. A
    /// queued waiter does not stop it (Go's comment: "there may be a goroutine waiting for the
    /// mutex, but we are running now and can try to grab the mutex before that goroutine wakes
    /// up").
    #[inline]
    pub(crate) fn try_lock(&self) -> bool {
        let mut old = self.state.load(Relaxed);
        loop {
            if old & (LOCKED | STARVING) != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(old, old | LOCKED, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(actual) => old = actual,
            }
        }
    }

    /// Go's `Lock` fast path: takes an unlocked mutex (no waiters, nobody woken, normal mode)
    /// with one CAS. When it fails, the state the CAS saw is where [`spin_or_take`] starts.
    ///
    /// [`spin_or_take`]: RawMutex::spin_or_take
    #[inline]
    pub(crate) fn lock_fast(&self) -> Result<(), usize> {
        self.state.compare_exchange(0, LOCKED, Acquire, Relaxed).map(drop)
    }

    /// The state word, for a lock operation that starts without one from [`lock_fast`].
    ///
    /// [`lock_fast`]: RawMutex::lock_fast
    #[inline]
    pub(crate) fn load(&self) -> usize {
        self.state.load(Relaxed)
    }

    /// The part of Go's `lockSlow` loop that needs no wait-list node, starting from `old`, a
    /// recent read of the state word: while the lock is held in normal mode and spinning can
    /// help, spin (at most [`ACTIVE_SPIN`] rounds, counted in `spin`, until the next wake-up: a
    /// woken waiter may spin again, as in Go), setting `WOKEN` if nobody is so that the unlock
    /// wakes nobody; whenever the lock is free and not being handed off, compete for it. `true`:
    /// the lock is ours (and a `WOKEN` we owned is cleared). `false`: it is held (or being
    /// handed off) and spinning is over: the caller queues, owning `WOKEN` if `spin.awoke`.
    ///
    /// A `Lock` runs this before it builds its node, so a lock that a short spin wins (the
    /// usual case under contention) never builds or drops one. It starts from the state that
    /// the failed fast path saw rather than reading the word again: under contention the word
    /// is usually free with waiters queued (W10: the fast path fails on 85% of its locks, and
    /// the lock is free for all but 2% of those), and every instruction between the two RMWs is
    /// time for the other core to take the line away (W10 against `parking_lot`,
    /// `benches/examples/w10_probe.rs` in a build where this was a switch, medians of 5 runs of
    /// 30 pairs: 0.97× with the second read, 0.90× without).
    #[inline]
    pub(crate) fn spin_or_take(&self, spin: &mut Spin, mut old: usize) -> bool {
        loop {
            debug_assert!(!spin.awoke || old & WOKEN != 0, "sync: inconsistent mutex state {old:#x}");
            // Held in normal mode: spinning makes sense if the holder may be running elsewhere.
            if old & (LOCKED | STARVING) == LOCKED && spin.may_spin() {
                // Tell unlock not to wake a waiter: we are about to take the lock ourselves.
                if !spin.awoke
                    && old & WOKEN == 0
                    && old >> WAITER_SHIFT != 0
                    && self.state.compare_exchange_weak(old, old | WOKEN, Relaxed, Relaxed).is_ok()
                {
                    spin.awoke = true;
                }
                spin.round();
                old = self.state.load(Relaxed);
                continue;
            }
            // Free, and not being handed off: compete.
            if old & (LOCKED | STARVING) == 0 {
                let new = if spin.awoke { (old | LOCKED) & !WOKEN } else { old | LOCKED };
                match self.state.compare_exchange_weak(old, new, Acquire, Relaxed) {
                    Ok(_) => return true,
                    Err(actual) => {
                        old = actual;
                        continue;
                    }
                }
            }
            return false;
        }
    }

    /// Go's `Unlock`. The caller holds the lock.
    #[inline]
    pub(crate) fn unlock(&self) {
        let old = self.state.fetch_sub(LOCKED, Release);
        debug_assert!(old & LOCKED != 0, "sync: unlock of unlocked mutex");
        if old != LOCKED {
            self.unlock_slow(old - LOCKED);
        }
    }

    /// `new`: the state our `fetch_sub` left (`LOCKED` clear).
    #[inline(never)]
    fn unlock_slow(&self, new: usize) {
        if new & STARVING != 0 {
            self.hand_off();
        } else if new >> WAITER_SHIFT != 0 && new & (LOCKED | WOKEN) == 0 {
            self.wake_one(self.waiters.lock(), 0);
        }
        // Otherwise nobody waits, or somebody is already awake to take the lock, or a barging
        // locker has it and its unlock will do this.
    }

    /// Under the list lock: clears `clear` from the state and, if the lock is then free in
    /// normal mode with waiters and nobody `WOKEN`, wakes the front waiter with `WOKEN` set for
    /// it (Go's "grab the right to wake someone"). Unlocks the list before waking.
    fn wake_one(&self, mut list: Locked<'_, ()>, clear: usize) {
        let mut old = self.state.load(Relaxed);
        loop {
            let mut new = old & !clear;
            let wake = new >> WAITER_SHIFT != 0 && new & (LOCKED | WOKEN | STARVING) == 0;
            if wake {
                new = (new - WAITER) | WOKEN;
            }
            if new == old {
                return;
            }
            match self.state.compare_exchange_weak(old, new, AcqRel, Relaxed) {
                Ok(_) if wake => {
                    // Invariant 1: `waiters` was non-zero under the lock, so the list is not empty.
                    let t0 = list.front_wait_start();
                    let waker = list.pop_front(WOKEN_UP);
                    debug_assert!(waker.is_some(), "sync: mutex waiter count and queue disagree");
                    drop(list);
                    if let Some(w) = waker {
                        w.wake();
                    }
                    // Go's `semrelease`: the unlocker's stack is charged with the time the waiter
                    // it wakes has waited.
                    goro_runtime::__private::profile::mutex_event(t0);
                    return;
                }
                Ok(_) => return,
                Err(actual) => old = actual,
            }
        }
    }

    /// Starvation mode's unlock: `LOCKED` is clear but `STARVING` keeps everybody else out, so
    /// the lock is still ours to give. Gives it to the front waiter (setting `LOCKED` for it and
    /// leaving starvation mode if it is the last one), or, if every waiter left meanwhile,
    /// releases it and leaves starvation mode.
    fn hand_off(&self) {
        let mut list = self.waiters.lock();
        let mut old = self.state.load(Relaxed);
        let waiters = loop {
            debug_assert!(
                old & STARVING != 0 && old & (LOCKED | WOKEN) == 0,
                "sync: inconsistent mutex state {old:#x} at hand-off"
            );
            let waiters = old >> WAITER_SHIFT;
            let new = match waiters {
                0 => old & !STARVING,
                1 => (old - WAITER + LOCKED) & !STARVING,
                _ => old - WAITER + LOCKED,
            };
            // Nobody else changes the state now (invariants 1 to 4: no barging, spinning or
            // waking while STARVING, the waiters change under the lock we hold), but a CAS loop
            // costs nothing here and keeps this robust.
            match self.state.compare_exchange_weak(old, new, AcqRel, Relaxed) {
                Ok(_) => break waiters,
                Err(actual) => old = actual,
            }
        };
        if waiters == 0 {
            return;
        }
        #[cfg(loom)]
        stats::bump(&stats::HAND_OFFS);
        let t0 = list.front_wait_start();
        let waker = list.pop_front(HANDED_OFF);
        debug_assert!(waker.is_some(), "sync: mutex waiter count and queue disagree");
        drop(list);
        if let Some(w) = waker {
            w.wake();
        }
        goro_runtime::__private::profile::mutex_event(t0);
    }

    /// Under the list lock, after a queued node was removed from the list: counts it out of
    /// `waiters`, leaving starvation mode if it was the last waiter behind a held lock (if the
    /// lock is being handed off, the hand-off does that).
    fn left_queue(&self, list: Locked<'_, ()>) {
        let mut old = self.state.load(Relaxed);
        loop {
            debug_assert!(old >> WAITER_SHIFT != 0);
            let mut new = old - WAITER;
            if new >> WAITER_SHIFT == 0 && new & LOCKED != 0 {
                new &= !STARVING;
            }
            match self.state.compare_exchange_weak(old, new, AcqRel, Relaxed) {
                Ok(_) => break,
                Err(actual) => old = actual,
            }
        }
        drop(list);
    }

    #[cfg(not(loom))]
    fn waited_too_long(&self, since: Option<WaitStart>) -> bool {
        #[cfg(test)]
        let threshold = match self.threshold_ns.load(Relaxed) {
            0 => return since.is_some(), // "always", even on a coarse clock
            ns => Duration::from_nanos(ns),
        };
        #[cfg(not(test))]
        let threshold = STARVATION_THRESHOLD;
        since.is_some_and(|t| self.now().saturating_duration_since(t) > threshold)
    }

    /// The clock a waiter's wait is measured on: for a mutex made in a synctest bubble the
    /// bubble's, so that starvation mode (a waiter that waited 1 ms) is decided by its time and
    /// a seed replays it; else the real one, with no look at the runtime on this path.
    #[cfg(not(loom))]
    fn now(&self) -> WaitStart {
        if self.waiters.bubble() != 0 {
            goro_runtime::__private::time::now()
        } else {
            Instant::now()
        }
    }

    #[cfg(loom)]
    fn now(&self) -> WaitStart {}

    #[cfg(loom)]
    fn waited_too_long(&self, since: Option<WaitStart>) -> bool {
        since.is_some() && self.force_starving
    }
}

/// When a waiter first queued (Go's `waitStartTime`); under loom only *whether* it queued.
#[cfg(not(loom))]
type WaitStart = Instant;
#[cfg(loom)]
type WaitStart = ();

/// One lock operation: its wait-list node and what Go keeps in `Lock`'s locals. Lives inside the
/// pinned [`Lock`](super::Lock) future (or a blocked thread's stack, through it).
pub(crate) struct LockOp {
    node: Node,
    /// The node may be linked, or completed by a notifier and not yet looked at.
    queued: bool,
    /// Go's `starving`: this waiter has waited longer than the threshold at some wake-up.
    starving: bool,
    /// Go's `waitStartTime`; `Some` also means "queued before": requeue at the front.
    wait_start: Option<WaitStart>,
}

impl LockOp {
    pub(crate) fn new() -> LockOp {
        LockOp { node: Node::new(), queued: false, starving: false, wait_start: None }
    }

    /// The first poll of a new operation, after [`RawMutex::lock_fast`] and
    /// [`RawMutex::spin_or_take`] failed with `spin`: queue (or, if the lock was released
    /// meanwhile, compete again). `Ready` means the caller holds the lock.
    ///
    /// # Safety
    /// `self` is new and pinned (it does not move until it is dropped), and every call, and the
    /// final [`cancel`](Self::cancel), passes the same `m`.
    #[inline]
    pub(crate) unsafe fn poll_first(&mut self, m: &RawMutex, spin: Spin, cx: &mut Context<'_>) -> Poll<()> {
        debug_assert!(!self.queued && self.wait_start.is_none());
        // SAFETY: forwarded from our caller; the node was never queued.
        unsafe { self.lock_slow(m, spin, cx) }
    }

    /// Polls the operation again after [`poll_first`](Self::poll_first) returned `Pending`;
    /// `Ready` means the caller holds the lock.
    ///
    /// # Safety
    /// As for [`poll_first`](Self::poll_first) (not new any more).
    #[inline]
    pub(crate) unsafe fn poll(&mut self, m: &RawMutex, cx: &mut Context<'_>) -> Poll<()> {
        debug_assert!(self.queued, "sync: a mutex lock polled again while not queued");
        // SAFETY: forwarded from our caller.
        let polled = unsafe { self.poll_queued(m, cx) };
        if polled.is_ready() {
            // The node is ours again (completed, and not queued again since).
            self.node.waited();
        }
        polled
    }

    /// [`poll`](Self::poll) of a queued operation: see what the notifier left us.
    ///
    /// # Safety
    /// As for [`poll`](Self::poll).
    #[inline(never)]
    unsafe fn poll_queued(&mut self, m: &RawMutex, cx: &mut Context<'_>) -> Poll<()> {
        let awoke = {
            match self.outcome(m, cx) {
                WAITING => {
                    m.waiters.park_reason(WaitReason::SyncMutexLock);
                    return Poll::Pending;
                }
                HANDED_OFF => {
                    self.queued = false;
                    // Invariant 5: the unlock set LOCKED for us; the lock is ours. Leave
                    // starvation mode if we did not wait long (Go: "critical to do it here and
                    // consider wait time": two Gs could otherwise go lock-step forever).
                    self.starving = self.starving || m.waited_too_long(self.wait_start);
                    if !self.starving {
                        m.state.fetch_and(!STARVING, Relaxed);
                    }
                    return Poll::Ready(());
                }
                outcome => {
                    debug_assert_eq!(outcome, WOKEN_UP);
                    self.queued = false;
                    self.starving = self.starving || m.waited_too_long(self.wait_start);
                    true // We own WOKEN (invariants 2 and 5).
                }
            }
        };
        // SAFETY: forwarded from our caller; the node is not queued any more.
        unsafe { self.lock_slow(m, Spin::new(awoke), cx) }
    }

    /// A queued node's outcome, or [`WAITING`] (then with the waker of `cx` registered).
    fn outcome(&self, m: &RawMutex, cx: &mut Context<'_>) -> u8 {
        // The protocol of `waitlist`: a non-WAITING state read with Acquire means a notifier
        // completed and unlinked the node and will not touch it again.
        let s = self.node.state();
        if s != WAITING {
            return s;
        }
        let mut list = m.waiters.lock();
        let s = self.node.state();
        if s == WAITING {
            list.set_waker(&self.node, cx.waker());
        }
        s
    }

    /// Go's `lockSlow` loop, up to the point where it would sleep: spin, compete, or queue.
    /// `spin` is where [`RawMutex::spin_or_take`] starts (the first poll of a `Lock` ran it
    /// already: that one, with no node yet, passes it on).
    ///
    /// # Safety
    /// As for [`poll`](Self::poll); the node is not queued.
    #[inline(never)]
    unsafe fn lock_slow(&mut self, m: &RawMutex, mut spin: Spin, cx: &mut Context<'_>) -> Poll<()> {
        let mut old = m.load();
        loop {
            if m.spin_or_take(&mut spin, old) {
                return Poll::Ready(());
            }
            let awoke = spin.awoke;
            // Held or being handed off: queue, counting ourselves in under the list lock
            // (invariant 1).
            let mut list = m.waiters.lock();
            old = m.state.load(Relaxed);
            while old & (LOCKED | STARVING) != 0 {
                let mut new = old + WAITER;
                if self.starving && old & LOCKED != 0 {
                    // Invariant 3: only the owner of WOKEN (us: `starving` is only set once we
                    // were woken) switches to starvation mode.
                    debug_assert!(awoke);
                    new |= STARVING;
                }
                if awoke {
                    new &= !WOKEN;
                }
                match m.state.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                    Ok(_) => {
                        #[cfg(loom)]
                        if new & STARVING != 0 && old & STARVING == 0 {
                            stats::bump(&stats::STARVATION_ENTRIES);
                        }
                        // A waiter that waited before goes back to the front (Go's queueLifo).
                        let front = self.wait_start.is_some();
                        if !front {
                            // Under loom a wait's start is `()`: there is no clock.
                            #[cfg_attr(loom, allow(clippy::unit_arg))]
                            {
                                self.wait_start = Some(m.now());
                            }
                        }
                        // SAFETY: the node is not queued (`queued` is false: never queued, or
                        // completed and unlinked by a notifier). It is pinned inside the future
                        // that owns `self` (our caller's contract), whose drop calls `cancel`,
                        // which unlinks it under this lock while it is still linked: it stays at
                        // its address for as long as it is queued.
                        unsafe { list.push(&self.node, cx.waker().clone(), 0, front) };
                        self.queued = true;
                        drop(list);
                        m.waiters.park_reason(WaitReason::SyncMutexLock);
                        return Poll::Pending;
                    }
                    Err(actual) => old = actual,
                }
            }
            // Released meanwhile: compete again (we still own WOKEN if we did).
            drop(list);
        }
    }

    /// Undoes a lock that has not returned `Ready` (see the module docs); a no-op otherwise.
    ///
    /// # Safety
    /// As for [`poll`](Self::poll).
    #[inline]
    pub(crate) unsafe fn cancel(&mut self, m: &RawMutex) {
        if self.queued {
            // SAFETY: forwarded from our caller.
            unsafe { self.cancel_queued(m) }
        }
    }

    /// [`cancel`](Self::cancel) of a queued operation.
    ///
    /// # Safety
    /// As for [`poll`](Self::poll).
    #[inline(never)]
    unsafe fn cancel_queued(&mut self, m: &RawMutex) {
        self.queued = false;
        let outcome = match self.node.state() {
            WAITING => {
                let mut list = m.waiters.lock();
                if list.remove(&self.node) {
                    m.left_queue(list);
                    return;
                }
                // Completed between our look and the lock; the lock ordered the completion
                // before this read.
                let s = self.node.state();
                if s == WOKEN_UP {
                    #[cfg(loom)]
                    stats::bump(&stats::WOKEN_CANCELS);
                    return m.wake_one(list, WOKEN);
                }
                s
            }
            s => s,
        };
        match outcome {
            WOKEN_UP => {
                #[cfg(loom)]
                stats::bump(&stats::WOKEN_CANCELS);
                // We own WOKEN: give it up, and wake the next waiter if the lock is free.
                m.wake_one(m.waiters.lock(), WOKEN);
            }
            _ => {
                debug_assert_eq!(outcome, HANDED_OFF);
                #[cfg(loom)]
                stats::bump(&stats::HANDED_OFF_CANCELS);
                // The lock is ours and never reached the caller: unlock, handing it on.
                m.unlock();
            }
        }
    }
}

/// How often the models reached the paths they are meant to check (plain std counters outside
/// the model: loom runs one execution at a time, and the tests read them after `loom::model`).
#[cfg(loom)]
pub(crate) mod stats {
    pub(crate) use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::Relaxed;

    pub(crate) static HAND_OFFS: AtomicUsize = AtomicUsize::new(0);
    pub(crate) static STARVATION_ENTRIES: AtomicUsize = AtomicUsize::new(0);
    pub(crate) static WOKEN_CANCELS: AtomicUsize = AtomicUsize::new(0);
    pub(crate) static HANDED_OFF_CANCELS: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn bump(c: &AtomicUsize) {
        c.fetch_add(1, Relaxed);
    }

    #[cfg(test)]
    pub(crate) fn get(c: &AtomicUsize) -> usize {
        c.load(Relaxed)
    }
}
