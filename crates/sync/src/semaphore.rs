//! [`Semaphore`]: the weighted, FIFO semaphore of Go's `golang.org/x/sync/semaphore`, and the
//! acquire machinery [`RwMutex`](crate::RwMutex) is built on.
//!
//! # State
//!
//! One `AtomicUsize` holds the number of *available* permits shifted left by one, and a `QUEUED`
//! flag in bit 0; the waiters (each node's data is its weight) park on a [`WaitList`]. x/sync
//! keeps `size` and `cur` under its mutex; here `size` is immutable and `size - available` is
//! x/sync's `cur`, so that the common case needs no lock:
//!
//! - **Fast paths** (no lock): `try_acquire` takes `k` permits with a CAS if `QUEUED` is clear and
//!   `k` are available; `release` gives them back with a CAS if `QUEUED` is clear.
//! - **Slow paths** (under the list's lock): an acquire that cannot take its permits sets `QUEUED`
//!   with a CAS *from the value it checked* (so a fast release that slipped in makes the CAS fail
//!   and the acquire look again) and queues at the back; a release while `QUEUED` is set adds its
//!   permits and then grants front waiters while they fit (x/sync's `notifyWaiters`: it stops at
//!   the first that does not fit, so a heavy waiter is not starved by light ones behind it).
//!
//! # Invariants
//!
//! 1. `QUEUED` changes only under the lock, and whenever the lock is free, `QUEUED` is set if and
//!    only if the list is non-empty.
//! 2. While `QUEUED` is set, nobody changes the permits without the lock (fast acquires fail,
//!    fast releases go to the slow path), so a lock holder may read and then change them.
//! 3. FIFO, no barging: while anybody waits, every acquire, even one that would fit, queues
//!    behind them (x/sync's `len(waiters) == 0` condition). Whenever the lock is free, the front
//!    waiter does not fit, unless a releaser that filled a [`WakeBatch`] is about to relock and
//!    continue granting.
//! 4. A granted waiter's permits are subtracted before its node is completed, so every permit is
//!    always exactly one of: available, held by an acquirer, or on its way to a granted future.
//!
//! # Cancellation
//!
//! A queued acquire future that is dropped removes itself under the lock and then grants the
//! waiters behind it if they now fit (x/sync does this when the cancelled waiter was at the
//! front; by 3. it is a no-op otherwise) and clears `QUEUED` if the list is empty. One that was
//! granted but dropped before it returned gives its permits back with [`Semaphore::release`]:
//! a dropped future never loses a permit or a wake-up.
//!
//! Permits that an acquire *returned* are the caller's. With Go's pair (`acquire`, then
//! `release`) they come back only if `release` runs; a G aborted, or a future dropped, in
//! between loses them for good. The guards ([`SemaphorePermit`], [`OwnedSemaphorePermit`])
//! release in their `Drop`, which runs however the holder ends.

use crate::loom::{AtomicUsize, Ordering::*};
use crate::waitlist::{Locked, Node, WaitList, WakeBatch, WAITING};
use goro_runtime::WaitReason;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Bit 0 of the state: somebody is queued (see the module docs).
const QUEUED: usize = 1;

/// A node's outcome: its permits were granted.
const GRANTED: u8 = 1;

