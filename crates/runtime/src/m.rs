//! M: an OS thread that runs Gs while it holds a P (Go's `m`), and everything an M does with
//! its P: the scheduling loop (`schedule`, `findrunnable`, `stopm`, `execute`), `newproc`'s and
//! `runqput`'s local half, entering and leaving `goro::syscall` (`entersyscall`,
//! `exitsyscall`), the poll-start and poll-end marks sysmon watches, and giving up a P that
//! sysmon detached. Every `impl MCtx` is here.
//!
//! An M owns a P by holding its [`PCore`] (see `p`'s module docs): [`MCtx::acquirep`] takes it
//! out of the P, [`MCtx::releasep`] puts it back, and every owner-only access goes through
//! [`MCtx::with_core`], a `RefCell` borrow that no G poll runs inside (a re-entrant borrow
//! would be a scheduler bug, and panics rather than aliasing).
//!
//! Two kinds of thread are Ms: threads the runtime starts ([`mstart`]), and any thread inside
//! `Runtime::block_on` (M0 in Go's terms), which also polls its main future whenever that future
//! is woken. Both run the same loop; [`MCtx::main`] is what tells them apart.
//!
//! Sleeping Ms wait in the idle-M list (`sched.midle`) for a hand-off: whoever wakes one
//! (`startm`) first gives it a P under the scheduler lock, then unparks it. A thread is never
//! destroyed while the runtime lives, so a burst of work reuses the Ms of the previous one.

use crate::bubble::{self, Bubble, Pick, DEADLOCK, ROOT_EXITED};
use crate::coop;
use crate::g::raw::{self, Who};
use crate::g::{self, GPtr, JoinHandle};
use crate::idle::{PWait, Spinning, M};
use crate::loom::{fence, AtomicU8, Ordering::*};
use crate::mains::MainState;
use crate::p::{self, PCore, P, P_DETACHED, P_RUNNING, P_SYSCALL};
use crate::runq;
use crate::sched::{Put, Shared};
use crate::timer;
use crate::WaitReason;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::Location;
use std::sync::Arc as StdArc;
use std::task::Waker;
use std::time::{Duration, Instant};

/// Consecutive `runnext` picks after which the ring gets a turn, so that two Gs that keep waking
/// each other into `runnext` cannot starve the Gs queued behind them. Go relies on sysmon's
/// 10 ms preemption for this; the bound makes it hold without waiting for sysmon.
const RUNNEXT_STREAK_MAX: u32 = 32;

/// How long a spinning M keeps watching the other Ps' rings after its steal passes found
/// nothing, before it gives its P up and sleeps (see [`MCtx::spin_for_ring_work`]).
const IDLE_SPIN: Duration = Duration::from_micros(3);

/// How long a woken main future waits for a P before it is polled without one
/// (see [`MCtx::acquirep_for_main`]): two time slices, sysmon's `BLOCKED_POLL`.
const MAIN_P_WAIT: Duration = Duration::from_millis(20);

/// What [`MCtx::spin_for_ring_work`] ended with.
enum Watch {
    /// A G taken from another P's ring.
    Stole(GPtr),
    /// Work turned up elsewhere (the global queue, our P's timers) or the runtime shuts down:
    /// look for it from the top.
    LookAgain,
    /// Nothing came in time, or the main future is pending (the caller returns to it).
    Nothing,
}

/// Where the code an M polls comes from (see [`MCtx::polled_origin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    /// A G, spawned here.
    Go(&'static Location<'static>),
    /// The main future of a `block_on` called here.
    Main(&'static Location<'static>),
}

/// Whether a G runs in the time slice of the G before it (Go's `inheritTime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slice {
    /// Taken from `runnext`: it goes on with the slice of the G that woke it.
    Inherit,
    /// A fresh slice: `schedtick` moves.
    Fresh,
}

/// What `findrunnable` found.
pub(crate) enum Found {
    G(GPtr, Slice),
    /// The main future was woken (M0 only).
    Main,
    /// The run ended early (M0 only): `block_on` returns the ending as a panic (see `fatal`).
    Ended,
    /// A synctest bubble is deadlocked (every G durably blocked, no timer): `block_on` fails
    /// with this message and the bubble's dump.
    BubbleDeadlock(&'static str),
    Shutdown,
}

/// What the M's sleep in the netpoller came to (`block_in_netpoll`).
enum NetpollBlock {
    /// This M did not poll (nothing to wait for, or another M polls): it sleeps in `stopm`.
    Skipped,
    /// It polled: look for work again (it holds a P, or may take one).
    LookAgain,
    /// It polled, and `findrunnable` returns this.
    Found(Found),
}

/// An M's own state, on its thread's stack, published through [`current`].
pub(crate) struct MCtx {
    pub(crate) shared: StdArc<Shared>,
    pub(crate) m: StdArc<M>,
    /// The owner-only half of the P this M holds (Go's `m.p`): see [`MCtx::with_core`].
    core: RefCell<Option<Box<PCore>>>,
    /// That P's index, for the many readers that need only that; written with `core`, by
    /// `acquirep` and `releasep` alone.
    p: Cell<Option<usize>>,
    /// Go's `m.spinning`.
    spinning: Cell<bool>,
    /// Set for an M inside `block_on`.
    main: Option<StdArc<MainState>>,
    /// The G being polled (Go's `m.curg`).
    pub(crate) curg: Cell<Option<GPtr>>,
    /// After the main future yields, how many Gs run before it is polled again (so that a main
    /// G looping on `yield_now` lets the queue run, as Go's `Gosched` does).
    main_defer: Cell<usize>,
    /// The runtime's synctest bubble, if it is one: `findrunnable` asks at every call, and a
    /// copy here costs no read of `Shared`.
    bubble: Option<StdArc<Bubble>>,
}

/// Runs `f` with `ctx` published as the current thread's M (Go's `getg().m`: the lookup through
/// which `go`, wakers, timers and G deallocation find the M they run on, and through it the P
/// it holds), then puts back what was published before, so that `block_on` may nest inside a
/// G. `ctx` holds no P yet; a P it still holds when `f` returns (an M's loop ends at shutdown
/// with one) goes back to its slot when `ctx` drops, and leaves the thread's record here. The
/// outer M's P flags are put back for it: without that, the
/// outer M ran on with none until it next took a P, its Gs were never asked to yield again,
/// and their waits for goro's locks read as sleeps to sysmon.
pub(crate) fn enter<R>(ctx: &MCtx, f: impl FnOnce() -> R) -> R {
    debug_assert!(ctx.p().is_none(), "goro: an M entered after taking its P would run without its P's flags");
    /// Restores on the way out, unwinding included.
    struct Leave(Option<crate::current::Saved>);
    impl Drop for Leave {
        fn drop(&mut self) {
            if let Some(saved) = self.0.take() {
                crate::current::restore(saved);
            }
        }
    }
    let _leave = Leave(Some(crate::current::enter_m(ctx as *const MCtx as *const ())));
    f()
}

/// Runs `f` with the current M, if this thread is one.
#[inline]
pub(crate) fn current<R>(f: impl FnOnce(Option<&MCtx>) -> R) -> R {
    let p = crate::current::m() as *const MCtx;
    // SAFETY: only `enter` publishes an M, a `&MCtx` that outlives the closure during which it
    // is published (the `Leave` guard takes it back, also on unwinding).
    f(unsafe { p.as_ref() })
}

/// `newproc` from any thread: on an M of `shared`'s runtime, [`MCtx::spawn`] (the G goes to
/// that M's P); anywhere else, [`Shared::spawn_off_p`].
pub(crate) fn newproc<F>(
    shared: &StdArc<Shared>,
    future: F,
    location: &'static Location<'static>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    current(|ctx| match ctx.filter(|c| std::ptr::eq(&*c.shared, &**shared)) {
        Some(ctx) => ctx.spawn(future, location),
        None => shared.spawn_off_p(future, raw::NO_PARENT, location),
    })
}

/// Entry point of an M thread started by `newm`, holding P `p`.
pub(crate) fn mstart(shared: StdArc<Shared>, p: usize, spinning: Spinning) {
    let _own = crate::threads::OwnThread::enter();
    // `Builder::on_thread_start`, before this M runs any G (its P waits meanwhile).
    if let Some(h) = &shared.config.on_thread_start {
        h.call_on_m("on_thread_start");
    }
    let ctx = MCtx::new(shared, StdArc::new(M::new()), None);
    // Before the P: `enter` starts the M with none published.
    enter(&ctx, || {
        ctx.acquirep(p);
        ctx.spinning.set(spinning == Spinning::Yes);
        let found = ctx.schedule();
        debug_assert!(matches!(found, Found::Shutdown));
    });
    // `Builder::on_thread_stop`, after this M's last G.
    if let Some(h) = &ctx.shared.config.on_thread_stop {
        h.call_on_m("on_thread_stop");
    }
    ctx.shared.threads.exited();
}

impl MCtx {
    pub(crate) fn new(shared: StdArc<Shared>, m: StdArc<M>, main: Option<StdArc<MainState>>) -> MCtx {
        MCtx {
            bubble: shared.config.bubble.clone(),
            shared,
            m,
            core: RefCell::new(None),
            p: Cell::new(None),
            spinning: Cell::new(false),
            main,
            curg: Cell::new(None),
            main_defer: Cell::new(0),
        }
    }

