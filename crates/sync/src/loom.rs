//! The one place this crate gets its synchronization primitives from: loom's under
//! `--cfg loom`, std's and parking_lot's otherwise (the same pattern as goro-runtime's and
//! goro-chan's shims). No other module imports atomics, locks or cells directly, so every
//! primitive here can be model-checked.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// `Arc`: loom's under `--cfg loom` (so a model also checks that nothing leaks), std's otherwise.
#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`), so loom can track accesses.
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

/// A mutex whose `lock` cannot fail (poisoning is ignored: the crate's internal locks are never
/// held across user code).
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(#[cfg(loom)] loom::sync::Mutex<T>, #[cfg(not(loom))] parking_lot::Mutex<T>);

#[cfg(loom)]
pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;
#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

impl<T> Mutex<T> {
    #[cfg(loom)]
    pub(crate) fn new(value: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(value))
    }

    /// `const` outside loom, so a type built on it can have a `const fn new` (`static` items).
    #[cfg(not(loom))]
    pub(crate) const fn new(value: T) -> Mutex<T> {
        Mutex(parking_lot::Mutex::new(value))
    }

    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(loom)]
        return self.0.lock().unwrap_or_else(|e| e.into_inner());
        #[cfg(not(loom))]
        return self.0.lock();
    }
}
