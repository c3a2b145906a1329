//! Integration tests of the scheduler through the public facade: many Gs, work stealing,
//! fairness of `yield_now`, `runnext` hand-offs, panics, the builder, `JoinHandle`,
//! `num_goroutine`, and the recycling of dead Gs.
//!
//! Shutdown is in `shutdown.rs`, several runtimes at once in `multi_runtime.rs`, and the
//! environment knobs (`GORO_DEBUG`, `GORO_MAXPROCS`) in `debug_env.rs`.

mod common;

use common::*;
use goro::{Builder, JoinHandle};
use std::collections::HashSet;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Per-test watchdog: far beyond what any test needs, even debug-built on a loaded machine.
const LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// 1. Many Gs
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
// 2. Work stealing
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
// 3. A G looping on yield_now does not starve the others
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
            goro::yield_now().await;
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
                    goro::yield_now().await;
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
                goro::yield_now().await;
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
                goro::yield_now().await;
            }
            yield_until("the detached G to run", || ran.load(SeqCst)).await;
            stop.store(true, SeqCst);
            let (na, nb) = (a.await.unwrap(), b.await.unwrap());
            assert!(na > 0 && nb > 0);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// 4. A woken G runs from runnext
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
                goro::yield_now().await;
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
// 5. Panics are isolated
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
        assert!(err.location().file().ends_with("runtime.rs"), "{}", err.location());
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
            goro::yield_now().await;
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
                        goro::yield_now().await;
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
                goro::yield_now().await;
                panic!("main boom");
            })
        }));
        let payload = res.expect_err("the main future's panic must propagate");
        assert_eq!(panic_message(&*payload), "main boom");
        assert_eq!(rt.metrics().goroutines, 1, "the survivor is alive, no main G is");

        let survivor = survivor.take().unwrap();
        let got = rt.block_on(async move {
            assert_eq!(goro::num_goroutine(), 2);
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
            goro::yield_now().await;
            panic!("run boom")
        })
    }));
    assert_eq!(panic_message(&*res.unwrap_err()), "run boom");
    assert_eq!(drops.load(SeqCst), 1, "the pending G was dropped when run unwound");
}

// ---------------------------------------------------------------------------------------------
// 7. Outside a runtime
// ---------------------------------------------------------------------------------------------

#[test]
fn go_outside_a_runtime_panics_naming_run() {
    let err = catch_unwind(|| drop(goro::go(async {}))).expect_err("go outside a runtime must panic");
    let msg = panic_message(&*err);
    assert!(msg.contains("goro::run"), "{msg}");

    // Also from a plain thread while another thread is inside block_on: the runtime is the
    // thread's, not the process's.
    let rt = rt(1);
    let inside = Event::new();
    let i = inside.clone();
    std::thread::scope(|s| {
        s.spawn(|| rt.block_on(i.wait()));
        let err = catch_unwind(|| drop(goro::go(async {}))).unwrap_err();
        assert!(panic_message(&*err).contains("goro::run"));
        inside.set();
    });
}

#[test]
fn queries_outside_a_runtime() {
    assert_eq!(goro::num_goroutine(), 0);
    assert!(goro::max_procs() >= 1);
    let err = catch_unwind(goro::runtime::metrics).expect_err("metrics outside a runtime panics");
    assert!(panic_message(&*err).contains("Runtime::metrics"));
    // After a runtime was entered and left, this thread is outside again.
    rt(3).block_on(async {});
    assert_eq!(goro::num_goroutine(), 0);
    assert!(catch_unwind(|| drop(goro::go(async {}))).is_err());
}

// ---------------------------------------------------------------------------------------------
// 8. The builder
// ---------------------------------------------------------------------------------------------

