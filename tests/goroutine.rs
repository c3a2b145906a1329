//! A G's life through the public facade: a panic stays in its G, `JoinHandle` (join, abort,
//! detach, from plain threads), `num_goroutine`, the recycling of dead Gs, and the races,
//! sizes and outputs of a G's life cycle.

mod common;

use common::*;
use goro::runtime::JoinHandle;
use std::collections::HashSet;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-test watchdog: far beyond what any test needs, even debug-built on a loaded machine.
const LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// Panics are isolated
// ---------------------------------------------------------------------------------------------

#[test]
fn panicking_g_reports_its_payload() {
    let _w = watchdog("panicking_g_reports_its_payload", LIMIT);
    rt(2).block_on(async {
        let h = goro::go(async { panic!("boom") });
        let (id, line) = (h.id(), line!() - 1);
        let err = h.await.unwrap_err();
        assert!(err.is_panic());
        assert!(!err.is_cancelled());
        assert_eq!(err.id(), id);
        assert!(err.location().file().ends_with("goroutine.rs"), "{}", err.location());
        assert_eq!(err.location().line(), line);
        let shown = err.to_string();
        assert!(shown.contains("panicked") && shown.contains("boom"), "{shown}");
        assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "boom");

        // (A runtime value, so that the message is formatted into a `String`: rustc folds a
        // literal argument into the format string, which makes the payload a `&str`.)
        let n = std::hint::black_box(7);
        let err = goro::go(async move { panic!("formatted {n}") }).await.unwrap_err();
        let payload = err.try_into_panic().expect("a panic, not a cancellation");
        assert_eq!(*payload.downcast::<String>().unwrap(), "formatted 7");

        // A panic after the G has already been suspended once.
        let err = goro::go(async {
            goro::runtime::yield_now().await;
            std::panic::panic_any(42u32)
        })
        .await
        .unwrap_err();
        assert_eq!(*err.into_panic().downcast::<u32>().unwrap(), 42);
    });
}

#[test]
fn runtime_keeps_running_after_g_panics() {
    let _w = watchdog("runtime_keeps_running_after_g_panics", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        rt.block_on(async {
            let panics: Vec<_> = (0..8)
                .map(|i| {
                    goro::go(async move {
                        goro::runtime::yield_now().await;
                        panic!("G {i} panics on purpose")
                    })
                })
                .collect();
            let ok: Vec<_> = (0..1000).map(|i| goro::go(async move { i })).collect();
            for h in panics {
                assert!(h.await.unwrap_err().is_panic());
            }
            let mut sum = 0;
            for h in ok {
                sum += h.await.unwrap();
            }
            assert_eq!(sum, 999 * 1000 / 2);
        });
        // And in a later block_on too.
        assert_eq!(rt.block_on(async { goro::go(async { 5 }).await.unwrap() }), 5);
    }
}

#[test]
fn main_panic_propagates_and_runtime_stays_usable() {
    let _w = watchdog("main_panic_propagates_and_runtime_stays_usable", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        let release = Event::new();
        let r = release.clone();
        let mut survivor: Option<JoinHandle<u32>> = None;
        let res = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                // A G that outlives this block_on.
                survivor = Some(goro::go(async move {
                    r.wait().await;
                    7
                }));
                goro::runtime::yield_now().await;
                panic!("main boom");
            })
        }));
        let payload = res.expect_err("the main future's panic must propagate");
        assert_eq!(panic_message(&*payload), "main boom");
        assert_eq!(rt.metrics().goroutines, 1, "the survivor is alive, no main G is");

        let survivor = survivor.take().unwrap();
        let got = rt.block_on(async move {
            assert_eq!(goro::runtime::num_goroutine(), 2);
            release.set();
            let v = survivor.await.unwrap();
            v + goro::go(async { 1 }).await.unwrap()
        });
        assert_eq!(got, 8);
    }
}

/// `goro::run` re-raises the main G's panic after shutting the runtime down.
#[test]
fn run_propagates_main_panic() {
    let _w = watchdog("run_propagates_main_panic", LIMIT);
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let res = catch_unwind(AssertUnwindSafe(|| {
        goro::run(async move {
            let guard = DropCount(d);
            drop(goro::go(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            }));
            goro::runtime::yield_now().await;
            panic!("run boom")
        })
    }));
    assert_eq!(panic_message(&*res.unwrap_err()), "run boom");
    assert_eq!(drops.load(SeqCst), 1, "the pending G was dropped when run unwound");
}

