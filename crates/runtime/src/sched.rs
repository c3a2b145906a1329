//! The scheduler's shared state (Go's `schedt` plus `allp`): the Ps, the global run queue, the
//! idle P and M lists, and the operations that move work and Ms around without being an M:
//! `newproc` off any P ([`Shared::spawn_off_p`]), `globrunqput`, `wakep`, `start_idle`,
//! `startm`, `newm`, `handoffp`. What needs the current M (`ready`, `newproc` on an M) is
//! above this module, in `schedule` and `m`; a new M's entry point is passed in ([`MStart`]).
//!
//! # No lost wake-ups
//!
//! An M may only sleep when no runnable G is left unattended. Go's argument, kept here:
//!
//! - Whoever makes work runnable and sees an idle P and no spinning M starts one (`wakep`);
//!   the spinning M then finds the work or, before it sleeps, drops its spinning state and
//!   re-checks every queue. Both sides do "write, `SeqCst` fence, read": the submitter writes
//!   the queue then reads `nmspinning`/`npidle`; the spinner decrements `nmspinning` then reads
//!   the queues. Sequential consistency of the fences means at least one of them sees the
//!   other's write, so either the submitter wakes someone or the spinner finds the work.
//! - A G made runnable by a thread holding no P (a tokio worker, a plain thread, sysmon) goes
//!   to the global queue, and the submitter then starts a *non-spinning* M on an idle P if it
//!   sees one (Go's `injectglist` → `startIdle`), which runs the G. It wakes an M whenever
//!   `wakep` would (and also while another M spins): the push, a `SeqCst` fence, then the
//!   read of `npidle`, as above.
//! - A submitter that sees `npidle == 0` wakes nobody: every P is owned by an M that will look
//!   at the global queue (under the scheduler lock) before it gives its P up, and a G in a P's
//!   own ring is found by that P's owner.
//! - An M that gives up its P re-checks the global queue under the scheduler lock, the same lock
//!   under which `wakep` takes an idle P: a push that comes later finds the idle P.
//! - `startm` hands the P it took to the M asleep in the netpoller if there is one (taken from
//!   its seat under the scheduler lock, then woken through the poller), else to one from the
//!   idle list. The seated M leaves its seat under the same lock, before it releases the
//!   poller to the next M, and takes the P in its hand-off slot if its seat was taken: a P
//!   handed over always reaches its M, and at most one M is ever seated.
//!
//! The loom models in `loom_tests::sched` run these paths against each other.

use crate::config::Config;
use crate::fatal::{Ending, Fatal};
use crate::g::allgs::AllGs;
use crate::g::gfree::GlobalFree;
use crate::g::raw::Header;
use crate::g::{self, GPtr, JoinHandle};
use crate::globrunq::GlobalQueue;
pub(crate) use crate::idle::Spinning;
use crate::idle::{Idle, Locked, SyscallsWithoutP};
use crate::loom::{fence, thread, AtomicBool, AtomicU32, AtomicU64, Mutex, Ordering, Ordering::*};
use crate::mains::Mains;
use crate::netpoll::Netpoll;
use crate::p::{self, Allp, P_IDLE};
use crate::park::Parker;
use crate::threads::{Refused, Spec, Threads};
use crate::timer::Nanos;
use crossbeam_utils::CachePadded;
use std::future::Future;
use std::panic::Location;
use std::sync::{Arc as StdArc, Weak};
use std::time::Instant;

/// Spare P slots for a runtime of `procs` Ps: how many Ps can be stuck in a blocking poll at
/// once and still be replaced (see `sysmon`).
fn spare_slots(procs: usize) -> usize {
    (4 * procs).clamp(8, 256)
}

