//! `select!`, `select_blocking!` and the dynamic `goro::chan::Select`: fairness, default and nil
//! channels, exactly-one-fires, send cases that did not fire, closed channels, cancellation, big
//! selects, control flow in arm bodies, and Go's select tests from `src/runtime/chan_test.go`
//! (TestSelfSelect, TestSelectStress, TestNonblock*Race, TestSelectDuplicateChannel,
//! TestPseudoRandomSend).
//!
//! A select is made to *wait* deterministically by polling the future that contains it by hand
//! (it is armed on every channel once `poll` returns `Pending`).

// The 64-case test below compiles with the default recursion limit: `select!` takes one
// recursion step per case.

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{Receiver, Select, SendError, Sender, TryRecvError};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier};
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
                goro::yield_now().await;
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

/// The deterministic form of the bug above: a select waits with two cases on one channel; a
/// peer arrives; over many rounds, both cases must get to fire (Go enqueues a select's sudogs in
/// lockorder, which it builds from the random pollorder, so equal-channel cases queue randomly).
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
// default and nil channels
// ---------------------------------------------------------------------------------------------

#[test]
fn default_fires_when_nothing_is_ready() {
    let (tx, rx) = goro::chan::<u8>(0);
    let (ftx, _frx) = goro::chan::<u8>(1);
    ftx.try_send(0).unwrap(); // full
    let r = goro::select_blocking! {
        recv(rx) -> _ => "recv",
        send(ftx, 1) -> _ => "send",
        default => "default",
    };
    assert_eq!(r, "default");
    assert_eq!(ftx.len(), 1, "the send case did not send");
    // Only a default.
    assert_eq!(goro::select_blocking! { default => 5 }, 5);
    // Ready beats default, always.
    let (btx, brx) = goro::chan::<u8>(1);
    for i in 0..1000 {
        btx.try_send(7).unwrap();
        let r = goro::select_blocking! {
            recv(brx) -> v => v,
            default => None,
        };
        assert_eq!(r, Some(7), "iteration {i}");
    }
    drop(tx);
}

#[test]
fn nil_channels_never_fire() {
    let nil_rx: Option<&Receiver<i32>> = None;
    let nil_tx: Option<&Sender<i32>> = None;
    // Only nil cases and a default: the default fires.
    for _ in 0..100 {
        let r = goro::select_blocking! {
            recv(nil_rx) -> _ => 1,
            send(nil_tx, 5) -> _ => 2,
            recv(None::<&Receiver<i32>>) -> _ => 3,
            default => 0,
        };
        assert_eq!(r, 0);
    }
    // A nil case next to a ready one: the ready one always fires.
    let (tx, rx) = goro::chan::<i32>(1);
    for i in 0..10_000 {
        tx.try_send(i).unwrap();
        let r = goro::select_blocking! {
            recv(nil_rx) -> _ => None,
            send(nil_tx, 5) -> _ => None,
            recv(rx) -> v => v,
        };
        assert_eq!(r, Some(i));
    }
    // Options of owned handles work too; Some is a real channel.
    let some_rx: Option<Receiver<i32>> = Some(rx.clone());
    tx.try_send(9).unwrap();
    let r = goro::select_blocking! { recv(some_rx) -> v => v };
    assert_eq!(r, Some(9));
}

/// A select with only nil cases and no default waits forever (Go's `select {}` is the empty
/// version); dropping it is fine.
#[test]
fn select_on_only_nil_channels_waits_forever() {
    let nil_rx: Option<&Receiver<i32>> = None;
    let nil_tx: Option<&Sender<i32>> = None;
    let (waker, wakes) = counting_waker();
    let mut f = pin!(async {
        goro::select! {
            recv(nil_rx) -> _ => 1,
            send(nil_tx, 1) -> _ => 2,
        }
    });
    for _ in 0..10 {
        assert_pending(f.as_mut(), &waker);
    }
    assert_eq!(wakes.count(), 0);
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
// A send case that did not fire has not sent
// ---------------------------------------------------------------------------------------------

#[test]
fn unfired_send_case_has_not_sent_buffered() {
    let (a_tx, a_rx) = goro::chan::<usize>(20_000);
    let (b_tx, b_rx) = goro::chan::<usize>(20_000);
    let (mut a, mut b) = (0, 0);
    for i in 0..10_000 {
        let before = a_tx.len() + b_tx.len();
        goro::select_blocking! {
            send(a_tx, i) -> r => { r.unwrap(); a += 1 },
            send(b_tx, i) -> r => { r.unwrap(); b += 1 },
        }
        assert_eq!(a_tx.len() + b_tx.len(), before + 1, "exactly one send happened");
    }
    assert_eq!((a_rx.len(), b_rx.len()), (a, b));
    assert!(a > 0 && b > 0);
    // Each value is in exactly one of the channels.
    drop((a_tx, b_tx));
    let all: Vec<u64> = a_rx.iter().chain(b_rx.iter()).map(|v| v as u64).collect();
    assert_exactly_once(all, 10_000);
}

/// The waiting path: sends on two unbuffered channels with a receiver G on each; the values the
/// receivers got match exactly the cases that fired.
#[test]
fn unfired_send_case_has_not_sent_waiting() {
    let _w = watchdog("unfired_send_case_has_not_sent_waiting");
    const N: u64 = 20_000;
    let (fired, got) = rt(2).block_on(async {
        let (a_tx, a_rx) = goro::chan::<u64>(0);
        let (b_tx, b_rx) = goro::chan::<u64>(0);
        let collect = |rx: Receiver<u64>| {
            goro::go(async move {
                let mut got = Vec::new();
                while let Some(v) = rx.recv().await {
                    got.push(v);
                }
                got
            })
        };
        let (ha, hb) = (collect(a_rx), collect(b_rx));
        let mut fired = [0u64; 2];
        for i in 0..N {
            goro::select! {
                send(a_tx, i) -> r => { r.unwrap(); fired[0] += 1 },
                send(b_tx, i) -> r => { r.unwrap(); fired[1] += 1 },
            }
        }
        drop((a_tx, b_tx));
        (fired, [ha.await.unwrap(), hb.await.unwrap()])
    });
    assert_eq!(got[0].len() as u64, fired[0]);
    assert_eq!(got[1].len() as u64, fired[1]);
    assert_exactly_once(got[0].iter().chain(&got[1]).copied(), N);
}

/// A recv case fires; the send case's value was not sent and is dropped exactly once.
#[test]
fn unfired_send_case_value_is_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::<Tracked>(0);
    let (rtx, rrx) = goro::chan::<u8>(1);
    rtx.try_send(1).unwrap();
    let r = goro::select_blocking! {
        send(tx, Tracked::new(1, &drops)) -> _ => 0,
        recv(rrx) -> v => v.unwrap(),
    };
    assert_eq!(r, 1);
    assert_eq!(drops.load(SeqCst), 1);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    // The waiting path: armed, then the recv case wins.
    let mut f = Box::pin(async {
        goro::select! {
            send(tx, Tracked::new(2, &drops)) -> _ => 0,
            recv(rrx) -> v => v.unwrap(),
        }
    });
    assert!(poll_noop(f.as_mut()).is_pending());
    rtx.try_send(2).unwrap();
    assert_eq!(poll_noop(f.as_mut()), Poll::Ready(2));
    drop(f);
    assert_eq!(drops.load(SeqCst), 2);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)), "the loser's value was not sent");
}