/// A weighted semaphore with FIFO waiters: Go's `golang.org/x/sync/semaphore.Weighted`.
///
/// It holds `size` permits; [`acquire(k)`](Semaphore::acquire) waits until `k` are free and
/// takes them, [`release(k)`](Semaphore::release) gives them back. Waiters are served in arrival
/// order: an acquire never overtakes one queued before it, even if its own weight would fit, so
/// a large request is not starved by a stream of small ones.
///
/// Unlike x/sync there is no `Context` argument: to give up, drop the future (in a `select!`, or
/// with a timeout); that is always safe (see [`acquire`](Semaphore::acquire)).
///
/// # Which acquire to use
///
/// - **Go's pair**, [`acquire`](Semaphore::acquire) then [`release`](Semaphore::release), as
///   in x/sync: fine when the code between them always runs to the end. If the G is aborted
///   ([`JoinHandle::abort`](goro_runtime::JoinHandle::abort)), or the future holding the permits
///   is dropped (cancelled by `ctx.or_done(..)`, a timeout, a `select!` that picked another
///   case, a panic), `release` never runs and **the permits are lost for good**: the semaphore
///   stays smaller, and once all are lost every later acquire waits forever.
/// - **A guard**, [`acquire_guard`](Semaphore::acquire_guard) (borrowing the semaphore) or
///   [`acquire_owned`](Semaphore::acquire_owned) (holding an `Arc` of it, to move into another
///   G): the permits are released when the guard is dropped, however its holder ends. Use a
///   guard whenever the holder can be aborted or cancelled, and whenever it may panic.
///   [`SemaphorePermit::forget`] keeps the permits held (give them back with `release`).
///
/// The two mix freely: a guard's drop is a `release`.
///
/// ```
/// use goro::sync::semaphore::Semaphore;
/// use std::sync::Arc;
///
/// goro::run(async {
///     // At most 2 of the 8 workers run at once (Go's pair; see the guard example below).
///     let sem = Arc::new(Semaphore::new(2));
///     let hs: Vec<_> = (0..8)
///         .map(|i| {
///             let sem = sem.clone();
///             goro::go(async move {
///                 sem.acquire(1).await;
///                 let r = i * i;
///                 sem.release(1);
///                 r
///             })
///         })
///         .collect();
///     let mut sum = 0;
///     for h in hs {
///         sum += h.await.unwrap();
///     }
///     assert_eq!(sum, 140);
///     assert_eq!(sem.available(), 2);
/// });
/// ```
///
/// The same pool when a worker may be cancelled: the guard gives its permit back.
///
/// ```
/// use goro::context::{self, Context};
/// use goro::sync::semaphore::Semaphore;
/// use std::sync::Arc;
///
/// goro::run(async {
///     let sem = Arc::new(Semaphore::new(2));
///     let (ctx, cancel) = context::with_cancel(&Context::background());
///     let stuck = {
///         let (sem, ctx) = (sem.clone(), ctx.clone());
///         goro::go(async move {
///             ctx.or_done(async {
///                 let _permit = sem.acquire_guard(1).await; // released however this ends
///                 std::future::pending::<()>().await // a job that never finishes
///             })
///             .await
///         })
///     };
///     goro::runtime::yield_now().await;
///     cancel(); // `or_done` drops the job, and the guard with it
///     assert!(stuck.await.unwrap().is_err());
///     let both = sem.acquire_guard(2).await; // both permits are back
///     assert_eq!(both.permits(), 2);
/// });
/// ```
pub struct Semaphore {
    /// Available permits << 1 | `QUEUED`.
    state: AtomicUsize,
    size: usize,
    waiters: WaitList,
}

impl Semaphore {
    /// The largest size a semaphore can have (one bit of the state word is the `QUEUED` flag).
    pub const MAX_PERMITS: usize = usize::MAX >> 1;

    /// A semaphore with `n` permits, all available (x/sync's `NewWeighted`).
    ///
    /// # Panics
    /// If `n` exceeds [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(3);
    /// assert_eq!((sem.size(), sem.available()), (3, 3));
    /// ```
    #[track_caller]
    pub fn new(n: usize) -> Semaphore {
        assert!(n <= Semaphore::MAX_PERMITS, "semaphore: size {n} exceeds Semaphore::MAX_PERMITS");
        Semaphore { state: AtomicUsize::new(n << 1), size: n, waiters: WaitList::new(()) }
    }

    /// The number of permits the semaphore was created with.
    ///
    /// ```
    /// assert_eq!(goro::sync::semaphore::Semaphore::new(5).size(), 5);
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// The number of permits available right now (a snapshot: other Gs may change it at once).
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(5);
    /// assert!(sem.try_acquire(2));
    /// assert_eq!(sem.available(), 3);
    /// ```
    pub fn available(&self) -> usize {
        self.state.load(Acquire) >> 1
    }

