//! Hand-off and preemption: `goro::syscall`, sysmon's retake of Ps from syscalls and from Gs
//! that block their thread in plain code, and the cooperative preemption of Gs that never
//! wait. Bounds are generous (seconds where the mechanism takes milliseconds): a loaded
//! two-core machine must never make these fail.

mod common;

use common::watchdog;
use goro::runtime::Builder;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// Exchanges messages with a G until `stop`, counting round trips in `count`; returns the
/// timestamps of the first round trip after `from` and of the last one.
async fn ping_until(stop: Arc<AtomicBool>, count: Arc<AtomicU64>) {
    let (tx, rx) = goro::chan::<u64>(0);
    let (back_tx, back_rx) = goro::chan::<u64>(0);
    let echo = goro::go(async move {
        while let Some(v) = rx.recv().await {
            back_tx.send(v + 1).await.unwrap();
        }
    });
    let mut i = 0;
    while !stop.load(SeqCst) {
        tx.send(i).await.unwrap();
        assert_eq!(back_rx.recv().await, Some(i + 1));
        count.fetch_add(1, SeqCst);
        i += 1;
        // Not a spin: every round trip parks both Gs once.
    }
    drop(tx);
    echo.await.unwrap();
}

/// Runs `block` in two Gs at once (each blocks its M for `d`) while a third pair of Gs keeps
/// exchanging messages, on 2 Ps: every P is taken by a blocked G, so the exchange only
/// progresses if the runtime hands the Ps off. Returns the round trips made while both were
/// blocked, and the runtime's metrics after.
///
/// The scenario runs in a G, not in the main future: the main future is polled only on the
/// thread that called `block_on` (it need not be `Send`), and that thread also runs Gs, so a
/// G blocking it would hold up the main future itself (see the porting guide).
fn exchange_while_blocked(block: fn(Duration), d: Duration) -> (u64, goro::runtime::Metrics) {
    let rt = Builder::new().max_procs(2).build().unwrap();
    let during = rt
        .block_on(rt.spawn(async move {
            let stop = Arc::new(AtomicBool::new(false));
            let count = Arc::new(AtomicU64::new(0));
            let pinger = goro::go(ping_until(stop.clone(), count.clone()));
            // Both blockers signal when they start; the count is read when both have started
            // and again when the first one is done.
            let (started_tx, started_rx) = goro::chan::<()>(2);
            let (done_tx, done_rx) = goro::chan::<()>(2);
            for _ in 0..2 {
                let (started_tx, done_tx) = (started_tx.clone(), done_tx.clone());
                drop(goro::go(async move {
                    started_tx.send(()).await.unwrap();
                    block(d);
                    done_tx.send(()).await.unwrap();
                }));
            }
            started_rx.recv().await.unwrap();
            started_rx.recv().await.unwrap();
            let at_start = count.load(SeqCst);
            done_rx.recv().await.unwrap();
            let during = count.load(SeqCst) - at_start;
            done_rx.recv().await.unwrap();
            stop.store(true, SeqCst);
            pinger.await.unwrap();
            during
        }))
        .unwrap();
    let m = rt.metrics();
    (during, m)
}

/// Go's syscall hand-off: two Gs in `goro::syscall(|| sleep)` on 2 Ps do not stop a third.
#[test]
fn syscall_hands_the_p_off() {
    let _w = watchdog("syscall_hands_the_p_off", LIMIT);
    let (during, m) = exchange_while_blocked(|d| goro::syscall(|| std::thread::sleep(d)), Duration::from_millis(500));
    assert!(during >= 10, "only {during} round trips while both Ps were in syscalls: {m:?}");
    assert!(m.handoffs > 0, "no hand-off counted: {m:?}");
}

/// A G that blocks its thread in plain code (no `goro::syscall`): sysmon hands its P's work to
/// another M after a time slice, and counts it.
#[test]
fn blocking_poll_is_handed_off() {
    let _w = watchdog("blocking_poll_is_handed_off", LIMIT);
    let (during, m) = exchange_while_blocked(std::thread::sleep, Duration::from_millis(800));
    assert!(during >= 10, "only {during} round trips while both Ps were blocked: {m:?}");
    assert!(m.handoffs > 0 && m.blocked_polls > 0, "no hand-off counted: {m:?}");
}

