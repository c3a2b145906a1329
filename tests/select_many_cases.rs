//! Selects of many cases: exactly one case fires when several are ready or several peers race
//! to it (Go's TestSelectDuplicateChannel among them), and selects of 32, 40 and 64 cases in the
//! macro.
//!
//! A select is made to *wait* deterministically by polling the future that contains it by hand
//! (it is armed on every channel once `poll` returns `Pending`).

// The 64-case test below compiles with the default recursion limit: `select!` takes one
// recursion step per case.

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{Receiver, Sender, TryRecvError};
use std::sync::Barrier;
use std::task::Poll;

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
