//! P: a processor, the right to run Gs (Go's `p`). There are exactly `max_procs` of them; an M
//! must hold one to run Gs.
//!
//! A P has two halves. [`P`] is what every thread may look at: its status, the shared half of
//! its run queue (thieves steal from it), its timers, the flags sysmon raises and the counters
//! it reads. [`PCore`] is what only the P's owner touches: the owner's half of the run queue,
//! the free G lists, the batch of finished Gs, `schedtick`, the `runnext` streak, the goid
//! cache and the random state. Owning a P *is* holding its `Box<PCore>` (as a tokio worker
//! owns its `Box<Core>`): an M takes it out of the P's [`CoreSlot`] when it acquires the P
//! (`acquirep`) and puts it back when it lets the P go (`releasep`, `entersyscall`), and who
//! gets to take it is decided as before, by the idle-P list under the scheduler lock or by the
//! status CAS of a syscall return against sysmon's retake. So "this M owns P `p`" is a value
//! the M holds, and every owner-only access is a safe `&mut` method on it.
//!
//! Counters that metrics read are atomics written only by the owner (a relaxed load and store,
//! no read-modify-write).

use crate::current::PFlags;
use crate::g::allgs::{DeadGs, GOID_BATCH};
use crate::g::gfree::LocalFree;
use crate::g::raw::Header;
use crate::loom::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use crate::runq::{self, Local, Steal};
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

pub(crate) struct P {
    pub(crate) id: usize,
    /// The shared half of the run queue (the owner's is in [`PCore`]).
    pub(crate) runq: Steal<Header>,
    pub(crate) status: AtomicU8,
    /// This P's timers (Go's `p.timers`, with `p.timer0When` inside).
    pub(crate) timers: TimerHeap,
    /// sysmon's preemption request and the count of its owner's waits for goro's locks,
    /// published in the owner's thread-local record (see `current`). Unpadded, among the
    /// fields `findrunnable` reads anyway: on a line of their own they cost W3 a line more per
    /// schedule (about 10%).
    pub(crate) flags: PFlags,
    /// Set by sysmon when work outside this P's queue (the global queue, an M back from a
    /// syscall waiting for a P) has waited a whole time slice: the owner's next `findrunnable`
    /// gives it a turn before its own queue, as it does every 61st tick (see `m.rs`).
    pub(crate) fairness_due: AtomicBool,
    /// When (runtime nanos) sysmon first saw the poll that got this P detached, for the
    /// report of its M.
    pub(crate) blocked_since: AtomicU64,
    /// The kernel thread id of the M holding the P (Linux; 0 if unknown), for sysmon.
    pub(crate) tid: AtomicU32,
    /// The owner-only half while nobody owns the P.
    core: CoreSlot,
    pub(crate) stats: CachePadded<PStats>,
}

/// The owner-only half of a P (see the module docs), held by the M that owns the P.
pub(crate) struct PCore {
    id: usize,
    /// The owner's half of the run queue.
    pub(crate) runq: Local<Header>,
    /// Incremented each time a G is scheduled with a fresh time slice (Go's `schedtick`).
    pub(crate) schedtick: u32,
    /// Consecutive Gs taken from `runnext` while the ring had work (see `runqget`).
    pub(crate) runnext_streak: u32,
    /// The `schedtick` at which this P last polled the network on its 61st tick (see
    /// `findrunnable`): once per such tick, however many Gs a `runnext` chain runs in it.
    pub(crate) netpoll_tick: u32,
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
    /// A copy of `schedtick` for sysmon, which cannot reach `PCore`.
    pub(crate) schedtick: AtomicU32,
    /// G polls run on this P (sysmon: an unchanged count means one poll is still running).
    pub(crate) polls: AtomicU64,
    /// The goid of the G whose poll runs (or ran last) on this P, 0 for a main future: whom
    /// sysmon names when a poll never returns.
    pub(crate) curgoid: AtomicU64,
    /// Entries into `goro::syscall` (Go's `syscalltick`: sysmon tells two syscalls apart).
    pub(crate) syscalltick: AtomicU64,
    /// Gs in `PCore::dead`: finished but still counted by `allgs` (`num_goroutine` subtracts
    /// them).
    pub(crate) dead_pending: AtomicU64,
}

pub(crate) use crate::loom::bump;

/// Where a P's [`PCore`] waits while no M owns the P (idle, in a syscall, spare): one
/// pointer, swapped atomically, so exactly one taker gets the core.
struct CoreSlot(AtomicPtr<PCore>);

impl CoreSlot {
    fn new(core: Box<PCore>) -> CoreSlot {
        CoreSlot(AtomicPtr::new(Box::into_raw(core)))
    }

    fn take(&self) -> Option<Box<PCore>> {
        let ptr = self.0.swap(std::ptr::null_mut(), Acquire);
        // SAFETY: a non-null pointer in the slot came from `Box::into_raw` (`new`, `put`) and the
        // swap took it out: nobody else can have it.
        (!ptr.is_null()).then(|| unsafe { Box::from_raw(ptr) })
    }

    fn put(&self, core: Box<PCore>) {
        let old = self.0.swap(Box::into_raw(core), Release);
        assert!(old.is_null(), "goro: a P's core put back while another copy was there");
    }
}