/// With the hand-off turned off, the same blocked Gs hold their Ps (the documented
/// alternative), and nothing is counted.
#[test]
fn handoff_blocked_false_keeps_the_p() {
    let _w = watchdog("handoff_blocked_false_keeps_the_p", LIMIT);
    let rt = Builder::new().max_procs(1).handoff_blocked(false).build().unwrap();
    rt.block_on(async {
        goro::go(async { std::thread::sleep(Duration::from_millis(100)) }).await.unwrap();
    });
    assert_eq!(rt.metrics().blocked_polls, 0);
}

/// A syscall that returns quickly takes its P straight back (no hand-off, the same P).
#[test]
fn short_syscall_keeps_its_p() {
    let _w = watchdog("short_syscall_keeps_its_p", LIMIT);
    let rt = Builder::new().max_procs(1).build().unwrap();
    rt.block_on(async {
        for i in 0..10_000u32 {
            assert_eq!(goro::syscall(|| i + 1), i + 1);
        }
        assert_eq!(goro::syscall(|| 5), 5);
    });
}

/// Outside a runtime, and nested, `syscall` simply calls its function.
#[test]
fn syscall_outside_a_runtime_and_nested() {
    assert_eq!(goro::syscall(|| 3), 3);
    goro::run(async {
        assert_eq!(goro::syscall(|| goro::syscall(|| 4)), 4);
    });
}

/// A panic inside `syscall` propagates, and the G's P is taken back on the way out (the
/// runtime goes on).
#[test]
fn syscall_panic_propagates() {
    let _w = watchdog("syscall_panic_propagates", LIMIT);
    let rt = Builder::new().max_procs(1).build().unwrap();
    rt.block_on(async {
        let h = goro::go(async { goro::syscall(|| panic!("inside")) });
        assert!(h.await.unwrap_err().is_panic());
        assert_eq!(goro::go(async { 2 }).await.unwrap(), 2);
    });
}

/// Cooperative preemption: on one P, a G that loops on channel operations that are always
/// ready never waits, yet a G queued behind it runs within a time slice or so.
#[test]
fn a_g_looping_on_ready_channel_ops_is_preempted() {
    let _w = watchdog("a_g_looping_on_ready_channel_ops_is_preempted", LIMIT);
    let rt = Builder::new().max_procs(1).build().unwrap();
    let (waited, preemptions) = rt.block_on(async {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let hog = goro::go(async move {
            let (tx, rx) = goro::chan::<u64>(1);
            // Queued behind us on the only P: runs only if we yield.
            let started = Instant::now();
            let r2 = r.clone();
            drop(goro::go(async move { r2.store(true, SeqCst) }));
            let mut n = 0u64;
            while !r.load(SeqCst) {
                tx.send(n).await.unwrap();
                n += rx.recv().await.unwrap();
            }
            started.elapsed()
        });
        let waited = hog.await.unwrap();
        assert!(ran.load(SeqCst));
        (waited, goro::runtime::metrics().preemptions)
    });
    assert!(waited < Duration::from_secs(5), "the queued G waited {waited:?}");
    assert!(preemptions > 0, "sysmon made no preemption request");
}

/// The same on one of the runtime's own worker threads (the G is spawned from outside, so no
/// `block_on` thread can run it): a computing G that asks `should_yield` is asked. A worker
/// M once took its P before it published itself, and the publication cleared the P's flag
/// pointer: its Gs were never asked, and `sync::Map` lost its per-poll pin there.
#[test]
fn a_g_on_a_worker_thread_is_asked_to_yield() {
    let _w = watchdog("a_g_on_a_worker_thread_is_asked_to_yield", LIMIT);
    let rt = Builder::new().max_procs(1).build().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    drop(rt.spawn(async move {
        // sysmon asks after one time slice (10 ms); 30 s is for a loaded machine.
        let give_up = Instant::now() + Duration::from_secs(30);
        let mut asked = false;
        while !asked && Instant::now() < give_up {
            asked = goro::runtime::coop::should_yield();
            std::hint::spin_loop();
        }
        tx.send(asked).unwrap();
    }));
    let asked = rx.recv_timeout(LIMIT).expect("the G never ran");
    assert!(asked, "a G computing on a worker thread for 30 s was never asked to yield");
}