/// Where `MCtx::runqput` (in `m`) puts a G in the current P's queue (Go's `next` argument), and
/// whether an idle P is woken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// A woken G: the `runnext` slot, pushing any G already there to the back of the ring; it
    /// runs next, warm in cache, inheriting the time slice. A P is woken only if a G was
    /// pushed to the ring (see `ready` in `schedule`).
    Next,
    /// A new G (Go's `newproc`): the `runnext` slot as for [`Put::Next`], and a P is woken in
    /// any case, to take this G or the spawner's continuation.
    Spawn,
    /// The back of the ring: a G that yielded (it woke itself during its poll).
    Back,
}

/// The part of sysmon the scheduler talks to.
pub(crate) struct SysmonShared {
    /// Set while sysmon sleeps until woken (every P idle); whoever takes an idle P wakes it.
    pub(crate) waiting: AtomicBool,
    pub(crate) parker: Parker,
    pub(crate) stop: AtomicBool,
    /// Set once sysmon's thread was started (lazily: with the runtime's first work).
    pub(crate) started: AtomicBool,
    pub(crate) thread: Mutex<Option<thread::JoinHandle<()>>>,
}

/// The scheduler's counters that no P owns (`metrics` reads them; the Ps' own are `PStats`).
#[derive(Default)]
pub(crate) struct SchedStats {
    /// Ps handed to another M with work on them (`handoffp`, sysmon's retakes and detaches).
    pub(crate) handoffs: AtomicU64,
    /// Ms that `startm` woke from the idle list or started as new threads, each handed a P, and
    /// how many of them were spinning ones (see `Metrics::thread_wakeups`).
    pub(crate) thread_wakeups: AtomicU64,
    pub(crate) spinning_wakeups: AtomicU64,
    /// Gs spawned by threads holding no P of this runtime (the Ps count the others).
    pub(crate) spawned_off_p: AtomicU64,
    /// Polls that blocked their thread long enough for sysmon to hand their P off.
    pub(crate) blocked_polls: AtomicU64,
    /// Preemption requests sysmon made.
    pub(crate) preemptions: AtomicU64,
    /// Times sysmon moved work off a stuck poll's P (`sysmon::move_work_off_stuck_polls`).
    pub(crate) stuck_poll_moves: AtomicU64,
}

/// The entry point of a new M (`m::mstart`), which `newm` starts a thread on. The runtime
/// passes it in: the M's loop is built on this module, not the other way round.
pub(crate) type MStart = fn(StdArc<Shared>, usize, Spinning);

/// One runtime's shared state. Each part owns its fields and the protocol over them; the
/// scheduler's own are private here.
pub(crate) struct Shared {
    /// The P slots (Go's `allp`).
    pub(crate) allp: Allp,
    /// Go's `sched.runq`.
    pub(crate) global: GlobalQueue<Header>,
    pub(crate) allgs: AllGs,
    /// Go's `sched.gFree`: G memory between Ps.
    pub(crate) gfree: GlobalFree,
    /// The idle Ps and Ms, the spinning count, the syscall waiters, the spare slots, and the
    /// scheduler lock over them (see `idle`).
    pub(crate) idle: Idle,
    /// The netpoller, also the sleep of the last idle M while timers are pending.
    pub(crate) netpoll: Netpoll,
    pub(crate) sysmon: SysmonShared,
    /// The Ms this runtime started.
    pub(crate) threads: Threads,
    /// The main futures of the threads inside `block_on`.
    pub(crate) mains: Mains,
    pub(crate) stats: SchedStats,
    /// Set once the run ended early (a deadlock, an unhandled panic), with the reason: see
    /// `fatal`.
    pub(crate) fatal: Fatal,
    /// Read-only, and read on hot paths (a bubble's `nanotime`; `findrunnable` reads its M's
    /// copy of the bubble): on a line of its own, or the counters the Ms write beside it would
    /// make each of those reads a miss (sharing one makes W1 and W3 16% slower).
    pub(crate) config: CachePadded<Config>,
    /// Ms inside `goro::syscall` that no P shows (see `idle::SyscallsWithoutP`).
    syscalls_without_p: SyscallsWithoutP,
    /// Set when the runtime stops: every M leaves its loop (see [`Shared::begin_shutdown`]).
    shutdown: AtomicBool,
    /// Go's `sched.goidgen`: goids are handed out from it in batches (`PCore::next_goid`).
    goidgen: AtomicU64,
    clock: Clock,
    mstart: MStart,
    /// The `Arc` this lives in, for the threads `newm` starts.
    me: Weak<Shared>,
}

