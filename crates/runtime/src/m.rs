//! M: an OS thread that runs Gs while it holds a P (Go's `m`), and its scheduling loop:
//! `schedule`, `findrunnable`, `stopm`, `execute`.
//!
//! Two kinds of thread are Ms: threads the runtime starts ([`mstart`]), and any thread inside
//! `Runtime::block_on` (M0 in Go's terms), which also polls its main future whenever that future
//! is woken. Both run the same loop; [`MCtx::main`] is what tells them apart.
//!
//! Sleeping Ms wait in the idle-M list (`sched.midle`) for a hand-off: whoever wakes one
//! (`startm`) first gives it a P under the scheduler lock, then unparks it. A thread is never
//! destroyed while the runtime lives, so a burst of work reuses the Ms of the previous one.

use crate::context;
use crate::coop;
use crate::g::{self, GPtr};
use crate::loom::{fence, AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering::*};
use crate::p::{self, P, P_RUNNING};
use crate::park::Parker;
use crate::runq;
use crate::sched::Shared;
use crate::timer;
use std::cell::Cell;
use std::panic::Location;
use std::sync::{Arc as StdArc, Weak};
use std::task::Wake;
use std::task::Waker;
use std::time::Duration;

/// Consecutive `runnext` picks after which the ring gets a turn, so that two Gs that keep waking
/// each other into `runnext` cannot starve the Gs queued behind them. Go relies on sysmon's
/// 10 ms preemption for this; the bound makes it hold without waiting for sysmon.
const RUNNEXT_STREAK_MAX: u32 = 32;

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
    pub(crate) fn hand(&self, p: usize, spinning: bool) {
        self.next_spinning.store(spinning, Relaxed);
        self.nextp.store(p, Release);
    }

    pub(crate) fn take_hand(&self) -> Option<(usize, bool)> {
        let p = self.nextp.swap(NO_P, Acquire);
        (p != NO_P).then(|| (p, self.next_spinning.load(Relaxed)))
    }
}

/// The main future of an M inside `block_on`: its wake-up flag, and what a dump shows of it
/// (it is no G, but Go's goroutine 1 all the same).
pub(crate) struct MainState {
    notified: AtomicBool,
    m: StdArc<M>,
    /// To wake the netpoller when M0 sleeps in it (weak: a waker may outlive the runtime).
    shared: Weak<Shared>,
    /// Set while M0 polls the future.
    pub(crate) polling: AtomicBool,
    /// As `Header::wait_reason` and `Header::parked_at` for a G.
    pub(crate) wait_reason: AtomicU8,
    pub(crate) parked_at: AtomicU32,
    /// Where `block_on` was called.
    pub(crate) location: &'static Location<'static>,
}

impl Wake for MainState {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &StdArc<Self>) {
        // SeqCst, paired with `findrunnable`'s store of `in_netpoll` then load of `notified`:
        // either M0 sees the notification before it polls, or we see it in the poller.
        if !self.notified.swap(true, SeqCst) {
            self.m.parker.unpark();
            if self.m.in_netpoll.load(SeqCst) {
                if let Some(sh) = self.shared.upgrade() {
                    sh.netpoll.wake();
                }
            }
        }
    }
}

impl MainState {
    pub(crate) fn new(m: StdArc<M>, shared: &StdArc<Shared>, location: &'static Location<'static>) -> MainState {
        // Notified from the start: the first thing block_on does is poll.
        MainState {
            notified: AtomicBool::new(true),
            m,
            shared: StdArc::downgrade(shared),
            polling: AtomicBool::new(false),
            wait_reason: AtomicU8::new(0),
            parked_at: AtomicU32::new(0),
            location,
        }
    }

    pub(crate) fn take_notified(&self) -> bool {
        self.notified.swap(false, AcqRel)
    }

    pub(crate) fn is_notified(&self) -> bool {
        self.notified.load(SeqCst)
    }

    /// Whether the main future waits: not being polled, not woken.
    pub(crate) fn parked(&self) -> bool {
        !self.polling.load(SeqCst) && !self.notified.load(SeqCst)
    }

