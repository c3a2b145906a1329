//! Go's `runtime` package (and `runtime/metrics`): the scheduler's knobs, counters and
//! debugging hooks, and the explicit [`Runtime`] with its [`Builder`].
//!
//! | Go | goro |
//! |----|------|
//! | `runtime.GOMAXPROCS(0)` | [`max_procs`] |
//! | `runtime.NumGoroutine()` | [`num_goroutine`] |
//! | `runtime.Gosched()` | [`yield_now`] |
//! | `runtime/metrics` | [`metrics`], [`Metrics`] |
//! | `runtime.Stack(buf, true)` | [`dump`]; [`dump_on_sigquit`] for `SIGQUIT` |
//! | goroutine profile | [`goroutines`], [`Goroutine`], [`GoroutineStatus`], [`WaitReason`] (and [`pprof`](crate::pprof)) |
//! | `runtime.SetBlockProfileRate(rate)` | [`set_block_profile_rate`] (read with [`pprof`](crate::pprof)`::lookup("block")`) |
//! | `runtime.SetMutexProfileFraction(rate)` | [`set_mutex_profile_fraction`] (read with [`pprof`](crate::pprof)`::lookup("mutex")`) |
//! | `GOMAXPROCS`, `GODEBUG=schedtrace=N` | [`Builder`] (and `GORO_MAXPROCS`, `GORO_DEBUG=schedtrace=N`) |
//! | (the runtime of `func main`) | [`Runtime`]: `block_on`, `spawn`; [`UnhandledPanic`] |
//! | (the result of `go f()`) | [`JoinHandle`], [`JoinError`] |
//! | (a foreign future's yield point) | [`coop::poll_proceed`], [`coop::should_yield`] |
//!
//! What Go spells as language stays at the crate root: [`go`](fn@crate::go), [`run`](crate::run),
//! [`syscall`](crate::syscall), [`chan`](fn@crate::chan), [`select!`](crate::select).
//!
//! ```
//! let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
//! rt.block_on(async {
//!     assert_eq!(goro::runtime::max_procs(), 2);
//!     assert_eq!(goro::runtime::num_goroutine(), 1); // main
//!     let h = goro::go(async { goro::runtime::yield_now().await });
//!     h.await.unwrap();
//!     assert!(goro::runtime::metrics().threads >= 1);
//! });
//! ```
//!
//! [`JoinHandle`] and [`JoinError`] are here, beside the [`Runtime`] whose `spawn` returns them
//! too: Go has no handle to a goroutine, so no package a Go user would search first; the root
//! keeps only what Go spells as language.

pub use goro_runtime::profile::{set_block_profile_rate, set_mutex_profile_fraction};
pub use goro_runtime::{
    dump, dump_on_sigquit, goroutines, max_procs, metrics, num_goroutine, set_wait_reason, yield_now, Builder,
    Goroutine, GoroutineStatus, JoinError, JoinHandle, Metrics, Runtime, UnhandledPanic, WaitReason, YieldNow,
};

/// Cooperative preemption for authors of futures that goro did not write.
///
/// goro preempts a G that has held its P for a whole time slice at the G's next yield point
/// (every channel operation, lock, sleep, socket operation and [`yield_now`] is one). A future
/// that can complete without ever returning `Pending` (a socket of another library that is
/// always ready, a loop over a ready stream) has no yield point: call [`poll_proceed`] at the
/// top of its `poll`, or check [`should_yield`] in a long computation. Both cost one
/// thread-local load when nothing is asked, and do nothing off goro's threads.
pub mod coop {
    pub use goro_runtime::coop::{poll_proceed, should_yield};
}

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::coop::poll_proceed")]
#[inline]
pub fn poll_proceed(cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
    coop::poll_proceed(cx)
}

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::coop::should_yield")]
#[inline]
pub fn should_yield() -> bool {
    coop::should_yield()
}

#[doc(hidden)]
#[deprecated(note = "a layout detail, not part of the API (examples/g_memory.rs reads it from goro-runtime)")]
pub const HEADER_SIZE: usize = goro_runtime::__private::HEADER_SIZE;
