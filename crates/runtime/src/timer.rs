//! Timers: a heap of deadlines per P, run by the scheduler (Go 1.14+'s design, `runtime/time.go`).
//!
//! A timer ([`TimerCore`]) is shared between its owner (a `Sleep` future, a `goro::time::Timer`,
//! …) and at most one live entry in some P's [`TimerHeap`]. Arming pushes an entry onto the
//! current P's heap; the P's M runs the expired entries of its own heap at every `schedule`
//! (`checkTimers`), spinning Ms run the expired entries of other Ps' heaps when they look for
//! work (Go's timer stealing), and the M that goes to sleep last blocks in the netpoller until
//! the earliest deadline of all heaps. Nothing here has a thread of its own.
//!
//! # Invariants
//!
//! - An entry is *live* iff its `gen` equals its timer's `gen`; every arm and stop bumps the
//!   timer's `gen`, which turns the old entry stale. Stale entries are skipped when they reach
//!   the top of their heap and dropped in bulk when they pass a quarter of it (Go's
//!   `timerDeleted` and `cleantimers`), so stop and reset never search a heap.
//! - A timer's `state` lock is taken before any heap lock, never the other way (arming takes the
//!   timer lock, then the heap's; running a heap pops under the heap lock, releases it, then
//!   takes the timer lock), so the two cannot deadlock.
//! - A timer fires under its `state` lock, after re-checking that the popped entry is live. So
//!   once [`TimerCore::stop`] (or a re-arm) returns, the old arming will never fire: what Go
//!   1.23 guarantees for `Stop` and `Reset`.
//! - A heap's [`earliest`](TimerHeap::earliest) (Go's `p.timer0When`) is the deadline at its
//!   top (stale or not), 0 for an empty heap, written under the heap lock; readers use it to
//!   skip the lock and the clock. The heap keeps it and its stale count itself, and a push tells
//!   the pusher whether the earliest deadline moved.
//!
//! # Timers move with their P
//!
//! Go's rule: a P's timers are run by whoever runs the P (its owner at every `schedule`, a
//! thief that steals from it, the idle M that sleeps until the earliest deadline and then
//! takes an idle P), so a timer must always sit on a P slot that is *in use* (idle, running or
//! in a syscall). goro also takes slots out of use: sysmon detaches a P whose M is stuck in a
//! poll that blocks its thread and hands its work to a spare slot, and the stuck M turns the
//! detached P into a spare when its poll returns. Neither is ever run again, so timers left
//! there never fired (a detached P's run queue moved, its heap did not). Two rules keep every
//! entry on a slot in use:
//!
//! 1. Whoever takes a slot out of use (sysmon detaching a P; a spare put back unused) first
//!    publishes its status, then moves the slot's heap to a slot in use ([`move_timers`], Go's
//!    `moveTimers`).
//! 2. Whoever pushes an entry onto a heap (an arming, a ticker's next arming, a move) reads the
//!    slot's status after the push, and if the slot is out of use, moves that heap itself.
//!
//! An entry pushed before the mover of rule 1 took the heap (the heap lock orders the two) is
//! moved by it; one pushed after sees the status the mover published before taking the heap,
//! and rule 2 moves it. So a slot out of use holds an entry only until its pusher has moved it,
//! and a detached P that becomes a spare has nothing left to move. The loom models
//! `loom_tests::timer::loom_timer_moves_with_a_detached_p` and
//! `loom_timer_ticker_fired_on_a_detached_p_moves` run a detach against an arming by the stuck
//! G and a thief firing the P's heap; each rule is needed for them to pass.
//!
//! A slot in use can strand its timers too: its M runs them at its next `schedule`, and while
//! its G computes without returning from its poll that may be never; the other Ms steal timers
//! only when they run out of work. Go preempts the G. sysmon instead moves such a P's heap,
//! once a timer in it is due, to a P whose M schedules (`sysmon::move_work_off_stuck_polls`);
//! both slots stay in use, so neither rule is involved, and an entry the computing G pushes
//! meanwhile stays on its own heap until the next move.

use crate::loom::{AtomicU64, AtomicUsize, Mutex, Ordering::*};
use std::collections::BinaryHeap;
use std::sync::Arc as StdArc;
use std::task::Waker;

/// Nanoseconds since the runtime started (Go's `nanotime`), never 0: 0 means "no timer".
pub(crate) type Nanos = u64;

