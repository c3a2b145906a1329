//! The scheduler's soaks, `#[ignore]`d because they take minutes:
//!
//! ```sh
//! cargo test --release --test soak_sched -- --ignored --nocapture
//! ```
//!
//! - [`a_million_gs_alive_at_once`]: a million parked Gs, their memory per G, and their release.
//! - [`hand_off_soak`]: the scheduler's hand-off edges at 1, 2 and 4 Ps, two minutes each: Gs
//!   that block their thread, yield in loops, compute 20-200 ms between awaits (and, from 2 Ps,
//!   one that computes for the whole run), a consumer on the blocking iterator, 1-50 ms timers
//!   and channel traffic; no timer more than 1 s late, every message delivered.
//!
//! Each has a short smoke version that `cargo test` runs (same code, small sizes). The tests
//! run one at a time (they lock `common::soak::SERIAL`): RSS is per process, and the figures
//! they print mean nothing if another test runs alongside. The soaks of every binary:
//! `cargo test --release --test 'soak_*' -- --ignored --nocapture`.
//!
//! Knobs: `GORO_SOAK_SECS` (default 120), `GORO_SOAK_SEED` (the random seed; each test prints
//! the one it used).
//!
//! Nothing sleeps to synchronize: the Gs meet on channels, `WaitGroup`s and join handles; time
//! only paces the workload, bounds waits as a failure detector, and is what timers are tested
//! against.

mod common;

use common::soak::*;
use common::{rt, watchdog, yield_until};
use goro::chan::Receiver;
use goro::sync::WaitGroup;
use goro::time::{after, sleep};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// A million Gs alive at once
// ---------------------------------------------------------------------------------------------

/// What every parked G shares: one `Arc` clone per G.
struct Gate {
    rx: Receiver<()>,
    started: AtomicUsize,
    finished: AtomicUsize,
    wg: WaitGroup,
}

/// `n` Gs each parked on a receive from one unbuffered channel; `num_goroutine()` must count
/// them all; closing the channel releases them all. Returns the RSS per G in bytes.
fn many_parked_gs(test: &'static str, n: usize) -> f64 {
    let _serial = serial();
    let _w = watchdog(test, Duration::from_secs(300));
    let rt = rt(2);
    rt.block_on(async move {
        assert_eq!(goro::runtime::num_goroutine(), 1, "a G of an earlier test is still alive");
        let (gate_tx, rx) = goro::chan::<()>(0);
        let gate =
            Arc::new(Gate { rx, started: AtomicUsize::new(0), finished: AtomicUsize::new(0), wg: WaitGroup::new() });
        let rss0 = rss();
        let t0 = Instant::now();
        gate.wg.add(n as isize);
        for _ in 0..n {
            let gate = gate.clone();
            drop(goro::go(async move {
                gate.started.fetch_add(1, SeqCst);
                let v = gate.rx.recv().await;
                assert!(v.is_none(), "the gate only closes");
                gate.finished.fetch_add(1, SeqCst);
                gate.wg.done();
            }));
        }
        let spawned = t0.elapsed();
        // Every G ran up to its receive: nothing sends on the gate, so each one is parked there.
        yield_until("every G to start", || gate.started.load(SeqCst) == n).await;
        let all_parked = t0.elapsed();
        let alive = goro::runtime::num_goroutine();
        let rss1 = rss();
        let per_g = rss1.saturating_sub(rss0) as f64 / n as f64;
        assert_eq!(alive, n + 1, "num_goroutine with {n} parked Gs and the main G");
        assert_eq!(gate.finished.load(SeqCst), 0, "a G got past a gate nobody opened");
        println!(
            "{test}: {n} Gs spawned in {spawned:.2?}, all parked after {all_parked:.2?}; \
             num_goroutine() = {alive}; VmRSS {:.1} MiB -> {:.1} MiB: {per_g:.0} bytes per parked G",
            rss0 as f64 / MIB,
            rss1 as f64 / MIB,
        );

        let t1 = Instant::now();
        assert!(gate_tx.close());
        gate.wg.wait().await;
        let released = t1.elapsed();
        assert_eq!(gate.finished.load(SeqCst), n, "every G ran to its end");
        // `done` is the last thing each G does; the G itself ends just after.
        yield_until("num_goroutine() back to 1", || goro::runtime::num_goroutine() == 1).await;
        println!(
            "{test}: released and finished in {released:.2?}; num_goroutine() = 1; VmRSS after: {:.1} MiB",
            rss() as f64 / MIB
        );
        per_g
    })
}

