//! [`WaitGroup`]: Go's `sync.WaitGroup`, waiting for a collection of Gs (or threads) to finish.
//!
//! # Layout
//!
//! Go's: one `AtomicU64` holds the counter in its high 32 bits (an `i32`) and the number of
//! waiters in its low 32 bits. `add` is one `fetch_add` on the high half, so `add`/`done` never
//! take a lock unless they bring the counter to zero while somebody waits. Waiters park on a
//! [`WaitList`] whose extra data (guarded by the list's lock) is a *generation* number; each
//! node carries the generation it was queued in.
//!
//! # Invariants
//!
//! 1. A waiter increments the waiter count only under the list's lock, with a CAS that succeeds
//!    only while the counter is not zero (if it is zero, the wait is over at once), and queues its
//!    node in the same lock section with the current generation.
//! 2. The waiter count is the number of queued nodes *of the current generation*. It changes only
//!    under the list's lock: +1 by a waiter (1.), -1 by a dropped waiter that removes its own
//!    current-generation node, and -w by a release (3.).
//! 3. Release: the `add` that brings the counter to zero while the count is `w != 0` takes the lock
//!    and re-reads the state. If the counter is still zero, no new waiter can queue (1.), so the
//!    `w` current-generation nodes are exactly the waiters that were waiting when the counter hit
//!    zero: it subtracts `w` from the count (a `fetch_sub`, so a racing `add` is kept), bumps the
//!    generation, and wakes every node of an older generation, in batches of
//!    [`WakeBatch::CAP`], unlocking to wake each batch. Nodes queued while it was unlocked carry
//!    the new generation and sit behind the old ones (FIFO), so the drain stops at the first of
//!    them: a waiter that queued after a re-`add` is not woken by the previous zero.
//! 4. If the counter is no longer zero when the releaser gets the lock, an `add` raised it in
//!    between. Either the count was zero at that moment (every waiter had been dropped, and the
//!    nodes now queued came later and must keep waiting), or it was not, and that `add` panicked
//!    with Go's misuse message. In both cases the releaser does nothing: the queued waiters are
//!    released by the next zero. A waiter is therefore never released while the counter it waited
//!    on has not reached zero since it queued, and never missed by a zero that a releaser handles.
//! 5. A dropped waiting future takes the lock and removes its node; it decrements the count only
//!    if the node is of the current generation (an older node is no longer counted: a release
//!    that is draining it already subtracted it). Both happen under the lock, so the count and the
//!    list always agree, and a later `add` does not see a phantom waiter.
//!
//! Memory ordering: every change of the state is an `AcqRel` read-modify-write, so the `add` that
//! reaches zero has acquired every earlier `done`; a released waiter acquires it through its
//! node's `state` (Release/Acquire) and a fast-path waiter through its `Acquire` load of a zero
//! counter. Everything a G did before its `done` is visible after `wait` returns, as in Go.

use crate::loom::{Arc, AtomicU64, Ordering::*};
use crate::waitlist::{Node, WaitList, WakeBatch, WAITING};
use goro_runtime::{JoinHandle, WaitReason};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A node's outcome: released by a zero of the counter.
const RELEASED: u8 = 1;

fn counter(state: u64) -> i32 {
    (state >> 32) as i32
}

fn waiters(state: u64) -> u32 {
    state as u32
}

/// Whether an `add(d)` that left `state` is done at once: the counter is now above `max(d, 0)`.
/// Then it is positive (no release), and an increment did not start from zero (no misuse),
/// whoever waits. Go's `Add` also returns quietly when an increment starts from zero, or a
/// decrement (or `add(0)`) leaves zero, while nobody waits; those go on to `add_slow`, which
/// applies Go's tests (a call per round of the group, not per `add`).
///
/// One signed compare of the whole state, not Go's tests of the counter and the waiters: as an
/// `i64` the state is `counter * 2^32 + waiters` with `0 <= waiters < 2^32`, so it is above
/// `m * 2^32 + (2^32 - 1)` exactly when `counter > m` (and, unlike `state >= (m + 1) << 32`,
/// that bound does not overflow at `d == i32::MAX`).
///
/// Why one compare: measured, not derived. W9 is an `add(1)` and a `done()` on one contended
/// cache line, four Gs on two Ps, with main waiting throughout. `benches/examples/w9_probe.rs`
/// runs it beside the same Gs doing bare locked adds on a counter of their own, in one process
/// (2-vCPU VM, 2026-12-06, three processes of 12 samples each, goro / bare): an `add` that calls
/// `add_slow` on every increment while a waiter is counted, 1.25-1.31x; Go's tests inlined here
/// instead, 1.28-1.44x; this test, 0.98-1.16x. The same Go tests after the
/// bare adds cost 1.02-1.07x, so what made the difference is not simply the instructions the
/// tests add; this VM exposes no hardware counters to say more.
#[inline(always)]
fn settled(d: i32, state: u64) -> bool {
    state as i64 > ((i64::from(d.max(0)) << 32) | i64::from(u32::MAX))
}

