//! A select chooses among its ready cases at random, as Go's does: fairness among ready cases
//! (Go's TestPseudoRandomSend among them), Go's TestSelfSelect, its non-blocking select races
//! (TestNonblockRecvRace, TestNonblockSelectRace) and TestSelectStress.
//!
//! A select is made to *wait* deterministically by polling the future that contains it by hand
//! (it is armed on every channel once `poll` returns `Pending`).

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{Receiver, Sender};
use std::task::Poll;

// ---------------------------------------------------------------------------------------------
// Fairness
// ---------------------------------------------------------------------------------------------

const FAIR_N: usize = 100_000;

#[track_caller]
fn assert_fair(counts: &[usize], total: usize, lo: f64, hi: f64) {
    assert_eq!(counts.iter().sum::<usize>(), total);
    for (i, &c) in counts.iter().enumerate() {
        let f = c as f64 / total as f64;
        assert!((lo..=hi).contains(&f), "case {i} chosen {c} of {total} times ({f:.4}): {counts:?}");
    }
}

/// Three ready receive cases (each channel kept non-empty): each is chosen about 1/3 of the time.
#[test]
fn select_fairness_among_ready_recv_cases_blocking() {
    let _w = watchdog("select_fairness_among_ready_recv_cases_blocking");
    let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..3).map(|_| goro::chan(100)).collect();
    for (tx, _) in &chans {
        for _ in 0..50 {
            tx.try_send(0).unwrap();
        }
    }
    let mut counts = [0usize; 3];
    for _ in 0..FAIR_N {
        let i = goro::select_blocking! {
            recv(chans[0].1) -> v => { assert_eq!(v, Some(0)); 0 },
            recv(chans[1].1) -> v => { assert_eq!(v, Some(0)); 1 },
            recv(chans[2].1) -> v => { assert_eq!(v, Some(0)); 2 },
        };
        counts[i] += 1;
        chans[i].0.try_send(0).unwrap();
    }
    assert_fair(&counts, FAIR_N, 0.30, 0.37);
}

#[test]
fn select_fairness_among_ready_cases_in_a_g() {
    let _w = watchdog("select_fairness_among_ready_cases_in_a_g");
    let counts = rt(2).block_on(async {
        goro::go(async {
            let (a_tx, a_rx) = goro::chan::<u8>(100);
            let (b_tx, b_rx) = goro::chan::<u8>(100);
            // A send case with room counts as ready too.
            let (c_tx, c_rx) = goro::chan::<u8>(100);
            a_tx.try_send(1).unwrap();
            b_tx.try_send(2).unwrap();
            let mut counts = [0usize; 3];
            for _ in 0..FAIR_N {
                goro::select! {
                    recv(a_rx) -> _ => { counts[0] += 1; a_tx.try_send(1).unwrap(); },
                    recv(b_rx) -> _ => { counts[1] += 1; b_tx.try_send(2).unwrap(); },
                    send(c_tx, 3) -> r => { r.unwrap(); counts[2] += 1; c_rx.try_recv().unwrap(); },
                }
            }
            counts
        })
        .await
        .unwrap()
    });
    assert_fair(&counts, FAIR_N, 0.30, 0.37);
}

/// Go's TestPseudoRandomSend: two send cases on one channel; both get chosen.
fn pseudo_random_send(cap: usize) {
    let _w = watchdog("pseudo_random_send");
    const N: usize = 10_000;
    let got = rt(2).block_on(async move {
        let (tx, rx) = goro::chan::<usize>(cap);
        let r = goro::go(async move {
            let mut got = Vec::with_capacity(N);
            for _ in 0..N {
                goro::runtime::yield_now().await;
                got.push(rx.recv().await.unwrap());
            }
            got
        });
        for _ in 0..N {
            goro::select! {
                send(tx, 1) -> r => r.unwrap(),
                send(tx, 0) -> r => r.unwrap(),
            }
        }
        r.await.unwrap()
    });
    let ones: usize = got.iter().sum();
    let zeros = N - ones;
    assert!(zeros > N / 10 && ones > N / 10, "cap {cap}: want pseudorandom, got {zeros} zeros and {ones} ones");
}

