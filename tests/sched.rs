//! The scheduler through the public facade: many Gs, work stealing, fairness of `yield_now`,
//! `runnext` hand-offs, and wake-ups from outside the runtime.

mod common;

use common::*;
use goro::runtime::JoinHandle;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-test watchdog: far beyond what any test needs, even debug-built on a loaded machine.
const LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// Many Gs
// ---------------------------------------------------------------------------------------------

const MANY: usize = 100_000;

fn many_gs_complete(procs: usize) -> goro::runtime::Metrics {
    let rt = rt(procs);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let m = rt.block_on(async move {
        let handles: Vec<JoinHandle<usize>> = (0..MANY)
            .map(|i| {
                let r = r.clone();
                goro::go(async move {
                    r.fetch_add(1, SeqCst);
                    i
                })
            })
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.expect("G failed");
        }
        assert_eq!(sum, MANY * (MANY - 1) / 2);
        goro::runtime::metrics()
    });
    assert_eq!(ran.load(SeqCst), MANY);
    assert!(m.spawned >= MANY as u64, "{m:?}");
    assert_eq!(m.procs, procs);
    m
}

#[test]
fn hundred_thousand_gs_complete_on_two_procs() {
    let _w = watchdog("hundred_thousand_gs_complete_on_two_procs", LIMIT);
    many_gs_complete(2);
}

#[test]
fn hundred_thousand_gs_complete_on_one_proc() {
    let _w = watchdog("hundred_thousand_gs_complete_on_one_proc", LIMIT);
    let m = many_gs_complete(1);
    // The main G spawns them all without yielding, on the only P: its 256-slot ring must spill
    // to the global queue, and the spilled Gs must come back from there.
    assert!(m.local_runq_overflows > 0, "{m:?}");
    assert!(m.global_runq_polls > 0, "{m:?}");
}

/// The same number of Gs, detached, spawned by Gs (a two-level fan-out), counted with an atomic.
#[test]
fn hundred_thousand_detached_gs_spawned_by_gs() {
    let _w = watchdog("hundred_thousand_detached_gs_spawned_by_gs", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        let ran = Arc::new(AtomicUsize::new(0));
        let done = Event::new();
        let (r, d) = (ran.clone(), done.clone());
        rt.block_on(async move {
            for _ in 0..100 {
                let (r, d) = (r.clone(), d.clone());
                drop(goro::go(async move {
                    for _ in 0..MANY / 100 {
                        let (r, d) = (r.clone(), d.clone());
                        drop(goro::go(async move {
                            if r.fetch_add(1, SeqCst) + 1 == MANY {
                                d.set();
                            }
                        }));
                    }
                }));
            }
            d.wait().await;
        });
        assert_eq!(ran.load(SeqCst), MANY, "procs={procs}");
    }
}

// ---------------------------------------------------------------------------------------------
// Work stealing
// ---------------------------------------------------------------------------------------------

/// All the work is spawned on the main G's P; the other P's M can only get it by stealing
/// (or from the global queue after a spill). Rounds of work repeat until both a steal and two
/// distinct threads are seen, so a slow start of the second thread on a loaded machine does
/// not fail the test; a scheduler that never steals does.
#[test]
fn imbalanced_load_is_stolen() {
    let _w = watchdog("imbalanced_load_is_stolen", LIMIT);
    let rt = rt(2);
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let t = threads.clone();
    let (steals, rounds) = rt.block_on(async move {
        let start = Instant::now();
        let before = goro::runtime::metrics();
        let mut rounds = 0;
        loop {
            rounds += 1;
            let handles: Vec<_> = (0..200)
                .map(|_| {
                    let t = t.clone();
                    goro::go(async move {
                        spin_for(Duration::from_micros(30));
                        t.lock().unwrap().insert(std::thread::current().id());
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            let steals = goro::runtime::metrics().steals - before.steals;
            if steals > 0 && t.lock().unwrap().len() >= 2 {
                return (steals, rounds);
            }
            assert!(
                start.elapsed() < HANG,
                "after {rounds} rounds: steals={steals}, threads={}",
                t.lock().unwrap().len()
            );
        }
    });
    assert!(steals > 0);
    assert!(threads.lock().unwrap().len() >= 2);
    let m = rt.metrics();
    assert!(m.stolen_gs >= m.steals, "each steal moves at least one G: {m:?}");
    eprintln!("imbalanced_load_is_stolen: {rounds} round(s), {steals} steal(s)");
}

// ---------------------------------------------------------------------------------------------
// A G looping on yield_now does not starve the others
// ---------------------------------------------------------------------------------------------

/// Spawns a G that loops on `yield_now` until `stop` is set; returns its handle once it runs.
async fn start_looper(stop: Arc<AtomicBool>) -> JoinHandle<u64> {
    let started = Arc::new(AtomicBool::new(false));
    let s = started.clone();
    let h = goro::go(async move {
        s.store(true, SeqCst);
        let mut n = 0u64;
        while !stop.load(SeqCst) {
            n += 1;
            goro::runtime::yield_now().await;
        }
        n
    });
    yield_until("the looper to start", || started.load(SeqCst)).await;
    h
}

#[test]
fn yield_loop_does_not_starve_a_new_g_spawned_by_main() {
    let _w = watchdog("yield_loop_does_not_starve_a_new_g_spawned_by_main", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let stop = Arc::new(AtomicBool::new(false));
            let looper = start_looper(stop.clone()).await;
            let s = stop.clone();
            let setter = goro::go(async move { s.store(true, SeqCst) });
            setter.await.unwrap();
            looper.await.unwrap();
        });
    }
}

/// The same, with the new G spawned from another G (so it lands in that G's P, next to the
/// looper), and with two loopers.
#[test]
fn yield_loops_do_not_starve_a_new_g_spawned_by_a_g() {
    let _w = watchdog("yield_loops_do_not_starve_a_new_g_spawned_by_a_g", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let stop = Arc::new(AtomicBool::new(false));
            let a = start_looper(stop.clone()).await;
            let b = start_looper(stop.clone()).await;
            let s = stop.clone();
            let spawner = goro::go(async move {
                // Let the loopers go around a few times first.
                for _ in 0..100 {
                    goro::runtime::yield_now().await;
                }
                goro::go(async move { s.store(true, SeqCst) }).await.unwrap();
            });
            spawner.await.unwrap();
            a.await.unwrap();
            b.await.unwrap();
        });
    }
}

