//! A synctest bubble (Go 1.25's `testing/synctest`, `runtime/synctest.go`): a runtime that is a
//! closed world with its own clock and its own dice.
//!
//! A bubble is a runtime built with [`Builder::bubble`](crate::Builder::bubble): one P, held
//! by the thread inside `block_on` (M0) for the whole run; no sysmon, no other M (`startm`
//! refuses); a virtual clock (`Bubble::clock`) that `Shared::nanotime` and `time::now` read
//! instead of the real one. The root of the bubble is `block_on`'s main future; every G
//! spawned from inside belongs to the runtime, so to the bubble.
//!
//! This module holds the bubble's state and its dice; the M's side (`findrunnable` in a
//! bubble, the census, the sleep for a wake from outside) is in `m`, and what goro's
//! primitives call (the tags, `wait`) in `synctest`.
//!
//! # Scheduling (`MCtx::findrunnable_in_bubble`)
//!
//! Every runnable G of the runtime (its P's `runnext` and ring, the global queue, where wakes
//! from other threads land) is moved into the bubble's own run set, and the next G to run (the
//! main future counting as one more candidate while it is woken) is chosen by the bubble's
//! [`Policy`] from its seed: uniformly at random, or by randomized priorities (PCT). One G
//! runs at a time, and the sequence of choices is a function of the seed and of what the Gs
//! do; wakes from outside the bubble (real I/O, a thread, another runtime) are the only other
//! input, and a bubble that uses none of them replays exactly. With no sysmon to preempt it, a
//! G that never parks still yields after a number of yield points drawn from the seed
//! (`coop::set_budget`), and timers due at one instant fire in an order drawn from it.
//!
//! # Durably blocked
//!
//! When nothing is runnable, the bubble takes a census of its Gs and main future:
//! a parked one is *durably blocked* when only the bubble can wake it, which its wait reason
//! says: a goro channel, `select!`, timer, `Cond`, `WaitGroup`, `Mutex`, `RwMutex`,
//! `Semaphore` or `JoinHandle`, unless the primitive was made outside this bubble (the
//! primitive then sets `EXTERNAL` in the reason: see `synctest::set_wait_reason_of`). A G parked on
//! anything else (a socket, a foreign future: reason `Future`) is not. Then, in Go's order:
//! if some G is not durably blocked, M0 sleeps in the netpoller until a wake from outside;
//! else a pending `synctest::wait` returns; else the clock jumps to the earliest live timer
//! (unless the root has returned: time then stands still, Go's rule); else the bubble is
//! deadlocked, and `block_on` fails with the report.

use crate::g::raw::{WaitReason, EXTERNAL};
use crate::g::GPtr;
use crate::loom::{AtomicBool, AtomicU64, Mutex, Ordering::*};
use crate::timer::Nanos;
use std::collections::HashMap;
use std::task::Waker;
use std::time::{Duration, Instant, SystemTime};

/// The tag of a primitive of every bubble (see `goro_chan::chan_of_every_bubble`): usable
/// anywhere, and a wait on it is durable in any bubble.
#[doc(hidden)]
pub const ANY: u64 = u64::MAX;
/// A tag that matches no bubble: a `select!` over channels of different bubbles.
#[doc(hidden)]
pub const NONE_OF_THEM: u64 = u64::MAX - 1;

/// What a deadlocked bubble's report starts with (Go's text).
pub const DEADLOCK: &str = "deadlock: all goroutines in bubble are blocked";
/// What the report of a root that returned while Gs stay blocked starts with (Go's text).
pub const ROOT_EXITED: &str = "deadlock: main bubble goroutine has exited but blocked goroutines remain";

/// 2000-01-01T00:00:00Z, where a bubble's `system_now` starts (Go's choice).
const EPOCH_2000: Duration = Duration::from_secs(946_684_800);