    /// The run ended early (see `fatal`): wakes M0 wherever it sleeps, so that `block_on`
    /// returns the ending.
    pub(crate) fn wake_for_ending(&self) {
        self.m.parker.unpark();
        if let Some(sh) = self.shared.upgrade() {
            sh.netpoll.wake();
        }
    }
}

/// What `findrunnable` found.
pub(crate) enum Found {
    G(GPtr, bool),
    /// The main future was woken (M0 only).
    Main,
    /// The run ended early (M0 only): `block_on` returns the ending as a panic (see `fatal`).
    Ended,
    Shutdown,
}

/// An M's own state, on its thread's stack, published through [`context`].
pub(crate) struct MCtx {
    pub(crate) shared: StdArc<Shared>,
    pub(crate) m: StdArc<M>,
    /// The P this M holds (Go's `m.p`).
    pub(crate) p: Cell<Option<usize>>,
    /// Go's `m.spinning`.
    spinning: Cell<bool>,
    /// Set for an M inside `block_on`.
    main: Option<StdArc<MainState>>,
    /// The G being polled (Go's `m.curg`).
    pub(crate) curg: Cell<Option<GPtr>>,
    /// After the main future yields, how many Gs run before it is polled again (so that a main
    /// G looping on `yield_now` lets the queue run, as Go's `Gosched` does).
    main_defer: Cell<usize>,
}

/// Entry point of an M thread started by `newm`, holding P `p`.
pub(crate) fn mstart(shared: StdArc<Shared>, p: usize, spinning: bool) {
    let _own = crate::checkdead::OwnThread::enter();
    // `Builder::on_thread_start`, before this M runs any G (its P waits meanwhile).
    if let Some(h) = &shared.config.on_thread_start {
        h.call_on_m("on_thread_start");
    }
    let ctx = MCtx::new(shared, StdArc::new(M::new()), None);
    ctx.acquirep(p);
    ctx.spinning.set(spinning);
    {
        let _enter = context::enter(&ctx);
        let found = ctx.schedule();
        debug_assert!(matches!(found, Found::Shutdown));
    }
    // `Builder::on_thread_stop`, after this M's last G.
    if let Some(h) = &ctx.shared.config.on_thread_stop {
        h.call_on_m("on_thread_stop");
    }
    ctx.shared.nthreads.fetch_sub(1, Relaxed);
}

impl MCtx {
    pub(crate) fn new(shared: StdArc<Shared>, m: StdArc<M>, main: Option<StdArc<MainState>>) -> MCtx {
        MCtx {
            shared,
            m,
            p: Cell::new(None),
            spinning: Cell::new(false),
            main,
            curg: Cell::new(None),
            main_defer: Cell::new(0),
        }
    }

    pub(crate) fn acquirep(&self, p: usize) {
        debug_assert!(self.p.get().is_none());
        let pp = &self.shared.ps[p];
        pp.status.store(P_RUNNING, Relaxed);
        // A request meant for the P's previous M's G.
        pp.preempt.store(false, Relaxed);
        #[cfg(not(loom))]
        pp.tid.store(crate::sysmon::current_tid(), Relaxed);
        self.p.set(Some(p));
        // SAFETY: the flag lives in `self.shared`, which this M keeps alive; it is unpublished
        // by `releasep` (or replaced by the next `acquirep`) before this M lets the P go.
        unsafe { coop::set_flag(&pp.preempt) };
    }

    /// Gives the P up (it must be handed to `pidleput` or `handoffp` by the caller).
    pub(crate) fn releasep(&self) -> Option<usize> {
        // SAFETY: null is always valid.
        unsafe { coop::set_flag(std::ptr::null()) };
        self.p.take()
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
        match (self.curg.get(), &self.main) {
            // SAFETY: the M polling `g` holds a reference to it for the whole poll.
            (Some(g), _) => Some(f(&unsafe { g.as_ref() }.wait_reason)),
            (None, Some(main)) if main.polling.load(Relaxed) => Some(f(&main.wait_reason)),
            _ => None,
        }
    }

    fn main_pending(&self) -> bool {
        self.main.as_ref().is_some_and(|m| m.is_notified())
    }