#[test]
fn builder_rejects_zeroes() {
    let err = Builder::new().max_procs(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("max_procs"), "{err}");
    let err = Builder::new().max_threads(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let err = Builder::new().thread_stack_size(0).build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn max_procs_is_reported_inside() {
    for procs in [1, 2, 3, 7] {
        let rt = rt(procs);
        assert_eq!(rt.metrics().procs, procs);
        let (outer, inner) = rt.block_on(async { (goro::max_procs(), goro::go(async { goro::max_procs() }).await) });
        assert_eq!(outer, procs);
        assert_eq!(inner.unwrap(), procs);
    }
    // The defaults: GORO_MAXPROCS is not set for this test binary, so the number of CPUs.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if std::env::var_os("GORO_MAXPROCS").is_none() {
        assert_eq!(goro::run(async { goro::max_procs() }), cpus);
        assert_eq!(Builder::new().build().unwrap().metrics().procs, cpus);
    }
}

#[test]
fn one_proc_runs_a_spawn_heavy_workload() {
    let _w = watchdog("one_proc_runs_a_spawn_heavy_workload", LIMIT);
    let rt = Builder::new().max_procs(1).thread_name("one-proc").build().unwrap();
    let sum = rt.block_on(async {
        // Gs spawning Gs spawning Gs, with yields in between.
        let tops: Vec<_> = (0..50u64)
            .map(|i| {
                goro::go(async move {
                    let mids: Vec<_> = (0..20u64)
                        .map(|j| {
                            goro::go(async move {
                                goro::yield_now().await;
                                let leaves: Vec<_> = (0..10u64).map(|k| goro::go(async move { i + j + k })).collect();
                                let mut s = 0;
                                for l in leaves {
                                    s += l.await.unwrap();
                                }
                                s
                            })
                        })
                        .collect();
                    let mut s = 0;
                    for m in mids {
                        s += m.await.unwrap();
                    }
                    s
                })
            })
            .collect();
        let mut s = 0;
        for t in tops {
            s += t.await.unwrap();
        }
        s
    });
    let expected: u64 = (0..50u64).flat_map(|i| (0..20u64).flat_map(move |j| (0..10u64).map(move |k| i + j + k))).sum();
    assert_eq!(sum, expected);
    let m = rt.metrics();
    assert_eq!(m.steals, 0, "nobody to steal from with one P: {m:?}");
    assert_eq!(m.spawned, 50 + 50 * 20 + 50 * 20 * 10);
}

/// A cap on threads below the number of Ps still runs everything (on fewer threads).
#[test]
fn max_threads_below_max_procs_still_runs_everything() {
    let _w = watchdog("max_threads_below_max_procs_still_runs_everything", LIMIT);
    let rt = Builder::new().max_procs(4).max_threads(1).build().unwrap();
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let t = threads.clone();
    let n = rt.block_on(async move {
        let hs: Vec<_> = (0..2000)
            .map(|_| {
                let t = t.clone();
                goro::go(async move {
                    spin_for(Duration::from_micros(5));
                    t.lock().unwrap().insert(std::thread::current().id());
                    goro::yield_now().await;
                })
            })
            .collect();
        let n = hs.len();
        for h in hs {
            h.await.unwrap();
        }
        n
    });
    assert_eq!(n, 2000);
    // One started M plus the thread in block_on.
    assert!(threads.lock().unwrap().len() <= 2, "{:?}", threads.lock().unwrap());
    assert!(rt.metrics().threads <= 1, "{:?}", rt.metrics());
}

#[test]
fn thread_stack_size_is_honoured() {
    let _w = watchdog("thread_stack_size_is_honoured", LIMIT);
    // A G that needs a big stack frame runs on an M with a big stack. (On the default 2 MiB
    // std stack a 4 MiB frame would overflow.)
    let rt = Builder::new().max_procs(2).thread_stack_size(16 << 20).build().unwrap();
    let h = rt.spawn(async {
        let big = std::hint::black_box([1u8; 4 << 20]);
        big.iter().map(|&b| b as usize).sum::<usize>()
    });
    assert_eq!(h.join().unwrap(), 4 << 20);
}

// ---------------------------------------------------------------------------------------------
// 9. JoinHandle
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
                goro::yield_now().await;
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
                goro::yield_now().await;
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
            goro::yield_now().await;
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
// 10. num_goroutine
// ---------------------------------------------------------------------------------------------

#[test]
fn num_goroutine_counts_main_and_returns_to_one() {
    let _w = watchdog("num_goroutine_counts_main_and_returns_to_one", LIMIT);
    assert_eq!(goro::run(async { goro::num_goroutine() }), 1);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            assert_eq!(goro::num_goroutine(), 1);
            let ev = Event::new();
            let hs: Vec<_> = (0..100)
                .map(|_| {
                    let e = ev.clone();
                    goro::go(async move { e.wait().await })
                })
                .collect();
            assert_eq!(goro::num_goroutine(), 101);
            assert_eq!(goro::runtime::metrics().goroutines, 101);
            ev.set();
            for h in hs {
                h.await.unwrap();
            }
            // A G leaves the count when its M finishes it, which may be a moment after its
            // JoinHandle saw the result on another M.
            yield_until("num_goroutine back to 1", || goro::num_goroutine() == 1).await;
            // Aborted and panicked Gs leave it too.
            let a = goro::go(std::future::pending::<()>());
            let p = goro::go(async { panic!("counted out") });
            a.abort();
            let _ = a.await;
            let _ = p.await;
            yield_until("num_goroutine back to 1 after abort and panic", || goro::num_goroutine() == 1).await;
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
            yield_until("num_goroutine back to 1", || goro::num_goroutine() == 1).await;
            assert_eq!(goro::runtime::metrics().goroutines, 1);
            // Gs still waiting are counted beside the finished ones.
            let ev = Event::new();
            let waiting: Vec<_> = (0..5)
                .map(|_| {
                    let e = ev.clone();
                    goro::go(async move { e.wait().await })
                })
                .collect();
            assert_eq!(goro::num_goroutine(), 6);
            drop(waiting);
        });
        drop(runtime);
        assert_eq!(dropped.load(SeqCst), n, "n = {n}");
    }
}