// ---------------------------------------------------------------------------------------------
// JoinHandle
// ---------------------------------------------------------------------------------------------

#[test]
fn abort_of_a_pending_g_cancels_it() {
    let _w = watchdog("abort_of_a_pending_g_cancels_it", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let drops = Arc::new(AtomicUsize::new(0));
            let polled = Arc::new(AtomicBool::new(false));
            let (d, p) = (drops.clone(), polled.clone());
            let h = goro::go(async move {
                let _guard = DropCount(d);
                p.store(true, SeqCst);
                std::future::pending::<()>().await
            });
            yield_until("the G to be polled", || polled.load(SeqCst)).await;
            assert!(!h.is_finished());
            h.abort();
            h.abort(); // twice is fine
            let id = h.id();
            let err = h.await.unwrap_err();
            assert!(err.is_cancelled() && !err.is_panic());
            assert_eq!(err.id(), id);
            assert!(err.to_string().contains("cancelled"), "{err}");
            assert!(err.try_into_panic().is_err());
            assert_eq!(drops.load(SeqCst), 1, "the future was dropped");

            // Aborted before it was ever polled: it never runs. (Deterministic only with one
            // P: with two, another M could steal and run it before the abort.)
            if procs == 1 {
                let ran = Arc::new(AtomicBool::new(false));
                let r = ran.clone();
                let h = goro::go(async move { r.store(true, SeqCst) });
                h.abort();
                assert!(h.await.unwrap_err().is_cancelled());
                assert!(!ran.load(SeqCst));
            }
        });
    }
}

#[test]
fn abort_of_a_running_g_cancels_it_at_its_next_yield() {
    let _w = watchdog("abort_of_a_running_g_cancels_it_at_its_next_yield", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        let started = Arc::new(AtomicBool::new(false));
        let s = started.clone();
        let h = rt.spawn(async move {
            s.store(true, SeqCst);
            loop {
                goro::runtime::yield_now().await;
            }
        });
        // Aborted from a plain thread while an M keeps it busy.
        wait_until("the G to start", || started.load(SeqCst));
        h.abort();
        assert!(h.join().unwrap_err().is_cancelled());
    }
}

#[test]
fn abort_after_completion_keeps_the_value() {
    let _w = watchdog("abort_after_completion_keeps_the_value", LIMIT);
    rt(2).block_on(async {
        let h = goro::go(async { String::from("kept") });
        yield_until("the G to finish", || h.is_finished()).await;
        h.abort();
        assert_eq!(h.await.unwrap(), "kept");
    });
}

#[test]
fn dropping_the_handle_detaches_the_g() {
    let _w = watchdog("dropping_the_handle_detaches_the_g", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let go_on = Event::new();
            let finished = Event::new();
            let (g, f) = (go_on.clone(), finished.clone());
            let h = goro::go(async move {
                g.wait().await;
                goro::runtime::yield_now().await;
                f.set();
                String::from("dropped with nobody to read it")
            });
            drop(h);
            go_on.set();
            finished.wait().await;
        });
    }
}

#[test]
fn join_from_a_plain_thread() {
    let _w = watchdog("join_from_a_plain_thread", LIMIT);
    // No thread is in block_on: the runtime's own Ms run the Gs.
    let rt = rt(2);
    let h = rt.spawn(async {
        let parts: Vec<_> = (1..=10u64).map(|i| goro::go(async move { i * i })).collect();
        let mut s = 0;
        for p in parts {
            s += p.await.unwrap();
        }
        s
    });
    let got = std::thread::spawn(move || h.join()).join().unwrap();
    assert_eq!(got.unwrap(), 385);
    // Joining a failed G from a plain thread.
    let err = rt.spawn(async { panic!("joined") }).join().unwrap_err();
    assert!(err.is_panic());
}

#[test]
fn spawn_from_a_plain_thread_while_another_is_in_block_on() {
    let _w = watchdog("spawn_from_a_plain_thread_while_another_is_in_block_on", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        let ev = Event::new();
        let e = ev.clone();
        std::thread::scope(|s| {
            s.spawn(|| {
                // From a plain thread: the G goes to the global queue and must be picked up.
                let hs: Vec<_> = (0..100).map(|i| rt.spawn(async move { i })).collect();
                let sum: i32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
                assert_eq!(sum, 4950);
                let e = e.clone();
                drop(rt.spawn(async move { e.set() }));
            });
            rt.block_on(ev.wait());
        });
    }
}

