//! The scheduler's shared state (Go's `schedt` plus `allp`): the Ps, the global run queue, the
//! idle P and M lists, and the operations that move work and Ms around: `newproc` (spawn),
//! `goready` ([`Shared::ready`]), `runqput`, `wakep`, `start_idle`, `startm`, `handoffp`.
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
//!
//! The loom models in `loom_tests::sched` run these paths against each other.

use crate::fatal::{Ending, Fatal};
use crate::g::allgs::AllGs;
use crate::g::gfree::GlobalFree;
use crate::g::raw::{self, Header};
use crate::g::{self, GPtr, JoinHandle};
use crate::globrunq::GlobalQueue;
pub(crate) use crate::idle::Spinning;
use crate::idle::{Idle, Locked};
use crate::loom::{fence, thread, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering::*};

use crate::config::Config;
use crate::netpoll::Netpoll;
use crate::p::{self, RandomOrder, P, P_IDLE};
use crate::park::Parker;
use crate::timer::{Heaps, Nanos, TimerHeap};
use crossbeam_utils::CachePadded;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc as StdArc;
use std::time::Instant;

/// Spare P slots for a runtime of `procs` Ps: how many Ps can be stuck in a blocking poll at
/// once and still be replaced (see `sysmon`).
fn spare_slots(procs: usize) -> usize {
    (4 * procs).clamp(8, 256)
}

/// Where [`MCtx::runqput`](crate::m::MCtx::runqput) puts a G in the current P's queue (Go's `next` argument), and
/// whether an idle P is woken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// A woken G: the `runnext` slot, pushing any G already there to the back of the ring; it
    /// runs next, warm in cache, inheriting the time slice. A P is woken only if a G was
    /// pushed to the ring (see [`Shared::ready`]).
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

pub(crate) struct Shared {
    /// `procs` Ps in use at any time, plus spare slots (see `idle`'s spare list).
    pub(crate) ps: Box<[P]>,
    pub(crate) procs: usize,
    /// P slots ever used: `procs`, plus the spares that have replaced a detached P.
    pub(crate) slots_used: AtomicUsize,
    pub(crate) order: RandomOrder,
    pub(crate) global: GlobalQueue<Header>,
    pub(crate) allgs: AllGs,
    pub(crate) gfree: GlobalFree,
    /// The idle Ps and Ms, the spinning count, the syscall waiters, the spare slots, and the
    /// scheduler lock over them (see `idle`).
    pub(crate) idle: Idle,
    pub(crate) shutdown: AtomicBool,
    pub(crate) goidgen: AtomicU64,
    /// Read-only, and read on hot paths (a bubble's `nanotime`; `findrunnable` reads its M's
    /// copy of the bubble): on a line of its own, or the counters the Ms write beside it would
    /// make each of those reads a miss (W1 and W3 ran 16% slower when they shared one).
    pub(crate) config: CachePadded<Config>,
    /// Threads this runtime started (Ms), joined at shutdown.
    pub(crate) threads: Mutex<Vec<thread::JoinHandle<()>>>,
    /// Ms started so far (ids), and Ms alive now.
    pub(crate) mcount: AtomicUsize,
    pub(crate) nthreads: AtomicUsize,
    /// Threads inside `block_on` right now (each is an M, and its future a main G).
    pub(crate) nmains: AtomicUsize,
    /// Their main futures, for the dump.
    pub(crate) mains: Mutex<Vec<StdArc<crate::m::MainState>>>,
    pub(crate) handoffs: AtomicU64,
    /// Ms that `startm` woke from the idle list or started as new threads, each handed a P, and
    /// how many of them were spinning ones (see `Metrics::thread_wakeups`).
    pub(crate) thread_wakeups: AtomicU64,
    pub(crate) spinning_wakeups: AtomicU64,
    /// Gs spawned by threads holding no P of this runtime (the Ps count the others).
    pub(crate) spawned_off_p: AtomicU64,
    pub(crate) start: Instant,
    /// The netpoller, also the sleep of the last idle M while timers are pending.
    pub(crate) netpoll: Netpoll,
    pub(crate) sysmon: SysmonShared,
    /// Ms inside `goro::syscall` that no P shows (see `idle::SyscallsWithoutP`).
    pub(crate) syscalls_without_p: crate::idle::SyscallsWithoutP,
    /// Polls that blocked their thread long enough for sysmon to hand their P off.
    pub(crate) blocked_polls: AtomicU64,
    /// Preemption requests sysmon made.
    pub(crate) preemptions: AtomicU64,
    /// Times sysmon moved work off a stuck poll's P (`sysmon::move_work_off_stuck_polls`).
    pub(crate) stuck_poll_moves: AtomicU64,
    /// The P slot [`Shared::timer_home`] returned last (a hint).
    timer_home: AtomicUsize,
    /// The goid of the main G of `#[goro::main]`/`#[goro::test]` (`entry`), for the dump; 0
    /// while there is none.
    pub(crate) main_goid: AtomicU64,
    /// Polls of the main futures of `block_on` (for `checkdead`'s activity count).
    pub(crate) main_polls: AtomicU64,
    /// Set once the run ended early (a deadlock, an unhandled panic), with the reason: see
    /// `fatal`.
    pub(crate) fatal: Fatal,
    /// Set while a thread waits for the runtime's main G (`Runtime::poll_ending`).
    pub(crate) main_waiting: AtomicBool,
    /// Milliseconds since the runtime started, moved by sysmon every round (and see
    /// [`Shared::tick_coarse_ms`]): the clock of
    /// `Header::parked_at`, cheap enough to read at every park (Go stamps `waitsince` lazily
    /// for the same reason).
    coarse_ms: CachePadded<AtomicU32>,
}

