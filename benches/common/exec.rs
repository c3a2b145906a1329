//! The executors the workloads are written against ([`Exec`]: goro, tokio), the runtimes they
//! run on ([`Runtimes`], 2 workers each), and the criterion groups and rows of `chan.rs` and
//! `sync.rs`, which time a workload's runs inside its executor's main task.

use std::cell::OnceCell;
use std::future::Future;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};

/// Worker threads / Ps on every system (benches/README.md: the size of the machines here).
pub const WORKERS: usize = 2;

/// What a workload needs from a runtime: spawn a detached task from inside it, yield, sleep,
/// and run the workload's main as a task on it.
pub trait Exec: 'static {
    fn spawn<F: Future<Output = ()> + Send + 'static>(fut: F);
    fn yield_now() -> impl Future<Output = ()> + Send;
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send;
    fn main<F: Future<Output = Duration> + Send + 'static>(rts: &Runtimes, fut: F) -> Duration;
}

pub struct Tokio;
impl Exec for Tokio {
    fn spawn<F: Future<Output = ()> + Send + 'static>(fut: F) {
        drop(tokio::spawn(fut)); // dropping the handle detaches the task
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
    fn main<F: Future<Output = Duration> + Send + 'static>(rts: &Runtimes, fut: F) -> Duration {
        // The workload's main is a task on the runtime, not the block_on thread.
        let rt = rts.tokio();
        rt.block_on(rt.spawn(fut)).unwrap()
    }
}

pub struct Goro;
impl Exec for Goro {
    fn spawn<F: Future<Output = ()> + Send + 'static>(fut: F) {
        drop(goro::go(fut)); // dropping the handle detaches the G, as in Go
    }
    fn yield_now() -> impl Future<Output = ()> + Send {
        goro::runtime::yield_now()
    }
    fn sleep(d: Duration) -> impl Future<Output = ()> + Send {
        goro::time::sleep(d)
    }
    fn main<F: Future<Output = Duration> + Send + 'static>(rts: &Runtimes, fut: F) -> Duration {
        // block_on runs its future as the main G on this thread.
        rts.goro().block_on(fut)
    }
}

/// The runtimes, each built on first use (so a run of some rows, `-- crossbeam`, `-- dashmap`,
/// `-- tokio`, builds only the runtimes those rows run on).
#[derive(Default)]
pub struct Runtimes {
    tokio: OnceCell<tokio::runtime::Runtime>,
    tokio_time: OnceCell<tokio::runtime::Runtime>,
    goro: OnceCell<goro::runtime::Runtime>,
}

impl Runtimes {
    pub fn tokio(&self) -> &tokio::runtime::Runtime {
        self.tokio.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread().worker_threads(WORKERS).build().expect("tokio runtime")
        })
    }

    /// The same with tokio's time driver, for W15.
    pub fn tokio_time(&self) -> &tokio::runtime::Runtime {
        self.tokio_time.get_or_init(|| {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(WORKERS).enable_time().build().expect("tokio runtime")
        })
    }

    /// goro's runtime. With `GORO_BENCH_TRACE` set, an execution trace runs from here on,
    /// written to `io::sink()`: README's table of what a trace costs each row.
    pub fn goro(&self) -> &goro::runtime::Runtime {
        self.goro.get_or_init(|| {
            if std::env::var_os("GORO_BENCH_TRACE").is_some() {
                goro::trace::start(std::io::sink()).expect("trace");
            }
            goro::runtime::Builder::new().max_procs(WORKERS).build().expect("goro runtime")
        })
    }
}

/// What one run of a workload returns: nothing (the whole run is timed, `chan.rs`) or the
/// duration of its timed part (`sync.rs`, whose runs set up a map first).
pub trait RunTime {
    /// The run's time, given the time of the whole run.
    fn time(self, whole: Duration) -> Duration;
}

impl RunTime for () {
    fn time(self, whole: Duration) -> Duration {
        whole
    }
}

impl RunTime for Duration {
    fn time(self, _: Duration) -> Duration {
        self
    }
}

/// Runs `iters` runs of `run` back to back inside the calling (main) task and returns the sum of
/// their times.
async fn timed<F: Future>(iters: u64, run: fn() -> F) -> Duration
where
    F::Output: RunTime,
{
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let out = run().await;
        total += out.time(start.elapsed());
    }
    total
}

/// One row: `run` (one run of the workload, for executor `E`) timed inside `E`'s main task.
pub fn row<E: Exec, F: Future + Send + 'static>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    rts: &Runtimes,
    run: fn() -> F,
) where
    F::Output: RunTime,
{
    g.bench_function(name, |b| b.iter_custom(|iters| E::main(rts, timed(iters, run))));
}

/// A group reported per unit; each run takes tens to hundreds of ms, so flat sampling.
pub fn group<'a>(c: &'a mut Criterion, name: &str, units: u64) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(units))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g
}
