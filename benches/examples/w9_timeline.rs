//! W9's four tasks on a timeline, goro and the tokio `Notify` wait group side by side: when each
//! task started and ended, how much of the run had two tasks computing at once (both cores
//! hammering the one counter), and the run's cost per `add(1)`/`done()` pair. Written to see
//! whether W9's ratio is decided by how the runtimes spread the tasks or by the cost of the
//! contended pair itself (benches/README.md, "Reading the rows").
//!
//! ```sh
//! cargo run --release -p goro-benches --example w9_timeline -- 40   # runs of each system
//! ```
//!
//! Both run W9 as `benches/sync.rs` does, with its wait groups (tokio's is the bench's own,
//! `benches/common/notify_wg.rs`): goro's main is the `block_on` future, tokio's main a task
//! spawned on its 2-worker runtime.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "../common/notify_wg.rs"]
mod notify_wg;

use notify_wg::NotifyWaitGroup;

const TASKS: usize = 4;
const PAIRS: usize = 250_000;

/// When one task ran, from the run's start.
#[derive(Clone, Copy)]
struct Span {
    start: Duration,
    end: Duration,
}

/// One run: its time, and its tasks' spans.
struct Run {
    total: Duration,
    spans: Vec<Span>,
}

impl Run {
    fn ns_per_pair(&self) -> f64 {
        self.total.as_nanos() as f64 / (TASKS * PAIRS) as f64
    }

    /// The share of the run during which two tasks or more were computing.
    fn overlap(&self) -> f64 {
        let mut events: Vec<(Duration, i32)> = self.spans.iter().flat_map(|s| [(s.start, 1), (s.end, -1)]).collect();
        events.sort();
        let (mut running, mut last, mut both) = (0, Duration::ZERO, Duration::ZERO);
        for (t, d) in events {
            if running >= 2 {
                both += t - last;
            }
            running += d;
            last = t;
        }
        both.as_secs_f64() / self.total.as_secs_f64()
    }
}

/// Runs `pairs` on the shared counter and records the span.
fn timed(t0: Instant, spans: &Mutex<Vec<Span>>, pairs: impl FnOnce()) {
    let start = t0.elapsed();
    pairs();
    spans.lock().unwrap().push(Span { start, end: t0.elapsed() });
}

fn goro_run(rt: &goro::runtime::Runtime) -> Run {
    rt.block_on(async {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let t0 = Instant::now();
        let wg = goro::sync::WaitGroup::new();
        wg.add(TASKS as isize);
        for _ in 0..TASKS {
            let (wg, spans) = (wg.clone(), spans.clone());
            goro::go(async move {
                timed(t0, &spans, || {
                    for _ in 0..PAIRS {
                        wg.add(1);
                        wg.done();
                    }
                });
                wg.done();
            });
        }
        wg.wait().await;
        let total = t0.elapsed();
        let spans = spans.lock().unwrap().clone();
        Run { total, spans }
    })
}

fn tokio_run(rt: &tokio::runtime::Runtime) -> Run {
    rt.block_on(async {
        tokio::spawn(async {
            let spans = Arc::new(Mutex::new(Vec::new()));
            let t0 = Instant::now();
            let wg = Arc::new(NotifyWaitGroup::new());
            wg.add(TASKS);
            for _ in 0..TASKS {
                let (wg, spans) = (wg.clone(), spans.clone());
                tokio::spawn(async move {
                    timed(t0, &spans, || {
                        for _ in 0..PAIRS {
                            wg.add(1);
                            wg.done();
                        }
                    });
                    wg.done();
                });
            }
            wg.wait().await;
            let total = t0.elapsed();
            let spans = spans.lock().unwrap().clone();
            Run { total, spans }
        })
        .await
        .unwrap()
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(40);
    let goro_rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let tokio_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let (mut goro_runs, mut tokio_runs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        goro_runs.push(goro_run(&goro_rt));
        tokio_runs.push(tokio_run(&tokio_rt));
    }
    for (name, runs) in [("goro", &goro_runs), ("tokio_notify", &tokio_runs)] {
        let per_pair: Vec<f64> = runs.iter().map(Run::ns_per_pair).collect();
        let overlap: Vec<f64> = runs.iter().map(Run::overlap).collect();
        let (lo, hi) = per_pair.iter().fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        println!(
            "{name:>12}: {:.1} ns per pair (median of {} runs; {lo:.1}-{hi:.1}), two tasks computing for {:.2} of the run (median)",
            median(per_pair),
            runs.len(),
            median(overlap),
        );
    }
}