/// A million Gs alive at once, each parked on a receive from one channel: `num_goroutine()`
/// reaches 1 000 001, a parked G costs less than 1 KiB of RSS (the printout says how much),
/// and closing the channel lets every one of them finish, after which `num_goroutine()` is back
/// to 1.
#[test]
#[ignore = "soak: a million Gs; run with --release -- --ignored"]
fn a_million_gs_alive_at_once() {
    let per_g = many_parked_gs("a_million_gs_alive_at_once", 1_000_000);
    assert!(per_g < 1024.0, "{per_g:.0} bytes of RSS per parked G");
}

/// The same with 10 000 Gs; too few for the RSS figure to mean much, so it is not checked.
#[test]
fn many_gs_alive_at_once_smoke() {
    many_parked_gs("many_gs_alive_at_once_smoke", 10_000);
}

// ---------------------------------------------------------------------------------------------
// The hand-off edges: Gs that block their thread, yield, compute; blocking consumers; timers
// ---------------------------------------------------------------------------------------------

/// How late a timer may fire in [`hand_off_soak`] (work stranded by a hand-off shows up
/// as seconds, or forever).
const HAND_OFF_TIMER_BOUND: Duration = Duration::from_secs(1);

/// A distribution of lateness, in whole milliseconds (the last bucket holds everything later).
#[derive(Debug)]
struct Lateness {
    ms: Vec<u64>,
    n: u64,
    max: Duration,
}

impl Default for Lateness {
    fn default() -> Lateness {
        Lateness { ms: vec![0; 1001], n: 0, max: Duration::ZERO }
    }
}

impl Lateness {
    fn add(&mut self, late: Duration) {
        self.max = self.max.max(late);
        let last = self.ms.len() - 1;
        self.ms[(late.as_millis() as usize).min(last)] += 1;
        self.n += 1;
    }

    fn merge(&mut self, o: &Lateness) {
        self.max = self.max.max(o.max);
        self.n += o.n;
        for (a, b) in self.ms.iter_mut().zip(&o.ms) {
            *a += b;
        }
    }

    /// The lateness under which a share `q` of the samples fell, in ms.
    fn quantile(&self, q: f64) -> usize {
        let want = (self.n as f64 * q).ceil() as u64;
        let mut seen = 0;
        for (ms, n) in self.ms.iter().enumerate() {
            seen += n;
            if seen >= want {
                return ms;
            }
        }
        self.ms.len()
    }
}

impl std::fmt::Display for Lateness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {} ms, p99 {} ms, p99.9 {} ms, max {:.1?} over {}",
            self.quantile(0.5),
            self.quantile(0.99),
            self.quantile(0.999),
            self.max,
            self.n
        )
    }
}

/// What the Gs of one [`hand_off`] run did.
#[derive(Default, Debug)]
struct HandOffStats {
    blocks: u64,
    yields: u64,
    computes: u64,
    /// From a timer's deadline to its firing (the instant `after` sends): what the runtime
    /// owes a timer.
    fired: Lateness,
    /// From a timer's deadline to its G running again: also the wait for a P.
    woke: Lateness,
    pings: u64,
    blocking_received: u64,
}

