//! The one place this crate gets its synchronization primitives from: loom's under
//! `--cfg loom`, std's otherwise (the same pattern as goro-runtime's and
//! goro-chan's shims). No other module imports atomics, locks or cells directly, so every
//! primitive here can be model-checked.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicPtr;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicPtr;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};

/// Only the loom stand-in of the map's reclaimer (`map/reclaim/model.rs`) fences.
#[cfg(loom)]
pub(crate) use loom::sync::atomic::fence;

pub(crate) use std::sync::atomic::Ordering;

/// `Arc`: loom's under `--cfg loom` (so a model also checks that nothing leaks), std's otherwise.
#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

/// A cell loom does not track, for memory that is borrowed beyond a closure (a map entry's inline
/// value slot, read by reference for as long as an epoch guard lives, like a boxed slot): the
/// model checks its accesses by other means (the slot's `Tracked`, see `map/reclaim/tracked.rs`).
pub(crate) use std::cell::UnsafeCell as UntrackedUnsafeCell;

/// `UnsafeCell` with loom's closure API, and a mutex whose `lock` cannot fail (`const fn new`
/// outside loom): goro-runtime's shim, shared by every goro crate.
pub(crate) use goro_runtime::__private::shim::{Mutex, MutexGuard, UnsafeCell};

/// Locks `mu` from code that may run in a G, where the lock can be held for long by another
/// thread (a `Once`'s action, a map shard's copy of a large table): if it is held, the wait is a
/// blocking call as in [`goro::syscall`](goro_runtime::syscall), so the runtime hands this G's P to
/// another thread after a sysmon tick and the Gs queued behind it run. Go's waiter parks only
/// its G; here the method is synchronous (as Go's `Do`, `Load`, `Store` are), so the thread
/// waits, but the P does not.
///
/// Without this, the waiting thread looked to sysmon like a G stuck in a plain blocking call:
/// its P went to another M only after a whole time slice, with a report telling the user to wrap
/// a blocking call of theirs in `goro::syscall`, which they had not made.
///
/// Uncontended it costs what `lock` does (one CAS); contended, two more atomic operations on
/// this M's P (`entersyscall`, `exitsyscall`). Under loom it is `lock`: a model has no sysmon,
/// and loom runs the other threads while this one waits.
#[inline]
pub(crate) fn lock_as_syscall<T>(mu: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(loom)]
    return mu.lock();
    #[cfg(not(loom))]
    match mu.try_lock() {
        Some(guard) => guard,
        None => lock_contended(mu),
    }
}

#[cfg(not(loom))]
#[cold]
fn lock_contended<T>(mu: &Mutex<T>) -> MutexGuard<'_, T> {
    goro_runtime::syscall(|| mu.lock())
}
