//! Loom models of the channel's races (`RUSTFLAGS="--cfg loom" cargo test -p goro-chan --lib
//! --release loom_`). Threads block with the `*_blocking` calls, whose waker unparks a loom
//! thread, so every hand-off, wake-up and cancellation path runs under the model checker.

use crate::error::{TryRecvError, TrySendError};
use crate::{chan, select_blocking};
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// cap 0: a send completes only with a receive, and the value arrives intact, whichever side
/// comes first.
#[test]
fn loom_unbuffered_send_recv() {
    loom::model(|| {
        let (tx, rx) = chan::<u32>(0);
        let t = thread::spawn(move || tx.send_blocking(7));
        assert_eq!(rx.recv_blocking(), Some(7));
        assert!(t.join().unwrap().is_ok());
    });
}

/// cap 0 and cap 1: send vs receive vs close. Every send that returned `Ok` is received, the
/// others got their value back, and the receiver ends with `None`.
#[test]
fn loom_send_recv_close() {
    for cap in [0, 1] {
        loom::model(move || {
            let (tx, rx) = chan::<u32>(cap);
            let tx2 = tx.clone();
            let sender = thread::spawn(move || tx.send_blocking(1).is_ok());
            let closer = thread::spawn(move || {
                tx2.close();
            });
            let mut got = Vec::new();
            while let Some(v) = rx.recv_blocking() {
                got.push(v);
            }
            let sent = sender.join().unwrap();
            closer.join().unwrap();
            assert_eq!(got, if sent { vec![1] } else { vec![] }, "cap {cap}");
        });
    }
}

/// Two selects race for one sender: exactly one gets the value; the other leaves through its
/// own channel's close. No sudog of the loser is left behind (the second try_send is Full).
#[test]
fn loom_two_selects_one_sender() {
    loom::model(|| {
        let (tx, rx) = chan::<u32>(0);
        let (d1_tx, d1_rx) = chan::<()>(0);
        let (d2_tx, d2_rx) = chan::<()>(0);
        let rx2 = rx.clone();
        let s1 = thread::spawn(move || {
            select_blocking! {
                recv(rx) -> v => v,
                recv(d1_rx) -> _ => None,
            }
        });
        let s2 = thread::spawn(move || {
            select_blocking! {
                recv(rx2) -> v => v,
                recv(d2_rx) -> _ => None,
            }
        });
        tx.send_blocking(5).unwrap();
        drop(d1_tx);
        drop(d2_tx);
        let a = s1.join().unwrap();
        let b = s2.join().unwrap();
        assert_eq!([a, b].iter().filter(|v| v.is_some()).count(), 1, "{a:?} {b:?}");
        assert_eq!(a.or(b), Some(5));
        assert!(matches!(tx.try_send(6), Err(TrySendError::Closed(6)) | Err(TrySendError::Full(6))));
    });
}

/// A receive future that parked is dropped while a sender hands it a value: the value is not
/// lost (a later `try_recv` has it) whenever the send reported success.
#[test]
fn loom_dropped_recv_gives_value_back() {
    loom::model(|| {
        let (tx, rx) = chan::<u32>(0);
        let sender = thread::spawn(move || {
            let ok = tx.try_send(9).is_ok();
            (ok, tx)
        });
        {
            let mut fut = pin!(rx.recv());
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                panic!("nothing was sent yet, got {v:?}");
            }
            // Dropped here, racing the hand-off.
        }
        let (ok, _tx) = sender.join().unwrap();
        if ok {
            assert_eq!(rx.try_recv(), Ok(9));
        } else {
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }
    });
}

/// close vs a select waiting on two channels: the select fires exactly one case, and a value
/// whose `try_send` succeeded is received by the select or still in its channel.
#[test]
fn loom_close_vs_select() {
    loom::model(|| {
        let (c1_tx, c1_rx) = chan::<u32>(0);
        let (c2_tx, c2_rx) = chan::<u32>(1);
        let sel = thread::spawn(move || {
            let r = select_blocking! {
                recv(c1_rx) -> v => (1, v),
                recv(c2_rx) -> v => (2, v),
            };
            (r, c2_rx)
        });
        let closer = thread::spawn(move || c1_tx.close());
        let sent = c2_tx.try_send(3).is_ok();
        assert!(closer.join().unwrap());
        let ((case, v), c2_rx) = sel.join().unwrap();
        match case {
            1 => {
                assert_eq!(v, None);
                if sent {
                    assert_eq!(c2_rx.try_recv(), Ok(3));
                }
            }
            2 => assert_eq!(v, Some(3)),
            _ => unreachable!(),
        }
    });
}

/// A select with a send case and a receive case on one cap-0 channel, against a plain
/// receiver: the select's own cases never pair with each other.
#[test]
fn loom_select_send_and_recv_same_channel() {
    loom::model(|| {
        let (tx, rx) = chan::<u32>(0);
        let rx2 = rx.clone();
        let peer = thread::spawn(move || rx2.recv_blocking());
        let fired = select_blocking! {
            send(tx, 4) -> r => { assert!(r.is_ok()); "send" },
            recv(rx) -> _ => "recv",
        };
        // Only the peer receives, so only the send can fire.
        assert_eq!(fired, "send");
        assert_eq!(peer.join().unwrap(), Some(4));
    });
}

/// A value handed to a parked receive, then the channel closed, races another receiver and the
/// first receive's fate (it returns the value, or it is dropped and gives it back): the other
/// receiver never reports "closed and drained" while the value can still come back, so a
/// value whose send reported `Ok` is received exactly once (the soak's stranded value).
#[test]
fn loom_handed_value_vs_close_vs_other_receiver() {
    for keep in [true, false] {
        loom::model(move || {
            let (tx, rx) = chan::<u32>(0);
            let rx2 = rx.clone();
            let mut fut = Box::pin(rx.recv());
            let mut cx = Context::from_waker(Waker::noop());
            assert!(fut.as_mut().poll(&mut cx).is_pending());
            let sender = thread::spawn(move || {
                let ok = tx.try_send(7).is_ok();
                tx.close();
                ok
            });
            let other = thread::spawn(move || rx2.recv_blocking());
            let mine = if keep {
                // Poll until the future settles: the value, or `None` after the close.
                loop {
                    if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                        break v;
                    }
                    thread::yield_now();
                }
            } else {
                drop(fut);
                None
            };
            let ok = sender.join().unwrap();
            let theirs = other.join().unwrap();
            let got: Vec<u32> = mine.into_iter().chain(theirs).collect();
            assert_eq!(got, if ok { vec![7] } else { vec![] }, "keep {keep}: mine {mine:?}, theirs {theirs:?}");
        });
    }
}
