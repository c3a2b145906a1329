//! Cancellation, which Go has not: a dropped receive or send future, parked or already handed a
//! value, and a G aborted while it waits on a channel; no value is lost, duplicated or
//! delivered by a future that was dropped.
//!
//! Determinism: where a test needs a future to be *parked* on a channel, it polls the future by
//! hand (it is queued once `poll` returns `Pending`), or wraps a G's operation in
//! [`signal_on_pending`] which reports the first `Pending`. Nothing sleeps to synchronize.

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::TryRecvError;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

#[test]
fn dropped_waiting_recv_does_not_steal_a_later_value() {
    for cap in [0usize, 1] {
        let (tx, rx) = goro::chan::<u32>(cap);
        {
            let mut r = Box::pin(rx.recv());
            assert!(poll_noop(r.as_mut()).is_pending());
        } // dropped while queued
        if cap == 0 {
            assert!(tx.try_send(1).unwrap_err().is_full(), "the dropped receiver no longer waits");
        } else {
            tx.try_send(1).unwrap();
            assert_eq!(rx.len(), 1, "the value went to the buffer, not the dropped receiver");
            assert_eq!(rx.try_recv(), Ok(1));
        }
        // Two waiters; the first is dropped: the value goes to the second.
        let mut a = Box::pin(rx.recv());
        let mut b = Box::pin(rx.recv());
        let (wb, cb) = counting_waker();
        assert!(poll_noop(a.as_mut()).is_pending());
        assert_pending(b.as_mut(), &wb);
        drop(a);
        tx.try_send(2).unwrap();
        assert_eq!(cb.count(), 1);
        assert_eq!(expect_ready(b.as_mut(), &wb), Some(2));
    }
}

/// A receive future that a sender already handed a value to (the send succeeded) and that is
/// then dropped without being polled gives the value back: somebody else receives it.
#[test]
fn dropped_recv_gives_a_handed_value_back() {
    // To the buffer (even of a cap-0 channel): a later try_recv gets it.
    for cap in [0usize, 1, 4] {
        let (tx, rx) = goro::chan::<u32>(cap);
        let mut r = Box::pin(rx.recv());
        assert!(poll_noop(r.as_mut()).is_pending());
        tx.try_send(7).expect("handed to the waiting receiver");
        drop(r);
        assert_eq!(rx.try_recv(), Ok(7), "cap {cap}: the value came back");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }
    // To the next waiting receiver, which is woken.
    let (tx, rx) = goro::chan::<u32>(0);
    let mut a = Box::pin(rx.recv());
    let mut b = Box::pin(rx.recv());
    let (wb, cb) = counting_waker();
    assert!(poll_noop(a.as_mut()).is_pending());
    assert_pending(b.as_mut(), &wb);
    tx.try_send(8).unwrap();
    assert_eq!(cb.count(), 0, "the first waiter got it");
    drop(a);
    assert_eq!(cb.count(), 1, "handing it on wakes the second waiter");
    assert_eq!(expect_ready(b.as_mut(), &wb), Some(8));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// A given-back value was the oldest: it goes to the front of the buffer.
#[test]
fn given_back_value_keeps_fifo_order() {
    let (tx, rx) = goro::chan::<u32>(2);
    let mut r = Box::pin(rx.recv());
    assert!(poll_noop(r.as_mut()).is_pending());
    tx.try_send(1).unwrap(); // handed to `r`
    tx.try_send(2).unwrap(); // buffered
    tx.try_send(3).unwrap(); // buffered
    drop(r);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Ok(3));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// A value handed to a receive future after the channel is closed is still received.
#[test]
fn given_back_value_after_close_is_still_received() {
    let (tx, rx) = goro::chan::<u32>(0);
    let mut r = Box::pin(rx.recv());
    assert!(poll_noop(r.as_mut()).is_pending());
    tx.try_send(5).unwrap();
    tx.close();
    drop(r);
    assert_eq!(rx.try_recv(), Ok(5));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

/// A handed value given back after the last other receiver is gone is dropped, exactly once.
#[test]
fn given_back_value_without_receivers_is_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::<Tracked>(0);
    let rx2 = rx.clone();
    {
        let mut r = Box::pin(rx2.recv());
        assert!(poll_noop(r.as_mut()).is_pending());
        tx.try_send(Tracked::new(1, &drops)).unwrap();
        drop(rx);
        assert_eq!(drops.load(SeqCst), 0);
        drop(r);
    }
    drop(rx2);
    assert_eq!(drops.load(SeqCst), 1);
    drop(tx);
    assert_eq!(drops.load(SeqCst), 1);
}

#[test]
fn dropped_waiting_send_does_not_deliver() {
    let drops = Arc::new(AtomicUsize::new(0));
    for cap in [0usize, 1] {
        drops.store(0, SeqCst);
        let (tx, rx) = goro::chan::<Tracked>(cap);
        for i in 0..cap as u64 {
            tx.try_send(Tracked::new(100 + i, &drops)).unwrap();
        }
        {
            let mut s = Box::pin(tx.send(Tracked::new(5, &drops)));
            assert!(poll_noop(s.as_mut()).is_pending());
        }
        assert_eq!(drops.load(SeqCst), 1, "cap {cap}: the unsent value is dropped with the future");
        for i in 0..cap as u64 {
            assert_eq!(rx.try_recv().unwrap().v, 100 + i);
        }
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)), "cap {cap}: the value was not delivered");
        // The dropped sender is no longer queued.
        let mut r = Box::pin(rx.recv());
        assert!(poll_noop(r.as_mut()).is_pending());
    }
}

