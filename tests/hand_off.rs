//! The scheduler's hand-off, wake and timer edges, as a user meets them: nothing stranded (a
//! timer whose P was handed off, a G woken behind a computing waker, a G blocked in a blocking
//! receive), nothing misjudged (a computing thread is not a blocked one), and a main that
//! still runs while a G computes on the main thread.
//!
//! Each test names the failure it guards against (a hang, or a wrong count). Bounds are generous (seconds where the mechanism takes milliseconds) and the tests that
//! depend on load start their own busy threads: they must pass 20 runs in a row on a loaded
//! 2-core machine, in a debug build.

mod common;

use common::child::{is_child, run_child};
use common::{rt, spin_for, watchdog};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);
const MS: Duration = Duration::from_millis(1);

/// Threads that keep every core busy until dropped (the "loaded machine" of the brief).
struct BusyThreads {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyThreads {
    fn start(n: usize) -> BusyThreads {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(SeqCst) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        BusyThreads { stop, threads }
    }
}

impl Drop for BusyThreads {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Gs that loop on `yield_now` (Go's `Gosched` loop) until `stop`.
async fn yield_loop(stop: Arc<AtomicBool>) {
    while !stop.load(SeqCst) {
        goro::runtime::yield_now().await;
    }
}

/// A G blocks its thread once (a misuse sysmon repairs by handing its P off), then loops on
/// `yield_now` (Go's `Gosched` loop), as does a G on every other P. Timers armed on the P it
/// blocked, due after the hand-off, must still fire: left in the heap of the detached P, which
/// no busy M looks at again, main's sleep would never return.
fn timers_fire_after_a_hand_off(procs: usize) {
    let _w = watchdog("timers_fire_after_a_hand_off", LIMIT);
    let rt = rt(procs);
    rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        // An ordinary G sleeping through the hand-off, besides main.
        let (slept_tx, slept_rx) = goro::chan::<()>(1);
        goro::go(async move {
            goro::time::sleep(600 * MS).await;
            slept_tx.send(()).await.unwrap();
        });
        // Every other P busy in a yield loop, so that no idle M would run the timers.
        let mut loops: Vec<_> = (1..procs).map(|_| goro::go(yield_loop(stop.clone()))).collect();
        loops.push({
            let stop = stop.clone();
            goro::go(async move {
                // Long enough that sysmon certainly hands the P off (it does after ~20 ms).
                std::thread::sleep(300 * MS);
                yield_loop(stop).await;
            })
        });
        let start = Instant::now();
        goro::time::sleep(600 * MS).await;
        slept_rx.recv().await.unwrap();
        let took = start.elapsed();
        stop.store(true, SeqCst);
        for h in loops {
            h.await.unwrap();
        }
        assert!(took < Duration::from_secs(10), "a 600 ms sleep took {took:?}");
    });
    assert!(rt.metrics().blocked_polls >= 1, "the scenario needs a hand-off: {:?}", rt.metrics());
}

#[test]
fn timers_fire_after_a_hand_off_1p() {
    timers_fire_after_a_hand_off(1);
}

#[test]
fn timers_fire_after_a_hand_off_2p() {
    timers_fire_after_a_hand_off(2);
}

/// G A sends to G B, parked in `recv`, then computes without an await. With a P idle, B must
/// run while A still computes (Go's `ready` wakes a P, which steals B from A's `runnext`), not
/// wait for A's whole computation.
#[test]
fn a_woken_g_runs_while_its_waker_computes() {
    let _w = watchdog("a_woken_g_runs_while_its_waker_computes", LIMIT);
    let rt = rt(2);
    rt.block_on(async {
        for round in 0..5 {
            let (tx, rx) = goro::chan::<u64>(1);
            let (parked_tx, parked_rx) = goro::chan::<()>(0);
            let ran = Arc::new(AtomicBool::new(false));
            let b = {
                let ran = ran.clone();
                goro::go(async move {
                    parked_tx.send(()).await.unwrap();
                    let v = rx.recv().await;
                    ran.store(true, SeqCst);
                    v
                })
            };
            parked_rx.recv().await.unwrap();
            let a = {
                let ran = ran.clone();
                goro::go(async move {
                    // Compute first, long enough for the idle M to go to sleep (so only a wake
                    // at the send can bring it back), and for B to park in `recv` (if it has
                    // not, it is runnable, and must run all the same).
                    spin_for(3 * MS);
                    tx.send(7).await.unwrap();
                    // Compute (no await) until B has run, or give up after a long while.
                    let start = Instant::now();
                    while !ran.load(SeqCst) && start.elapsed() < Duration::from_secs(10) {
                        std::hint::spin_loop();
                    }
                    ran.load(SeqCst).then(|| start.elapsed())
                })
            };
            let waited = a.await.unwrap();
            // Microseconds in Go and here; a second is a bound no loaded machine reaches.
            assert!(
                waited.is_some_and(|w| w < Duration::from_secs(1)),
                "round {round}: B waited {waited:?} for A's computation, though a P was idle"
            );
            assert_eq!(b.await.unwrap(), Some(7));
        }
    });
}

/// A G consumes a channel with the blocking iterator (a misuse inside a G, which goro reports,
/// but one it must survive) while another G sends: every value arrives. The failure guarded
/// against: the consumer hangs forever, its sender stranded in the queue of the P the blocked
/// thread holds.
fn blocking_iterator_in_a_g(procs: usize, n: u64) {
    let _w = watchdog("blocking_iterator_in_a_g", LIMIT);
    let rt = rt(procs);
    let sum = rt.block_on(async move {
        let (tx, rx) = goro::chan::<u64>(0);
        let consumer = goro::go(async move {
            let mut sum = 0;
            for v in &rx {
                sum += v;
            }
            sum
        });
        let producer = goro::go(async move {
            for i in 1..=n {
                tx.send(i).await.unwrap();
            }
        });
        producer.await.unwrap();
        consumer.await.unwrap()
    });
    assert_eq!(sum, n * (n + 1) / 2);
}

#[test]
fn blocking_iterator_in_a_g_1p() {
    blocking_iterator_in_a_g(1, 100);
}

#[test]
fn blocking_iterator_in_a_g_2p() {
    blocking_iterator_in_a_g(2, 1000);
}

/// `recv_blocking` and `send_blocking` inside Gs, both ends at once, on one P.
#[test]
fn blocking_calls_on_both_ends_in_gs_1p() {
    let _w = watchdog("blocking_calls_on_both_ends_in_gs_1p", LIMIT);
    let rt = rt(1);
    rt.block_on(async {
        let (tx, rx) = goro::chan::<u64>(0);
        let consumer = goro::go(async move { (0..200).map(|_| rx.recv_blocking().unwrap()).sum::<u64>() });
        let producer = goro::go(async move {
            for i in 0..200 {
                tx.send_blocking(i).unwrap();
            }
        });
        producer.await.unwrap();
        assert_eq!(consumer.await.unwrap(), 199 * 200 / 2);
    });
}

/// Two Gs and main run `work` at once on 2 Ps, `rounds` times; then no P may have been handed
/// off and no thread added (a computing thread is not a blocked one).
fn assert_computing_is_not_blocked(rounds: usize, work: fn()) {
    let rt = rt(2);
    let threads_before = rt.block_on(async { goro::runtime::metrics().threads });
    rt.block_on(async {
        for _ in 0..rounds {
            let hs: Vec<_> = (0..2).map(|_| goro::go(async move { work() })).collect();
            work();
            for h in hs {
                h.await.unwrap();
            }
        }
    });
    let m = rt.metrics();
    assert_eq!(m.blocked_polls, 0, "a computing G was taken for a blocked one: {m:?}");
    assert!(m.threads <= threads_before.max(m.procs) + 1, "threads were added for computing Gs: {m:?}");
}

/// On a loaded machine, Gs (and main) that compute for hundreds of milliseconds, or whose
/// threads the OS deschedules, are not taken for blocked ones: no P is handed off, no thread
/// is added, even when Linux's schedstat lags behind a thread that waits for a CPU.
#[test]
fn computing_threads_are_not_taken_for_blocked_ones() {
    let _w = watchdog("computing_threads_are_not_taken_for_blocked_ones", LIMIT);
    // More busy threads than cores: the runtime's threads wait for CPUs a good part of the time.
    let _busy = BusyThreads::start(3);
    assert_computing_is_not_blocked(3, || spin_for(300 * MS));
}

/// The same, for a poll that computes for hundreds of milliseconds but sleeps in the kernel for
/// moments now and then (main spawning 100 000 Gs does: its thread is asleep in `brk` at
/// times, behind the other threads' page faults): it is not a blocked one, even when two of
/// sysmon's looks, 10 ms apart, both fall in such a moment. Taking "asleep at every look" for
/// "asleep all along" would hand a P off and add a thread.
#[test]
fn computing_threads_that_sleep_for_moments_are_not_taken_for_blocked_ones() {
    let _w = watchdog("computing_threads_that_sleep_for_moments_are_not_taken_for_blocked_ones", LIMIT);
    // A quarter of the time asleep, in short sleeps: far from a blocked thread, but a look
    // lands in a sleep one time in four.
    assert_computing_is_not_blocked(2, || {
        let start = Instant::now();
        while start.elapsed() < 400 * MS {
            spin_for(MS);
            std::thread::sleep(MS / 3);
        }
    });
}

/// A G computes (no yield point) while main sleeps, at 2 Ps, wherever that G lands, the main
/// thread included: main is a G of its own and runs on the other P. A main that ran only on
/// the thread that called `block_on` would hang whenever the loop landed there.
#[goro::test(max_procs = 2)]
async fn main_sleeps_while_a_g_computes_2p() {
    let _w = watchdog("main_sleeps_while_a_g_computes_2p", LIMIT);
    for _ in 0..10 {
        let stop = Arc::new(AtomicBool::new(false));
        let spins = Arc::new(AtomicU64::new(0));
        let h = {
            let (stop, spins) = (stop.clone(), spins.clone());
            goro::go(async move {
                let start = Instant::now();
                // Until main says stop: main must be able to run meanwhile.
                while !stop.load(SeqCst) && start.elapsed() < Duration::from_secs(20) {
                    spins.fetch_add(1, SeqCst);
                }
                stop.load(SeqCst)
            })
        };
        // Wait (without yielding the thread to a busy loop of our own) until it computes.
        while spins.load(SeqCst) == 0 {
            goro::time::sleep(MS).await;
        }
        let start = Instant::now();
        goro::time::sleep(50 * MS).await;
        stop.store(true, SeqCst);
        assert!(h.await.unwrap(), "main's 50 ms sleep lasted as long as the G computed ({:?})", start.elapsed());
    }
}

/// The part of the above Rust cannot repair: a G that computes for over a second without a yield
/// point holds its P (goro cannot preempt it), and goro says so on stderr, once per spawn
/// location, distinctly from "blocked". With one P, main's sleep ends only when the G does.
#[test]
fn a_g_computing_without_yield_points_is_reported() {
    const NAME: &str = "a_g_computing_without_yield_points_is_reported";
    if is_child(NAME) {
        let rt = rt(1);
        rt.block_on(async {
            let start = Instant::now();
            let hs: Vec<_> = (0..2).map(|_| goro::go(async { spin_for(1500 * MS) })).collect();
            goro::time::sleep(50 * MS).await;
            assert!(start.elapsed() >= Duration::from_millis(1400), "main ran while the only P computed");
            for h in hs {
                h.await.unwrap();
            }
        });
        return;
    }
    let out = run_child(NAME, &[]);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains("without reaching a yield point")).collect();
    assert_eq!(lines.len(), 1, "one report for the one spawn location:\n{}", out.stderr);
    assert!(lines[0].contains("spawned at tests/hand_off.rs:"), "{}", lines[0]);
    assert!(!out.stderr.contains("blocked its thread"), "a computing G reported as blocked:\n{}", out.stderr);
}

