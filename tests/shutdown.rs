//! Shutdown: when `goro::run` returns or a `Runtime` is dropped, every G still alive has its
//! future dropped (parked, queued, or never polled), destructors that spawn or wake during
//! shutdown neither hang nor crash, handles of dropped Gs report cancellation, the runtime's
//! threads stop, and a new runtime works afterwards.

mod common;

use common::*;
use goro::runtime::{Builder, JoinHandle};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

const PARKED: usize = 1000;
const QUEUED: usize = 200;
const YIELDERS: usize = 10;

/// Spawns, from inside a runtime, `PARKED` Gs parked forever on `pending()` (and waits until
/// every one of them has been polled), `YIELDERS` Gs that never stop yielding, and then
/// `QUEUED` more that the main future does not wait for (most of them still queued when it
/// returns). Every one holds a `DropCount`. Returns how many were spawned.
async fn spawn_doomed(drops: &Arc<AtomicUsize>) -> usize {
    let polled = Arc::new(AtomicUsize::new(0));
    for _ in 0..PARKED {
        let (guard, p) = (DropCount(drops.clone()), polled.clone());
        drop(goro::go(async move {
            let _guard = guard;
            p.fetch_add(1, SeqCst);
            std::future::pending::<()>().await
        }));
    }
    yield_until("every parked G to be polled", || polled.load(SeqCst) == PARKED).await;
    for _ in 0..YIELDERS {
        let guard = DropCount(drops.clone());
        drop(goro::go(async move {
            let _guard = guard;
            loop {
                goro::runtime::yield_now().await;
            }
        }));
    }
    for _ in 0..QUEUED {
        let guard = DropCount(drops.clone());
        drop(goro::go(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        }));
    }
    assert_eq!(drops.load(SeqCst), 0, "nothing dropped while the runtime runs");
    PARKED + YIELDERS + QUEUED
}

#[test]
fn run_drops_every_live_g() {
    let _w = watchdog("run_drops_every_live_g", LIMIT);
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let spawned = goro::run(async move { spawn_doomed(&d).await });
    assert_eq!(drops.load(SeqCst), spawned);
}

#[test]
fn dropping_a_runtime_drops_every_live_g() {
    let _w = watchdog("dropping_a_runtime_drops_every_live_g", LIMIT);
    for procs in [1, 2] {
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = Builder::new().max_procs(procs).build().unwrap();
        let d = drops.clone();
        let mut spawned = rt.block_on(async move { spawn_doomed(&d).await });
        // Gs spawned from a plain thread sit in the global queue, possibly never polled.
        for _ in 0..QUEUED {
            let guard = DropCount(drops.clone());
            drop(rt.spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            }));
        }
        spawned += QUEUED;
        // Gs spawned on a runtime that nobody ever entered.
        let idle = Builder::new().max_procs(procs).build().unwrap();
        drop(idle);
        drop(rt);
        assert_eq!(drops.load(SeqCst), spawned, "procs={procs}");
    }
}

/// A runtime built and never used, or used with no G left, shuts down at once.
#[test]
fn dropping_an_unused_runtime() {
    let _w = watchdog("dropping_an_unused_runtime", LIMIT);
    drop(Builder::new().max_procs(4).build().unwrap());
    let rt = Builder::new().max_procs(4).build().unwrap();
    rt.block_on(async {});
    drop(rt);
}

/// A handle that outlives its runtime reports the G as cancelled, whether it is read after the
/// runtime is gone or awaited (from a plain thread) while the runtime shuts down.
#[test]
fn handles_outliving_the_runtime_report_cancelled() {
    let _w = watchdog("handles_outliving_the_runtime_report_cancelled", LIMIT);
    let rt = Builder::new().max_procs(2).build().unwrap();
    let parked: JoinHandle<()> = rt.spawn(std::future::pending());
    let done = rt.spawn(async { 5 });
    let blocked: JoinHandle<()> = rt.spawn(std::future::pending());
    wait_until("the finishing G to finish", || done.is_finished());
    std::thread::scope(|s| {
        let joiner = s.spawn(move || blocked.join());
        drop(rt);
        assert!(joiner.join().unwrap().unwrap_err().is_cancelled());
    });
    assert!(parked.is_finished());
    let err = parked.join().unwrap_err();
    assert!(err.is_cancelled(), "{err}");
    assert_eq!(done.join().unwrap(), 5, "a G that finished before shutdown keeps its value");
}

