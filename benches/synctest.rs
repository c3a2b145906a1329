//! What a `goro::synctest` bubble costs: the same two programs run in a bubble (uniform random
//! choices, and PCT) and on a one-P goro runtime, whose single M runs them the same way, one G
//! at a time.
//!
//! - `pingpong`: two Gs bounce a value over two unbuffered channels, 20_000 round trips (each
//!   round trip is two parks and two wakes: four steps of the bubble);
//! - `yields`: 100 Gs yield 200 times each (20_000 steps);
//! - `empty`: a bubble (or a runtime) built, run on an empty future, dropped.
//!
//! Throughput is in steps (`pingpong`: round trips), so ns per step = 1e9 / thrpt.
//!
//! `cargo bench -p goro-benches --bench synctest`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::future::Future;

const ROUND_TRIPS: usize = 20_000;
const YIELD_GS: usize = 100;
const YIELDS: usize = 200;
/// A seed that asks for PCT (top bit), depth 3, 2^14 expected steps (see `goro::synctest`).
const PCT_SEED: u64 = 1 << 63 | 14 << 56 | 3 << 52 | 7;

async fn pingpong() {
    let (a_tx, a_rx) = goro::chan::<u64>(0);
    let (b_tx, b_rx) = goro::chan::<u64>(0);
    let echo = goro::go(async move {
        while let Some(v) = a_rx.recv().await {
            b_tx.send(v).await.unwrap();
        }
    });
    for i in 0..ROUND_TRIPS as u64 {
        a_tx.send(i).await.unwrap();
        assert_eq!(b_rx.recv().await, Some(i));
    }
    drop(a_tx);
    echo.await.unwrap();
}

async fn yields() {
    let hs: Vec<_> = (0..YIELD_GS)
        .map(|_| {
            goro::go(async {
                for _ in 0..YIELDS {
                    goro::runtime::yield_now().await;
                }
            })
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
}

fn one_p<F: Future>(f: F) -> F::Output {
    let rt = goro::runtime::Builder::new().max_procs(1).build().unwrap();
    rt.block_on(f)
}

fn program<F: Future>(c: &mut Criterion, name: &str, units: usize, f: fn() -> F) {
    let mut g = c.benchmark_group(format!("bubble_{name}"));
    g.throughput(Throughput::Elements(units as u64));
    g.sample_size(20);
    g.bench_function("goro_1p", |b| b.iter(|| one_p(f())));
    g.bench_function("bubble_random", |b| b.iter(|| goro::synctest::test_seed(1, f())));
    g.bench_function("bubble_pct", |b| b.iter(|| goro::synctest::test_seed(PCT_SEED, f())));
    g.finish();
}

fn benches(c: &mut Criterion) {
    program(c, "pingpong", ROUND_TRIPS, pingpong);
    program(c, "yields", YIELD_GS * YIELDS, yields);
    program(c, "empty", 1, || async {});
}

criterion_group!(synctest, benches);
criterion_main!(synctest);