/// Waits for a collection of Gs (or threads) to finish: Go's `sync.WaitGroup`.
///
/// The main G calls [`add`](WaitGroup::add) with the number of Gs to wait for (or starts them
/// with [`go`](WaitGroup::go)); each of them calls [`done`](WaitGroup::done) when finished;
/// [`wait`](WaitGroup::wait) completes once the counter is zero. A `WaitGroup` is a handle:
/// clones share one counter (Go passes `*sync.WaitGroup`; here you clone it into each G).
///
/// It may be reused once every `wait` of the previous round has returned. As in Go, an `add` with
/// a positive delta that starts from zero must happen before the `wait` it is meant for.
///
/// ```
/// use goro::sync::WaitGroup;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// goro::run(async {
///     let wg = WaitGroup::new();
///     let hits = Arc::new(AtomicUsize::new(0));
///     for _ in 0..10 {
///         wg.add(1);
///         let (wg, hits) = (wg.clone(), hits.clone());
///         goro::go(async move {
///             hits.fetch_add(1, Ordering::Relaxed);
///             wg.done();
///         });
///     }
///     wg.wait().await;
///     assert_eq!(hits.load(Ordering::Relaxed), 10);
/// });
/// ```
#[derive(Clone)]
pub struct WaitGroup {
    inner: Arc<Inner>,
}

struct Inner {
    /// Counter (high 32 bits, an `i32`) and waiter count (low 32 bits).
    state: AtomicU64,
    /// The waiters; the extra data is the current generation (see the module docs).
    list: WaitList<u64>,
}

impl WaitGroup {
    /// A new `WaitGroup` with a zero counter.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.wait_blocking(); // zero: returns at once
    /// ```
    pub fn new() -> WaitGroup {
        WaitGroup { inner: Arc::new(Inner { state: AtomicU64::new(0), list: WaitList::new(0) }) }
    }

    /// Adds `delta`, which may be negative, to the counter (Go's `Add`). When the counter reaches
    /// zero, every waiter is released.
    ///
    /// # Panics
    /// - `sync: negative WaitGroup counter` if the counter goes below zero (it stays there, as in
    ///   Go: the `WaitGroup` is unusable afterwards);
    /// - `sync: WaitGroup misuse: Add called concurrently with Wait` if a positive delta raises
    ///   the counter from zero while waiters of the previous zero have not been released yet;
    /// - if `delta` does not fit the counter (an `i32`, as in Go).
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(2);
    /// wg.add(-1);
    /// wg.done();
    /// wg.wait_blocking();
    /// ```
    #[track_caller]
    #[inline]
    pub fn add(&self, delta: isize) {
        let Ok(d) = i32::try_from(delta) else {
            delta_out_of_range(delta);
        };
        let step = (i64::from(d) as u64) << 32;
        let state = self.inner.state.fetch_add(step, AcqRel).wrapping_add(step);
        if settled(d, state) {
            return;
        }
        self.add_slow(d, counter(state), waiters(state));
    }

    /// The rest of [`add`](Self::add): Go's panics, and releasing the waiters at zero.
    #[track_caller]
    #[cold]
    fn add_slow(&self, d: i32, v: i32, w: u32) {
        if v < 0 {
            panic!("sync: negative WaitGroup counter");
        }
        if w != 0 && d > 0 && v == d {
            panic!("sync: WaitGroup misuse: Add called concurrently with Wait");
        }
        if v > 0 || w == 0 {
            return;
        }
        self.inner.release();
    }

    /// Decrements the counter by one (Go's `Done`): `add(-1)`.
    ///
    /// # Panics
    /// `sync: negative WaitGroup counter` if the counter was already zero.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// wg.add(1);
    /// let w = wg.clone();
    /// std::thread::spawn(move || w.done());
    /// wg.wait_blocking();
    /// ```
    #[track_caller]
    #[inline]
    pub fn done(&self) {
        self.add(-1);
    }