// ---------------------------------------------------------------------------------------------
// Exactly one case fires
// ---------------------------------------------------------------------------------------------

/// Several ready cases: exactly one runs, the others' channels keep their values.
#[test]
fn exactly_one_of_many_ready_cases_fires() {
    let chans: Vec<(Sender<u32>, Receiver<u32>)> = (0..4).map(|_| goro::chan(1)).collect();
    for _ in 0..1000 {
        for (i, (tx, _)) in chans.iter().enumerate() {
            if tx.is_empty() {
                tx.try_send(i as u32).unwrap();
            }
        }
        let fired = goro::select_blocking! {
            recv(chans[0].1) -> v => v.unwrap(),
            recv(chans[1].1) -> v => v.unwrap(),
            recv(chans[2].1) -> v => v.unwrap(),
            recv(chans[3].1) -> v => v.unwrap(),
        };
        let lens: Vec<usize> = chans.iter().map(|(t, _)| t.len()).collect();
        for (i, &l) in lens.iter().enumerate() {
            assert_eq!(l, usize::from(i as u32 != fired), "{lens:?}, fired {fired}");
        }
    }
}

/// 32 threads race `try_send` on 32 unbuffered channels while one select waits on all of them:
/// exactly one `try_send` succeeds (the select takes it), the other 31 find nobody waiting.
#[test]
fn racing_senders_to_one_select_unbuffered() {
    let _w = watchdog("racing_senders_to_one_select_unbuffered");
    let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..32).map(|_| goro::chan(0)).collect();
    let rxs: Vec<&Receiver<usize>> = chans.iter().map(|(_, r)| r).collect();
    for round in 0..100 {
        let (waker, _wakes) = counting_waker();
        let mut sel = Box::pin(select32(&rxs));
        assert_pending(sel.as_mut(), &waker);
        let barrier = Barrier::new(32);
        let oks: Vec<bool> = std::thread::scope(|s| {
            let ts: Vec<_> = chans
                .iter()
                .enumerate()
                .map(|(i, (tx, _))| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        tx.try_send(i).is_ok()
                    })
                })
                .collect();
            ts.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let winners: Vec<usize> = (0..32).filter(|&i| oks[i]).collect();
        assert_eq!(winners.len(), 1, "round {round}: {winners:?} succeeded");
        let (case, v) = expect_ready(sel.as_mut(), &waker);
        assert_eq!((case, v), (winners[0], Some(winners[0])));
        for (tx, _) in &chans {
            assert!(tx.try_send(0).unwrap_err().is_full(), "the select left no sudog behind");
        }
    }
}

/// Same race with buffered channels: every `try_send` succeeds, the select takes exactly one
/// value and the other 31 stay in their channels.
#[test]
fn racing_senders_to_one_select_buffered() {
    let _w = watchdog("racing_senders_to_one_select_buffered");
    let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..32).map(|_| goro::chan(1)).collect();
    let rxs: Vec<&Receiver<usize>> = chans.iter().map(|(_, r)| r).collect();
    for round in 0..100 {
        let mut sel = Box::pin(select32(&rxs));
        assert!(poll_noop(sel.as_mut()).is_pending());
        let barrier = Barrier::new(32);
        std::thread::scope(|s| {
            for (i, (tx, _)) in chans.iter().enumerate() {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    tx.try_send(i).unwrap();
                });
            }
        });
        let Poll::Ready((case, v)) = poll_noop(sel.as_mut()) else { panic!("round {round}: the select did not fire") };
        assert_eq!(v, Some(case));
        drop(sel);
        for (i, (_, rx)) in chans.iter().enumerate() {
            if i == case {
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "round {round}: the winner's value was taken");
            } else {
                assert_eq!(rx.try_recv(), Ok(i), "round {round}: channel {i} lost its value");
            }
        }
    }
}

/// 32 Gs block in `send` on 32 unbuffered channels while a select waits on all: the select gets
/// one value, the rest are received afterwards, each exactly once.
#[test]
fn blocked_sender_gs_to_one_select() {
    let _w = watchdog("blocked_sender_gs_to_one_select");
    let rt = rt(2);
    for _ in 0..50 {
        let got = rt.block_on(async {
            let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..32).map(|_| goro::chan(0)).collect();
            let senders: Vec<_> = chans
                .iter()
                .enumerate()
                .map(|(i, (tx, _))| {
                    let tx = tx.clone();
                    goro::go(async move { tx.send(i).await.unwrap() })
                })
                .collect();
            let rxs: Vec<&Receiver<usize>> = chans.iter().map(|(_, r)| r).collect();
            let (case, v) = select32(&rxs).await;
            assert_eq!(v, Some(case));
            let mut got = vec![case as u64];
            for (i, (_, rx)) in chans.iter().enumerate() {
                if i != case {
                    got.push(rx.recv().await.unwrap() as u64);
                }
            }
            for s in senders {
                s.await.unwrap();
            }
            for (_, rx) in &chans {
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            }
            got
        });
        assert_exactly_once(got, 32);
    }
}

