//! What waits for work, and who looks for it: the idle Ps (Go's `sched.pidle`, `npidle`), the
//! sleeping Ms (`sched.midle`, `nmidle`), the spinning count (`sched.nmspinning`), and three
//! things of goro's own: the Ms back from a syscall that wait for a P, the spare P slots that
//! replace a P whose M is stuck in one poll (see `sysmon`), and the seat of the M asleep in the
//! netpoller, which `startm` hands a P before the sleeping Ms. Beside them, the count of Ms inside
//! a syscall that no P shows ([`SyscallsWithoutP`]), for `checkdead`.
//!
//! The lists live under one lock, the scheduler lock (Go's `sched.lock`): [`Idle::lock`] returns
//! the [`Locked`] view, whose methods are Go's `pidleget`/`pidleput`/`mget`/`mput`. Each counter
//! that others read without the lock (`npidle`, `nmidle`, the number of syscall waiters) is
//! changed only by the method that changes its list, in the same critical section, so it is
//! derived from the list, never kept in step by hand. `nmspinning` has no list: Ms count
//! themselves in and out of it (see `sched`'s "No lost wake-ups" for the fences around it).
//!
//! A P's status is the P's business: the callers in `sched` set it as they move the P.
//!
//! [`M`] is what others see of an M: its parker, and the slot through which whoever wakes it
//! hands it a P.

use crate::loom::{AtomicBool, AtomicUsize, Mutex, MutexGuard, Ordering::*};
use crate::park::Parker;
use crossbeam_utils::CachePadded;
use std::sync::Arc as StdArc;

/// Whether an M is started (or handed a P) as a spinning one: sent to look for work, counted
/// in `nmspinning` by whoever starts it (Go's `m.spinning` argument of `startm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spinning {
    Yes,
    No,
}

const NO_P: usize = usize::MAX;

/// The part of an M that other threads touch: its parker and the hand-off slot.
pub(crate) struct M {
    pub(crate) parker: Parker,
    /// The P handed to this M by `startm` (Go's `m.nextp`), or `NO_P`; written under the
    /// scheduler lock before the unpark.
    nextp: AtomicUsize,
    /// Whether the hand-off made this M a spinning one.
    next_spinning: AtomicBool,
    /// Set while this M sleeps in the netpoller rather than on its parker (only matters for M0,
    /// whose main future's waker must then wake the poller).
    in_netpoll: AtomicBool,
}

impl M {
    pub(crate) fn new() -> M {
        M {
            parker: Parker::new(),
            nextp: AtomicUsize::new(NO_P),
            next_spinning: AtomicBool::new(false),
            in_netpoll: AtomicBool::new(false),
        }
    }

    /// Called by `startm` under the scheduler lock.
    pub(crate) fn hand(&self, p: usize, spinning: Spinning) {
        self.next_spinning.store(spinning == Spinning::Yes, Relaxed);
        self.nextp.store(p, Release);
    }

    pub(crate) fn take_hand(&self) -> Option<(usize, Spinning)> {
        let p = self.nextp.swap(NO_P, Acquire);
        let spinning = if self.next_spinning.load(Relaxed) { Spinning::Yes } else { Spinning::No };
        (p != NO_P).then_some((p, spinning))
    }

    /// Whether this M sleeps in the netpoller (`SeqCst`: see `MainState::wake_by_ref`).
    pub(crate) fn in_netpoll(&self) -> bool {
        self.in_netpoll.load(SeqCst)
    }

    /// This M goes to sleep in the netpoller (`true`) or is back from it.
    pub(crate) fn set_in_netpoll(&self, on: bool) {
        self.in_netpoll.store(on, SeqCst);
    }
}

