//! Channel semantics through the public facade: Go's `src/runtime/chan_test.go` ported in
//! spirit (TestChan, per capacity), the unbuffered rendezvous, zero-sized values, the
//! non-blocking calls and their errors, `Stream` and the blocking iterators, and `Send`/`Sync`.
//!
//! The other channel tests: many producers and consumers in `chan_mpmc.rs`, `close` in
//! `chan_close.rs`, dropped futures and aborted Gs in `chan_cancel.rs`, select in `select.rs`
//! and `select_*.rs`. What needs another crate is in the member goro-extra-tests: the
//! model-based property tests in `tests/extra/tests/chan_prop.rs` (proptest), channels used from
//! tokio tasks in `tests/extra/tests/tokio_interop.rs`.
//!
//! Determinism: where a test needs a future to be *parked* on a channel, it polls the future by
//! hand (it is queued once `poll` returns `Pending`), or wraps a G's operation in
//! [`signal_on_pending`] which reports the first `Pending`. Nothing sleeps to synchronize.

mod common;

use common::chan::*;
use common::{poll_noop, rt};
use goro::chan::{Receiver, SendError, Sender, TryRecvError, TrySendError};
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{mpsc, Barrier};
use std::task::{Poll, Waker};

// ---------------------------------------------------------------------------------------------
// TestChan, per capacity
// ---------------------------------------------------------------------------------------------