    /// Go's `schedule`: runs Gs until there is nothing else to do. Returns `Main` when this
    /// M's main future was woken, `Shutdown` when the runtime stops.
    pub(crate) fn schedule(&self) -> Found {
        loop {
            match self.findrunnable() {
                Found::G(g, inherit) => {
                    if self.spinning.get() {
                        self.resetspinning();
                    }
                    self.execute(g, inherit);
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
        let queued = self.p.get().map_or(0, |p| self.shared.ps[p].runq.len() + 1);
        self.main_defer.set(queued.max(1));
    }

    /// Go's `execute`: runs `g` on the current P, with a fresh time slice unless `inherit`.
    pub(crate) fn execute(&self, g: GPtr, inherit: bool) {
        if let Some(pid) = self.p.get() {
            let p = &self.shared.ps[pid];
            // SAFETY: this M owns `p`; no G runs inside the closure.
            let tick = unsafe {
                p.with_local(|l| {
                    if !inherit {
                        l.schedtick = l.schedtick.wrapping_add(1);
                    }
                    l.schedtick
                })
            };
            p.stats.schedtick.store(tick, Relaxed);
        }
        let d = self.main_defer.get();
        if d > 0 {
            self.main_defer.set(d - 1);
        }
        let outer = self.curg.replace(Some(g));
        // Who it is, for sysmon's report if the poll blocks the thread (read now: the G may be
        // freed by the time the poll returns).
        // SAFETY: we own the queue's reference, so the header is alive.
        let who = unsafe { g.as_ref() }.who();
        self.poll_start(who.goid);
        // SAFETY: `g` came out of a run queue with the queue's reference.
        let again = unsafe { g::run(g) };
        self.poll_end();
        coop::run_poll_end();
        self.check_detached(Some(who));
        self.curg.set(outer);
        if let Some(again) = again {
            // It woke itself during its poll (yield_now): to the back of the queue.
            self.shared.runqput(again, crate::sched::Put::Back);
        }
    }

    fn become_spinning(&self) {
        self.spinning.set(true);
        self.shared.nmspinning.fetch_add(1, SeqCst);
    }

    /// Go's `resetspinning`: this M found work and stops spinning; if it was the last spinner,
    /// wake another, since there may be more work than this M can take.
    fn resetspinning(&self) {
        self.spinning.set(false);
        let before = self.shared.nmspinning.fetch_sub(1, SeqCst);
        debug_assert!(before > 0, "goro: negative nmspinning");
        if before == 1 {
            self.shared.wakep();
        }
    }

    /// Go's `findrunnable`: a G to run, blocking (the M sleeps) until there is one.
    fn findrunnable(&self) -> Found {
        let sh = &*self.shared;
        'top: loop {
            if sh.shutdown.load(Acquire) {
                return Found::Shutdown;
            }
            if self.main_pending() && self.main_defer.get() == 0 {
                return Found::Main;
            }
            if self.is_main() && sh.ended.load(Acquire) {
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
            let p = &sh.ps[pid];

            // Go's `checkTimers`: run this P's expired timers (they may make Gs runnable here).
            // No lock and no clock read unless the heap has a timer.
            timer::check_timers(sh, pid, || sh.nanotime());

            // Work waiting outside our queue gets a turn every 61st tick, so a busy P cannot
            // starve it (Go's rule), and also once it has waited a time slice (sysmon's
            // `fairness_due`): Go's ticks last at most a time slice, as it preempts, but a goro
            // G that computes without yield points makes one tick as long as it likes.
            // SAFETY: this M owns `p`.
            let tick = unsafe { p.with_local(|l| l.schedtick) };
            let due = p.fairness_due.load(Relaxed);
            if due {
                p.fairness_due.store(false, Relaxed);
            }
            // An M back from a syscall waits for a P while this one stays busy: it gets ours.
            if (tick % 61 == 0 || due)
                && sh.syscall_waiting.load(Relaxed) != 0
                && !self.spinning.get()
                && self.handoff_to_syscall_waiter(pid)
            {
                continue 'top;
            }
            if due {
                if let Some(g) = self.globrunqget_due(p) {
                    return Found::G(g, false);
                }
            } else if tick % 61 == 0 && !sh.global.is_empty() {
                if let Some(g) = sh.global.pop() {
                    p::bump(&p.stats.global_runq_polls, 1);
                    return Found::G(g, false);
                }
            }

            if let Some((g, inherit)) = self.runqget(p) {
                return Found::G(g, inherit);
            }

            if let Some(g) = self.globrunqget(p) {
                return Found::G(g, false);
            }

            // Non-blocking netpoll, if some G waits for I/O and no M sleeps in the poller.
            if sh.netpoll.any_waiters() && sh.netpoll.lastpoll.load(Relaxed) != 0 {
                let mut ready = Vec::new();
                if sh.netpoll.poll(Some(Duration::ZERO), &mut ready) && !ready.is_empty() {
                    // Woken with our P held: they land on our run queue (Go's `injectglist`).
                    ready.into_iter().for_each(Waker::wake);
                    continue 'top;
                }
            }

            // Steal, unless enough Ms are spinning already: at most half the busy Ps' worth.
            let busy = sh.procs - sh.npidle.load(SeqCst);
            if self.spinning.get() || 2 * sh.nmspinning.load(SeqCst) < busy {
                if !self.spinning.get() {
                    self.become_spinning();
                }
                if let Some(g) = self.steal_work(p) {
                    return Found::G(g, false);
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
                let before = sh.nmspinning.fetch_sub(1, SeqCst);
                debug_assert!(before > 0, "goro: negative nmspinning");
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
            if let Some(found) = self.block_in_netpoll() {
                match found {
                    Some(found) => return found,
                    None => continue 'top,
                }
            }

            if let Some(found) = self.stopm() {
                return found;
            }
        }
    }

    /// The idle M's sleep in the netpoller (the end of Go's `findrunnable`). Returns `None` if
    /// this M should not poll (nothing to wait for, or another M polls: then `stopm`);
    /// `Some(None)` to look for work again (it holds a P, or may take one); `Some(Some(found))`
    /// to return `found`.
    fn block_in_netpoll(&self) -> Option<Option<Found>> {
        let sh = &*self.shared;
        let until = timer::earliest(sh);
        if until == 0 && !sh.netpoll.any_waiters() {
            return None;
        }
        if sh.netpoll.lastpoll.swap(0, SeqCst) == 0 {
            // Another M sleeps in the poller. If it sleeps past our earliest timer (it looked
            // before that timer was added), wake it to look again.
            let other = sh.netpoll.poll_until.load(SeqCst);
            if until != 0 && (other == 0 || other > until) {
                sh.netpoll.wake();
            }
            return None;
        }
        sh.netpoll.poll_until.store(until, SeqCst);
        self.m.in_netpoll.store(true, SeqCst);
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
        self.m.in_netpoll.store(false, SeqCst);
        sh.netpoll.poll_until.store(0, SeqCst);
        sh.netpoll.lastpoll.store(sh.nanotime(), SeqCst);
        if let Some(found) = self.stop_reason() {
            // Hand the ready Gs to whoever runs next (global queue, and an M woken for them).
            ready.into_iter().for_each(Waker::wake);
            return Some(Some(found));
        }
        match sh.pidleget() {
            Some(pid) => {
                self.acquirep(pid);
                ready.into_iter().for_each(Waker::wake);
                // Timers that expired on any P are run by the look for work that follows
                // (our own heap at the top, the others when stealing).
                Some(None)
            }
            None => {
                // Every P is busy: the ready Gs go to the global queue, where they find one.
                ready.into_iter().for_each(Waker::wake);
                None
            }
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
    fn runqget(&self, p: &P) -> Option<(GPtr, bool)> {
        // SAFETY (all blocks): this M owns `p`.
        let streak = unsafe { p.with_local(|l| l.runnext_streak) };
        let expired = p.preempt.load(Relaxed);
        if expired {
            // Consumed here: the next G starts a fresh slice.
            p.preempt.store(false, Relaxed);
        }
        let slice_over = expired || streak >= RUNNEXT_STREAK_MAX;
        if !slice_over {
            if let Some(g) = unsafe { p.runq.pop_runnext() } {
                unsafe { p.with_local(|l| l.runnext_streak += 1) };
                p::bump(&p.stats.runnext_runs, 1);
                return Some((g, true));
            }
        }
        unsafe { p.with_local(|l| l.runnext_streak = 0) };
        if let Some(g) = unsafe { p.runq.pop() } {
            return Some((g, false));
        }
        if slice_over {
            if let Some(g) = self.shared.global.pop() {
                p::bump(&p.stats.global_runq_polls, 1);
                return Some((g, false));
            }
        }
        let g = unsafe { p.runq.pop_runnext() }?;
        p::bump(&p.stats.runnext_runs, 1);
        Some((g, false))
    }

    /// Go's `globrunqget`: one G to run and a batch for the (empty) local ring.
    fn globrunqget(&self, p: &P) -> Option<GPtr> {
        let sh = &*self.shared;
        let g = sh.global.pop_batch(sh.procs, runq::CAP / 2, |rest| {
            // SAFETY: this M owns `p`, whose ring is empty (runqget just failed), and the batch
            // is at most CAP / 2 - 1 items.
            unsafe { p.runq.push_batch(rest) }
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
        let room = runq::CAP - p.runq.len();
        let g = sh.global.pop_batch(sh.procs, (runq::CAP / 2).min(room), |rest| {
            for g in rest {
                // SAFETY: this M owns `p`, and the batch fits in the room left.
                let overflow = unsafe { p.runq.push_back(g) };
                debug_assert!(overflow.is_none(), "goro: the batch overflowed the ring");
            }
        })?;
        p::bump(&p.stats.global_runq_polls, 1);
        Some(g)
    }

    /// Go's `stealWork`: four passes over the other Ps in random order, taking half of a
    /// victim's ring; only the last pass may take a victim's `runnext`, and only after a short
    /// pause if the victim is running (it is probably about to run it itself).
    fn steal_work(&self, p: &P) -> Option<GPtr> {
        let sh = &*self.shared;
        for pass in 0..4 {
            let last = pass == 3;
            // SAFETY: this M owns `p`.
            let r = unsafe { p.with_local(|l| l.fastrand()) };
            // The order covers every P slot; slots past `used` have never held a G.
            let used = sh.slots_used.load(Acquire);
            for victim in sh.order.start(r) {
                if victim == p.id || victim >= used {
                    continue;
                }
                if sh.shutdown.load(Relaxed) {
                    return None;
                }
                let v = &sh.ps[victim];
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
                // SAFETY: this M owns `p`, whose ring is empty (we only steal after runqget
                // and globrunqget failed).
                if let Some((g, n)) = unsafe { v.runq.steal_into(&p.runq, last, pause) } {
                    p::bump(&p.stats.steals, 1);
                    p::bump(&p.stats.stolen_gs, n as u64);
                    return Some(g);
                }
            }
        }
        None
    }

    /// Go's `stopm`: sleep in the idle-M list until handed a P (then `None`: go on scheduling),
    /// or until this M's main future is woken or the runtime shuts down.
    fn stopm(&self) -> Option<Found> {
        let sh = &*self.shared;
        debug_assert!(self.p.get().is_none());
        {
            let mut idle = sh.idle.lock();
            if let Some(found) = self.stop_reason() {
                return Some(found);
            }
            idle.midle.push(self.m.clone());
            sh.nmidle.fetch_add(1, Relaxed);
        }
        loop {
            self.m.parker.park();
            let mut idle = sh.idle.lock();
            if let Some((p, spinning)) = self.m.take_hand() {
                // `startm` already took us off the list.
                drop(idle);
                self.acquirep(p);
                if spinning {
                    // Counted in nmspinning by whoever woke us.
                    self.spinning.set(true);
                }
                return None;
            }
            if let Some(found) = self.stop_reason() {
                // Still on the list (no hand-off happened, and hand-offs run under this lock).
                let me = StdArc::as_ptr(&self.m);
                idle.midle.retain(|m| !std::ptr::eq(StdArc::as_ptr(m), me));
                sh.nmidle.fetch_sub(1, Relaxed);
                return Some(found);
            }
        }
    }

    fn stop_reason(&self) -> Option<Found> {
        if self.shared.shutdown.load(Acquire) {
            Some(Found::Shutdown)
        } else if self.main_pending() {
            Some(Found::Main)
        } else if self.is_main() && self.shared.ended.load(Acquire) {
            Some(Found::Ended)
        } else {
            None
        }
    }
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