impl Drop for CoreSlot {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl P {
    pub(crate) fn new(id: usize) -> P {
        let (local, steal) = runq::new();
        P {
            id,
            runq: steal,
            status: AtomicU8::new(P_IDLE),
            timers: TimerHeap::new(),
            flags: PFlags { id, ..PFlags::default() },
            fairness_due: AtomicBool::new(false),
            blocked_since: AtomicU64::new(0),
            tid: AtomicU32::new(0),
            core: CoreSlot::new(Box::new(PCore {
                id,
                runq: local,
                schedtick: 0,
                runnext_streak: 0,
                netpoll_tick: u32::MAX,
                gfree: LocalFree::default(),
                dead: DeadGs::default(),
                goid_next: 0,
                goid_end: 0,
                rng: 0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F),
            })),
            stats: CachePadded::new(PStats::default()),
        }
    }

    /// Takes the P's owner-only half: the caller owns the P from now on. The caller won the
    /// right to (it took the P off the idle list, won the syscall CAS, or is the only thread
    /// left); a missing core means two Ms think they own the P, a scheduler bug.
    pub(crate) fn take_core(&self) -> Box<PCore> {
        self.core.take().unwrap_or_else(|| panic!("goro: P {} acquired while another M holds it", self.id))
    }

    /// Takes the core if it is there (shutdown, when no M runs any more).
    pub(crate) fn try_take_core(&self) -> Option<Box<PCore>> {
        self.core.take()
    }

    /// Gives the owner-only half back: the caller no longer owns the P.
    pub(crate) fn put_core(&self, core: Box<PCore>) {
        debug_assert_eq!(core.id, self.id, "goro: a core put back into another P");
        self.core.put(core);
    }
}

impl PCore {
    /// The P this is the core of.
    pub(crate) fn id(&self) -> usize {
        self.id
    }

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

/// Every P slot of a runtime (Go's `allp`): the `max_procs` Ps in use, plus spare slots that
/// replace a P sysmon detached (see `idle`'s spare list). A slot's index is its P's id.
pub(crate) struct Allp {
    ps: Box<[P]>,
    procs: usize,
    /// Slots ever used: `procs`, plus the spares that have replaced a detached P. Slots past it
    /// have never held a G or a timer.
    slots_used: AtomicUsize,
    /// The order thieves visit the slots in.
    order: RandomOrder,
    /// The slot [`Allp::timer_home`] returned last (a hint).
    timer_home: AtomicUsize,
}

impl Allp {
    /// `procs` Ps in use and `spares` spare slots.
    pub(crate) fn new(procs: usize, spares: usize) -> Allp {
        let slots = procs + spares;
        Allp {
            ps: (0..slots).map(P::new).collect(),
            procs,
            slots_used: AtomicUsize::new(procs),
            order: RandomOrder::new(slots),
            timer_home: AtomicUsize::new(0),
        }
    }

    /// Go's `gomaxprocs`: the Ps in use at any time.
    #[inline]
    pub(crate) fn procs(&self) -> usize {
        self.procs
    }

    /// Every slot, used or not.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, P> {
        self.ps.iter()
    }

    /// The slots ever used (the others are untouched spares).
    #[inline]
    pub(crate) fn used(&self) -> &[P] {
        &self.ps[..self.slots_used()]
    }

    /// How many slots were ever used.
    #[inline]
    pub(crate) fn slots_used(&self) -> usize {
        self.slots_used.load(Acquire)
    }

    /// Spare slot `spare` goes into use (sysmon, replacing a detached P).
    pub(crate) fn use_spare(&self, spare: usize) {
        self.slots_used.fetch_max(spare + 1, AcqRel);
    }

    /// The slots in a random order starting from `r` (see [`RandomOrder`]).
    pub(crate) fn random_order(&self, r: u32) -> impl Iterator<Item = usize> + '_ {
        self.order.start(r)
    }

    /// A slot in use, for timers that have no P of their own to go to: those armed off any
    /// P, and those moved off a slot that went out of use (see `timer`'s "Timers move with
    /// their P").
    pub(crate) fn timer_home(&self) -> usize {
        let hint = self.timer_home.load(Relaxed);
        if in_use(self.ps[hint].status.load(Relaxed)) {
            return hint;
        }
        // At least `procs` slots are in use at any time: `sysmon::detach` puts the spare into
        // use before it takes the stuck P out, so a reader that sees a P out of use (Acquire)
        // sees its replacement in use. (Every slot is scanned, not `used`: `slots_used` is read
        // before the statuses and may lag behind the replacement.)
        let p = self.ps.iter().position(|p| in_use(p.status.load(Acquire))).expect("goro: no P slot in use");
        self.timer_home.store(p, Relaxed);
        p
    }
}

impl std::ops::Index<usize> for Allp {
    type Output = P;

    #[inline]
    fn index(&self, p: usize) -> &P {
        &self.ps[p]
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
        let (a, b) = (P::new(0), P::new(1));
        let (mut a, mut b) = (a.take_core(), b.take_core());
        let mut ids = Vec::new();
        for _ in 0..40 {
            ids.push(a.next_goid(&gen));
            ids.push(b.next_goid(&gen));
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 80);
    }
}