    /// Waits until `k` permits are available and no earlier acquire is waiting, then takes them
    /// (x/sync's `Acquire`). Give them back with [`release(k)`](Semaphore::release).
    ///
    /// Cancellation: dropping the future before it completes gives up cleanly. If it was queued,
    /// it leaves the queue and lets the waiters behind it through if they now fit; if its
    /// permits had already been granted, they are released again. No permit and no wake-up is
    /// ever lost.
    ///
    /// # Panics
    /// If `k > self.size()`. x/sync blocks such a call until its `Context` is done; without a
    /// context it could only block forever, a silent deadlock, so this reports the bug instead.
    ///
    /// ```
    /// goro::run(async {
    ///     let sem = goro::sync::semaphore::Semaphore::new(4);
    ///     sem.acquire(3).await;
    ///     assert!(!sem.try_acquire(2));
    ///     sem.release(3);
    ///     sem.acquire(4).await;
    ///     sem.release(4);
    /// });
    /// ```
    #[track_caller]
    pub fn acquire(&self, k: usize) -> Acquire<'_> {
        self.check_weight(k);
        Acquire { sem: self, k, op: AcquireOp::new() }
    }

    /// Blocks the calling thread until it has taken `k` permits: [`acquire`](Semaphore::acquire)
    /// for plain threads. Called from a G it blocks the whole M: use `acquire(k).await` there.
    ///
    /// # Panics
    /// If `k > self.size()`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::semaphore::Semaphore::new(1));
    /// sem.acquire_blocking(1);
    /// let s = sem.clone();
    /// let t = std::thread::spawn(move || {
    ///     s.acquire_blocking(1); // waits for the release below
    ///     s.release(1);
    /// });
    /// sem.release(1);
    /// t.join().unwrap();
    /// ```
    #[track_caller]
    pub fn acquire_blocking(&self, k: usize) {
        goro_runtime::__private::block_on_thread_for("`sem.acquire(k).await`", self.acquire(k));
    }

    /// Takes `k` permits if they are available and nobody is waiting; `false` (and nothing
    /// changed) otherwise, including when `k > self.size()` (x/sync's `TryAcquire`).
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(2);
    /// assert!(sem.try_acquire(2));
    /// assert!(!sem.try_acquire(1));
    /// sem.release(2);
    /// assert!(!sem.try_acquire(3));
    /// ```
    pub fn try_acquire(&self, k: usize) -> bool {
        k <= self.size && self.try_take(k)
    }

    /// [`acquire(k)`](Semaphore::acquire), returning the permits as a guard that releases them
    /// when dropped: use it when the G holding them can be aborted or cancelled (see "Which
    /// acquire to use" above). The future is cancel-safe like `acquire`'s.
    ///
    /// # Panics
    /// If `k > self.size()`.
    ///
    /// ```
    /// goro::run(async {
    ///     let sem = goro::sync::semaphore::Semaphore::new(3);
    ///     {
    ///         let permit = sem.acquire_guard(2).await;
    ///         assert_eq!((permit.permits(), sem.available()), (2, 1));
    ///     } // dropped: released
    ///     assert_eq!(sem.available(), 3);
    /// });
    /// ```
    #[track_caller]
    pub fn acquire_guard(&self, k: usize) -> AcquirePermit<'_> {
        AcquirePermit { acquire: self.acquire(k) }
    }

    /// [`try_acquire(k)`](Semaphore::try_acquire), returning the permits as a guard that
    /// releases them when dropped; `None` (and nothing changed) if they are not available, if
    /// somebody is waiting, or if `k > self.size()`.
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(2);
    /// let a = sem.try_acquire_guard(2).expect("free");
    /// assert!(sem.try_acquire_guard(1).is_none());
    /// drop(a);
    /// assert!(sem.try_acquire_guard(1).is_some());
    /// ```
    pub fn try_acquire_guard(&self, k: usize) -> Option<SemaphorePermit<'_>> {
        self.try_acquire(k).then(|| SemaphorePermit { sem: self, k })
    }

    /// Blocks the calling thread until it has taken `k` permits, returned as a guard:
    /// [`acquire_guard`](Semaphore::acquire_guard) for plain threads.
    ///
    /// # Panics
    /// If `k > self.size()`.
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(1);
    /// let permit = sem.acquire_guard_blocking(1);
    /// assert_eq!(sem.available(), 0);
    /// drop(permit);
    /// assert_eq!(sem.available(), 1);
    /// ```
    #[track_caller]
    pub fn acquire_guard_blocking(&self, k: usize) -> SemaphorePermit<'_> {
        goro_runtime::__private::block_on_thread_for("`sem.acquire_guard(k).await`", self.acquire_guard(k))
    }

    /// [`acquire_guard`](Semaphore::acquire_guard) for a semaphore in an `Arc`: the guard holds
    /// a clone of the `Arc`, so it is `'static` and can move into another G. This is Go's
    /// worker-pool shape (acquire in the loop that hands out jobs, release in the worker) with
    /// the release in the guard's drop.
    ///
    /// # Panics
    /// If `k > self.size()`.
    ///
    /// ```
    /// use goro::sync::semaphore::Semaphore;
    /// use std::sync::Arc;
    ///
    /// goro::run(async {
    ///     let sem = Arc::new(Semaphore::new(2));
    ///     let mut workers = Vec::new();
    ///     for job in 0..6u64 {
    ///         // At most 2 jobs in flight: wait for a permit before starting the next.
    ///         let permit = sem.clone().acquire_owned(1).await;
    ///         workers.push(goro::go(async move {
    ///             let _permit = permit; // released when this worker ends, however it ends
    ///             job * 2
    ///         }));
    ///     }
    ///     let mut sum = 0;
    ///     for w in workers {
    ///         sum += w.await.unwrap();
    ///     }
    ///     assert_eq!((sum, sem.available()), (30, 2));
    /// });
    /// ```
    #[track_caller]
    pub fn acquire_owned(self: Arc<Self>, k: usize) -> AcquireOwned {
        self.check_weight(k);
        AcquireOwned { sem: self, k, op: AcquireOp::new() }
    }

    /// [`try_acquire_guard`](Semaphore::try_acquire_guard) for a semaphore in an `Arc`: `None`
    /// (dropping this `Arc`) if the permits are not available right now.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::semaphore::Semaphore::new(1));
    /// let permit = sem.clone().try_acquire_owned(1).expect("free");
    /// assert!(sem.clone().try_acquire_owned(1).is_none());
    /// drop(permit);
    /// assert_eq!(sem.available(), 1);
    /// ```
    pub fn try_acquire_owned(self: Arc<Self>, k: usize) -> Option<OwnedSemaphorePermit> {
        if self.try_acquire(k) {
            Some(OwnedSemaphorePermit { sem: self, k })
        } else {
            None
        }
    }

    /// Blocks the calling thread until it has taken `k` permits, returned as an owned guard:
    /// [`acquire_owned`](Semaphore::acquire_owned) for plain threads.
    ///
    /// # Panics
    /// If `k > self.size()`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::semaphore::Semaphore::new(1));
    /// let permit = sem.clone().acquire_owned_blocking(1);
    /// let t = std::thread::spawn(move || drop(permit)); // released on another thread
    /// t.join().unwrap();
    /// assert_eq!(sem.available(), 1);
    /// ```
    #[track_caller]
    pub fn acquire_owned_blocking(self: Arc<Self>, k: usize) -> OwnedSemaphorePermit {
        goro_runtime::__private::block_on_thread_for("`sem.acquire_owned(k).await`", self.acquire_owned(k))
    }

    /// Gives back `k` permits, letting waiters through in order while they fit (x/sync's
    /// `Release`).
    ///
    /// # Panics
    /// `semaphore: released more than held` if that would make more than `size` permits
    /// available (x/sync's message).
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(2);
    /// sem.acquire_blocking(2);
    /// sem.release(1);
    /// sem.release(1);
    /// assert_eq!(sem.available(), 2);
    /// ```
    #[track_caller]
    pub fn release(&self, k: usize) {
        self.release_as(k, Contention::NotMutex);
    }

    /// [`release`](Self::release), for a release that `contention` says is (or is not) a
    /// mutex's unlock.
    #[track_caller]
    #[inline]
    pub(crate) fn release_as(&self, k: usize, contention: Contention) {
        let mut state = self.state.load(Relaxed);
        loop {
            if state & QUEUED != 0 {
                return self.release_slow(k, contention);
            }
            let new = self.add_permits(state, k);
            match self.state.compare_exchange_weak(state, new, Release, Relaxed) {
                Ok(_) => return,
                Err(actual) => state = actual,
            }
        }
    }

    #[track_caller]
    fn check_weight(&self, k: usize) {
        assert!(k <= self.size, "semaphore: acquire of {k} permits exceeds the semaphore's size {}", self.size);
    }

    /// `state` with `k` more permits available; panics (changing nothing) if that exceeds `size`.
    #[track_caller]
    fn add_permits(&self, state: usize, k: usize) -> usize {
        if k > self.size - (state >> 1) {
            panic!("semaphore: released more than held");
        }
        // No overflow: (state >> 1) + k <= size <= MAX_PERMITS.
        state + (k << 1)
    }

    /// The lock-free path: takes `k <= size` permits if they are free and nobody is queued.
    fn try_take(&self, k: usize) -> bool {
        let mut state = self.state.load(Relaxed);
        loop {
            if state & QUEUED != 0 || state >> 1 < k {
                return false;
            }
            match self.state.compare_exchange_weak(state, state - (k << 1), Acquire, Relaxed) {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
    }

    #[track_caller]
    fn release_slow(&self, k: usize, contention: Contention) {
        let list = self.waiters.lock();
        // `QUEUED` may have been cleared since we looked (the last waiter left): fast paths may
        // race again, so keep the CAS loop.
        let mut state = self.state.load(Relaxed);
        loop {
            let new = self.add_permits(state, k);
            match self.state.compare_exchange_weak(state, new, AcqRel, Relaxed) {
                Ok(_) => break,
                Err(actual) => state = actual,
            }
        }
        let t0 = self.grant(list);
        if contention == Contention::Mutex {
            goro_runtime::__private::profile::mutex_event(t0);
        }
    }

    /// Grants front waiters while they fit, then unlocks and wakes them; in batches of
    /// [`WakeBatch::CAP`], relocking to go on. Clears `QUEUED` once the list is empty. Returns
    /// when the first waiter it granted began to wait (for the mutex profile; 0 if none).
    fn grant<'a>(&'a self, mut list: Locked<'a, ()>) -> u64 {
        let mut batch = WakeBatch::new();
        let mut t0 = 0;
        loop {
            let full = loop {
                let Some(k) = list.front_data() else {
                    self.state.fetch_and(!QUEUED, AcqRel);
                    break false;
                };
                // `QUEUED` is set (invariant 1): the permits only change under this lock.
                let k = k as usize;
                if self.state.load(Acquire) >> 1 < k {
                    break false;
                }
                self.state.fetch_sub(k << 1, AcqRel);
                if t0 == 0 {
                    t0 = list.front_wait_start();
                }
                batch.push(list.pop_front(GRANTED));
                if batch.is_full() {
                    break true;
                }
            };
            drop(list);
            batch.wake_all();
            if !full {
                return t0;
            }
            list = self.waiters.lock();
        }
    }
}

