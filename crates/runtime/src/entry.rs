//! How `#[goro::main]` and `#[goro::test]` run their function: the main future becomes a G of
//! its own when it can (Go's main goroutine), else the calling thread runs it as
//! [`Runtime::block_on`] does. Not a public API: the attribute macros expand to
//! `(&Main::new(builder, future)).run()`, and the compiler picks the way.
//!
//! Why a G: `block_on` polls its future only on the calling thread, which also runs Gs while
//! the future waits. A G that computes without a yield point (Rust cannot preempt it) and lands
//! on that thread then holds main up for as long as it computes, though other Ps idle (Go
//! would preempt it). As a G, main runs on whichever P is free, and the calling thread only
//! waits for it, so no G can ever sit on it. That needs the future to be `Send + 'static`
//! (an `async fn main` nearly always is) and its output `Send`; for any other future the
//! macro keeps `block_on`'s way.
//!
//! The choice is made at compile time by method resolution ("autoref specialization"):
//! [`RunAsG`] is implemented for `Main<F>` when `F` qualifies, [`RunOnThread`] for `&Main<F>`
//! always, and `(&main).run()` finds the first before it tries the autoref'd receiver of the
//! second.

use crate::runtime::{Builder, Runtime};
use std::cell::Cell;
use std::future::Future;
use std::panic::resume_unwind;

/// The main function of a `#[goro::main]` program or a `#[goro::test]`, before it runs.
pub struct Main<F> {
    builder: Builder,
    future: Cell<Option<F>>,
}

impl<F> Main<F> {
    /// `future` to run on a runtime built from `builder`.
    pub fn new(builder: Builder, future: F) -> Main<F> {
        Main { builder, future: Cell::new(Some(future)) }
    }

    fn parts(&self) -> (Runtime, F) {
        let rt = self.builder.clone().build().unwrap_or_else(|e| panic!("goro: cannot build the runtime: {e}"));
        (rt, self.future.take().expect("goro: a main function runs once"))
    }
}

impl<F> std::fmt::Debug for Main<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Main").field("builder", &self.builder).finish_non_exhaustive()
    }
}

/// The way for a `Send + 'static` main future: a G of its own.
pub trait RunAsG {
    /// The main function's output.
    type Output;
    /// Runs main as a G; the calling thread waits for it (its panic is resumed here).
    fn run(&self) -> Self::Output;
}

impl<F> RunAsG for Main<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = F::Output;

    #[track_caller]
    fn run(&self) -> F::Output {
        let (rt, future) = self.parts();
        let main = rt.spawn(future);
        // A plain thread's wait: this thread is no M of the runtime.
        let out = main.join();
        drop(rt);
        match out {
            Ok(v) => v,
            Err(e) if e.is_panic() => resume_unwind(e.into_panic()),
            Err(e) => panic!("goro: the main G ended without a result: {e}"),
        }
    }
}

/// The way for any other main future: the calling thread runs it ([`Runtime::block_on`]).
pub trait RunOnThread {
    /// The main function's output.
    type Output;
    /// Runs main on the calling thread, which is an M of the runtime meanwhile.
    fn run(&self) -> Self::Output;
}

impl<F: Future> RunOnThread for &Main<F> {
    type Output = F::Output;

    fn run(&self) -> F::Output {
        let (rt, future) = self.parts();
        rt.block_on(future)
    }
}