/// Go's TestSelectDuplicateChannel: a select names `c` twice; after it fires on `d`, a plain
/// receiver on `c` must still get the next value (the select's sudogs on `c` are all gone).
#[test]
fn select_duplicate_channel() {
    let (c_tx, c_rx) = goro::chan::<i32>(0);
    let (d_tx, d_rx) = goro::chan::<i32>(0);
    let mut a = Box::pin(async {
        goro::select! {
            recv(c_rx) -> v => ('c', v),
            recv(c_rx) -> v => ('c', v),
            recv(d_rx) -> v => ('d', v),
        }
    });
    assert!(poll_noop(a.as_mut()).is_pending());
    let mut b = Box::pin(c_rx.recv());
    assert!(poll_noop(b.as_mut()).is_pending());
    d_tx.try_send(7).unwrap();
    assert_eq!(poll_noop(a.as_mut()), Poll::Ready(('d', Some(7))));
    drop(a);
    c_tx.try_send(8).expect("B waits on c");
    assert_eq!(poll_noop(b.as_mut()), Poll::Ready(Some(8)));
    // Both duplicate cases can fire.
    let (tx, rx) = goro::chan::<u8>(1);
    let mut seen = [false; 2];
    for _ in 0..200 {
        tx.try_send(1).unwrap();
        let i = goro::select_blocking! {
            recv(rx) -> _ => 0,
            recv(rx) -> _ => 1,
        };
        seen[i] = true;
    }
    assert_eq!(seen, [true, true]);
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

// ---------------------------------------------------------------------------------------------
// Closed channels
// ---------------------------------------------------------------------------------------------

#[test]
fn select_on_closed_channels() {
    let (tx, rx) = goro::chan::<i32>(0);
    tx.close();
    let r = goro::select_blocking! {
        recv(rx) -> v => v,
    };
    assert_eq!(r, None, "a recv case on a closed channel fires with None");
    let r = goro::select_blocking! {
        send(tx, 5) -> r => r,
    };
    assert_eq!(r, Err(SendError(5)), "a send case on a closed channel fires with the value back");
    // Closed beats default.
    let r = goro::select_blocking! {
        recv(rx) -> v => Some(v),
        default => None,
    };
    assert_eq!(r, Some(None));
    // A channel without receivers: its send case fires with the value back.
    let (tx, rx) = goro::chan::<i32>(1);
    drop(rx);
    let r = goro::select_blocking! { send(tx, 6) -> r => r };
    assert_eq!(r, Err(SendError(6)));
}

/// Closing a channel while a select waits on it: the recv case fires with None; a waiting send
/// case fires with its value back.
#[test]
fn close_while_select_waits() {
    let (a_tx, a_rx) = goro::chan::<i32>(0);
    let (b_tx, b_rx) = goro::chan::<i32>(0);
    let (waker, wakes) = counting_waker();
    let mut f = Box::pin(async {
        goro::select! {
            recv(a_rx) -> v => Err(v),
            send(b_tx, 5) -> r => Ok(r),
        }
    });
    assert_pending(f.as_mut(), &waker);
    assert!(a_tx.close());
    assert_eq!(wakes.count(), 1);
    assert_eq!(expect_ready(f.as_mut(), &waker), Err(None));
    drop(f);
    assert_eq!(b_rx.try_recv(), Err(TryRecvError::Empty), "the losing send case did not send");

    let mut f = Box::pin(async {
        goro::select! {
            recv(a_rx) -> v => Err(v),
            send(b_tx, 6) -> r => Ok(r),
        }
    });
    // `a` is closed: ready at once.
    assert_eq!(poll_noop(f.as_mut()), Poll::Ready(Err(None)));
    drop(f);

    let (c_tx, c_rx) = goro::chan::<i32>(0);
    let mut f = Box::pin(async {
        goro::select! {
            recv(c_rx) -> v => Err(v),
            send(b_tx, 7) -> r => Ok(r),
        }
    });
    assert_pending(f.as_mut(), &waker);
    drop(b_rx); // the last receiver of b
    assert_eq!(expect_ready(f.as_mut(), &waker), Ok(Err(SendError(7))));
    drop(f);
    drop(c_tx);
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

/// A select dropped while waiting leaves no sudog on any of its channels, and its unsent value
/// is dropped once.
#[test]
fn dropped_waiting_select_leaves_nothing_behind() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (a_tx, a_rx) = goro::chan::<i32>(0);
    let (b_tx, b_rx) = goro::chan::<i32>(0);
    let (c_tx, c_rx) = goro::chan::<Tracked>(0);
    {
        let mut f = Box::pin(async {
            goro::select! {
                recv(a_rx) -> _ => 0,
                recv(b_rx) -> _ => 1,
                send(c_tx, Tracked::new(1, &drops)) -> _ => 2,
                recv(a_rx) -> _ => 3,
            }
        });
        for _ in 0..3 {
            assert!(poll_noop(f.as_mut()).is_pending());
        }
        assert_eq!(drops.load(SeqCst), 0);
    }
    assert_eq!(drops.load(SeqCst), 1, "the unsent value is dropped with the select");
    assert!(a_tx.try_send(1).unwrap_err().is_full(), "no sudog left on a");
    assert!(b_tx.try_send(1).unwrap_err().is_full(), "no sudog left on b");
    assert!(matches!(c_rx.try_recv(), Err(TryRecvError::Empty)), "no sudog left on c");
    // The channels still work with plain waiters.
    let mut r = Box::pin(a_rx.recv());
    assert!(poll_noop(r.as_mut()).is_pending());
    a_tx.try_send(2).unwrap();
    assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Some(2)));
}

/// A select that won a recv case through a peer (whose send succeeded) and is then dropped
/// without being polled gives the value back to the channel.
#[test]
fn dropped_select_gives_a_won_value_back() {
    let (a_tx, a_rx) = goro::chan::<i32>(0);
    let (_b_tx, b_rx) = goro::chan::<i32>(0);
    let mut f = Box::pin(async {
        goro::select! {
            recv(a_rx) -> v => v,
            recv(b_rx) -> v => v,
        }
    });
    assert!(poll_noop(f.as_mut()).is_pending());
    a_tx.try_send(7).expect("the select waits");
    assert!(a_tx.try_send(8).unwrap_err().is_full(), "the select fired once");
    drop(f);
    assert_eq!(a_rx.try_recv(), Ok(7), "the won value came back");
    assert_eq!(a_rx.try_recv(), Err(TryRecvError::Empty));

    // With a plain receiver waiting behind the select: the value goes to it.
    let mut f = Box::pin(async {
        goro::select! {
            recv(a_rx) -> v => v,
            recv(b_rx) -> v => v,
        }
    });
    assert!(poll_noop(f.as_mut()).is_pending());
    let (waker, wakes) = counting_waker();
    let mut r = Box::pin(a_rx.recv());
    assert_pending(r.as_mut(), &waker);
    a_tx.try_send(9).unwrap();
    assert_eq!(wakes.count(), 0, "the select, first in line, won");
    drop(f);
    assert_eq!(wakes.count(), 1);
    assert_eq!(expect_ready(r.as_mut(), &waker), Some(9));
}