/// Go's TestChan, for capacities 0..40, deterministic: the "blocks" checks poll a future by hand
/// instead of sleeping.
#[test]
fn test_chan_per_capacity() {
    let _w = watchdog("test_chan_per_capacity");
    let rt = rt(2);
    for cap in 0..40usize {
        // A receive from an empty channel waits; a non-blocking one does not.
        {
            let (tx, rx) = goro::chan::<usize>(cap);
            let mut r = pin!(rx.recv());
            assert!(poll_noop(r.as_mut()).is_pending(), "cap {cap}: receive from empty chan");
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "cap {cap}");
            // The sender hands the value to the waiting receiver, whatever the capacity.
            tx.try_send(7).unwrap();
            assert_eq!(tx.len(), 0, "cap {cap}: a value for a waiting receiver skips the buffer");
            assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Some(7)));
        }
        // A send to a full channel waits; a non-blocking one does not. A receive then lets the
        // waiting sender's value into the freed slot, in FIFO order.
        {
            let (tx, rx) = goro::chan::<usize>(cap);
            for i in 0..cap {
                tx.try_send(i).unwrap();
            }
            assert_eq!(tx.len(), cap);
            assert!(matches!(tx.try_send(99), Err(TrySendError::Full(99))), "cap {cap}: send to full chan");
            let (waker, wakes) = counting_waker();
            let mut s = pin!(tx.send(cap));
            assert_pending(s.as_mut(), &waker);
            assert_eq!(tx.len(), cap, "cap {cap}: a waiting send is not buffered");
            assert_eq!(rx.try_recv(), Ok(0), "cap {cap}");
            assert_eq!(wakes.count(), 1, "cap {cap}: the receive wakes the waiting sender");
            assert_eq!(expect_ready(s.as_mut(), &waker), Ok(()));
            assert_eq!(rx.len(), cap, "cap {cap}: the sender's value moved into the buffer");
            for i in 1..=cap {
                assert_eq!(rx.try_recv(), Ok(i), "cap {cap}: FIFO");
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }
        // A closed channel drains, then yields None (Go: the zero value and !ok).
        {
            let (tx, rx) = goro::chan::<usize>(cap);
            for i in 0..cap {
                tx.try_send(i).unwrap();
            }
            assert!(tx.close());
            for i in 0..cap {
                assert_eq!(rx.recv_blocking(), Some(i), "cap {cap}");
            }
            assert_eq!(rx.recv_blocking(), None);
            assert_eq!(rx.recv_blocking(), None);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
        }
        // Close unblocks a receive in a G.
        {
            let (tx, rx) = goro::chan::<usize>(cap);
            let (sig_tx, sig_rx) = mpsc::channel();
            let h = rt.spawn(async move { signal_on_pending(rx.recv(), sig_tx).await });
            wait_signal(&sig_rx, "the receiver to park");
            assert!(tx.close());
            assert_eq!(h.join().unwrap(), None, "cap {cap}");
        }
        // 100 integers from a G arrive uncorrupted and in order; then 4 Gs send 0..1000 each and
        // 4 Gs receive 1000 each: every value arrives 4 times.
        {
            let (tx, rx) = goro::chan::<usize>(cap);
            let counts = rt.block_on(async move {
                let t = tx.clone();
                goro::go(async move {
                    for i in 0..100 {
                        t.send(i).await.unwrap();
                    }
                });
                for i in 0..100 {
                    assert_eq!(rx.recv().await, Some(i), "cap {cap}");
                }
                const P: usize = 4;
                const L: usize = 1000;
                for _ in 0..P {
                    let tx = tx.clone();
                    goro::go(async move {
                        for i in 0..L {
                            tx.send(i).await.unwrap();
                        }
                    });
                }
                let hs: Vec<_> = (0..P)
                    .map(|_| {
                        let rx = rx.clone();
                        goro::go(async move {
                            let mut counts = vec![0usize; L];
                            for _ in 0..L {
                                counts[rx.recv().await.unwrap()] += 1;
                            }
                            counts
                        })
                    })
                    .collect();
                let mut counts = vec![0usize; L];
                for h in hs {
                    for (c, n) in counts.iter_mut().zip(h.await.unwrap()) {
                        *c += n;
                    }
                }
                counts
            });
            assert!(counts.iter().all(|&c| c == 4), "cap {cap}: {counts:?}");
        }
        // len and cap.
        {
            let (tx, rx) = goro::chan::<usize>(cap);
            assert_eq!((tx.len(), tx.capacity(), rx.len(), rx.capacity()), (0, cap, 0, cap));
            for i in 0..cap {
                tx.try_send(i).unwrap();
            }
            assert_eq!((tx.len(), tx.capacity(), rx.len(), rx.capacity()), (cap, cap, cap, cap));
            assert_eq!(tx.is_empty(), cap == 0);
            assert_eq!(rx.is_empty(), cap == 0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unbuffered semantics
// ---------------------------------------------------------------------------------------------

#[test]
fn unbuffered_try_send_needs_a_waiting_receiver() {
    let (tx, rx) = goro::chan::<u32>(0);
    assert!(matches!(tx.try_send(1), Err(TrySendError::Full(1))), "nobody waits");
    let (waker, wakes) = counting_waker();
    let mut r = pin!(rx.recv());
    assert_pending(r.as_mut(), &waker);
    assert_eq!(wakes.count(), 0);
    tx.try_send(2).expect("a receiver waits");
    assert_eq!(wakes.count(), 1, "the hand-off wakes the receiver");
    assert_eq!(tx.len(), 0, "handed over, not buffered");
    assert!(matches!(tx.try_send(3), Err(TrySendError::Full(3))), "the one receiver is served");
    assert_eq!(expect_ready(r.as_mut(), &waker), Some(2));
    assert!(matches!(tx.try_send(4), Err(TrySendError::Full(4))), "the receiver is done");
}

#[test]
fn unbuffered_send_waits_until_a_receiver_takes_the_value() {
    let (tx, rx) = goro::chan::<u32>(0);
    let (waker, wakes) = counting_waker();
    let mut s = pin!(tx.send(5));
    assert_pending(s.as_mut(), &waker);
    assert_pending(s.as_mut(), &waker);
    assert_eq!(tx.len(), 0, "an unbuffered send is never buffered");
    assert_eq!(wakes.count(), 0);
    assert_eq!(rx.try_recv(), Ok(5), "a waiting sender makes a cap-0 channel receivable");
    assert_eq!(wakes.count(), 1);
    assert_eq!(expect_ready(s.as_mut(), &waker), Ok(()));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// A send on an unbuffered channel returns only after the receiver took the value: right after
/// it returns, nothing is left in the channel for anyone else.
#[test]
fn unbuffered_send_returns_after_the_value_is_taken() {
    let _w = watchdog("unbuffered_send_returns_after_the_value_is_taken");
    const N: u32 = 20_000;
    // Threads.
    let (tx, rx) = goro::chan::<u32>(0);
    let spy = rx.clone();
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..N {
                assert_eq!(rx.recv_blocking(), Some(i));
            }
        });
        for i in 0..N {
            tx.send_blocking(i).unwrap();
            assert_eq!(spy.try_recv(), Err(TryRecvError::Empty), "value {i} was still in the channel");
            assert_eq!(tx.len(), 0);
        }
    });
    // Gs.
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<u32>(0);
        let spy = rx.clone();
        let h = goro::go(async move {
            for i in 0..N {
                assert_eq!(rx.recv().await, Some(i));
            }
        });
        for i in 0..N {
            tx.send(i).await.unwrap();
            assert_eq!(spy.try_recv(), Err(TryRecvError::Empty), "value {i} was still in the channel");
        }
        h.await.unwrap();
    });
}

