//! Virtual time in a model: the clock, a loom thread that fires armed timers in deadline order.
//!
//! Arming a timer pushes an entry onto the clock's heap (starting the clock's thread on the
//! first arming) and wakes the clock. The clock pops the earliest live entry, moves the virtual
//! time to its deadline and fires it; with nothing armed it parks. Because the clock is a loom
//! thread like the Gs, loom explores its firing before and after each step of every G: "the
//! timer fired first" and "the message came first" are both seen. Nothing but the clock moves
//! the time, so durations are exact and timers fire in deadline order (ties in arming order).
//!
//! As in the runtime's timers (`crate::timer`), a timer fires under its own lock after checking
//! that the entry is still its current arming, so once `stop` or a re-arm returns, an earlier
//! arming can no longer fire (Go 1.23's guarantee, which `goro::time::Timer` relies on). That
//! lock is a loom mutex; the heap is model bookkeeping (a std mutex, never held across a loom
//! operation).

use super::{current, lock, Cur, Model};
use crate::loom::Mutex;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

/// What a timer does when it fires (as the runtime's `timer::Action`).
pub(crate) enum Action {
    /// Wake the task waiting on it: a `Sleep`.
    Wake(Option<Waker>),
    /// Call a function; for a periodic timer, `false` stops it.
    Call(Box<dyn FnMut() -> bool + Send>),
}

struct State {
    /// Bumped by every arm and stop: an entry of an older arming is stale.
    gen: u64,
    armed: bool,
    /// A one-shot arming fired (what a `Sleep` polls).
    fired: bool,
    period: Duration,
    action: Action,
}

struct Core {
    /// `State::gen`, readable without the lock so the clock skips stale entries cheaply (the
    /// firing checks again under the lock).
    gen: AtomicU64,
    state: Mutex<State>,
}

/// A timer of the model: the model's stand-in for the runtime's `TimerCore`.
pub(crate) struct Timer(Arc<Core>);

impl Timer {
    pub(crate) fn new(action: Action) -> Timer {
        Timer(Arc::new(Core {
            gen: AtomicU64::new(0),
            state: Mutex::new(State { gen: 0, armed: false, fired: false, period: Duration::ZERO, action }),
        }))
    }

    /// Arms the timer for `deadline` (then every `period`, if not zero), replacing any earlier
    /// arming; `None` never fires. Returns whether it was armed.
    ///
    /// # Panics
    /// Outside a model, or when the clock needs a loom thread and none is left.
    pub(crate) fn arm(&self, deadline: Option<Instant>, period: Duration) -> bool {
        let cur = current().expect("goro: a model's timer armed outside the model");
        let m = &cur.model;
        let mut st = self.0.state.lock();
        let was = st.armed;
        st.gen += 1;
        self.0.gen.store(st.gen, Relaxed);
        st.fired = false;
        st.armed = deadline.is_some();
        st.period = period;
        let Some(deadline) = deadline else { return was };
        let when = deadline.saturating_duration_since(m.base);
        m.clock.push(when, st.gen, &self.0);
        drop(st);
        m.clock.kick(m);
        was
    }

    /// Disarms the timer; returns whether it was armed.
    pub(crate) fn stop(&self) -> bool {
        let mut st = self.0.state.lock();
        let was = st.armed;
        st.armed = false;
        st.gen += 1;
        self.0.gen.store(st.gen, Relaxed);
        was
    }

    pub(crate) fn is_armed(&self) -> bool {
        self.0.state.lock().armed
    }

    /// For a `Sleep`: whether its arming fired; if not, `waker` is woken when it does.
    pub(crate) fn poll_fired(&self, waker: &Waker) -> bool {
        let mut st = self.0.state.lock();
        if st.fired {
            return true;
        }
        match &mut st.action {
            Action::Wake(w) => match w {
                Some(w) if w.will_wake(waker) => {}
                _ => *w = Some(waker.clone()),
            },
            Action::Call(_) => unreachable!("goro: a function timer polled as a sleep"),
        }
        false
    }
}