/// A select whose send case a peer completed, dropped unpolled: delivered once, dropped once.
#[test]
fn dropped_select_after_its_send_completed() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::<Tracked>(0);
    let (_otx, orx) = goro::chan::<Tracked>(0);
    let mut f = Box::pin(async {
        goro::select! {
            send(tx, Tracked::new(3, &drops)) -> r => r.is_ok(),
            recv(orx) -> _ => false,
        }
    });
    assert!(poll_noop(f.as_mut()).is_pending());
    let v = rx.try_recv().expect("the select's send waits");
    assert_eq!(v.v, 3);
    drop(f);
    assert_eq!(drops.load(SeqCst), 0);
    drop(v);
    assert_eq!(drops.load(SeqCst), 1);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
}

/// The select's latest waker is the one woken.
#[test]
fn select_wakes_its_latest_waker() {
    let (tx, rx) = goro::chan::<i32>(0);
    let (w1, c1) = counting_waker();
    let (w2, c2) = counting_waker();
    let mut f = Box::pin(async {
        goro::select! { recv(rx) -> v => v }
    });
    assert_pending(f.as_mut(), &w1);
    assert_pending(f.as_mut(), &w2);
    tx.try_send(1).unwrap();
    assert_eq!((c1.count(), c2.count()), (0, 1));
    assert_eq!(expect_ready(f.as_mut(), &w2), Some(1));
}

/// A G aborted while waiting in a select leaves no sudog behind.
#[test]
fn aborted_g_in_select() {
    let _w = watchdog("aborted_g_in_select");
    let rt = rt(2);
    let (a_tx, a_rx) = goro::chan::<i32>(0);
    let (b_tx, b_rx) = goro::chan::<i32>(0);
    let (sig_tx, sig_rx) = mpsc::channel();
    let (a, b) = (a_rx.clone(), b_tx.clone());
    let h = rt.spawn(async move {
        let f = async {
            goro::select! {
                recv(a) -> v => v,
                send(b, 1) -> _ => None,
            }
        };
        signal_on_pending(f, sig_tx).await
    });
    wait_signal(&sig_rx, "the select to wait");
    h.abort();
    assert!(h.join().unwrap_err().is_cancelled());
    assert!(a_tx.try_send(1).unwrap_err().is_full(), "no sudog left on a");
    assert_eq!(b_rx.try_recv(), Err(TryRecvError::Empty), "no sudog left on b");
    drop((a_rx, b_tx));
}

/// An abort racing a peer's hand-off to a select: the value reached the select's arm or came
/// back to the channel, exactly one of the two.
#[test]
fn abort_racing_a_select_hand_off_loses_nothing() {
    let _w = watchdog("abort_racing_a_select_hand_off_loses_nothing");
    let rt = rt(2);
    let (a_tx, a_rx) = goro::chan::<u32>(0);
    let (_b_tx, b_rx) = goro::chan::<u32>(0);
    let (mut completed, mut given_back) = (0, 0);
    for i in 0..2000 {
        let (sig_tx, sig_rx) = mpsc::channel();
        let (a, b) = (a_rx.clone(), b_rx.clone());
        let h = rt.spawn(async move {
            let f = async {
                goro::select! {
                    recv(a) -> v => v,
                    recv(b) -> v => v,
                }
            };
            signal_on_pending(f, sig_tx).await
        });
        wait_signal(&sig_rx, "the select to wait");
        a_tx.try_send(i).expect("the select waits");
        h.abort();
        match h.join() {
            Ok(v) => {
                assert_eq!(v, Some(i));
                assert_eq!(a_rx.try_recv(), Err(TryRecvError::Empty));
                completed += 1;
            }
            Err(e) => {
                assert!(e.is_cancelled());
                assert_eq!(a_rx.try_recv(), Ok(i), "iteration {i}: the value was lost");
                given_back += 1;
            }
        }
    }
    eprintln!("select abort race: {completed} completed, {given_back} given back");
}

// ---------------------------------------------------------------------------------------------
// select_blocking! on plain threads
// ---------------------------------------------------------------------------------------------

#[test]
fn select_blocking_fan_in_on_threads() {
    let _w = watchdog("select_blocking_fan_in_on_threads");
    const N: u64 = 20_000;
    let (a_tx, a_rx) = goro::chan::<u64>(0);
    let (b_tx, b_rx) = goro::chan::<u64>(3);
    let ta = std::thread::spawn(move || (0..N).for_each(|v| a_tx.send_blocking(v).unwrap()));
    let tb = std::thread::spawn(move || (N..2 * N).for_each(|v| b_tx.send_blocking(v).unwrap()));
    let mut got = Vec::new();
    let (mut a, mut b) = (Some(&a_rx), Some(&b_rx));
    while a.is_some() || b.is_some() {
        // Go nils the channel inside the arm (`a = nil`); here the cases borrow `a` and `b` until
        // the select! block ends (reported), so the arm says which to nil and we do it after.
        let closed = goro::select_blocking! {
            recv(a) -> v => match v { Some(v) => { got.push(v); None }, None => Some(0) },
            recv(b) -> v => match v { Some(v) => { got.push(v); None }, None => Some(1) },
        };
        match closed {
            Some(0) => a = None,
            Some(_) => b = None,
            None => {}
        }
    }
    ta.join().unwrap();
    tb.join().unwrap();
    assert_exactly_once(got, 2 * N);
}

