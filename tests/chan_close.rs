//! Closing a channel: explicitly or by dropping every handle of one end, with values buffered,
//! senders and receivers waiting, and a value in flight (handed to a receive that may still
//! give it back) at the moment of the close.
//!
//! Determinism: where a test needs a future to be *parked* on a channel, it polls the future by
//! hand (it is queued once `poll` returns `Pending`), or wraps a G's operation in
//! [`signal_on_pending`] which reports the first `Pending`. Nothing sleeps to synchronize.

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{SendError, TryRecvError, TrySendError};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::task::Poll;

// ---------------------------------------------------------------------------------------------
// close
// ---------------------------------------------------------------------------------------------

#[test]
fn close_drains_the_buffer_then_yields_none() {
    let (tx, rx) = goro::chan::<u32>(3);
    for i in 1..=3 {
        tx.try_send(i).unwrap();
    }
    assert!(!tx.is_closed() && !rx.is_closed());
    assert!(tx.close(), "the first close closes");
    assert!(!tx.close(), "closing twice returns false");
    assert!(!tx.clone().close(), "closing through another handle returns false too");
    assert!(tx.is_closed() && rx.is_closed());
    assert!(matches!(tx.try_send(4), Err(TrySendError::Closed(4))));
    assert_eq!(tx.send_blocking(5), Err(SendError(5)));
    assert_eq!(rx.len(), 3, "closing keeps the buffered values");
    assert_eq!(rx.recv_blocking(), Some(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.recv_blocking(), Some(3));
    assert_eq!(rx.recv_blocking(), None);
    assert_eq!(rx.recv_blocking(), None);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn close_returns_their_values_to_waiting_senders() {
    for cap in [0usize, 1] {
        let (tx, rx) = goro::chan::<u32>(cap);
        for i in 0..cap as u32 {
            tx.try_send(100 + i).unwrap();
        }
        let wakers: Vec<_> = (0..3).map(|_| counting_waker()).collect();
        let mut futs: Vec<_> = (0..3).map(|i| Box::pin(tx.send(i))).collect();
        for (f, (w, _)) in futs.iter_mut().zip(&wakers) {
            assert_pending(f.as_mut(), w);
        }
        assert!(tx.close());
        for (i, (f, (w, c))) in futs.iter_mut().zip(&wakers).enumerate() {
            assert_eq!(c.count(), 1, "close wakes waiting sender {i}");
            assert_eq!(expect_ready(f.as_mut(), w), Err(SendError(i as u32)), "sender {i} gets its value back");
        }
        for i in 0..cap as u32 {
            assert_eq!(rx.try_recv(), Ok(100 + i));
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    }
}

#[test]
fn close_wakes_waiting_receivers_with_none() {
    let (tx, rx) = goro::chan::<u32>(2);
    let wakers: Vec<_> = (0..3).map(|_| counting_waker()).collect();
    let mut futs: Vec<_> = (0..3).map(|_| Box::pin(rx.recv())).collect();
    for (f, (w, _)) in futs.iter_mut().zip(&wakers) {
        assert_pending(f.as_mut(), w);
    }
    assert!(tx.close());
    for (f, (w, c)) in futs.iter_mut().zip(&wakers) {
        assert_eq!(c.count(), 1);
        assert_eq!(expect_ready(f.as_mut(), w), None);
    }
}

/// Gs really parked in send and recv (not just about to) are released by close.
#[test]
fn close_releases_parked_gs() {
    let _w = watchdog("close_releases_parked_gs");
    let rt = rt(2);
    const N: u64 = 8;
    // Senders.
    let (tx, rx) = goro::chan::<u64>(0);
    let (sig_tx, sig_rx) = mpsc::channel();
    let hs: Vec<_> = (0..N)
        .map(|i| {
            let (tx, sig) = (tx.clone(), sig_tx.clone());
            rt.spawn(async move { signal_on_pending(tx.send(i), sig).await })
        })
        .collect();
    for _ in 0..N {
        wait_signal(&sig_rx, "a sender to park");
    }
    assert!(tx.close());
    for (i, h) in hs.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), Err(SendError(i as u64)));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    // Receivers.
    let (tx, rx) = goro::chan::<u64>(0);
    let hs: Vec<_> = (0..N)
        .map(|_| {
            let (rx, sig) = (rx.clone(), sig_tx.clone());
            rt.spawn(async move { signal_on_pending(rx.recv(), sig).await })
        })
        .collect();
    for _ in 0..N {
        wait_signal(&sig_rx, "a receiver to park");
    }
    assert!(tx.close());
    for h in hs {
        assert_eq!(h.join().unwrap(), None);
    }
}

#[test]
fn dropping_every_sender_closes() {
    let (tx, rx) = goro::chan::<u32>(2);
    let tx2 = tx.clone();
    tx.try_send(1).unwrap();
    drop(tx);
    assert!(!rx.is_closed(), "a sender is left");
    tx2.try_send(2).unwrap();
    drop(tx2);
    assert!(rx.is_closed());
    assert_eq!(rx.recv_blocking(), Some(1));
    assert_eq!(rx.recv_blocking(), Some(2));
    assert_eq!(rx.recv_blocking(), None);

    // A waiting receiver is woken with None.
    let (tx, rx) = goro::chan::<u32>(0);
    let (waker, wakes) = counting_waker();
    let mut r = pin!(rx.recv());
    assert_pending(r.as_mut(), &waker);
    drop(tx);
    assert_eq!(wakes.count(), 1);
    assert_eq!(expect_ready(r.as_mut(), &waker), None);
}

#[test]
fn dropping_every_receiver_fails_sends_with_the_value() {
    let (tx, rx) = goro::chan::<u32>(0);
    let rx2 = rx.clone();
    let (waker, wakes) = counting_waker();
    let mut s = pin!(tx.send(9));
    assert_pending(s.as_mut(), &waker);
    drop(rx);
    assert_eq!(wakes.count(), 0, "a receiver is left");
    assert!(!tx.is_closed());
    assert_pending(s.as_mut(), &waker);
    drop(rx2);
    assert!(wakes.count() >= 1, "the waiting sender is woken when the last receiver goes");
    assert_eq!(expect_ready(s.as_mut(), &waker), Err(SendError(9)));
    assert!(tx.is_closed(), "a channel without receivers reports closed to senders");
    assert!(matches!(tx.try_send(10), Err(TrySendError::Closed(10))));
    assert_eq!(tx.send_blocking(11), Err(SendError(11)));
    assert!(tx.close(), "it was not closed by close(), so this close closes");
}

/// When the last receiver goes, buffered values are dropped (not leaked); later values come
/// back to the sender.
#[test]
fn dropping_every_receiver_drops_the_buffer() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = goro::chan::<Tracked>(4);
    for i in 0..3 {
        tx.try_send(Tracked::new(i, &drops)).unwrap();
    }
    assert_eq!(drops.load(SeqCst), 0);
    drop(rx);
    assert_eq!(drops.load(SeqCst), 3, "the buffered values are dropped with the last receiver");
    let back = tx.try_send(Tracked::new(7, &drops)).unwrap_err().into_inner();
    assert_eq!(back.v, 7);
    drop(back);
    assert_eq!(drops.load(SeqCst), 4);
    drop(tx);
    assert_eq!(drops.load(SeqCst), 4, "nothing is dropped twice");
}