    /// Go's `acquirep`: this M takes P `p`, which it was given the right to (the idle list, a
    /// hand-off, a won syscall CAS).
    pub(crate) fn acquirep(&self, p: usize) {
        self.shared.allp[p].status.store(P_RUNNING, Relaxed);
        self.hold(p);
    }

    /// Takes P `p`'s core and publishes it as this M's P, leaving the status alone.
    pub(crate) fn hold(&self, p: usize) {
        debug_assert!(self.p.get().is_none(), "goro: acquirep by an M that holds a P");
        debug_assert!(
            std::ptr::eq(crate::current::m(), self as *const MCtx as *const ()),
            "goro: a P taken by an M that is not the thread's current one (see `enter`)"
        );
        let pp = &self.shared.allp[p];
        *self.core.borrow_mut() = Some(pp.take_core());
        // A request meant for the P's previous M's G.
        pp.flags.preempt.store(false, Relaxed);
        #[cfg(not(loom))]
        pp.tid.store(crate::threads::current_tid(), Relaxed);
        self.p.set(Some(p));
        crate::current::publish_p(&self.shared, |sh| &sh.allp[p].flags);
    }

    /// Go's `releasep`: gives the P's core back to the P. The caller hands the P on
    /// (`pidleput`, `handoffp`, a syscall status, a waiting M).
    pub(crate) fn releasep(&self) -> Option<usize> {
        crate::current::clear_p();
        let core = self.core.borrow_mut().take()?;
        let p = core.id();
        self.shared.allp[p].put_core(core);
        self.p.set(None);
        Some(p)
    }

    /// The index of the P this M holds.
    #[inline]
    pub(crate) fn p(&self) -> Option<usize> {
        self.p.get()
    }

    /// The P this M holds, if this M belongs to `shared` (a thread may be an M of two runtimes,
    /// one `block_on` inside a G of another).
    #[inline]
    pub(crate) fn p_of(&self, shared: &Shared) -> Option<usize> {
        if std::ptr::eq(&*self.shared, shared) {
            self.p.get()
        } else {
            None
        }
    }

    /// Runs `f` on the owner-only half of the P this M holds; `None` if it holds none. `f` must
    /// not poll a G or drop one (which may re-enter here): the borrow would panic.
    #[inline]
    pub(crate) fn with_core<R>(&self, f: impl FnOnce(&mut PCore) -> R) -> Option<R> {
        self.core.borrow_mut().as_deref_mut().map(f)
    }

    /// Runs `f` on the header of the G this M polls, if it polls one.
    fn with_curg<R>(&self, f: impl FnOnce(&raw::Header) -> R) -> Option<R> {
        // SAFETY: `curg` is set only by `execute`, for the length of its `g::run`, which holds
        // the run queue's reference on the G while the G's poll (the only code that can reach
        // this M meanwhile) runs; `execute` clears it before anything else runs.
        self.curg.get().map(|g| f(unsafe { g.as_ref() }))
    }

    /// The goid of the G this M polls: the G's, [`MAIN_FUTURE`](raw::MAIN_FUTURE) while it
    /// polls the main future of `block_on`, [`NO_PARENT`](raw::NO_PARENT) between polls.
    pub(crate) fn current_goid(&self) -> u64 {
        match self.with_curg(|h| h.goid) {
            Some(goid) => goid,
            None if self.polling_main() => raw::MAIN_FUTURE,
            None => raw::NO_PARENT,
        }
    }

    /// What this M polls, as the root of a profile's stack: the G's spawn site, or the main
    /// future's `block_on` call; `None` between polls.
    pub(crate) fn polled_origin(&self) -> Option<Origin> {
        if let Some(at) = self.with_curg(|h| h.location) {
            return Some(Origin::Go(at));
        }
        match &self.main {
            Some(main) if main.polling.load(Relaxed) => Some(Origin::Main(main.location)),
            _ => None,
        }
    }

    /// Whether this M is a thread inside `block_on`.
    pub(crate) fn is_main(&self) -> bool {
        self.main.is_some()
    }

    /// Whether this M is polling its main future right now.
    pub(crate) fn polling_main(&self) -> bool {
        self.main.as_ref().is_some_and(|m| m.polling.load(Relaxed))
    }

    /// The wait-reason slot of what this M polls: its G's, or its main future's.
    pub(crate) fn with_wait_reason<R>(&self, f: impl FnOnce(&AtomicU8) -> R) -> Option<R> {
        if self.curg.get().is_some() {
            return self.with_curg(|h| f(&h.wait_reason));
        }
        match &self.main {
            Some(main) if main.polling.load(Relaxed) => Some(f(&main.wait_reason)),
            _ => None,
        }
    }

    pub(crate) fn main_pending(&self) -> bool {
        self.main.as_ref().is_some_and(|m| m.is_notified())
    }

    /// Go's `schedule`: runs Gs until there is nothing else to do. Returns `Main` when this
    /// M's main future was woken, `Shutdown` when the runtime stops.
    pub(crate) fn schedule(&self) -> Found {
        loop {
            match self.findrunnable() {
                Found::G(g, slice) => {
                    if self.spinning.get() {
                        self.resetspinning();
                    }
                    self.execute(g, slice);
                }
                other => {
                    if self.spinning.get() {
                        self.resetspinning();
                    }
                    return other;
                }
            }
        }
    }

