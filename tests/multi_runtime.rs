//! Several runtimes in one process: each with its own Ps and Ms, running side by side, waking
//! each other's Gs, awaiting each other's handles, nested, and dropped under each other.

mod common;

use common::*;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// 0 + 1 + .. + (n - 1).
fn sum_below(n: u64) -> u64 {
    n * (n - 1) / 2
}

#[test]
fn two_runtimes_on_their_own_threads() {
    let _w = watchdog("two_runtimes_on_their_own_threads", LIMIT);
    const N: u64 = 20_000;
    let start = Arc::new(Barrier::new(2));
    let threads: Vec<_> = [1usize, 2]
        .into_iter()
        .map(|procs| {
            let start = start.clone();
            std::thread::spawn(move || {
                let rt = rt(procs);
                start.wait();
                let sum = rt.block_on(async move {
                    assert_eq!(goro::runtime::max_procs(), procs);
                    let hs: Vec<_> = (0..N)
                        .map(|i| {
                            goro::go(async move {
                                goro::runtime::yield_now().await;
                                // Still on our own runtime after a yield.
                                assert_eq!(goro::runtime::max_procs(), procs);
                                i
                            })
                        })
                        .collect();
                    let mut sum = 0;
                    for h in hs {
                        sum += h.await.unwrap();
                    }
                    sum
                });
                (sum, rt.metrics())
            })
        })
        .collect();
    for t in threads {
        let (sum, m) = t.join().unwrap();
        assert_eq!(sum, sum_below(N));
        assert!(m.spawned >= N, "each runtime counts its own Gs: {m:?}");
    }
}

/// A G of runtime A awaits the handle of a G of runtime B (B's completion wakes A's G from
/// one of B's threads), and the other way round.
#[test]
fn awaiting_a_handle_of_another_runtime() {
    let _w = watchdog("awaiting_a_handle_of_another_runtime", LIMIT);
    for (pa, pb) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
        let a = rt(pa);
        let b = Arc::new(rt(pb));
        let b2 = b.clone();
        let got = a.block_on(async move {
            let hb = b2.spawn(async move {
                assert_eq!(goro::runtime::max_procs(), pb);
                goro::runtime::yield_now().await;
                40
            });
            let ga = goro::go(async move { hb.await.unwrap() + 1 });
            // And B awaiting A: a G of B awaits a handle of a G of A, from A's main future.
            let ha = goro::go(async { 1 });
            let gb = b2.spawn(async move { ha.await.unwrap() });
            ga.await.unwrap() + gb.await.unwrap()
        });
        assert_eq!(got, 42);
        drop(b);
    }
}

/// Gs of two runtimes ping-pong through one-slot channels: every wake-up crosses runtimes (it
/// goes to the other runtime's global queue and must wake one of its Ms).
#[test]
fn cross_runtime_ping_pong() {
    let _w = watchdog("cross_runtime_ping_pong", LIMIT);
    const ROUNDS: usize = 5_000;
    for (pa, pb) in [(1, 1), (2, 2)] {
        let a = rt(pa);
        let b = rt(pb);
        let (ping, pong) = (Slot::new(), Slot::new());
        let (p1, q1) = (ping.clone(), pong.clone());
        let ha = a.spawn(async move {
            for i in 1..=ROUNDS {
                p1.send(i);
                assert_eq!(q1.recv().await, i);
            }
        });
        let hb = b.spawn(async move {
            for i in 1..=ROUNDS {
                assert_eq!(ping.recv().await, i);
                pong.send(i);
            }
        });
        ha.join().unwrap();
        hb.join().unwrap();
    }
}

/// `block_on` of runtime B inside a G of runtime A: inside, the thread belongs to B; after,
/// to A again.
#[test]
fn block_on_of_another_runtime_inside_a_g() {
    let _w = watchdog("block_on_of_another_runtime_inside_a_g", LIMIT);
    let a = rt(2);
    let b = Arc::new(rt(3));
    let b2 = b.clone();
    let got = a.block_on(async move {
        goro::go(async move {
            assert_eq!(goro::runtime::max_procs(), 2);
            let inner = b2.block_on(async {
                assert_eq!(goro::runtime::max_procs(), 3);
                goro::go(async { goro::runtime::max_procs() }).await.unwrap()
            });
            assert_eq!(inner, 3);
            // Back on A: `go` spawns on A.
            let outer = goro::go(async { goro::runtime::max_procs() }).await.unwrap();
            goro::runtime::yield_now().await;
            (inner, outer, goro::runtime::max_procs())
        })
        .await
        .unwrap()
    });
    assert_eq!(got, (3, 2, 2));
    drop(b);
}

/// A G of runtime A that ran `block_on` of runtime B is still A's for sysmon: a long loop
/// after it gets A's preemption request. Before the thread's P pointers were restored, B's M
/// cleared them when it let its P go, and A's M ran on without them until it next took a P:
/// `should_yield` said `false` for good, and its waits for goro's locks went uncounted.
#[test]
fn a_g_that_ran_another_runtimes_block_on_is_still_asked_to_yield() {
    let _w = watchdog("a_g_that_ran_another_runtimes_block_on_is_still_asked_to_yield", LIMIT);
    let a = rt(1);
    let b = rt(1);
    let asked = a.block_on(async move {
        goro::go(async move {
            assert_eq!(b.block_on(async { goro::go(async { 7 }).await.unwrap() }), 7);
            // sysmon asks after one time slice (10 ms); a minute is for a loaded machine.
            let give_up = std::time::Instant::now() + Duration::from_secs(60);
            while std::time::Instant::now() < give_up {
                if goro::runtime::coop::should_yield() {
                    return true;
                }
                std::hint::spin_loop();
            }
            false
        })
        .await
        .unwrap()
    });
    assert!(asked, "a G that computed for a minute after a nested block_on was never asked to yield");
}

/// Dropping runtime B cancels its Gs, and a G of runtime A that awaits one of their handles is
/// woken with the cancellation.
#[test]
fn dropping_a_runtime_wakes_foreign_waiters_with_cancelled() {
    let _w = watchdog("dropping_a_runtime_wakes_foreign_waiters_with_cancelled", LIMIT);
    for procs in [1, 2] {
        let a = rt(procs);
        let b = rt(procs);
        let hb = b.spawn(std::future::pending::<()>());
        let waiting = Event::new();
        let w = waiting.clone();
        let ga = a.spawn(async move {
            w.set();
            hb.await
        });
        a.block_on(waiting.wait());
        drop(b);
        let res = a.block_on(ga).unwrap();
        assert!(res.unwrap_err().is_cancelled());
    }
}

/// Runtime B dropped inside a G of runtime A: B shuts down completely (its Gs dropped, its
/// threads joined) and A carries on.
#[test]
fn dropping_a_runtime_inside_a_g_of_another() {
    let _w = watchdog("dropping_a_runtime_inside_a_g_of_another", LIMIT);
    let drops = Arc::new(AtomicUsize::new(0));
    let a = rt(2);
    let b = rt(2);
    for _ in 0..100 {
        let guard = DropCount(drops.clone());
        drop(b.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await
        }));
    }
    let d = drops.clone();
    let got = a.block_on(async move {
        let dropped = goro::go(async move {
            drop(b);
            d.load(SeqCst)
        })
        .await
        .unwrap();
        (dropped, goro::go(async { 1 }).await.unwrap())
    });
    assert_eq!(got, (100, 1));
}
