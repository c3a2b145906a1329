//! The runtime through the public facade: what works outside one, the builder, the gauges,
//! and odd shapes (many more Ps than CPUs, two threads in one runtime's `block_on`, `go!`,
//! main's P, the thread limit).
//!
//! The scheduler's tests are in `sched.rs`, a G's life (panics, `JoinHandle`,
//! `num_goroutine`, recycled Gs) in `goroutine.rs`, shutdown in `shutdown.rs`, several runtimes
//! at once in `multi_runtime.rs`, and the environment knobs (`GORO_DEBUG`, `GORO_MAXPROCS`) in
//! `debug_env.rs`.

mod common;

use common::*;
use goro::runtime::Builder;
use std::collections::HashSet;
use std::future::Future;
use std::panic::catch_unwind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Per-test watchdog: far beyond what any test needs, even debug-built on a loaded machine.
const LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// Outside a runtime
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
    assert_eq!(goro::runtime::num_goroutine(), 0);
    assert!(goro::runtime::max_procs() >= 1);
    let err = catch_unwind(goro::runtime::metrics).expect_err("metrics outside a runtime panics");
    assert!(panic_message(&*err).contains("Runtime::metrics"));
    // After a runtime was entered and left, this thread is outside again.
    rt(3).block_on(async {});
    assert_eq!(goro::runtime::num_goroutine(), 0);
    assert!(catch_unwind(|| drop(goro::go(async {}))).is_err());
}

// ---------------------------------------------------------------------------------------------
// The builder
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
        let (outer, inner) =
            rt.block_on(async { (goro::runtime::max_procs(), goro::go(async { goro::runtime::max_procs() }).await) });
        assert_eq!(outer, procs);
        assert_eq!(inner.unwrap(), procs);
    }
    // The defaults: GORO_MAXPROCS is not set for this test binary, so the number of CPUs.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if std::env::var_os("GORO_MAXPROCS").is_none() {
        assert_eq!(goro::run(async { goro::runtime::max_procs() }), cpus);
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
                                goro::runtime::yield_now().await;
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
                    goro::runtime::yield_now().await;
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
                goro::runtime::yield_now().await;
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
// Odd shapes
// ---------------------------------------------------------------------------------------------

/// Far more Ps than CPUs: everything still runs, and the runtime goes idle afterwards.
#[test]
fn many_more_procs_than_cpus() {
    let _w = watchdog("many_more_procs_than_cpus", LIMIT);
    let rt = rt(64);
    let sum = rt.block_on(async {
        assert_eq!(goro::runtime::max_procs(), 64);
        let hs: Vec<_> = (0..10_000u64)
            .map(|i| {
                goro::go(async move {
                    goro::runtime::yield_now().await;
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
                            assert_eq!(goro::runtime::num_goroutine(), 2);
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
        let h: goro::runtime::JoinHandle<u32> = goro::go!(async move {
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
                goro::runtime::yield_now().await;
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
/// the Ps. A main woken without a P spawns everything off-P: W1 inside one `block_on` then
/// runs 3x slower with a third of the blocks reused. A round stays under what the free lists
/// hold: beyond it, the share reused depends on how many Gs the other P has finished meanwhile,
/// and falls under half on a loaded machine. That main waits for a P is tested on its own below.
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
    // 94-95% on a 2-core machine, also beside two busy loops.
    assert!(reused * 10 >= spawned * 8, "only {reused} of {spawned} spawns reused a dead G's block");
}

/// Go's main goroutine runs only on a P. Woken by a G while every P is busy (its thread had
/// given its P up), main waits for one: the waker's M hands its P over at its next schedule,
/// as Go's `ready` puts main in the waker's `runnext`. A main polled beside the busy Ps with no
/// P at all would allocate a fresh G block for everything it spawns and push it to the global
/// queue (the test above would then fail about 1 run in 20 on a loaded machine).
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
                    goro::runtime::yield_now().await;
                }
            }));
        });
        let on_p = rt.block_on(async {
            // A pending timer: main's thread, with nothing to run, sleeps in the netpoller (not
            // on the idle-M list), so the spawn below starts another M for the only P.
            drop(goro::go(goro::time::sleep(Duration::from_secs(3600))));
            started_tx.send(()).unwrap();
            gate.wait().await;
            let p = goro_runtime::__private::current_proc_index();
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
    assert!(goro_runtime::__private::can_spin());
    // One P: nobody else can be running the holder.
    assert!(!rt(1).block_on(async { goro_runtime::__private::can_spin() }));
    // Two Ps. The checks run in a G, not in main: main's future is polled on main's thread
    // only, and the busy G below may take that thread's P for as long as it runs.
    // Sysmon must not take the busy G's P away: where it cannot see that thread computing (no
    // `/proc`), it would count the long poll as a blocking call and hand the P over, leaving an
    // idle spare.
    let rt = goro::runtime::Builder::new().max_procs(2).handoff_blocked(false).build().unwrap();
    rt.block_on(async {
        goro::go(async {
            // Keep one P running: a G that polls a flag without yielding (whichever P ends up
            // running it, the G that yields to it is stolen by the other).
            let (started, stop) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
            let (started_in_g, stop_in_g) = (started.clone(), stop.clone());
            let busy = goro::go(async move {
                started_in_g.store(true, SeqCst);
                while !stop_in_g.load(SeqCst) {
                    std::hint::spin_loop();
                }
            });
            yield_until("the busy G runs", || started.load(SeqCst)).await;
            // This G runs on the other P now, with nothing behind it (a spinning M may still be
            // counted for a moment: poll).
            yield_until("the other P runs and this one's queue is empty", goro_runtime::__private::can_spin).await;
            // A G made runnable on this P: spinning would keep it waiting.
            let next = goro::go(async {});
            assert!(!goro_runtime::__private::can_spin(), "spun with a G waiting in runnext");
            stop.store(true, SeqCst);
            next.await.unwrap();
            busy.await.unwrap();
        })
        .await
        .unwrap();
    });
}

/// `goro::run` inside a G (a `main` inside a goroutine, which Go has nothing like) would build a
/// second runtime and block the G's thread until its future ended, silently: it panics, naming
/// the call and what to do instead. `Runtime::block_on` stays available for a second runtime on
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
    let rt = goro::runtime::Builder::new().max_procs(2).max_threads(1).build().unwrap();
    let done = rt.block_on(async {
        let wg = goro::sync::WaitGroup::new();
        let n = Arc::new(AtomicUsize::new(0));
        for i in 0..2_000 {
            let n = n.clone();
            drop(wg.go(async move {
                if i % 50 == 0 {
                    goro::syscall(|| std::thread::sleep(Duration::from_millis(2)));
                }
                let inner = goro::go(async { goro::runtime::yield_now().await });
                inner.await.unwrap();
                n.fetch_add(1, SeqCst);
            }));
        }
        wg.wait().await;
        n.load(SeqCst)
    });
    assert_eq!(done, 2_000);
}