#[test]
fn pseudo_random_send_buffered() {
    pseudo_random_send(10_000);
}

#[test]
fn pseudo_random_send_unbuffered() {
    pseudo_random_send(0);
}

/// The deterministic form of the property above: a select waits with two cases on one
/// channel; a peer arrives; over many rounds, both cases must get to fire (Go enqueues a
/// select's sudogs in lockorder, which it builds from the random pollorder, so equal-channel
/// cases queue randomly).
#[test]
fn waiting_select_picks_randomly_among_cases_on_one_channel() {
    let (tx, rx) = goro::chan::<usize>(0);
    let mut send_counts = [0usize; 2];
    let mut recv_counts = [0usize; 2];
    for _ in 0..1000 {
        let mut f = Box::pin(async {
            goro::select! {
                send(tx, 0) -> r => { r.unwrap(); 0 },
                send(tx, 1) -> r => { r.unwrap(); 1 },
            }
        });
        assert!(poll_noop(f.as_mut()).is_pending());
        let v = rx.try_recv().expect("the select waits to send");
        assert_eq!(poll_noop(f.as_mut()), Poll::Ready(v));
        send_counts[v] += 1;

        let mut f = Box::pin(async {
            goro::select! {
                recv(rx) -> v => (0, v),
                recv(rx) -> v => (1, v),
            }
        });
        assert!(poll_noop(f.as_mut()).is_pending());
        tx.try_send(9).expect("the select waits to receive");
        let Poll::Ready((case, v)) = poll_noop(f.as_mut()) else { panic!("the select did not fire") };
        assert_eq!(v, Some(9));
        recv_counts[case] += 1;
    }
    assert!(send_counts.iter().all(|&c| c > 300), "send cases fired {send_counts:?} times");
    assert!(recv_counts.iter().all(|&c| c > 300), "recv cases fired {recv_counts:?} times");
}

// ---------------------------------------------------------------------------------------------
// Self select (Go's TestSelfSelect)
// ---------------------------------------------------------------------------------------------

