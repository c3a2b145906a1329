//! The dynamic `goro::chan::Select`: 100 and 1000 cases, `default` and closed channels, cases
//! of mixed element types, the panics of a misused token, fairness, and a `Wait` cancelled,
//! won then dropped, or waited on again.
//!
//! A select is made to *wait* deterministically by polling the future that contains it by hand
//! (it is armed on every channel once `poll` returns `Pending`).

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{Receiver, Select, SendError, Sender, TryRecvError};
use std::sync::{mpsc, Arc};
use std::task::Poll;

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