/// Every waiting receiver is served in FIFO order.
#[test]
fn waiting_receivers_are_served_in_order() {
    let (tx, rx) = goro::chan::<u32>(0);
    let mut futs: Vec<_> = (0..5).map(|_| Box::pin(rx.recv())).collect();
    for f in &mut futs {
        assert!(poll_noop(f.as_mut()).is_pending());
    }
    for i in 0..5 {
        tx.try_send(i).unwrap();
    }
    assert!(tx.try_send(5).unwrap_err().is_full());
    for (i, f) in futs.iter_mut().enumerate() {
        assert_eq!(poll_noop(f.as_mut()), Poll::Ready(Some(i as u32)));
    }
}

/// Waiting senders are served in FIFO order, through the buffer when there is one.
#[test]
fn waiting_senders_are_served_in_order() {
    for cap in [0usize, 1, 3] {
        let (tx, rx) = goro::chan::<usize>(cap);
        for i in 0..cap {
            tx.try_send(i).unwrap();
        }
        let mut futs: Vec<_> = (cap..cap + 5).map(|i| Box::pin(tx.send(i))).collect();
        for f in &mut futs {
            assert!(poll_noop(f.as_mut()).is_pending());
        }
        for i in 0..cap + 5 {
            assert_eq!(rx.try_recv(), Ok(i), "cap {cap}");
        }
        for f in &mut futs {
            assert_eq!(poll_noop(f.as_mut()), Poll::Ready(Ok(())));
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }
}

// ---------------------------------------------------------------------------------------------
// Zero-sized values
// ---------------------------------------------------------------------------------------------

#[test]
fn zero_sized_signal_channels() {
    let _w = watchdog("zero_sized_signal_channels");
    let (tx, rx) = goro::chan::<()>(1000);
    for _ in 0..1000 {
        tx.try_send(()).unwrap();
    }
    assert!(tx.try_send(()).unwrap_err().is_full());
    assert_eq!(rx.len(), 1000);
    for _ in 0..1000 {
        assert_eq!(rx.try_recv(), Ok(()));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

    for cap in [0usize, 1000] {
        let n = rt(2).block_on(async move {
            let (tx, rx) = goro::chan::<()>(cap);
            let (done_tx, done_rx) = goro::chan::<()>(0);
            for _ in 0..4 {
                let tx = tx.clone();
                goro::go(async move {
                    for _ in 0..10_000 {
                        tx.send(()).await.unwrap();
                    }
                });
            }
            drop(tx);
            let counters: Vec<_> = (0..3)
                .map(|_| {
                    let rx = rx.clone();
                    let done_tx = done_tx.clone();
                    goro::go(async move {
                        let mut n = 0;
                        while rx.recv().await.is_some() {
                            n += 1;
                        }
                        drop(done_tx);
                        n
                    })
                })
                .collect();
            drop(done_tx);
            // `done` closes when every counter is finished.
            assert_eq!(done_rx.recv().await, None);
            let mut n = 0;
            for c in counters {
                n += c.await.unwrap();
            }
            n
        });
        assert_eq!(n, 40_000, "cap {cap}");
    }
}

// ---------------------------------------------------------------------------------------------
// try_send / try_recv / len / capacity / is_closed, errors
// ---------------------------------------------------------------------------------------------

#[test]
fn try_operations() {
    let (tx, rx) = goro::chan::<String>(2);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.try_send("a".into()).unwrap();
    assert_eq!((tx.len(), rx.len(), tx.is_empty()), (1, 1, false));
    tx.try_send("b".into()).unwrap();
    match tx.try_send("c".into()) {
        Err(TrySendError::Full(v)) => assert_eq!(v, "c"),
        other => panic!("{other:?}"),
    }
    assert_eq!(tx.len(), 2);
    assert_eq!(rx.try_recv().as_deref(), Ok("a"));
    assert_eq!(tx.len(), 1);
    tx.close();
    match tx.try_send("d".into()) {
        Err(e @ TrySendError::Closed(_)) => {
            assert!(e.is_closed() && !e.is_full());
            assert_eq!(e.to_string(), "send on closed channel");
            assert_eq!(e.into_inner(), "d");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(rx.try_recv().as_deref(), Ok("b"));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(TryRecvError::Empty.to_string(), "channel is empty");
    let full = TrySendError::Full(1u8);
    assert!(full.is_full() && !full.is_closed());
    assert_eq!(full.to_string(), "channel is full");
    let e = SendError(3u8);
    assert_eq!(e.to_string(), "send on closed channel");
    assert_eq!(e.into_inner(), 3);
    let e: TrySendError<u8> = SendError(4u8).into();
    assert!(matches!(e, TrySendError::Closed(4)));
    // Errors are std errors (usable with `?` into Box<dyn Error>).
    let _: Box<dyn std::error::Error + Send + Sync> = Box::new(SendError(1u8));
    let _: Box<dyn std::error::Error + Send + Sync> = Box::new(TrySendError::Full(1u8));
    let _: Box<dyn std::error::Error + Send + Sync> = Box::new(TryRecvError::Closed);
}

#[test]
fn same_channel_and_debug() {
    let (tx, rx) = goro::chan::<u8>(3);
    let (tx2, rx2) = goro::chan::<u8>(3);
    assert!(tx.same_channel(&tx.clone()));
    assert!(!tx.same_channel(&tx2));
    assert!(rx.same_channel(&rx.clone()));
    assert!(!rx.same_channel(&rx2));
    assert!(format!("{tx:?}").contains("Sender"));
    assert!(format!("{rx:?}").contains("Receiver"));
}

/// Capacity 0 reports len 0 always; is_closed differs between the ends when only receivers go.
#[test]
fn is_closed_per_end() {
    let (tx, rx) = goro::chan::<u8>(0);
    let rx2 = rx.clone();
    drop(rx);
    assert!(!tx.is_closed());
    drop(rx2);
    assert!(tx.is_closed(), "no receivers: sends would fail");
    let (tx, rx) = goro::chan::<u8>(0);
    drop(tx);
    assert!(rx.is_closed());
}

// ---------------------------------------------------------------------------------------------
// Stream and iter
// ---------------------------------------------------------------------------------------------

fn next<T>(rx: &mut Receiver<T>) -> impl Future<Output = Option<T>> + '_ {
    poll_fn(move |cx| futures_core::Stream::poll_next(Pin::new(&mut *rx), cx))
}

#[test]
fn receiver_is_a_stream() {
    let _w = watchdog("receiver_is_a_stream");
    for cap in [0usize, 3] {
        let got = rt(2).block_on(async move {
            let (tx, mut rx) = goro::chan::<u32>(cap);
            goro::go(async move {
                for i in 0..1000 {
                    tx.send(i).await.unwrap();
                }
            });
            let mut got = Vec::new();
            while let Some(v) = next(&mut rx).await {
                got.push(v);
            }
            assert_eq!(next(&mut rx).await, None, "a finished stream stays finished");
            got
        });
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }
}

/// The stream's pending receive is cancel-safe like `recv()`: a value handed to it while the
/// `Receiver` is dropped goes back; the `Receiver` may move between polls.
#[test]
fn stream_pending_receive_survives_moves_and_gives_back() {
    let (tx, rx) = goro::chan::<u32>(0);
    let other = rx.clone();
    let (waker, wakes) = counting_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    let mut boxed = Box::new(rx);
    assert!(futures_core::Stream::poll_next(Pin::new(&mut *boxed), &mut cx).is_pending());
    // Move the receiver while its receive is queued.
    let mut moved: Receiver<u32> = *boxed;
    tx.try_send(1).expect("the stream's receive waits");
    assert_eq!(wakes.count(), 1);
    assert_eq!(futures_core::Stream::poll_next(Pin::new(&mut moved), &mut cx), Poll::Ready(Some(1)));
    // Park again, get handed a value, drop the receiver: the value goes to the other one.
    assert!(futures_core::Stream::poll_next(Pin::new(&mut moved), &mut cx).is_pending());
    tx.try_send(2).expect("the stream's receive waits again");
    drop(moved);
    assert_eq!(other.try_recv(), Ok(2));
    // Park and drop without a value: no waiter is left behind.
    let mut third = other.clone();
    assert!(futures_core::Stream::poll_next(Pin::new(&mut third), &mut cx).is_pending());
    drop(third);
    assert!(tx.try_send(3).unwrap_err().is_full());
}

#[test]
fn blocking_iterators() {
    let _w = watchdog("blocking_iterators");
    let (tx, rx) = goro::chan::<u32>(0);
    let t = std::thread::spawn(move || {
        for i in 0..1000 {
            tx.send_blocking(i).unwrap();
        }
    });
    assert_eq!(rx.iter().collect::<Vec<_>>(), (0..1000).collect::<Vec<_>>());
    t.join().unwrap();
    let (tx, rx) = goro::chan::<u32>(5);
    for i in 0..5 {
        tx.try_send(i).unwrap();
    }
    drop(tx);
    let mut sum = 0;
    for v in &rx {
        sum += v;
    }
    assert_eq!(sum, 10);
    assert_eq!(rx.iter().next(), None);
}

// ---------------------------------------------------------------------------------------------
// Send / Sync
// ---------------------------------------------------------------------------------------------

fn assert_send<T: Send>(_: &T) {}
fn assert_sync<T: Sync>(_: &T) {}
fn assert_handles<T: Clone + Send + Sync>() {}

#[allow(dead_code)]
struct NotSync(std::cell::Cell<u8>); // Send but not Sync

#[test]
fn handles_and_futures_are_send_and_sync() {
    assert_handles::<Sender<u8>>();
    assert_handles::<Receiver<u8>>();
    assert_handles::<Sender<String>>();
    assert_handles::<Receiver<Vec<u8>>>();
    // T need only be Send, as in Go (a value moves, it is never shared).
    assert_handles::<Sender<NotSync>>();
    assert_handles::<Receiver<NotSync>>();
    assert_handles::<Sender<()>>();

    let (tx, rx) = goro::chan::<NotSync>(1);
    let s = tx.send(NotSync(Default::default()));
    let r = rx.recv();
    assert_send(&s);
    assert_send(&r);
    assert_sync(&tx);
    assert_sync(&rx);
    drop((s, r));

    // An async block that holds send/recv futures across awaits can be a G.
    let out = rt(1).block_on(async {
        let (tx, rx) = goro::chan::<String>(0);
        let h = goro::go(async move {
            tx.send("x".to_string()).await.unwrap();
        });
        let g = goro::go(async move { rx.recv().await });
        h.await.unwrap();
        g.await.unwrap()
    });
    assert_eq!(out.as_deref(), Some("x"));

    // Handles shared by reference across threads (Sync).
    let (tx, rx) = goro::chan::<u32>(0);
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            barrier.wait();
            tx.send_blocking(1).unwrap();
        });
        s.spawn(|| {
            barrier.wait();
            assert_eq!(rx.recv_blocking(), Some(1));
        });
    });
}