/// Two Gs each select { send(c, p), recv(c) } on one channel: they pair up, never receive their
/// own value on an unbuffered channel, and never deadlock.
#[test]
fn self_select() {
    let _w = watchdog("self_select");
    const ITERS: usize = 10_000;
    let rt = rt(2);
    for cap in [0usize, 1, 10] {
        rt.block_on(async move {
            let (tx, rx) = goro::chan::<usize>(cap);
            let hs: Vec<_> = (0..2)
                .map(|p| {
                    let (tx, rx) = (tx.clone(), rx.clone());
                    goro::go(async move {
                        let (mut sent, mut recvd) = (0, 0);
                        for i in 0..ITERS {
                            if p == 0 || i % 2 == 0 {
                                goro::select! {
                                    send(tx, p) -> r => { r.unwrap(); sent += 1 },
                                    recv(rx) -> v => {
                                        let v = v.unwrap();
                                        assert!(!(cap == 0 && v == p), "self receive");
                                        recvd += 1;
                                    },
                                }
                            } else {
                                goro::select! {
                                    recv(rx) -> v => {
                                        let v = v.unwrap();
                                        assert!(!(cap == 0 && v == p), "self receive");
                                        recvd += 1;
                                    },
                                    send(tx, p) -> r => { r.unwrap(); sent += 1 },
                                }
                            }
                        }
                        (sent, recvd)
                    })
                })
                .collect();
            let mut total = (0, 0);
            for h in hs {
                let (s, r) = h.await.unwrap();
                total = (total.0 + s, total.1 + r);
            }
            // Every value sent was received, except those still buffered.
            assert_eq!(total.0, total.1 + rx.len(), "cap {cap}: {total:?}");
            assert_eq!(total.0 + total.1, 2 * ITERS);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Go's non-blocking select races and TestSelectStress
// ---------------------------------------------------------------------------------------------

/// TestNonblockRecvRace: a non-blocking receive on a channel that holds a value (and is being
/// closed concurrently) never takes the default.
#[test]
fn nonblock_recv_race() {
    let _w = watchdog("nonblock_recv_race");
    let rt = rt(2);
    rt.block_on(async {
        for _ in 0..10_000 {
            let (tx, rx) = goro::chan::<i32>(1);
            tx.try_send(1).unwrap();
            let r = rx.clone();
            let h = goro::go(async move {
                goro::select! {
                    recv(r) -> _ => true,
                    default => false,
                }
            });
            tx.close();
            rx.recv().await;
            assert!(h.await.unwrap(), "chan is not ready");
        }
    });
}

/// TestNonblockSelectRace (and its close variant): from the G's start, at least one of c1, c2 is
/// always ready, so its non-blocking select must never take the default.
#[test]
fn nonblock_select_race() {
    let _w = watchdog("nonblock_select_race");
    let rt = rt(2);
    for close_c2 in [false, true] {
        rt.block_on(async move {
            for _ in 0..10_000 {
                let (c1_tx, c1_rx) = goro::chan::<i32>(1);
                let (c2_tx, c2_rx) = goro::chan::<i32>(if close_c2 { 0 } else { 1 });
                c1_tx.try_send(1).unwrap();
                let (r1, r2) = (c1_rx.clone(), c2_rx.clone());
                let h = goro::go(async move {
                    goro::select! {
                        recv(r1) -> _ => true,
                        recv(r2) -> _ => true,
                        default => false,
                    }
                });
                if close_c2 {
                    c2_tx.close();
                } else {
                    c2_tx.send(1).await.unwrap();
                }
                goro::select! {
                    recv(c1_rx) -> _ => (),
                    default => (),
                }
                assert!(h.await.unwrap(), "no chan is ready (close_c2 = {close_c2})");
            }
        });
    }
}

/// TestSelectStress: 4 channels (two unbuffered, two buffered); a plain sender and a plain
/// receiver per channel, plus one G that sends N on each in one select and one that receives N
/// on each in one select, nil-ing each channel when done. Nothing deadlocks, counts match.
#[test]
fn select_stress() {
    let _w = watchdog("select_stress");
    const N: usize = 20_000;
    rt(2).block_on(async {
        let chans: Vec<(Sender<usize>, Receiver<usize>)> =
            [0usize, 0, 2, 3].iter().map(|&cap| goro::chan(cap)).collect();
        let mut hs = Vec::new();
        for (tx, rx) in &chans {
            let tx = tx.clone();
            hs.push(goro::go(async move {
                for _ in 0..N {
                    tx.send(0).await.unwrap();
                }
            }));
            let rx = rx.clone();
            hs.push(goro::go(async move {
                for _ in 0..N {
                    rx.recv().await.unwrap();
                }
            }));
        }
        let txs: Vec<Sender<usize>> = chans.iter().map(|(t, _)| t.clone()).collect();
        hs.push(goro::go(async move {
            let mut n = [0usize; 4];
            let mut c: Vec<Option<&Sender<usize>>> = txs.iter().map(Some).collect();
            for _ in 0..4 * N {
                let i = goro::select! {
                    send(c[3], 0) -> r => { r.unwrap(); 3 },
                    send(c[2], 0) -> r => { r.unwrap(); 2 },
                    send(c[0], 0) -> r => { r.unwrap(); 0 },
                    send(c[1], 0) -> r => { r.unwrap(); 1 },
                };
                n[i] += 1;
                if n[i] == N {
                    c[i] = None;
                }
            }
            assert_eq!(n, [N; 4]);
        }));
        let rxs: Vec<Receiver<usize>> = chans.iter().map(|(_, r)| r.clone()).collect();
        hs.push(goro::go(async move {
            let mut n = [0usize; 4];
            let mut c: Vec<Option<&Receiver<usize>>> = rxs.iter().map(Some).collect();
            for _ in 0..4 * N {
                let i = goro::select! {
                    recv(c[0]) -> v => { v.unwrap(); 0 },
                    recv(c[1]) -> v => { v.unwrap(); 1 },
                    recv(c[2]) -> v => { v.unwrap(); 2 },
                    recv(c[3]) -> v => { v.unwrap(); 3 },
                };
                n[i] += 1;
                if n[i] == N {
                    c[i] = None;
                }
            }
            assert_eq!(n, [N; 4]);
        }));
        for h in hs {
            h.await.unwrap();
        }
        for (tx, _) in &chans {
            assert!(tx.is_empty());
        }
    });
}
