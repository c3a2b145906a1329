//! Channel semantics through the public facade: Go's `src/runtime/chan_test.go` ported in
//! spirit (TestChan, TestMultiConsumer, ...), plus what is specific to Rust: cancellation of
//! dropped futures, values handed back, aborted Gs, `Stream`, goro Gs and plain threads on one
//! channel, and `Send`/`Sync`.
//!
//! Select is in `chan_select.rs`. What needs another crate is in the member goro-extra-tests:
//! the model-based property tests in `tests/extra/tests/chan_prop.rs` (proptest), channels used
//! from tokio tasks in `tests/extra/tests/tokio_interop.rs`.
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
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier};
use std::task::{Poll, Waker};

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
                            goro::yield_now().await;
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
// Two worlds: goro Gs, plain threads (tokio tasks: tests/extra/tests/tokio_interop.rs)
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
    let rt = goro::Builder::new().max_procs(2).build().unwrap();
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

// ---------------------------------------------------------------------------------------------
// A value in flight when the channel closes (found by the MPMC soak)
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
