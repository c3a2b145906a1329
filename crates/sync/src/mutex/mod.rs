//! [`Mutex<T>`]: Go's `sync.Mutex`, holding the data it protects as Rust locks do.
//!
//! # Design
//!
//! The lock is Go's (`src/sync/mutex.go`): one atomic state word (`LOCKED`, `WOKEN`,
//! `STARVING`, and the number of waiters), and two modes.
//!
//! - **Normal mode**: waiters queue FIFO, but a woken waiter does not own the lock: it competes
//!   with the lockers arriving meanwhile, which may also spin briefly before queueing. A G that
//!   unlocks and relocks at once usually keeps the lock (no hand-off per lock), which is what
//!   makes a contended Go mutex fast. A woken waiter that loses queues again at the front.
//! - **Starvation mode**: once a waiter has waited more than 1 ms, unlock hands the lock straight
//!   to the front waiter; arrivals queue at the back without barging or spinning. The mutex goes
//!   back to normal mode when the lock reaches the last waiter or one that waited less than
//!   1 ms. This is what guarantees that no waiter starves.
//!
//! The uncontended lock and unlock are one atomic read-modify-write each, as in Go. Waiters park
//! on the crate's FIFO wait list: a node inside the pinned [`Lock`] future (or a blocked thread's
//! stack), so waiting allocates nothing. The state word's exact rules and invariants are in the
//! `raw` submodule.
//!
//! Unlike Go's, a waiting lock can be cancelled (its future dropped). A dropped future leaves the
//! queue; if it had been woken to compete, it passes the wake-up on to the next waiter; if the
//! lock had already been handed to it, it unlocks again, handing it on in turn.
//!
//! # Invariants
//!
//! A guard exists only while the lock is held by it, so there is at most one guard, and the data
//! is only reached through it (or through `&mut self`/`self`, when no guard can exist). There is
//! no poisoning: a panic while the guard is held unlocks as the guard drops (Go has no
//! poisoning).

mod raw;
mod spin;
#[cfg(all(test, loom))]
pub(crate) use raw::stats;
#[cfg(all(test, not(loom)))]
mod tests;

use raw::{LockOp, RawMutex};
use spin::Spin;
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A mutual exclusion lock holding the data it protects (Go's `sync.Mutex`).
///
/// Waiting Gs park (they do not block their M); plain threads use
/// [`lock_blocking`](Mutex::lock_blocking). As in Go, the lock is not tied to a G or thread: a
/// guard may be moved to, and dropped by, another G (guards are `Send`). There is no poisoning.
///
/// ```
/// use goro::sync::Mutex;
/// use std::sync::Arc;
///
/// goro::run(async {
///     let counter = Arc::new(Mutex::new(0u64));
///     let hs: Vec<_> = (0..4)
///         .map(|_| {
///             let c = counter.clone();
///             goro::go(async move {
///                 for _ in 0..1000 {
///                     *c.lock().await += 1;
///                 }
///             })
///         })
///         .collect();
///     for h in hs {
///         h.await.unwrap();
///     }
///     assert_eq!(*counter.lock().await, 4000);
/// });
/// ```
pub struct Mutex<T: ?Sized> {
    raw: RawMutex,
    data: UnsafeCell<T>,
}

// SAFETY: the lock owns the `T`; moving the lock moves the `T` (`T: Send`).
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: through `&Mutex<T>` one thread at a time gets `&mut T` (the guard), which can move a
// `T` between threads: `T: Send` suffices, as for `std::sync::Mutex`.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// A new, unlocked mutex holding `value`.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(5);
    /// assert_eq!(*m.try_lock().unwrap(), 5);
    /// ```
    pub fn new(value: T) -> Mutex<T> {
        Mutex { raw: RawMutex::new(), data: UnsafeCell::new(value) }
    }

    /// A mutex on which every woken waiter counts as having waited longer than the 1 ms
    /// starvation threshold: loom has no clock, and the models need to reach starvation mode.
    #[cfg(all(test, loom))]
    pub(crate) fn new_starving(value: T) -> Mutex<T> {
        Mutex { raw: RawMutex::new_starving(), data: UnsafeCell::new(value) }
    }

    /// The state word, for the loom models' final checks.
    #[cfg(all(test, loom))]
    pub(crate) fn raw_state(&self) -> usize {
        self.raw.state()
    }

    /// Consumes the mutex and returns the data.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(vec![1]);
    /// m.try_lock().unwrap().push(2);
    /// assert_eq!(m.into_inner(), [1, 2]);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks (Go's `Lock`): waits until no one else holds the mutex, then returns a guard that
    /// unlocks when dropped (Go's `Unlock`).
    ///
    /// Fairness is Go's: usually a running locker may take the lock ahead of queued waiters (it
    /// may spin for a few microseconds first, under Go's conditions: another P is running and
    /// its own P has nothing else to run), but a waiter that has waited more than 1 ms switches
    /// the mutex to starvation mode, where the lock goes to waiters in queue order. No waiter
    /// starves.
    ///
    /// Cancellation: the future may be dropped at any point. If it is queued, it leaves the
    /// queue. If it had been woken to compete for the lock, it passes that wake-up on to the
    /// next waiter. If the lock had already been handed to it (starvation mode), it unlocks
    /// again, handing the lock on in turn. So a dropped `lock()` never leaves the mutex held and
    /// never loses a wake-up; the waiters behind it are not delayed. (A future that is leaked,
    /// neither polled to completion nor dropped, after being woken or handed the lock, does
    /// hold up the others, as a leaked guard would.)
    ///
    /// ```
    /// goro::run(async {
    ///     let m = goro::sync::Mutex::new(1);
    ///     *m.lock().await += 1;
    ///     assert_eq!(*m.lock().await, 2);
    /// });
    /// ```
    pub fn lock(&self) -> Lock<'_, T> {
        Lock { lock: self, op: None }
    }

    /// Locks, blocking the calling thread: [`lock`](Mutex::lock) for plain threads. Called from
    /// a G it blocks the whole M: use `lock().await` there.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(0);
    /// *m.lock_blocking() = 3;
    /// assert_eq!(*m.lock_blocking(), 3);
    /// ```
    #[track_caller]
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        goro_runtime::__private::block_on_thread_for("`mutex.lock().await`", Lock { lock: self, op: None })
    }

    /// Locks if no one holds the mutex (Go's `TryLock`); never waits. As in Go it may take the
    /// lock ahead of queued waiters, except in starvation mode, where the lock belongs to them.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(());
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.raw.try_lock().then(|| MutexGuard { lock: self })
    }

    /// The data, through `&mut self` (no guard can exist).
    ///
    /// ```
    /// let mut m = goro::sync::Mutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(*m.try_lock().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Mutex<T> {
        Mutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// Holds the [`Mutex`] locked; dereferences to the data; unlocks when dropped.