    /// Called after the main future returned `Pending` having woken itself.
    pub(crate) fn defer_main(&self) {
        let queued = self.with_core(|c| c.runq.len() + 1).unwrap_or(0);
        self.main_defer.set(queued.max(1));
    }

    /// Go's `execute`: runs `g` on the current P, in a fresh time slice or the one it inherits.
    pub(crate) fn execute(&self, g: GPtr, slice: Slice) {
        if slice == Slice::Fresh {
            self.start_slice();
        }
        let d = self.main_defer.get();
        if d > 0 {
            self.main_defer.set(d - 1);
        }
        let outer = self.curg.replace(Some(g));
        // Who it is, for sysmon's report if the poll blocks the thread (read now: the G may be
        // freed by the time the poll returns).
        let who = self.with_curg(raw::Header::who).expect("curg was just set");
        self.poll_start(who.goid);
        // SAFETY: `g` came out of a run queue with the queue's reference.
        let again = unsafe { g::run(g, self.shared.coarse_clock()) };
        // At once: the G may be freed now, and the poll-end hooks below run code (a value's
        // drop) that may ask for the current G (`go` reads its goid for the parent).
        self.curg.set(outer);
        self.poll_end();
        coop::run_poll_end();
        self.check_detached(Some(who));
        if let Some(again) = again {
            // It woke itself during its poll (yield_now): to the back of the queue.
            self.runqput(again, Put::Back);
        }
    }

    /// Starts a fresh time slice on this M's P (`schedtick` moves; sysmon measures the slice
    /// from its next look).
    fn start_slice(&self) {
        let Some(pid) = self.p.get() else { return };
        if let Some(tick) = self.with_core(|c| {
            c.schedtick = c.schedtick.wrapping_add(1);
            c.schedtick
        }) {
            self.shared.allp[pid].stats.schedtick.store(tick, Relaxed);
        }
    }

    /// `newproc` on this M: a G running `future`, made runnable. With a P of this M's runtime
    /// the G is allocated from the P's free lists, gets a goid from its cache and goes to its
    /// `runnext` (Go does the same: a new G runs soon, on the P that created it, warm in
    /// cache), and another M is woken to steal the rest; without one, as from any thread.
    pub(crate) fn spawn<F>(&self, future: F, location: &'static Location<'static>) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let sh = &self.shared;
        let parent = self.current_goid();
        let Some(pid) = self.p.get() else {
            return sh.spawn_off_p(future, parent, location);
        };
        let (g, handle, reused) = self
            .with_core(|c| {
                let goid = c.next_goid(sh.goidgen());
                g::new_g(future, sh, &sh.gfree, goid, parent, location, Some(&mut c.gfree))
            })
            .expect("goro: the M holds a P");
        let stats = &sh.allp[pid].stats;
        p::bump(&stats.spawned, 1);
        if reused {
            p::bump(&stats.gfree_reused, 1);
        }
        if sh.admit(g) {
            self.runqput(g, Put::Spawn);
        }
        handle
    }

    /// Go's `runqput` on this M's P, then `wakep` if there is stealable work (a G in the ring;
    /// a G alone in `runnext` is sysmon's to watch, see `ready` in `schedule`), and always for a
    /// spawn ([`Put::Spawn`]), as Go's `newproc` does. Without a P (or with one that sysmon
    /// detached: its M is stuck in a poll that blocks the thread, so a G made runnable by that
    /// poll goes where a running P finds it), as from any thread: the global queue.
    pub(crate) fn runqput(&self, g: GPtr, put: Put) {
        let sh = &*self.shared;
        let Some(pid) = self.p.get().filter(|&p| sh.allp[p].status.load(Relaxed) != P_DETACHED) else {
            sh.globrunqput(g);
            return;
        };
        // A full ring spills half of itself to the global queue (`runqputslow`).
        let spill = |batch: &runq::OverflowBatch<g::raw::Header>| {
            p::bump(&sh.allp[pid].stats.local_runq_overflows, 1);
            sh.global.push_batch(batch.iter());
        };
        let stealable = self
            .with_core(|c| match put {
                Put::Next | Put::Spawn => c.runq.push_next(g, spill),
                Put::Back => {
                    c.runq.push_back(g, spill);
                    true
                }
            })
            .expect("goro: the M holds a P");
        if stealable || put == Put::Spawn {
            sh.wakep();
        }
    }

    fn become_spinning(&self) {
        self.spinning.set(true);
        self.shared.idle.spinning_start();
    }

    /// Go's `resetspinning`: this M found work and stops spinning; if it was the last spinner,
    /// wake another, since there may be more work than this M can take.
    fn resetspinning(&self) {
        self.spinning.set(false);
        let before = self.shared.idle.spinning_stop();
        if before == 1 {
            self.shared.wakep();
        }
    }

