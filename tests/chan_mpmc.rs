//! Many producers and consumers on one channel: every value received exactly once (Go's
//! TestMultiConsumer among them), FIFO order per producer, and goro Gs and plain threads on
//! the two ends of one channel (tokio tasks: `tests/extra/tests/tokio_interop.rs`).
//!
//! Determinism: where a test needs a future to be *parked* on a channel, it polls the future by
//! hand (it is queued once `poll` returns `Pending`), or wraps a G's operation in
//! [`signal_on_pending`] which reports the first `Pending`. Nothing sleeps to synchronize.

mod common;

use common::chan::*;
use common::rt;

// ---------------------------------------------------------------------------------------------
// MPMC: every value received exactly once
// ---------------------------------------------------------------------------------------------

const PRODUCERS: u64 = 4;
const CONSUMERS: usize = 4;
const PER_PRODUCER: u64 = 20_000;
const TOTAL: u64 = PRODUCERS * PER_PRODUCER;

fn range_of(p: u64) -> std::ops::Range<u64> {
    p * PER_PRODUCER..(p + 1) * PER_PRODUCER
}

fn mpmc_goro(cap: usize) {
    let _w = watchdog("mpmc_goro");
    let got = rt(2).block_on(async move {
        let (tx, rx) = goro::chan::<u64>(cap);
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let tx = tx.clone();
                goro::go(async move {
                    for v in range_of(p) {
                        tx.send(v).await.expect("receivers are alive");
                    }
                })
            })
            .collect();
        drop(tx);
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let rx = rx.clone();
                goro::go(async move {
                    let mut got = Vec::new();
                    while let Some(v) = rx.recv().await {
                        got.push(v);
                    }
                    got
                })
            })
            .collect();
        drop(rx);
        for p in producers {
            p.await.unwrap();
        }
        let mut all = Vec::new();
        for c in consumers {
            all.extend(c.await.unwrap());
        }
        all
    });
    assert_exactly_once(got, TOTAL);
}

fn mpmc_threads(cap: usize) {
    let _w = watchdog("mpmc_threads");
    let (tx, rx) = goro::chan::<u64>(cap);
    let got = std::thread::scope(|s| {
        for p in 0..PRODUCERS {
            let tx = tx.clone();
            s.spawn(move || {
                for v in range_of(p) {
                    tx.send_blocking(v).unwrap();
                }
            });
        }
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let rx = rx.clone();
                s.spawn(move || {
                    let mut got = Vec::new();
                    while let Some(v) = rx.recv_blocking() {
                        got.push(v);
                    }
                    got
                })
            })
            .collect();
        drop(tx);
        drop(rx);
        consumers.into_iter().flat_map(|c| c.join().unwrap()).collect::<Vec<_>>()
    });
    assert_exactly_once(got, TOTAL);
}

/// Threads send, Gs receive (and the reverse): the two worlds share one channel.
fn mpmc_mixed(cap: usize) {
    let _w = watchdog("mpmc_mixed");
    let rt = rt(2);
    // Threads -> Gs.
    let (tx, rx) = goro::chan::<u64>(cap);
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let rx = rx.clone();
            rt.spawn(async move {
                let mut got = Vec::new();
                while let Some(v) = rx.recv().await {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    drop(rx);
    std::thread::scope(|s| {
        for p in 0..PRODUCERS {
            let tx = tx.clone();
            s.spawn(move || {
                for v in range_of(p) {
                    tx.send_blocking(v).unwrap();
                }
            });
        }
        drop(tx);
    });
    let got: Vec<u64> = consumers.into_iter().flat_map(|c| c.join().unwrap()).collect();
    assert_exactly_once(got, TOTAL);

    // Gs -> threads, and the Gs and threads both receive.
    let (tx, rx) = goro::chan::<u64>(cap);
    for p in 0..PRODUCERS {
        let tx = tx.clone();
        rt.spawn(async move {
            for v in range_of(p) {
                tx.send(v).await.unwrap();
            }
        });
    }
    drop(tx);
    let g_consumer = {
        let rx = rx.clone();
        rt.spawn(async move {
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                got.push(v);
            }
            got
        })
    };
    let got = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let rx = rx.clone();
                s.spawn(move || rx.iter().collect::<Vec<_>>())
            })
            .collect();
        drop(rx);
        let mut got: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        got.extend(g_consumer.join().unwrap());
        got
    });
    assert_exactly_once(got, TOTAL);
}

#[test]
fn mpmc_goro_cap0() {
    mpmc_goro(0);
}
#[test]
fn mpmc_goro_cap1() {
    mpmc_goro(1);
}
#[test]
fn mpmc_goro_cap10() {
    mpmc_goro(10);
}
#[test]
fn mpmc_goro_cap100() {
    mpmc_goro(100);
}
#[test]
fn mpmc_threads_cap0() {
    mpmc_threads(0);
}
#[test]
fn mpmc_threads_cap1() {
    mpmc_threads(1);
}
#[test]
fn mpmc_threads_cap10() {
    mpmc_threads(10);
}
#[test]
fn mpmc_threads_cap100() {
    mpmc_threads(100);
}
#[test]
fn mpmc_mixed_cap0() {
    mpmc_mixed(0);
}
#[test]
fn mpmc_mixed_cap1() {
    mpmc_mixed(1);
}
#[test]
fn mpmc_mixed_cap10() {
    mpmc_mixed(10);
}
#[test]
fn mpmc_mixed_cap100() {
    mpmc_mixed(100);
}

