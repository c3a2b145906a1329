//! When a locker spins, and for how long: Go's `sync_runtime_canSpin` and
//! `procyield(active_spin_cnt)`, with the length of a round fixed in time rather than in pause
//! instructions.
//!
//! # Go's rule
//!
//! A locker that finds the mutex held may spin, at most [`ACTIVE_SPIN`] rounds, and only while
//! spinning can help: on more than one CPU, while at least one other P is running (it may be
//! running the holder), and while this P has nothing else to run (its local run queue is empty).
//! That is `runtime_canSpin`, asked again before every round as Go asks it, through
//! [`goro_runtime::__private::can_spin`].
//!
//! # How long a round lasts
//!
//! Go's round is 30 `PAUSE` instructions (on amd64; arm64's `YIELD` is much shorter). What that
//! takes depends on the CPU: about 10 cycles a pause before Skylake, up to 140 since (Intel's
//! optimization manual, "Pause Latency in Skylake Microarchitecture"), 8.6 ns on this project's
//! VM (`rustc -O` of a loop of `std::hint::spin_loop`). So Go's round lasts anything from 0.1 to
//! 2 µs on x86.
//!
//! A round here lasts about [`ROUND`] (1 µs), or Go's 30 pauses where those take longer: the
//! number of pauses is measured once per process, the first time a locker spins (.NET's
//! `YieldProcessorNormalized` does the same). Why this long: at the end of each round the spinner
//! reads the state word, which takes its cache line away from the holder, and the holder's next
//! lock or unlock then waits for the line to come back, a cache-line transfer (40 to 220 ns on the
//! VM). The shorter the round, the more of the holder's time goes to those transfers. On the VM,
//! W10 (4 Gs on 2 Ps, one counter under one mutex) against `parking_lot` in the same process
//! (`benches/examples/w10_probe.rs`, in a build where the pauses per round were a parameter;
//! medians of 5 runs of 30 pairs): rounds of 30 pauses (Go's, 0.26 µs) 0.92×; 60 pauses 0.78×;
//! 100 pauses 0.67×; 150 pauses 0.65×; 250 pauses 0.69×.
//!
//! What it costs: a locker spins at most about 4 µs before it queues (8 µs where 30 pauses take
//! 2 µs, as in Go there), and a spinner notices a release up to one round late (a barging locker
//! usually takes the lock in between anyway: normal mode is not FIFO).

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
#[cfg(not(loom))]
use std::time::{Duration, Instant};

/// Spin rounds before queueing (Go's `active_spin`); one under loom, so that the models cover the
/// spinner's `WOKEN` without multiplying their states.
pub(super) const ACTIVE_SPIN: u32 = if cfg!(loom) { 1 } else { 4 };

/// How long one round lasts, about (see the module docs).
#[cfg(not(loom))]
const ROUND: Duration = Duration::from_micros(1);

/// The fewest pauses in a round: Go's `active_spin_cnt`, where a pause takes 33 ns or more.
#[cfg(not(loom))]
const MIN_PAUSES: u32 = 30;

/// The most pauses in a round, where a pause takes under 1 ns (e.g. a `yield` hint that the
/// core treats as a no-op): a round then lasts less than [`ROUND`], not unboundedly long.
#[cfg(not(loom))]
const MAX_PAUSES: u32 = 1000;

/// Go's `lockSlow` locals that outlive a spin phase: whether we own `WOKEN` (`awoke`) and the
/// spin rounds used (`iter`).
pub(crate) struct Spin {
    pub(super) awoke: bool,
    pub(super) iter: u32,
}

impl Spin {
    /// A new lock operation's (`awoke`: false), or a woken waiter's (`awoke`: true, as Go's
    /// `iter = 0` after a wake-up: it may spin again).
    pub(crate) fn new(awoke: bool) -> Spin {
        Spin { awoke, iter: 0 }
    }

    /// Go's `runtime_canSpin(iter)`: whether another round can help (see the module docs).
    #[inline]
    pub(super) fn may_spin(&self) -> bool {
        self.iter < ACTIVE_SPIN && can_spin()
    }

    /// One round (Go's `procyield(active_spin_cnt)`), counted.
    #[inline]
    pub(super) fn round(&mut self) {
        self.iter += 1;
        #[cfg(not(loom))]
        for _ in 0..pauses_per_round() {
            std::hint::spin_loop();
        }
        // Under loom the loads between rounds are already where the model switches threads.
    }
}

/// More than one CPU, and what the runtime says (Go's `runtime_canSpin` without `iter`). Plain
/// threads (outside any runtime) ask only the first.
#[cfg(not(loom))]
fn can_spin() -> bool {
    static MULTICORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MULTICORE.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
        && goro_runtime::__private::can_spin()
}

#[cfg(loom)]
fn can_spin() -> bool {
    true
}

