//! `goro::sync::WaitGroup` through the facade: Go's `src/sync/waitgroup_test.go` ported in spirit
//! (TestWaitGroup's two-barrier reuse, the misuse panics with Go's messages), `WaitGroup.Go`,
//! cancellation of dropped waits, many waiters (more than one wake batch), and the three worlds:
//! Gs on goro, plain threads, and both at once.
//!
//! Nothing sleeps to synchronize: a future that must be parked is polled by hand, and a test
//! that waits does so on the primitive under test, bounded by the watchdog.

mod common;

use common::*;
use goro::sync::WaitGroup;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// The panic message of `f`, which must panic.
fn panic_of(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    panic_message(&*err)
}

// ---------------------------------------------------------------------------------------------
// TestWaitGroup: two barriers, reused 8 times
// ---------------------------------------------------------------------------------------------

const N: usize = 16;

/// Go's `testWaitGroup` for Gs: `n` Gs each `wg1.done()` then `wg2.wait()`; the main G waits on
/// `wg1`, checks that nobody got past `wg2` early, then releases them one `done` at a time.
async fn two_barriers_gs(wg1: &WaitGroup, wg2: &WaitGroup) {
    wg1.add(N as isize);
    wg2.add(N as isize);
    let (exited_tx, exited_rx) = goro::chan::<()>(N);
    for _ in 0..N {
        let (wg1, wg2, exited) = (wg1.clone(), wg2.clone(), exited_tx.clone());
        goro::go(async move {
            wg1.done();
            wg2.wait().await;
            exited.send(()).await.unwrap();
        });
    }
    wg1.wait().await;
    for _ in 0..N {
        assert!(exited_rx.try_recv().is_err(), "WaitGroup released group too soon");
        wg2.done();
    }
    for _ in 0..N {
        exited_rx.recv().await.expect("a G was not released");
    }
}

#[test]
fn wait_group_gs_reused() {
    let _w = watchdog("wait_group_gs_reused", LIMIT);
    for procs in [1, 4] {
        rt(procs).block_on(async {
            let (wg1, wg2) = (WaitGroup::new(), WaitGroup::new());
            for _ in 0..8 {
                two_barriers_gs(&wg1, &wg2).await;
            }
        });
    }
}