/// Whether a release that wakes a waiter counts in the mutex profile (Go's `semrelease` charges
/// the releaser only for the semaphores of `sync.Mutex` and `sync.RWMutex`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Contention {
    /// The semaphore's own `release` (x/sync's semaphore is no mutex): block profile only.
    NotMutex,
    /// An `RwMutex`'s unlock: the unlocker's stack is charged with the woken waiter's wait.
    Mutex,
}

// The semaphore's panics (`acquire` too heavy, releasing more than held) change nothing first.
impl std::panic::UnwindSafe for Semaphore {}
impl std::panic::RefUnwindSafe for Semaphore {}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.load(Relaxed);
        f.debug_struct("Semaphore")
            .field("size", &self.size)
            .field("available", &(state >> 1))
            .field("queued", &(state & QUEUED != 0))
            .finish()
    }
}

/// One acquire of `k` permits: its wait-list node and whether it is queued. Shared by
/// [`Acquire`] and the [`RwMutex`](crate::RwMutex) lock futures.
pub(crate) struct AcquireOp {
    node: Node,
    queued: bool,
}

impl AcquireOp {
    pub(crate) fn new() -> AcquireOp {
        AcquireOp { node: Node::new(), queued: false }
    }

    /// Polls the acquire; `Ready` means the caller holds the `k` permits.
    ///
    /// # Safety
    /// `self` is pinned (it does not move until it is dropped), and every call, and the final
    /// [`cancel`](Self::cancel), passes the same `sem` and `k`, with `k <= sem.size()`.
    pub(crate) unsafe fn poll(
        &mut self,
        sem: &Semaphore,
        k: usize,
        reason: WaitReason,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        if self.queued {
            // The protocol of `waitlist`: a non-WAITING state read with Acquire means a releaser
            // granted and unlinked the node and will not touch it again.
            if self.node.state() != WAITING {
                self.queued = false;
                self.node.waited();
                return Poll::Ready(());
            }
            let mut list = sem.waiters.lock();
            if self.node.state() != WAITING {
                self.queued = false;
                self.node.waited();
                return Poll::Ready(());
            }
            list.set_waker(&self.node, cx.waker());
            drop(list);
            sem.waiters.park_reason(reason);
            return Poll::Pending;
        }
        // A yield point, before the first try (nothing is held yet).
        std::task::ready!(goro_runtime::coop::poll_proceed(cx));
        if sem.try_take(k) {
            return Poll::Ready(());
        }
        let mut list = sem.waiters.lock();
        let mut state = sem.state.load(Acquire);
        loop {
            if state & QUEUED != 0 {
                break; // Others wait: join the back, even if we would fit (FIFO).
            }
            let new = if state >> 1 >= k { state - (k << 1) } else { state | QUEUED };
            match sem.state.compare_exchange_weak(state, new, AcqRel, Acquire) {
                Ok(_) if new & QUEUED == 0 => return Poll::Ready(()),
                Ok(_) => break,
                Err(actual) => state = actual,
            }
        }
        // SAFETY: the node is not queued (`queued` is false: never queued, or granted and
        // unlinked by a releaser). It is pinned inside the future that owns `self`, whose drop
        // calls `cancel`, which removes it under the lock while it is still linked: it stays at
        // its address for as long as it is queued.
        unsafe { list.push(&self.node, cx.waker().clone(), k as u64, false) };
        self.queued = true;
        drop(list);
        sem.waiters.park_reason(reason);
        Poll::Pending
    }