/// Two threads each select { send, recv } on one channel (TestSelfSelect, threads).
#[test]
fn select_blocking_self_select_on_threads() {
    let _w = watchdog("select_blocking_self_select_on_threads");
    for cap in [0usize, 1] {
        let (tx, rx) = goro::chan::<usize>(cap);
        let totals: Vec<(usize, usize)> = std::thread::scope(|s| {
            let ts: Vec<_> = (0..2)
                .map(|p| {
                    let (tx, rx) = (&tx, &rx);
                    s.spawn(move || {
                        let (mut sent, mut recvd) = (0, 0);
                        for _ in 0..5_000 {
                            goro::select_blocking! {
                                send(tx, p) -> r => { r.unwrap(); sent += 1 },
                                recv(rx) -> v => { assert!(!(cap == 0 && v == Some(p)), "self receive"); recvd += 1 },
                            }
                        }
                        (sent, recvd)
                    })
                })
                .collect();
            ts.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let sent: usize = totals.iter().map(|t| t.0).sum();
        let recvd: usize = totals.iter().map(|t| t.1).sum();
        assert_eq!(sent, recvd + rx.len());
    }
}

// ---------------------------------------------------------------------------------------------
// Control flow inside arm bodies
// ---------------------------------------------------------------------------------------------

fn sum_until_closed(rx: &Receiver<i32>) -> i32 {
    let mut sum = 0;
    loop {
        goro::select_blocking! {
            recv(rx) -> v => match v {
                Some(x) => sum += x,
                None => break,
            },
        }
    }
    sum
}

fn first_negative(rx: &Receiver<i32>) -> Option<i32> {
    loop {
        goro::select_blocking! {
            recv(rx) -> v => {
                let x = v?; // `?` on Option: a closed channel ends the search
                if x >= 0 {
                    continue;
                }
                return Some(x);
            },
        }
    }
}

fn send_all(tx: &Sender<i32>, vals: &[i32]) -> Result<usize, SendError<i32>> {
    let mut n = 0;
    for &v in vals {
        goro::select_blocking! {
            send(tx, v) -> r => { r?; n += 1 },
        }
    }
    Ok(n)
}

#[test]
fn control_flow_in_arms() {
    let (tx, rx) = goro::chan::<i32>(10);
    for i in 1..=4 {
        tx.try_send(i).unwrap();
    }
    tx.close();
    assert_eq!(sum_until_closed(&rx), 10);

    let (tx, rx) = goro::chan::<i32>(10);
    for v in [3, 4, -2, 5] {
        tx.try_send(v).unwrap();
    }
    assert_eq!(first_negative(&rx), Some(-2));
    assert_eq!(rx.try_recv(), Ok(5), "the loop returned right after -2");
    tx.close();
    assert_eq!(first_negative(&rx), None);

    let (tx, rx) = goro::chan::<i32>(2);
    assert_eq!(send_all(&tx, &[1, 2]), Ok(2));
    drop(rx);
    assert_eq!(send_all(&tx, &[3, 4]), Err(SendError(3)));

    // Labeled break out of nested loops, and the select's value.
    let (tx, rx) = goro::chan::<i32>(10);
    for i in 0..10 {
        tx.try_send(i).unwrap();
    }
    let mut seen = 0;
    'outer: for _ in 0..100 {
        for _ in 0..100 {
            let x: i32 = goro::select_blocking! {
                recv(rx) -> v => v.unwrap(),
                default => break 'outer,
            };
            seen += x;
            if x == 5 {
                continue 'outer;
            }
        }
    }
    assert_eq!(seen, 45);
}

#[test]
fn control_flow_in_async_arms() {
    let _w = watchdog("control_flow_in_async_arms");
    let out = rt(2).block_on(async {
        let (tx, rx) = goro::chan::<i32>(0);
        goro::go(async move {
            for i in 1..=100 {
                tx.send(i).await.unwrap();
            }
        });
        let summer = async {
            let mut sum = 0;
            loop {
                goro::select! {
                    recv(rx) -> v => match v {
                        Some(x) if x % 2 == 1 => continue,
                        Some(x) => sum += x,
                        None => break,
                    },
                }
            }
            sum
        };
        let sum = summer.await;
        let res: Result<(), SendError<i32>> = async {
            let (tx, rx) = goro::chan::<i32>(1);
            drop(rx);
            goro::select! { send(tx, 1) -> r => r? }
            Ok::<(), SendError<i32>>(())
        }
        .await;
        (sum, res)
    });
    assert_eq!(out, (2550, Err(SendError(1))));
}

/// Cases over channels of different element types, and every accepted form of channel
/// expression.
#[test]
fn mixed_types_and_channel_forms() {
    let (itx, irx) = goro::chan::<i32>(1);
    let (stx, srx) = goro::chan::<String>(1);
    let (ftx, frx) = goro::chan::<i32>(1);
    ftx.try_send(0).unwrap(); // full: its send case is not ready
    stx.try_send("s".into()).unwrap();
    let r = goro::select_blocking! {
        recv(&irx) -> v => format!("{v:?}"),
        recv(Some(&srx)) -> v => v.unwrap(),
        send(&ftx, 1) -> _ => "sent".to_string(),
    };
    assert_eq!(r, "s", "only the string channel is ready");
    let r = goro::select_blocking! {
        recv(irx) -> v => v.map(|i| i.to_string()),
        recv(srx) -> v => v,
        send(Some(&stx), "t".to_string()) -> r => { r.unwrap(); Some("sent".to_string()) },
    };
    assert_eq!(r.as_deref(), Some("sent"));
    assert_eq!(srx.try_recv().as_deref(), Ok("t"));
    assert_eq!(frx.try_recv(), Ok(0));
    drop(itx);
}

// ---------------------------------------------------------------------------------------------
// Big selects: 32, 40 and 64 cases in the macro
// ---------------------------------------------------------------------------------------------

/// 32 receive cases; returns (case index, value).
async fn select32(r: &[&Receiver<usize>]) -> (usize, Option<usize>) {
    assert_eq!(r.len(), 32);
    goro::select! {
        recv(r[0]) -> v => (0, v), recv(r[1]) -> v => (1, v), recv(r[2]) -> v => (2, v),
        recv(r[3]) -> v => (3, v), recv(r[4]) -> v => (4, v), recv(r[5]) -> v => (5, v),
        recv(r[6]) -> v => (6, v), recv(r[7]) -> v => (7, v), recv(r[8]) -> v => (8, v),
        recv(r[9]) -> v => (9, v), recv(r[10]) -> v => (10, v), recv(r[11]) -> v => (11, v),
        recv(r[12]) -> v => (12, v), recv(r[13]) -> v => (13, v), recv(r[14]) -> v => (14, v),
        recv(r[15]) -> v => (15, v), recv(r[16]) -> v => (16, v), recv(r[17]) -> v => (17, v),
        recv(r[18]) -> v => (18, v), recv(r[19]) -> v => (19, v), recv(r[20]) -> v => (20, v),
        recv(r[21]) -> v => (21, v), recv(r[22]) -> v => (22, v), recv(r[23]) -> v => (23, v),
        recv(r[24]) -> v => (24, v), recv(r[25]) -> v => (25, v), recv(r[26]) -> v => (26, v),
        recv(r[27]) -> v => (27, v), recv(r[28]) -> v => (28, v), recv(r[29]) -> v => (29, v),
        recv(r[30]) -> v => (30, v), recv(r[31]) -> v => (31, v),
    }
}

#[derive(Debug, PartialEq)]
enum Fired {
    Recv(usize, Option<usize>),
    Send(usize, bool),
}

/// 30 receive cases on `r` and 10 send cases on `s` (case 30 + j sends 100 + j on `s[j]`).
fn select40(r: &[Receiver<usize>], s: &[Sender<usize>]) -> Fired {
    use Fired::*;
    goro::select_blocking! {
        recv(r[0]) -> v => Recv(0, v), recv(r[1]) -> v => Recv(1, v), recv(r[2]) -> v => Recv(2, v),
        recv(r[3]) -> v => Recv(3, v), recv(r[4]) -> v => Recv(4, v), recv(r[5]) -> v => Recv(5, v),
        recv(r[6]) -> v => Recv(6, v), recv(r[7]) -> v => Recv(7, v), recv(r[8]) -> v => Recv(8, v),
        recv(r[9]) -> v => Recv(9, v), recv(r[10]) -> v => Recv(10, v), recv(r[11]) -> v => Recv(11, v),
        recv(r[12]) -> v => Recv(12, v), recv(r[13]) -> v => Recv(13, v), recv(r[14]) -> v => Recv(14, v),
        recv(r[15]) -> v => Recv(15, v), recv(r[16]) -> v => Recv(16, v), recv(r[17]) -> v => Recv(17, v),
        recv(r[18]) -> v => Recv(18, v), recv(r[19]) -> v => Recv(19, v), recv(r[20]) -> v => Recv(20, v),
        recv(r[21]) -> v => Recv(21, v), recv(r[22]) -> v => Recv(22, v), recv(r[23]) -> v => Recv(23, v),
        recv(r[24]) -> v => Recv(24, v), recv(r[25]) -> v => Recv(25, v), recv(r[26]) -> v => Recv(26, v),
        recv(r[27]) -> v => Recv(27, v), recv(r[28]) -> v => Recv(28, v), recv(r[29]) -> v => Recv(29, v),
        send(s[0], 100) -> x => Send(0, x.is_ok()), send(s[1], 101) -> x => Send(1, x.is_ok()),
        send(s[2], 102) -> x => Send(2, x.is_ok()), send(s[3], 103) -> x => Send(3, x.is_ok()),
        send(s[4], 104) -> x => Send(4, x.is_ok()), send(s[5], 105) -> x => Send(5, x.is_ok()),
        send(s[6], 106) -> x => Send(6, x.is_ok()), send(s[7], 107) -> x => Send(7, x.is_ok()),
        send(s[8], 108) -> x => Send(8, x.is_ok()), send(s[9], 109) -> x => Send(9, x.is_ok()),
    }
}

#[test]
fn forty_case_select() {
    let _w = watchdog("forty_case_select");
    let recv_chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..30).map(|_| goro::chan(1)).collect();
    let send_chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..10).map(|_| goro::chan(1)).collect();
    let r: Vec<Receiver<usize>> = recv_chans.iter().map(|c| c.1.clone()).collect();
    let s: Vec<Sender<usize>> = send_chans.iter().map(|c| c.0.clone()).collect();
    // Send channels full: only the one receive channel made ready can fire.
    for (tx, _) in &send_chans {
        tx.try_send(0).unwrap();
    }
    for (k, (tx, _)) in recv_chans.iter().enumerate() {
        tx.try_send(k).unwrap();
        assert_eq!(select40(&r, &s), Fired::Recv(k, Some(k)));
    }
    // Now each send channel in turn gets room.
    for (j, (tx, rx)) in send_chans.iter().enumerate() {
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!(select40(&r, &s), Fired::Send(j, true));
        assert_eq!(rx.try_recv(), Ok(100 + j));
        tx.try_send(0).unwrap();
    }
    // A waiting 40-case select woken by a thread, on each case.
    for k in 0..40 {
        std::thread::scope(|sc| {
            let t = sc.spawn(|| select40(&r, &s));
            if k < 30 {
                recv_chans[k].0.send_blocking(1000 + k).unwrap();
                assert_eq!(t.join().unwrap(), Fired::Recv(k, Some(1000 + k)));
            } else {
                let j = k - 30;
                // Taking the buffered 0 makes room; the select's waiting send moves in.
                assert_eq!(send_chans[j].1.recv_blocking(), Some(0));
                assert_eq!(t.join().unwrap(), Fired::Send(j, true));
                assert_eq!(send_chans[j].1.try_recv(), Ok(100 + j));
                send_chans[j].0.try_send(0).unwrap();
            }
        });
        // Nothing else moved.
        for (i, (tx, _)) in recv_chans.iter().enumerate() {
            assert!(tx.is_empty(), "case {k}: recv channel {i} changed");
        }
        for (i, (tx, _)) in send_chans.iter().enumerate() {
            assert_eq!(tx.len(), 1, "case {k}: send channel {i} changed");
        }
    }
    // Closed: all 40 ready; exactly one fires each time, and all fire eventually.
    for (tx, _) in &recv_chans {
        tx.close();
    }
    for (tx, _) in &send_chans {
        tx.close();
    }
    let mut seen = [false; 40];
    for _ in 0..4000 {
        match select40(&r, &s) {
            Fired::Recv(i, None) => seen[i] = true,
            Fired::Send(j, false) => seen[30 + j] = true,
            other => panic!("{other:?}"),
        }
    }
    assert!(seen.iter().all(|&x| x), "{seen:?}");
}