/// How a bubble chooses the next G: every choice comes from its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Uniformly among the runnable Gs.
    Random,
    /// Randomized priorities (PCT, Burckhardt et al., ASPLOS 2010): each G gets a random
    /// priority when it is first seen, the highest runnable one runs, and at `depth - 1`
    /// steps chosen at random in `0..steps` the running G drops below every other. A G that
    /// wakes itself (a yield) also drops to the bottom, so that a spin loop gives way.
    Pct {
        /// The bug depth it aims at (≥ 1).
        depth: u32,
        /// The expected length of a run, in steps (the change points are drawn below it).
        steps: u64,
    },
}

/// What [`Builder::bubble`](crate::Builder::bubble) makes a runtime into. Not part of the
/// stable API: `goro::synctest` builds it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct BubbleSpec {
    pub seed: u64,
    pub policy: Policy,
}

/// What a bubble did, for replays and for `GORO_SYNCTEST_CHECK_DETERMINISM`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BubbleSummary {
    /// Scheduling choices and clock moves made.
    pub steps: u64,
    /// A hash of every choice (which G, which instant), in order.
    pub trace: u64,
    /// Virtual time elapsed.
    pub elapsed: Duration,
}

/// The state of one bubble, in its runtime's `Config`.
pub(crate) struct Bubble {
    /// Unique in the process (never 0: 0 tags what belongs to no bubble).
    pub(crate) id: u64,
    pub(crate) seed: u64,
    /// The bubble's `nanotime`: 1 at its start (0 means "no timer"), moved only by
    /// [`findrunnable`]. The instant `start + d` is `1 + d` on it (`Shared::nanos_at`).
    clock: AtomicU64,
    /// Set while M0 sleeps in the netpoller for a wake from outside: a push to the global queue
    /// then wakes it (`Shared::after_globrunqput`).
    sleeping: AtomicBool,
    /// The run set and the dice: touched by M0 only (a mutex for `Sync`, never contended).
    sched: Mutex<Sched>,
    /// The G (or main future) inside `synctest::wait`, and whether the bubble let it go.
    pub(crate) waiter: Mutex<Option<Waiter>>,
    /// Set once the root future returned (the main future then waits in
    /// `synctest::wait_exit`).
    pub(crate) root_done: AtomicBool,
}

pub(crate) struct Waiter {
    pub(crate) waker: Waker,
    pub(crate) released: bool,
}

impl std::fmt::Debug for Bubble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bubble").field("id", &self.id).field("seed", &self.seed).finish_non_exhaustive()
    }
}

/// A G of the run set, which owns its run-queue reference; with its goid and (under PCT) its
/// priority, read once when it joins the set.
#[derive(Clone, Copy)]
struct Queued {
    g: GPtr,
    goid: u64,
    prio: u64,
}
// SAFETY: a G pointer is a counted reference to a `Send` G; only M0 touches the set.
unsafe impl Send for Queued {}

/// Who runs next.
#[derive(Clone, Copy)]
pub(crate) enum Pick {
    G(GPtr),
    Main,
}

struct Sched {
    runnable: Vec<Queued>,
    rng: u64,
    policy: Policy,
    steps: u64,
    trace: u64,
    /// The goid of the G (0: the main future) chosen last.
    last: u64,
    /// PCT: each G's priority (higher runs first), the steps at which the running G drops,
    /// and the next low priority to hand out.
    prio: HashMap<u64, u64>,
    change_points: Vec<u64>,
    low: u64,
}

/// The goid the main future goes by in the bubble's choices.
const MAIN: u64 = 0;

impl Sched {
    fn new(spec: BubbleSpec) -> Sched {
        let mut s = Sched {
            runnable: Vec::new(),
            // Never 0 (splitmix64 is fine with any state, but 0 reads as unseeded in a dump).
            rng: spec.seed ^ 0x9E37_79B9_7F4A_7C15,
            policy: spec.policy,
            steps: 0,
            trace: 0xcbf2_9ce4_8422_2325,
            last: u64::MAX,
            prio: HashMap::new(),
            change_points: Vec::new(),
            low: 0,
        };
        if let Policy::Pct { depth, steps } = spec.policy {
            let d = depth.max(1) as usize;
            s.change_points = (1..d).map(|_| s.below(steps.max(1))).collect();
            // Priorities `1..d` are kept for the change points; fresh ones are drawn above them.
            s.low = 0;
        }
        s
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        let z = splitmix64(self.rng);
        self.rng = self.rng.wrapping_add(SPLITMIX_GAMMA);
        z
    }