/// The runtime's clocks.
struct Clock {
    start: Instant,
    /// Milliseconds since the runtime started, moved by sysmon every round (and see
    /// [`Shared::tick_coarse_ms`]): the clock of `Header::parked_at`, cheap enough to read at
    /// every park (Go stamps `waitsince` lazily for the same reason).
    coarse_ms: CachePadded<AtomicU32>,
}

impl Shared {
    /// A runtime's state for `config`, whose new Ms start at `mstart`.
    pub(crate) fn new(config: Config, mstart: MStart) -> std::io::Result<StdArc<Shared>> {
        let procs = config.max_procs;
        let spares = spare_slots(procs);
        let netpoll = Netpoll::new()?;
        Ok(StdArc::new_cyclic(|me| Shared {
            allp: Allp::new(procs, spares),
            global: GlobalQueue::new(),
            allgs: AllGs::new(procs),
            gfree: GlobalFree::default(),
            // P0 is handed out first.
            idle: Idle::new(procs, procs + spares),
            netpoll,
            sysmon: SysmonShared {
                waiting: AtomicBool::new(false),
                parker: Parker::new(),
                stop: AtomicBool::new(false),
                started: AtomicBool::new(false),
                thread: Mutex::new(None),
            },
            threads: Threads::new(),
            mains: Mains::new(),
            stats: SchedStats::default(),
            fatal: Fatal::default(),
            config: CachePadded::new(config),
            syscalls_without_p: Default::default(),
            shutdown: AtomicBool::new(false),
            goidgen: AtomicU64::new(1),
            clock: Clock { start: Instant::now(), coarse_ms: CachePadded::new(AtomicU32::new(0)) },
            mstart,
            me: me.clone(),
        }))
    }

    /// Whether the runtime is stopping (`Relaxed` where a late look only costs a later stop;
    /// the protocols that must not miss it read it `Acquire` or `SeqCst`).
    #[inline]
    pub(crate) fn shutting_down(&self, order: Ordering) -> bool {
        self.shutdown.load(order)
    }