/// The macro's maximum: 64 cases.
#[test]
fn sixty_four_case_select() {
    let chans: Vec<(Sender<u8>, Receiver<u8>)> = (0..64).map(|_| goro::chan(1)).collect();
    let r: Vec<&Receiver<u8>> = chans.iter().map(|c| &c.1).collect();
    let select64 = || -> usize {
        goro::select_blocking! {
            recv(r[0]) -> _ => 0, recv(r[1]) -> _ => 1, recv(r[2]) -> _ => 2, recv(r[3]) -> _ => 3,
            recv(r[4]) -> _ => 4, recv(r[5]) -> _ => 5, recv(r[6]) -> _ => 6, recv(r[7]) -> _ => 7,
            recv(r[8]) -> _ => 8, recv(r[9]) -> _ => 9, recv(r[10]) -> _ => 10, recv(r[11]) -> _ => 11,
            recv(r[12]) -> _ => 12, recv(r[13]) -> _ => 13, recv(r[14]) -> _ => 14, recv(r[15]) -> _ => 15,
            recv(r[16]) -> _ => 16, recv(r[17]) -> _ => 17, recv(r[18]) -> _ => 18, recv(r[19]) -> _ => 19,
            recv(r[20]) -> _ => 20, recv(r[21]) -> _ => 21, recv(r[22]) -> _ => 22, recv(r[23]) -> _ => 23,
            recv(r[24]) -> _ => 24, recv(r[25]) -> _ => 25, recv(r[26]) -> _ => 26, recv(r[27]) -> _ => 27,
            recv(r[28]) -> _ => 28, recv(r[29]) -> _ => 29, recv(r[30]) -> _ => 30, recv(r[31]) -> _ => 31,
            recv(r[32]) -> _ => 32, recv(r[33]) -> _ => 33, recv(r[34]) -> _ => 34, recv(r[35]) -> _ => 35,
            recv(r[36]) -> _ => 36, recv(r[37]) -> _ => 37, recv(r[38]) -> _ => 38, recv(r[39]) -> _ => 39,
            recv(r[40]) -> _ => 40, recv(r[41]) -> _ => 41, recv(r[42]) -> _ => 42, recv(r[43]) -> _ => 43,
            recv(r[44]) -> _ => 44, recv(r[45]) -> _ => 45, recv(r[46]) -> _ => 46, recv(r[47]) -> _ => 47,
            recv(r[48]) -> _ => 48, recv(r[49]) -> _ => 49, recv(r[50]) -> _ => 50, recv(r[51]) -> _ => 51,
            recv(r[52]) -> _ => 52, recv(r[53]) -> _ => 53, recv(r[54]) -> _ => 54, recv(r[55]) -> _ => 55,
            recv(r[56]) -> _ => 56, recv(r[57]) -> _ => 57, recv(r[58]) -> _ => 58, recv(r[59]) -> _ => 59,
            recv(r[60]) -> _ => 60, recv(r[61]) -> _ => 61, recv(r[62]) -> _ => 62, recv(r[63]) -> _ => 63,
        }
    };
    for k in (0..64).rev() {
        chans[k].0.try_send(0).unwrap();
        assert_eq!(select64(), k);
    }
    // All ready: uniform over 64 (expected 1000 each of 64_000; binomial sd ~31).
    for (tx, _) in &chans {
        tx.try_send(0).unwrap();
    }
    let mut counts = [0usize; 64];
    for _ in 0..64_000 {
        let k = select64();
        counts[k] += 1;
        chans[k].0.try_send(0).unwrap();
    }
    assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
}

