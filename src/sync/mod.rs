//! Go's `sync` package (and `golang.org/x/sync`'s `errgroup` and `semaphore`):
//! [`WaitGroup`], [`Mutex`], [`RwMutex`], [`Cond`], [`Once`], [`Pool`], and x/sync's two
//! packages as modules of their own, as Go has them: [`errgroup::Group`] and the weighted
//! [`semaphore::Semaphore`]. Waiting Gs park instead of blocking their M; plain
//! threads use the `*_blocking` methods; every future is cancel-safe. [`Map`] is Go's classic
//! read-mostly concurrent map (`sync.Map`).
//!
//! The futures of the async methods are in [`futures`], out of reach of `use goro::sync::*`
//! (which would otherwise bring names such as `Wait` and `Lock` into scope).
//!
//! `Mutex`, `MutexGuard` and `Once` are Go's names, and std's too: with `use goro::sync::*`
//! and `use std::sync::*` both in scope, each use of them is ambiguous (rustc warns, and will
//! refuse). Glob one of the two at most, and name the rest: `use goro::sync::*; use
//! std::sync::Arc;`.

pub use goro_sync::futures;
pub use goro_sync::Map;
pub use goro_sync::{Cond, Mutex, MutexGuard, Once, Pool, RwMutex, RwMutexReadGuard, RwMutexWriteGuard, WaitGroup};

pub mod errgroup;

/// Go's `golang.org/x/sync/semaphore`: the weighted [`Semaphore`] (Go's `semaphore.Weighted`,
/// made by `semaphore.NewWeighted(n)`), and the permits that give its units back when dropped.
///
/// ```
/// use goro::sync::semaphore::Semaphore;
///
/// goro::run(async {
///     let sem = Semaphore::new(3); // sem := semaphore.NewWeighted(3)
///     sem.acquire(2).await; // sem.Acquire(ctx, 2)
///     assert!(!sem.try_acquire(2)); // one unit left
///     sem.release(2); // sem.Release(2)
///     let permit = sem.acquire_guard(3).await; // released when dropped
///     drop(permit);
///     assert!(sem.try_acquire(3));
/// });
/// ```
///
/// The futures of `acquire`, `acquire_guard` and `acquire_owned` are in [`futures`].
pub mod semaphore {
    pub use goro_sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
}

#[doc(hidden)]
#[deprecated(note = "moved to goro::sync::semaphore::Semaphore")]
pub type Semaphore = semaphore::Semaphore;

#[doc(hidden)]
#[deprecated(note = "moved to goro::sync::semaphore::SemaphorePermit")]
pub type SemaphorePermit<'a> = semaphore::SemaphorePermit<'a>;

#[doc(hidden)]
#[deprecated(note = "moved to goro::sync::semaphore::OwnedSemaphorePermit")]
pub type OwnedSemaphorePermit = semaphore::OwnedSemaphorePermit;
