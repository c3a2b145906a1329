//! `goro::sync::Cond`: Go's `cond_test.go` in spirit (signal wakes one waiter, in FIFO order;
//! broadcast wakes every waiter of its round; a three-way ping-pong), plus what Go cannot do:
//! cancelled waits, which must lose no signal and leave no lock held.

mod common;

use common::{poll_noop, within};
use goro::sync::{Cond, Mutex};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::task::Poll;

/// Go's TestCondSignal: n waiters; each signal wakes exactly one of them.
#[test]
fn signal_wakes_one_at_a_time() {
    goro::run(async {
        const N: usize = 5;
        let s = Arc::new((Mutex::new(0usize), Cond::new()));
        let (woke_tx, woke_rx) = goro::chan::<()>(N);
        let (running_tx, running_rx) = goro::chan::<()>(N);
        for _ in 0..N {
            let (s, woke_tx, running_tx) = (s.clone(), woke_tx.clone(), running_tx.clone());
            goro::go(async move {
                let g = s.0.lock().await;
                running_tx.send(()).await.unwrap();
                let _g = s.1.wait(g).await;
                woke_tx.send(()).await.unwrap();
            });
        }
        for _ in 0..N {
            running_rx.recv().await.unwrap();
        }
        // Every waiter queued before it released the lock: taking the lock proves all N are in.
        for i in 0..N {
            drop(s.0.lock().await);
            assert!(woke_rx.try_recv().is_err(), "a waiter woke before any signal ({i})");
            s.1.signal();
            within("a signalled waiter", woke_rx.recv()).await.unwrap();
            goro::runtime::yield_now().await;
            assert!(woke_rx.try_recv().is_err(), "signal woke more than one waiter");
        }
    });
}

/// Go's TestCondSignalGenerations: waiters are woken in the order they started waiting.
#[test]
fn signal_is_fifo() {
    goro::run(async {
        const N: usize = 20;
        let s = Arc::new((Mutex::new(()), Cond::new()));
        let (order_tx, order_rx) = goro::chan::<usize>(N);
        let (queued_tx, queued_rx) = goro::chan::<()>(0);
        for i in 0..N {
            let (s2, order_tx, queued_tx) = (s.clone(), order_tx.clone(), queued_tx.clone());
            goro::go(async move {
                let g = s2.0.lock().await;
                // Told while still holding the lock: the waiter queues before the next one
                // can take the lock (main takes it below before starting the next).
                queued_tx.send(()).await.unwrap();
                let _g = s2.1.wait(g).await;
                order_tx.send(i).await.unwrap();
            });
            queued_rx.recv().await.unwrap();
            drop(s.0.lock().await); // waiter i is queued and unlocked
        }
        for i in 0..N {
            s.1.signal();
            assert_eq!(within("the oldest waiter", order_rx.recv()).await, Some(i));
        }
    });
}

/// Go's TestCondBroadcast: several rounds; each broadcast wakes every waiter of its round.
#[test]
fn broadcast_wakes_everyone_each_round() {
    goro::run(async {
        const N: usize = 10;
        const ROUNDS: usize = 5;
        let s = Arc::new((Mutex::new((0usize, 0usize)), Cond::new())); // (round, waiting)
        let seen = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for _ in 0..N {
            let (s, seen) = (s.clone(), seen.clone());
            hs.push(goro::go(async move {
                let mut g = s.0.lock().await;
                for round in 0..ROUNDS {
                    g.1 += 1;
                    s.1.broadcast(); // tell main (and the others, which loop) one more waits
                    while g.0 == round {
                        g = s.1.wait(g).await;
                    }
                    seen.fetch_add(1, Relaxed);
                }
            }));
        }
        let mut g = s.0.lock().await;
        for round in 0..ROUNDS {
            while g.1 < N * (round + 1) {
                g = within("the waiters", s.1.wait(g)).await;
            }
            g.0 = round + 1;
            s.1.broadcast();
        }
        drop(g);
        for h in hs {
            within("a waiter", h).await.unwrap();
        }
        assert_eq!(seen.load(Relaxed), N * ROUNDS);
    });
}

/// Go's TestRace: three Gs hand a counter round through one Cond.
#[test]
fn three_way_hand_off() {
    goro::run(async {
        let s = Arc::new((Mutex::new(0u32), Cond::new()));
        let mut hs = Vec::new();
        for me in 0..3u32 {
            let s = s.clone();
            hs.push(goro::go(async move {
                let mut x = s.0.lock().await;
                loop {
                    while *x % 3 != me && *x < 300 {
                        x = s.1.wait(x).await;
                    }
                    if *x >= 300 {
                        s.1.broadcast();
                        return;
                    }
                    *x += 1;
                    s.1.broadcast();
                }
            }));
        }
        for h in hs {
            within("a player", h).await.unwrap();
        }
        assert_eq!(*s.0.lock().await, 300);
    });
}