// ---------------------------------------------------------------------------------------------
// 11. gfree reuse
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
// The runtime's gauges
// ---------------------------------------------------------------------------------------------

/// Once the work is done, every M parks: no spinning thread, every P idle, every started thread
/// in the idle list. (A scheduler that busy-waits would fail here.)
#[test]
fn idle_runtime_parks_its_threads() {
    let _w = watchdog("idle_runtime_parks_its_threads", LIMIT);
    let rt = rt(2);
    let hs: Vec<_> = (0..1000)
        .map(|_| {
            rt.spawn(async {
                spin_for(Duration::from_micros(2));
                goro::yield_now().await;
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    wait_until("every M to park", || {
        let m = rt.metrics();
        m.spinning_threads == 0 && m.idle_procs == 2 && m.threads >= 1 && m.idle_threads == m.threads
    });
    let m = rt.metrics();
    assert_eq!((m.global_runq, m.local_runq, m.goroutines), (0, 0, 0), "{m:?}");
    // Ms can outnumber Ps in races (an M that just gave its P up is not idle yet when another
    // is started), but not by much.
    assert!(m.threads < 16, "{m:?}");
}

#[test]
fn metrics_inside_block_on() {
    let rt = rt(2);
    let m = rt.block_on(async { goro::runtime::metrics() });
    assert_eq!(m.procs, 2);
    assert_eq!(m.goroutines, 1, "main only");
    assert!(m.threads >= 1, "the thread in block_on counts: {m:?}");
    assert!(m.idle_procs <= 1, "main holds a P: {m:?}");
    let after = rt.metrics();
    assert_eq!(after.goroutines, 0);
}

/// `spawned` counts every spawn: from a G, from the main future, and from a plain thread.
#[test]
fn spawned_counts_spawns_from_outside_the_runtime() {
    let _w = watchdog("spawned_counts_spawns_from_outside_the_runtime", LIMIT);
    let rt = rt(2);
    let hs: Vec<_> = (0..10).map(|i| rt.spawn(async move { i })).collect();
    for h in hs {
        h.join().unwrap();
    }
    let m = rt.metrics();
    assert!(m.spawned >= 10, "10 Gs spawned with Runtime::spawn, metrics say {}: {m:?}", m.spawned);
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
                goro::yield_now().await;
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
                        goro::yield_now().await;
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
                goro::yield_now().await;
                x.iter().map(|&b| b as u32).sum::<u32>()
            });
            let mid = goro::go(async {
                let x = [1u8; 1500];
                goro::yield_now().await;
                x.len()
            });
            let big = goro::go(async {
                let x = [3u8; 64 * 1024];
                goro::yield_now().await;
                x.iter().map(|&b| b as usize).sum::<usize>()
            });
            let aligned = goro::go(async {
                let x = OverAligned(9);
                goro::yield_now().await;
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
            goro::yield_now().await;
            1
        })
        .await
        .unwrap_err();
        assert!(err.is_panic());
        assert_eq!(panic_message(&*err.into_panic()), "bomb in drop");
        assert_eq!(goro::go(async { 2 }).await.unwrap(), 2);
    });
}