    /// Go's `findrunnable`: a G to run, blocking (the M sleeps) until there is one.
    fn findrunnable(&self) -> Found {
        let sh = &*self.shared;
        if let Some(b) = &self.bubble {
            return self.findrunnable_in_bubble(b);
        }
        'top: loop {
            if sh.shutting_down(Acquire) {
                return Found::Shutdown;
            }
            if self.main_pending() && self.main_defer.get() == 0 {
                return Found::Main;
            }
            if self.is_main() && sh.fatal.has_ended() {
                return Found::Ended;
            }
            let Some(pid) = self.p.get() else {
                // An M in block_on, or one that gave its P to an M back from a syscall, gets here
                // without a P. Take an idle one if there is, else sleep until handed one (or
                // woken for the main future).
                if let Some(pid) = sh.pidleget() {
                    self.acquirep(pid);
                    continue 'top;
                }
                match self.stopm() {
                    Some(found) => return found,
                    None => continue 'top,
                }
            };
            let p = &sh.allp[pid];

            // Go's `checkTimers`: run this P's expired timers (they may make Gs runnable here).
            // No lock and no clock read unless the heap has a timer.
            crate::trace::timers(timer::check_timers(sh, pid, || sh.nanotime()));

            // Work waiting outside our queue gets a turn every 61st tick, so a busy P cannot
            // starve it (Go's rule), and also once it has waited a time slice (sysmon's
            // `fairness_due`): Go's ticks last at most a time slice, as it preempts, but a goro
            // G that computes without yield points makes one tick as long as it likes.
            let tick = self.with_core(|c| c.schedtick).unwrap_or(0);
            let due = p.fairness_due.load(Relaxed);
            if due {
                p.fairness_due.store(false, Relaxed);
            }
            // An M back from a syscall waits for a P while this one stays busy: it gets ours
            // every 61st tick. A main M waiting for one gets it now (Go's `ready` puts the main
            // G in this P's `runnext`: it runs next, here on its own thread).
            if sh.idle.syscall_waiting() != 0
                && (tick % 61 == 0 || due || sh.idle.main_waiting())
                && !self.spinning.get()
                && self.handoff_to_syscall_waiter(pid)
            {
                continue 'top;
            }
            if due {
                if let Some(g) = self.globrunqget_due(p) {
                    return Found::G(g, Slice::Fresh);
                }
            } else if tick % 61 == 0 && !sh.global.is_empty() {
                if let Some(g) = sh.global.pop() {
                    p::bump(&p.stats.global_runq_polls, 1);
                    return Found::G(g, Slice::Fresh);
                }
            }

            // The network gets a turn every 61st tick too, while no M sleeps in the poller
            // (tokio's workers poll their driver every 61 ticks). Go leaves a busy runtime's
            // network to sysmon's poll every 10 ms, and to its M asleep in the poller; here that
            // M is the first to be handed a P (`startm`), so a runtime whose Ps keep finding
            // work would otherwise leave ready I/O waiting for sysmon. Once per tick: a
            // `runnext` chain runs many Gs in one.
            if tick % 61 == 0
                && sh.netpoll.nonblocking_poll_due()
                && self.with_core(|c| std::mem::replace(&mut c.netpoll_tick, tick) != tick) == Some(true)
            {
                let mut ready = Vec::new();
                if sh.netpoll.poll(Some(Duration::ZERO), &mut ready) {
                    // Onto our run queue, as `ready` puts any G woken on this M.
                    ready.into_iter().for_each(Waker::wake);
                }
            }

            if let Some((g, slice)) = self.runqget(p) {
                return Found::G(g, slice);
            }

            if let Some(g) = self.globrunqget(p) {
                return Found::G(g, Slice::Fresh);
            }

            // Steal, unless enough Ms are spinning already: at most half the busy Ps' worth.
            let busy = sh.allp.procs() - sh.idle.npidle();
            let may_spin = self.spinning.get() || 2 * sh.idle.nmspinning() < busy;

            // Non-blocking netpoll, if some G waits for I/O and no M sleeps in the poller.
            if sh.netpoll.nonblocking_poll_due() {
                // One pass over the other Ps' rings first, where Go's `findrunnable` polls before
                // it steals at all ("only an optimization before we resort to stealing"). What
                // the order decides is who waits when the kernel deschedules an M that holds a
                // P with a full ring, as it does to a server's M whose `writev` woke the
                // client's thread on the same CPU: polling first hands the M that ran dry the
                // newest requests, and the older ones in the stranded ring wait for the
                // kernel's next tick (4 ms here). Stealing first runs them in their order. An
                // HTTP server under wrk (64 connections, 2 Ps on 2 shared cores), traced: from a
                // G's wake-up to its poll, p99 3.6 ms and max 8.3 ms with the poll first, 0.7
                // ms and 3.0 ms with a full steal first; wrk's p99 went from 6.4-6.8 ms to
                // 5.2-5.8 (and to 4.3-4.4 with this ring pass and `startm`'s hand-off to the
                // M in the poller, benches/http.sh). Only the rings, in one pass, and before
                // this M counts itself as spinning: a G the poll finds would otherwise end the
                // spinning, and `resetspinning` wake another M for nothing, on every round trip
                // of a TCP ping-pong (benches/net.rs: 24 µs a round trip instead of 14); a
                // victim's `runnext`, and the pause before taking it, belong to the full steal
                // below.
                if may_spin {
                    if let Some(g) = self.steal_pass(p, false) {
                        return Found::G(g, Slice::Fresh);
                    }
                }
                let mut ready = Vec::new();
                if sh.netpoll.poll(Some(Duration::ZERO), &mut ready) && !ready.is_empty() {
                    // Woken with our P held: they land on our run queue (Go's `injectglist`).
                    ready.into_iter().for_each(Waker::wake);
                    continue 'top;
                }
            }

            if may_spin {
                if !self.spinning.get() {
                    self.become_spinning();
                }
                if let Some(g) = self.steal_work(p) {
                    return Found::G(g, Slice::Fresh);
                }
                match self.spin_for_ring_work(p) {
                    Watch::Stole(g) => return Found::G(g, Slice::Fresh),
                    Watch::LookAgain => continue 'top,
                    Watch::Nothing => {}
                }
            }

            if self.main_pending() {
                return Found::Main;
            }

            // Nothing: give up the P. The global queue is checked once more under the lock, as
            // `wakep` takes idle Ps under the same lock.
            {
                let mut idle = sh.idle.lock();
                if !sh.global.is_empty() {
                    continue 'top;
                }
                let pid = self.releasep().expect("held a P");
                sh.pidleput_locked(&mut idle, pid);
            }

            // The delicate dance (Go's words): drop the spinning state, then look at every queue
            // again, with a StoreLoad fence between, or work submitted meanwhile could be left
            // with nobody to run it.
            if self.spinning.get() {
                self.spinning.set(false);
                sh.idle.spinning_stop();
                fence(SeqCst);
                if sh.any_work() {
                    if let Some(pid) = sh.pidleget() {
                        self.acquirep(pid);
                        self.become_spinning();
                        continue 'top;
                    }
                }
            }

            // Go's netpoll block: if timers are pending or Gs wait for I/O, one idle M sleeps in
            // the poller until the earliest timer; the others sleep in `stopm`.
            match self.block_in_netpoll() {
                NetpollBlock::Found(found) => return found,
                NetpollBlock::LookAgain => continue 'top,
                NetpollBlock::Skipped => {}
            }

            if let Some(found) = self.stopm() {
                return found;
            }
        }
    }

    /// The idle M's sleep in the netpoller (the end of Go's `findrunnable`).
    fn block_in_netpoll(&self) -> NetpollBlock {
        let sh = &*self.shared;
        let until = timer::earliest(sh);
        if until == 0 && !sh.netpoll.any_waiters() {
            return NetpollBlock::Skipped;
        }
        if let Err(other) = sh.netpoll.claim_block(until) {
            // Another M sleeps in the poller. If it sleeps past our earliest timer (it looked
            // before that timer was added), wake it to look again.
            if until != 0 && (other == 0 || other > until) {
                sh.netpoll.wake();
            }
            return NetpollBlock::Skipped;
        }
        self.m.set_in_netpoll(true);
        // Seated in the poller, where `startm` looks for an M before the idle list.
        sh.idle.lock().put_netpoller(self.m.clone());
        // After publishing that we sleep (a timer added from now on wakes the poller, see
        // `wake_netpoller`), look at what may have changed since the last look.
        fence(SeqCst);
        let now = sh.nanotime();
        let deadline = timer::earliest(sh);
        let stale = deadline != until || (until != 0 && until <= now);
        let mut ready = Vec::new();
        if !stale && self.stop_reason().is_none() && !sh.any_work() {
            let timeout = (until != 0).then(|| Duration::from_nanos(until - now));
            sh.netpoll.poll(timeout, &mut ready);
        }
        self.m.set_in_netpoll(false);
        // Out of the seat, and a P: the one `startm` handed us if it took us from the seat (it
        // woke the poller then), else an idle one if there is. Before the poller is released:
        // the next M to claim it takes the seat too, so ours must be empty by then.
        let got = {
            let mut idle = sh.idle.lock();
            let left = idle.leave_netpoller(&self.m);
            let hand = if left { None } else { self.m.take_hand() };
            // Only `startm` empties the seat of an M that has claimed the poller, and it hands
            // that M a P first (the poller's claim admits one M at a time: `claim_block`).
            debug_assert!(left || hand.is_some(), "goro: taken from the netpoller without a P");
            hand.or_else(|| sh.pidleget_locked(&mut idle).map(|p| (p, Spinning::No)))
        };
        sh.netpoll.end_block(sh.nanotime());
        if let Some((pid, spinning)) = got {
            self.acquirep(pid);
            if spinning == Spinning::Yes {
                // Counted in nmspinning by whoever handed us the P.
                self.spinning.set(true);
            }
        }
        // With a P, the ready Gs land on its run queue; without, on the global queue, where a
        // busy P finds them.
        ready.into_iter().for_each(Waker::wake);
        if let Some(found) = self.stop_reason() {
            return NetpollBlock::Found(found);
        }
        match got {
            // Timers that expired on any P are run by the look for work that follows (our own
            // heap at the top, the others when stealing).
            Some(_) => NetpollBlock::LookAgain,
            None => NetpollBlock::Skipped,
        }
    }

    /// Go's `runqget` with `runnext` first (it inherits the time slice). The slice ends after
    /// [`RUNNEXT_STREAK_MAX`] consecutive `runnext` picks, or once sysmon found it older than a
    /// time slice (its preemption request is still up: no G of the chain reached a yield point
    /// to honour it). Then the ring, then the global queue get a turn, and the next G starts a
    /// fresh slice (so `schedtick` moves and the 1-in-61 global check keeps working). Go bounds
    /// an inherited slice the same way: sysmon preempts it after 10 ms. Without the time bound,
    /// two Gs that compute 200 ms each and wake each other through timers kept the ring waiting
    /// for 32 of their turns.
    fn runqget(&self, p: &P) -> Option<(GPtr, Slice)> {
        let expired = p.flags.preempt.load(Relaxed);
        if expired {
            // Consumed here: the next G starts a fresh slice.
            p.flags.preempt.store(false, Relaxed);
        }
        let got = self.with_core(|c| {
            let slice_over = expired || c.runnext_streak >= RUNNEXT_STREAK_MAX;
            if !slice_over {
                if let Some(g) = c.runq.pop_runnext() {
                    c.runnext_streak += 1;
                    return Ok((g, Slice::Inherit));
                }
            }
            c.runnext_streak = 0;
            match c.runq.pop() {
                Some(g) => Ok((g, Slice::Fresh)),
                None => Err(slice_over),
            }
        })?;
        let slice_over = match got {
            Ok((g, slice)) => {
                if slice == Slice::Inherit {
                    p::bump(&p.stats.runnext_runs, 1);
                }
                return Some((g, slice));
            }
            Err(slice_over) => slice_over,
        };
        if slice_over {
            if let Some(g) = self.shared.global.pop() {
                p::bump(&p.stats.global_runq_polls, 1);
                return Some((g, Slice::Fresh));
            }
        }
        let g = self.with_core(|c| c.runq.pop_runnext())??;
        p::bump(&p.stats.runnext_runs, 1);
        Some((g, Slice::Fresh))
    }

    /// Go's `globrunqget`: one G to run and a batch for the (empty) local ring.
    fn globrunqget(&self, p: &P) -> Option<GPtr> {
        let sh = &*self.shared;
        // The ring is empty (runqget just failed), and the batch is at most CAP / 2 - 1 items.
        let g = sh.global.pop_batch(sh.allp.procs(), runq::CAP / 2, |rest| {
            self.with_core(|c| c.runq.push_batch(rest));
        })?;
        p::bump(&p.stats.global_runq_polls, 1);
        Some(g)
    }

    /// The global queue's turn when it has waited a time slice (`P::fairness_due`): one G to
    /// run now and, as `globrunqget` takes when the ring is empty, a share of the rest, put
    /// behind the ring's Gs (no more than fit, so nothing spills back), so that they all run
    /// within one round of the ring rather than one per time slice.
    fn globrunqget_due(&self, p: &P) -> Option<GPtr> {
        let sh = &*self.shared;
        let room = runq::CAP - self.with_core(|c| c.runq.len())?;
        let g = sh.global.pop_batch(sh.allp.procs(), (runq::CAP / 2).min(room), |rest| {
            self.with_core(|c| {
                for g in rest {
                    // The batch fits in the room left.
                    c.runq.push_back(g, |_| unreachable!("goro: the batch overflowed the ring"));
                }
            });
        })?;
        p::bump(&p.stats.global_runq_polls, 1);
        Some(g)
    }

    /// Go's `stealWork`: four passes over the other Ps in random order, taking half of a
    /// victim's ring; only the last pass may take a victim's `runnext`, and only after a short
    /// pause if the victim is running (it is probably about to run it itself).
    fn steal_work(&self, p: &P) -> Option<GPtr> {
        (0..4).find_map(|pass| self.steal_pass(p, pass == 3))
    }

    /// One pass of [`steal_work`](Self::steal_work) over the other Ps, from a random one: half of
    /// the first non-empty ring. The `last` pass also runs each victim's expired timers and may
    /// take a victim's `runnext`.
    fn steal_pass(&self, p: &P, last: bool) -> Option<GPtr> {
        let sh = &*self.shared;
        let r = self.with_core(PCore::fastrand)?;
        // The order covers every P slot; slots past `used` have never held a G.
        let used = sh.allp.slots_used();
        for victim in sh.allp.random_order(r) {
            if victim == p.id || victim >= used {
                continue;
            }
            if sh.shutting_down(Relaxed) {
                return None;
            }
            let v = &sh.allp[victim];
            if last {
                // Go's timer stealing: run the victim's expired timers (an idle P's timers
                // have no other M to run them); the Gs they wake land on our P.
                if timer::check_timers(sh, victim, || sh.nanotime()) > 0 {
                    if let Some((g, _)) = self.runqget(p) {
                        return Some(g);
                    }
                }
            }
            let pause = || {
                if v.status.load(Relaxed) == P_RUNNING {
                    pause_for_runnext();
                }
                true
            };
            // Our ring is empty: we only steal after runqget and globrunqget failed.
            if let Some((g, n)) = self.with_core(|c| v.runq.steal_into(&mut c.runq, last, pause)).flatten() {
                p::bump(&p.stats.steals, 1);
                p::bump(&p.stats.stolen_gs, n as u64);
                crate::trace::steal(victim, n);
                return Some(g);
            }
        }
        None
    }

    /// A spinning M whose four steal passes found nothing watches the other Ps' rings (not
    /// their `runnext`) for up to [`IDLE_SPIN`] more before it gives its P up; it stops early
    /// for the global queue, its own P's expired timers (which it runs), the main future or
    /// shutdown, which the caller then looks at.
    ///
    /// Go's spinning M gives up after its steal passes. goro's Gs switch faster than Go's, so
    /// its Ms run dry more often, and an M that sleeps is woken by the next `ready` that
    /// displaces a `runnext` G into the ring: a futex wake-up on the waker's path, while the G
    /// it readied waits for the sleeper to get going. In W8 (select fan-in: three Gs on two Ps)
    /// that was ~2 600 wake-ups per 1 000 000 messages and ~220 000 context switches in a
    /// criterion run; with a 3 us watch, ~15 wake-ups and ~11 000 switches, and the row takes
    /// 0.78-0.82x the time (a 1 us watch left 40-1 300 wake-ups). While it watches, the M still
    /// counts as spinning, so `wakep` wakes no other M: the work it waits for is exactly what
    /// `wakep` would have woken someone for.
    ///
    /// What it costs: at most 3 us of CPU each time an M runs out of work, on top of the steal
    /// passes (which already include the ~3 us `runnext` pause) and far less than the sleep
    /// and wake-up it saves when work comes; a program whose Ms keep finding work in the watch
    /// keeps its second core busier (W8: 1.8 CPUs instead of 1.2). Only ring work counts: a G
    /// in a running P's `runnext` is about to run there, and taking it would pull apart Gs
    /// that wake each other (watching `runnext` too makes W2 and W4 6-13% slower). Under loom the
    /// watch makes its checks once, without the look (see below): a model has no clock.
    fn spin_for_ring_work(&self, p: &P) -> Watch {
        let sh = &*self.shared;
        let start = sh.nanotime();
        for look in 1u32.. {
            // Under loom the look itself is left out: it is `steal_work`'s ring-only pass,
            // which the models have just run three times; running it again doubled the
            // whole-runtime models' time for no new kind of step.
            if !cfg!(loom) {
                if let Some(g) = self.steal_pass(p, false) {
                    return Watch::Stole(g);
                }
            }
            if !sh.global.is_empty() || sh.shutting_down(Relaxed) {
                return Watch::LookAgain;
            }
            // The caller returns to the main future next. Not `LookAgain`: the top of
            // `findrunnable` defers a main future that just yielded, and would come back here.
            if self.main_pending() {
                break;
            }
            // A clock read costs about as much as a look at a few rings. Our own P's timers
            // are ours to run (`checkTimers` at the top of `findrunnable`).
            if cfg!(loom) || look % 8 == 0 {
                let now = sh.nanotime();
                if timer::check_timers(sh, p.id, || now) > 0 {
                    return Watch::LookAgain;
                }
                if cfg!(loom) || now.saturating_sub(start) >= IDLE_SPIN.as_nanos() as u64 {
                    break;
                }
            }
            std::hint::spin_loop();
        }
        Watch::Nothing
    }

    /// Go's `stopm`: sleep in the idle-M list until handed a P (then `None`: go on scheduling),
    /// or until this M's main future is woken or the runtime shuts down.
    pub(crate) fn stopm(&self) -> Option<Found> {
        let sh = &*self.shared;
        debug_assert!(self.p.get().is_none());
        {
            let mut idle = sh.idle.lock();
            if let Some(found) = self.stop_reason() {
                return Some(found);
            }
            // An M was wanted and could not be started (the thread limit): be it.
            if idle.take_m_wanted() {
                if let Some(p) = sh.pidleget_locked(&mut idle) {
                    drop(idle);
                    self.acquirep(p);
                    return None;
                }
            }
            idle.mput(self.m.clone());
        }
        loop {
            self.m.parker.park();
            let mut idle = sh.idle.lock();
            if let Some((p, spinning)) = self.m.take_hand() {
                // `startm` already took us off the list.
                drop(idle);
                self.acquirep(p);
                if spinning == Spinning::Yes {
                    // Counted in nmspinning by whoever woke us.
                    self.spinning.set(true);
                }
                return None;
            }
            if let Some(found) = self.stop_reason() {
                // Still on the list (no hand-off happened, and hand-offs run under this lock).
                idle.mremove(&self.m);
                return Some(found);
            }
        }
    }

    /// M0's main future was woken while this M held no P (it had given its P up in
    /// `findrunnable`): take one before polling it, as Go's main G runs only on a P. An idle P
    /// if there is one; else wait for a busy M to hand one over at its next schedule
    /// ([`PWait::Main`]), which is at most one G's poll away.
    ///
    /// A poll that computes without a yield point cannot be preempted (see `sysmon`), and Go
    /// would preempt it: so after [`MAIN_P_WAIT`] the main future is polled without a P (its
    /// `go`s then allocate and push to the global queue). Without the wait, a main woken by a G
    /// on another M while every P is busy would run beside them with no P (tests/runtime.rs,
    /// `main_woken_while_every_p_is_busy_waits_for_one`).
    pub(crate) fn acquirep_for_main(&self) {
        let sh = &*self.shared;
        debug_assert!(self.is_main() && self.p.get().is_none());
        let mut idle = sh.idle.lock();
        if let Some(p) = sh.pidleget_locked(&mut idle) {
            drop(idle);
            self.acquirep(p);
            return;
        }
        if sh.shutting_down(Acquire) || sh.fatal.has_ended() {
            return;
        }
        idle.waiter_put(self.m.clone(), PWait::Main);
        drop(idle);
        let deadline = Instant::now() + MAIN_P_WAIT;
        loop {
            let now = Instant::now();
            if now < deadline {
                self.m.parker.park_timeout(deadline - now);
            }
            let mut idle = sh.idle.lock();
            if let Some((p, _)) = self.m.take_hand() {
                drop(idle);
                self.acquirep(p);
                self.start_slice();
                return;
            }
            let ending = sh.shutting_down(Acquire) || sh.fatal.has_ended();
            if ending || Instant::now() >= deadline {
                // Still on the list: hand-offs run under this lock.
                idle.waiter_remove(&self.m);
                return;
            }
        }
    }

    fn stop_reason(&self) -> Option<Found> {
        if self.shared.shutting_down(Acquire) {
            Some(Found::Shutdown)
        } else if self.main_pending() {
            Some(Found::Main)
        } else if self.is_main() && self.shared.fatal.has_ended() {
            Some(Found::Ended)
        } else {
            None
        }
    }
}