// ---------------------------------------------------------------------------------------------
// The dynamic Select
// ---------------------------------------------------------------------------------------------

#[test]
fn dynamic_select_100_recv_cases() {
    let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..100).map(|_| goro::chan(1)).collect();
    for k in [0usize, 42, 99] {
        chans[k].0.try_send(k).unwrap();
        let mut sel = Select::new();
        let tokens: Vec<_> = chans.iter().map(|(_, rx)| sel.recv(rx)).collect();
        assert_eq!(sel.len(), 100);
        let fired = sel.wait_blocking().expect("no default");
        assert_eq!(fired, k);
        assert!(tokens[k] == fired);
        assert_eq!(tokens[k].index(), k);
        assert_eq!(sel.recv_result(tokens[k]), Some(k));
        assert_eq!(sel.wait_blocking(), Some(k), "a Select fires once: waiting again says the same");
    }
}

/// 1000 cases, half receives and half sends on unbuffered channels, in a G; a peer makes one
/// case ready at a time.
#[test]
fn dynamic_select_1000_cases() {
    let _w = watchdog("dynamic_select_1000_cases");
    rt(2).block_on(async {
        let recv_chans: Arc<Vec<(Sender<usize>, Receiver<usize>)>> =
            Arc::new((0..500).map(|_| goro::chan(0)).collect());
        let send_chans: Arc<Vec<(Sender<usize>, Receiver<usize>)>> =
            Arc::new((0..500).map(|_| goro::chan(0)).collect());
        for round in 0..40usize {
            let k = (round * 337) % 1000;
            let (rc, sc) = (recv_chans.clone(), send_chans.clone());
            let peer = goro::go(async move {
                if k < 500 {
                    rc[k].0.send(7000 + k).await.unwrap();
                    None
                } else {
                    sc[k - 500].1.recv().await
                }
            });
            let mut sel = Select::new();
            let rtok: Vec<_> = recv_chans.iter().map(|(_, rx)| sel.recv(rx)).collect();
            let st: Vec<_> = send_chans.iter().enumerate().map(|(j, (tx, _))| sel.send(tx, j)).collect();
            let fired = sel.wait().await.unwrap();
            assert_eq!(fired, k);
            if k < 500 {
                assert_eq!(sel.recv_result(rtok[k]), Some(7000 + k));
                assert_eq!(peer.await.unwrap(), None);
            } else {
                assert!(sel.send_result(st[k - 500]).is_ok());
                assert_eq!(peer.await.unwrap(), Some(k - 500));
            }
            drop(sel);
            // No case left a sudog behind.
            for (tx, rx) in recv_chans.iter().chain(send_chans.iter()) {
                assert!(tx.try_send(0).unwrap_err().is_full());
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            }
        }
    });
}

#[test]
fn dynamic_select_default_and_closed() {
    let (tx, rx) = goro::chan::<u8>(0);
    let mut sel = Select::new();
    let t = sel.recv(&rx);
    let s = sel.send(&tx, 1);
    sel.default();
    assert_eq!(sel.wait_blocking(), None);
    let _ = (t, s);

    // Empty with default.
    let mut sel = Select::new();
    assert!(sel.is_empty());
    sel.default();
    assert_eq!(sel.wait_blocking(), None);

    // Nil cases never fire.
    let mut sel = Select::new();
    sel.recv(None::<&Receiver<u8>>);
    sel.send(None::<&Sender<u8>>, 1);
    sel.default();
    assert_eq!(sel.wait_blocking(), None);

    // Closed: recv gives None, send gives the value back.
    tx.close();
    let mut sel = Select::new();
    let st = sel.send(&tx, 9);
    let fired = sel.wait_blocking();
    assert_eq!(fired, Some(st.index()));
    assert_eq!(sel.send_result(st), Err(SendError(9)));
    let mut sel = Select::new();
    let rt = sel.recv(&rx);
    assert_eq!(sel.wait_blocking(), Some(0));
    assert_eq!(sel.recv_result(rt), None);
}

#[test]
fn dynamic_select_mixed_types() {
    let (itx, irx) = goro::chan::<i32>(1);
    let (stx, srx) = goro::chan::<String>(1);
    let mut sel = Select::new();
    let i = sel.recv(&irx);
    let s = sel.send(&stx, "hello".to_string());
    let fired = sel.wait_blocking();
    assert_eq!(fired, Some(s.index()), "only the send is ready");
    assert!(sel.send_result(s).is_ok());
    assert_eq!(srx.try_recv().as_deref(), Ok("hello"));
    let _ = (i, itx);
}

#[test]
#[should_panic(expected = "goro: a token of another Select")]
fn dynamic_select_panics_on_a_foreign_token() {
    let (tx, rx) = goro::chan::<u8>(1);
    tx.try_send(1).unwrap();
    let mut a = Select::new();
    let _ta = a.recv(&rx);
    let mut b = Select::new();
    let tb = b.recv(&rx);
    a.wait_blocking();
    let _ = a.recv_result(tb);
}

