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
//!
//! Each protocol has one owner; the list runs from the bottom up, and a module imports only
//! modules above it in this list. The workspace's layout check
//! (`tests/extra/tests/layout/main.rs`, run by `cargo test --workspace`) fails, naming the
//! importing lines, if a change closes an import circle; the only circles it allows here are
//! inside `model`, which is loom-only.
//!
//! - `current`: the thread's one thread-local record (the current M, its P's flags, a poll's
//!   yield count and end hooks), below everything, the shim included (its mutex reports lock
//!   waits there). `yield_now`.
//! - `loom`: the synchronization shim that lets loom model-check all of this (`loom_tests`).
//!   `coop`: cooperative preemption (the yield points' question, the poll-end hooks).
//! - `park`: thread parking. `threads`: the calling thread's kernel id, whether a thread sleeps
//!   in the kernel, which threads are goro's own, and the threads a runtime started (`newm`'s
//!   side). `fatal`: how a run ends early.
//! - `trace`: the execution trace and the flight recorder (Go's `runtime/trace`): per-thread
//!   event buffers and their generations, the JSON writer; the layers below the scheduler call
//!   its event functions, which know no scheduler type.
//! - `runq`: a P's lock-free ring and `runnext`, split into the owner's `Local` half and the
//!   thieves' `Steal` half (owns the ring's invariants); `globrunq`: the global queue.
//! - `timer`: the per-P timer heaps (Go's `runtime/time.go`): a heap owns its earliest
//!   deadline and its stale count; `timer::Heaps` is what timers ask of the runtime.
//! - `g`: the G. `raw`: the object, its vtable and `Schedule`, what a G asks of its scheduler
//!   (`ready`, `gfput`, leaving `allgs`, an unobserved panic), so that the G layer names no
//!   scheduler type; `state`: its lifecycle word and the ownership protocol; `waker`: the G as
//!   its own waker; `allgs`: the list of all Gs and the batches of finished ones; `gfree`: the
//!   free lists of G memory (`gfget`/`gfput`'s lists); `join`: `JoinHandle` and its protocol;
//!   `error`: `JoinError`; `origin`: what the panic hook keeps of a G's panic.
//! - `bubble`: a synctest bubble's state and dice. `idle`: the idle Ps, sleeping Ms, syscall
//!   waiters, spare P slots and the spinning count, under the scheduler lock
//!   (`pidleget`/`pidleput`/`mget`/`mput`), and `M`, what others see of an M (its parker, the
//!   hand-off slot). `p`: a P. Its shared half (status, the `Steal` side of the queue, timers,
//!   sysmon's flags and counters) and its owner-only `PCore` (the `Local` queue, free lists,
//!   dead-G batch, `schedtick`, `runnext` streak, goid cache, rng), which the owning M holds by
//!   value; and `Allp`, every P slot (Go's `allp`).
//! - `config`: the builder's settings (the bubble among them), the environment knobs
//!   (`GORO_MAXPROCS`, `GORO_DEBUG`) and `warn_once`.
//! - `netpoll`: the mio poller, and the handshake of the one M that sleeps in it (`lastpoll`,
//!   `pollUntil`). `mains`: the main futures of the threads inside `block_on`.
//! - `sched`: the runtime's shared state (Go's `schedt`), made of parts that own their fields,
//!   and the operations that move work and Ms without being an M: `newproc` off-P,
//!   `globrunqput`, `wakep`, `start_idle`, `startm`, `newm` (whose entry point, `m::mstart`, is
//!   passed in), `handoffp`.
//! - `m`: everything an M does with its P (`acquirep`, `schedule`, `findrunnable`, `stopm`,
//!   `execute`, `newproc` and `runqput` on an M, `entersyscall`/`exitsyscall`, the poll marks
//!   sysmon reads, giving up a detached P) and how an M becomes the current one (`enter`).
//!   `metrics`. `traceback`: a G's row of the dump (`goroutines`, `dump`). `profile`: the block
//!   and mutex profiles (Go's `blockevent` and `mutexevent`: the rates, the sampled stacks'
//!   buckets, their symbols).
//! - `checkdead`: the deadlock detection (quiescence, then the census of the process's
//!   threads). `panics`: the panic hook that keeps a G's panic for its `JoinHandle` or prints
//!   it as Go does.
//! - `schedule`: `Shared`'s side of `g::Schedule` and `timer::Heaps` (`ready`, a timer's P).
//!   `sysmon`: the monitor thread (retake, preemption requests, the blocked-poll hand-off,
//!   fairness turns). `sigquit`: the SIGQUIT dump. `model` (under `--cfg loom`):
//!   `goro::model`, which model-checks a user's program without the scheduler (each G a loom
//!   thread, time virtual).
//! - `synctest`: what primitives ask of a bubble. `syscall`: `goro::syscall`.
//! - `block_on_thread`: the `*_blocking` calls and `JoinHandle::join`. `runtime`: `Builder`,
//!   `Runtime`, `run`, `go`, and `JoinHandle` as a future.
//! - `entry`: how `#[goro::main]` runs main. `time`: `sleep` and the raw timer. `io`:
//!   registrations for `goro::net`.