/// What the timers need of the runtime whose P slots hold their heaps (`sched::Shared`
/// implements it): the timer layer names no scheduler type.
pub(crate) trait Heaps {
    /// The heap of P slot `p`.
    fn heap(&self, p: usize) -> &TimerHeap;
    /// P slots `0..heaps_used()` may hold timers (the slots ever used).
    fn heaps_used(&self) -> usize;
    /// Whether P slot `p` is in use (rule 2 of "Timers move with their P": a relaxed read of
    /// its status is enough, see `rehome_if_out_of_use`).
    fn slot_in_use(&self, p: usize) -> bool;
    /// A P slot in use, for timers that have no P of their own.
    fn timer_home(&self) -> usize;
    /// The P slot the calling thread holds in this runtime, if any.
    fn current_p(&self) -> Option<usize>;
    /// A timer due at `when` became the earliest of its heap (Go's `wakeNetPoller`).
    fn wake_netpoller(&self, when: Nanos);
}

/// What a timer does when it fires. Runs on an M, under the timer's lock: it must be short and
/// must not touch this timer (waking a G, a non-blocking channel send and spawning a G are all
/// fine).
pub(crate) enum Action {
    /// Wake the G (or task) waiting on the timer: a `Sleep` future. Taken when it fires.
    Wake(Option<Waker>),
    /// Call a function (a channel send for `Timer`/`Ticker`, a spawn for `after_func`). For a
    /// periodic timer, `false` stops it (a ticker whose channel nobody can receive from).
    Call(Box<dyn FnMut() -> bool + Send>),
}

struct State {
    /// Whether the current `gen` has an entry in a heap.
    armed: bool,
    /// The deadline of the current arming.
    when: Nanos,
    /// Re-arm `period` after each firing (a ticker); 0 for a one-shot timer.
    period: Nanos,
    /// The P whose heap holds the live entry.
    heap: usize,
    action: Action,
}

/// One timer, shared by its owner and its heap entry.
pub(crate) struct TimerCore {
    /// Bumped by every arm and stop, under `state`; read without the lock to spot stale entries.
    gen: AtomicU64,
    state: Mutex<State>,
}

/// A heap entry: the timer, the deadline and generation it was armed with.
struct Entry {
    when: Nanos,
    gen: u64,
    timer: StdArc<TimerCore>,
}

impl Entry {
    fn is_live(&self) -> bool {
        self.timer.gen.load(Acquire) == self.gen
    }
}

impl PartialEq for Entry {
    fn eq(&self, o: &Entry) -> bool {
        self.when == o.when
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest deadline must be on top.
    fn cmp(&self, o: &Entry) -> std::cmp::Ordering {
        o.when.cmp(&self.when)
    }
}

/// One P's timers (Go's `p.timers` with `p.timersLock`).
pub(crate) struct TimerHeap {
    heap: Mutex<BinaryHeap<Entry>>,
    /// Entries made stale by stop or re-arm that are still in `heap` (Go's `deletedTimers`).
    stale: AtomicUsize,
    /// The deadline at the top of `heap` (Go's `p.timer0When`; 0: empty), written under its
    /// lock.
    timer0: AtomicU64,
}

/// What [`TimerHeap::pop_expired`] found at the top of the heap.
enum Top {
    /// An entry due by `now`, popped.
    Due(Entry),
    /// Nothing due (or the heap is empty).
    NotYet,
}

impl TimerHeap {
    pub(crate) fn new() -> TimerHeap {
        TimerHeap { heap: Mutex::new(BinaryHeap::new()), stale: AtomicUsize::new(0), timer0: AtomicU64::new(0) }
    }

    /// The earliest deadline in the heap, stale or not (0: empty), without its lock.
    #[inline]
    pub(crate) fn earliest(&self) -> Nanos {
        self.timer0.load(Acquire)
    }

    /// Pushes `e`; returns whether it became the earliest deadline here. Drops the stale entries
    /// in bulk once they are a quarter of the heap (Go's `cleantimers`).
    fn push(&self, e: Entry) -> bool {
        let when = e.when;
        let mut heap = self.heap.lock();
        let before = self.timer0.load(Relaxed);
        heap.push(e);
        let stale = self.stale.load(Relaxed);
        if stale > 64 && stale > heap.len() / 4 {
            let before = heap.len();
            let live: Vec<Entry> = std::mem::take(&mut *heap).into_iter().filter(Entry::is_live).collect();
            let removed = before - live.len();
            let _ = self.stale.fetch_update(Relaxed, Relaxed, |s| Some(s.saturating_sub(removed)));
            *heap = BinaryHeap::from(live);
        }
        let top = heap.peek().map_or(0, |e| e.when);
        self.timer0.store(top, Release);
        drop(heap);
        before == 0 || when < before
    }

