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

/// Only the loom stand-in of the map's reclaimer (`map/reclaim.rs`) fences.
#[cfg(loom)]
pub(crate) use loom::sync::atomic::fence;

pub(crate) use std::sync::atomic::Ordering;

/// `Arc`: loom's under `--cfg loom` (so a model also checks that nothing leaks), std's otherwise.
#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

/// `UnsafeCell` with loom's closure API, and a mutex whose `lock` cannot fail (`const fn new`
/// outside loom): goro-runtime's shim, shared by every goro crate.
pub(crate) use goro_runtime::shim::{Mutex, MutexGuard, UnsafeCell};
