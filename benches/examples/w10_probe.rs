//! W10 (4 tasks each increment one counter under one mutex 250_000 times) for goro's
//! `sync::Mutex` and for `parking_lot::Mutex` on a 2-worker tokio runtime, alternated in one
//! process: the median ns per increment of each and the median of the per-pair ratios. Written
//! to tune the mutex's spin (`crates/sync/src/mutex/spin.rs`), where criterion's separate runs
//! left the ratio to the machine's drift.
//!
//! ```sh
//! cargo run --release -p goro-benches --example w10_probe -- 30   # pairs of runs
//! ```
//!
//! The tasks are as in `benches/sync.rs`; main waits for them on a channel (goro) or on their
//! join handles (tokio).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

const TASKS: usize = 4;
const INCS: u64 = 250_000;

async fn goro_run() -> f64 {
    let m = Arc::new(goro::sync::Mutex::new(0u64));
    let left = Arc::new(AtomicUsize::new(TASKS));
    let (tx, rx) = goro::chan::<()>(1);
    let start = Instant::now();
    for _ in 0..TASKS {
        let (m, left, tx) = (m.clone(), left.clone(), tx.clone());
        drop(goro::go(async move {
            for _ in 0..INCS {
                *m.lock().await += 1;
            }
            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                tx.send(()).await.unwrap();
            }
        }));
    }
    rx.recv().await;
    let e = start.elapsed();
    assert_eq!(*m.lock().await, TASKS as u64 * INCS);
    e.as_nanos() as f64 / (TASKS as f64 * INCS as f64)
}

async fn pl_run() -> f64 {
    let m = Arc::new(parking_lot::Mutex::new(0u64));
    let start = Instant::now();
    let hs: Vec<_> = (0..TASKS)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move {
                for _ in 0..INCS {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
    let e = start.elapsed();
    assert_eq!(*m.lock(), TASKS as u64 * INCS);
    e.as_nanos() as f64 / (TASKS as f64 * INCS as f64)
}

fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(20);
    let g = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let t = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let (mut gs, mut ps) = (vec![], vec![]);
    for _ in 0..3 {
        g.block_on(goro_run());
        t.block_on(t.spawn(pl_run())).unwrap();
    }
    for _ in 0..n {
        gs.push(g.block_on(goro_run()));
        ps.push(t.block_on(t.spawn(pl_run())).unwrap());
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let mut r: Vec<f64> = gs.iter().zip(&ps).map(|(a, b)| a / b).collect();
    println!(
        "goro {:.1} ns  parking_lot {:.1} ns  ratio-median {:.2}  (goro min {:.1} max {:.1}; pl min {:.1} max {:.1})",
        med(&mut gs.clone()),
        med(&mut ps.clone()),
        med(&mut r),
        gs.iter().cloned().fold(f64::MAX, f64::min),
        gs.iter().cloned().fold(0.0, f64::max),
        ps.iter().cloned().fold(f64::MAX, f64::min),
        ps.iter().cloned().fold(0.0, f64::max)
    );
}
