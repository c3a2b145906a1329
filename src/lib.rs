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
//! | Go | goro |
//! |----|------|
//! | `func main()` | [`run`], `#[goro::main]` |
//! | `go f()` | [`go`](fn@go), [`go!`](macro@go) |
//! | `runtime.Gosched()` | [`yield_now`] |
//! | `runtime.GOMAXPROCS(0)` | [`max_procs`] |
//! | `runtime.NumGoroutine()` | [`num_goroutine`] |
//! | `runtime/metrics` | [`runtime::metrics`] |
//! | `make(chan T, n)` | [`chan()`](fn@chan) (a `Sender` and a `Receiver`), or one [`Chan`] handle |
//! | `ch <- v`, `<-ch`, `close(ch)` | [`chan::Sender::send`], [`chan::Receiver::recv`], [`chan::Sender::close`] |
//! | `select { .. }` | [`select!`], [`select_blocking!`], [`chan::Select`] |
//! | `net.Listen`, `net.Dial`, `net.Conn` | [`net::TcpListener`], [`net::TcpStream`], [`net::UdpSocket`] |
//! | `sync.Cond`, `x/sync/errgroup` | [`sync::Cond`], [`sync::errgroup::Group`] |
//! | `context.WithTimeout` around one call | [`time::timeout`] |
//! | `signal.NotifyContext` | `signal::notify_context` (unix) |
//!
//! The runtime honours `GORO_MAXPROCS` (Go's `GOMAXPROCS`) and `GORO_DEBUG=schedtrace=N`
//! (Go's `GODEBUG=schedtrace=N`).

#![warn(missing_docs)]

pub use goro_macros::{main, test};
pub use goro_runtime::{
    go, max_procs, num_goroutine, run, syscall, yield_now, Builder, JoinError, JoinHandle, Runtime, UnhandledPanic,
    WaitReason, YieldNow,
};

pub use goro_chan::{chan, select, select_blocking, Chan};

/// Model-checks a goro program with loom (built with `RUSTFLAGS="--cfg loom"`): see the README's
/// "Model-check your program" and [`goro_runtime::model`].
#[cfg(loom)]
pub use goro_runtime::model;

/// Channels: the handles, errors and the dynamic [`Select`](chan::Select). The constructor is
/// the function [`goro::chan`](fn@crate::chan) of the same name.
///
/// The futures of the async methods (`Send`, `Recv`, the dynamic select's `Wait`) are in
/// [`chan::futures`], out of reach of `use goro::chan::*`, which would otherwise shadow the
/// marker trait `Send`.
pub mod chan {
    pub use goro_chan::futures;
    pub use goro_chan::{
        Chan, Iter, Receiver, RecvToken, Select, SendError, SendToken, Sender, TryRecvError, TrySendError,
    };
}

pub mod sync;

/// What the attribute macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use goro_runtime::__private::entry::{Main, RunAsG, RunOnThread};
}

pub mod context;
pub mod net;
#[cfg(unix)]
pub mod signal;
pub mod synctest;
pub mod time;

/// The runtime's introspection: counters and debugging hooks (Go's `runtime` and
/// `runtime/metrics` packages).
pub mod runtime {
    pub use goro_runtime::__private::HEADER_SIZE;
    pub use goro_runtime::coop::{poll_proceed, should_yield};
    pub use goro_runtime::{
        dump, dump_on_sigquit, goroutines, metrics, set_wait_reason, Goroutine, GoroutineStatus, Metrics, WaitReason,
    };
}