#[test]
#[should_panic(expected = "did not fire")]
fn dynamic_select_panics_on_a_case_that_did_not_fire() {
    let (tx, rx) = goro::chan::<u8>(1);
    let (_tx2, rx2) = goro::chan::<u8>(1);
    tx.try_send(1).unwrap();
    let mut sel = Select::new();
    let _t = sel.recv(&rx);
    let t2 = sel.recv(&rx2);
    assert_eq!(sel.wait_blocking(), Some(0));
    let _ = sel.recv_result(t2);
}

#[test]
#[should_panic(expected = "did not fire")]
fn dynamic_select_panics_on_a_result_before_wait() {
    let (_tx, rx) = goro::chan::<u8>(1);
    let mut sel = Select::new();
    let t = sel.recv(&rx);
    let _ = sel.recv_result(t);
}

#[test]
#[should_panic(expected = "goro: Select cases added after it fired")]
fn dynamic_select_panics_on_a_case_added_after_firing() {
    let (_tx, rx) = goro::chan::<u8>(1);
    let mut sel = Select::new();
    sel.default();
    sel.wait_blocking();
    sel.recv(&rx);
}

#[test]
fn dynamic_select_fairness() {
    let chans: Vec<(Sender<u8>, Receiver<u8>)> = (0..100).map(|_| goro::chan(1)).collect();
    for (tx, _) in &chans {
        tx.try_send(0).unwrap();
    }
    let mut counts = [0usize; 100];
    for _ in 0..20_000 {
        let mut sel = Select::new();
        let ts: Vec<_> = chans.iter().map(|(_, rx)| sel.recv(rx)).collect();
        let k = sel.wait_blocking().unwrap();
        assert_eq!(sel.recv_result(ts[k]), Some(0));
        counts[k] += 1;
        chans[k].0.try_send(0).unwrap();
    }
    // Expected 200 each, binomial sd ~14.
    assert!(counts.iter().all(|&c| (120..280).contains(&c)), "{counts:?}");
}

/// A dynamic select's wait dropped while armed leaves nothing behind; waiting again re-arms.
#[test]
fn dynamic_select_cancelled_wait() {
    let (tx, rx) = goro::chan::<u8>(0);
    let mut sel = Select::new();
    let t = sel.recv(&rx);
    {
        let mut w = Box::pin(sel.wait());
        assert!(poll_noop(w.as_mut()).is_pending());
    }
    assert!(tx.try_send(1).unwrap_err().is_full(), "the dropped wait left no sudog");
    let mut w = Box::pin(sel.wait());
    assert!(poll_noop(w.as_mut()).is_pending());
    tx.try_send(2).expect("the second wait is armed");
    assert_eq!(poll_noop(w.as_mut()), Poll::Ready(Some(0)));
    drop(w);
    assert_eq!(sel.recv_result(t), Some(2));
}

/// A dynamic select's wait that a peer completed (a recv case won), dropped unpolled: the value
/// goes back to the channel.
#[test]
fn dynamic_select_won_then_dropped_gives_back() {
    let (tx, rx) = goro::chan::<u8>(0);
    let (_tx2, rx2) = goro::chan::<u8>(0);
    let mut sel = Select::new();
    sel.recv(&rx);
    sel.recv(&rx2);
    {
        let mut w = Box::pin(sel.wait());
        assert!(poll_noop(w.as_mut()).is_pending());
        tx.try_send(5).unwrap();
    }
    assert_eq!(rx.try_recv(), Ok(5));
}

/// A dynamic select whose send case a peer completed, with the wait dropped unpolled: the send
/// happened, so waiting again must not send a second time, nor panic.
///
/// Today the second `wait` panics in `SendCase::try_complete` ("goro: send case without its
/// value": the value left with the first wait) while `Core::poll` holds every case's channel
/// lock, and the raw locks are never released on unwind: the channels are dead afterwards (the
/// next operation on them deadlocks). The test leaks the handles so the failure is a clean panic
/// and not a hang, and reports both halves.
#[test]
fn dynamic_select_send_won_then_wait_dropped_then_waited_again() {
    let _w = watchdog("dynamic_select_send_won_then_wait_dropped_then_waited_again");
    let (tx, rx) = goro::chan::<u8>(0);
    let (tx2, rx2) = goro::chan::<u8>(0);
    let (tx, rx, rx2): (&'static Sender<u8>, &'static Receiver<u8>, &'static Receiver<u8>) =
        (Box::leak(Box::new(tx)), Box::leak(Box::new(rx)), Box::leak(Box::new(rx2)));
    std::mem::forget(tx2);
    let mut sel = Select::new();
    let st = sel.send(tx, 5);
    sel.recv(rx2);
    {
        let mut w = Box::pin(sel.wait());
        assert!(poll_noop(w.as_mut()).is_pending());
        assert_eq!(rx.try_recv(), Ok(5), "the peer takes the select's value");
    }
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut w = Box::pin(sel.wait());
        poll_noop(w.as_mut())
    }));
    let Ok(again) = again else {
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.try_send(1);
            let _ = done_tx.send(());
        });
        let usable = done_rx.recv_timeout(std::time::Duration::from_secs(5)).is_ok();
        std::mem::forget(sel);
        panic!(
            "waiting again panicked; afterwards the channel is {}",
            if usable { "usable" } else { "locked forever" }
        );
    };
    // Acceptable: the select reports the send case (it did fire), or it waits again.
    match again {
        Poll::Ready(Some(i)) => {
            assert_eq!(i, st.index());
            assert!(sel.send_result(st).is_ok());
        }
        Poll::Ready(None) => panic!("no default"),
        Poll::Pending => {}
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "the value was sent twice");
}

/// The dynamic Select in a G alongside a static select, all Send.
#[test]
fn dynamic_select_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (tx, rx) = goro::chan::<u8>(1);
    let mut sel = Select::new();
    sel.recv(&rx);
    assert_send(&sel);
    let w = sel.wait();
    assert_send(&w);
    drop(w);
    drop(tx);
    // A G holding a waiting select! and a Select across awaits compiles (goro::go needs Send).
    let _w = watchdog("dynamic_select_is_send");
    let out = rt(2).block_on(async {
        let (tx, rx) = goro::chan::<u8>(0);
        let h = goro::go(async move {
            let mut sel = Select::new();
            let t = sel.recv(&rx);
            sel.wait().await;
            let v = sel.recv_result(t);
            let w = goro::select! { recv(rx) -> w => w };
            (v, w)
        });
        tx.send(1).await.unwrap();
        tx.send(2).await.unwrap();
        h.await.unwrap()
    });
    assert_eq!(out, (Some(1), Some(2)));
}
