//! Growth: does the cost of W1 (spawn) and W4 (unbuffered ping-pong) stay flat as the number of
//! live Gs grows? For each `live` in 1_000, 10_000, 100_000 and 1_000_000, this parks `live`
//! Gs on a gate channel, then times W1 and W4 exactly as benches/README.md defines them (W1: main
//! spawns 100_000 Gs that each bump a counter, and waits for all; W4: 100_000 round trips
//! between two Gs over two unbuffered channels), then closes the gate and waits for the parked
//! Gs to finish. `benches/go/growth` is the same program in Go; `benches/growth.py` runs both
//! and draws the chart.
//!
//! Not a criterion bench (a sweep with a costly setup per point): a plain `main` that prints one
//! line per point, in the format of the Go programs:
//! `growth W1 live=1000 goro median_ns_per_unit=105.2 runs=7`.
//!
//! ```text
//! cargo bench -p goro-benches --bench growth                   # every point
//! cargo bench -p goro-benches --bench growth -- 1000 1000000    # some points
//! ```

use goro::sync::WaitGroup;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spawns per W1 run.
const SPAWNS: u64 = 100_000;
/// Round trips per W4 run.
const ROUND_TRIPS: u64 = 100_000;
/// Timed runs per point, after one warm-up run.
const RUNS: usize = 7;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// One W1 run: its duration.
async fn w1() -> Duration {
    let start = Instant::now();
    let count = Arc::new(AtomicU64::new(0));
    let wg = WaitGroup::new();
    wg.add(SPAWNS as isize);
    for _ in 0..SPAWNS {
        let (count, wg) = (count.clone(), wg.clone());
        drop(goro::go(async move {
            count.fetch_add(1, Ordering::Relaxed);
            wg.done();
        }));
    }
    wg.wait().await;
    let took = start.elapsed();
    assert_eq!(count.load(Ordering::Relaxed), SPAWNS, "W1: lost an increment");
    took
}

/// One W4 run: its duration.
async fn w4() -> Duration {
    let start = Instant::now();
    let (ping_tx, ping_rx) = goro::chan::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::<u64>(0);
    let wg = WaitGroup::new();
    wg.go(async move {
        for i in 0..ROUND_TRIPS {
            ping_tx.send(i).await.unwrap();
            assert_eq!(pong_rx.recv().await, Some(i + 1), "W4: wrong answer");
        }
        // ping_tx drops: the ponger's loop ends.
    });
    wg.go(async move {
        while let Some(v) = ping_rx.recv().await {
            pong_tx.send(v + 1).await.unwrap();
        }
    });
    wg.wait().await;
    start.elapsed()
}

fn main() {
    // `cargo bench` passes `--bench`; numbers are the points to run.
    let mut points: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    if points.is_empty() {
        points = vec![1_000, 10_000, 100_000, 1_000_000];
    }
    let rt = goro::runtime::Builder::new().max_procs(2).build().expect("runtime");
    for live in points {
        rt.block_on(async move {
            // Park `live` Gs on a gate that closes at the end of the point.
            let (gate_tx, gate_rx) = goro::chan::<()>(0);
            let parked = WaitGroup::new();
            for _ in 0..live {
                let gate = gate_rx.clone();
                parked.go(async move {
                    assert_eq!(gate.recv().await, None, "the gate only closes");
                });
            }
            // Every parked G has run once and waits (its first poll queued its sudog).
            while goro::runtime::metrics().local_runq + goro::runtime::metrics().global_runq > 0 {
                goro::runtime::yield_now().await;
            }
            for (id, units, once) in [
                (
                    "W1",
                    SPAWNS,
                    (|| Box::pin(w1()))
                        as fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Duration> + Send>>,
                ),
                ("W4", ROUND_TRIPS, || Box::pin(w4())),
            ] {
                once().await; // warm-up
                let mut per_unit = Vec::with_capacity(RUNS);
                for _ in 0..RUNS {
                    per_unit.push(once().await.as_nanos() as f64 / units as f64);
                }
                assert!(goro::runtime::num_goroutine() as u64 > live, "the parked Gs are still alive");
                println!("growth {id} live={live} goro median_ns_per_unit={:.1} runs={RUNS}", median(per_unit));
            }
            drop(gate_tx); // closes the gate
            parked.wait().await;
        });
    }
}
