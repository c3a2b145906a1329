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

use crate::g::allgs::AllGs;
use crate::g::gfree::GlobalFree;
use crate::g::raw::{self, Header};
use crate::g::{self, GPtr, JoinHandle};
use crate::globrunq::GlobalQueue;
use crate::loom::{fence, thread, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering::*};
use crate::m::{self, M};
use crate::netpoll::Netpoll;
use crate::p::{self, RandomOrder, P, P_DETACHED, P_IDLE};
use crate::park::Parker;
use crate::timer::Nanos;
use crate::{config::Config, context};
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

/// Where [`Shared::runqput`] puts a G in the current P's queue (Go's `next` argument), and
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

/// The idle lists, under the scheduler lock (Go's `sched.lock`).
pub(crate) struct Idle {
    /// Idle Ps (Go's `sched.pidle`).
    pub(crate) pidle: Vec<usize>,
    /// Sleeping Ms (Go's `sched.midle`).
    pub(crate) midle: Vec<StdArc<M>>,
    /// Ms back from a syscall whose P was retaken, waiting for one: an idle P goes to them
    /// first (Go puts their G on the global queue instead; a future cannot leave its M
    /// mid-poll, so the M waits).
    pub(crate) syscall_waiters: Vec<StdArc<M>>,
    /// Unused P slots, for replacing a P whose M is stuck in one poll (`P_SPARE`).
    pub(crate) spare: Vec<usize>,
}

/// The part of sysmon the scheduler talks to.
pub(crate) struct SysmonShared {
    /// Set while sysmon sleeps until woken (every P idle); whoever takes an idle P wakes it.
    pub(crate) waiting: AtomicBool,
    pub(crate) parker: Parker,
    pub(crate) stop: AtomicBool,
    /// Set once sysmon's thread was started (lazily: with the runtime's first work).
    pub(crate) started: AtomicBool,
    pub(crate) thread: Mutex<Option<crate::sysmon::Sysmon>>,
}

pub(crate) struct Shared {
    /// `procs` Ps in use at any time, plus spare slots (see `Idle::spare`).
    pub(crate) ps: Box<[P]>,
    pub(crate) procs: usize,
    /// P slots ever used: `procs`, plus the spares that have replaced a detached P.
    pub(crate) slots_used: AtomicUsize,
    pub(crate) order: RandomOrder,
    pub(crate) global: GlobalQueue<Header>,
    pub(crate) allgs: AllGs,
    pub(crate) gfree: GlobalFree,
    pub(crate) idle: Mutex<Idle>,
    pub(crate) npidle: CachePadded<AtomicUsize>,
    pub(crate) nmspinning: CachePadded<AtomicUsize>,
    /// Ms sleeping in `stopm` (for schedtrace and metrics).
    pub(crate) nmidle: AtomicUsize,
    pub(crate) shutdown: AtomicBool,
    pub(crate) goidgen: AtomicU64,
    pub(crate) config: Config,
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
    /// `Idle::syscall_waiters.len()`, readable without the lock: `findrunnable` looks at it
    /// every 61st tick to give its P to a waiting M (see `MCtx::handoff_to_syscall_waiter`).
    pub(crate) syscall_waiting: AtomicUsize,
    /// Gs spawned by threads holding no P of this runtime (the Ps count the others).
    pub(crate) spawned_off_p: AtomicU64,
    pub(crate) start: Instant,
    /// The netpoller, also the sleep of the last idle M while timers are pending.
    pub(crate) netpoll: Netpoll,
    pub(crate) sysmon: SysmonShared,
    /// Polls that blocked their thread long enough for sysmon to hand their P off.
    pub(crate) blocked_polls: AtomicU64,
    /// Preemption requests sysmon made.
    pub(crate) preemptions: AtomicU64,
    /// The P slot [`Shared::timer_home`] returned last (a hint).
    timer_home: AtomicUsize,
    /// The goid of the main G of `#[goro::main]`/`#[goro::test]` (`entry`), for the dump; 0
    /// while there is none.
    pub(crate) main_goid: AtomicU64,
    /// Polls of the main futures of `block_on` (for `checkdead`'s activity count).
    pub(crate) main_polls: AtomicU64,
    /// Set once the run ended early (a deadlock, an unhandled panic), with the reason: see
    /// `fatal`.
    pub(crate) ended: AtomicBool,
    pub(crate) fatal: Mutex<crate::fatal::Fatal>,
    /// Set while a thread waits for the runtime's main G (`Runtime::poll_ending`).
    pub(crate) main_waiting: AtomicBool,
    /// Milliseconds since the runtime started, updated by sysmon every round: the clock of
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
            // Popped from the back: P0 is handed out first.
            idle: Mutex::new(Idle {
                pidle: (0..procs).rev().collect(),
                midle: Vec::new(),
                syscall_waiters: Vec::new(),
                spare: (procs..slots).rev().collect(),
            }),
            npidle: CachePadded::new(AtomicUsize::new(procs)),
            nmspinning: CachePadded::new(AtomicUsize::new(0)),
            nmidle: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            goidgen: AtomicU64::new(1),
            config,
            threads: Mutex::new(Vec::new()),
            mcount: AtomicUsize::new(0),
            nthreads: AtomicUsize::new(0),
            nmains: AtomicUsize::new(0),
            mains: Mutex::new(Vec::new()),
            handoffs: AtomicU64::new(0),
            thread_wakeups: AtomicU64::new(0),
            spinning_wakeups: AtomicU64::new(0),
            syscall_waiting: AtomicUsize::new(0),
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
            blocked_polls: AtomicU64::new(0),
            preemptions: AtomicU64::new(0),
            timer_home: AtomicUsize::new(0),
            main_goid: AtomicU64::new(0),
            main_polls: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            fatal: Mutex::new(crate::fatal::Fatal::default()),
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