    /// The runtime stops: every M leaves its loop at its next look.
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown.store(true, SeqCst);
    }

    /// The counter goids come from (`PCore::next_goid` takes batches).
    #[inline]
    pub(crate) fn goidgen(&self) -> &AtomicU64 {
        &self.goidgen
    }

    /// Ms inside `goro::syscall` that no P shows.
    #[inline]
    pub(crate) fn syscalls_without_p(&self) -> &SyscallsWithoutP {
        &self.syscalls_without_p
    }

    /// When the runtime started.
    pub(crate) fn start(&self) -> Instant {
        self.clock.start
    }

    /// Milliseconds since the runtime started, as of sysmon's last round (see `coarse_ms`).
    #[inline]
    pub(crate) fn coarse_ms(&self) -> u32 {
        self.clock.coarse_ms.load(Relaxed)
    }

    /// The coarse clock itself, for `g::run` to stamp a parking G with.
    #[inline]
    pub(crate) fn coarse_clock(&self) -> &AtomicU32 {
        &self.clock.coarse_ms
    }

    /// Moves the coarse clock to now and returns it: sysmon, every round; whoever wakes sysmon
    /// from its sleep (the clock stood still while it slept, and a G about to park would be
    /// stamped with the time sysmon fell asleep); and the readers of wait times (the dump of a
    /// hung, idle program is read while sysmon sleeps). Never backwards: those may race.
    pub(crate) fn tick_coarse_ms(&self) -> u32 {
        let ms = u32::try_from(self.clock.start.elapsed().as_millis()).unwrap_or(u32::MAX);
        self.clock.coarse_ms.fetch_max(ms, Relaxed).max(ms)
    }

    /// Nanoseconds since the runtime started, at least 1 (Go's `nanotime`; 0 means "no timer").
    #[inline]
    pub(crate) fn nanotime(&self) -> Nanos {
        if let Some(b) = &self.config.bubble {
            return b.nanotime();
        }
        self.nanos_at(Instant::now())
    }

    /// `t` on the runtime's clock (instants before the start map to 1).
    pub(crate) fn nanos_at(&self, t: Instant) -> Nanos {
        if let Some(b) = &self.config.bubble {
            return b.nanos_at(self.clock.start, t);
        }
        let d = t.saturating_duration_since(self.clock.start);
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2).max(1)
    }

    /// Go's `wakeNetPoller`: a timer due at `when` became the earliest of its heap. If an M is
    /// asleep in the netpoller past `when`, wake it so it sleeps again with the new deadline;
    /// if none is, make sure an M is looking for work (it will see the timer before it sleeps).
    pub(crate) fn wake_netpoller(&self, when: Nanos) {
        if !self.netpoll.wake_sleeper_before(when) {
            self.wakep();
        }
    }

    /// `newproc` by a thread holding no P of this runtime: a fresh allocation, a goid from the
    /// runtime's counter, and the global queue.
    pub(crate) fn spawn_off_p<F>(
        self: &StdArc<Self>,
        future: F,
        parent: u64,
        location: &'static Location<'static>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.stats.spawned_off_p.fetch_add(1, Relaxed);
        let goid = self.goidgen.fetch_add(1, Relaxed);
        let (g, handle, _) = g::new_g(future, self, &self.gfree, goid, parent, location, None);
        if self.admit(g) {
            self.globrunqput(g);
        }
        handle
    }

    /// Lists a new G in `allgs`; `false` if the runtime is shutting down, in which case the G is
    /// cancelled at once and never runs.
    pub(crate) fn admit(&self, g: GPtr) -> bool {
        if self.allgs.insert(g) {
            return true;
        }
        // `shutdown` consumes the list's reference (never handed to a list), `drop_ref` the run
        // queue's; the JoinHandle's remains.
        // SAFETY: we own those references and no M will see this G.
        unsafe {
            g::shutdown(g);
            g::drop_ref(g);
        }
        false
    }

    /// Go's `globrunqput` by a thread holding no P of ours (a tokio worker, a plain thread,
    /// sysmon, an M without a P, or one whose P sysmon detached), then
    /// [`start_idle`](Self::start_idle), as Go's `injectglist` does.
    pub(crate) fn globrunqput(&self, g: GPtr) {
        self.global.push(g);
        self.after_globrunqput();
    }

    /// Go's `globrunqputbatch` by a thread holding no P of ours (sysmon taking a stuck P's
    /// queue), then [`start_idle`](Self::start_idle), as [`globrunqput`](Self::globrunqput).
    pub(crate) fn globrunqputbatch(&self, gs: impl Iterator<Item = GPtr>) {
        self.global.push_batch(gs);
        self.after_globrunqput();
    }

    /// The end of [`globrunqput`](Self::globrunqput): an M for the pushed Gs.
    fn after_globrunqput(&self) {
        // Pairs with the fence after shutdown's store of its flag (see below), and orders the
        // push before `start_idle`'s read of `npidle` (see the module docs).
        fence(SeqCst);
        if self.config.bubble.as_ref().is_some_and(|b| b.sleeping()) {
            // A bubble's M sleeps for a wake from outside: this is one (see `bubble`).
            self.netpoll.wake();
        }
        if self.shutting_down(SeqCst) {
            // Shutdown may have drained the global queue already: drain it again, or this G's
            // queue reference would keep it (and the runtime) alive forever. Shutdown stores the
            // flag, fences, then drains; we push, fence, then load the flag: one of the two
            // drains sees the G.
            // SAFETY: every G in the queue comes with the queue's reference.
            self.global.drain(|g| unsafe { g::drop_ref(g) });
            return;
        }
        self.start_idle();
    }

    /// Go's `startIdle` (inside `injectglist`, proc.go): a G was put on the global queue by a
    /// thread holding no P; if a P is idle, start one M on it, *not* spinning, which runs the G
    /// from the global queue. The caller has fenced between its push and this.
    ///
    /// Why not `wakep`: a spinning M is one sent to look for work, and when it finds some it
    /// stops spinning and, as the last spinner, wakes another spinning M for the P still idle
    /// (`resetspinning`), since there may be more. That suits a G readied on a busy P, where
    /// more work is likely to follow; for a G woken from outside (each message from a tokio
    /// task to a G) it kept a chain of spinning Ms waking each other, most of which found
    /// nothing and went back to sleep: a G ↔ tokio-task ping-pong woke ~1.25 threads per
    /// message, every one a spinning M (`tests/cross_executor.rs`; with this, 0.5-1, none
    /// spinning). Go takes this path for every G readied without a P (the netpoller's and
    /// sysmon's `injectglist`).
    ///
    /// No G is stranded: if no P is idle (`npidle` read after the push and fence), every P is
    /// owned by an M that looks at the global queue under the scheduler lock before giving its
    /// P up; if the P was taken meanwhile (`startm` finds none), its new owner looks at the
    /// global queue before it sleeps. A spinning M that exists does not matter either way: a G
    /// taken by it leaves the started M nothing, and that M sleeps again (Go accepts the same).
    pub(crate) fn start_idle(&self) {
        if self.idle.npidle() == 0 {
            return;
        }
        self.startm(None, Spinning::No);
    }

    /// `wakep`: if a P is idle and no M is spinning, start a spinning M on it.
    pub(crate) fn wakep(&self) {
        // Pairs with the fence an M runs between leaving the spinning state and re-checking the
        // queues (see the module docs).
        fence(SeqCst);
        if self.idle.npidle() == 0 {
            return;
        }
        if self.idle.nmspinning() != 0 || !self.idle.first_spinner() {
            return;
        }
        self.startm(None, Spinning::Yes);
    }

    /// `startm`: runs an M on P `p` (or on an idle P, if `None`): a sleeping M if there is one,
    /// else a new thread. A spinning M was already counted in `nmspinning` by the caller; if
    /// no P can be had, that count is given back.
    pub(crate) fn startm(&self, p: Option<usize>, spinning: Spinning) {
        if self.config.bubble.is_some() {
            // A bubble runs on its `block_on` thread alone: it never starts an M. (It gets here
            // only as that thread leaves `block_on` with Gs still queued: they stay queued
            // until the runtime drops them.)
            if let Some(p) = p {
                self.pidleput_locked(&mut self.idle.lock(), p);
            }
            if spinning == Spinning::Yes {
                self.idle.spinning_stop();
            }
            return;
        }
        let mut idle = self.idle.lock();
        let p = match p {
            Some(p) => p,
            None => match self.pidleget_locked(&mut idle) {
                Some(p) => p,
                None => {
                    drop(idle);
                    if spinning == Spinning::Yes {
                        self.idle.spinning_stop();
                    }
                    return;
                }
            },
        };
        // The M asleep in the netpoller first: it is asleep already, and handing it the P keeps
        // the threads that run Gs as few as the Ps in use. Go's `startm` takes an M from
        // `midle` only, and the M in the poller stays a third thread beside two busy Ps: each
        // burst of I/O wakes it, it finds no idle P, queues the Gs globally and sleeps again,
        // while the client of an HTTP server on the same two cores waits for a CPU. With the
        // netpoller's M taken first, a busy runtime's Ms poll the network when they run dry
        // (tokio's workers do the same: the one parked on the I/O driver is a sleeper like the
        // others), and the next M to run out of work sleeps in the poller again. What it
        // costs: while every P is busy nobody sleeps in the poller, so I/O that becomes ready
        // waits for an M to run dry, for a P's 61st schedule (`findrunnable` polls then), or
        // for sysmon's poll after 10 ms, where Go's poller M would put it on the global queue
        // at once. wrk against goro::hyper, 64 connections, 2 Ps on 2 shared cores: p99
        // 4.3-4.4 ms against 4.8-5.1 without (tokio: 4.2-4.3), in 4 alternations.
        let (m, in_poller) = match idle.take_netpoller() {
            Some(m) => (Some(m), true),
            None => (idle.mget(), false),
        };
        let Some(m) = m else {
            drop(idle);
            return self.newm(p, spinning);
        };
        self.count_wakeup(spinning);
        m.hand(p, spinning);
        drop(idle);
        if in_poller {
            self.netpoll.wake();
        } else {
            m.parker.unpark();
        }
    }

    fn count_wakeup(&self, spinning: Spinning) {
        self.stats.thread_wakeups.fetch_add(1, Relaxed);
        if spinning == Spinning::Yes {
            self.stats.spinning_wakeups.fetch_add(1, Relaxed);
        }
    }

    /// `newm`: a new thread that starts as an M holding `p`.
    fn newm(&self, p: usize, spinning: Spinning) {
        // `&self` is alive, so the `Arc` it lives in is.
        let shared = self.me.upgrade().expect("goro: a runtime's state outside its Arc");
        let mstart = self.mstart;
        let spec = Spec {
            name: &self.config.thread_name,
            stack_size: self.config.stack_size,
            max_threads: self.config.max_threads,
        };
        match self.threads.start(spec, move || mstart(shared, p, spinning)) {
            Ok(()) => {
                self.count_wakeup(spinning);
                return;
            }
            Err(Refused::Closed) => {}
            // Go throws here ("thread exhaustion"); a library should not abort the process.
            Err(Refused::Failed(msg)) => crate::config::warn_once(&msg),
        }
        if spinning == Spinning::Yes {
            self.idle.spinning_stop();
        }
        // The P goes to an M that went to sleep since `startm` looked; else back to the idle
        // list, with its work owed to the next M that would sleep (or to the one asleep in the
        // netpoller, which is on no list).
        let mut idle = self.idle.lock();
        if let Some(m) = idle.mget() {
            self.count_wakeup(Spinning::No);
            m.hand(p, Spinning::No);
            drop(idle);
            m.parker.unpark();
            return;
        }
        self.pidleput_locked(&mut idle, p);
        idle.want_m();
        drop(idle);
        self.netpoll.wake();
    }

    /// Takes an idle P (Go's `pidleget`), under the scheduler lock.
    pub(crate) fn pidleget_locked(&self, idle: &mut Locked<'_>) -> Option<usize> {
        let p = idle.pidleget()?;
        self.allp[p].status.store(p::P_RUNNING, Relaxed);
        self.wake_sysmon();
        Some(p)
    }

    /// A P went to work: if sysmon sleeps because every P was idle, wake it (the SeqCst pair:
    /// sysmon sets `waiting` then re-reads `npidle`; we lower `npidle` then read `waiting`).
    #[inline]
    pub(crate) fn wake_sysmon(&self) {
        // No sysmon runs under loom.
        #[cfg(not(loom))]
        if self.sysmon.waiting.load(SeqCst) && self.sysmon.waiting.swap(false, SeqCst) {
            self.tick_coarse_ms();
            self.sysmon.parker.unpark();
        }
    }

    pub(crate) fn pidleget(&self) -> Option<usize> {
        self.pidleget_locked(&mut self.idle.lock())
    }

    /// Puts P `p` on the idle list (Go's `pidleput`), under the scheduler lock.
    pub(crate) fn pidleput_locked(&self, idle: &mut Locked<'_>, p: usize) {
        if self.allp[p].status.load(Acquire) == p::P_DETACHED {
            // An M that missed sysmon's detach of its P gives it up (see `MCtx::check_detached`):
            // a spare has taken its place, so it goes out of use, not to an M or the idle list.
            // Exact under the lock, which `sysmon::detach` holds for its CAS. Its ring is empty:
            // the M gives a P up when it found nothing there, and only that M pushes there.
            debug_assert!(self.allp[p].runq.is_empty(), "goro: Gs left on a detached P");
            self.allp[p].status.store(p::P_SPARE, Release);
            idle.spare_put(p);
            return;
        }
        if let Some(m) = idle.waiter_get() {
            // An M back from a syscall waits for a P: it gets this one.
            self.allp[p].status.store(p::P_RUNNING, Relaxed);
            m.hand(p, Spinning::No);
            m.parker.unpark();
            return;
        }
        self.allp[p].status.store(P_IDLE, Relaxed);
        idle.pidleput(p);
    }

    /// [`pidleput_locked`](Self::pidleput_locked), taking the lock (the loom models' Ms).
    #[cfg(all(test, loom))]
    pub(crate) fn pidleput(&self, p: usize) {
        self.pidleput_locked(&mut self.idle.lock(), p);
    }

    /// `handoffp`: P `p` loses its M (the M leaves `block_on`, or will block). If it has work,
    /// start an M for it; if nobody is looking for work, start a spinning one; else idle it.
    pub(crate) fn handoffp(&self, p: usize) {
        crate::trace::handoff(p);
        if !self.allp[p].runq.is_empty() || !self.global.is_empty() {
            self.stats.handoffs.fetch_add(1, Relaxed);
            self.startm(Some(p), Spinning::No);
            return;
        }
        if self.idle.nmspinning() + self.idle.npidle() == 0 && self.idle.first_spinner() {
            self.startm(Some(p), Spinning::Yes);
            return;
        }
        let mut idle = self.idle.lock();
        // Re-check under the lock: a global push that saw no idle P relies on us.
        if !self.global.is_empty() {
            drop(idle);
            self.startm(Some(p), Spinning::No);
            return;
        }
        self.pidleput_locked(&mut idle, p);
    }

    /// Whether any queue of this runtime holds a G (the spinner's last look before sleeping).
    pub(crate) fn any_work(&self) -> bool {
        !self.global.is_empty() || self.allp.used().iter().any(|p| !p.runq.is_empty())
    }

    /// Live Gs, counting each main G inside `block_on` (Go counts main too).
    pub(crate) fn num_goroutine(&self) -> usize {
        let dead: u64 = self.allp.iter().map(|p| p.stats.dead_pending.load(Relaxed)).sum();
        (self.allgs.len() + self.mains.count()).saturating_sub(dead as usize)
    }

    /// Unlinks every P's batch of finished Gs (shutdown, before draining `allgs`; no M runs,
    /// so every core is in its P).
    pub(crate) fn flush_all_dead(&self) {
        for p in self.allp.iter() {
            if let Some(mut core) = p.try_take_core() {
                let batch = core.dead.take();
                p.put_core(core);
                crate::g::Schedule::unlink_batch(self, p.id, batch);
            }
        }
    }

    /// Ends the run with `ending`, unless it ended already (the first ending wins): wakes the
    /// Ms inside `block_on` (they return it) and the threads waiting in
    /// `Runtime::poll_ending`. Returns whether it was first.
    pub(crate) fn end_run(&self, ending: Ending) -> bool {
        let Some(waiters) = self.fatal.end(ending) else { return false };
        for m in self.mains.snapshot() {
            m.wake_for_ending();
        }
        self.netpoll.wake();
        // Outside the lock: a waker is the waiting executor's code.
        waiters.into_iter().for_each(std::task::Waker::wake);
        true
    }
}