    /// Pops the top entry if it is due by `now`.
    fn pop_expired(&self, now: Nanos) -> Top {
        let mut heap = self.heap.lock();
        let Some(top) = heap.peek() else {
            self.timer0.store(0, Release);
            return Top::NotYet;
        };
        if top.when > now {
            self.timer0.store(top.when, Release);
            return Top::NotYet;
        }
        let e = heap.pop().expect("peeked");
        self.timer0.store(heap.peek().map_or(0, |e| e.when), Release);
        Top::Due(e)
    }

    /// Takes every entry out (a move to another heap).
    fn take_all(&self) -> BinaryHeap<Entry> {
        let mut heap = self.heap.lock();
        self.timer0.store(0, Release);
        std::mem::take(&mut *heap)
    }

    /// An entry of this heap turned stale (stopped or re-armed), before its `gen` moved.
    fn mark_stale(&self) {
        self.stale.fetch_add(1, Relaxed);
    }

    /// A stale entry left the heap.
    fn unmark_stale(&self) {
        let _ = self.stale.fetch_update(Relaxed, Relaxed, |s| s.checked_sub(1));
    }

    /// The earliest live deadline (0: none), dropping the stale entries above it: where a
    /// bubble's clock jumps to (a stopped timer must not move it).
    fn earliest_live(&self) -> Nanos {
        if self.earliest() == 0 {
            return 0;
        }
        let mut heap = self.heap.lock();
        while heap.peek().is_some_and(|e| !e.is_live()) {
            heap.pop();
            self.unmark_stale();
        }
        let top = heap.peek().map_or(0, |e| e.when);
        self.timer0.store(top, Release);
        top
    }

    /// Whether a live entry is in the heap (it stops at the first one).
    fn any_live(&self) -> bool {
        self.earliest() != 0 && self.heap.lock().iter().any(Entry::is_live)
    }

    /// Entries in the heap, stale ones included.
    pub(crate) fn len(&self) -> usize {
        self.heap.lock().len()
    }

    /// The deadlines of the live entries, the number of stale entries, and the `stale` count
    /// (which should equal it): what the loom models check after their threads are joined.
    #[cfg(all(test, loom))]
    pub(crate) fn census(&self) -> (Vec<Nanos>, usize, usize) {
        let heap = self.heap.lock();
        let live: Vec<Nanos> = heap.iter().filter(|e| e.is_live()).map(|e| e.when).collect();
        (live.clone(), heap.len() - live.len(), self.stale.load(Relaxed))
    }

    /// Drops every entry (runtime shutdown: breaks the timer → runtime → heap cycle).
    pub(crate) fn clear(&self) -> usize {
        self.take_all().len()
    }
}

impl TimerCore {
    pub(crate) fn new(action: Action) -> TimerCore {
        TimerCore {
            gen: AtomicU64::new(0),
            state: Mutex::new(State { armed: false, when: 0, period: 0, heap: 0, action }),
        }
    }

    /// Arms the timer to fire at `when` (then every `period`, if not 0) on `sh`'s heaps, replacing
    /// any earlier arming (Go's `modtimer`). Returns whether it was armed before (Go's `Reset`
    /// result).
    pub(crate) fn arm<H: Heaps + ?Sized>(self: &StdArc<Self>, sh: &H, when: Nanos, period: Nanos) -> bool {
        let when = when.max(1);
        let p = sh.current_p().unwrap_or_else(|| sh.timer_home());
        let mut st = self.state.lock();
        let was = st.armed;
        if was {
            sh.heap(st.heap).mark_stale();
        }
        let gen = self.gen.load(Relaxed) + 1;
        self.gen.store(gen, Release);
        st.armed = true;
        st.when = when;
        st.period = period;
        st.heap = p;
        let earliest = sh.heap(p).push(Entry { when, gen, timer: self.clone() });
        drop(st);
        if earliest {
            sh.wake_netpoller(when);
        }
        // Rule 2 of the module docs (our P may have been detached by sysmon meanwhile).
        rehome_if_out_of_use(sh, p);
        was
    }

