//! [`RwMutex<T>`]: Go's `sync.RWMutex`, holding the data it protects as Rust locks do.
//!
//! # Design
//!
//! The lock is a [`Semaphore`] of [`MAX_READERS`] permits (tokio's `RwLock` design): a read lock
//! takes one permit, a write lock takes all of them. The semaphore's FIFO order, with no barging
//! past a waiter, gives exactly Go's writer preference:
//!
//! - a writer that waits (for the readers inside to leave) blocks every reader that comes after
//!   it, so a stream of readers cannot starve a writer (Go: `readerCount` goes negative);
//! - when a writer unlocks, the readers queued behind it are granted together, up to the next
//!   queued writer, and that writer then waits for them (Go: `Unlock` releases the readers that
//!   arrived while it held the lock before the next writer gets `w`).
//!
//! Go's own algorithm (`readerCount`/`readerWait` and two runtime semaphores) was not ported: a
//! reader or writer that gives up half-way (a dropped future) would have to undo its announcement
//! in `readerCount` and `readerWait` while others act on it, which Go never has to do. On the
//! semaphore, giving up is the semaphore's cancellation, already loom-checked: a dropped lock
//! future leaves the queue (letting readers behind a cancelled writer in) or returns its grant.
//!
//! Read locks use the semaphore's lock-free path while no one is queued, so uncontended readers
//! only do a CAS, like Go's `atomic.AddInt32`.
//!
//! # Invariants
//!
//! A read guard exists only while its one permit is held, a write guard only while all
//! `MAX_READERS` are: so while a write guard exists there is no other guard, and the data is
//! only reached through guards (or through `&mut self`/`self`, when no guard can exist).
//!
//! There is no poisoning: a panic while a guard is held releases the lock as the guard drops
//! (Go has no poisoning either); the data is left as the panicking code left it.

