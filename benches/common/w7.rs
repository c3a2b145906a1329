//! W7's workload written out for the probes (`examples/w7_probe.rs`, `examples/cold_runs.rs`),
//! as `benches/chan.rs` runs it: 4 producers and 4 consumers on one rendezvous channel,
//! 400_000 messages in all, on goro ([`goro_run`]) and on kanal with tokio ([`kanal_run`]).
//! Each checks the sum of the messages received.
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;

pub const TASKS: u64 = 4;
pub const MSGS: u64 = 400_000;

pub async fn goro_run() {
    let (tx, rx) = goro::chan::<u64>(0);
    let left = Arc::new(AtomicUsize::new(2 * TASKS as usize));
    let sum = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = goro::chan::<()>(1);
    for _ in 0..TASKS {
        let (rx, left, sum, done) = (rx.clone(), left.clone(), sum.clone(), done_tx.clone());
        drop(goro::go(async move {
            let mut s = 0;
            while let Some(v) = rx.recv().await {
                s += v;
            }
            sum.fetch_add(s, Relaxed);
            if left.fetch_sub(1, AcqRel) == 1 {
                done.send(()).await.unwrap();
            }
        }));
    }
    drop(rx);
    for k in 0..TASKS {
        let (tx, left, done) = (tx.clone(), left.clone(), done_tx.clone());
        drop(goro::go(async move {
            for v in (k..MSGS).step_by(TASKS as usize) {
                tx.send(v).await.unwrap();
            }
            drop(tx);
            if left.fetch_sub(1, AcqRel) == 1 {
                done.send(()).await.unwrap();
            }
        }));
    }
    drop(tx);
    done_rx.recv().await;
    assert_eq!(sum.load(Relaxed), MSGS * (MSGS - 1) / 2);
}

pub async fn kanal_run() {
    let (tx, rx) = kanal::bounded_async::<u64>(0);
    let consumers: Vec<_> = (0..TASKS)
        .map(|_| {
            let rx = rx.clone();
            tokio::spawn(async move {
                let mut s = 0;
                while let Ok(v) = rx.recv().await {
                    s += v;
                }
                s
            })
        })
        .collect();
    drop(rx);
    let producers: Vec<_> = (0..TASKS)
        .map(|k| {
            let tx = tx.clone();
            tokio::spawn(async move {
                for v in (k..MSGS).step_by(TASKS as usize) {
                    tx.send(v).await.unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for p in producers {
        p.await.unwrap();
    }
    let mut sum = 0;
    for c in consumers {
        sum += c.await.unwrap();
    }
    assert_eq!(sum, MSGS * (MSGS - 1) / 2);
}