/// A `*_blocking` call, the blocking iterator or `JoinHandle::join` inside a G prints one line
/// on stderr the first time per call site, naming the async form to use instead.
#[test]
fn blocking_calls_in_gs_are_reported_once_per_call_site() {
    const NAME: &str = "blocking_calls_in_gs_are_reported_once_per_call_site";
    if is_child(NAME) {
        let rt = rt(2);
        rt.block_on(async {
            let (tx, rx) = goro::chan::<u32>(16);
            goro::go(async move {
                for i in 0..10 {
                    tx.send_blocking(i).unwrap();
                }
            })
            .await
            .unwrap();
            goro::go(async move {
                for _ in 0..5 {
                    rx.recv_blocking().unwrap();
                }
                for _ in &rx {}
                goro::go(async {}).join().unwrap();
            })
            .await
            .unwrap();
        });
        return;
    }
    let out = run_child(NAME, &[]);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains("runs inside a G and blocks its thread")).collect();
    assert_eq!(lines.len(), 4, "one line per call site:\n{}", out.stderr);
    for (line, form) in lines.iter().zip([
        "`tx.send(v).await`",
        "`rx.recv().await`",
        "`while let Some(v) = rx.recv().await`",
        "`handle.await`",
    ]) {
        assert!(line.contains("tests/hand_off.rs:") && line.contains(form), "{line}");
    }
}

