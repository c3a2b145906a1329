//! [`Mutex<T>`]: Go's `sync.Mutex`, holding the data it protects as Rust locks do.
//!
//! # Design (first version)
//!
//! The lock is a one-permit [`Semaphore`]: the lock-free fast path of the semaphore is the
//! uncontended `Lock` (one CAS, like Go's `CompareAndSwapInt32(&m.state, 0, mutexLocked)`), and
//! a contended lock queues FIFO and is handed the permit directly on unlock. That is Go's
//! *starvation mode* behaviour all the time: no waiter can starve, but a G that unlocks and
//! relocks at once cannot barge past a queued waiter, so under heavy contention it pays a
//! hand-off per lock where Go's normal mode lets the running G keep the lock. Go's normal mode
//! (barging, brief spinning, the switch to hand-off after a waiter waited 1 ms) is planned; the
//! semaphore's cancellation handling, already loom-checked, is why this version came first: a
//! dropped `lock()` future leaves the queue or gives a granted lock back.
//!
//! # Invariants
//!
//! A guard exists only while the permit is held, so there is at most one guard, and the data is
//! only reached through it (or through `&mut self`/`self`, when no guard can exist). There is no
//! poisoning: a panic while the guard is held unlocks as the guard drops (Go has no poisoning).

use crate::semaphore::{AcquireOp, Semaphore};
use goro_runtime::WaitReason;
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
    sem: Semaphore,
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
        Mutex { sem: Semaphore::new(1), data: UnsafeCell::new(value) }
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
    /// Cancellation: dropping the future before it completes leaves the queue or, if the lock
    /// was already handed to it, unlocks again (passing it to the next waiter); no wake-up is
    /// lost and the lock is never left held.
    ///
    /// ```
    /// goro::run(async {
    ///     let m = goro::sync::Mutex::new(1);
    ///     *m.lock().await += 1;
    ///     assert_eq!(*m.lock().await, 2);
    /// });
    /// ```
    pub fn lock(&self) -> Lock<'_, T> {
        Lock { lock: self, op: AcquireOp::new() }
    }

    /// Locks, blocking the calling thread: [`lock`](Mutex::lock) for plain threads. Called from
    /// a G it blocks the whole M: use `lock().await` there.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(0);
    /// *m.lock_blocking() = 3;
    /// assert_eq!(*m.lock_blocking(), 3);
    /// ```
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        goro_runtime::block_on_thread(self.lock())
    }

    /// Locks if no one holds the mutex (Go's `TryLock`); never waits.
    ///
    /// ```
    /// let m = goro::sync::Mutex::new(());
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.sem.try_acquire(1).then(|| MutexGuard { lock: self })
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
// the permit is not tied to a thread.
unsafe impl<T: ?Sized + Send> Send for MutexGuard<'_, T> {}
// SAFETY: `&MutexGuard` only gives `&T` (`T: Sync`).
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the only permit, so no other reference to the data exists.
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
        self.lock.sem.release(1);
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
    op: AcquireOp,
}

impl<'a, T: ?Sized> Future for Lock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let lock = this.lock;
        // SAFETY: `op` is pinned inside this future and always used with this mutex's semaphore
        // and weight 1 (its size).
        let ready = unsafe { this.op.poll(&lock.sem, 1, WaitReason::SyncMutexLock, cx) };
        ready.map(|()| MutexGuard { lock })
    }
}

impl<T: ?Sized> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropped in place; same semaphore and weight as every poll.
        unsafe { self.op.cancel(&self.lock.sem, 1) }
    }
}

impl<T: ?Sized> fmt::Debug for Lock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").finish_non_exhaustive()
    }
}