/// Holds a closure that runs when the G's future is dropped.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// A G's destructor that spawns another G during shutdown gets a handle to a G that is already
/// cancelled (its future dropped, never polled), and shutdown goes on.
#[test]
fn destructor_spawning_during_shutdown() {
    let _w = watchdog("destructor_spawning_during_shutdown", LIMIT);
    const N: usize = 100;
    for procs in [1, 2] {
        let drops = Arc::new(AtomicUsize::new(0));
        let spawned_cancelled = Arc::new(AtomicUsize::new(0));
        let spawned_ran = Arc::new(AtomicUsize::new(0));
        let rt = Builder::new().max_procs(procs).build().unwrap();
        let (d, c, r) = (drops.clone(), spawned_cancelled.clone(), spawned_ran.clone());
        rt.block_on(async move {
            let polled = Arc::new(AtomicUsize::new(0));
            for _ in 0..N {
                let (d, c, r, p) = (d.clone(), c.clone(), r.clone(), polled.clone());
                let guard = OnDrop(move || {
                    let (guard, r) = (DropCount(d.clone()), r.clone());
                    let h = goro::go(async move {
                        let _guard = guard;
                        r.fetch_add(1, SeqCst);
                    });
                    // Not awaited in a destructor, but join() must not block: it is cancelled.
                    match h.join() {
                        Err(e) if e.is_cancelled() => {
                            c.fetch_add(1, SeqCst);
                        }
                        _ => {}
                    }
                });
                drop(goro::go(async move {
                    let _guard = guard;
                    p.fetch_add(1, SeqCst);
                    std::future::pending::<()>().await
                }));
            }
            yield_until("every G to be polled", || polled.load(SeqCst) == N).await;
        });
        drop(rt);
        assert_eq!(spawned_cancelled.load(SeqCst), N, "procs={procs}");
        assert_eq!(spawned_ran.load(SeqCst), 0, "procs={procs}");
        assert_eq!(drops.load(SeqCst), N, "the spawned Gs' futures were dropped too; procs={procs}");
    }
}

/// Destructors that wake (and abort) other Gs during shutdown: some of the woken Gs were
/// already dropped, some not yet; nothing hangs, crashes, or is dropped twice.
#[test]
fn destructor_waking_during_shutdown() {
    let _w = watchdog("destructor_waking_during_shutdown", LIMIT);
    const PAIRS: usize = 200;
    for procs in [1, 2] {
        let drops = Arc::new(AtomicUsize::new(0));
        let repolled = Arc::new(AtomicUsize::new(0));
        let (d, rp) = (drops.clone(), repolled.clone());
        let rt = Builder::new().max_procs(procs).build().unwrap();
        rt.block_on(async move {
            let polled = Arc::new(AtomicUsize::new(0));
            for i in 0..PAIRS {
                let ev = Event::new();
                let (waiter_guard, p) = (DropCount(d.clone()), polled.clone());
                let (e, rp) = (ev.clone(), rp.clone());
                let waiter = async move {
                    let _guard = waiter_guard;
                    p.fetch_add(1, SeqCst);
                    e.wait().await;
                    // Only woken during shutdown: it must not be polled again.
                    rp.fetch_add(1, SeqCst);
                };
                let (waker_guard, p) = (DropCount(d.clone()), polled.clone());
                let waker_side = move |other: Option<JoinHandle<()>>| {
                    let on_drop = OnDrop(move || {
                        ev.set();
                        if let Some(h) = &other {
                            h.abort();
                        }
                    });
                    async move {
                        let _guard = waker_guard;
                        let _on_drop = on_drop;
                        p.fetch_add(1, SeqCst);
                        std::future::pending::<()>().await
                    }
                };
                // Both spawn orders, so that both "waker dropped first" and "waiter dropped
                // first" happen (allgs is drained in shard order, by goid).
                if i % 2 == 0 {
                    let w = goro::go(waiter);
                    drop(goro::go(waker_side(Some(w))));
                } else {
                    let other = goro::go(std::future::pending::<()>());
                    drop(goro::go(waker_side(Some(other))));
                    drop(goro::go(waiter));
                }
            }
            yield_until("every G to be polled", || polled.load(SeqCst) == 2 * PAIRS).await;
        });
        drop(rt);
        assert_eq!(drops.load(SeqCst), 2 * PAIRS, "procs={procs}");
        assert_eq!(repolled.load(SeqCst), 0, "a G was polled after shutdown began; procs={procs}");
    }
}