    /// Undoes an acquire that has not returned `Ready` (see the module docs); a no-op otherwise.
    ///
    /// # Safety
    /// As for [`poll`](Self::poll).
    pub(crate) unsafe fn cancel(&mut self, sem: &Semaphore, k: usize) {
        if !self.queued {
            return;
        }
        self.queued = false;
        if self.node.state() == WAITING {
            let mut list = sem.waiters.lock();
            if list.remove(&self.node) {
                // We may have been the front waiter holding the others back; and if we were the
                // last one, `grant` clears QUEUED.
                sem.grant(list);
                return;
            }
        }
        // Granted, but the permits never reached the caller: give them back.
        sem.release(k);
    }
}

/// The future of [`Semaphore::acquire`]: completes once the caller holds the permits.
///
/// Cancel-safe: dropping it never loses a permit or a wake-up (see [`Semaphore::acquire`]).
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Acquire<'a> {
    sem: &'a Semaphore,
    k: usize,
    op: AcquireOp,
}

impl Future for Acquire<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `op` is pinned inside this future and always used with `this.sem` and `this.k`
        // (`k <= size`, checked by `Semaphore::acquire`).
        unsafe { this.op.poll(this.sem, this.k, WaitReason::SemAcquire, cx) }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        // SAFETY: dropped in place: `op` has not moved since it was pinned; same `sem` and `k`.
        unsafe { self.op.cancel(self.sem, self.k) }
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire").field("k", &self.k).field("queued", &self.op.queued).finish()
    }
}