/// The Ms inside `goro::syscall` whose P no longer shows it: sysmon retook the P
/// (`sysmon::retake_syscall`), or the M gave it up on entering because sysmon had detached it.
/// `checkdead` takes a runtime with such an M for a running one.
///
/// Counted on the cold paths only, so that the fast path (the M takes its own P back) costs no
/// shared write: the retake counts the M *before* its CAS takes the P (and uncounts it if the
/// M's own CAS won), and the M uncounts itself once it holds a P again (or, at shutdown, goes
/// on without one). So from the moment the P stops saying `P_SYSCALL` until the M runs with a
/// P again, the count is at least one; the loom model
/// `loom_tests::checkdead::loom_checkdead_vs_syscall` checks the check against both.
#[derive(Default)]
pub(crate) struct SyscallsWithoutP(AtomicUsize);

impl SyscallsWithoutP {
    pub(crate) fn enter(&self) {
        self.0.fetch_add(1, SeqCst);
    }

    pub(crate) fn leave(&self) {
        let was = self.0.fetch_sub(1, SeqCst);
        debug_assert!(was > 0, "goro: an M left a syscall it was not counted in");
    }

    /// Whether some M is inside a syscall without a P.
    pub(crate) fn any(&self) -> bool {
        self.0.load(SeqCst) != 0
    }
}

pub(crate) struct Idle {
    lists: Mutex<Lists>,
    /// `lists.pidle.len()`, read without the lock (Go's `sched.npidle`).
    npidle: CachePadded<AtomicUsize>,
    /// Ms looking for work (Go's `sched.nmspinning`).
    nmspinning: CachePadded<AtomicUsize>,
    /// `lists.midle.len()` (Go's `sched.nmidle`), for schedtrace and metrics.
    nmidle: AtomicUsize,
    /// `lists.syscall_waiters.len() + lists.main_waiters.len()`: `findrunnable` looks at it to
    /// give its P to a waiting M (see `MCtx::handoff_to_syscall_waiter`).
    nwaiters: AtomicUsize,
    /// `lists.main_waiters.len()`: while it is not 0, a busy M gives its P away at its next
    /// schedule instead of every 61st tick.
    nmainwaiters: AtomicUsize,
}

/// Why an M without a P waits for one (`waiter_put`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PWait {
    /// Back from a syscall whose P was retaken (`exitsyscall_slow`): served every 61st tick of a
    /// busy P, as Go serves the global queue it puts such a G on.
    Syscall,
    /// M0's main future was woken (`MCtx::acquirep_for_main`): served at the next schedule of a
    /// busy P, as Go's `ready` puts the G in the waker's `runnext`.
    Main,
}

struct Lists {
    /// Idle Ps, popped from the back (Go's `sched.pidle`).
    pidle: Vec<usize>,
    /// Sleeping Ms (Go's `sched.midle`).
    midle: Vec<StdArc<M>>,
    /// Ms back from a syscall whose P was retaken, waiting for one: an idle P goes to them
    /// first (Go puts their G on the global queue instead; a future cannot leave its M
    /// mid-poll, so the M waits).
    syscall_waiters: Vec<StdArc<M>>,
    /// Ms in `block_on` whose main future was woken while they held no P and none was idle
    /// ([`PWait::Main`]): served before the syscall waiters.
    main_waiters: Vec<StdArc<M>>,
    /// Unused P slots, for replacing a P whose M is stuck in one poll (`P_SPARE`).
    spare: Vec<usize>,
    /// The M asleep in the netpoller (see `MCtx::block_in_netpoll`), which `startm` hands a P
    /// before any M on `midle` ([`Locked::take_netpoller`]).
    netpoller: Option<StdArc<M>>,
    /// An M was wanted for a P and none could be started (`Builder::max_threads`): the next M
    /// that would go to sleep looks for work once more instead (see [`Locked::want_m`]).
    m_wanted: bool,
}

/// The lists, with the scheduler lock held.
pub(crate) struct Locked<'a> {
    lists: MutexGuard<'a, Lists>,
    idle: &'a Idle,
}