/// The pauses that last about [`ROUND`] on this CPU, measured the first time (two threads may
/// both measure; either result will do).
#[cfg(not(loom))]
fn pauses_per_round() -> u32 {
    static PAUSES: AtomicU32 = AtomicU32::new(0);
    match PAUSES.load(Relaxed) {
        0 => {
            let n = measure_pauses_per_round();
            PAUSES.store(n, Relaxed);
            n
        }
        n => n,
    }
}

/// Times runs of pauses on the clock (see [`measure`]). About 10 µs in all here, once.
#[cfg(not(loom))]
fn measure_pauses_per_round() -> u32 {
    measure(|sample| {
        let start = Instant::now();
        for _ in 0..sample {
            std::hint::spin_loop();
        }
        start.elapsed()
    })
}

/// The pauses per round, from `time_run(n)`, the time `n` pauses took: it times each run three
/// times and keeps the fastest (the one least disturbed by an interrupt or a preemption), and
/// grows the run until it lasts [`SAMPLE_FOR`], so that neither a coarse clock nor a slow clock
/// read (a microsecond where reading the clock is a system call) decides the result.
#[cfg(not(loom))]
fn measure(mut time_run: impl FnMut(u32) -> Duration) -> u32 {
    let mut sample: u32 = 64;
    loop {
        let fastest = (0..3).map(|_| time_run(sample)).min().unwrap_or(Duration::ZERO);
        if fastest >= SAMPLE_FOR || sample >= MAX_SAMPLE {
            return pauses_for(fastest, sample);
        }
        sample *= 4;
    }
}

/// How long a timed run of pauses should last.
#[cfg(not(loom))]
const SAMPLE_FOR: Duration = Duration::from_micros(2);

/// The longest timed run: 65 536 pauses, 20 µs where a pause takes 0.3 ns.
#[cfg(not(loom))]
const MAX_SAMPLE: u32 = 1 << 16;

/// How many pauses last [`ROUND`] if `sample` of them took `took`, within the bounds; Go's
/// [`MIN_PAUSES`] if the clock did not move (it tells nothing then).
#[cfg(not(loom))]
fn pauses_for(took: Duration, sample: u32) -> u32 {
    if took.is_zero() {
        return MIN_PAUSES;
    }
    let per_round = ROUND.as_nanos() * u128::from(sample) / took.as_nanos();
    per_round.clamp(u128::from(MIN_PAUSES), u128::from(MAX_PAUSES)) as u32
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_about_a_microsecond_within_bounds() {
        // 64 pauses of 8.6 ns (this project's VM): 116 pauses a round.
        assert_eq!(pauses_for(Duration::from_nanos(550), 64), 116);
        // Skylake-class pauses (about 45 ns): Go's 30, not fewer.
        assert_eq!(pauses_for(Duration::from_nanos(64 * 45), 64), MIN_PAUSES);
        // A pause that costs next to nothing: bounded.
        assert_eq!(pauses_for(Duration::from_nanos(10), 64), MAX_PAUSES);
        // A clock that did not move tells nothing: Go's count.
        assert_eq!(pauses_for(Duration::ZERO, MAX_SAMPLE), MIN_PAUSES);
    }

    /// A clock on which a pause takes `pause_ps` picoseconds, a reading costs `overhead_ns`, and
    /// time moves in steps of `tick_ns`.
    fn clock(pause_ps: u64, overhead_ns: u64, tick_ns: u64) -> impl FnMut(u32) -> Duration {
        move |n| Duration::from_nanos((u64::from(n) * pause_ps / 1000 + overhead_ns) / tick_ns * tick_ns)
    }

    #[test]
    fn the_measurement_times_a_run_long_enough_to_trust() {
        // A fine clock: 256 pauses of 8.6 ns are the first run of at least 2 µs.
        assert_eq!(measure(clock(8600, 0, 1)), 116);
        // A clock reading that costs 1 µs (a system call): 64 pauses alone would say 41; the
        // run grows to 256 pauses, which says 79, nearer the true 116.
        assert_eq!(pauses_for(Duration::from_nanos(550 + 1000), 64), 41);
        assert_eq!(measure(clock(8600, 1000, 1)), 79);
        // A clock that moves in milliseconds reads zero up to the longest run: Go's 30, not the
        // 1000 that "no time at all" would give.
        assert_eq!(measure(clock(8600, 0, 1_000_000)), MIN_PAUSES);
    }

    #[test]
    fn the_fastest_of_three_timings_counts() {
        // Every third timing is preempted for 50 µs.
        let (mut fine, mut timings) = (clock(8600, 0, 1), 0);
        let disturbed = move |n| {
            timings += 1;
            fine(n) + if timings % 3 == 0 { Duration::from_micros(50) } else { Duration::ZERO }
        };
        assert_eq!(measure(disturbed), 116);
    }
}
