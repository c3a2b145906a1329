//! `select!` and `select_blocking!`: `default` and nil channels, send cases that did not fire,
//! closed channels, a select dropped while it waits or after it won (cancellation), the blocking
//! form on plain threads, and control flow (`break`, `continue`, `return`, `?`) in arm bodies.
//!
//! The other select tests: fairness and Go's select races in `select_fairness.rs`, exactly one
//! of many cases firing and selects of 32-64 cases in `select_many_cases.rs`, the dynamic
//! `goro::chan::Select` in `select_dynamic.rs`.
//!
//! A select is made to *wait* deterministically by polling the future that contains it by hand
//! (it is armed on every channel once `poll` returns `Pending`).

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{Receiver, SendError, Sender, TryRecvError};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::task::Poll;

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