#[test]
fn is_finished_tracks_completion() {
    let _w = watchdog("is_finished_tracks_completion", LIMIT);
    rt(2).block_on(async {
        let ev = Event::new();
        let e = ev.clone();
        let h = goro::go(async move { e.wait().await });
        for _ in 0..10 {
            goro::runtime::yield_now().await;
        }
        assert!(!h.is_finished());
        ev.set();
        yield_until("is_finished", || h.is_finished()).await;
        h.await.unwrap();

        let p = goro::go(async { panic!("finished by panicking") });
        yield_until("is_finished after a panic", || p.is_finished()).await;
        assert!(p.await.unwrap_err().is_panic());
    });
}

#[test]
fn handle_ids_are_unique() {
    rt(2).block_on(async {
        let hs: Vec<_> = (0..1000).map(|_| goro::go(async {})).collect();
        let ids: HashSet<u64> = hs.iter().map(|h| h.id()).collect();
        assert_eq!(ids.len(), hs.len());
        for h in hs {
            h.await.unwrap();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// num_goroutine
// ---------------------------------------------------------------------------------------------

#[test]
fn num_goroutine_counts_main_and_returns_to_one() {
    let _w = watchdog("num_goroutine_counts_main_and_returns_to_one", LIMIT);
    assert_eq!(goro::run(async { goro::runtime::num_goroutine() }), 1);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            assert_eq!(goro::runtime::num_goroutine(), 1);
            let ev = Event::new();
            let hs: Vec<_> = (0..100)
                .map(|_| {
                    let e = ev.clone();
                    goro::go(async move { e.wait().await })
                })
                .collect();
            assert_eq!(goro::runtime::num_goroutine(), 101);
            assert_eq!(goro::runtime::metrics().goroutines, 101);
            ev.set();
            for h in hs {
                h.await.unwrap();
            }
            // A G leaves the count when its M finishes it, which may be a moment after its
            // JoinHandle saw the result on another M.
            yield_until("num_goroutine back to 1", || goro::runtime::num_goroutine() == 1).await;
            // Aborted and panicked Gs leave it too.
            let a = goro::go(std::future::pending::<()>());
            let p = goro::go(async { panic!("counted out") });
            a.abort();
            let _ = a.await;
            let _ = p.await;
            yield_until("num_goroutine back to 1 after abort and panic", || goro::runtime::num_goroutine() == 1).await;
        });
    }
}

/// Finished Gs leave `allgs` in batches per P (32 at a time): the count must not include a
/// batch that is waiting to be unlinked, whatever its fill; every finished G's future was
/// dropped, and Gs still waiting are counted beside the batches.
#[test]
fn num_goroutine_ignores_finished_gs_awaiting_unlink() {
    let _w = watchdog("num_goroutine_ignores_finished_gs_awaiting_unlink", LIMIT);
    struct Tally(Arc<AtomicUsize>);
    impl Drop for Tally {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    for n in [1, 31, 32, 33, 1000, 10_001] {
        let dropped = Arc::new(AtomicUsize::new(0));
        let runtime = rt(2);
        let d = dropped.clone();
        runtime.block_on(async move {
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    let t = Tally(d.clone());
                    goro::go(async move { drop(t) })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
            yield_until("num_goroutine back to 1", || goro::runtime::num_goroutine() == 1).await;
            assert_eq!(goro::runtime::metrics().goroutines, 1);
            // Gs still waiting are counted beside the finished ones.
            let ev = Event::new();
            let waiting: Vec<_> = (0..5)
                .map(|_| {
                    let e = ev.clone();
                    goro::go(async move { e.wait().await })
                })
                .collect();
            assert_eq!(goro::runtime::num_goroutine(), 6);
            drop(waiting);
        });
        drop(runtime);
        assert_eq!(dropped.load(SeqCst), n, "n = {n}");
    }
}

// ---------------------------------------------------------------------------------------------
// gfree reuse
// ---------------------------------------------------------------------------------------------

#[test]
fn dead_gs_are_reused() {
    let _w = watchdog("dead_gs_are_reused", LIMIT);
    let rt = rt(1);
    let m = rt.block_on(async {
        let before = goro::runtime::metrics();
        for i in 0..10_000u64 {
            assert_eq!(goro::go(async move { i + 1 }).await.unwrap(), i + 1);
        }
        let after = goro::runtime::metrics();
        (before, after)
    });
    let (before, after) = m;
    let reused = after.gfree_reused - before.gfree_reused;
    assert!(reused > 9_000, "only {reused} of 10000 spawns reused a dead G: {after:?}");
    assert_eq!(after.spawned - before.spawned, 10_000);
}

// ---------------------------------------------------------------------------------------------
// More of the G's life cycle: races, sizes, outputs
// ---------------------------------------------------------------------------------------------

/// A G sitting in the `runnext` slot of a P whose M is stuck in a long poll is stolen by an
/// idle M (in the thieves' last pass).
#[test]
fn runnext_of_a_busy_p_is_stolen() {
    let _w = watchdog("runnext_of_a_busy_p_is_stolen", LIMIT);
    rt(2).block_on(async {
        goro::go(async {
            let ran = Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            // Goes to this P's runnext; the ring stays empty.
            let y = goro::go(async move { r.store(true, SeqCst) });
            // Hog this M without yielding until another M has taken and run `y`.
            let deadline = Instant::now() + HANG;
            while !ran.load(SeqCst) {
                assert!(Instant::now() < deadline, "the G in runnext was never stolen");
                std::hint::spin_loop();
            }
            y.await.unwrap();
        })
        .await
        .unwrap();
    });
}

/// A handle polled by one G and then awaited by another wakes the second one.
#[test]
fn handle_moved_between_gs_wakes_the_last_poller() {
    let _w = watchdog("handle_moved_between_gs_wakes_the_last_poller", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let release = Event::new();
            let r = release.clone();
            let mut target = goro::go(async move {
                r.wait().await;
                11
            });
            // Polled once by `first` (which registers its waker), then handed on in a Vec (the
            // handle itself is a future: returning it bare from an async block reads oddly).
            let first = goro::go(async move {
                std::future::poll_fn(|cx| {
                    assert!(std::pin::Pin::new(&mut target).poll(cx).is_pending());
                    std::task::Poll::Ready(())
                })
                .await;
                vec![target]
            });
            let target = first.await.unwrap().pop().unwrap();
            let second = goro::go(async move { target.await.unwrap() });
            for _ in 0..10 {
                goro::runtime::yield_now().await;
            }
            release.set();
            assert_eq!(second.await.unwrap(), 11);
        });
    }
}

