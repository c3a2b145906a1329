//! Go's `sync` package (and `golang.org/x/sync`'s `errgroup` and `semaphore`):
//! [`WaitGroup`], [`Mutex`], [`RwMutex`], [`Cond`], [`Once`], [`Pool`], the weighted
//! [`Semaphore`] and [`errgroup::Group`]. Waiting Gs park instead of blocking their M; plain
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
pub use goro_sync::{
    Cond, Mutex, MutexGuard, Once, OwnedSemaphorePermit, Pool, RwMutex, RwMutexReadGuard, RwMutexWriteGuard, Semaphore,
    SemaphorePermit, WaitGroup,
};

pub mod errgroup;