/// The same with plain threads and the blocking calls (no runtime at all).
#[test]
fn wait_group_threads_reused() {
    let _w = watchdog("wait_group_threads_reused", LIMIT);
    let (wg1, wg2) = (WaitGroup::new(), WaitGroup::new());
    for _ in 0..8 {
        wg1.add(N as isize);
        wg2.add(N as isize);
        let (exited_tx, exited_rx) = std::sync::mpsc::channel::<()>();
        let threads: Vec<_> = (0..N)
            .map(|_| {
                let (wg1, wg2, exited) = (wg1.clone(), wg2.clone(), exited_tx.clone());
                std::thread::spawn(move || {
                    wg1.done();
                    wg2.wait_blocking();
                    exited.send(()).unwrap();
                })
            })
            .collect();
        wg1.wait_blocking();
        for _ in 0..N {
            assert!(exited_rx.try_recv().is_err(), "WaitGroup released group too soon");
            wg2.done();
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(exited_rx.try_iter().count(), N);
    }
}

/// Mixed: Gs and plain threads call `done` on one group, and both kinds wait on another.
#[test]
fn wait_group_mixed_gs_and_threads() {
    let _w = watchdog("wait_group_mixed_gs_and_threads", LIMIT);
    let rt = rt(2);
    for _ in 0..4 {
        let (work, gate) = (WaitGroup::new(), WaitGroup::new());
        let released = Arc::new(AtomicUsize::new(0));
        work.add(2 * N as isize);
        gate.add(1);
        let mut gs = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..N {
            let (w, g, r) = (work.clone(), gate.clone(), released.clone());
            gs.push(rt.spawn(async move {
                w.done();
                g.wait().await;
                r.fetch_add(1, SeqCst);
            }));
            let (w, g, r) = (work.clone(), gate.clone(), released.clone());
            threads.push(std::thread::spawn(move || {
                w.done();
                g.wait_blocking();
                r.fetch_add(1, SeqCst);
            }));
        }
        work.wait_blocking();
        assert_eq!(released.load(SeqCst), 0, "released before the gate opened");
        gate.done();
        for g in gs {
            g.join().unwrap();
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(released.load(SeqCst), 2 * N);
    }
}

/// Many waiters at once (far more than one wake batch of 32): one `done` releases them all.
#[test]
fn many_waiters_one_done() {
    let _w = watchdog("many_waiters_one_done", LIMIT);
    const WAITERS: usize = 500;
    rt(4).block_on(async {
        let wg = WaitGroup::new();
        wg.add(1);
        let parked = WaitGroup::new();
        let hs: Vec<_> = (0..WAITERS)
            .map(|_| {
                let (wg, parked) = (wg.clone(), parked.clone());
                parked.add(1);
                goro::go(async move {
                    parked.done();
                    wg.wait().await;
                })
            })
            .collect();
        parked.wait().await;
        wg.done();
        for h in hs {
            h.await.unwrap();
        }
    });
}

/// Many Gs calling `done` concurrently on one counter, one waiter: the wait returns after all of
/// them, and sees all their writes.
#[test]
fn many_dones_one_waiter() {
    let _w = watchdog("many_dones_one_waiter", LIMIT);
    const GS: usize = 10_000;
    rt(4).block_on(async {
        let wg = WaitGroup::new();
        let hits = Arc::new(AtomicUsize::new(0));
        wg.add(GS as isize);
        for _ in 0..GS {
            let (wg, hits) = (wg.clone(), hits.clone());
            goro::go(async move {
                hits.fetch_add(1, SeqCst);
                wg.done();
            });
        }
        wg.wait().await;
        assert_eq!(hits.load(SeqCst), GS);
    });
}

// ---------------------------------------------------------------------------------------------
// Misuse: Go's messages
// ---------------------------------------------------------------------------------------------

/// Go's TestWaitGroupMisuse: one `Done` too many.
#[test]
fn misuse_negative_counter() {
    let wg = WaitGroup::new();
    wg.add(1);
    wg.done();
    assert_eq!(panic_of(|| wg.done()), "sync: negative WaitGroup counter");
    assert_eq!(panic_of(|| WaitGroup::new().add(-1)), "sync: negative WaitGroup counter");
}

/// The same from a G: the panic is the G's, reported through its `JoinHandle`.
#[test]
fn misuse_negative_counter_in_a_g() {
    let _w = watchdog("misuse_negative_counter_in_a_g", LIMIT);
    rt(1).block_on(async {
        let wg = WaitGroup::new();
        let err = goro::go(async move { wg.done() }).await.unwrap_err();
        assert!(err.is_panic());
        assert_eq!(panic_message(&*err.into_panic()), "sync: negative WaitGroup counter");
    });
}

/// A delta that cannot fit Go's `int32` counter is refused (without touching the counter).
#[test]
fn misuse_delta_out_of_range() {
    let wg = WaitGroup::new();
    let msg = panic_of(|| wg.add(isize::MAX));
    assert!(msg.starts_with("sync: WaitGroup delta"), "{msg}");
    wg.add(1);
    wg.done();
    wg.wait_blocking();
}

/// Go's TestWaitGroupMisuse2 in spirit: `Add` racing a `Wait` that is being released. The race
/// may or may not hit in a given run; whenever an `add` panics, it must say Go's message, and the
/// group must never hang or release early.
#[test]
fn misuse_add_racing_release_says_go_message() {
    let _w = watchdog("misuse_add_racing_release_says_go_message", LIMIT);
    for _ in 0..200 {
        let wg = WaitGroup::new();
        wg.add(1);
        let w = wg.clone();
        let waiter = std::thread::spawn(move || w.wait_blocking());
        let w = wg.clone();
        let doner = std::thread::spawn(move || w.done());
        // Racing the release: Go's misuse if the waiter is still counted at the zero.
        let r = catch_unwind(AssertUnwindSafe(|| wg.add(1)));
        doner.join().unwrap();
        if let Err(p) = r {
            assert_eq!(panic_message(&*p), "sync: WaitGroup misuse: Add called concurrently with Wait");
        }
        // The counter is 1 either way (the add happened, panic or not): a final done releases
        // the waiter if the first zero did not.
        wg.done();
        waiter.join().unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// WaitGroup.Go
// ---------------------------------------------------------------------------------------------

#[test]
fn go_runs_and_waits() {
    let _w = watchdog("go_runs_and_waits", LIMIT);
    rt(4).block_on(async {
        let wg = WaitGroup::new();
        let hits = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..100)
            .map(|i| {
                let hits = hits.clone();
                wg.go(async move {
                    goro::runtime::yield_now().await;
                    hits.fetch_add(1, SeqCst);
                    i
                })
            })
            .collect();
        wg.wait().await;
        assert_eq!(hits.load(SeqCst), 100);
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        assert_eq!(sum, 4950);
    });
}

/// A panicking or aborted G started with `go` still counts as done.
#[test]
fn go_done_on_panic_and_abort() {
    let _w = watchdog("go_done_on_panic_and_abort", LIMIT);
    rt(2).block_on(async {
        let wg = WaitGroup::new();
        let panicked = wg.go(async { panic!("boom") });
        let aborted = wg.go(std::future::pending::<()>());
        aborted.abort();
        wg.wait().await;
        let err = panicked.await.unwrap_err();
        assert_eq!(panic_message(&*err.into_panic()), "boom");
        assert!(aborted.await.unwrap_err().is_cancelled());
        assert_eq!(format!("{wg:?}"), "WaitGroup { counter: 0, waiters: 0 }");
    });
}

/// Outside a runtime, `go` panics like `goro::go` and leaves the counter as it was.
#[test]
fn go_outside_runtime_restores_counter() {
    let wg = WaitGroup::new();
    let msg = panic_of(|| drop(wg.go(async {})));
    assert!(msg.contains("goro::run"), "{msg}");
    wg.wait_blocking();
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

/// A parked wait that is dropped leaves no waiter behind: the next round's `add` from zero does
/// not see it (it would panic with the misuse message), and other waiters are unaffected.
#[test]
fn dropped_wait_leaves_no_waiter() {
    let wg = WaitGroup::new();
    wg.add(1);
    {
        let mut w = pin!(wg.wait());
        assert!(poll_noop(w.as_mut()).is_pending());
        assert_eq!(format!("{wg:?}"), "WaitGroup { counter: 1, waiters: 1 }");
    }
    assert_eq!(format!("{wg:?}"), "WaitGroup { counter: 1, waiters: 0 }");
    let mut kept = pin!(wg.wait());
    assert!(poll_noop(kept.as_mut()).is_pending());
    wg.done();
    assert!(poll_noop(kept.as_mut()).is_ready());
    wg.add(1); // a new round: no phantom waiter of the old one
    wg.done();
    wg.wait_blocking();
}

/// Go's wait-with-timeout pattern: `select!` between the wait (in a G that closes a channel)
/// and a timeout; here the losing wait future is dropped inside the select.
#[test]
fn wait_dropped_by_select() {
    let _w = watchdog("wait_dropped_by_select", LIMIT);
    rt(2).block_on(async {
        let wg = WaitGroup::new();
        wg.add(1);
        let (stop_tx, stop_rx) = goro::chan::<()>(0);
        let w = wg.clone();
        let waiter = goro::go(async move {
            let mut wait = pin!(w.wait());
            let mut stop = pin!(stop_rx.recv());
            std::future::poll_fn(|cx| {
                if wait.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(true);
                }
                stop.as_mut().poll(cx).map(|_| false)
            })
            .await
        });
        drop(stop_tx); // closes: the waiter gives up on the wait
        assert!(!waiter.await.unwrap(), "the counter is still 1");
        assert_eq!(format!("{wg:?}"), "WaitGroup { counter: 1, waiters: 0 }");
        wg.done();
        wg.wait().await;
    });
}

/// A wait re-polled with a different waker is woken through the new one.
#[test]
fn wait_repolled_with_new_waker() {
    let wg = WaitGroup::new();
    wg.add(1);
    let mut w = pin!(wg.wait());
    assert!(poll_noop(w.as_mut()).is_pending());
    let woken = Arc::new(AtomicUsize::new(0));
    struct Count(Arc<AtomicUsize>);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let waker = Waker::from(Arc::new(Count(woken.clone())));
    assert!(w.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    wg.done();
    assert_eq!(woken.load(SeqCst), 1);
    assert!(w.as_mut().poll(&mut Context::from_waker(&waker)).is_ready());
}

/// `wait` on a zero counter completes at once, and `Default` is a zero counter.
#[test]
fn zero_counter_is_ready() {
    let wg = WaitGroup::default();
    let mut w = pin!(wg.wait());
    assert!(poll_noop(w.as_mut()).is_ready());
    block_on_plain("wait on zero", wg.wait());
}

#[test]
fn wait_group_is_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<WaitGroup>();
    assert_send_sync::<goro::sync::futures::Wait<'static>>();
}