/// A G that loops on blocking calls (the blocking iterator over a busy channel) never ends
/// its poll, and takes its P back after each call: the timers in that P's heap and the Gs in
/// its queue would wait for as long as the loop lasts while the other P always has work of
/// its own (a `yield_now` loop) and never steals; main's 10 ms sleeps, when armed on that P,
/// would take seconds (whether main's timers land on that P is up to the scheduler). Go
/// preempts such a G after 10 ms; goro takes its P at its next syscall when the P's timers or
/// Gs wait.
#[test]
fn timers_fire_while_a_g_loops_on_blocking_calls_2p() {
    let _w = watchdog("timers_fire_while_a_g_loops_on_blocking_calls_2p", LIMIT);
    let rt = rt(2);
    let main = rt.spawn(async {
        let stop = Arc::new(AtomicBool::new(false));
        let yielder = goro::go(yield_loop(stop.clone()));
        let (tx, rx) = goro::chan::<u64>(0);
        let consumer = goro::go(async move {
            let mut n = 0u64;
            for v in &rx {
                n += v;
            }
            n
        });
        let producer = {
            let stop = stop.clone();
            goro::go(async move {
                let mut n = 0u64;
                while !stop.load(SeqCst) {
                    tx.send(1).await.unwrap();
                    n += 1;
                }
                n
            })
        };
        let mut worst = Duration::ZERO;
        for _ in 0..200 {
            let t = Instant::now();
            goro::time::sleep(10 * MS).await;
            worst = worst.max(t.elapsed());
        }
        stop.store(true, SeqCst);
        yielder.await.unwrap();
        let sent = producer.await.unwrap();
        assert_eq!(consumer.await.unwrap(), sent, "the blocking consumer missed values");
        worst
    });
    let worst = main.join().unwrap();
    assert!(worst < Duration::from_secs(1), "a 10 ms sleep took {worst:?}");
}

