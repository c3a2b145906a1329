//! A G and a tokio task exchanging messages (benches/README.md, "Across executors"), side by side with
//! the same exchange between two tokio runtimes and between two Gs. Every row is a ping-pong:
//! side A sends `i`, side B answers `i + 1`, A checks it; the unit is one round trip.
//!
//! Rows (all channels have capacity 1, tokio's mpsc having no rendezvous channel):
//! - `goro_tokio`: a G on a goro runtime with 2 Ps, a task on a tokio multi-thread runtime
//!   with 1 worker, over two goro channels. Each message from the task wakes the G from a
//!   thread that holds no P of the goro runtime (a tokio worker).
//! - `goro_tokio_w2`: the same with 2 tokio workers.
//! - `goro_main_tokio`: as `goro_tokio` with the main G (`block_on`'s future, as under
//!   `#[goro::main]`) in place of a spawned G: its waker unparks the thread of `block_on`.
//! - `tokio_tokio`: the goro runtime replaced by a tokio runtime of the same size (2 workers),
//!   the goro channels by `tokio::sync::mpsc`: a task on it, a task on a second runtime with 1
//!   worker: the peer of two tokio runtimes over a tokio channel.
//! - `tokio_tokio_w2`: the same with 2 workers on the second runtime.
//! - `goro_goro`: two Gs on the goro runtime (2 Ps) over goro channels.
//!
//! Side A times its round trips itself and returns the elapsed time (spawning and joining the
//! two sides is not measured). Runs are tens of ms, so flat sampling. ns per round trip =
//! `median` of `target/criterion/cross_executor/<row>/new/estimates.json` / `ROUND_TRIPS`.
//!
//! `CROSS_EXECUTOR_ONCE=<row>:<n> cargo bench -p goro-benches --bench cross_executor` skips criterion and runs
//! `n` round trips of one row once (after a warm-up of 1 000), printing the time per round trip
//! and the context switches of the whole process per round trip (from `/proc/self/task/*/
//! status`); under `perf stat -e context-switches` it gives the per-round-trip figure of one row
//! with nothing else running.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

/// Ps of the goro runtime, workers of the tokio runtime that stands in for it.
const WORKERS: usize = 2;
/// Round trips per run.
const ROUND_TRIPS: u64 = 5_000;
const CAP: usize = 1;

fn tokio_rt(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(workers).build().expect("tokio runtime")
}

/// The runtimes, built once per process and kept (their threads sleep between rows).
struct Runtimes {
    goro: goro::runtime::Runtime,
    /// Side A of the tokio_tokio rows (the goro runtime's stand-in).
    tokio_a: tokio::runtime::Runtime,
    tokio_w1: tokio::runtime::Runtime,
    tokio_w2: tokio::runtime::Runtime,
}

fn rts() -> &'static Runtimes {
    static RTS: OnceLock<Runtimes> = OnceLock::new();
    RTS.get_or_init(|| Runtimes {
        goro: goro::runtime::Builder::new().max_procs(WORKERS).build().expect("goro runtime"),
        tokio_a: tokio_rt(WORKERS),
        tokio_w1: tokio_rt(1),
        tokio_w2: tokio_rt(2),
    })
}

/// Side A over goro channels: `n` round trips, timed.
async fn goro_ping(n: u64, tx: goro::chan::Sender<u64>, rx: goro::chan::Receiver<u64>) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        tx.send(i).await.expect("B is gone");
        assert_eq!(rx.recv().await, Some(i + 1));
    }
    start.elapsed()
}

/// Side B over goro channels: answers until A hangs up.
async fn goro_pong(tx: goro::chan::Sender<u64>, rx: goro::chan::Receiver<u64>) {
    while let Some(i) = rx.recv().await {
        if tx.send(i + 1).await.is_err() {
            break;
        }
    }
}

/// One side's ends: where it sends, where it receives.
type GoroEnds = (goro::chan::Sender<u64>, goro::chan::Receiver<u64>);

/// Two goro channels, A to B and B to A: A's ends, B's ends.
fn goro_pair() -> (GoroEnds, GoroEnds) {
    let (to_b, from_a) = goro::chan::<u64>(CAP);
    let (to_a, from_b) = goro::chan::<u64>(CAP);
    ((to_b, from_b), (to_a, from_a))
}