/// `yield_now`, `select!` and the sync types are yield points too: a G looping on a `select!`
/// with a `default` arm (never blocking) is preempted as well.
#[test]
fn a_g_looping_on_select_default_is_preempted() {
    let _w = watchdog("a_g_looping_on_select_default_is_preempted", LIMIT);
    let rt = Builder::new().max_procs(1).build().unwrap();
    rt.block_on(async {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        goro::go(async move {
            let (_tx, rx) = goro::chan::<u64>(1);
            let r2 = r.clone();
            drop(goro::go(async move { r2.store(true, SeqCst) }));
            while !r.load(SeqCst) {
                goro::select! {
                    recv(rx) -> _ => {},
                    default => {},
                }
            }
        })
        .await
        .unwrap();
        assert!(ran.load(SeqCst));
    });
}

/// Timers keep firing while every P is held by a G blocked in a syscall.
#[test]
fn timers_fire_while_ps_are_in_syscalls() {
    let _w = watchdog("timers_fire_while_ps_are_in_syscalls", LIMIT);
    let rt = Builder::new().max_procs(1).build().unwrap();
    rt.block_on(async {
        let blocker = goro::go(async { goro::syscall(|| std::thread::sleep(Duration::from_millis(400))) });
        let start = Instant::now();
        goro::time::sleep(Duration::from_millis(10)).await;
        let slept = start.elapsed();
        assert!(slept >= Duration::from_millis(10));
        blocker.await.unwrap();
        assert!(slept < Duration::from_secs(5), "a 10 ms sleep took {slept:?}");
    });
}

/// A G back from `goro::syscall` whose P was retaken gets a P again although other Gs keep
/// every P busy (as in the mixed soak). Go queues the returning G on the global queue, which
/// a busy P polls every 61 ticks; goro's returning M waits with the G's poll on its stack, and a
/// busy P hands itself to it every 61 ticks. Each P runs an unbuffered ping-pong pair that
/// always has work; a third G makes 100 syscalls of 500 µs, many outlasting a sysmon tick. They
/// take ~50 ms; a returning G that only waited for an idle P would wait seconds or forever.
#[test]
fn a_g_back_from_syscall_gets_a_p_while_others_stay_busy() {
    let _w = watchdog("a_g_back_from_syscall_gets_a_p_while_others_stay_busy", LIMIT);
    for procs in [1, 2] {
        let rt = Builder::new().max_procs(procs).build().expect("build runtime");
        let took = rt.block_on(async move {
            let stop = Arc::new(AtomicBool::new(false));
            let pairs: Vec<_> = (0..procs)
                .map(|_| {
                    let (a_tx, a_rx) = goro::chan::<u64>(0);
                    let (b_tx, b_rx) = goro::chan::<u64>(0);
                    let ponger = goro::go(async move {
                        while let Some(v) = a_rx.recv().await {
                            let _ = b_tx.send(v).await;
                        }
                    });
                    let s = stop.clone();
                    let pinger = goro::go(async move {
                        let mut n = 0;
                        while !s.load(SeqCst) {
                            a_tx.send(n).await.unwrap();
                            b_rx.recv().await.unwrap();
                            n += 1;
                        }
                    });
                    (pinger, ponger)
                })
                .collect();
            let start = Instant::now();
            goro::go(async move {
                for _ in 0..100 {
                    goro::syscall(|| std::thread::sleep(Duration::from_micros(500)));
                }
            })
            .await
            .unwrap();
            let took = start.elapsed();
            stop.store(true, SeqCst);
            for (pinger, ponger) in pairs {
                pinger.await.unwrap();
                ponger.await.unwrap();
            }
            took
        });
        assert!(
            took < Duration::from_secs(5),
            "procs = {procs}: 100 syscalls of 500 us took {took:?}: the returning G waited for a P"
        );
    }
}