/// The waiter queues before it unlocks: a signal sent by whoever takes the lock next is never
/// missed (with the unlock first, the signal could come before the waiter queued).
#[test]
fn no_lost_signal_between_unlock_and_park() {
    goro::run(async {
        for _ in 0..200 {
            let s = Arc::new((Mutex::new(false), Cond::new()));
            let s2 = s.clone();
            let waiter = goro::go(async move {
                let mut g = s2.0.lock().await;
                while !*g {
                    g = s2.1.wait(g).await;
                }
            });
            let signaller = goro::go(async move {
                *s.0.lock().await = true;
                s.1.signal();
            });
            within("the signaller", signaller).await.unwrap();
            within("the waiter", waiter).await.unwrap();
        }
    });
}

/// Cancellation, deterministically on a plain thread (futures polled by hand): a waiter
/// signalled and then dropped before it saw the signal passes it on to the next waiter.
#[test]
fn dropped_signalled_wait_passes_the_signal_on() {
    let m = Mutex::new(());
    let c = Cond::new();
    let mut w1 = Box::pin(c.wait(m.lock_blocking()));
    assert!(poll_noop(w1.as_mut()).is_pending()); // queued, unlocked
    let mut w2 = pin!(c.wait(m.lock_blocking()));
    assert!(poll_noop(w2.as_mut()).is_pending());
    c.signal(); // goes to w1, the oldest
    assert!(poll_noop(w2.as_mut()).is_pending(), "the signal went to w1");
    drop(w1); // never returned its guard: the signal moves on
    assert!(poll_noop(w2.as_mut()).is_ready(), "w2 got the signal w1 gave up");
}

/// A waiter dropped while it relocks (signalled, lock held elsewhere) also passes the signal on,
/// and leaves the mutex free.
#[test]
fn dropped_relocking_wait_passes_the_signal_on_and_unlocks() {
    let m = Mutex::new(0);
    let c = Cond::new();
    let mut w1 = Box::pin(c.wait(m.lock_blocking()));
    assert!(poll_noop(w1.as_mut()).is_pending());
    let mut w2 = pin!(c.wait(m.lock_blocking()));
    assert!(poll_noop(w2.as_mut()).is_pending());
    let held = m.lock_blocking();
    c.signal();
    assert!(poll_noop(w1.as_mut()).is_pending(), "w1 is woken but the lock is held");
    drop(w1);
    drop(held);
    let Poll::Ready(mut g) = poll_noop(w2.as_mut()) else { panic!("w2 did not get the passed-on signal") };
    *g += 1;
    drop(g);
    assert_eq!(*m.try_lock().expect("nothing holds the mutex"), 1);
}

/// A dropped waiter that was never signalled takes nothing: the signal goes to the next one;
/// a never-polled wait just unlocks.
#[test]
fn dropped_unsignalled_wait_leaves_the_queue() {
    let m = Mutex::new(());
    let c = Cond::new();
    let mut w1 = Box::pin(c.wait(m.lock_blocking()));
    assert!(poll_noop(w1.as_mut()).is_pending());
    let mut w2 = pin!(c.wait(m.lock_blocking()));
    assert!(poll_noop(w2.as_mut()).is_pending());
    drop(w1);
    c.signal();
    assert!(poll_noop(w2.as_mut()).is_ready());
    drop(c.wait(m.lock_blocking())); // never polled
    assert!(m.try_lock().is_some());
}

/// A waiter woken by broadcast passes nothing on when dropped: waiters queued after the
/// broadcast stay asleep.
#[test]
fn broadcast_is_not_passed_on() {
    let m = Mutex::new(());
    let c = Cond::new();
    let mut w1 = Box::pin(c.wait(m.lock_blocking()));
    assert!(poll_noop(w1.as_mut()).is_pending());
    c.broadcast();
    let mut w2 = pin!(c.wait(m.lock_blocking()));
    assert!(poll_noop(w2.as_mut()).is_pending());
    drop(w1);
    assert!(poll_noop(w2.as_mut()).is_pending(), "w2 came after the broadcast");
    c.signal();
    assert!(poll_noop(w2.as_mut()).is_ready());
}

/// Plain threads: `wait_blocking`.
#[test]
fn wait_blocking_on_threads() {
    let s = Arc::new((Mutex::new(0u32), Cond::new()));
    let ts: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut g = s.0.lock_blocking();
                while *g == 0 {
                    g = s.1.wait_blocking(g);
                }
            })
        })
        .collect();
    *s.0.lock_blocking() = 1;
    s.1.broadcast();
    for t in ts {
        t.join().unwrap();
    }
}

#[test]
fn wait_reason_text() {
    assert_eq!(goro::runtime::WaitReason::SyncCondWait.as_str(), "sync.Cond.Wait");
}

#[test]
fn futures_are_send() {
    fn send<T: Send>() {}
    send::<goro::sync::futures::CondWait<'static, 'static, u32>>();
    send::<Cond>();
}