/// A synctest bubble's side of the M (see `bubble`): `findrunnable` there, the census of its
/// Gs, and the sleep until a wake from outside.
impl MCtx {
    /// `findrunnable` in a bubble: the next G by the bubble's policy; when none is runnable,
    /// the census decides between sleeping until a wake from outside, releasing
    /// `synctest::wait`, moving the clock, and reporting a deadlock (`Found::BubbleDeadlock`).
    // Out of line: `findrunnable` is the scheduler's hottest function, and a runtime that is
    // no bubble must not pay for this one's code beside it.
    #[cold]
    #[inline(never)]
    pub(crate) fn findrunnable_in_bubble(&self, b: &Bubble) -> Found {
        let sh = &*self.shared;
        loop {
            if sh.shutting_down(Acquire) {
                return Found::Shutdown;
            }
            if sh.fatal.has_ended() {
                return Found::Ended;
            }
            // M0 holds the one P for the whole run: a bubble starts no other M.
            let pid = self.p().expect("goro: a bubble's M lost its P");
            let now = b.nanotime();
            let due = sh.allp[pid].timers.earliest();
            if due != 0 && due <= now {
                timer::run_timers_picked(sh, pid, now, |n| b.below(n));
            }
            let main = self.main_pending();
            let next = b.next(main, |put| {
                self.with_core(|c| {
                    while let Some(g) = c.runq.pop_runnext().or_else(|| c.runq.pop()) {
                        put(g);
                    }
                });
                sh.global.drain(&mut *put);
            });
            if let Some((pick, budget)) = next {
                coop::set_budget(budget);
                return match pick {
                    Pick::G(g) => Found::G(g, Slice::Fresh),
                    Pick::Main => Found::Main,
                };
            }
            if sh.netpoll.nonblocking_poll_due() {
                let mut ready = Vec::new();
                if sh.netpoll.poll(Some(Duration::ZERO), &mut ready) && !ready.is_empty() {
                    ready.into_iter().for_each(Waker::wake);
                    continue;
                }
            }
            match self.census() {
                // A wake from another thread is between setting the G's `NOTIFIED` and its
                // push to the global queue: the push is a few instructions away.
                Census::Busy => crate::loom::thread::yield_now(),
                Census::NotDurable => self.sleep_for_outside(b),
                Census::AllDurable { live } => {
                    if b.release_waiter() {
                        continue;
                    }
                    let root_done = b.root_done.load(Acquire);
                    // Once the root returned, time stands still (Go's rule): Gs that only a
                    // timer would wake are left blocked, which fails the bubble below.
                    let next = if root_done { 0 } else { timer::earliest_live(sh) };
                    if next != 0 {
                        b.advance_to(next);
                        continue;
                    }
                    if root_done && live == 0 {
                        // The root returned and every G has exited: `wait_exit` returns.
                        for m in sh.mains.snapshot() {
                            std::task::Wake::wake(m);
                        }
                        continue;
                    }
                    return Found::BubbleDeadlock(if root_done { ROOT_EXITED } else { DEADLOCK });
                }
            }
        }
    }