use crate::semaphore::{AcquireOp, Contention, Semaphore};
use goro_runtime::WaitReason;
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The number of permits of the semaphore: the most readers at once (Go's `rwmutexMaxReaders`).
const MAX_READERS: usize = 1 << 30;

/// A reader/writer lock: any number of readers or one writer (Go's `sync.RWMutex`).
///
/// Writers are preferred as in Go: once a writer waits, new readers queue behind it, and the
/// readers that queued while a writer held the lock get in before the next writer. Waiting Gs
/// park (they do not block their M); plain threads use the `*_blocking` methods.
///
/// As in Go, a reader must not take a second read lock while it holds one (a writer queued in
/// between would deadlock both), and the lock is not tied to a G or thread: a guard may be
/// dropped by another G. There is no poisoning: a panic with a guard held just unlocks.
///
/// ```
/// use goro::sync::RwMutex;
/// use std::sync::Arc;
///
/// goro::run(async {
///     let config = Arc::new(RwMutex::new(String::from("v1")));
///     let c = config.clone();
///     goro::go(async move { c.write().await.push_str("+patch") }).await.unwrap();
///     let readers: Vec<_> = (0..4)
///         .map(|_| {
///             let c = config.clone();
///             goro::go(async move { c.read().await.len() })
///         })
///         .collect();
///     for r in readers {
///         assert_eq!(r.await.unwrap(), 8);
///     }
/// });
/// ```
pub struct RwMutex<T: ?Sized> {
    sem: Semaphore,
    data: UnsafeCell<T>,
}

// SAFETY: the lock owns the `T`; moving the lock to another thread moves the `T` (`T: Send`).
unsafe impl<T: ?Sized + Send> Send for RwMutex<T> {}
// SAFETY: through `&RwMutex<T>`, several threads may get `&T` at once (read guards: `T: Sync`),
// and one at a time `&mut T` (a write guard), which can move a `T` between threads (`T: Send`).
unsafe impl<T: ?Sized + Send + Sync> Sync for RwMutex<T> {}

impl<T> RwMutex<T> {
    /// A new, unlocked lock holding `value`.
    ///
    /// ```
    /// let m = goro::sync::RwMutex::new(5);
    /// assert_eq!(*m.try_read().unwrap(), 5);
    /// ```
    pub fn new(value: T) -> RwMutex<T> {
        RwMutex { sem: Semaphore::new(MAX_READERS), data: UnsafeCell::new(value) }
    }

    /// Consumes the lock and returns the data (no guard can exist: the lock is owned).
    ///
    /// ```
    /// let m = goro::sync::RwMutex::new(vec![1]);
    /// m.try_write().unwrap().push(2);
    /// assert_eq!(m.into_inner(), [1, 2]);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwMutex<T> {
    /// Locks for reading (Go's `RLock`): waits while a writer holds the lock or waits for it, then
    /// returns a guard that unlocks when dropped (Go's `RUnlock`).
    ///
    /// Cancellation: dropping the future before it completes leaves the queue (letting the Gs
    /// behind it in if they can now enter) or, if the read lock was already granted to it, unlocks
    /// again; no wake-up is lost and the lock is never left held.
    ///
    /// ```
    /// goro::run(async {
    ///     let m = goro::sync::RwMutex::new(1);
    ///     let (a, b) = (m.read().await, m.read().await); // readers share
    ///     assert_eq!(*a + *b, 2);
    /// });
    /// ```
    pub fn read(&self) -> ReadLock<'_, T> {
        ReadLock { lock: self, op: AcquireOp::new() }
    }

    /// Locks for writing (Go's `Lock`): waits until no reader or writer holds the lock, then
    /// returns a guard that unlocks when dropped (Go's `Unlock`).
    ///
    /// Cancellation: as for [`read`](RwMutex::read). A writer that gives up while readers are
    /// queued behind it lets them in.
    ///
    /// ```
    /// goro::run(async {
    ///     let m = goro::sync::RwMutex::new(1);
    ///     *m.write().await += 1;
    ///     assert_eq!(*m.read().await, 2);
    /// });
    /// ```
    pub fn write(&self) -> WriteLock<'_, T> {
        WriteLock { lock: self, op: AcquireOp::new() }
    }

    /// Locks for reading, blocking the calling thread: [`read`](RwMutex::read) for plain
    /// threads. Called from a G it blocks the whole M: use `read().await` there.
    ///
    /// ```
    /// let m = goro::sync::RwMutex::new("hi");
    /// assert_eq!(*m.read_blocking(), "hi");
    /// ```
    #[track_caller]
    pub fn read_blocking(&self) -> RwMutexReadGuard<'_, T> {
        goro_runtime::__private::block_on_thread_for("`rw.read().await`", self.read())
    }

    /// Locks for writing, blocking the calling thread: [`write`](RwMutex::write) for plain
    /// threads. Called from a G it blocks the whole M: use `write().await` there.
    ///
    /// ```
    /// let m = goro::sync::RwMutex::new(0);
    /// *m.write_blocking() = 3;
    /// assert_eq!(*m.read_blocking(), 3);
    /// ```
    #[track_caller]
    pub fn write_blocking(&self) -> RwMutexWriteGuard<'_, T> {
        goro_runtime::__private::block_on_thread_for("`rw.write().await`", self.write())
    }

    /// Takes a read lock if that is possible without waiting (Go's `TryRLock`): `None` while a
    /// writer holds the lock or anybody is queued for it.
    ///
    /// ```
    /// let m = goro::sync::RwMutex::new(0);
    /// let r = m.try_read().unwrap();
    /// assert!(m.try_read().is_some());
    /// assert!(m.try_write().is_none());
    /// drop(r);
    /// ```
    pub fn try_read(&self) -> Option<RwMutexReadGuard<'_, T>> {
        // `then`, not `then_some`: a guard built eagerly on failure would "unlock" as it drops.
        self.sem.try_acquire(1).then(|| RwMutexReadGuard { lock: self })
    }

    /// Takes the write lock if that is possible without waiting (Go's `TryLock`): `None` while
    /// anybody holds the lock or is queued for it.
    ///
    /// ```
    /// let m = goro::sync::RwMutex::new(0);
    /// let w = m.try_write().unwrap();
    /// assert!(m.try_read().is_none());
    /// drop(w);
    /// assert!(m.try_read().is_some());
    /// ```
    pub fn try_write(&self) -> Option<RwMutexWriteGuard<'_, T>> {
        // `then`, not `then_some` (see `try_read`).
        self.sem.try_acquire(MAX_READERS).then(|| RwMutexWriteGuard { lock: self })
    }

    /// The data, through a unique borrow of the lock: no locking needed (no guard can exist).
    ///
    /// ```
    /// let mut m = goro::sync::RwMutex::new(1);
    /// *m.get_mut() += 1;
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for RwMutex<T> {
    /// An unlocked lock holding `T::default()`.
    fn default() -> RwMutex<T> {
        RwMutex::new(T::default())
    }
}