#![warn(missing_docs)]
// Under loom there is no sysmon thread and no I/O (no mio): models call the parts they check
// directly, and the rest is unused there. The normal build still reports dead code.
#![cfg_attr(loom, allow(dead_code))]

mod block_on_thread;
mod bubble;
mod checkdead;
mod config;
pub mod coop;
mod current;
mod entry;
mod fatal;
mod g;
mod globrunq;
mod idle;
mod io;
mod loom;
mod m;
mod mains;
mod metrics;
#[cfg(loom)]
mod model;
mod netpoll;
mod p;
mod panics;
mod park;
pub mod profile;
mod runq;
mod runtime;
mod sched;
mod schedule;
mod sigquit;
mod synctest;
mod syscall;
mod sysmon;
mod threads;
mod time;
mod timer;
pub mod trace;
mod traceback;
mod yield_now;

#[cfg(all(test, loom))]
mod loom_tests;

pub use g::{JoinError, JoinHandle, WaitReason};
pub use metrics::Metrics;
#[cfg(loom)]
pub use model::model;
pub use panics::UnhandledPanic;
pub use runtime::{dump, go, goroutines, max_procs, metrics, num_goroutine, run, set_wait_reason, Builder, Runtime};
pub use sigquit::dump_on_sigquit;
pub use syscall::syscall;
pub use traceback::{Goroutine, GoroutineStatus};
pub use yield_now::{yield_now, YieldNow};

// The runtime's own modules name these at the root.
#[cfg(loom)]
pub(crate) use __private::refuse_io_in_model;
pub(crate) use block_on_thread::block_on_thread_for;

/// What goro's other crates (`goro-chan`, `goro-sync`, `goro-macros` through the facade, and
/// the facade `goro-rt`) need of the runtime and users do not: the I/O registrations behind
/// `goro::net`, the raw timer behind `goro::time`, the bubbles behind `goro::synctest`, the
/// entry points of `#[goro::main]`, the loom-or-std lock, the `*_blocking` calls' parker. Not a
/// public API: it changes with the runtime.
#[doc(hidden)]
pub mod __private {
    pub use crate::block_on_thread::{block_on_thread, block_on_thread_for};
    pub use crate::coop::at_poll_end;
    pub use crate::g::HEADER_SIZE;
    pub use crate::runtime::{can_spin, current_proc_index};

    /// The registrations of `goro::net`'s sockets with the netpoller.
    pub mod io {
        pub use crate::io::{Direction, ReadyEvent, Registration};
    }

    /// The block and mutex profiles' events, which goro's channels and sync types record.
    pub mod profile {
        pub use crate::profile::{block_event, mutex_event, wait_start};
    }

    /// The clock, `sleep` and the raw timer behind `goro::time`.
    pub mod time {
        pub use crate::time::{now, sleep, sleep_until, system_now, RawTimer, Sleep};
    }

    /// The bubbles of `goro::synctest`: tags, seeds, the bubble's clock and its waits.
    pub mod synctest {
        pub use crate::synctest::{
            check_tag, current_seed, mark_durable, panic_message, set_wait_reason_of, splitmix64, system_now, tag,
            wait, wait_exit, BubbleSpec, BubbleSummary, Policy, Wait, WaitExit, ANY, DEADLOCK, NONE_OF_THEM,
            ROOT_EXITED,
        };
    }

    /// How `#[goro::main]` and `#[goro::test]` run their function.
    pub mod entry {
        pub use crate::entry::{Main, RunAsG, RunOnThread};
    }

    /// How a run ends early (what `Runtime::poll_ending` returns).
    pub mod fatal {
        pub use crate::fatal::Ending;
    }

    /// The loom-or-std cell and mutex that goro's crates share (one copy of the shim: each
    /// crate's `loom.rs` re-exports these).
    pub mod shim {
        pub use crate::current::lock_wait;
        pub use crate::loom::{Mutex, MutexGuard, UnsafeCell};
    }

    /// Inside `goro::model`, panics saying that `what` (the facade's `goro::net`,
    /// `goro::signal`) cannot be used in a model; elsewhere does nothing. Those modules exist in
    /// a loom build so that a crate whose binaries use them builds for its model tests.
    #[cfg(loom)]
    pub fn refuse_io_in_model(what: &str) {
        if crate::model::active() {
            crate::model::no_io(what);
        }
    }
}