/// One configuration of [`hand_off_soak`]: `procs` Ps for `dur`.
fn hand_off(test: &'static str, procs: usize, dur: Duration, seed: u64) -> HandOffStats {
    let rt = goro::runtime::Builder::new().max_procs(procs).build().expect("build runtime");
    // Main is a G of its own, and this thread only waits for it: in `block_on`, the main
    // future runs on the calling thread alone, which also runs Gs meanwhile, and a G that holds
    // that thread (the blocking consumer below) would hold main up (what `#[goro::main]` does).
    let main = rt.spawn(async move {
        let stop = Arc::new(AtomicBool::new(false));
        let mut rng = Rng::new(seed);
        // Gs that block their thread briefly in plain code (a misuse sysmon repairs by handing
        // their P off), then wait on a timer.
        let blockers: Vec<_> = (0..2)
            .map(|_| {
                let (stop, mut rng) = (stop.clone(), Rng::new(rng.next()));
                goro::go(async move {
                    let mut n = 0u64;
                    while !stop.load(SeqCst) {
                        std::thread::sleep(rng.micros(5_000, 40_000));
                        n += 1;
                        sleep(rng.micros(1_000, 20_000)).await;
                    }
                    n
                })
            })
            .collect();
        // Gs in `yield_now` loops (Go's Gosched loops).
        let yielders: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                goro::go(async move {
                    let mut n = 0u64;
                    while !stop.load(SeqCst) {
                        goro::runtime::yield_now().await;
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        // Gs that compute 20-200 ms between awaits (no yield point meanwhile).
        let computers: Vec<_> = (0..2)
            .map(|_| {
                let (stop, mut rng) = (stop.clone(), Rng::new(rng.next()));
                goro::go(async move {
                    let mut n = 0u64;
                    while !stop.load(SeqCst) {
                        common::spin_for(rng.micros(20_000, 200_000));
                        n += 1;
                        sleep(rng.micros(1_000, 50_000)).await;
                    }
                    n
                })
            })
            .collect();
        // From 2 Ps, a G that computes for the whole run without a yield point: its P never
        // schedules again, so the Gs queued on it and the timers in its heap must be taken off
        // it (at 1 P it would hold main up for good, as it would in Go before 1.14).
        let forever = (procs >= 2).then(|| {
            let stop = stop.clone();
            goro::go(async move {
                let mut spins = 0u64;
                while !stop.load(SeqCst) {
                    spins += 1;
                    std::hint::spin_loop();
                }
                spins
            })
        });
        // A consumer with the blocking iterator (a misuse inside a G, which goro survives),
        // fed by an async producer; every value must arrive.
        let (tx, rx) = goro::chan::<u64>(0);
        let blocking_consumer = goro::go(async move {
            let (mut n, mut sum) = (0u64, 0u64);
            for v in &rx {
                n += 1;
                sum += v;
            }
            (n, sum)
        });
        let producer = {
            let stop = stop.clone();
            goro::go(async move {
                let (mut n, mut sum) = (0u64, 0u64);
                while !stop.load(SeqCst) {
                    n += 1;
                    sum += n;
                    tx.send(n).await.expect("the blocking consumer is there");
                }
                (n, sum)
            })
        };
        // Timers of 1-50 ms, each wait checked for lateness.
        let timer_gs: Vec<_> = (0..4)
            .map(|_| {
                let (stop, mut rng) = (stop.clone(), Rng::new(rng.next()));
                goro::go(async move {
                    let (mut fired, mut woke) = (Lateness::default(), Lateness::default());
                    while !stop.load(SeqCst) {
                        let d = rng.micros(1_000, 50_000);
                        let deadline = Instant::now() + d;
                        if rng.below(2) == 0 {
                            sleep(d).await;
                        } else {
                            let at = after(d).recv().await.expect("a timer channel is never closed");
                            assert!(at >= deadline, "a timer fired early");
                            fired.add(at - deadline);
                        }
                        let now = Instant::now();
                        assert!(now >= deadline, "a sleep ended early");
                        woke.add(now - deadline);
                    }
                    (fired, woke)
                })
            })
            .collect();
        // Channel traffic: ping-pong pairs, every ping answered.
        let pingers: Vec<_> = (0..2).map(|cap| goro::go(ping_pong(cap, stop.clone()))).collect();

        sleep(dur).await;
        stop.store(true, SeqCst);
        let mut s = HandOffStats::default();
        for h in blockers {
            s.blocks += h.await.unwrap();
        }
        for h in yielders {
            s.yields += h.await.unwrap();
        }
        for h in computers {
            s.computes += h.await.unwrap();
        }
        if let Some(h) = forever {
            assert!(h.await.unwrap() > 0, "the G computing for the whole run never ran");
        }
        let (sent, sent_sum) = producer.await.unwrap();
        let (got, got_sum) = blocking_consumer.await.unwrap();
        assert_eq!((got, got_sum), (sent, sent_sum), "the blocking consumer missed values");
        s.blocking_received = got;
        for h in timer_gs {
            let (fired, woke) = h.await.unwrap();
            s.fired.merge(&fired);
            s.woke.merge(&woke);
        }
        for h in pingers {
            let (pings, pongs) = h.await.unwrap();
            assert_eq!(pings, pongs, "a ping went unanswered");
            s.pings += pings;
        }
        s
    });
    let stats = main.join().unwrap();
    let m = rt.metrics();
    println!(
        "{test} {procs}P {dur:?}: timers fired late by {}; their Gs ran late by {}; blocks {}, yields {}, \
         computes {}, pings {}, values through the blocking iterator {}; blocked_polls {}, handoffs {}, \
         preemptions {}, stuck_poll_moves {}, threads {}",
        stats.fired,
        stats.woke,
        stats.blocks,
        stats.yields,
        stats.computes,
        stats.pings,
        stats.blocking_received,
        m.blocked_polls,
        m.handoffs,
        m.preemptions,
        m.stuck_poll_moves,
        m.threads
    );
    assert!(
        stats.fired.max <= HAND_OFF_TIMER_BOUND,
        "a timer fired {:?} late (bound {HAND_OFF_TIMER_BOUND:?})",
        stats.fired.max
    );
    stats
}

/// The scheduler's hand-off edges under a mixed load, at 1, 2 and 4 Ps for 120 s each
/// (`GORO_SOAK_SECS` overrides): Gs that block their thread for 5-40 ms in plain code, Gs in
/// `yield_now` loops, Gs that compute 20-200 ms between awaits (from 2 Ps, also one that computes
/// for the whole run without a yield point), a consumer on the blocking
/// iterator fed by an async producer, Gs waiting on 1-50 ms timers (`sleep` and `after`), and
/// ping-pong pairs at caps 0 and 1. At the end: no timer fired more than 1 s after its
/// deadline (the instant `after` sends), every value and every ping arrived. Prints the
/// distributions of the timers' firing lateness and of their Gs' wake-up lateness (which also
/// counts the wait for a P, long at 1 P: the Gs that compute 200 ms at a time cannot be
/// preempted), and the hand-off counters.
#[test]
#[ignore = "soak: three times two minutes; run with --release -- --ignored"]
fn hand_off_soak() {
    let _serial = serial();
    let dur = Duration::from_secs(env_u64("GORO_SOAK_SECS", 120));
    let _w = watchdog("hand_off_soak", dur * 6 + Duration::from_secs(120));
    let seed = seed("hand_off_soak");
    for procs in [1, 2, 4] {
        let s = hand_off("hand_off_soak", procs, dur, seed);
        assert!(s.fired.n > 0 && s.pings > 0 && s.blocking_received > 0, "no progress at {procs} P: {s:?}");
    }
}

#[test]
fn hand_off_soak_smoke() {
    let _serial = serial();
    let _w = watchdog("hand_off_soak_smoke", Duration::from_secs(120));
    let seed = seed("hand_off_soak_smoke");
    // Long enough at 1 P for every G to have run (Gs computing 200 ms at a time hold the P),
    // though not for every kind of progress on a loaded machine: the smoke checks what must
    // hold however little ran (no timer early or over 1 s late, every value and ping arrived).
    for procs in [1, 2] {
        hand_off("hand_off_soak_smoke", procs, Duration::from_millis(1500), seed);
    }
}