/// The future of [`Semaphore::acquire_guard`]: completes with a [`SemaphorePermit`] once the
/// caller holds the permits.
///
/// Cancel-safe: dropping it never loses a permit or a wake-up (see [`Semaphore::acquire`]).
#[must_use = "futures do nothing unless you `.await` them"]
pub struct AcquirePermit<'a> {
    acquire: Acquire<'a>,
}

impl<'a> Future for AcquirePermit<'a> {
    type Output = SemaphorePermit<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SemaphorePermit<'a>> {
        // SAFETY: `acquire` is pinned structurally: it is never moved out of the pinned future,
        // and `AcquirePermit` has no `Drop` of its own that could move it.
        let acquire = unsafe { self.map_unchecked_mut(|this| &mut this.acquire) };
        let (sem, k) = (acquire.sem, acquire.k);
        acquire.poll(cx).map(|()| SemaphorePermit { sem, k })
    }
}

impl fmt::Debug for AcquirePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquirePermit").field("k", &self.acquire.k).field("queued", &self.acquire.op.queued).finish()
    }
}

/// The future of [`Semaphore::acquire_owned`]: completes with an [`OwnedSemaphorePermit`] once
/// the caller holds the permits.
///
/// Cancel-safe: dropping it never loses a permit or a wake-up (see [`Semaphore::acquire`]).
#[must_use = "futures do nothing unless you `.await` them"]
pub struct AcquireOwned {
    sem: Arc<Semaphore>,
    k: usize,
    op: AcquireOp,
}

