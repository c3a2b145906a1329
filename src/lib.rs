//! # goro: Go's concurrency model for Rust
//!
//! Goroutines on a real G/M/P work-stealing scheduler, channels with Go's semantics,
//! `select!`, and Go's `sync` package. A Go program ports line by line:
//!
//! ```
//! // func main() {
//! //     done := make(chan int)
//! //     go func() { done <- 42 }()
//! //     fmt.Println(<-done)
//! // }
//! goro::run(async {
//!     let h = goro::go! { 42 };
//!     println!("{}", h.await.unwrap());
//! });
//! ```
//!
//! # Where things live
//!
//! Each item has one home, the one a Go user would guess from Go's package: [`runtime`] for
//! Go's `runtime` ([`runtime::Builder`], [`runtime::max_procs`], [`runtime::metrics`], ...),
//! [`sync`] (with x/sync's [`sync::errgroup`] and [`sync::semaphore`]), [`time`], [`context`],
//! [`net`], `signal` (unix), [`synctest`], [`pprof`] (Go's `runtime/pprof`), [`trace`] (Go's
//! `runtime/trace`). The root keeps
//! what Go spells as language, and what every program needs first: [`go`](fn@go),
//! [`go!`](macro@go), [`chan()`](fn@chan), [`Chan`], [`select!`], [`select_blocking!`], [`run`],
//! `#[goro::main]`, `#[goro::test]`, [`syscall`], and `model` (under `--cfg loom`). Paths that
//! moved still compile, deprecated, naming their new home.
//!
//! | Go | goro |
//! |----|------|
//! | `func main()` | [`run`], `#[goro::main]` |
//! | `go f()` | [`go`](fn@go), [`go!`](macro@go) |
//! | a blocking system call | [`syscall`] |
//! | `runtime.Gosched()` | [`runtime::yield_now`] |
//! | `runtime.GOMAXPROCS(0)` | [`runtime::max_procs`] |
//! | `runtime.NumGoroutine()` | [`runtime::num_goroutine`] |
//! | `runtime/metrics`, `runtime.Stack` | [`runtime::metrics`], [`runtime::dump`] |
//! | `runtime/pprof`: `pprof.Lookup(name).WriteTo(w, debug)` | [`pprof::lookup`], [`pprof::Profile::write_to`] |
//! | `runtime/trace`: `trace.Start(w)`, `trace.NewFlightRecorder` | [`trace::start`], [`trace::FlightRecorder`] |
//! | `make(chan T, n)` | [`chan()`](fn@chan) (a `Sender` and a `Receiver`), or one [`Chan`] handle |
//! | `ch <- v`, `<-ch`, `close(ch)` | [`chan::Sender::send`], [`chan::Receiver::recv`], [`chan::Sender::close`] |
//! | `select { .. }` | [`select!`], [`select_blocking!`], [`chan::Select`] |
//! | `sync.WaitGroup`, `sync.Mutex`, ... | [`sync::WaitGroup`], [`sync::Mutex`], ... |
//! | `x/sync/errgroup`, `x/sync/semaphore` | [`sync::errgroup::Group`], [`sync::semaphore::Semaphore`] |
//! | `context.WithCancel` | [`context::with_cancel`] |
//! | `net.Listen`, `net.Dial`, `net.Conn` | [`net::TcpListener`], [`net::TcpStream`], [`net::UdpSocket`] |
//! | `context.WithTimeout` around one call | [`time::timeout`] |
//! | `signal.NotifyContext` | `signal::notify_context` (unix) |
//!
//! The runtime honours `GORO_MAXPROCS` (Go's `GOMAXPROCS`) and `GORO_DEBUG=schedtrace=N`
//! (Go's `GODEBUG=schedtrace=N`).

#![warn(missing_docs)]

pub use goro_macros::{main, test};
pub use goro_runtime::{go, run, syscall};

pub use goro_chan::{chan, select, select_blocking, Chan};

/// Model-checks a goro program with loom (built with `RUSTFLAGS="--cfg loom"`): see the README's
/// "Model-check your program" and [`goro_runtime::model`].
#[cfg(loom)]
pub use goro_runtime::model;

/// Channels: the constructor [`chan::chan`] (the same function as the root's
/// [`goro::chan`](fn@crate::chan)), the handles, errors and the dynamic
/// [`Select`](chan::Select). The one-value handle is [`goro::Chan`](crate::Chan), at the root.
///
/// The futures of the async methods (`Send`, `Recv`, the dynamic select's `Wait`) are in
/// [`chan::futures`], out of reach of `use goro::chan::*`, which would otherwise shadow the
/// marker trait `Send`.
pub mod chan {
    pub use goro_chan::futures;
    pub use goro_chan::{
        chan, Iter, Receiver, RecvToken, Select, SendError, SendToken, Sender, TryRecvError, TrySendError,
    };

    #[doc(hidden)]
    #[deprecated(note = "moved to goro::Chan")]
    pub type Chan<T> = goro_chan::Chan<T>;
}

pub mod sync;

/// What the attribute macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use goro_runtime::__private::entry::{Main, RunAsG, RunOnThread};
}

pub mod context;
#[cfg(feature = "hyper")]
pub mod hyper;
pub mod net;
pub mod pprof;
pub mod runtime;
#[cfg(unix)]
pub mod signal;
pub mod synctest;
pub mod time;
pub use goro_runtime::trace;

// The root paths of Go's `runtime` package, deprecated: each names its home in `runtime`.

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::max_procs")]
#[inline]
pub fn max_procs() -> usize {
    runtime::max_procs()
}

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::num_goroutine")]
#[inline]
pub fn num_goroutine() -> usize {
    runtime::num_goroutine()
}

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::yield_now")]
#[inline]
pub fn yield_now() -> runtime::YieldNow {
    runtime::yield_now()
}

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::YieldNow")]
pub type YieldNow = runtime::YieldNow;

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::Builder")]
pub type Builder = runtime::Builder;

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::Runtime")]
pub type Runtime = runtime::Runtime;

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::UnhandledPanic")]
pub type UnhandledPanic = runtime::UnhandledPanic;

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::JoinHandle")]
pub type JoinHandle<T> = runtime::JoinHandle<T>;

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::JoinError")]
pub type JoinError = runtime::JoinError;

#[doc(hidden)]
#[deprecated(note = "moved to goro::runtime::WaitReason")]
pub type WaitReason = runtime::WaitReason;
