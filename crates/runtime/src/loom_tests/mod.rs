//! Loom models of the scheduler's racy parts.
//!
//! Run them with
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p goro-runtime --lib --release loom_ -- --test-threads=1
//! ```
//!
//! - [`runq`]: a P's ring and `runnext` slot: owner pushes (with overflow) and pops against
//!   thieves; every item leaves exactly once.
//! - [`g`]: the G lifecycle word and the `JoinHandle`: completion against abort, join-handle
//!   drop and poll, and wakes racing with the poll and with completion; outputs and futures are
//!   dropped exactly once, join wakers fire, and the G's memory is freed.
//! - [`park`]: the M's parker and the thread waker behind `JoinHandle::join`: no lost wake-up.
//! - [`sched`]: the whole runtime (`Builder::build`, `block_on`, `go`, drop) end to end.
//! - [`netpoll`]: the readiness protocol against the runtime's shutdown (and an event): a task
//!   waiting on a socket of a runtime that shuts down is woken and fails; none is refused late.
//! - [`checkdead`]: the deadlock check's two looks against a wake from a plain thread, a timer or
//!   a G, and against an M inside `goro::syscall` whose P sysmon retakes.
//! - [`timer`]: the timer core: stop, re-arm and a sleeping G's new waker racing the firing,
//!   two Ms running one heap, tickers; at most one firing per arming, none after stop returns;
//!   timers moving off a P that sysmon detached, racing an arming and a firing; and that
//!   detach racing the stuck G's `goro::syscall` (never two Ps in use for one).
//! - [`trace`]: the trace buffers' generations: a writer against the reader that ends its
//!   generation; every event lands in exactly one buffer that the reader takes, none is lost or
//!   written after its buffer was taken.
//!
//! Every model goes through [`model`], which uses `LOOM_MAX_PREEMPTIONS` when it is set and a
//! bound of [`DEFAULT_PREEMPTIONS`] otherwise (an unbounded search of these models takes hours),
//! and `LOOM_MAX_BRANCHES` when set, [`DEFAULT_MAX_BRANCHES`] otherwise.

mod bubble;
mod checkdead;
mod g;
mod netpoll;
mod park;
mod runq;
mod sched;
mod timer;
mod trace;

/// The preemption bound used when `LOOM_MAX_PREEMPTIONS` is not set.
const DEFAULT_PREEMPTIONS: usize = 2;

/// The cap on one execution's loom operations when `LOOM_MAX_BRANCHES` is not set. Loom's own
/// default (1 000) is too tight for the whole-runtime models of [`sched`]: their longest
/// executions (a spinning M's four steal passes, each reading a victim's run queue, status and
/// timers, then `stopm`, under two preemptions) take between 1 000 and 1 500 operations since
/// timers moved with their P and the deadlock census joined the scheduler loop. They pass at
/// 1 500 and at 3 000 with the same number of executions, so the cap cuts nothing that ends:
/// a livelock still fails, only a little later.
const DEFAULT_MAX_BRANCHES: usize = 2_000;

/// `loom::model` with the default bound above.
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    model_with(|_| {}, f)
}

/// `loom::model` with the default bound above and the builder adjusted by `config`. Prints the
/// number of executions explored (visible with `--nocapture`).
fn model_with<F: Fn() + Sync + Send + 'static>(config: impl FnOnce(&mut loom::model::Builder), f: F) {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Arc;

    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        b.max_branches = DEFAULT_MAX_BRANCHES;
    }
    config(&mut b);
    let iterations = Arc::new(AtomicUsize::new(0));
    let it = iterations.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        it.fetch_add(1, Relaxed);
        f()
    });
    eprintln!(
        "loom: {} executions in {:.1?} (preemption bound {:?})",
        iterations.load(Relaxed),
        start.elapsed(),
        b.preemption_bound
    );
}
