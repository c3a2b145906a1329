//! P: a processor, the right to run Gs (Go's `p`). There are exactly `max_procs` of them; an M
//! must hold one to run Gs.
//!
//! A P's run queue is shared with thieves (lock-free, see [`runq`](crate::runq)). Everything
//! else of a P (`PLocal`) belongs to whichever M holds the P: ownership moves only through the
//! idle-P list under the scheduler lock (or a hand-off under the same lock), which orders one
//! owner's accesses before the next's. Counters that metrics read are atomics written only by the
//! owner (a relaxed load and store, no read-modify-write).

use crate::g::allgs::DeadGs;
use crate::g::gfree::LocalFree;
use crate::g::raw::Header;
use crate::loom::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*, UnsafeCell};
use crate::runq::LocalQueue;
use crate::timer::TimerHeap;
use crossbeam_utils::CachePadded;

/// Go's `_Pidle`: in the idle list, owned by nobody.
pub(crate) const P_IDLE: u8 = 0;
/// Go's `_Prunning`: owned by an M that is running Gs.
pub(crate) const P_RUNNING: u8 = 1;
/// Go's `_Psyscall`: its M is inside `goro::syscall`. sysmon may retake it (CAS to `P_IDLE`),
/// else the M takes it back on return (CAS to `P_RUNNING`).
pub(crate) const P_SYSCALL: u8 = 2;
/// sysmon found its M stuck in one poll (blocked in plain code) and gave its work to a spare
/// P; the stuck M still owns it until that poll returns, then turns it into a spare.
pub(crate) const P_DETACHED: u8 = 3;
/// Not in use: a slot that a detached P's replacement can take (the slots past `procs` start
/// so).
pub(crate) const P_SPARE: u8 = 4;

/// Whether a P slot in `status` is in use: one of the `max_procs` Ps that Ms run (idle,
/// running, or in a syscall), as opposed to a detached P or a spare slot.
#[inline]
pub(crate) fn in_use(status: u8) -> bool {
    matches!(status, P_IDLE | P_RUNNING | P_SYSCALL)
}

/// Goids are taken from the runtime's counter this many at a time (Go's `_GoidCacheBatch`).
pub(crate) const GOID_BATCH: u64 = 16;

pub(crate) struct P {
    pub(crate) id: usize,
    pub(crate) runq: LocalQueue<Header>,
    pub(crate) status: AtomicU8,
    /// This P's timers (Go's `p.timers`), and the deadline at the top of the heap (Go's
    /// `p.timer0When`; 0: none), which lets `schedule` skip the heap lock and the clock.
    pub(crate) timers: TimerHeap,
    pub(crate) timer0: AtomicU64,
    /// Set by sysmon when the running G has had the P for a whole time slice (10 ms): goro's
    /// yield points then return `Pending` once (see `coop`).
    pub(crate) preempt: AtomicBool,
    /// Set by sysmon when work outside this P's queue (the global queue, an M back from a
    /// syscall waiting for a P) has waited a whole time slice: the owner's next `findrunnable`
    /// gives it a turn before its own queue, as it does every 61st tick (see `m.rs`).
    pub(crate) fairness_due: AtomicBool,
    /// When (runtime nanos) sysmon first saw the poll that got this P detached, for the
    /// report of its M.
    pub(crate) blocked_since: AtomicU64,
    /// The kernel thread id of the M holding the P (Linux; 0 if unknown), for sysmon.
    pub(crate) tid: AtomicU32,
    local: UnsafeCell<PLocal>,
    pub(crate) stats: CachePadded<PStats>,
}

// SAFETY: `local` is only accessed by the M that owns the P (see the module docs); all else is
// atomic.
unsafe impl Sync for P {}
// SAFETY: as above; `PLocal`'s free-list blocks are plain memory.
unsafe impl Send for P {}

/// The owner-only part of a P.
pub(crate) struct PLocal {
    /// Incremented each time a G is scheduled with a fresh time slice (Go's `schedtick`).
    pub(crate) schedtick: u32,
    /// Consecutive Gs taken from `runnext` while the ring had work (see `runqget`).
    pub(crate) runnext_streak: u32,
    pub(crate) gfree: LocalFree,
    /// Gs finished here that are still in `allgs` (see `g::allgs`).
    pub(crate) dead: DeadGs,
    goid_next: u64,
    goid_end: u64,
    rng: u64,
}