/// A G parked in send gets its value back when the last receiver is dropped.
#[test]
fn parked_sender_g_gets_its_value_back_when_receivers_go() {
    let _w = watchdog("parked_sender_g_gets_its_value_back_when_receivers_go");
    let rt = rt(2);
    for cap in [0usize, 1] {
        let (tx, rx) = goro::chan::<u64>(cap);
        for i in 0..cap as u64 {
            tx.try_send(1000 + i).unwrap();
        }
        let (sig_tx, sig_rx) = mpsc::channel();
        let h = rt.spawn(async move { signal_on_pending(tx.send(42), sig_tx).await });
        wait_signal(&sig_rx, "the sender to park");
        drop(rx);
        assert_eq!(h.join().unwrap(), Err(SendError(42)), "cap {cap}");
    }
}

// ---------------------------------------------------------------------------------------------
// A value in flight when the channel closes
// ---------------------------------------------------------------------------------------------

/// A receive future is handed 7 (its sender's `try_send` returns `Ok`), the channel closes,
/// and the future is dropped: its value goes back to the channel. Until then the channel must
/// not look "closed and drained" to other receivers (`Empty`, not `Closed`), or a consumer loop
/// that ends on `None` would miss a value whose send succeeded.
#[test]
fn a_value_in_flight_at_close_is_not_stranded() {
    let (tx, rx) = goro::chan::<u32>(0);
    let other = rx.clone();
    let mut recv = Box::pin(rx.recv());
    assert!(poll_noop(recv.as_mut()).is_pending());
    tx.try_send(7).expect("handed to the parked receive");
    assert!(tx.close());
    assert_eq!(other.try_recv(), Err(TryRecvError::Empty), "closed, but 7 may come back");
    drop(recv); // 7 goes back to the channel
    assert_eq!(other.try_recv(), Ok(7));
    assert_eq!(other.try_recv(), Err(TryRecvError::Closed));

    // The same with the value returned: once it is, the channel is drained.
    let (tx, rx) = goro::chan::<u32>(0);
    let mut recv = Box::pin(rx.recv());
    assert!(poll_noop(recv.as_mut()).is_pending());
    tx.try_send(8).unwrap();
    tx.close();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(poll_noop(recv.as_mut()), Poll::Ready(Some(8)));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

/// A receiver blocked on the channel when it closes, with a value in flight to another
/// receive: it waits for that value's fate instead of returning `None` at once, and gets the
/// value when the other receive is dropped (or `None` when it returns the value).
#[test]
fn a_blocked_receiver_waits_for_a_value_in_flight_at_close() {
    for give_back in [true, false] {
        let (tx, rx) = goro::chan::<u32>(0);
        let mut recv = Box::pin(rx.recv());
        assert!(poll_noop(recv.as_mut()).is_pending());
        let waiter = {
            let rx = rx.clone();
            std::thread::spawn(move || rx.recv_blocking())
        };
        // 5 goes to `recv`, first in line; the waiter parks before or after the close.
        while tx.try_send(5).is_err() {
            std::thread::yield_now();
        }
        tx.close();
        let mine = if give_back {
            drop(recv);
            None
        } else {
            match poll_noop(recv.as_mut()) {
                Poll::Ready(v) => v,
                Poll::Pending => panic!("the handed value is ready"),
            }
        };
        let theirs = waiter.join().unwrap();
        assert_eq!((mine, theirs), if give_back { (None, Some(5)) } else { (Some(5), None) });
    }
}

/// The same for a `select!` receive case: a select that was handed a value and is dropped
/// before returning it gives the value back, and a receiver that saw the close waits for it.
#[test]
fn a_select_dropped_with_a_value_in_flight_gives_it_back_after_close() {
    let (tx, rx) = goro::chan::<u32>(0);
    let (_never_tx, never) = goro::chan::<u32>(0);
    let other = rx.clone();
    let mut sel = Box::pin(async {
        goro::select! {
            recv(rx) -> v => v,
            recv(never) -> v => v,
        }
    });
    assert!(poll_noop(sel.as_mut()).is_pending());
    tx.try_send(9).expect("handed to the waiting select");
    tx.close();
    assert_eq!(other.try_recv(), Err(TryRecvError::Empty));
    drop(sel);
    assert_eq!(other.try_recv(), Ok(9));
    assert_eq!(other.try_recv(), Err(TryRecvError::Closed));
}