/// A send that a receiver completed (the value was taken) and whose future is dropped without
/// being polled again: delivered once, dropped once.
#[test]
fn completed_send_future_dropped_unpolled() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::<Tracked>(0);
    let mut s = Box::pin(tx.send(Tracked::new(5, &drops)));
    assert!(poll_noop(s.as_mut()).is_pending());
    let v = rx.try_recv().unwrap();
    assert_eq!(v.v, 5);
    drop(s);
    assert_eq!(drops.load(SeqCst), 0);
    drop(v);
    assert_eq!(drops.load(SeqCst), 1);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
}

/// A send dropped before its first poll sends nothing.
#[test]
fn unpolled_futures_do_nothing() {
    let (tx, rx) = goro::chan::<u32>(1);
    drop(tx.send(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.try_send(2).unwrap();
    drop(rx.recv());
    assert_eq!(rx.try_recv(), Ok(2));
}

/// A G aborted while parked in recv leaves no waiter behind; a later value goes to the next
/// receiver.
#[test]
fn aborted_g_parked_in_recv() {
    let _w = watchdog("aborted_g_parked_in_recv");
    let rt = rt(2);
    let (tx, rx) = goro::chan::<u32>(0);
    let (sig_tx, sig_rx) = mpsc::channel();
    let r = rx.clone();
    let h = rt.spawn(async move { signal_on_pending(r.recv(), sig_tx).await });
    wait_signal(&sig_rx, "the receiver to park");
    h.abort();
    assert!(h.join().unwrap_err().is_cancelled());
    assert!(tx.try_send(1).unwrap_err().is_full(), "the aborted G's sudog is gone");
    let h = rt.spawn(async move { rx.recv().await });
    tx.send_blocking(2).unwrap();
    assert_eq!(h.join().unwrap(), Some(2));
}

/// A G aborted while parked in send: its value is dropped, never delivered.
#[test]
fn aborted_g_parked_in_send() {
    let _w = watchdog("aborted_g_parked_in_send");
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::<Tracked>(0);
    let (sig_tx, sig_rx) = mpsc::channel();
    let v = Tracked::new(3, &drops);
    let t = tx.clone();
    let h = rt.spawn(async move { signal_on_pending(t.send(v), sig_tx).await.map_err(|e| e.0.v) });
    wait_signal(&sig_rx, "the sender to park");
    h.abort();
    assert!(h.join().unwrap_err().is_cancelled());
    assert_eq!(drops.load(SeqCst), 1, "the unsent value was dropped with the G");
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    drop(tx);
}

/// The race between a hand-off and an abort: the value either reached the G (which returned it)
/// or came back to the channel. Never lost, never both.
#[test]
fn abort_racing_a_hand_off_loses_nothing() {
    let _w = watchdog("abort_racing_a_hand_off_loses_nothing");
    let rt = rt(2);
    let (tx, rx) = goro::chan::<u32>(0);
    let (mut completed, mut given_back) = (0, 0);
    for i in 0..2000 {
        let (sig_tx, sig_rx) = mpsc::channel();
        let r = rx.clone();
        let h = rt.spawn(async move { signal_on_pending(r.recv(), sig_tx).await });
        wait_signal(&sig_rx, "the receiver to park");
        tx.try_send(i).expect("the G waits");
        h.abort();
        match h.join() {
            Ok(v) => {
                assert_eq!(v, Some(i));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "iteration {i}: received twice");
                completed += 1;
            }
            Err(e) => {
                assert!(e.is_cancelled());
                assert_eq!(rx.try_recv(), Ok(i), "iteration {i}: the value was lost");
                given_back += 1;
            }
        }
    }
    eprintln!("abort race: {completed} completed, {given_back} given back");
}