    /// Waits until the counter is zero (Go's `Wait`). Completes at once if it is zero now.
    ///
    /// Cancellation: dropping the future before it completes removes its waiter (under the
    /// list's lock, with the waiter count), so it neither keeps a phantom waiter that would make a
    /// later `add` panic nor takes a wake-up from another waiter: every waiter is released by
    /// the zero on its own.
    ///
    /// ```
    /// goro::run(async {
    ///     let wg = goro::sync::WaitGroup::new();
    ///     wg.add(1);
    ///     let w = wg.clone();
    ///     goro::go(async move { w.done() });
    ///     wg.wait().await;
    /// });
    /// ```
    pub fn wait(&self) -> Wait<'_> {
        Wait { wg: &self.inner, node: Node::new(), generation: 0, queued: false }
    }

    /// Blocks the calling thread until the counter is zero: [`wait`](WaitGroup::wait) for plain
    /// threads. Called from a G it blocks the whole M (and the Gs queued on its P until the
    /// runtime hands the P off): use `wait().await` there.
    ///
    /// ```
    /// let wg = goro::sync::WaitGroup::new();
    /// let threads: Vec<_> = (0..4)
    ///     .map(|_| {
    ///         wg.add(1);
    ///         let wg = wg.clone();
    ///         std::thread::spawn(move || wg.done())
    ///     })
    ///     .collect();
    /// wg.wait_blocking();
    /// # for t in threads { t.join().unwrap(); }
    /// ```
    #[track_caller]
    pub fn wait_blocking(&self) {
        goro_runtime::__private::block_on_thread_for("`wg.wait().await`", self.wait());
    }

    /// Adds one to the counter and starts a G running `fut` that calls [`done`](WaitGroup::done)
    /// when it ends (Go 1.25's `WaitGroup.Go`). `done` runs however the G ends: it returns,
    /// panics (the panic is reported through the handle) or is aborted or dropped at shutdown.
    ///
    /// # Panics
    /// Outside a goro runtime, like [`goro::go`](fn@goro_runtime::go) (the counter is restored
    /// first).
    ///
    /// ```
    /// goro::run(async {
    ///     let wg = goro::sync::WaitGroup::new();
    ///     let handles: Vec<_> = (0..4).map(|i| wg.go(async move { i * 10 })).collect();
    ///     wg.wait().await;
    ///     let mut sum = 0;
    ///     for h in handles {
    ///         sum += h.await.unwrap();
    ///     }
    ///     assert_eq!(sum, 60);
    /// });
    /// ```
    #[track_caller]
    pub fn go<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        /// Calls `done` when dropped: when the G's future completes, panics or is dropped.
        struct DoneOnDrop(WaitGroup);
        impl Drop for DoneOnDrop {
            fn drop(&mut self) {
                self.0.done();
            }
        }
        self.add(1);
        let done = DoneOnDrop(self.clone());
        goro_runtime::go(async move {
            let _done = done;
            fut.await
        })
    }
}

/// `add`'s panic for a delta that does not fit Go's `int32` counter.
#[track_caller]
#[cold]
fn delta_out_of_range(delta: isize) -> ! {
    panic!("sync: WaitGroup delta {delta} out of range (the counter is an i32, as in Go)");
}

impl Inner {
    /// Releases the waiters after an `add` brought the counter to zero while some were counted
    /// (module docs, 3. and 4.).
    fn release(&self) {
        let mut list = self.list.lock();
        let state = self.state.load(Acquire);
        if counter(state) != 0 || waiters(state) == 0 {
            return;
        }
        self.state.fetch_sub(u64::from(waiters(state)), AcqRel);
        let generation = list.extra().wrapping_add(1);
        *list.extra() = generation;
        let mut batch = WakeBatch::new();
        loop {
            while !batch.is_full() && list.front_data().is_some_and(|g| g != generation) {
                batch.push(list.pop_front(RELEASED));
            }
            let full = batch.is_full();
            drop(list);
            batch.wake_all();
            if !full {
                return;
            }
            list = self.list.lock();
        }
    }
}

// Every panic of `add` leaves the state as Go leaves it (the panic is the report); nothing is
// half-updated that a caller could observe after catching it.
impl std::panic::UnwindSafe for WaitGroup {}
impl std::panic::RefUnwindSafe for WaitGroup {}

impl Default for WaitGroup {
    fn default() -> WaitGroup {
        WaitGroup::new()
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.load(Relaxed);
        f.debug_struct("WaitGroup").field("counter", &counter(state)).field("waiters", &waiters(state)).finish()
    }
}

