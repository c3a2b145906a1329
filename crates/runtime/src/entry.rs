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

use crate::checkdead::DEADLOCK;
use crate::fatal::Ending;
use crate::runtime::UnhandledPanic;
use crate::runtime::{Builder, Runtime};
use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::io::Write as _;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

/// What the function is: a program's `main`, or a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `#[goro::main]`: a deadlock or a G's unobserved panic ends the process as Go's does (the
    /// report on stderr, exit status 2).
    Main,
    /// `#[goro::test]`: a deadlock or a G's unobserved panic fails the test (a panic with the
    /// report, or the G's own).
    Test,
}

/// Whether Gs still alive when a test's body returns fail the test (Go users' goleak).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leaks {
    Fail,
    /// `#[goro::test(allow_leaks)]`.
    Allow,
}

/// How long a test's Gs may take to finish after its body returned (goleak retries too: a G
/// that was just told to stop is not a leak).
const LEAK_GRACE: Duration = Duration::from_secs(1);

/// The main function of a `#[goro::main]` program or a `#[goro::test]`, before it runs.
pub struct Main<F> {
    builder: Builder,
    kind: Kind,
    leaks: Cell<Leaks>,
    future: Cell<Option<F>>,
}

impl<F> Main<F> {
    /// A program's `main`: `future` to run on a runtime built from `builder`.
    pub fn new(builder: Builder, future: F) -> Main<F> {
        let builder = builder.unhandled_panic(UnhandledPanic::ShutdownRuntime);
        Main { builder, kind: Kind::Main, leaks: Cell::new(Leaks::Allow), future: Cell::new(Some(future)) }
    }

    /// A test's body: as [`new`](Main::new), in a test harness.
    pub fn test(builder: Builder, future: F) -> Main<F> {
        let builder = builder.in_test_harness().unhandled_panic(UnhandledPanic::ShutdownRuntime);
        Main { builder, kind: Kind::Test, leaks: Cell::new(Leaks::Fail), future: Cell::new(Some(future)) }
    }

    /// `#[goro::test(allow_leaks)]`: Gs still alive when the test's body returns do not fail it.
    pub fn allow_leaks(&self) -> &Self {
        self.leaks.set(Leaks::Allow);
        self
    }

    /// A test's leak check, once its body returned: Gs of `rt` still alive after
    /// [`LEAK_GRACE`] fail the test, with their dump. The failure's location is the test's
    /// (`#[track_caller]` up to the macro's call of `run`), where the user looks for the leak.
    #[track_caller]
    fn check_leaks(&self, rt: &Runtime) {
        if self.leaks.get() == Leaks::Allow {
            return;
        }
        let deadline = Instant::now() + LEAK_GRACE;
        let mut pause = Duration::from_micros(100);
        loop {
            let alive = rt.goroutines();
            if alive.is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                let n = alive.len();
                let dump: Vec<String> = alive.iter().map(|g| g.to_string()).collect();
                panic!(
                    "goro: {n} goroutine{} still alive when the test returned (a leak; \
                     #[goro::test(allow_leaks)] allows it):\n\n{}",
                    if n == 1 { " is" } else { "s are" },
                    dump.join("\n")
                );
            }
            // Waiting for Gs that may be finishing: nothing to wait on but time (goleak's way).
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    fn parts(&self) -> (Runtime, F) {
        let rt = self.builder.clone().build().unwrap_or_else(|e| panic!("goro: cannot build the runtime: {e}"));
        (rt, self.future.take().expect("goro: a main function runs once"))
    }

    /// A program dumps its Gs on `SIGQUIT`, as Go's does (a test leaves the signal alone).
    fn sigquit(&self) {
        if self.kind == Kind::Main {
            if let Err(e) = crate::dump_on_sigquit() {
                crate::config::warn_once(&format!("goro: cannot catch SIGQUIT ({e}): no dump on Ctrl-\\"));
            }
        }
    }

    /// The run ended early: a program ends as Go's does (exit status 2, after the report on
    /// stderr: the panic's was printed when it happened), a test fails (at the test, as
    /// [`check_leaks`](Main::check_leaks)).
    #[track_caller]
    fn ended(&self, ending: Ending) -> ! {
        match (self.kind, ending) {
            (Kind::Main, ending) => {
                let _ = std::io::stdout().flush();
                if let Ending::Deadlock(report) = ending {
                    eprintln!("fatal error: {report}");
                }
                std::process::exit(2)
            }
            (Kind::Test, Ending::Deadlock(report)) => panic!("{report}"),
            (Kind::Test, Ending::Panic(payload)) => resume_unwind(payload),
        }
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
        self.sigquit();
        let mut main = rt.spawn(future);
        rt.mark_main(main.id());
        // A plain thread's wait (this thread is no M of the runtime), for main or an ending.
        let out = crate::block_on_thread_for(
            "`.await`",
            poll_fn(|cx| {
                if let Poll::Ready(ending) = rt.poll_ending(cx) {
                    return Poll::Ready(Err(ending));
                }
                Pin::new(&mut main).poll(cx).map(Ok)
            }),
        );
        let out = match out {
            Ok(out) => out,
            Err(ending) => self.ended(ending),
        };
        if out.is_ok() && self.kind == Kind::Test {
            self.check_leaks(&rt);
        }
        drop(rt);
        match out {
            Ok(v) => v,
            Err(e) if e.is_panic() => {
                crate::panics::print_resumed(&e);
                resume_unwind(e.into_panic())
            }
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

    #[track_caller]
    fn run(&self) -> F::Output {
        let (rt, future) = self.parts();
        self.sigquit();
        match catch_unwind(AssertUnwindSafe(|| rt.block_on(future))) {
            Ok(v) => {
                if self.kind == Kind::Test {
                    self.check_leaks(&rt);
                }
                v
            }
            // The run ended early (block_on returned the ending as a panic), or main panicked.
            Err(p) if rt.has_ended() => match p.downcast::<String>() {
                Ok(report) if report.starts_with(DEADLOCK) => self.ended(Ending::Deadlock(*report)),
                Ok(other) => self.ended(Ending::Panic(other)),
                Err(p) => self.ended(Ending::Panic(p)),
            },
            Err(p) => resume_unwind(p),
        }
    }
}