/// The waker passed to a channel future may change between polls: the latest one is woken.
#[test]
fn latest_waker_is_woken() {
    let (tx, rx) = goro::chan::<u32>(0);
    let (w1, c1) = counting_waker();
    let (w2, c2) = counting_waker();
    let mut r = pin!(rx.recv());
    assert_pending(r.as_mut(), &w1);
    assert_pending(r.as_mut(), &w2);
    tx.try_send(1).unwrap();
    assert_eq!((c1.count(), c2.count()), (0, 1));
    assert_eq!(expect_ready(r.as_mut(), &w2), Some(1));

    let mut s = pin!(tx.send(2));
    assert_pending(s.as_mut(), &w1);
    assert_pending(s.as_mut(), Waker::noop());
    assert_pending(s.as_mut(), &w2);
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!((c1.count(), c2.count()), (0, 2));
    assert_eq!(expect_ready(s.as_mut(), &w2), Ok(()));
}

/// A ping-pong pair stays on one P: each send wakes the partner into the sender's `runnext`,
/// so the two Gs keep running on the same M (Go's design, which keeps the pair warm in cache).
/// Checked as: most round trips see both Gs on the same thread, and `runnext_runs` grows by
/// about two per round trip.
#[test]
fn pingpong_stays_on_one_p() {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;
    fn tid() -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::thread::current().id().hash(&mut h);
        h.finish()
    }
    const TRIPS: u64 = 20_000;
    let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let (same, runnext) = rt.block_on(async {
        let before = goro::runtime::metrics().runnext_runs;
        let (ping_tx, ping_rx) = goro::chan::<u64>(0);
        let (pong_tx, pong_rx) = goro::chan::<u64>(0);
        let ponger_thread = Arc::new(AtomicU64::new(0));
        let pt = ponger_thread.clone();
        let ponger = goro::go(async move {
            while let Some(v) = ping_rx.recv().await {
                pt.store(tid(), Relaxed);
                pong_tx.send(v).await.unwrap();
            }
        });
        let pinger = goro::go(async move {
            let mut same = 0u64;
            for i in 0..TRIPS {
                ping_tx.send(i).await.unwrap();
                assert_eq!(pong_rx.recv().await, Some(i));
                if ponger_thread.load(Relaxed) == tid() {
                    same += 1;
                }
            }
            same
        });
        let same = pinger.await.unwrap();
        ponger.await.unwrap();
        (same, goro::runtime::metrics().runnext_runs - before)
    });
    assert!(same * 2 > TRIPS, "only {same} of {TRIPS} round trips had both Gs on one thread");
    assert!(runnext >= TRIPS, "runnext_runs grew by {runnext} over {TRIPS} round trips");
}