/// `abort` racing with the G's own completion, many times: every handle resolves (a value or a
/// cancellation), and every future is dropped exactly once.
#[test]
fn abort_racing_completion() {
    let _w = watchdog("abort_racing_completion", LIMIT);
    const N: usize = 10_000;
    let rt = rt(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let (ok, cancelled) = rt.block_on(async move {
        let hs: Vec<_> = (0..N)
            .map(|i| {
                let guard = DropCount(d.clone());
                goro::go(async move {
                    let _guard = guard;
                    if i % 2 == 0 {
                        goro::runtime::yield_now().await;
                    }
                    i
                })
            })
            .collect();
        let (mut ok, mut cancelled) = (0, 0);
        for (i, h) in hs.into_iter().enumerate() {
            if i % 3 != 0 {
                h.abort();
            }
            match h.await {
                Ok(v) => {
                    assert_eq!(v, i);
                    ok += 1;
                }
                Err(e) => {
                    assert!(e.is_cancelled() && i % 3 != 0, "G {i}: {e}");
                    cancelled += 1;
                }
            }
        }
        (ok, cancelled)
    });
    assert_eq!(ok + cancelled, N);
    assert!(ok >= N / 3);
    assert_eq!(drops.load(SeqCst), N);
}

/// A G woken over and over from several plain threads at once is queued at most once at a time
/// and runs to the end; wakers kept past the G's end (and past its runtime's) do nothing.
#[test]
fn wake_storm_from_plain_threads() {
    let _w = watchdog("wake_storm_from_plain_threads", LIMIT);
    const POLLS: usize = 5_000;
    let rt = rt(2);
    let slot: Arc<Mutex<Option<std::task::Waker>>> = Arc::default();
    let running = Arc::new(AtomicUsize::new(0));
    let (s, run) = (slot.clone(), running.clone());
    let h = rt.spawn(async move {
        let mut polls = 0;
        std::future::poll_fn(|cx| {
            // Never polled twice at once.
            assert_eq!(run.fetch_add(1, SeqCst), 0);
            polls += 1;
            *s.lock().unwrap() = Some(cx.waker().clone());
            run.fetch_sub(1, SeqCst);
            if polls == POLLS {
                std::task::Poll::Ready(polls)
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    });
    let done = AtomicBool::new(false);
    let kept = std::thread::scope(|sc| {
        let wakers: Vec<_> = (0..3)
            .map(|_| {
                sc.spawn(|| {
                    let mut last = None;
                    while !done.load(SeqCst) {
                        let w = slot.lock().unwrap().clone();
                        if let Some(w) = w {
                            w.wake_by_ref();
                            last = Some(w);
                        }
                        std::thread::yield_now();
                    }
                    last
                })
            })
            .collect();
        let polls = block_on_plain("the G to be polled 5000 times", h).unwrap();
        done.store(true, SeqCst);
        assert_eq!(polls, POLLS);
        wakers.into_iter().filter_map(|t| t.join().unwrap()).collect::<Vec<_>>()
    });
    for w in &kept {
        w.wake_by_ref();
    }
    drop(rt);
    for w in kept {
        w.wake();
    }
}

#[repr(align(128))]
struct OverAligned(u8);

/// Gs of every size: small (pooled size classes), larger than the largest class, over-aligned,
/// and with outputs of every size; and recycled blocks of one class reused by another type.
#[test]
fn gs_of_every_size() {
    let _w = watchdog("gs_of_every_size", LIMIT);
    rt(2).block_on(async {
        for _ in 0..3 {
            let tiny = goro::go(async {});
            let small = goro::go(async {
                let x = [7u8; 64];
                goro::runtime::yield_now().await;
                x.iter().map(|&b| b as u32).sum::<u32>()
            });
            let mid = goro::go(async {
                let x = [1u8; 1500];
                goro::runtime::yield_now().await;
                x.len()
            });
            let big = goro::go(async {
                let x = [3u8; 64 * 1024];
                goro::runtime::yield_now().await;
                x.iter().map(|&b| b as usize).sum::<usize>()
            });
            let aligned = goro::go(async {
                let x = OverAligned(9);
                goro::runtime::yield_now().await;
                assert_eq!(&x as *const OverAligned as usize % 128, 0);
                x.0
            });
            let big_output = goro::go(async { [5u8; 100 * 1024] });
            tiny.await.unwrap();
            assert_eq!(small.await.unwrap(), 7 * 64);
            assert_eq!(mid.await.unwrap(), 1500);
            assert_eq!(big.await.unwrap(), 3 * 64 * 1024);
            assert_eq!(aligned.await.unwrap(), 9);
            assert!(big_output.await.unwrap().iter().all(|&b| b == 5));
        }
    });
}

/// A G's output is dropped exactly once, whoever ends up owning it.
#[test]
fn outputs_are_dropped_exactly_once() {
    let _w = watchdog("outputs_are_dropped_exactly_once", LIMIT);
    for procs in [1, 2] {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        rt(procs).block_on(async move {
            // Read by the handle, then dropped by us.
            let out = goro::go({
                let d = d.clone();
                async move { DropCount(d) }
            })
            .await
            .unwrap();
            drop(out);
            assert_eq!(d.load(SeqCst), 1);
            // Finished, never read: dropped with the handle.
            let h = goro::go({
                let d = d.clone();
                async move { DropCount(d) }
            });
            yield_until("the G to finish", || h.is_finished()).await;
            assert_eq!(d.load(SeqCst), 1);
            h.abort(); // keeps the value
            drop(h);
            assert_eq!(d.load(SeqCst), 2);
            // Detached before it finished: dropped by the runtime.
            let ev = Event::new();
            let e = ev.clone();
            let h = goro::go({
                let d = d.clone();
                async move {
                    e.wait().await;
                    DropCount(d)
                }
            });
            drop(h);
            ev.set();
            yield_until("the detached output to be dropped", || d.load(SeqCst) == 3).await;
        });
        assert_eq!(drops.load(SeqCst), 3, "procs={procs}");
    }
}

/// A future whose destructor panics after it returned `Ready`: that panic becomes the G's
/// result, and the runtime carries on.
#[test]
fn panic_in_a_finished_futures_destructor_is_reported() {
    let _w = watchdog("panic_in_a_finished_futures_destructor_is_reported", LIMIT);
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("bomb in drop");
        }
    }
    rt(2).block_on(async {
        let err = goro::go(async {
            let _bomb = Bomb;
            goro::runtime::yield_now().await;
            1
        })
        .await
        .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(panic_message(&*err.into_panic()), "bomb in drop");
        assert_eq!(goro::go(async { 2 }).await.unwrap(), 2);
    });
}