impl Shared {
    pub(crate) fn new(config: Config) -> std::io::Result<Shared> {
        let procs = config.max_procs;
        let slots = procs + spare_slots(procs);
        Ok(Shared {
            ps: (0..slots).map(P::new).collect(),
            procs,
            slots_used: AtomicUsize::new(procs),
            order: RandomOrder::new(slots),
            global: GlobalQueue::new(),
            allgs: AllGs::new(procs),
            gfree: GlobalFree::default(),
            // P0 is handed out first.
            idle: Idle::new(procs, slots),
            shutdown: AtomicBool::new(false),
            goidgen: AtomicU64::new(1),
            config: CachePadded::new(config),
            threads: Mutex::new(Vec::new()),
            mcount: AtomicUsize::new(0),
            nthreads: AtomicUsize::new(0),
            nmains: AtomicUsize::new(0),
            mains: Mutex::new(Vec::new()),
            handoffs: AtomicU64::new(0),
            thread_wakeups: AtomicU64::new(0),
            spinning_wakeups: AtomicU64::new(0),
            spawned_off_p: AtomicU64::new(0),
            start: Instant::now(),
            netpoll: Netpoll::new()?,
            sysmon: SysmonShared {
                waiting: AtomicBool::new(false),
                parker: Parker::new(),
                stop: AtomicBool::new(false),
                started: AtomicBool::new(false),
                thread: Mutex::new(None),
            },
            syscalls_without_p: Default::default(),
            blocked_polls: AtomicU64::new(0),
            preemptions: AtomicU64::new(0),
            stuck_poll_moves: AtomicU64::new(0),
            timer_home: AtomicUsize::new(0),
            main_goid: AtomicU64::new(0),
            main_polls: AtomicU64::new(0),
            fatal: Fatal::default(),
            main_waiting: AtomicBool::new(false),
            coarse_ms: CachePadded::new(AtomicU32::new(0)),
        })
    }

    /// The P slots that have ever been in use (the others are untouched spares).
    #[inline]
    pub(crate) fn used_ps(&self) -> &[P] {
        &self.ps[..self.slots_used.load(Acquire)]
    }

    /// A P slot in use, for timers that have no P of their own to go to: those armed off any
    /// P, and those moved off a slot that went out of use (see `timer`'s "Timers move with
    /// their P").
    pub(crate) fn timer_home(&self) -> usize {
        let hint = self.timer_home.load(Relaxed);
        if p::in_use(self.ps[hint].status.load(Relaxed)) {
            return hint;
        }
        // At least `procs` slots are in use at any time: `sysmon::detach` puts the spare into
        // use before it takes the stuck P out, so a reader that sees a P out of use (Acquire)
        // sees its replacement in use. (Every slot is scanned, not `used_ps`: `slots_used` is
        // read before the statuses and may lag behind the replacement.)
        let p = self.ps.iter().position(|p| p::in_use(p.status.load(Acquire))).expect("goro: no P slot in use");
        self.timer_home.store(p, Relaxed);
        p
    }

    /// Milliseconds since the runtime started, as of sysmon's last round (see `coarse_ms`).
    #[inline]
    pub(crate) fn coarse_ms(&self) -> u32 {
        self.coarse_ms.load(Relaxed)
    }