/// A G on the goro runtime against a task on `tokio`.
fn goro_tokio(n: u64, tokio: &tokio::runtime::Runtime) -> Duration {
    let ((tx_a, rx_a), (tx_b, rx_b)) = goro_pair();
    let b = tokio.spawn(goro_pong(tx_b, rx_b));
    let d = rts().goro.spawn(goro_ping(n, tx_a, rx_a)).join().expect("side A");
    tokio.block_on(b).expect("side B");
    d
}

/// The main G (`block_on`'s future, as under `#[goro::main]`) against a task on `tokio`.
fn goro_main_tokio(n: u64, tokio: &tokio::runtime::Runtime) -> Duration {
    let ((tx_a, rx_a), (tx_b, rx_b)) = goro_pair();
    let b = tokio.spawn(goro_pong(tx_b, rx_b));
    let d = rts().goro.block_on(goro_ping(n, tx_a, rx_a));
    tokio.block_on(b).expect("side B");
    d
}

/// Two Gs on the goro runtime.
fn goro_goro(n: u64) -> Duration {
    let ((tx_a, rx_a), (tx_b, rx_b)) = goro_pair();
    let rt = &rts().goro;
    let b = rt.spawn(goro_pong(tx_b, rx_b));
    let d = rt.spawn(goro_ping(n, tx_a, rx_a)).join().expect("side A");
    b.join().expect("side B");
    d
}

/// A task on the goro runtime's tokio stand-in against a task on `b_rt`, over tokio channels.
fn tokio_tokio(n: u64, b_rt: &tokio::runtime::Runtime) -> Duration {
    use tokio::sync::mpsc;
    let (tx_a, mut rx_b) = mpsc::channel::<u64>(CAP);
    let (tx_b, mut rx_a) = mpsc::channel::<u64>(CAP);
    let b = b_rt.spawn(async move {
        while let Some(i) = rx_b.recv().await {
            if tx_b.send(i + 1).await.is_err() {
                break;
            }
        }
    });
    let a_rt = &rts().tokio_a;
    let a = a_rt.spawn(async move {
        let start = Instant::now();
        for i in 0..n {
            tx_a.send(i).await.expect("B is gone");
            assert_eq!(rx_a.recv().await, Some(i + 1));
        }
        start.elapsed()
    });
    let d = a_rt.block_on(a).expect("side A");
    b_rt.block_on(b).expect("side B");
    d
}

/// One run of a row: `n` round trips, and the time they took.
type Run = fn(u64) -> Duration;

/// The rows: name and run.
fn rows() -> Vec<(&'static str, Run)> {
    vec![
        ("goro_tokio", |n| goro_tokio(n, &rts().tokio_w1)),
        ("goro_tokio_w2", |n| goro_tokio(n, &rts().tokio_w2)),
        ("goro_main_tokio", |n| goro_main_tokio(n, &rts().tokio_w1)),
        ("tokio_tokio", |n| tokio_tokio(n, &rts().tokio_w1)),
        ("tokio_tokio_w2", |n| tokio_tokio(n, &rts().tokio_w2)),
        ("goro_goro", goro_goro),
    ]
}

/// Voluntary and involuntary context switches of every thread of this process so far.
fn ctx_switches() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        for line in status.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    total
}

/// `CROSS_EXECUTOR_ONCE=<row>:<n>`: one run of one row, outside criterion.
fn once(spec: &str) {
    let (name, n) = spec.split_once(':').unwrap_or((spec, "100000"));
    let n: u64 = n.parse().expect("CROSS_EXECUTOR_ONCE=<row>:<round trips>");
    let run = rows().into_iter().find(|r| r.0 == name).unwrap_or_else(|| panic!("no row {name}")).1;
    run(1_000);
    let cs = ctx_switches();
    let d = run(n);
    let cs = ctx_switches() - cs;
    println!(
        "{name}: {n} round trips, {:.2} us per round trip, {:.2} context switches per round trip (threads alive now)",
        d.as_secs_f64() * 1e6 / n as f64,
        cs as f64 / n as f64
    );
}

fn benches(c: &mut Criterion) {
    if let Ok(spec) = std::env::var("CROSS_EXECUTOR_ONCE") {
        once(&spec);
        return;
    }
    let mut g = c.benchmark_group("cross_executor");
    g.throughput(Throughput::Elements(ROUND_TRIPS))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, run) in rows() {
        g.bench_function(name, |b| b.iter_custom(|iters| (0..iters).map(|_| run(ROUND_TRIPS)).sum()));
    }
    g.finish();
}

criterion_group!(cross_executor, benches);
criterion_main!(cross_executor);
