//! goro beside tokio: goro's channels used by tokio tasks (a `Receiver` as a `Stream`, ping-pong
//! on both tokio schedulers and between a G and a tokio task), the deadlock check that a tokio
//! task able to send keeps quiet, and the ad hoc W10 timing against tokio's Mutex. They are in
//! the member that may depend on tokio, so that the facade's own tests, and a build of goro, do
//! not; their tokio-free neighbours are in `tests/chan.rs`, `tests/chan_mpmc.rs`,
//! `tests/deadlock.rs` and `tests/sync_mutex.rs`.
//!
//! Tokio inside Gs (through the thread hooks) is in `thread_hooks.rs`.

#[path = "../../common/mod.rs"]
mod common;

use common::chan::{ping, pong, PING_SUM, ROUNDS};
use common::child::{is_child, run_child};
use common::{rt, watchdog, HANG};
use goro::chan::Receiver;
use goro::sync::Mutex;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Channels on tokio (on Gs and plain threads: tests/chan_mpmc.rs)
// ---------------------------------------------------------------------------------------------

fn next<T>(rx: &mut Receiver<T>) -> impl Future<Output = Option<T>> + '_ {
    poll_fn(move |cx| futures_core::Stream::poll_next(Pin::new(&mut *rx), cx))
}

#[test]
fn stream_on_tokio() {
    let _w = watchdog("stream_on_tokio", HANG);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let got = rt.block_on(async {
        let (tx, mut rx) = goro::chan::<u32>(0);
        tokio::spawn(async move {
            for i in 0..100 {
                tx.send(i).await.unwrap();
            }
        });
        let mut got = Vec::new();
        while let Some(v) = next(&mut rx).await {
            got.push(v);
        }
        got
    });
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn ping_pong_on_tokio_current_thread() {
    let _w = watchdog("ping_pong_on_tokio_current_thread", HANG);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (sum, n) = rt.block_on(async {
        let (ping_tx, ping_rx) = goro::chan(0);
        let (pong_tx, pong_rx) = goro::chan(0);
        let p = tokio::spawn(pong(ping_rx, pong_tx));
        let sum = ping(ping_tx, pong_rx).await;
        (sum, p.await.unwrap())
    });
    assert_eq!((sum, n), (PING_SUM, ROUNDS));
}

#[test]
fn ping_pong_on_tokio_multi_thread() {
    let _w = watchdog("ping_pong_on_tokio_multi_thread", HANG);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let (sum, n) = rt.block_on(async {
        let (ping_tx, ping_rx) = goro::chan(0);
        let (pong_tx, pong_rx) = goro::chan(0);
        let p = tokio::spawn(pong(ping_rx, pong_tx));
        let sum = tokio::spawn(ping(ping_tx, pong_rx)).await.unwrap();
        (sum, p.await.unwrap())
    });
    assert_eq!((sum, n), (PING_SUM, ROUNDS));
}

/// Across worlds: a goro G pings, a tokio task pongs.
#[test]
fn ping_pong_g_and_tokio_task() {
    let _w = watchdog("ping_pong_g_and_tokio_task", HANG);
    let tokio_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let goro_rt = rt(2);
    let (ping_tx, ping_rx) = goro::chan(0);
    let (pong_tx, pong_rx) = goro::chan(0);
    let p = tokio_rt.spawn(pong(ping_rx, pong_tx));
    let sum = goro_rt.spawn(ping(ping_tx, pong_rx)).join().unwrap();
    assert_eq!(sum, PING_SUM);
    assert_eq!(tokio_rt.block_on(p).unwrap(), ROUNDS);
}

// ---------------------------------------------------------------------------------------------
// No deadlock report while a tokio task can still send (from tests/deadlock.rs, which says why
// each case runs in a child process)
// ---------------------------------------------------------------------------------------------

const QUIET: Duration = Duration::from_millis(1500);

/// A runtime built as `#[goro::test]` builds it (the harness's main thread holds no channel).
fn harness_rt(procs: usize) -> goro::runtime::Runtime {
    goro::runtime::Builder::new().max_procs(procs).in_test_harness().build().unwrap()
}

/// A tokio task sends after the grace period.
#[test]
fn case_tokio_task() {
    if is_child("case_tokio_task") {
        let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_time().build().unwrap();
        let (tx, rx) = goro::chan::<u32>(0);
        tokio.spawn(async move {
            tokio::time::sleep(QUIET).await;
            tx.send(7).await.unwrap();
        });
        assert_eq!(harness_rt(2).block_on(async move { rx.recv().await }), Some(7));
    }
}

#[test]
fn no_report_for_a_tokio_task() {
    run_child("case_tokio_task", &[]);
}

// ---------------------------------------------------------------------------------------------
// W10 beside tokio's Mutex (from tests/sync_mutex.rs)
// ---------------------------------------------------------------------------------------------

/// W10 of `benches/README.md`, timed ad hoc (not an assertion): 4 Gs each increment a
/// counter under one Mutex 250_000 times, on 2 Ps; beside it the same on tokio's Mutex (2 worker
/// threads) and parking_lot's (through goro-runtime's internal shim, on the same Gs), and on 4
/// plain threads. Run with
/// `cargo test --release -p goro-extra-tests --test tokio_interop w10_timing -- --ignored --nocapture`.
#[test]
#[ignore = "timing, not a test: run by hand"]
fn w10_timing() {
    const GS: usize = 4;
    const N: usize = 250_000;
    let total = (GS * N) as f64;
    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    }
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("goro Mutex, 4 Gs on 2 Ps", vec![]),
        ("parking_lot Mutex, 4 Gs on 2 Ps", vec![]),
        ("tokio Mutex, 4 tasks on 2 workers", vec![]),
        ("goro Mutex lock_blocking, 4 threads", vec![]),
        ("parking_lot Mutex, 4 threads", vec![]),
    ];
    let goro_rt = rt(2);
    let tokio_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    for _ in 0..7 {
        let m = Arc::new(Mutex::new(0usize));
        let t = std::time::Instant::now();
        goro_rt.block_on(async {
            let hs: Vec<_> = (0..GS)
                .map(|_| {
                    let m = m.clone();
                    goro::go(async move {
                        for _ in 0..N {
                            *m.lock().await += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        rows[0].1.push(t.elapsed().as_nanos() as f64 / total);
        assert_eq!(*m.try_lock().unwrap(), GS * N);

        let m = Arc::new(goro_runtime::__private::shim::Mutex::new(0usize));
        let t = std::time::Instant::now();
        goro_rt.block_on(async {
            let hs: Vec<_> = (0..GS)
                .map(|_| {
                    let m = m.clone();
                    goro::go(async move {
                        for _ in 0..N {
                            *m.lock() += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        rows[1].1.push(t.elapsed().as_nanos() as f64 / total);

        let m = Arc::new(tokio::sync::Mutex::new(0usize));
        let t = std::time::Instant::now();
        tokio_rt.block_on(async {
            let hs: Vec<_> = (0..GS)
                .map(|_| {
                    let m = m.clone();
                    tokio::spawn(async move {
                        for _ in 0..N {
                            *m.lock().await += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        rows[2].1.push(t.elapsed().as_nanos() as f64 / total);

        let m = Arc::new(Mutex::new(0usize));
        let t = std::time::Instant::now();
        std::thread::scope(|s| {
            for _ in 0..GS {
                s.spawn(|| {
                    for _ in 0..N {
                        *m.lock_blocking() += 1;
                    }
                });
            }
        });
        rows[3].1.push(t.elapsed().as_nanos() as f64 / total);

        let m = goro_runtime::__private::shim::Mutex::new(0usize);
        let t = std::time::Instant::now();
        std::thread::scope(|s| {
            for _ in 0..GS {
                s.spawn(|| {
                    for _ in 0..N {
                        *m.lock() += 1;
                    }
                });
            }
        });
        rows[4].1.push(t.elapsed().as_nanos() as f64 / total);
    }
    for (name, v) in rows {
        let (min, max) = (v.iter().cloned().fold(f64::MAX, f64::min), v.iter().cloned().fold(0.0, f64::max));
        println!("W10 {name:<40} median {:>6.1} ns/increment (min {min:.1}, max {max:.1})", median(v));
    }
}