    /// Moves the coarse clock to now and returns it: sysmon, every round; whoever wakes sysmon
    /// from its sleep (the clock stood still while it slept, and a G about to park would be
    /// stamped with the time sysmon fell asleep); and the readers of wait times (the dump of a
    /// hung, idle program is read while sysmon sleeps). Never backwards: those may race.
    pub(crate) fn tick_coarse_ms(&self) -> u32 {
        let ms = u32::try_from(self.start.elapsed().as_millis()).unwrap_or(u32::MAX);
        self.coarse_ms.fetch_max(ms, Relaxed).max(ms)
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
            return b.nanos_at(self.start, t);
        }
        let d = t.saturating_duration_since(self.start);
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

    /// `newproc` from any thread: on an M of this runtime, [`MCtx::spawn`](crate::m::MCtx::spawn)
    /// (the G goes to that M's P); anywhere else, [`spawn_off_p`](Self::spawn_off_p).
    pub(crate) fn spawn<F>(
        self: &StdArc<Self>,
        future: F,
        location: &'static Location<'static>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::m::current(|ctx| match ctx.filter(|c| std::ptr::eq(&*c.shared, &**self)) {
            Some(ctx) => ctx.spawn(future, location),
            None => self.spawn_off_p(future, raw::NO_PARENT, location),
        })
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
        self.spawned_off_p.fetch_add(1, Relaxed);
        let goid = self.goidgen.fetch_add(1, Relaxed);
        let (g, _) = raw::allocate(future, self, &self.gfree, goid, parent, location, None);
        if self.admit(g) {
            self.globrunqput(g);
        }
        // SAFETY: `g` runs a future with output `F::Output`, and its join reference is handed over.
        unsafe { JoinHandle::from_raw(g) }
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

    /// `goready`: a waker found `g` waiting and made it runnable; the queue reference is ours.
    ///
    /// Woken on an M of this runtime, it goes to that P's `runnext`
    /// ([`MCtx::runqput`](crate::m::MCtx::runqput)), so a channel send wakes its receiver straight
    /// into the next slot and a ping-pong pair stays on one P; anywhere else, to the global
    /// queue ([`globrunqput`](Self::globrunqput)).
    ///
    /// Go's `ready` then always calls `wakep`, so that a woken G never waits for its waker to
    /// finish computing while a P idles: the spinning M steals `runnext` from a P that is
    /// still running after ~3 µs. goro keeps that guarantee, but wakes the P later, and only
    /// when it is needed: at once if the G displaced another into the stealable ring, else
    /// when sysmon finds the waker's poll still running a round later with the G still in
    /// `runnext` (`sysmon::wake_for_runnext`). Nearly every waker parks or yields right after
    /// its wake (a channel ping-pong, a producer filling a buffer), and its M then runs the G
    /// itself; waking a P for each of them cost W4 (ping-pong) +55% and W5 (SPSC) +82% on the
    /// 2-core machines here, a futex wake of an idle M for most messages. What it costs
    /// instead: a G woken by a waker that goes on computing waits up to one sysmon round
    /// (20 µs, backing off to 10 ms while nothing else happens) rather than Go's few µs.
    /// (goro once woke a P only on displacement, as tokio does for its LIFO slot, and such a
    /// G waited for the whole computation.)
    pub(crate) fn ready(&self, g: GPtr) {
        crate::m::current(|ctx| match ctx.filter(|c| std::ptr::eq(&*c.shared, self)) {
            Some(ctx) => ctx.runqput(g, Put::Next),
            None => self.globrunqput(g),
        })
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
        if self.shutdown.load(SeqCst) {
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
        if let Some(m) = idle.mget() {
            self.count_wakeup(spinning);
            m.hand(p, spinning);
            drop(idle);
            m.parker.unpark();
            return;
        }
        drop(idle);
        self.newm(p, spinning);
    }

    fn count_wakeup(&self, spinning: Spinning) {
        self.thread_wakeups.fetch_add(1, Relaxed);
        if spinning == Spinning::Yes {
            self.spinning_wakeups.fetch_add(1, Relaxed);
        }
    }

    /// `newm`: a new thread that starts as an M holding `p`.
    fn newm(&self, p: usize, spinning: Spinning) {
        let shared = self.arc();
        let mut threads = self.threads.lock();
        let refused = if self.shutdown.load(SeqCst) {
            None
        } else if self.nthreads.load(Relaxed) >= self.config.max_threads {
            Some(format!("goro: runtime exceeded {} threads (Builder::max_threads)", self.config.max_threads))
        } else {
            let id = self.mcount.fetch_add(1, Relaxed) + 1;
            let mut b = thread::Builder::new().name(format!("{}-{id}", self.config.thread_name));
            if let Some(size) = self.config.stack_size {
                b = b.stack_size(size);
            }
            self.nthreads.fetch_add(1, Relaxed);
            match b.spawn(move || crate::m::mstart(shared, p, spinning)) {
                Ok(h) => {
                    threads.push(h);
                    self.count_wakeup(spinning);
                    return;
                }
                Err(e) => {
                    self.nthreads.fetch_sub(1, Relaxed);
                    Some(format!("goro: failed to start an M thread: {e}"))
                }
            }
        };
        drop(threads);
        if let Some(msg) = refused {
            // Go throws here ("thread exhaustion"); a library should not abort the process.
            crate::config::warn_once(&msg);
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

    /// A strong handle on `self` (every `Shared` lives in an `Arc`).
    fn arc(&self) -> StdArc<Shared> {
        // SAFETY: `Shared` is only ever created inside an `Arc` (Runtime::new) and `&self`
        // proves that Arc is alive, so incrementing its count is sound.
        unsafe {
            StdArc::increment_strong_count(self as *const Shared);
            StdArc::from_raw(self as *const Shared)
        }
    }

    /// Takes an idle P (Go's `pidleget`), under the scheduler lock.
    pub(crate) fn pidleget_locked(&self, idle: &mut Locked<'_>) -> Option<usize> {
        let p = idle.pidleget()?;
        self.ps[p].status.store(p::P_RUNNING, Relaxed);
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
        if self.ps[p].status.load(Acquire) == p::P_DETACHED {
            // An M that missed sysmon's detach of its P gives it up (see `MCtx::check_detached`):
            // a spare has taken its place, so it goes out of use, not to an M or the idle list.
            // Exact under the lock, which `sysmon::detach` holds for its CAS. Its ring is empty:
            // the M gives a P up when it found nothing there, and only that M pushes there.
            debug_assert!(self.ps[p].runq.is_empty(), "goro: Gs left on a detached P");
            self.ps[p].status.store(p::P_SPARE, Release);
            idle.spare_put(p);
            return;
        }
        if let Some(m) = idle.waiter_get() {
            // An M back from a syscall waits for a P: it gets this one.
            self.ps[p].status.store(p::P_RUNNING, Relaxed);
            m.hand(p, Spinning::No);
            m.parker.unpark();
            return;
        }
        self.ps[p].status.store(P_IDLE, Relaxed);
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
        if !self.ps[p].runq.is_empty() || !self.global.is_empty() {
            self.handoffs.fetch_add(1, Relaxed);
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
        !self.global.is_empty() || self.used_ps().iter().any(|p| !p.runq.is_empty())
    }

    /// Live Gs, counting each main G inside `block_on` (Go counts main too).
    pub(crate) fn num_goroutine(&self) -> usize {
        let dead: u64 = self.ps.iter().map(|p| p.stats.dead_pending.load(Relaxed)).sum();
        (self.allgs.len() + self.nmains.load(Relaxed)).saturating_sub(dead as usize)
    }

    /// Unlinks every P's batch of finished Gs (shutdown, before draining `allgs`; no M runs,
    /// so every core is in its P).
    pub(crate) fn flush_all_dead(&self) {
        for p in self.ps.iter() {
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
        for m in self.mains.lock().clone() {
            m.wake_for_ending();
        }
        self.netpoll.wake();
        // Outside the lock: a waker is the waiting executor's code.
        waiters.into_iter().for_each(std::task::Waker::wake);
        true
    }
}

/// The timers' view of the runtime (see `timer`): one heap per P slot.
impl Heaps for Shared {
    #[inline]
    fn heap(&self, p: usize) -> &TimerHeap {
        &self.ps[p].timers
    }

    #[inline]
    fn heaps_used(&self) -> usize {
        self.slots_used.load(Acquire)
    }

    #[inline]
    fn slot_in_use(&self, p: usize) -> bool {
        p::in_use(self.ps[p].status.load(Relaxed))
    }

    fn timer_home(&self) -> usize {
        Shared::timer_home(self)
    }

    #[inline]
    fn current_p(&self) -> Option<usize> {
        crate::m::current(|ctx| ctx.and_then(|c| c.p_of(self)))
    }

    fn wake_netpoller(&self, when: Nanos) {
        Shared::wake_netpoller(self, when)
    }
}