    /// Disarms the timer (Go's `deltimer`); returns whether it was armed. Once this returns, the
    /// arming it cancelled cannot fire. `sh` is the runtime the timer was armed on, if the
    /// caller has it (it only keeps the heap's count of stale entries exact).
    pub(crate) fn stop<H: Heaps + ?Sized>(&self, sh: Option<&H>) -> bool {
        let mut st = self.state.lock();
        if !st.armed {
            return false;
        }
        st.armed = false;
        // Counted before the entry turns stale (the `gen` store): an M that then sees it stale
        // and uncounts it must find the count there (as in `arm`).
        if let Some(sh) = sh {
            sh.heap(st.heap).mark_stale();
        }
        self.gen.store(self.gen.load(Relaxed) + 1, Release);
        true
    }

    /// Whether the timer is armed.
    pub(crate) fn is_armed(&self) -> bool {
        self.state.lock().armed
    }

    /// Replaces the waker of a `Wake` timer; `false` if the timer is not armed (it fired or was
    /// stopped), in which case the waker is not kept.
    pub(crate) fn set_waker(&self, w: &Waker) -> bool {
        let mut st = self.state.lock();
        if !st.armed {
            return false;
        }
        if let Action::Wake(slot) = &mut st.action {
            match slot {
                Some(old) if old.will_wake(w) => {}
                _ => *slot = Some(w.clone()),
            }
        }
        true
    }