impl<T> From<T> for RwMutex<T> {
    fn from(value: T) -> RwMutex<T> {
        RwMutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwMutex<T> {
    /// Shows the data if a read lock can be had without waiting, `<locked>` otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwMutex");
        match self.try_read() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// A read lock of an [`RwMutex`]: shared access to the data; unlocks when dropped.
#[must_use = "if unused the RwMutex unlocks at once"]
pub struct RwMutexReadGuard<'a, T: ?Sized> {
    lock: &'a RwMutex<T>,
}

// SAFETY: the guard only gives `&T` (so another thread may use it if `T: Sync`), and unlocking
// from another thread is fine: the semaphore is not tied to a thread.
unsafe impl<T: ?Sized + Sync> Send for RwMutexReadGuard<'_, T> {}
// SAFETY: `&guard` gives only `&T`.
unsafe impl<T: ?Sized + Sync> Sync for RwMutexReadGuard<'_, T> {}

impl<T: ?Sized> Deref for RwMutexReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds a read permit, so no write guard (the only source of `&mut T`)
        // exists until it drops, and `&mut self` methods of the lock cannot run while it borrows it.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwMutexReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.sem.release_as(1, Contention::Mutex);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwMutexReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwMutexReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

/// The write lock of an [`RwMutex`]: exclusive access to the data; unlocks when dropped.
#[must_use = "if unused the RwMutex unlocks at once"]
pub struct RwMutexWriteGuard<'a, T: ?Sized> {
    lock: &'a RwMutex<T>,
}

// SAFETY: the guard gives `&mut T` to one thread at a time (it is exclusive), as a `MutexGuard`
// does: moving it moves access to the `T` (`T: Send`). Unlocking from any thread is fine.
unsafe impl<T: ?Sized + Send> Send for RwMutexWriteGuard<'_, T> {}
// SAFETY: `&guard` gives only `&T`, possibly to several threads at once (`T: Sync`).
unsafe impl<T: ?Sized + Sync> Sync for RwMutexWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwMutexWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds every permit: no other guard exists until it drops.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwMutexWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and `&mut self` makes this borrow the only one through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwMutexWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.sem.release_as(MAX_READERS, Contention::Mutex);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwMutexWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwMutexWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

/// The future of [`RwMutex::read`]: resolves to a read guard.
///
/// Cancel-safe: dropping it never leaves the lock held and never loses a wake-up.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct ReadLock<'a, T: ?Sized> {
    lock: &'a RwMutex<T>,
    op: AcquireOp,
}

impl<'a, T: ?Sized> Future for ReadLock<'a, T> {
    type Output = RwMutexReadGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RwMutexReadGuard<'a, T>> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let lock = this.lock;
        // SAFETY: `op` is pinned inside this future and always used with this lock's semaphore
        // and weight 1 (<= MAX_READERS).
        let ready = unsafe { this.op.poll(&lock.sem, 1, WaitReason::SyncRwMutexRLock, cx) };
        ready.map(|()| RwMutexReadGuard { lock })
    }
}

impl<T: ?Sized> Drop for ReadLock<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropped in place; same semaphore and weight as every poll.
        unsafe { self.op.cancel(&self.lock.sem, 1) }
    }
}

impl<T: ?Sized> fmt::Debug for ReadLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadLock").finish_non_exhaustive()
    }
}

/// The future of [`RwMutex::write`]: resolves to the write guard.
///
/// Cancel-safe: dropping it never leaves the lock held and never loses a wake-up.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct WriteLock<'a, T: ?Sized> {
    lock: &'a RwMutex<T>,
    op: AcquireOp,
}

impl<'a, T: ?Sized> Future for WriteLock<'a, T> {
    type Output = RwMutexWriteGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RwMutexWriteGuard<'a, T>> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        let lock = this.lock;
        // SAFETY: `op` is pinned inside this future and always used with this lock's semaphore
        // and weight MAX_READERS (its size).
        let ready = unsafe { this.op.poll(&lock.sem, MAX_READERS, WaitReason::SyncRwMutexLock, cx) };
        ready.map(|()| RwMutexWriteGuard { lock })
    }
}

impl<T: ?Sized> Drop for WriteLock<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropped in place; same semaphore and weight as every poll.
        unsafe { self.op.cancel(&self.lock.sem, MAX_READERS) }
    }
}

impl<T: ?Sized> fmt::Debug for WriteLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteLock").finish_non_exhaustive()
    }
}