/// The future of [`WaitGroup::wait`]: completes once the counter is zero.
///
/// Cancel-safe: dropping it removes its waiter (see [`WaitGroup::wait`]).
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Wait<'a> {
    wg: &'a Inner,
    /// Queued on `wg.list` while `queued`; pinned with the future.
    node: Node,
    /// The generation `node` was queued with.
    generation: u64,
    queued: bool,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: nothing is moved out of the pinned future; `node` stays where it is.
        let this = unsafe { self.get_unchecked_mut() };
        if this.queued {
            // The protocol of `waitlist`: a non-WAITING state read with Acquire means a releaser
            // unlinked the node and will not touch it again.
            if this.node.state() != WAITING {
                this.queued = false;
                this.node.waited();
                return Poll::Ready(());
            }
            let mut list = this.wg.list.lock();
            if this.node.state() != WAITING {
                this.queued = false;
                this.node.waited();
                return Poll::Ready(());
            }
            list.set_waker(&this.node, cx.waker());
            drop(list);
            this.wg.list.park_reason(WaitReason::SyncWaitGroupWait);
            return Poll::Pending;
        }
        // A yield point, before looking at the counter.
        std::task::ready!(goro_runtime::coop::poll_proceed(cx));
        if counter(this.wg.state.load(Acquire)) == 0 {
            return Poll::Ready(());
        }
        let mut list = this.wg.list.lock();
        let mut state = this.wg.state.load(Acquire);
        loop {
            if counter(state) == 0 {
                return Poll::Ready(());
            }
            debug_assert_ne!(waiters(state), u32::MAX, "sync: too many WaitGroup waiters");
            match this.wg.state.compare_exchange_weak(state, state + 1, AcqRel, Acquire) {
                Ok(_) => break,
                Err(actual) => state = actual,
            }
        }
        this.generation = *list.extra();
        // SAFETY: `node` is not queued (`queued` is false: it was never queued, or a releaser
        // completed it, or our `Drop` has not run because we are being polled). It is pinned
        // inside this future, and `Drop` removes it under the lock if it is still queued, so it
        // stays at its address for as long as it is linked.
        unsafe { list.push(&this.node, cx.waker().clone(), this.generation, false) };
        this.queued = true;
        drop(list);
        this.wg.list.park_reason(WaitReason::SyncWaitGroupWait);
        Poll::Pending
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if !self.queued || self.node.state() != WAITING {
            return;
        }
        let mut list = self.wg.list.lock();
        // Still queued: take it out and, if it is counted (current generation), uncount it.
        if list.remove(&self.node) && self.generation == *list.extra() {
            self.wg.state.fetch_sub(1, AcqRel);
        }
    }
}

impl fmt::Debug for Wait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait").field("queued", &self.queued).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Go's misuse check, set up exactly: the counter is zero while a waiter of that zero is still
    /// counted (the window before its release takes the lock), and an `add` raises it again.
    #[test]
    fn add_during_release_is_misuse() {
        let wg = WaitGroup::new();
        wg.inner.state.store(1, Relaxed); // counter 0, one waiter counted
        let err = std::panic::catch_unwind(|| wg.add(1)).unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"sync: WaitGroup misuse: Add called concurrently with Wait"));
    }

    /// `settled` is exactly `counter > max(d, 0)`, and so only skips what Go's `Add` does
    /// nothing for: every delta, counter and waiter count at and around the edges.
    #[test]
    fn settled_is_counter_above_the_increment_and_skips_only_gos_quiet_returns() {
        let ds = [i32::MIN, i32::MIN + 1, -2, -1, 0, 1, 2, 3, i32::MAX - 1, i32::MAX];
        let vs = [i32::MIN, i32::MIN + 1, -3, -2, -1, 0, 1, 2, 3, 4, i32::MAX - 1, i32::MAX];
        let ws = [0, 1, 2, u32::MAX - 1, u32::MAX];
        for d in ds {
            for v in vs {
                for w in ws {
                    let state = (u64::from(v as u32) << 32) | u64::from(w);
                    assert_eq!(settled(d, state), v > d.max(0), "add({d}) leaving counter {v}, waiters {w}");
                    // Go: `if v < 0 panic; if w != 0 && delta > 0 && v == delta panic;
                    // if v > 0 || w == 0 return`; past that, at zero with waiters, it releases.
                    let go_returns = v >= 0 && !(w != 0 && d > 0 && v == d) && (v > 0 || w == 0);
                    if settled(d, state) {
                        assert!(go_returns, "add({d}) leaving counter {v}, waiters {w}");
                    }
                }
            }
        }
    }

    /// W9's situation: an increment while a waiter is counted and the counter is positive
    /// returns at once (no misuse: the counter did not start from zero), and the zero after
    /// it still releases the waiter.
    #[test]
    fn add_while_a_waiter_waits_and_the_counter_is_positive() {
        let wg = WaitGroup::new();
        wg.add(1);
        let w = wg.clone();
        let waiter = std::thread::spawn(move || w.wait_blocking());
        while waiters(wg.inner.state.load(Acquire)) == 0 {
            std::thread::yield_now();
        }
        for _ in 0..1000 {
            wg.add(1);
            assert_eq!(wg.inner.state.load(Relaxed), (2 << 32) | 1);
            wg.done();
        }
        assert!(!waiter.is_finished());
        wg.done();
        waiter.join().unwrap();
        assert_eq!(wg.inner.state.load(Relaxed), 0);
    }
}