    /// Moves the coarse clock to now (sysmon, every round).
    pub(crate) fn tick_coarse_ms(&self) {
        let ms = self.start.elapsed().as_millis();
        self.coarse_ms.store(u32::try_from(ms).unwrap_or(u32::MAX), Relaxed);
    }

    /// Nanoseconds since the runtime started, at least 1 (Go's `nanotime`; 0 means "no timer").
    #[inline]
    pub(crate) fn nanotime(&self) -> Nanos {
        self.nanos_at(Instant::now())
    }

    /// `t` on the runtime's clock (instants before the start map to 1).
    pub(crate) fn nanos_at(&self, t: Instant) -> Nanos {
        let d = t.saturating_duration_since(self.start);
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX / 2).max(1)
    }

    /// Go's `wakeNetPoller`: a timer due at `when` became the earliest of its heap. If an M is
    /// asleep in the netpoller past `when`, wake it so it sleeps again with the new deadline;
    /// if none is, make sure an M is looking for work (it will see the timer before it sleeps).
    pub(crate) fn wake_netpoller(&self, when: Nanos) {
        // Pairs with the fence between publishing `lastpoll = 0` and the last look at the
        // timers in `findrunnable`: either the sleeper sees this timer, or we see it asleep.
        fence(SeqCst);
        if self.netpoll.lastpoll.load(SeqCst) == 0 {
            let until = self.netpoll.poll_until.load(SeqCst);
            if until == 0 || until > when {
                self.netpoll.wake();
            }
        } else {
            self.wakep();
        }
    }

    /// `newproc`: creates a G running `future` and makes it runnable.
    ///
    /// On an M of this runtime with a P, the G goes to that P's `runnext` (Go does the same: a
    /// new G runs soon, on the P that created it, warm in cache), and another M is woken to
    /// steal the rest. Anywhere else it goes to the global queue.
    pub(crate) fn spawn<F>(
        self: &StdArc<Self>,
        future: F,
        location: &'static Location<'static>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let g = context::with(|ctx| {
            let parent = context::current_goid(ctx, self);
            match context::current_p_of(ctx, self) {
                Some(pid) => {
                    let p = &self.ps[pid];
                    // SAFETY: this thread owns `p`; allocation polls and drops nothing.
                    let (g, reused) = unsafe {
                        p.with_local(|l| {
                            let goid = l.next_goid(&self.goidgen);
                            raw::allocate(future, self, goid, parent, location, Some(&mut l.gfree))
                        })
                    };
                    p::bump(&p.stats.spawned, 1);
                    if reused {
                        p::bump(&p.stats.gfree_reused, 1);
                    }
                    g
                }
                None => {
                    self.spawned_off_p.fetch_add(1, Relaxed);
                    let goid = self.goidgen.fetch_add(1, Relaxed);
                    raw::allocate(future, self, goid, parent, location, None).0
                }
            }
        });
        if !self.allgs.insert(g) {
            // Shutting down: the G never runs. `shutdown` consumes the list's reference (never
            // handed to a list), `drop_ref` the run queue's; the JoinHandle's remains.
            // SAFETY: we own those references and no M will see this G.
            unsafe {
                g::shutdown(g);
                g::drop_ref(g);
            }
        } else {
            self.runqput(g, Put::Spawn);
        }
        // SAFETY: `g` runs a future with output `F::Output`, and its join reference is handed over.
        unsafe { JoinHandle::from_raw(g) }
    }

    /// `goready`: a waker found `g` waiting and made it runnable; the queue reference is ours.
    ///
    /// Woken on an M of this runtime, it goes to that P's `runnext`, so a channel send wakes
    /// its receiver straight into the next slot and a ping-pong pair stays on one P.
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
        self.runqput(g, Put::Next);
    }

    /// Go's `runqput` on the current P if this thread holds one of ours, then `wakep` if there
    /// is stealable work (a G in the ring; a G alone in `runnext` is sysmon's to watch, see
    /// [`ready`](Self::ready)), and always for a spawn ([`Put::Spawn`]), as Go's `newproc` does.
    /// On a thread holding no P of ours (a tokio worker, a plain thread, sysmon, an M without
    /// a P), `globrunqput` then [`start_idle`](Self::start_idle), as Go's `injectglist` does.
    ///
    /// A P that sysmon detached (its M is stuck in a poll that blocks the thread) cannot run
    /// its queue: a G made runnable by that stuck poll (a blocking receive that frees a
    /// sender, a spawn) goes to the global queue instead, where a running P finds it.
    pub(crate) fn runqput(&self, g: GPtr, put: Put) {
        let local = context::with(|ctx| context::current_p_of(ctx, self))
            .filter(|&pid| self.ps[pid].status.load(Relaxed) != P_DETACHED);
        let Some(pid) = local else {
            self.global.push(g);
            // Pairs with the fence after shutdown's store of its flag (see below), and orders
            // the push before `start_idle`'s read of `npidle` (see the module docs).
            fence(SeqCst);
            if self.shutdown.load(SeqCst) {
                // Shutdown may have drained the global queue already: drain it again, or this
                // G's queue reference would keep it (and the runtime) alive forever. Shutdown
                // stores the flag, fences, then drains; we push, fence, then load the flag: one
                // of the two drains sees the G.
                // SAFETY: every G in the queue comes with the queue's reference.
                self.global.drain(|g| unsafe { g::drop_ref(g) });
                return;
            }
            self.start_idle();
            return;
        };
        let p = &self.ps[pid];
        // SAFETY: this thread owns `p`.
        let (stealable, overflow) = unsafe {
            match put {
                Put::Next | Put::Spawn => p.runq.push_next(g),
                Put::Back => (true, p.runq.push_back(g)),
            }
        };
        if let Some(batch) = overflow {
            p::bump(&p.stats.local_runq_overflows, 1);
            self.global.push_batch(batch.iter());
        }
        if stealable || put == Put::Spawn {
            self.wakep();
        }
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
        if self.npidle.load(SeqCst) == 0 {
            return;
        }
        self.startm(None, false);
    }

    /// `wakep`: if a P is idle and no M is spinning, start a spinning M on it.
    pub(crate) fn wakep(&self) {
        // Pairs with the fence an M runs between leaving the spinning state and re-checking the
        // queues (see the module docs).
        fence(SeqCst);
        if self.npidle.load(SeqCst) == 0 {
            return;
        }
        if self.nmspinning.load(SeqCst) != 0 || self.nmspinning.compare_exchange(0, 1, SeqCst, SeqCst).is_err() {
            return;
        }
        self.startm(None, true);
    }

    /// `startm`: runs an M on P `p` (or on an idle P, if `None`): a sleeping M if there is one,
    /// else a new thread. With `spinning`, the caller has already counted the M in `nmspinning`;
    /// if no P can be had, that count is given back.
    pub(crate) fn startm(&self, p: Option<usize>, spinning: bool) {
        let mut idle = self.idle.lock();
        let p = match p {
            Some(p) => p,
            None => match self.pidleget_locked(&mut idle) {
                Some(p) => p,
                None => {
                    drop(idle);
                    if spinning {
                        self.nmspinning.fetch_sub(1, SeqCst);
                    }
                    return;
                }
            },
        };
        if let Some(m) = idle.midle.pop() {
            self.nmidle.fetch_sub(1, Relaxed);
            self.count_wakeup(spinning);
            m.hand(p, spinning);
            drop(idle);
            m.parker.unpark();
            return;
        }
        drop(idle);
        self.newm(p, spinning);
    }

    fn count_wakeup(&self, spinning: bool) {
        self.thread_wakeups.fetch_add(1, Relaxed);
        if spinning {
            self.spinning_wakeups.fetch_add(1, Relaxed);
        }
    }

    /// Starts sysmon if it has not started yet (Go starts it with the program; goro with a
    /// runtime's first work, so that building a runtime starts no thread). Not under loom:
    /// models call sysmon's functions themselves.
    pub(crate) fn ensure_sysmon(&self) {
        #[cfg(not(loom))]
        if !self.sysmon.started.load(Acquire) && !self.sysmon.started.swap(true, AcqRel) {
            match crate::sysmon::Sysmon::start(self.arc(), self.config.schedtrace) {
                Ok(s) => *self.sysmon.thread.lock() = Some(s),
                Err(e) => crate::config::warn_once(&format!(
                    "goro: cannot start the sysmon thread ({e}); blocked Ms will not be handed off"
                )),
            }
        }
    }

    /// `newm`: a new thread that starts as an M holding `p`.
    fn newm(&self, p: usize, spinning: bool) {
        self.ensure_sysmon();
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
            match b.spawn(move || m::mstart(shared, p, spinning)) {
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
            // Go throws here; a library should not abort the process. The P goes back to the
            // idle list and the work waits for a running M.
            crate::config::warn_once(&msg);
        }
        if spinning {
            self.nmspinning.fetch_sub(1, SeqCst);
        }
        self.pidleput(p);
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
    pub(crate) fn pidleget_locked(&self, idle: &mut Idle) -> Option<usize> {
        let p = idle.pidle.pop()?;
        self.npidle.fetch_sub(1, SeqCst);
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
            self.sysmon.parker.unpark();
        }
    }

    pub(crate) fn pidleget(&self) -> Option<usize> {
        self.pidleget_locked(&mut self.idle.lock())
    }

    /// Puts P `p` on the idle list (Go's `pidleput`), under the scheduler lock.
    pub(crate) fn pidleput_locked(&self, idle: &mut Idle, p: usize) {
        if let Some(m) = idle.syscall_waiters.pop() {
            // An M back from a syscall waits for a P: it gets this one.
            self.syscall_waiting.fetch_sub(1, Relaxed);
            self.ps[p].status.store(p::P_RUNNING, Relaxed);
            m.hand(p, false);
            m.parker.unpark();
            return;
        }
        self.ps[p].status.store(P_IDLE, Relaxed);
        idle.pidle.push(p);
        self.npidle.fetch_add(1, SeqCst);
    }

    pub(crate) fn pidleput(&self, p: usize) {
        self.pidleput_locked(&mut self.idle.lock(), p);
    }

    /// `handoffp`: P `p` loses its M (the M leaves `block_on`, or will block). If it has work,
    /// start an M for it; if nobody is looking for work, start a spinning one; else idle it.
    pub(crate) fn handoffp(&self, p: usize) {
        if !self.ps[p].runq.is_empty() || !self.global.is_empty() {
            self.handoffs.fetch_add(1, Relaxed);
            self.startm(Some(p), false);
            return;
        }
        if self.nmspinning.load(SeqCst) + self.npidle.load(SeqCst) == 0
            && self.nmspinning.compare_exchange(0, 1, SeqCst, SeqCst).is_ok()
        {
            self.startm(Some(p), true);
            return;
        }
        let mut idle = self.idle.lock();
        // Re-check under the lock: a global push that saw no idle P relies on us.
        if !self.global.is_empty() {
            drop(idle);
            self.startm(Some(p), false);
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

    /// Unlinks every P's batch of finished Gs (shutdown, before draining `allgs`).
    ///
    /// # Safety
    /// No M of the runtime runs.
    pub(crate) unsafe fn flush_all_dead(&self) {
        for p in self.ps.iter() {
            // SAFETY: no M runs, so this thread is the only user of every P.
            unsafe { crate::g::flush_dead(self, p) };
        }
    }
}