    /// Which of the bubble's Gs (and main future) are durably blocked.
    fn census(&self) -> Census {
        let sh = &*self.shared;
        let mut busy = false;
        let mut not_durable = false;
        let mut live = 0;
        sh.mains.with(|mains| {
            for m in mains {
                if m.is_notified() || m.polling.load(Relaxed) {
                    busy = true;
                } else if !bubble::durable(m.wait_reason.load(Relaxed)) {
                    not_durable = true;
                }
            }
        });
        sh.allgs.for_each(|h| {
            let st = h.state.load();
            if st.is_complete() {
                return;
            }
            live += 1;
            if st.is_running() || st.is_notified() {
                busy = true;
            } else if !bubble::durable(h.wait_reason.load(Relaxed)) {
                not_durable = true;
            }
        });
        if busy {
            Census::Busy
        } else if not_durable {
            Census::NotDurable
        } else {
            Census::AllDurable { live }
        }
    }

    /// M0 sleeps in the netpoller until a G that waits on something outside the bubble is
    /// woken: a push to the global queue wakes it (`Shared::after_globrunqput` reads
    /// `Bubble::sleeping`), and so do the main future's waker and I/O readiness.
    fn sleep_for_outside(&self, b: &Bubble) {
        let sh = &*self.shared;
        if sh.netpoll.claim_block(0).is_err() {
            return;
        }
        b.set_sleeping(true);
        self.m.set_in_netpoll(true);
        // Pairs with the pusher's fence between its push and its look at `sleeping`.
        fence(SeqCst);
        let mut ready = Vec::new();
        if sh.global.is_empty() && !self.main_pending() && !sh.fatal.has_ended() && !sh.shutting_down(Acquire) {
            sh.netpoll.poll(None, &mut ready);
        }
        self.m.set_in_netpoll(false);
        b.set_sleeping(false);
        sh.netpoll.end_block(b.nanotime());
        ready.into_iter().for_each(Waker::wake);
    }
}

