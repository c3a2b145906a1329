//! The one place this crate gets its synchronization primitives from.
//!
//! Under `--cfg loom` everything here is loom's model-checked version; otherwise it is std's
//! atomics and threads, and parking_lot's `Mutex`/`Condvar` behind the same small API (whose
//! `Mutex` tells sysmon when its thread waits for a lock that is taken: `current::lock_wait`). No other
//! module imports atomics, locks, cells or threads directly, so every piece of the scheduler can
//! be run inside `loom::model`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};

pub(crate) use std::sync::atomic::Ordering;

/// Threads: `spawn` through a builder (name, stack size), `JoinHandle`, `yield_now`.
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Builder, JoinHandle, Thread};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, yield_now, Builder, JoinHandle, Thread};
}

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`), so loom can track accesses.
#[cfg(loom)]
pub use loom::cell::UnsafeCell;

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`), so loom can track accesses.
#[cfg(not(loom))]
#[derive(Debug)]
pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `data`.
    pub const fn new(data: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(data))
    }

    /// Runs `f` with a shared pointer to the contents.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a mutable pointer to the contents.
    #[inline(always)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A mutex whose `lock` cannot fail (poisoning is ignored: goro's internal locks are never held
/// across user code).
#[derive(Debug, Default)]
pub struct Mutex<T>(#[cfg(loom)] loom::sync::Mutex<T>, #[cfg(not(loom))] parking_lot::Mutex<T>);

/// The guard of [`Mutex`].
#[cfg(loom)]
pub type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;
/// The guard of [`Mutex`].
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    /// A new, unlocked mutex.
    #[cfg(loom)]
    pub fn new(value: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(value))
    }

    /// A new, unlocked mutex; `const` outside loom, so a type built on it can have a
    /// `const fn new` (`static` items).
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Mutex<T> {
        Mutex(parking_lot::Mutex::new(value))
    }

    /// The data, through `&mut` (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        #[cfg(loom)]
        return self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        #[cfg(not(loom))]
        return self.0.get_mut();
    }

    /// Locks, blocking the thread; a wait for a lock that is taken shows as a wait in goro's
    /// own locks on the P this thread holds (`current::lock_wait`: sysmon does not take it for
    /// a blocking call of the user's).
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(loom)]
        return self.0.lock().unwrap_or_else(|e| e.into_inner());
        #[cfg(not(loom))]
        return match self.0.try_lock() {
            Some(guard) => guard,
            None => self.lock_contended(),
        };
    }

    #[cfg(not(loom))]
    #[cold]
    fn lock_contended(&self) -> MutexGuard<'_, T> {
        crate::current::lock_wait(|| self.0.lock())
    }

    /// Locks if nobody holds the lock, without waiting.
    #[inline]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        #[cfg(loom)]
        return match self.0.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        #[cfg(not(loom))]
        return self.0.try_lock();
    }
}

/// Adds to an owner-written counter without a read-modify-write instruction (`p` re-exports it).
pub(crate) use crate::current::bump;

/// A condition variable over [`Mutex`]; `wait` takes the guard by `&mut` as parking_lot does.
#[derive(Debug, Default)]
pub(crate) struct Condvar(#[cfg(loom)] loom::sync::Condvar, #[cfg(not(loom))] parking_lot::Condvar);

impl Condvar {
    pub(crate) fn new() -> Condvar {
        #[cfg(loom)]
        return Condvar(loom::sync::Condvar::new());
        #[cfg(not(loom))]
        return Condvar(parking_lot::Condvar::new());
    }

    #[cfg(not(loom))]
    pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        self.0.wait(guard);
    }

    /// Waits at most `timeout`; spurious wake-ups are allowed, as for any condvar.
    #[cfg(not(loom))]
    pub(crate) fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, timeout: std::time::Duration) {
        self.0.wait_for(guard, timeout);
    }

    #[cfg(loom)]
    pub(crate) fn wait<'a, T>(&self, guard: &mut MutexGuard<'a, T>) {
        // loom's `wait` consumes the guard; swap a re-acquired one back in its place.
        take_mut(guard, |g| self.0.wait(g).unwrap_or_else(|e| e.into_inner()));
    }

    /// Loom has no timed waits: a timed wait is modeled as an untimed one that may also wake
    /// spuriously, which is all the callers rely on.
    #[cfg(loom)]
    pub(crate) fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, _timeout: std::time::Duration) {
        self.wait(guard);
    }

    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }
}

#[cfg(loom)]
fn take_mut<T>(slot: &mut T, f: impl FnOnce(T) -> T) {
    // SAFETY: `slot` is read out and written back before anyone else can observe it; if `f`
    // panics the process aborts (the guard below), so the moved-out value is never used twice.
    unsafe {
        struct Abort;
        impl Drop for Abort {
            fn drop(&mut self) {
                std::process::abort();
            }
        }
        let bomb = Abort;
        let old = std::ptr::read(slot);
        std::ptr::write(slot, f(old));
        std::mem::forget(bomb);
    }
}