#[must_use = "the mutex unlocks as soon as the guard is dropped"]
pub struct MutexGuard<'a, T: ?Sized> {
    lock: &'a Mutex<T>,
}

// SAFETY: the guard gives `&mut T`; sending it to another thread moves that access (`T: Send`);
// the lock is not tied to a thread (Go's rule too: any goroutine may unlock).
unsafe impl<T: ?Sized + Send> Send for MutexGuard<'_, T> {}
// SAFETY: `&MutexGuard` only gives `&T` (`T: Sync`).
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard holds locked (an associated function, as `parking_lot`'s, so it
    /// does not shadow a method of `T`). [`Cond::wait`](crate::Cond::wait) uses it to lock the
    /// same mutex again.
    ///
    /// ```
    /// use goro::sync::{Mutex, MutexGuard};
    /// let m = Mutex::new(1);
    /// let g = m.lock_blocking();
    /// assert!(std::ptr::eq(MutexGuard::mutex(&g), &m));
    /// ```
    pub fn mutex(guard: &Self) -> &'a Mutex<T> {
        guard.lock
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a guard exists only while it holds the lock, which excludes every other
        // guard (module docs, Invariants), so no other reference to the data exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.raw.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

/// The future of [`Mutex::lock`]: resolves to the guard.
///
/// Cancel-safe: dropping it never leaves the mutex held and never loses a wake-up.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Lock<'a, T: ?Sized> {
    lock: &'a Mutex<T>,
    /// The slow path's state (wait-list node, Go's `lockSlow` locals): made in place only when
    /// the fast path fails, so an uncontended or barging lock neither builds nor drops a node.
    /// Between an unlock and the next lock of a hot loop that is all there is; a node written
    /// and copied there each time kept the lock free longer and handed it to the other thread
    /// more often (W10).
    op: Option<LockOp>,
}

impl<'a, T: ?Sized> Future for Lock<'a, T> {
    type Output = MutexGuard<'a, T>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let lock = this.lock;
        match &mut this.op {
            // SAFETY: `op` is pinned inside this future (made in place by `poll_new`) and always
            // used with this mutex.
            Some(op) => unsafe { op.poll(&lock.raw, cx) }.map(|()| MutexGuard { lock }),
            None => {
                // A yield point: if sysmon asked this G to yield, do so before trying the lock
                // (nothing is held or queued yet, so the future stays cancel-safe).
                std::task::ready!(goro_runtime::coop::poll_proceed(cx));
                // Go's fast path, inlined as Go's is: grab an unlocked mutex.
                match lock.raw.lock_fast() {
                    Ok(()) => Poll::Ready(MutexGuard { lock }),
                    // SAFETY: `this` is pinned (we were given it so).
                    Err(seen) => unsafe { this.poll_new(seen, cx) },
                }
            }
        }
    }
}

impl<'a, T: ?Sized> Lock<'a, T> {
    /// The rest of a first [`poll`](Future::poll), whose fast path failed, having seen the state
    /// `seen`: spin and compete (Go's `lockSlow`) still without a node, and make one in place
    /// only to queue.
    ///
    /// # Safety
    /// `self` is pinned: it does not move until it is dropped.
    #[inline(never)]
    unsafe fn poll_new(&mut self, seen: usize, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        let lock = self.lock;
        let mut spin = Spin::new(false);
        if lock.raw.spin_or_take(&mut spin, seen) {
            return Poll::Ready(MutexGuard { lock });
        }
        let op = self.op.insert(LockOp::new());
        // SAFETY: `op` was just made in place inside this pinned future (our caller's
        // contract), where it stays, and is always used with this mutex.
        unsafe { op.poll_first(&lock.raw, spin, cx) }.map(|()| MutexGuard { lock })
    }
}

impl<T: ?Sized> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        if let Some(op) = &mut self.op {
            // SAFETY: dropped in place (pinned until now); the same mutex as every poll.
            unsafe { op.cancel(&self.lock.raw) }
        }
    }
}

impl<T: ?Sized> fmt::Debug for Lock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").finish_non_exhaustive()
    }
}
