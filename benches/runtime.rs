//! Scheduler benchmarks W1–W3 and W15 (timers) of benches/README.md, goro against tokio.
//!
//! Each workload is written once, generic over [`Exec`] (spawn, yield, sleep), so both systems
//! run the exact same code and the same completion mechanism ([`Signal`]). Every system runs the
//! workload's main as a task on its own 2-worker runtime, and the time is taken inside that main
//! task (as Go's programs in `benches/go` take it inside the main goroutine). Runtimes are built
//! once, lazily, outside the measurement.
//!
//! Criterion reports the time of one whole run and the throughput in elements (= units) per
//! second; ns per unit = 1e9 / thrpt, or `median` of `target/criterion/<group>/<system>/new/
//! estimates.json` divided by the unit count. For W15 the "time of one run" is already the
//! run's elapsed time less the 1 ms every G must sleep (benches/README.md's unit), subtracted run by
//! run inside [`timed`], exactly as `benches/go/w15_timers` does; so W15's numbers are not wall
//! times, and its throughput figure is not units per wall-clock second.
//!
//! W3 also has a `may` row: the `may` crate's stackful coroutines (`may::coroutine::yield_now`,
//! 2 workers), the closest thing in Rust to a goroutine that yields. Its coroutines are not
//! futures, so its workload is written out in [`may_yield_many`], the same shape: main (a
//! coroutine) spawns the 200 coroutines, each yields 1_000 times, main waits for them all
//! (joining each; goro's and tokio's rows count down a [`Counter`], Go's a `WaitGroup`).
//!
//! `cargo bench -p goro-benches --bench runtime -- tokio` runs only the tokio rows, `-- goro`
//! only goro's.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// W1 and W2: Gs per run.
const SPAWNS: usize = 100_000;
/// W3: Gs, and yields per G.
const YIELD_TASKS: usize = 200;
const YIELDS: usize = 1_000;
/// W15: Gs, and how long each sleeps.
const TIMER_GS: usize = 100_000;
const TIMER_SLEEP: Duration = Duration::from_millis(1);

#[path = "common/mod.rs"]
mod common;
use common::exec::{Exec, Goro, Runtimes, Tokio, WORKERS};
use common::signal::Signal;

/// A shared countdown: the task that brings `count` to `target` sets `done`.
struct Counter {
    count: AtomicUsize,
    target: usize,
    done: Signal,
}

impl Counter {
    fn new(target: usize) -> Arc<Self> {
        Arc::new(Counter { count: AtomicUsize::new(0), target, done: Signal::default() })
    }
    fn add_one(&self) {
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.target {
            self.done.set();
        }
    }
}

/// One workload of benches/README.md, written once for every [`Exec`].
trait Workload: 'static {
    /// The criterion group, e.g. `W1_spawn_many`.
    const NAME: &'static str;
    /// Units of work in one run (the `Throughput` unit).
    const UNITS: usize;
    /// Time every run must spend whatever the runtime (W15's 1 ms sleep), subtracted from each
    /// run's elapsed time.
    const FLOOR: Duration = Duration::ZERO;
    /// Whether the workload uses timers (tokio then needs its time driver: its own runtime, so
    /// the other rows run on a tokio without one, as before).
    const TIMERS: bool = false;
    /// One run, on the runtime behind `E`, from inside its main task.
    fn run<E: Exec>() -> impl Future<Output = ()> + Send;
    /// The workload on `may` (stackful coroutines, written out by hand): `iters` runs inside
    /// may's main coroutine, returning their total time; `None` where there is no may row.
    const MAY: Option<fn(u64) -> Duration> = None;
}

/// W1 spawn_many: main spawns 100_000 trivial tasks, each adds 1 to a shared atomic; main waits
/// for all of them. Unit: one task.
struct SpawnMany;
impl Workload for SpawnMany {
    const NAME: &'static str = "W1_spawn_many";
    const UNITS: usize = SPAWNS;
    async fn run<E: Exec>() {
        let c = Counter::new(SPAWNS);
        for _ in 0..SPAWNS {
            let c = c.clone();
            E::spawn(async move { c.add_one() });
        }
        c.done.wait().await;
    }
}

/// W2 chained_spawn: each task spawns the next, 100_000 deep; the last one signals main.
/// Unit: one task.
struct ChainedSpawn;
impl Workload for ChainedSpawn {
    const NAME: &'static str = "W2_chained_spawn";
    const UNITS: usize = SPAWNS;
    async fn run<E: Exec>() {
        fn link<E: Exec>(left: usize, done: Arc<Signal>) {
            E::spawn(async move {
                if left == 0 {
                    done.set();
                } else {
                    link::<E>(left - 1, done);
                }
            });
        }
        let done = Arc::new(Signal::default());
        link::<E>(SPAWNS - 1, done.clone()); // this task plus SPAWNS - 1 more
        done.wait().await;
    }
}