/// A G blocks its thread (sysmon detaches its P and a spare P takes its place), then, in the
/// same poll, makes a `goro::syscall`. Entering the syscall must not overwrite the detached
/// P's status with "in a syscall": the P would come back into use beside the spare that
/// replaced it, one P more than `max_procs`, and once both were idle the idle count would
/// exceed `max_procs` (a debug build panics subtracting it in `findrunnable`). Polls slow
/// enough to be detached are common under valgrind.
fn a_syscall_after_a_blocked_poll(procs: usize) {
    let _w = watchdog("a_syscall_after_a_blocked_poll", LIMIT);
    let rt = rt(procs);
    rt.block_on(async {
        goro::go(async {
            // Long enough that sysmon certainly hands the P off (it does after ~20 ms).
            std::thread::sleep(300 * MS);
            goro::syscall(|| std::thread::sleep(50 * MS));
        })
        .await
        .unwrap();
    });
    assert!(rt.metrics().blocked_polls >= 1, "the scenario needs a hand-off: {:?}", rt.metrics());
    // Every P goes idle once the work is done; none may be counted twice meanwhile. (No event
    // says when the last M has let its P go: the metrics are polled.)
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = rt.metrics();
        assert!(m.idle_procs <= m.procs, "{} idle Ps of {}: a P is in use twice: {m:?}", m.idle_procs, m.procs);
        if m.idle_procs == m.procs {
            break;
        }
        assert!(Instant::now() < deadline, "the Ps never all went idle: {m:?}");
        std::thread::sleep(10 * MS);
    }
}

#[test]
fn a_syscall_after_a_blocked_poll_1p() {
    a_syscall_after_a_blocked_poll(1);
}

#[test]
fn a_syscall_after_a_blocked_poll_2p() {
    a_syscall_after_a_blocked_poll(2);
}