impl Future for AcquireOwned {
    type Output = OwnedSemaphorePermit;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<OwnedSemaphorePermit> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `op` is pinned inside this future and always used with the same semaphore
        // (the `Arc`'s, which does not move) and `this.k` (`k <= size`, checked by
        // `Semaphore::acquire_owned`).
        let polled = unsafe { this.op.poll(&this.sem, this.k, WaitReason::SemAcquire, cx) };
        polled.map(|()| OwnedSemaphorePermit { sem: Arc::clone(&this.sem), k: this.k })
    }
}

impl Drop for AcquireOwned {
    fn drop(&mut self) {
        // SAFETY: dropped in place: `op` has not moved since it was pinned; same `sem` and `k`.
        unsafe { self.op.cancel(&self.sem, self.k) }
    }
}

impl fmt::Debug for AcquireOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireOwned").field("k", &self.k).field("queued", &self.op.queued).finish()
    }
}

/// Permits of a [`Semaphore`], held until this guard is dropped, which releases them (however
/// its holder ends: normally, by a panic, or because its G was aborted or its future dropped).
/// From [`Semaphore::acquire_guard`], [`try_acquire_guard`](Semaphore::try_acquire_guard) and
/// [`acquire_guard_blocking`](Semaphore::acquire_guard_blocking).
///
/// `Send` and `Sync`: a G holding one may move between threads, and the guard may be dropped on
/// any thread.
#[must_use = "the permits are released as soon as the guard is dropped"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    k: usize,
}

impl<'a> SemaphorePermit<'a> {
    /// The number of permits this guard holds.
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(4);
    /// assert_eq!(sem.try_acquire_guard(3).unwrap().permits(), 3);
    /// ```
    pub fn permits(&self) -> usize {
        self.k
    }

    /// The semaphore the permits belong to.
    pub fn semaphore(&self) -> &'a Semaphore {
        self.sem
    }

    /// Keeps the permits held without the guard (tokio's `forget`): they are not released
    /// when it goes. Give them back later with [`Semaphore::release`], as after Go's
    /// `acquire`.
    ///
    /// ```
    /// let sem = goro::sync::semaphore::Semaphore::new(2);
    /// sem.try_acquire_guard(2).unwrap().forget();
    /// assert_eq!(sem.available(), 0);
    /// sem.release(2);
    /// assert_eq!(sem.available(), 2);
    /// ```
    pub fn forget(mut self) {
        self.k = 0;
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        if self.k > 0 {
            self.sem.release(self.k);
        }
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit").field("permits", &self.k).finish()
    }
}

/// Permits of a [`Semaphore`] in an `Arc`, held until this guard is dropped, which releases them
/// (however its holder ends). `'static`: it may move into another G or thread. From
/// [`Semaphore::acquire_owned`], [`try_acquire_owned`](Semaphore::try_acquire_owned) and
/// [`acquire_owned_blocking`](Semaphore::acquire_owned_blocking).
#[must_use = "the permits are released as soon as the guard is dropped"]
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
    k: usize,
}

impl OwnedSemaphorePermit {
    /// The number of permits this guard holds.
    ///
    /// ```
    /// let sem = std::sync::Arc::new(goro::sync::semaphore::Semaphore::new(4));
    /// assert_eq!(sem.try_acquire_owned(3).unwrap().permits(), 3);
    /// ```
    pub fn permits(&self) -> usize {
        self.k
    }

    /// The semaphore the permits belong to.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Keeps the permits held without the guard: they are not released when it goes (the
    /// guard's `Arc` is dropped). Give them back later with [`Semaphore::release`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(goro::sync::semaphore::Semaphore::new(2));
    /// sem.clone().try_acquire_owned(2).unwrap().forget();
    /// assert_eq!((sem.available(), Arc::strong_count(&sem)), (0, 1));
    /// sem.release(2);
    /// ```
    pub fn forget(mut self) {
        self.k = 0;
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        if self.k > 0 {
            self.sem.release(self.k);
        }
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit").field("permits", &self.k).finish()
    }
}
