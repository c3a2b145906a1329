//! goro-sync: Go's `sync` package for Rust (re-exported as `goro::sync`).
//!
//! Every type works for Gs on goro (async methods), for tasks on other executors (the same
//! async methods: they only use `Waker`s), and for plain threads (the `*_blocking` methods).
//! Waiting never spins for long and never allocates: a waiter is a node inside its pinned
//! future, queued on the type's wait list (the crate's `waitlist` module).
//!
//! | Go | here |
//! |----|------|
//! | `sync.WaitGroup` | [`WaitGroup`] |
//! | `sync.Map` | [`Map`] |
//! | `sync.Mutex` | [`Mutex`] |
//! | `sync.RWMutex` | [`RwMutex`] |
//! | `sync.Once` | [`Once`] |
//! | `sync.Pool` | [`Pool`] |
//! | `sync.Cond` | [`Cond`] |
//! | `golang.org/x/sync/semaphore` | [`Semaphore`] |
//!
//! Every future here may be dropped at any await point: a dropped future never loses a wake-up
//! or a permit (each method's docs say how).
//!
//! What a finished acquire returned is the caller's to give back. Guards (`MutexGuard`, the
//! `RwMutex` guards, [`SemaphorePermit`], [`OwnedSemaphorePermit`]) give it back when dropped,
//! also when their G is aborted or their future is cancelled (by `ctx.or_done`, a timeout or a
//! `select!`). Go's pairs do not: a `Semaphore::acquire` whose `release` never runs loses its
//! permits for good, so hold permits with [`Semaphore::acquire_guard`] or
//! [`Semaphore::acquire_owned`] wherever the holder can be aborted or cancelled.

#![warn(missing_docs)]

mod cond;
mod loom;
mod map;
mod mutex;
mod once;
mod pool;
mod rwmutex;
mod semaphore;
mod waitgroup;
mod waitlist;

#[cfg(all(test, loom))]
mod loom_tests;

pub use cond::Cond;
pub use map::Map;
pub use mutex::{Mutex, MutexGuard};
pub use once::Once;
pub use pool::Pool;
pub use rwmutex::{RwMutex, RwMutexReadGuard, RwMutexWriteGuard};
pub use semaphore::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
pub use waitgroup::WaitGroup;

/// The futures the async methods return, named for code that stores them (a struct field, a
/// `Pin<Box<..>>`). They live here, not beside the types, so that `use goro::sync::*` does not
/// bring names such as `Wait` and `Lock` into scope.
pub mod futures {
    pub use crate::cond::CondWait;
    pub use crate::mutex::Lock;
    pub use crate::rwmutex::{ReadLock, WriteLock};
    pub use crate::semaphore::{Acquire, AcquireOwned, AcquirePermit};
    pub use crate::waitgroup::Wait;
}