/// What a bubble's census found (see `MCtx::census`).
enum Census {
    /// A G is queued or running (a wake from outside is on its way to a queue): look again.
    Busy,
    /// Some G (or the main future) waits for something outside the bubble.
    NotDurable,
    /// Every live G and the main future are durably blocked; `live` Gs (main not counted).
    AllDurable { live: usize },
}

/// What an M in `goro::syscall` takes back when the call returns.
#[derive(Clone, Copy)]
pub(crate) enum SyscallP {
    /// The P it let go of (`P_SYSCALL`), unless sysmon retook it meanwhile.
    Own(usize),
    /// Nothing of its own: sysmon had detached its P (see [`MCtx::entersyscall`]), which is a
    /// spare slot now; any idle P will do.
    Detached,
}

/// The M's side of `goro::syscall` (see [`syscall`](crate::syscall())).
impl MCtx {
    /// Go's `entersyscall`: lets go of the P (loosely: it stays `P_SYSCALL` for our return).
    /// Returns what `exitsyscall` takes back, or `None` if this M holds no P.
    pub(crate) fn entersyscall(&self) -> Option<SyscallP> {
        let pid = self.p.get()?;
        // State kept for the length of a poll must not be held through a blocking call.
        crate::coop::run_poll_end();
        let pp = &self.shared.allp[pid];
        p::bump(&pp.stats.syscalltick, 1);
        // What the dump shows of the G meanwhile (`exitsyscall` clears it).
        self.with_wait_reason(|r| r.store(WaitReason::Syscall as u8, Relaxed));
        let mut traced = false;
        loop {
            // The core goes back to the P before the status says the P may be retaken.
            self.releasep();
            // On the thread's track of the trace: the P goes on without it.
            if !traced {
                crate::trace::syscall(true);
                traced = true;
            }
            // After `releasep`: once sysmon can see `P_SYSCALL`, this M no longer touches the
            // P. A CAS, not a store: this very poll may have blocked the thread before the
            // call, and sysmon then detached the P (`sysmon::detach`: `P_RUNNING` →
            // `P_DETACHED`) and put a spare in its place. A store overwrote that, and the P came
            // back into use beside its spare: one P more than `max_procs` (tests/hand_off.rs,
            // `a_syscall_after_a_blocked_poll`).
            if pp.status.compare_exchange(P_RUNNING, P_SYSCALL, AcqRel, Relaxed).is_ok() {
                return Some(SyscallP::Own(pid));
            }
            // Detached: give the P up as a spare now, as `check_detached` does after a poll (a
            // detached P has no other owner, so its core is ours to take back for that).
            self.hold(pid);
            let who = self.with_curg(raw::Header::who);
            // Counted as inside a syscall before the P stops showing this M (`P_DETACHED`
            // becomes `P_SPARE`): see `SyscallsWithoutP`.
            self.shared.syscalls_without_p().enter();
            if self.drop_detached(pid, who) {
                return Some(SyscallP::Detached);
            }
            self.shared.syscalls_without_p().leave();
            // sysmon undid the detach (see `drop_detached`): the P is ours again.
        }
    }

    /// Go's `exitsyscall`: takes back the P it let go of if sysmon left it, else another idle
    /// P, else waits for one (or for shutdown, when it goes on without a P).
    pub(crate) fn exitsyscall(&self, entered: SyscallP) {
        crate::trace::syscall(false);
        self.with_wait_reason(|r| r.store(0, Relaxed));
        if let SyscallP::Own(pid) = entered {
            if self.shared.allp[pid].status.compare_exchange(P_SYSCALL, P_RUNNING, AcqRel, Relaxed).is_ok() {
                // Won against sysmon's retake: the core is ours again.
                self.hold(pid);
                return;
            }
        }
        // Retaken, or given up on entering: this M was counted in `syscalls_without_p` by
        // whoever took its P, and stays counted until it holds one again.
        self.exitsyscall_slow();
        self.shared.syscalls_without_p().leave();
    }