/// The new G comes from a plain thread (`Runtime::spawn`), so it sits in the global queue while
/// the looper keeps the only P busy: the every-61st-tick check of the global queue must find it.
#[test]
fn yield_loop_does_not_starve_a_g_spawned_from_outside() {
    let _w = watchdog("yield_loop_does_not_starve_a_g_spawned_from_outside", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let (s, st) = (stop.clone(), started.clone());
        let looper = rt.spawn(async move {
            st.store(true, SeqCst);
            while !s.load(SeqCst) {
                goro::runtime::yield_now().await;
            }
        });
        std::thread::scope(|scope| {
            scope.spawn(|| {
                wait_until("the looper to start", || started.load(SeqCst));
                let s = stop.clone();
                rt.spawn(async move { s.store(true, SeqCst) }).join().unwrap();
            });
            // The main thread is inside block_on meanwhile: it is an M too, and with one P it
            // competes for that P with the looper.
            rt.block_on(looper).unwrap();
        });
    }
}

/// The main future itself looping on `yield_now` lets the queued Gs run, and is polled again
/// although two Gs keep yielding too.
#[test]
fn main_yield_loop_shares_the_proc() {
    let _w = watchdog("main_yield_loop_shares_the_proc", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let stop = Arc::new(AtomicBool::new(false));
            let a = start_looper(stop.clone()).await;
            let b = start_looper(stop.clone()).await;
            let ran = Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            drop(goro::go(async move { r.store(true, SeqCst) }));
            for _ in 0..1000 {
                goro::runtime::yield_now().await;
            }
            yield_until("the detached G to run", || ran.load(SeqCst)).await;
            stop.store(true, SeqCst);
            let (na, nb) = (a.await.unwrap(), b.await.unwrap());
            assert!(na > 0 && nb > 0);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// A woken G runs from runnext
// ---------------------------------------------------------------------------------------------

const ROUNDS: usize = 1000;

/// Two Gs ping-pong `ROUNDS` times through one-slot channels; returns the growth of
/// `runnext_runs` over the exchange.
fn ping_pong(procs: usize) -> u64 {
    rt(procs).block_on(async {
        let (ping, pong) = (Slot::new(), Slot::new());
        let before = goro::runtime::metrics().runnext_runs;
        let (p1, q1) = (ping.clone(), pong.clone());
        let a = goro::go(async move {
            for i in 1..=ROUNDS {
                p1.send(i);
                assert_eq!(q1.recv().await, i);
            }
        });
        let b = goro::go(async move {
            for i in 1..=ROUNDS {
                let v = ping.recv().await;
                assert_eq!(v, i);
                pong.send(v);
            }
        });
        a.await.unwrap();
        b.await.unwrap();
        goro::runtime::metrics().runnext_runs - before
    })
}

#[test]
fn woken_g_runs_from_runnext_on_one_proc() {
    let _w = watchdog("woken_g_runs_from_runnext_on_one_proc", LIMIT);
    // 2 * ROUNDS wake-ups, each made by a G running on the only P: each puts the woken G in
    // runnext, and that is where it runs from.
    let grew = ping_pong(1);
    eprintln!("one proc: runnext_runs grew by {grew}");
    assert!(grew >= (2 * ROUNDS - 10) as u64, "runnext_runs grew by {grew}");
}

#[test]
fn woken_g_runs_from_runnext_on_two_procs() {
    let _w = watchdog("woken_g_runs_from_runnext_on_two_procs", LIMIT);
    // With a second P the pair may be split now and then (a thief's last pass takes runnext),
    // but most wake-ups still land in the waker's runnext.
    let grew = ping_pong(2);
    eprintln!("two procs: runnext_runs grew by {grew}");
    assert!(grew >= ROUNDS as u64 / 2, "runnext_runs grew by {grew}");
}

/// Two Gs that ping-pong until `stop` is set, waking each other into `runnext` on one P: the
/// pair alone would keep that P forever. Returns their handles (each gives its round count).
fn endless_ping_pong(stop: Arc<AtomicBool>) -> (JoinHandle<usize>, JoinHandle<usize>) {
    let (ping, pong) = (Slot::new(), Slot::new());
    let (p1, q1) = (ping.clone(), pong.clone());
    let a = goro::go(async move {
        let mut rounds = 0;
        loop {
            rounds += 1;
            let last = stop.load(SeqCst);
            p1.send(if last { usize::MAX } else { rounds });
            q1.recv().await;
            if last {
                return rounds;
            }
        }
    });
    let b = goro::go(async move {
        let mut rounds = 0;
        loop {
            let v = ping.recv().await;
            rounds += 1;
            pong.send(v);
            if v == usize::MAX {
                return rounds;
            }
        }
    });
    (a, b)
}

/// A G in the P's ring still runs while a pair ping-pongs through `runnext` (the ring gets a
/// turn after a bounded streak of `runnext` picks).
#[test]
fn runnext_ping_pong_does_not_starve_the_local_queue() {
    let _w = watchdog("runnext_ping_pong_does_not_starve_the_local_queue", LIMIT);
    rt(1).block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        // Spawned first, so the pair's spawns push it into the ring; its yields keep it there.
        let c = goro::go(async move {
            for _ in 0..100 {
                goro::runtime::yield_now().await;
            }
            s.store(true, SeqCst);
        });
        let (a, b) = endless_ping_pong(stop);
        let (ra, rb) = (a.await.unwrap(), b.await.unwrap());
        assert_eq!(ra, rb);
        c.await.unwrap();
    });
}