// ---------------------------------------------------------------------------------------------
// Odd shapes
// ---------------------------------------------------------------------------------------------

/// Far more Ps than CPUs: everything still runs, and the runtime goes idle afterwards.
#[test]
fn many_more_procs_than_cpus() {
    let _w = watchdog("many_more_procs_than_cpus", LIMIT);
    let rt = rt(64);
    let sum = rt.block_on(async {
        assert_eq!(goro::max_procs(), 64);
        let hs: Vec<_> = (0..10_000u64)
            .map(|i| {
                goro::go(async move {
                    goro::yield_now().await;
                    i
                })
            })
            .collect();
        let mut s = 0;
        for h in hs {
            s += h.await.unwrap();
        }
        s
    });
    assert_eq!(sum, 10_000 * 9_999 / 2);
    wait_until("every M to park", || {
        let m = rt.metrics();
        m.spinning_threads == 0 && m.idle_procs == 64 && m.idle_threads == m.threads
    });
}

/// Two threads inside `block_on` of the same runtime at once: two main Gs, both counted, both
/// served, with one P or two.
#[test]
fn two_threads_in_block_on_of_one_runtime() {
    let _w = watchdog("two_threads_in_block_on_of_one_runtime", LIMIT);
    for procs in [1, 2] {
        let rt = rt(procs);
        let (inside, checked) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            let mains: Vec<_> = (0..2u64)
                .map(|k| {
                    let (rt, inside, checked) = (&rt, &inside, &checked);
                    s.spawn(move || {
                        rt.block_on(async move {
                            inside.fetch_add(1, SeqCst);
                            yield_until("both mains to be inside", || inside.load(SeqCst) == 2).await;
                            assert_eq!(goro::num_goroutine(), 2);
                            checked.fetch_add(1, SeqCst);
                            // Neither leaves before both have counted.
                            yield_until("both mains to count", || checked.load(SeqCst) == 2).await;
                            let hs: Vec<_> = (0..1000u64).map(|i| goro::go(async move { i * k })).collect();
                            let mut sum = 0;
                            for h in hs {
                                sum += h.await.unwrap();
                            }
                            sum
                        })
                    })
                })
                .collect();
            let sums: Vec<u64> = mains.into_iter().map(|t| t.join().unwrap()).collect();
            assert_eq!(sums, vec![0, 999 * 1000 / 2]);
        });
        assert_eq!(rt.metrics().goroutines, 0);
    }
}

/// `go!` is `go(async move { .. })`, with the caller's location.
#[test]
fn go_macro() {
    rt(2).block_on(async {
        let (a, b) = (6, 7);
        let h = goro::go! { a * b };
        assert_eq!(h.await.unwrap(), 42);
        let err = goro::go! { panic!("from go!") }.await.unwrap_err();
        let line = line!() - 1;
        assert!(err.location().file().ends_with("runtime.rs"));
        assert_eq!(err.location().line(), line);
    });
}

/// `go!(async move { .. })` (and `go!(async { .. })`, which moves what it uses as any `go!`
/// body does, and the same in braces) spawns that block, as `go` does. Wrapped in `async move`
/// again, the G's output was the user's future, dropped unpolled: the body never ran.
#[test]
fn go_macro_given_an_async_block() {
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<&str>(4);
        let t = tx.clone();
        let h: goro::JoinHandle<u32> = goro::go!(async move {
            t.send("async move").await.unwrap();
            1
        });
        assert_eq!(h.await.unwrap(), 1);
        let t = tx.clone();
        goro::go!(async {
            t.send("async").await.unwrap();
        })
        .await
        .unwrap();
        let t = tx.clone();
        goro::go! {
            async move { t.send("braces").await.unwrap() }
        }
        .await
        .unwrap();
        drop(tx);
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        assert_eq!(got, ["async move", "async", "braces"]);
    });
}

/// `Runtime::spawn` records its caller, as `go!` does.
#[test]
fn spawn_records_its_caller() {
    let rt = rt(1);
    let h = rt.spawn(async { panic!("from spawn") });
    let line = line!() - 1;
    let err = h.join().unwrap_err();
    assert_eq!((err.location().file().ends_with("runtime.rs"), err.location().line()), (true, line));
}