    /// Uniform in `0..n` (n > 0), by Lemire's multiply-shift.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    fn record(&mut self, kind: u64, value: u64) {
        // FNV-1a over the two words.
        for w in [kind, value] {
            for b in w.to_le_bytes() {
                self.trace ^= u64::from(b);
                self.trace = self.trace.wrapping_mul(0x0100_0000_01b3);
            }
        }
        self.steps += 1;
    }

    fn priority(&mut self, goid: u64) -> u64 {
        if let Some(&p) = self.prio.get(&goid) {
            return p;
        }
        // Above every change-point priority (`1..depth`), so distinct from them.
        let p = self.next() | (1 << 63);
        self.prio.insert(goid, p);
        p
    }

    /// One step: the Gs from `before` on just joined the run set; chooses among the set and
    /// the main future (when `main` is woken).
    fn step(&mut self, before: usize, main: bool) -> Option<Pick> {
        if let Policy::Pct { .. } = self.policy {
            let last = self.last;
            // The G that ran last is runnable again at once: it woke itself (a yield, or the
            // budget ran out). It drops to the bottom, or a spin loop at the top priority would
            // never give way. At a change point it drops in any case (PCT's rule).
            let again = self.runnable[before..].iter().any(|q| q.goid == last) || (main && last == MAIN);
            let change = last != u64::MAX && self.change_points.contains(&self.steps);
            if again || change {
                self.low += 1;
                let low = self.low;
                self.prio.insert(last, low);
            }
            for i in before..self.runnable.len() {
                let goid = self.runnable[i].goid;
                self.runnable[i].prio = self.priority(goid);
            }
        }
        let n = self.runnable.len() + usize::from(main);
        if n == 0 {
            return None;
        }
        let i = match self.policy {
            Policy::Random => self.below(n as u64) as usize,
            Policy::Pct { .. } => {
                let mut best = (0, 0u64);
                for (i, q) in self.runnable.iter().enumerate() {
                    if i == 0 || q.prio > best.1 {
                        best = (i, q.prio);
                    }
                }
                if main {
                    let p = self.priority(MAIN);
                    if n == 1 || p > best.1 {
                        best = (self.runnable.len(), p);
                    }
                }
                best.0
            }
        };
        let (pick, goid) = if i < self.runnable.len() {
            let q = self.runnable.swap_remove(i);
            (Pick::G(q.g), q.goid)
        } else {
            (Pick::Main, MAIN)
        };
        self.last = goid;
        self.record(1, goid);
        Some(pick)
    }

    /// The yield points the next poll gets before it yields (see `coop::set_budget`): a G
    /// that never parks (a loop over a ready channel) still lets the others run, as Go's
    /// preemption does, after a number of operations drawn from the seed. Under PCT every
    /// few operations are a scheduling point.
    fn budget(&mut self) -> u32 {
        let max = match self.policy {
            Policy::Random => 64,
            Policy::Pct { .. } => 8,
        };
        2 + self.below(max - 1) as u32
    }
}