    /// Gives P `pid`, which this M holds between two Gs, to an M back from a syscall that
    /// waits for a P (`exitsyscall_slow`); `false` if none waits. `findrunnable` calls it every
    /// 61st tick while one waits, so Gs that keep every P busy cannot starve the returning G
    /// (Go queues that G on the global run queue, which a busy P polls every 61 ticks; here its
    /// poll is still on the waiting M's stack, so the P goes to the M instead). This M is left
    /// without a P and looks for one (or sleeps) like any idle M.
    pub(crate) fn handoff_to_syscall_waiter(&self, pid: usize) -> bool {
        let sh = &*self.shared;
        let mut idle = sh.idle.lock();
        let Some(m) = idle.waiter_get() else {
            return false;
        };
        let released = self.releasep();
        debug_assert_eq!(released, Some(pid), "goro: handing off a P this M does not hold");
        sh.allp[pid].status.store(P_RUNNING, Relaxed);
        sh.stats.handoffs.fetch_add(1, Relaxed);
        // Under the lock, as `pidleput_locked` hands a P to a waiter.
        m.hand(pid, Spinning::No);
        m.parker.unpark();
        true
    }

    #[cold]
    fn exitsyscall_slow(&self) {
        let sh = &*self.shared;
        let mut idle = sh.idle.lock();
        if let Some(p) = sh.pidleget_locked(&mut idle) {
            drop(idle);
            self.acquirep(p);
            // A fresh slice (Go's `execute` bumps `schedtick` when a G gets a P back): the G
            // waited its turn, as a preempted G in Go waits on the global queue, and sysmon
            // measures its next slice from here. Without this, a G whose P was retaken for
            // overrunning its slice (a loop on blocking calls) finds the slice still over on
            // the P it gets back, loses that P at its next syscall too, and crawls (the 2-P
            // hand-off soak's blocking consumer: 140 values a second instead of 39 000).
            self.start_slice();
            return;
        }
        if sh.shutting_down(Acquire) {
            return;
        }
        // `pidleput` hands the next freed P to us (under the same lock).
        idle.waiter_put(self.m.clone(), PWait::Syscall);
        drop(idle);
        loop {
            self.m.parker.park();
            let mut idle = sh.idle.lock();
            if let Some((p, _)) = self.m.take_hand() {
                drop(idle);
                self.acquirep(p);
                self.start_slice();
                return;
            }
            if sh.shutting_down(Acquire) {
                idle.waiter_remove(&self.m);
                return;
            }
        }
    }
}

/// The M side of sysmon's watch: the poll count it reads, and giving up a P that sysmon
/// detached while the M was stuck in a poll.
impl MCtx {
    /// Marks the start of a G's poll on this M's P: the P's poll count becomes a new odd
    /// value. sysmon reads an odd count that has not moved since its last look as "one poll
    /// has been running all along".
    /// `goid` is the G about to be polled (0: the main future), for sysmon's reports.
    #[inline]
    pub(crate) fn poll_start(&self, goid: u64) {
        // Read by sysmon and by `checkdead`'s activity count (which the loom models check).
        if let Some(pid) = self.p.get() {
            let st = &self.shared.allp[pid].stats;
            st.curgoid.store(goid, Relaxed);
            st.polls.store(st.polls.load(Relaxed).wrapping_add(2) | 1, Relaxed);
        }
    }

    /// Marks the end of a poll: the count becomes even (whatever happened in between: a poll
    /// that unwound leaves it odd only until the next start).
    #[inline]
    pub(crate) fn poll_end(&self) {
        if let Some(pid) = self.p.get() {
            let c = &self.shared.allp[pid].stats.polls;
            c.store(c.load(Relaxed).wrapping_add(1) & !1, Relaxed);
        }
    }

    /// After a poll: if sysmon detached our P while the poll blocked the thread (see
    /// `sysmon::detach`), give it up as a spare. Its remaining Gs go to the global queue.
    ///
    /// This look can miss a detach made just as the poll ended: the poll's end (a plain store
    /// of the poll count) and this load of the status may pass sysmon's CAS of the status and
    /// its load of the count (the store-buffering pattern; a fence here would cost every poll).
    /// The M then goes on with the P until the next poll's end, and if it gives the P up first,
    /// `Shared::pidleput_locked` sees the detach under the scheduler lock (loom model
    /// `loom_detach_races_a_poll_end`).
    #[inline]
    pub(crate) fn check_detached(&self, who: Option<Who>) {
        let Some(pid) = self.p.get() else { return };
        if self.shared.allp[pid].status.load(Acquire) == p::P_DETACHED {
            self.drop_detached(pid, who);
        }
    }

    /// Gives up P `pid`, which sysmon detached, as a spare; `false` (and the P kept) if sysmon
    /// undid the detach. The status was read without the scheduler lock, and `sysmon::detach`
    /// CASes it to `P_DETACHED` and then, under that lock, puts `P_RUNNING` back if it finds
    /// that the poll had ended: under the lock the status is final (loom model
    /// `loom_detach_races_a_poll_end`; without this look, the M made its P a spare after the
    /// undo, and the spare went back to the list too: no P left in use).
    #[cold]
    fn drop_detached(&self, pid: usize, who: Option<Who>) -> bool {
        let sh = &*self.shared;
        let p = &sh.allp[pid];
        let status = {
            let _final = sh.idle.lock();
            p.status.load(Acquire)
        };
        if status != P_DETACHED {
            return false;
        }
        report_blocked(sh, pid, who);
        // This M still owns the ring (a detached P has no other owner).
        self.with_core(|c| c.runq.drain(|g| sh.global.push(g)));
        // No timer is left here to move: sysmon moved the heap when it detached the P, and an
        // arming on a detached P moves itself (`timer`'s "Timers move with their P").
        let mut idle = sh.idle.lock();
        self.releasep();
        p.status.store(p::P_SPARE, Release);
        idle.spare_put(pid);
        drop(idle);
        // The Gs just queued globally need an M: ours has no P now.
        sh.wakep();
        true
    }
}

/// The M whose P sysmon detached reports its G once the poll returned: one line on stderr per
/// spawn location.
pub(crate) fn report_blocked(sh: &Shared, pid: usize, who: Option<Who>) {
    let since = sh.allp[pid].blocked_since.load(Relaxed);
    let ms = sh.nanotime().saturating_sub(since) / 1_000_000;
    let (whom, at) = match who {
        Some(w) => (format!("G {} spawned at {}", w.goid, w.location), w.location),
        None => ("the main G (block_on)".to_owned(), Location::caller()),
    };
    crate::config::warn_once_at("blocked poll", at, || {
        format!(
            "goro: {whom} blocked its thread for {ms}ms in one poll (asleep in a blocking call); its other Gs \
             moved to another thread. Wrap blocking calls in goro::syscall"
        )
    });
}

/// About 3 µs of waiting for a running victim to take its own `runnext` (Go's `usleep(3)`; a real
/// sleep would take tens of µs on Linux because of timer slack, so this spins). Under loom it is
/// nothing at all: a yield there would make loom always let the victim go first, hiding the race
/// between the victim's pop and the thief's CAS.
fn pause_for_runnext() {
    #[cfg(not(loom))]
    {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_micros(3) {
            std::hint::spin_loop();
        }
    }
}

impl Drop for MCtx {
    /// An M that stops with a P (at shutdown) gives its core back, so that shutdown finds
    /// every P's free lists and queue.
    fn drop(&mut self) {
        if let Some(core) = self.core.get_mut().take() {
            self.shared.allp[core.id()].put_core(core);
        }
    }
}
