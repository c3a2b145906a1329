//! goro-sync: Go's `sync` package for Rust (re-exported as `goro::sync`).
//!
//! Every type works for Gs on goro (async methods), for tasks on other executors (the same
//! async methods: they only use `Waker`s), and for plain threads (the `*_blocking` methods).
//! Waiting never spins for long and never allocates: a waiter is a node inside its pinned
//! future, queued on the type's [wait list](waitlist).

#![warn(missing_docs)]

#[allow(unused_imports)] // the types that land next use the rest
mod loom;
#[allow(dead_code)] // used by the types that land next
mod waitlist;
