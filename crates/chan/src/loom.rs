//! The one place this crate gets its synchronization primitives from: loom's under
//! `--cfg loom`, std's and parking_lot's otherwise (see goro-runtime's shim for the pattern).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`), so loom can track accesses.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(data: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(data))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A lock with explicit `lock`/`unlock` (no guard), so `select` can hold the locks of several
/// channels at once, taken in address order.
///
/// parking_lot's raw mutex outside loom (spins briefly, then parks); under loom a spin lock on a
/// loom atomic, which loom explores like any other race.
pub(crate) struct RawLock(#[cfg(not(loom))] parking_lot::RawMutex, #[cfg(loom)] loom::sync::atomic::AtomicBool);

impl RawLock {
    pub(crate) fn new() -> RawLock {
        #[cfg(not(loom))]
        return RawLock(<parking_lot::RawMutex as parking_lot::lock_api::RawMutex>::INIT);
        #[cfg(loom)]
        return RawLock(loom::sync::atomic::AtomicBool::new(false));
    }

    #[inline]
    pub(crate) fn lock(&self) {
        #[cfg(not(loom))]
        parking_lot::lock_api::RawMutex::lock(&self.0);
        #[cfg(loom)]
        while self.0.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            loom::thread::yield_now();
        }
    }

    /// # Safety
    /// The calling thread holds the lock.
    #[inline]
    pub(crate) unsafe fn unlock(&self) {
        #[cfg(not(loom))]
        // SAFETY: caller contract.
        unsafe {
            parking_lot::lock_api::RawMutex::unlock(&self.0)
        };
        #[cfg(loom)]
        self.0.store(false, Ordering::Release);
    }
}

/// Parking the current thread (for the `*_blocking` operations).
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, Thread};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, Thread};
}