    /// Fires the arming `gen` if it is still the live one; for a ticker, pushes the next arming
    /// onto heap `p`. Called with no heap lock held.
    fn fire<H: Heaps + ?Sized>(self: &StdArc<Self>, sh: &H, p: usize, gen: u64, now: Nanos) {
        let mut st = self.state.lock();
        if !st.armed || self.gen.load(Relaxed) != gen {
            // Stopped or re-armed after the entry was popped live: that stop or arm counted the
            // entry as stale in heap `p` (where the live entry was), and it has left the heap.
            sh.heap(p).unmark_stale();
            return;
        }
        if let Some(behind) = now.saturating_sub(st.when).checked_div(st.period) {
            // A ticker. Go's catch-up: the next deadline is the first period boundary after now.
            st.when += st.period * (behind + 1);
            let next = self.gen.load(Relaxed) + 1;
            self.gen.store(next, Release);
            st.heap = p;
            let when = st.when;
            sh.heap(p).push(Entry { when, gen: next, timer: self.clone() });
        } else {
            st.armed = false;
        }
        match &mut st.action {
            Action::Wake(w) => {
                // Woken after the lock is released: a waker is foreign code.
                let w = w.take();
                drop(st);
                if let Some(w) = w {
                    w.wake();
                }
            }
            Action::Call(f) => {
                if !f() && st.period > 0 && st.armed {
                    st.armed = false;
                    sh.heap(p).mark_stale();
                    self.gen.store(self.gen.load(Relaxed) + 1, Release);
                }
            }
        }
    }
}

/// Runs the expired timers of P `p`'s heap (Go's `runtimer` loop in `checkTimers`); returns how
/// many fired. Any M may call it for any P (the heap has its own lock): the P's owner at every
/// `schedule`, a spinning M to steal another P's expired timers.
pub(crate) fn run_timers<H: Heaps + ?Sized>(sh: &H, p: usize, now: Nanos) -> usize {
    let t = &sh.heap(p);
    let mut fired = 0;
    loop {
        match t.pop_expired(now) {
            Top::NotYet => {
                // Rule 2 of the module docs: a ticker that fired here re-armed on this heap.
                if fired > 0 {
                    rehome_if_out_of_use(sh, p);
                }
                return fired;
            }
            Top::Due(e) if !e.is_live() => t.unmark_stale(),
            Top::Due(e) => {
                e.timer.fire(sh, p, e.gen, now);
                fired += 1;
            }
        }
    }
}

/// [`run_timers`] for a synctest bubble: the timers due by `now` fire in the order `pick`
/// chooses (`pick(n)` is an index below `n`), so that the order of timers due at one instant
/// comes from the bubble's seed, as every other choice of a bubble does.
pub(crate) fn run_timers_picked<H: Heaps + ?Sized>(
    sh: &H,
    p: usize,
    now: Nanos,
    mut pick: impl FnMut(usize) -> usize,
) -> usize {
    let t = &sh.heap(p);
    let mut due = Vec::new();
    loop {
        match t.pop_expired(now) {
            Top::NotYet => break,
            Top::Due(e) if !e.is_live() => t.unmark_stale(),
            Top::Due(e) => due.push(e),
        }
    }
    let fired = due.len();
    while !due.is_empty() {
        // Each popped entry is fired once, as `run_timers` does; one stopped meanwhile is
        // skipped by `fire`'s check of its generation.
        let e = due.swap_remove(pick(due.len()));
        e.timer.fire(sh, p, e.gen, now);
    }
    if fired > 0 {
        rehome_if_out_of_use(sh, p);
    }
    fired
}

/// Moves the live entries of P slot `from`'s heap to slot `to`'s (Go's `moveTimers`): the
/// step of rule 1 of the module docs, after `from` went out of use. Entries made stale
/// meanwhile are dropped; `to` is re-checked by rule 2 (it may have gone out of use since it
/// was chosen). Takes each timer's lock, so it must be called with no timer, heap or
/// scheduler lock held.
pub(crate) fn move_timers<H: Heaps + ?Sized>(sh: &H, from: usize, to: usize) {
    debug_assert_ne!(from, to, "goro: moving a heap onto itself");
    let t = &sh.heap(from);
    let entries = t.take_all();
    if entries.is_empty() {
        return;
    }
    let mut earliest = None;
    for e in entries.into_vec() {
        let timer = e.timer.clone();
        let mut st = timer.state.lock();
        if !st.armed || timer.gen.load(Relaxed) != e.gen || st.heap != from {
            // Stale: the stop or re-arm that made it so counted it in `from`'s heap.
            drop(st);
            t.unmark_stale();
            continue;
        }
        st.heap = to;
        let when = e.when;
        if sh.heap(to).push(e) {
            earliest = Some(earliest.map_or(when, |w: Nanos| w.min(when)));
        }
        drop(st);
    }
    if let Some(when) = earliest {
        sh.wake_netpoller(when);
    }
    rehome_if_out_of_use(sh, to);
}

/// Rule 2 of the module docs: after a push onto slot `p`'s heap, if `p` is out of use (sysmon
/// detached it, or it became a spare), moves its heap to a slot in use.
fn rehome_if_out_of_use<H: Heaps + ?Sized>(sh: &H, p: usize) {
    // Relaxed is enough: the mover of rule 1 stored the status before taking the heap under
    // its lock, and our push released the same lock after that, or came first (then the
    // mover took our entry).
    if !sh.slot_in_use(p) && sh.heap(p).earliest() != 0 {
        move_timers(sh, p, sh.timer_home());
    }
}

/// If P `p` has a timer due by `now` (without taking any lock when it has none), runs them.
#[inline]
pub(crate) fn check_timers<H: Heaps + ?Sized>(sh: &H, p: usize, now: impl FnOnce() -> Nanos) -> usize {
    let next = sh.heap(p).earliest();
    if next == 0 {
        return 0;
    }
    let now = now();
    if next > now {
        return 0;
    }
    run_timers(sh, p, now)
}

/// Whether a timer armed on `sh` has not fired yet (stale entries of stopped or re-armed timers
/// do not count), for `checkdead`: a live timer will wake something. Stops at the first live
/// entry (with 100_000 Gs asleep, the first one looked at): sysmon asks every round while the
/// Ps idle, and a heap lock held long would hold up its firings.
pub(crate) fn any_live_timer<H: Heaps + ?Sized>(sh: &H) -> bool {
    (0..sh.heaps_used()).any(|p| sh.heap(p).any_live())
}

/// The earliest deadline over every P's heap (stale entries included: a stale top only makes
/// the sleeper wake early and look again), or 0 if no heap has one.
pub(crate) fn earliest<H: Heaps + ?Sized>(sh: &H) -> Nanos {
    (0..sh.heaps_used()).map(|p| sh.heap(p).earliest()).filter(|&w| w != 0).min().unwrap_or(0)
}

/// The earliest live deadline over every P's heap, or 0 (a bubble's next clock move).
pub(crate) fn earliest_live<H: Heaps + ?Sized>(sh: &H) -> Nanos {
    (0..sh.heaps_used()).map(|p| sh.heap(p).earliest_live()).filter(|&w| w != 0).min().unwrap_or(0)
}