/// A G spawned from outside (so in the global queue) runs while a pair ping-pongs through
/// `runnext` on the only P.
#[test]
fn runnext_ping_pong_does_not_starve_the_global_queue() {
    let _w = watchdog("runnext_ping_pong_does_not_starve_the_global_queue", LIMIT);
    let rt = rt(1);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let (s, st) = (stop.clone(), started.clone());
    let pair = rt.spawn(async move {
        st.store(true, SeqCst);
        let (a, b) = endless_ping_pong(s);
        (a.await.unwrap(), b.await.unwrap())
    });
    wait_until("the pair to start", || started.load(SeqCst));
    let s = stop.clone();
    let c = rt.spawn(async move { s.store(true, SeqCst) });
    // Bounded: on failure the runtime is dropped while unwinding, which stops the pair.
    let (ra, rb) = block_on_plain("the G in the global queue to run and stop the pair", pair).unwrap();
    assert_eq!(ra, rb);
    c.join().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Wake-ups from outside the runtime
// ---------------------------------------------------------------------------------------------

/// Plain threads ping-pong with Gs of a runtime nobody is inside: every wake of a G comes from
/// outside (global queue plus `wakep`), usually while all of the runtime's Ms are asleep. A lost
/// wake-up shows as a timeout.
#[test]
fn wakes_from_plain_threads_are_never_lost() {
    let _w = watchdog("wakes_from_plain_threads_are_never_lost", LIMIT);
    const ROUNDS: usize = 5_000;
    for (procs, pairs) in [(1, 1), (2, 1), (2, 3)] {
        let rt = rt(procs);
        std::thread::scope(|s| {
            for pair in 0..pairs {
                let rt = &rt;
                s.spawn(move || {
                    let (ping, pong) = (Slot::new(), Slot::new());
                    let (p, q) = (ping.clone(), pong.clone());
                    let g = rt.spawn(async move {
                        for i in 1..=ROUNDS {
                            assert_eq!(p.recv().await, i);
                            q.send(i);
                        }
                    });
                    for i in 1..=ROUNDS {
                        ping.send(i);
                        let got = block_on_plain(&format!("procs={procs} pair={pair} round {i}"), pong.recv());
                        assert_eq!(got, i);
                    }
                    g.join().unwrap();
                });
            }
        });
    }
}

/// Spawning into an idle runtime from a plain thread, one G at a time: each spawn must wake an
/// M (or start one).
#[test]
fn spawns_into_an_idle_runtime_are_never_lost() {
    let _w = watchdog("spawns_into_an_idle_runtime_are_never_lost", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        for i in 0..5_000u32 {
            let h = rt.spawn(async move { i });
            // `join` has no timeout: bound it through the handle's future instead.
            assert_eq!(block_on_plain(&format!("procs={procs} spawn {i}"), h).unwrap(), i);
        }
    }
}
