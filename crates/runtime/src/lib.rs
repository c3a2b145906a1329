//! goro-runtime: the G/M/P work-stealing scheduler of [goro](https://docs.rs/goro-rt).
//!
//! A **G** is a spawned future with a goroutine's header (id, state, spawn location); its
//! `Waker` is the G itself. A **P** is the right to run Gs: it owns a 256-slot local run queue
//! and a `runnext` slot, and there are exactly `max_procs` of them. An **M** is an OS thread that
//! runs Gs while it holds a P; idle Ms sleep and are reused. The algorithms are Go's (see
//! `src/runtime/proc.go`), and so are many names, for readers who know Go's runtime:
//! `runqput`, `runqget`, `runqsteal`, `findrunnable`, `wakep`, `startm`, `stopm`, `handoffp`,
//! `gfput`/`gfget`.
//!
//! Most users depend on the facade, the package `goro-rt` (its library is `goro`), which
//! re-exports this one.
//!
//! ```
//! let rt = goro_runtime::Builder::new().max_procs(2).build().unwrap();
//! let sum = rt.block_on(async {
//!     let hs: Vec<_> = (1..=4).map(|i| goro_runtime::go(async move { i })).collect();
//!     let mut sum = 0;
//!     for h in hs {
//!         sum += h.await.unwrap();
//!     }
//!     sum
//! });
//! assert_eq!(sum, 10);
//! ```
//!
//! # Layout
//! - `g`: the G object (`raw`), its lifecycle word (`state`), waker, `JoinHandle`, the
//!   all-Gs list (`allgs`) and the free lists of G memory (`gfree`).
//! - `p`: a P and its owner-only state; `runq`: a P's lock-free ring; `globrunq`: the global
//!   queue; `sched`: the shared scheduler state (`newproc`, `ready`, `runqput`, `wakep`,
//!   `startm`, `handoffp`); `m`: an M's loop (`schedule`, `findrunnable`, `stopm`,
//!   `execute`); `context`: which M and P the current thread is.
//! - `syscall`: `entersyscall`/`exitsyscall`; `sysmon`: the monitor thread (retake, preemption
//!   requests, the blocked-poll hand-off, fairness turns); `coop`: cooperative preemption.
//! - `timer`: the per-P timer heaps; `time`: `sleep` and the raw timer on them; `netpoll`: the
//!   mio poller; `io`: registrations for `goro::net`.
//! - `runtime`: `Builder`, `Runtime`, `run`, `go`; `entry`: how `#[goro::main]` runs main;
//!   `block_on_thread`: the `*_blocking` calls; `yield_now`; `metrics`; `config`: the builder's
//!   settings and the environment knobs; `park`: thread parking.
//! - Diagnostics: `traceback`: a G's row of the dump (`goroutines`, `dump`); `checkdead`: the
//!   deadlock detection (quiescence, then the census of the process's threads); `panics`: the
//!   panic hook that keeps a G's panic for its `JoinHandle` or prints it as Go does; `fatal`:
//!   the one way a run ends with a report (a deadlock, an unhandled panic); `sigquit`: the
//!   SIGQUIT dump.
//! - `loom`: the synchronization shim that lets loom model-check all of the above
//!   (`loom_tests`); `model` (under `--cfg loom`): `goro::model`, which model-checks a user's
//!   program without the scheduler (each G a loom thread, time virtual).

#![warn(missing_docs)]
// Under loom there is no sysmon thread and no I/O (no mio): models call the parts they check
// directly, and the rest is unused there. The normal build still reports dead code.
#![cfg_attr(loom, allow(dead_code))]

mod block_on_thread;
mod checkdead;
mod config;
mod context;
pub mod coop;
#[doc(hidden)]
pub mod entry;
#[doc(hidden)]
pub mod fatal;
mod g;
mod globrunq;
#[cfg(not(loom))]
pub mod io;
mod loom;
mod m;
mod metrics;
#[cfg(loom)]
mod model;
mod netpoll;
mod p;
mod panics;
mod park;
mod runq;
mod runtime;
mod sched;
mod sigquit;
mod syscall;
mod sysmon;
pub mod time;
mod timer;
mod traceback;
mod yield_now;

#[cfg(all(test, loom))]
mod loom_tests;

pub use block_on_thread::{block_on_thread, block_on_thread_for};
#[cfg(loom)]
pub use model::model;
pub use syscall::syscall;

/// The loom-or-std cell and mutex that goro's crates share (one copy of the shim: each crate's
/// `loom.rs` re-exports these). Not part of the public API.
#[doc(hidden)]
pub mod shim {
    pub use crate::loom::{Mutex, MutexGuard, UnsafeCell};
}
pub use g::{JoinError, JoinHandle, WaitReason, HEADER_SIZE};
pub use metrics::Metrics;
pub use panics::UnhandledPanic;
pub use runtime::{
    current_proc_index, dump, go, goroutines, max_procs, metrics, num_goroutine, run, set_wait_reason, Builder, Runtime,
};
pub use sigquit::dump_on_sigquit;
pub use traceback::{Goroutine, GoroutineStatus};
pub use yield_now::{yield_now, YieldNow};