impl Idle {
    /// `procs` Ps idle (P0 handed out first), and the slots `procs..slots` spare.
    pub(crate) fn new(procs: usize, slots: usize) -> Idle {
        Idle {
            lists: Mutex::new(Lists {
                pidle: (0..procs).rev().collect(),
                midle: Vec::new(),
                syscall_waiters: Vec::new(),
                main_waiters: Vec::new(),
                spare: (procs..slots).rev().collect(),
                netpoller: None,
                m_wanted: false,
            }),
            npidle: CachePadded::new(AtomicUsize::new(procs)),
            nmspinning: CachePadded::new(AtomicUsize::new(0)),
            nmidle: AtomicUsize::new(0),
            nwaiters: AtomicUsize::new(0),
            nmainwaiters: AtomicUsize::new(0),
        }
    }

    /// Takes the scheduler lock.
    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked { lists: self.lists.lock(), idle: self }
    }

    /// Idle Ps (Go's `sched.npidle`), `SeqCst`: the wake-up protocol's reads.
    #[inline]
    pub(crate) fn npidle(&self) -> usize {
        self.npidle.load(SeqCst)
    }

    /// Spinning Ms (Go's `sched.nmspinning`), `SeqCst`.
    #[inline]
    pub(crate) fn nmspinning(&self) -> usize {
        self.nmspinning.load(SeqCst)
    }

    /// Sleeping Ms.
    pub(crate) fn nmidle(&self) -> usize {
        self.nmidle.load(Relaxed)
    }

    /// Ms without a P waiting for one (back from a syscall, or M0 with its main future woken).
    #[inline]
    pub(crate) fn syscall_waiting(&self) -> usize {
        self.nwaiters.load(SeqCst)
    }

    /// Whether an M0 waits for a P to poll its woken main future ([`PWait::Main`]).
    #[inline]
    pub(crate) fn main_waiting(&self) -> bool {
        self.nmainwaiters.load(Relaxed) != 0
    }

    /// An M starts spinning (counts itself in).
    pub(crate) fn spinning_start(&self) {
        self.nmspinning.fetch_add(1, SeqCst);
    }

    /// An M stops spinning (or a spinning start is given back); returns the count before.
    pub(crate) fn spinning_stop(&self) -> usize {
        let before = self.nmspinning.fetch_sub(1, SeqCst);
        debug_assert!(before > 0, "goro: negative nmspinning");
        before
    }

    /// Counts a spinning M in if none spins (`wakep`, `handoffp`): only one is started at a
    /// time.
    pub(crate) fn first_spinner(&self) -> bool {
        self.nmspinning.compare_exchange(0, 1, SeqCst, SeqCst).is_ok()
    }
}

