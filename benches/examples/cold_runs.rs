//! The first runs of W3 (200 tasks yield 1_000 times each) and W7 (4 producers and 4 consumers
//! on one rendezvous channel, 400_000 messages) in a fresh process, for goro and for its best
//! peer on the row (may's coroutines for W3, kanal on a 2-worker tokio runtime for W7): ns per
//! unit of each of the first `runs` runs, the runtime built before the first. criterion's
//! figures come after seconds of warm-up; a harness that starts a process per measurement, or
//! a short program, sees these.
//!
//! ```sh
//! cargo build --release -p goro-benches --example cold_runs
//! for i in 1 2 3; do for s in goro-w3 may-w3 goro-w7 kanal-w7; do
//!     target/release/examples/cold_runs $s 5; done; done
//! ```
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::Instant;
#[path = "../common/w7.rs"]
mod w7;

const YIELD_TASKS: usize = 200;
const YIELDS: usize = 1_000;

async fn goro_w3() {
    let left = Arc::new(AtomicUsize::new(YIELD_TASKS));
    let (tx, rx) = goro::chan::<()>(1);
    for _ in 0..YIELD_TASKS {
        let (left, tx) = (left.clone(), tx.clone());
        drop(goro::go(async move {
            for _ in 0..YIELDS {
                goro::runtime::yield_now().await;
            }
            if left.fetch_sub(1, AcqRel) == 1 {
                tx.send(()).await.unwrap();
            }
        }));
    }
    rx.recv().await;
}

fn may_w3() {
    let hs: Vec<_> = (0..YIELD_TASKS)
        .map(|_| {
            // SAFETY: may's contract for a coroutine: it reads no thread-local storage, stays
            // within may's default stack (a few words here) and blocks only through may.
            unsafe {
                may::coroutine::spawn(|| {
                    for _ in 0..YIELDS {
                        may::coroutine::yield_now();
                    }
                })
            }
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "goro-w3".into());
    let runs: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(5);
    let mut out = Vec::new();
    let w3 = (YIELD_TASKS * YIELDS) as f64;
    let w7_units = w7::MSGS as f64;
    match which.as_str() {
        "goro-w3" | "goro-w7" => {
            let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
            for _ in 0..runs {
                let t0 = Instant::now();
                if which == "goro-w3" {
                    rt.block_on(goro_w3());
                    out.push(t0.elapsed().as_nanos() as f64 / w3);
                } else {
                    rt.block_on(w7::goro_run());
                    out.push(t0.elapsed().as_nanos() as f64 / w7_units);
                }
            }
        }
        "may-w3" => {
            may::config().set_workers(2);
            for _ in 0..runs {
                let t0 = Instant::now();
                // SAFETY: as in `may_w3`: `may_w3` itself only spawns and joins may's coroutines.
                unsafe { may::coroutine::spawn(may_w3) }.join().unwrap();
                out.push(t0.elapsed().as_nanos() as f64 / w3);
            }
        }
        "kanal-w7" => {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
            for _ in 0..runs {
                let t0 = Instant::now();
                rt.block_on(rt.spawn(w7::kanal_run())).unwrap();
                out.push(t0.elapsed().as_nanos() as f64 / w7_units);
            }
        }
        other => panic!("cold_runs: unknown system {other} (goro-w3, may-w3, goro-w7, kanal-w7)"),
    }
    let line: Vec<String> = out.iter().map(|v| format!("{v:.1}")).collect();
    println!("{which:9} {}", line.join(" "));
}