/// Counters of one P, read by `metrics()`.
#[derive(Default)]
pub(crate) struct PStats {
    pub(crate) spawned: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) stolen_gs: AtomicU64,
    pub(crate) runnext_runs: AtomicU64,
    pub(crate) global_runq_polls: AtomicU64,
    pub(crate) local_runq_overflows: AtomicU64,
    pub(crate) gfree_reused: AtomicU64,
    /// A copy of `schedtick` for sysmon, which must not touch `PLocal`.
    pub(crate) schedtick: AtomicU32,
    /// G polls run on this P (sysmon: an unchanged count means one poll is still running).
    pub(crate) polls: AtomicU64,
    /// The goid of the G whose poll runs (or ran last) on this P, 0 for a main future: whom
    /// sysmon names when a poll never returns.
    pub(crate) curgoid: AtomicU64,
    /// Entries into `goro::syscall` (Go's `syscalltick`: sysmon tells two syscalls apart).
    pub(crate) syscalltick: AtomicU64,
    /// Gs in `PLocal::dead`: finished but still counted by `allgs` (`num_goroutine` subtracts
    /// them).
    pub(crate) dead_pending: AtomicU64,
}

/// Adds to an owner-written counter without a read-modify-write instruction.
#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

impl P {
    pub(crate) fn new(id: usize) -> P {
        P {
            id,
            runq: LocalQueue::new(),
            status: AtomicU8::new(P_IDLE),
            timers: TimerHeap::new(),
            timer0: AtomicU64::new(0),
            preempt: AtomicBool::new(false),
            fairness_due: AtomicBool::new(false),
            blocked_since: AtomicU64::new(0),
            tid: AtomicU32::new(0),
            local: UnsafeCell::new(PLocal {
                schedtick: 0,
                runnext_streak: 0,
                gfree: LocalFree::default(),
                dead: DeadGs::default(),
                goid_next: 0,
                goid_end: 0,
                rng: 0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F),
            }),
            stats: CachePadded::new(PStats::default()),
        }
    }

    /// Runs `f` on the owner-only state.
    ///
    /// # Safety
    /// The calling thread must own the P, and `f` must not re-enter `with_local` of the same P
    /// (it must not poll Gs or drop them).
    #[inline]
    pub(crate) unsafe fn with_local<R>(&self, f: impl FnOnce(&mut PLocal) -> R) -> R {
        // SAFETY: caller contract: exclusive, non-reentrant access.
        self.local.with_mut(|l| f(unsafe { &mut *l }))
    }
}

impl PLocal {
    /// Go's `goid` allocation: from the P's cache, refilled from the runtime counter.
    pub(crate) fn next_goid(&mut self, gen: &AtomicU64) -> u64 {
        if self.goid_next == self.goid_end {
            let start = gen.fetch_add(GOID_BATCH, Relaxed);
            self.goid_next = start;
            self.goid_end = start + GOID_BATCH;
        }
        let id = self.goid_next;
        self.goid_next += 1;
        id
    }

    /// A fast per-P random number (wyrand), for steal order.
    pub(crate) fn fastrand(&mut self) -> u32 {
        self.rng = self.rng.wrapping_add(0xA076_1D64_78BD_642F);
        let t = u128::from(self.rng) * u128::from(self.rng ^ 0xE703_7ED1_A0B4_28DB);
        ((t >> 64) as u64 ^ t as u64) as u32
    }
}

/// Go's `randomOrder`: visits `0..count` in a pseudo-random order by stepping with a stride
/// coprime to `count`, so every P is visited exactly once per pass.
pub(crate) struct RandomOrder {
    count: u32,
    coprimes: Vec<u32>,
}

impl RandomOrder {
    pub(crate) fn new(count: usize) -> RandomOrder {
        let count = count as u32;
        let coprimes = (1..=count.max(1)).filter(|&i| gcd(i, count) == 1).collect();
        RandomOrder { count, coprimes }
    }

    /// The order starting from random value `r`.
    pub(crate) fn start(&self, r: u32) -> impl Iterator<Item = usize> + '_ {
        let count = self.count.max(1);
        let inc = self.coprimes[(r / count) as usize % self.coprimes.len()];
        let mut pos = r % count;
        (0..self.count).map(move |_| {
            let p = pos;
            pos = (pos + inc) % count;
            p as usize
        })
    }
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn random_order_visits_each_once() {
        for n in 1..12 {
            let ord = RandomOrder::new(n);
            for r in [0u32, 1, 7, 12345, u32::MAX] {
                let mut seen: Vec<usize> = ord.start(r).collect();
                seen.sort();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n} r={r}");
            }
        }
    }

    #[test]
    fn goids_are_unique_across_ps() {
        let gen = AtomicU64::new(1);
        let a = P::new(0);
        let b = P::new(1);
        let mut ids = Vec::new();
        for _ in 0..40 {
            // SAFETY: this test thread is the only user of both Ps.
            unsafe {
                ids.push(a.with_local(|l| l.next_goid(&gen)));
                ids.push(b.with_local(|l| l.next_goid(&gen)));
            }
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 80);
    }
}