/// A heap entry: the arming `gen` of timer `core`, due at `when`.
struct Entry {
    when: Duration,
    /// Arming order, for ties.
    seq: u64,
    gen: u64,
    core: Arc<Core>,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Entry) -> bool {
        (self.when, self.seq) == (o.when, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest entry must be on top.
    fn cmp(&self, o: &Entry) -> std::cmp::Ordering {
        (o.when, o.seq).cmp(&(self.when, self.seq))
    }
}

struct Heap {
    /// The virtual time since the model's `base`.
    now: Duration,
    seq: u64,
    entries: BinaryHeap<Entry>,
}

/// The model's clock.
pub(crate) struct Clock {
    heap: StdMutex<Heap>,
    /// The clock's thread, once started.
    thread: OnceLock<loom::thread::Thread>,
    started: AtomicBool,
    /// Parked with nothing armed: only then may an arming unpark it (see `GSlot::park`).
    parked: AtomicBool,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            heap: StdMutex::new(Heap { now: Duration::ZERO, seq: 0, entries: BinaryHeap::new() }),
            thread: OnceLock::new(),
            started: AtomicBool::new(false),
            parked: AtomicBool::new(false),
        }
    }

    pub(crate) fn started(&self) -> bool {
        self.started.load(Relaxed)
    }

    /// The virtual time since the model began.
    pub(crate) fn now(&self) -> Duration {
        lock(&self.heap).now
    }

    fn push(&self, when: Duration, gen: u64, core: &Arc<Core>) {
        let mut h = lock(&self.heap);
        let seq = h.seq;
        h.seq += 1;
        h.entries.push(Entry { when, seq, gen, core: core.clone() });
    }

    /// After an arming: start the clock's thread if this is the first, else wake it if parked.
    fn kick(&self, m: &Arc<Model>) {
        if !self.started.load(Relaxed) {
            m.take_thread(&"arming a timer (which starts the model's clock)");
            self.started.store(true, Relaxed);
            let model = m.clone();
            let spawned = loom::thread::Builder::new()
                .name("goro model clock".to_owned())
                .stack_size(super::G_STACK_WORDS)
                .spawn(move || run(model))
                .expect("loom spawns");
            drop(spawned);
            return;
        }
        self.wake();
    }

    /// Unparks the clock's thread if it waits for an arming (or for the model's end).
    pub(crate) fn wake(&self) {
        if self.parked.swap(false, Relaxed) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }

    /// Drops every entry (the model's end: the entries hold the timers' functions).
    pub(crate) fn clear(&self) {
        let entries = std::mem::take(&mut lock(&self.heap).entries);
        drop(entries);
    }

    /// The earliest live entry, with the time moved to its deadline; `None` (and `parked` set)
    /// if nothing is armed.
    fn next(&self) -> Option<Entry> {
        let mut h = lock(&self.heap);
        while let Some(e) = h.entries.pop() {
            if e.core.gen.load(Relaxed) != e.gen {
                continue; // stopped or re-armed since
            }
            h.now = h.now.max(e.when);
            return Some(e);
        }
        self.parked.store(true, Relaxed);
        None
    }
}

impl Drop for Clock {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // A failed execution: the entries' functions hold goro values whose destructors do
            // loom operations, which panic outside the execution (see `super::LEAK`).
            let h = self.heap.get_mut().unwrap_or_else(|e| e.into_inner());
            std::mem::forget(std::mem::take(&mut h.entries));
        }
    }
}

/// The clock's thread.
fn run(m: Arc<Model>) {
    let clock = &m.clock;
    let _ = clock.thread.set(loom::thread::current());
    super::enter(Cur { model: m.clone(), g: None });
    while !m.ending.load(Relaxed) {
        match clock.next() {
            // No loom operation since `next` set `parked`: an arming from now on unparks us.
            None => {
                loom::thread::park();
                clock.parked.store(false, Relaxed);
            }
            Some(e) => {
                if fire(clock, e) {
                    // A ticker re-armed itself: let the Gs run before its next tick, or a
                    // ticker nobody reads would keep the clock busy forever.
                    loom::thread::yield_now();
                }
            }
        }
    }
    m.thread_stopped();
}

/// Fires `e` if it is still its timer's current arming; returns whether the timer re-armed
/// itself (a ticker).
fn fire(clock: &Clock, e: Entry) -> bool {
    let mut st = e.core.state.lock();
    if st.gen != e.gen || !st.armed {
        return false;
    }
    let periodic = !st.period.is_zero();
    if periodic {
        clock.push(e.when + st.period, st.gen, &e.core);
    } else {
        st.armed = false;
        st.fired = true;
    }
    match &mut st.action {
        Action::Wake(w) => {
            let w = w.take();
            drop(st);
            if let Some(w) = w {
                w.wake();
            }
        }
        // Under the timer's lock, so that `stop` waits for it (see the module docs).
        Action::Call(f) => {
            if !f() && periodic {
                st.armed = false;
                st.gen += 1;
                e.core.gen.store(st.gen, Relaxed);
                return false;
            }
        }
    }
    periodic
}