/// A destructor that panics during shutdown does not stop the others from running.
#[test]
fn destructor_panicking_during_shutdown() {
    let _w = watchdog("destructor_panicking_during_shutdown", LIMIT);
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let res = catch_unwind(AssertUnwindSafe(|| {
        goro::run(async move {
            let polled = Arc::new(AtomicUsize::new(0));
            for i in 0..20 {
                let (guard, p) = (DropCount(d.clone()), polled.clone());
                let bomb = OnDrop(move || {
                    if i % 5 == 0 {
                        panic!("destructor {i} panics on purpose");
                    }
                });
                drop(goro::go(async move {
                    let _guard = guard;
                    let _bomb = bomb;
                    p.fetch_add(1, SeqCst);
                    std::future::pending::<()>().await
                }));
            }
            yield_until("every G to be polled", || polled.load(SeqCst) == 20).await;
        })
    }));
    assert!(res.is_ok(), "a G's destructor panic must not escape goro::run");
    assert_eq!(drops.load(SeqCst), 20);
}

/// `goro::run` can be called again and again in one process.
#[test]
fn run_again_after_run() {
    let _w = watchdog("run_again_after_run", LIMIT);
    for round in 0..5 {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let got = goro::run(async move {
            assert_eq!(goro::runtime::num_goroutine(), 1);
            let guard = DropCount(d);
            drop(goro::go(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            }));
            goro::go(async move { round * 2 }).await.unwrap()
        });
        assert_eq!(got, round * 2);
        assert_eq!(drops.load(SeqCst), 1);
    }
}

/// The threads of a dropped runtime are gone (Linux: `/proc/self/task/*/comm`).
#[test]
fn threads_stop_when_the_runtime_is_dropped() {
    let _w = watchdog("threads_stop_when_the_runtime_is_dropped", LIMIT);
    // Unique in this process, and short: the kernel keeps 15 bytes of a thread's name.
    const NAME: &str = "shutdn-thr";
    let ours = || thread_names().map(|names| names.into_iter().filter(|n| n.starts_with(NAME)).count());
    if ours().is_none() {
        eprintln!("no /proc/self/task here: skipping the thread check");
        return;
    }
    for _ in 0..2 {
        let rt = Builder::new().max_procs(2).thread_name(NAME).build().unwrap();
        assert_eq!(ours(), Some(0), "no thread starts before there is work");
        // Work from a plain thread: only the runtime's own threads can run it.
        let names: Vec<String> = (0..50)
            .map(|_| {
                rt.spawn(async {
                    goro::runtime::yield_now().await;
                    std::thread::current().name().unwrap_or("").to_owned()
                })
            })
            .map(|h| h.join().unwrap())
            .collect();
        assert!(names.iter().all(|n| n.starts_with(&format!("{NAME}-"))), "{names:?}");
        // A G parked forever keeps nothing alive either.
        drop(rt.spawn(std::future::pending::<()>()));
        assert!(ours().unwrap() >= 1);
        drop(rt);
        // pthread_join returns once the thread has run its last user code; the kernel may take
        // a moment more to remove it from /proc.
        wait_until("the runtime's threads to exit", || ours() == Some(0));
    }
}