/// Two Gs that bounce a number over two unbuffered channels until `stop` (a P that never runs
/// out of work of its own); the G returned ends with the pinger and gives its round trips.
fn ping_pong(stop: Arc<AtomicBool>) -> goro::runtime::JoinHandle<u64> {
    let (ping_tx, ping_rx) = goro::chan::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::<u64>(0);
    let ponger = goro::go(async move {
        while let Some(n) = ping_rx.recv().await {
            if pong_tx.send(n + 1).await.is_err() {
                break;
            }
        }
    });
    goro::go(async move {
        let mut n = 0;
        while !stop.load(SeqCst) {
            ping_tx.send(n).await.unwrap();
            n = pong_rx.recv().await.unwrap();
        }
        drop(ping_tx);
        ponger.await.unwrap();
        n
    })
}

/// One G computes without a yield point, one sleeps 10 ms in a loop, two ping-pong on a channel,
/// at 2 Ps, and main (a G) sleeps 50 ms ten times. The timers armed on the computing G's P are
/// due while its owner computes, and the other P always has work of its own (the ping-pong), so
/// no M ever looked at them: the sleeper stopped ticking and main's sleeps never returned. Go
/// preempts the computing G after 10 ms and runs the P's timers; goro cannot, so sysmon runs
/// the due timers of a P whose slice has overrun.
#[goro::test(max_procs = 2)]
async fn timers_fire_beside_a_computing_g_while_the_other_p_is_busy() {
    let _w = watchdog("timers_fire_beside_a_computing_g_while_the_other_p_is_busy", LIMIT);
    for round in 0..3 {
        let stop = Arc::new(AtomicBool::new(false));
        let spins = Arc::new(AtomicU64::new(0));
        let computer = {
            let (stop, spins) = (stop.clone(), spins.clone());
            goro::go(async move {
                while !stop.load(SeqCst) {
                    spins.fetch_add(1, SeqCst);
                }
            })
        };
        let ticks = Arc::new(AtomicU64::new(0));
        let sleeper = {
            let (stop, ticks) = (stop.clone(), ticks.clone());
            goro::go(async move {
                while !stop.load(SeqCst) {
                    goro::time::sleep(10 * MS).await;
                    ticks.fetch_add(1, SeqCst);
                }
            })
        };
        let ping_pong = ping_pong(stop.clone());
        while spins.load(SeqCst) == 0 {
            goro::time::sleep(MS).await;
        }
        let (start, ticks_before) = (Instant::now(), ticks.load(SeqCst));
        for _ in 0..10 {
            goro::time::sleep(50 * MS).await;
        }
        let (took, ticked) = (start.elapsed(), ticks.load(SeqCst) - ticks_before);
        stop.store(true, SeqCst);
        computer.await.unwrap();
        sleeper.await.unwrap();
        let round_trips = ping_pong.await.unwrap();
        assert!(took < Duration::from_secs(5), "round {round}: ten 50 ms sleeps took {took:?}");
        assert!(ticked > 0, "round {round}: the 10 ms sleeper did not tick in {took:?}");
        assert!(round_trips > 0, "round {round}: the ping-pong never ran");
    }
}

/// The same shape for the Gs a computing G queued on its own P before it started computing
/// (spawned there): the other P's ping-pong never runs out of work, so it never steals them.
/// Go preempts the computing G after a time slice and its P runs them; goro has sysmon move a
/// stuck P's queue to the global queue, which the busy P serves.
#[goro::test(max_procs = 2)]
async fn gs_queued_behind_a_computing_g_run_while_the_other_p_is_busy() {
    let _w = watchdog("gs_queued_behind_a_computing_g_run_while_the_other_p_is_busy", LIMIT);
    for round in 0..3 {
        let stop = Arc::new(AtomicBool::new(false));
        let ping_pong = ping_pong(stop.clone());
        let (done_tx, done_rx) = goro::chan::<usize>(4);
        let computer = {
            let stop = stop.clone();
            goro::go(async move {
                for i in 0..4 {
                    let done_tx = done_tx.clone();
                    drop(goro::go(async move { done_tx.send(i).await.unwrap() }));
                }
                while !stop.load(SeqCst) {
                    std::hint::spin_loop();
                }
            })
        };
        let start = Instant::now();
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(done_rx.recv().await.unwrap());
        }
        let took = start.elapsed();
        stop.store(true, SeqCst);
        computer.await.unwrap();
        let round_trips = ping_pong.await.unwrap();
        got.sort();
        assert_eq!(got, [0, 1, 2, 3]);
        assert!(took < Duration::from_secs(5), "round {round}: the queued Gs took {took:?} to run");
        assert!(round_trips > 0, "round {round}: the ping-pong never ran");
    }
}