/// Gs left runnable in the main G's P when `block_on` returns keep running: the P is handed to
/// another M (`handoffp`).
#[test]
fn runnable_gs_left_by_block_on_keep_running() {
    let _w = watchdog("runnable_gs_left_by_block_on_keep_running", LIMIT);
    let rt = rt(1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    rt.block_on(async move {
        for _ in 0..100 {
            let r = r.clone();
            drop(goro::go(async move {
                goro::yield_now().await;
                r.fetch_add(1, SeqCst);
            }));
        }
        // Return at once: with one P, none of them has run yet.
    });
    wait_until("the Gs left behind to run", || ran.load(SeqCst) == 100);
    let m = rt.metrics();
    assert!(m.handoffs >= 1, "{m:?}");
}

/// What main spawns inside one `block_on` recycles dead Gs' blocks (Go's `gfput`/`gfget`)
/// instead of going to the allocator: each round's 10 000 blocks fit in the free lists, so from
/// the second round on nearly every spawn reuses one, however the rounds' Gs are spread over
/// the Ps. A regression: main woken without a P spawned everything off-P, and W1 inside one
/// `block_on` ran 3x slower with 35% of blocks reused. (The rounds were 100 000 Gs once, more
/// than the free lists hold: then the share reused depended on how many Gs the other P had
/// finished meanwhile, and fell under half on a loaded machine. That main waits for a P is
/// tested on its own below.)
#[test]
fn block_on_main_recycles_dead_gs_blocks() {
    let _w = watchdog("block_on_main_recycles_dead_gs_blocks", LIMIT);
    let rt = rt(2);
    let (spawned, reused) = rt.block_on(async {
        for _ in 0..20 {
            let wg = goro::sync::WaitGroup::new();
            for _ in 0..10_000 {
                drop(wg.go(async {}));
            }
            // Main sleeps here, its thread gives its P up, and the last `done` wakes it.
            wg.wait().await;
        }
        let m = goro::runtime::metrics();
        (m.spawned, m.gfree_reused)
    });
    // 94-95% measured, also beside two busy loops.
    assert!(reused * 10 >= spawned * 8, "only {reused} of {spawned} spawns reused a dead G's block");
}

/// Go's main goroutine runs only on a P. Woken by a G while every P is busy (its thread had
/// given its P up), main waits for one: the waker's M hands its P over at its next schedule,
/// as Go's `ready` puts main in the waker's `runnext`. A regression: main was polled beside
/// the busy Ps with no P at all, so everything it spawned allocated a fresh G block and went
/// to the global queue (the test above, 1 run in 20 on a loaded machine).
#[test]
fn main_woken_while_every_p_is_busy_waits_for_one() {
    let _w = watchdog("main_woken_while_every_p_is_busy_waits_for_one", LIMIT);
    struct Gate(Mutex<(bool, Option<std::task::Waker>)>);
    impl Gate {
        fn open(&self) {
            let mut g = self.0.lock().unwrap();
            g.0 = true;
            if let Some(w) = g.1.take() {
                w.wake();
            }
        }
        fn wait(&self) -> impl Future<Output = ()> + '_ {
            std::future::poll_fn(move |cx| {
                let mut g = self.0.lock().unwrap();
                if g.0 {
                    return std::task::Poll::Ready(());
                }
                g.1 = Some(cx.waker().clone());
                std::task::Poll::Pending
            })
        }
    }
    let rt = rt(1);
    let gate = Arc::new(Gate(Mutex::new((false, None))));
    let main_polled = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let rt = &rt;
        let (gate2, main_polled2) = (gate.clone(), main_polled.clone());
        s.spawn(move || {
            started_rx.recv().unwrap();
            // Main waits on the gate and its thread has nothing else to run: it gives the only
            // P up. (Polling a condition; no timing is asserted.)
            while rt.metrics().idle_procs != 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let (gate, main_polled) = (gate2, main_polled2);
            drop(rt.spawn(async move {
                gate.open();
                // Keep the only P busy until main has been polled; every yield is a schedule.
                while !main_polled.load(SeqCst) {
                    goro::yield_now().await;
                }
            }));
        });
        let on_p = rt.block_on(async {
            // A pending timer: main's thread, with nothing to run, sleeps in the netpoller (not
            // on the idle-M list), so the spawn below starts another M for the only P.
            drop(goro::go(goro::time::sleep(Duration::from_secs(3600))));
            started_tx.send(()).unwrap();
            gate.wait().await;
            let p = goro_runtime::current_proc_index();
            main_polled.store(true, SeqCst);
            p
        });
        assert_eq!(on_p, Some(0), "main was polled without a P while a G held the only one");
    });
}