/// Go's TestMultiConsumer: 23 workers range over a work queue, messing with its FIFO-ish order
/// by yielding on some values, and forward to a result queue; the sum and count must match.
#[test]
fn multi_consumer() {
    let _w = watchdog("multi_consumer");
    const NWORK: usize = 23;
    const NITER: usize = 100_000;
    const PN: [u64; 10] = [2, 3, 7, 11, 13, 17, 19, 23, 27, 31];
    let (n, s, expect) = rt(2).block_on(async {
        let (qtx, qrx) = goro::chan::<u64>(NWORK * 3);
        let (rtx, rrx) = goro::chan::<u64>(NWORK * 3);
        let workers: Vec<_> = (0..NWORK)
            .map(|w| {
                let (qrx, rtx) = (qrx.clone(), rtx.clone());
                goro::go(async move {
                    while let Some(v) = qrx.recv().await {
                        if PN[w % PN.len()] == v {
                            goro::runtime::yield_now().await;
                        }
                        rtx.send(v).await.unwrap();
                    }
                })
            })
            .collect();
        drop((qrx, rtx));
        let feeder = goro::go(async move {
            let mut expect = 0;
            for i in 0..NITER {
                let v = PN[i % PN.len()];
                expect += v;
                qtx.send(v).await.unwrap();
            }
            qtx.close();
            for w in workers {
                w.await.unwrap();
            }
            // Every worker's `rtx` is gone now: `rrx` ends.
            expect
        });
        let (mut n, mut s) = (0, 0);
        while let Some(v) = rrx.recv().await {
            n += 1;
            s += v;
        }
        (n, s, feeder.await.unwrap())
    });
    assert_eq!((n, s), (NITER, expect));
}

// ---------------------------------------------------------------------------------------------
// FIFO order per producer
// ---------------------------------------------------------------------------------------------

const FIFO_N: u64 = 10_000;

fn check_fifo(got: impl IntoIterator<Item = (usize, u64)>, producers: usize) {
    let mut next = vec![0u64; producers];
    for (p, seq) in got {
        assert_eq!(seq, next[p], "producer {p}: out of order");
        next[p] += 1;
    }
    assert!(next.iter().all(|&n| n == FIFO_N), "{next:?}");
}

#[test]
fn fifo_per_producer_goro() {
    let _w = watchdog("fifo_per_producer_goro");
    let rt = rt(2);
    for cap in [0, 1, 10, 1000] {
        let got = rt.block_on(async move {
            let (tx, rx) = goro::chan::<(usize, u64)>(cap);
            for p in 0..3 {
                let tx = tx.clone();
                goro::go(async move {
                    for seq in 0..FIFO_N {
                        tx.send((p, seq)).await.unwrap();
                    }
                });
            }
            drop(tx);
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                got.push(v);
            }
            got
        });
        check_fifo(got, 3);
    }
}

#[test]
fn fifo_per_producer_threads() {
    let _w = watchdog("fifo_per_producer_threads");
    for cap in [0, 1, 10, 1000] {
        let (tx, rx) = goro::chan::<(usize, u64)>(cap);
        std::thread::scope(|s| {
            for p in 0..3 {
                let tx = tx.clone();
                s.spawn(move || {
                    for seq in 0..FIFO_N {
                        tx.send_blocking((p, seq)).unwrap();
                    }
                });
            }
            drop(tx);
            check_fifo(rx.iter(), 3);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Two worlds: goro Gs and plain threads
// ---------------------------------------------------------------------------------------------

#[test]
fn ping_pong_on_goro() {
    let _w = watchdog("ping_pong_on_goro");
    for cap in [0usize, 1] {
        let (sum, n) = rt(2).block_on(async move {
            let (ping_tx, ping_rx) = goro::chan(cap);
            let (pong_tx, pong_rx) = goro::chan(cap);
            let p = goro::go(pong(ping_rx, pong_tx));
            let sum = goro::go(ping(ping_tx, pong_rx)).await.unwrap();
            (sum, p.await.unwrap())
        });
        assert_eq!((sum, n), (PING_SUM, ROUNDS));
    }
}

#[test]
fn ping_pong_on_threads() {
    let _w = watchdog("ping_pong_on_threads");
    let (ping_tx, ping_rx) = goro::chan::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::<u64>(0);
    let p = std::thread::spawn(move || {
        let mut n = 0;
        for v in ping_rx.iter() {
            pong_tx.send_blocking(v + 1).unwrap();
            n += 1;
        }
        n
    });
    let mut sum = 0;
    for i in 0..ROUNDS {
        ping_tx.send_blocking(i).unwrap();
        let r = pong_rx.recv_blocking().unwrap();
        assert_eq!(r, i + 1);
        sum += r;
    }
    drop(ping_tx);
    assert_eq!((sum, p.join().unwrap()), (PING_SUM, ROUNDS));
}

/// Across worlds: a plain thread pings a goro G (a goro G against a tokio task is in
/// `tests/extra/tests/tokio_interop.rs`).
#[test]
fn ping_pong_thread_and_g() {
    let _w = watchdog("ping_pong_thread_and_g");
    let goro_rt = rt(2);
    let (ping_tx, ping_rx) = goro::chan::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::<u64>(0);
    let p = goro_rt.spawn(pong(ping_rx, pong_tx));
    let mut sum = 0;
    for i in 0..ROUNDS {
        ping_tx.send_blocking(i).unwrap();
        sum += pong_rx.recv_blocking().unwrap();
    }
    drop(ping_tx);
    assert_eq!((sum, p.join().unwrap()), (PING_SUM, ROUNDS));
}