const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output for the state `x` (the state then moves by its gamma): every number a
/// bubble draws, and the seeds `goro::synctest` derives from one, come from it.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(SPLITMIX_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Bubble {
    pub(crate) fn new(spec: BubbleSpec) -> Bubble {
        Bubble {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            seed: spec.seed,
            clock: AtomicU64::new(1),
            sleeping: AtomicBool::new(false),
            sched: Mutex::new(Sched::new(spec)),
            waiter: Mutex::new(None),
            root_done: AtomicBool::new(false),
        }
    }

    /// The bubble's `nanotime` (never 0, which means "no timer").
    #[inline]
    pub(crate) fn nanotime(&self) -> Nanos {
        self.clock.load(Acquire)
    }

    /// Virtual time since the bubble started.
    fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.clock.load(Acquire) - 1)
    }

    /// `t` on the bubble's clock (see `clock`).
    pub(crate) fn nanos_at(&self, start: Instant, t: Instant) -> Nanos {
        let d = t.saturating_duration_since(start);
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2).saturating_add(1)
    }

    /// The bubble's `Instant`: its runtime's start plus the virtual time.
    pub(crate) fn now(&self, start: Instant) -> Instant {
        start + self.elapsed()
    }

    /// The bubble's wall clock: 2000-01-01T00:00:00Z plus the virtual time.
    pub(crate) fn system_now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + EPOCH_2000 + self.elapsed()
    }

    /// Whether M0 sleeps for a wake from outside: read by whoever pushes a G to the global
    /// queue, after its `SeqCst` fence, to wake M0 (`Shared::after_globrunqput`).
    #[inline]
    pub(crate) fn sleeping(&self) -> bool {
        self.sleeping.load(SeqCst)
    }

    /// M0's side of that handshake: set before it looks at the queues a last time (after a
    /// `SeqCst` fence) and sleeps, cleared when it wakes.
    pub(crate) fn set_sleeping(&self, on: bool) {
        self.sleeping.store(on, SeqCst);
    }

    /// The next G to run (or the main future, a candidate while `main` is woken): `fill`
    /// hands over the Gs made runnable since the last step (with their run-queue references),
    /// and the choice is made by the policy. Also draws the chosen poll's preemption budget.
    pub(crate) fn next(&self, main: bool, fill: impl FnOnce(&mut dyn FnMut(GPtr))) -> Option<(Pick, u32)> {
        let mut s = self.sched.lock();
        let before = s.runnable.len();
        fill(&mut |g| {
            // SAFETY: the G comes with its run-queue reference, which the set now holds.
            let goid = unsafe { g.as_ref() }.goid;
            s.runnable.push(Queued { g, goid, prio: 0 });
        });
        let pick = s.step(before, main)?;
        Some((pick, s.budget()))
    }

    /// A number below `n` from the bubble's dice (the order of timers due at one instant).
    pub(crate) fn below(&self, n: usize) -> usize {
        self.sched.lock().below(n as u64) as usize
    }

    /// Every G is durably blocked and a timer is due at `when`: the clock jumps there.
    pub(crate) fn advance_to(&self, when: Nanos) {
        let to = when.max(self.clock.load(Relaxed));
        self.clock.store(to, Release);
        self.sched.lock().record(2, to);
    }

    /// Every other G is durably blocked: the G in `synctest::wait` goes on. Returns whether
    /// there was one.
    pub(crate) fn release_waiter(&self) -> bool {
        let waker = {
            let mut w = self.waiter.lock();
            match w.as_mut() {
                Some(w) if !w.released => {
                    w.released = true;
                    w.waker.clone()
                }
                _ => return false,
            }
        };
        // Outside the lock: the waker is the runtime's, but the rule holds for all wakers.
        waker.wake();
        true
    }

    pub(crate) fn summary(&self) -> BubbleSummary {
        let s = self.sched.lock();
        BubbleSummary { steps: s.steps, trace: s.trace, elapsed: self.elapsed() }
    }

    /// Gives back the run-queue references of the Gs still in the run set (shutdown).
    pub(crate) fn drain(&self, mut f: impl FnMut(GPtr)) {
        let gs = std::mem::take(&mut self.sched.lock().runnable);
        gs.into_iter().for_each(|q| f(q.g));
    }
}

/// Whether a wait with reason byte `v` can end only by the bubble's own doing.
pub(crate) fn durable(v: u8) -> bool {
    if v & EXTERNAL != 0 {
        return false;
    }
    !matches!(WaitReason::from_u8(v), WaitReason::Future | WaitReason::IoWait | WaitReason::Syscall)
}