/// Go's `runtime_canSpin`, which `sync::Mutex` asks before each spin round: a locker spins only
/// while another P runs (it may be running the holder) and its own P has nothing else to run.
/// (Before, goro asked only whether there was more than one P, so a locker spun while a G woken
/// onto its P waited behind it.)
#[test]
fn a_locker_spins_only_while_another_p_runs_and_its_own_has_nothing_to_run() {
    // A plain thread has no P to keep busy.
    assert!(goro_runtime::can_spin());
    // One P: nobody else can be running the holder.
    assert!(!rt(1).block_on(async { goro_runtime::can_spin() }));
    // Two Ps. The checks run in a G, not in main: main's future is polled on main's thread
    // only, and the busy G below may take that thread's P for as long as it runs.
    // Sysmon must not take the busy G's P away: where it cannot see that thread computing (no
    // `/proc`), it would count the long poll as a blocking call and hand the P over, leaving an
    // idle spare.
    let rt = goro::Builder::new().max_procs(2).handoff_blocked(false).build().unwrap();
    rt.block_on(async {
        goro::go(async {
            // Keep one P running: a G that polls a flag without yielding (whichever P ends up
            // running it, the G that yields to it is stolen by the other).
            let (started, stop) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
            let (started2, stop2) = (started.clone(), stop.clone());
            let busy = goro::go(async move {
                started2.store(true, SeqCst);
                while !stop2.load(SeqCst) {
                    std::hint::spin_loop();
                }
            });
            yield_until("the busy G runs", || started.load(SeqCst)).await;
            // This G runs on the other P now, with nothing behind it (a spinning M may still be
            // counted for a moment: poll).
            yield_until("the other P runs and this one's queue is empty", goro_runtime::can_spin).await;
            // A G made runnable on this P: spinning would keep it waiting.
            let next = goro::go(async {});
            assert!(!goro_runtime::can_spin(), "spun with a G waiting in runnext");
            stop.store(true, SeqCst);
            next.await.unwrap();
            busy.await.unwrap();
        })
        .await
        .unwrap();
    });
}

/// `goro::run` inside a G (a `main` inside a goroutine, which Go has nothing like) built a second
/// runtime and blocked the G's thread until its future ended, silently. It panics now, naming
/// the call and what to do instead; `Runtime::block_on` stays available for a second runtime on
/// purpose (tests/multi_runtime.rs).
#[test]
fn run_inside_a_g_panics_saying_what_to_do() {
    let err = rt(2).block_on(async { goro::go(async { goro::run(async { 1 }) }).await.unwrap_err() });
    let msg = err.into_panic().downcast::<String>().map(|s| *s).unwrap_or_default();
    assert!(msg.starts_with("goro::run called inside a goroutine (at tests/runtime.rs:"), "{msg}");
    assert!(msg.contains("Await the future instead"), "{msg}");
}

/// At the thread limit (`max_threads(1)`, 2 Ps: the limit leaves one P without a thread of its
/// own most of the time), Gs that spawn and make syscalls (whose Ps sysmon hands off, wanting
/// an M it may not start) all finish: work that wanted a thread waits for one, never for good
/// (the loom model `loom_sched_handoff_at_the_thread_limit_strands_nothing` has the race).
#[test]
fn the_thread_limit_strands_no_work() {
    let _w = watchdog("the_thread_limit_strands_no_work", LIMIT);
    let rt = goro::Builder::new().max_procs(2).max_threads(1).build().unwrap();
    let done = rt.block_on(async {
        let wg = goro::sync::WaitGroup::new();
        let n = Arc::new(AtomicUsize::new(0));
        for i in 0..2_000 {
            let n = n.clone();
            drop(wg.go(async move {
                if i % 50 == 0 {
                    goro::syscall(|| std::thread::sleep(Duration::from_millis(2)));
                }
                let inner = goro::go(async { goro::yield_now().await });
                inner.await.unwrap();
                n.fetch_add(1, SeqCst);
            }));
        }
        wg.wait().await;
        n.load(SeqCst)
    });
    assert_eq!(done, 2_000);
}