impl Locked<'_> {
    /// Go's `pidleget`: an idle P, if any.
    pub(crate) fn pidleget(&mut self) -> Option<usize> {
        let p = self.lists.pidle.pop()?;
        self.idle.npidle.fetch_sub(1, SeqCst);
        Some(p)
    }

    /// Go's `pidleput`: P `p` is idle.
    pub(crate) fn pidleput(&mut self, p: usize) {
        self.lists.pidle.push(p);
        self.idle.npidle.fetch_add(1, SeqCst);
    }

    /// `startm` could not start an M for an idle P (the thread limit): the next M that goes to
    /// sleep takes an idle P and looks for work once more instead. Go dies here ("thread
    /// exhaustion"); goro goes on, and without this the P's queued Gs waited for an M that
    /// never came: the M that would have run them was between giving its P up and sleeping,
    /// not yet on the idle list (loom model
    /// `loom_tests::sched::loom_sched_handoff_at_the_thread_limit_strands_nothing`).
    pub(crate) fn want_m(&mut self) {
        self.lists.m_wanted = true;
    }

    /// Takes the request of [`want_m`](Self::want_m), if any.
    pub(crate) fn take_m_wanted(&mut self) -> bool {
        std::mem::take(&mut self.lists.m_wanted)
    }

    /// Go's `mget`: a sleeping M, taken off the list.
    pub(crate) fn mget(&mut self) -> Option<StdArc<M>> {
        let m = self.lists.midle.pop()?;
        self.idle.nmidle.fetch_sub(1, Relaxed);
        Some(m)
    }

    /// `m` is about to sleep in the netpoller; `startm` may take it from there and hand it a P,
    /// as it would an M from `midle`, and then wakes the poller instead of the M's parker.
    pub(crate) fn put_netpoller(&mut self, m: StdArc<M>) {
        debug_assert!(self.lists.netpoller.is_none(), "goro: two Ms asleep in the netpoller");
        self.lists.netpoller = Some(m);
    }

    /// The M asleep in the netpoller, taken from its seat: the caller hands it a P and wakes
    /// the poller.
    pub(crate) fn take_netpoller(&mut self) -> Option<StdArc<M>> {
        self.lists.netpoller.take()
    }

    /// `m` is back from the netpoller: `true` if it was still in its seat (it leaves it now),
    /// `false` if `startm` took it from there, when a P waits in its hand-off slot.
    pub(crate) fn leave_netpoller(&mut self, m: &StdArc<M>) -> bool {
        match &self.lists.netpoller {
            Some(x) if StdArc::ptr_eq(x, m) => {
                self.lists.netpoller = None;
                true
            }
            _ => false,
        }
    }

    /// Go's `mput`: `m` is about to sleep until handed a P.
    pub(crate) fn mput(&mut self, m: StdArc<M>) {
        self.lists.midle.push(m);
        self.idle.nmidle.fetch_add(1, Relaxed);
    }

    /// Takes `m` off the sleeping list (it leaves for another reason than a hand-off).
    pub(crate) fn mremove(&mut self, m: &StdArc<M>) {
        let before = self.lists.midle.len();
        self.lists.midle.retain(|x| !StdArc::ptr_eq(x, m));
        self.idle.nmidle.fetch_sub(before - self.lists.midle.len(), Relaxed);
    }

    /// The next M waiting for a P: a main M first, else the latest back from a syscall.
    pub(crate) fn waiter_get(&mut self) -> Option<StdArc<M>> {
        let m = match self.lists.main_waiters.pop() {
            Some(m) => {
                self.idle.nmainwaiters.fetch_sub(1, Relaxed);
                m
            }
            None => self.lists.syscall_waiters.pop()?,
        };
        self.idle.nwaiters.fetch_sub(1, SeqCst);
        Some(m)
    }

    /// `m` waits for a P, for `why`.
    pub(crate) fn waiter_put(&mut self, m: StdArc<M>, why: PWait) {
        match why {
            PWait::Syscall => self.lists.syscall_waiters.push(m),
            PWait::Main => {
                self.lists.main_waiters.push(m);
                self.idle.nmainwaiters.fetch_add(1, Relaxed);
            }
        }
        self.idle.nwaiters.fetch_add(1, SeqCst);
    }

    /// Takes `m` off the waiting lists (it stops waiting without being handed a P).
    pub(crate) fn waiter_remove(&mut self, m: &StdArc<M>) {
        let l = &mut *self.lists;
        let before = l.main_waiters.len();
        l.main_waiters.retain(|x| !StdArc::ptr_eq(x, m));
        let mains = before - l.main_waiters.len();
        let before = l.syscall_waiters.len();
        l.syscall_waiters.retain(|x| !StdArc::ptr_eq(x, m));
        let syscalls = before - l.syscall_waiters.len();
        self.idle.nmainwaiters.fetch_sub(mains, Relaxed);
        self.idle.nwaiters.fetch_sub(mains + syscalls, SeqCst);
    }

    /// A spare P slot, if any is left.
    pub(crate) fn spare_get(&mut self) -> Option<usize> {
        self.lists.spare.pop()
    }

    /// P slot `p` is spare again.
    pub(crate) fn spare_put(&mut self, p: usize) {
        self.lists.spare.push(p);
    }

    /// Every M asleep in either list (shutdown wakes them all).
    pub(crate) fn sleeping_ms(&self) -> impl Iterator<Item = &StdArc<M>> {
        let l = &*self.lists;
        l.midle.iter().chain(l.syscall_waiters.iter()).chain(l.main_waiters.iter())
    }
}