/// W3 yield_many: 200 tasks each yield 1_000 times; main waits for all of them.
/// Unit: one yield.
struct YieldMany;
impl Workload for YieldMany {
    const NAME: &'static str = "W3_yield_many";
    const UNITS: usize = YIELD_TASKS * YIELDS;
    const MAY: Option<fn(u64) -> Duration> = Some(may_yield_many);
    async fn run<E: Exec>() {
        let c = Counter::new(YIELD_TASKS);
        for _ in 0..YIELD_TASKS {
            let c = c.clone();
            E::spawn(async move {
                for _ in 0..YIELDS {
                    E::yield_now().await;
                }
                c.add_one();
            });
        }
        c.done.wait().await;
    }
}

/// W3 on may: `iters` runs of [`YieldMany`]'s workload inside one main coroutine, timed there.
fn may_yield_many(iters: u64) -> Duration {
    may_runtime();
    let main = move || {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let start = Instant::now();
            let hs: Vec<_> = (0..YIELD_TASKS)
                .map(|_| {
                    let yielder = || {
                        for _ in 0..YIELDS {
                            may::coroutine::yield_now();
                        }
                    };
                    // SAFETY: as for main below: no thread-local storage, a few words of stack,
                    // and no blocking call but may's own.
                    unsafe { may::coroutine::spawn(yielder) }
                })
                .collect();
            for h in hs {
                h.join().expect("W3: a may coroutine panicked");
            }
            total += start.elapsed();
        }
        total
    };
    // SAFETY: may's contract for a coroutine: it reads no thread-local storage (a coroutine may
    // move between may's worker threads), stays within may's default stack (these closures
    // use a few hundred bytes), and blocks only through may (`yield_now`, `join`).
    let h = unsafe { may::coroutine::spawn(main) };
    h.join().expect("W3: may's main coroutine panicked")
}

/// may's scheduler, configured once before its first coroutine: 2 workers, as everywhere.
fn may_runtime() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        may::config().set_workers(WORKERS);
    });
}

/// W15 timers: main spawns 100_000 tasks that each sleep 1 ms, then count themselves; main
/// waits for the last. Unit: one task, timed as (elapsed − 1 ms) / 100_000.
struct Timers;
impl Workload for Timers {
    const NAME: &'static str = "W15_timers";
    const UNITS: usize = TIMER_GS;
    const FLOOR: Duration = TIMER_SLEEP;
    const TIMERS: bool = true;
    async fn run<E: Exec>() {
        let c = Counter::new(TIMER_GS);
        for _ in 0..TIMER_GS {
            let c = c.clone();
            E::spawn(async move {
                E::sleep(TIMER_SLEEP).await;
                c.add_one();
            });
        }
        c.done.wait().await;
        assert_eq!(c.count.load(Ordering::Acquire), TIMER_GS, "W15: a task did not finish");
    }
}

/// Runs `iters` runs of `W` back to back inside the calling (main) task and returns their total
/// time, less `W::FLOOR` per run.
async fn timed<W: Workload, E: Exec>(iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        W::run::<E>().await;
        let elapsed = start.elapsed();
        assert!(elapsed >= W::FLOOR, "{}: a run took {elapsed:?}, less than {:?}", W::NAME, W::FLOOR);
        total += elapsed - W::FLOOR;
    }
    total
}

/// One workload's group: a `tokio` row and a `goro` row, reported per unit.
fn group<W: Workload>(c: &mut Criterion, rts: &Runtimes) {
    let mut g = c.benchmark_group(W::NAME);
    g.throughput(Throughput::Elements(W::UNITS as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function("tokio", |b| {
        b.iter_custom(|iters| {
            // The workload's main is a task on the runtime, not the block_on thread.
            let rt = if W::TIMERS { rts.tokio_time() } else { rts.tokio() };
            rt.block_on(rt.spawn(timed::<W, Tokio>(iters))).unwrap()
        })
    });
    g.bench_function("goro", |b| {
        // block_on runs its future as the main G on this thread.
        b.iter_custom(|iters| rts.goro().block_on(timed::<W, Goro>(iters)))
    });
    if let Some(may_run) = W::MAY {
        g.bench_function("may", |b| b.iter_custom(may_run));
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let rts = Runtimes::default();
    group::<SpawnMany>(c, &rts);
    group::<ChainedSpawn>(c, &rts);
    group::<YieldMany>(c, &rts);
    group::<Timers>(c, &rts);
}

criterion_group!(runtime, benches);
criterion_main!(runtime);
