//! The main futures: each thread inside `Runtime::block_on` is an M (M0 in Go's terms) that
//! polls its future whenever the future is woken. It is no G, but it is Go's goroutine 1 all
//! the same: the dump shows it, `num_goroutine` counts it, and the deadlock checks wait for it.
//! [`MainState`] is one such future's wake-up flag and what a dump shows of it; [`Mains`] is
//! the runtime's list of them.

use crate::idle::M;
use crate::loom::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Mutex, Ordering::*};
use crate::netpoll::Breaker;
use std::panic::Location;
use std::sync::{Arc as StdArc, Weak};
use std::task::Wake;

/// The main future of an M inside `block_on`.
pub(crate) struct MainState {
    notified: AtomicBool,
    m: StdArc<M>,
    /// To wake the netpoller when M0 sleeps in it (weak: a waker may outlive the runtime).
    netpoll: Weak<Breaker>,
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
        // Paired with `block_in_netpoll`'s store of `in_netpoll`, fence, then load of
        // `notified`: either M0 sees the notification before it polls, or we see it in the
        // poller. The fence between our swap and our load, besides the `SeqCst` of both, is for
        // loom, which models `SeqCst` accesses as acquire/release and only fences as `SeqCst`:
        // without it a model where M0 sleeps in the poller finds this wake lost. A main
        // future's wake is rare enough to pay for it.
        if !self.notified.swap(true, SeqCst) {
            fence(SeqCst);
            self.m.parker.unpark();
            if self.m.in_netpoll() {
                if let Some(np) = self.netpoll.upgrade() {
                    np.wake();
                }
            }
        }
    }
}

impl MainState {
    pub(crate) fn new(m: StdArc<M>, netpoll: Weak<Breaker>, location: &'static Location<'static>) -> MainState {
        // Notified from the start: the first thing block_on does is poll.
        MainState {
            notified: AtomicBool::new(true),
            m,
            netpoll,
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
        if let Some(np) = self.netpoll.upgrade() {
            np.wake();
        }
    }
}

/// The main futures of one runtime, and what the dump and the deadlock checks read of them.
pub(crate) struct Mains {
    /// The futures inside `block_on` right now.
    list: Mutex<Vec<StdArc<MainState>>>,
    /// Their number, read without the lock (`num_goroutine`, metrics).
    count: AtomicUsize,
    /// Polls of the main futures (for `checkdead`'s activity count).
    polls: AtomicU64,
    /// The goid of the main G of `#[goro::main]`/`#[goro::test]` (`entry`), for the dump; 0
    /// while there is none.
    goid: AtomicU64,
    /// Set while a thread waits for the runtime's main G (`Runtime::poll_ending`).
    waiting: AtomicBool,
}

impl Mains {
    pub(crate) fn new() -> Mains {
        Mains {
            list: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
            polls: AtomicU64::new(0),
            goid: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
        }
    }

    /// A thread entered `block_on` with `main`.
    pub(crate) fn enter(&self, main: StdArc<MainState>) {
        self.list.lock().push(main);
        self.count.fetch_add(1, Relaxed);
    }

    /// The thread of `main` left `block_on`.
    pub(crate) fn leave(&self, main: &StdArc<MainState>) {
        self.list.lock().retain(|m| !StdArc::ptr_eq(m, main));
        self.count.fetch_sub(1, Relaxed);
    }

    /// Threads inside `block_on` now.
    pub(crate) fn count(&self) -> usize {
        self.count.load(Relaxed)
    }

    /// The futures inside `block_on` now (a copy: the caller may wake them, which must not
    /// happen under the list's lock).
    pub(crate) fn snapshot(&self) -> Vec<StdArc<MainState>> {
        self.list.lock().clone()
    }

    /// Runs `f` over the futures inside `block_on` now, under the list's lock: `f` reads, and
    /// wakes nobody.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&[StdArc<MainState>]) -> R) -> R {
        f(&self.list.lock())
    }

    /// One poll of a main future began.
    pub(crate) fn count_poll(&self) {
        self.polls.fetch_add(1, Relaxed);
    }

    /// Polls of the main futures so far.
    pub(crate) fn polls(&self) -> u64 {
        self.polls.load(Relaxed)
    }

    /// The goid of `#[goro::main]`'s main G (0: none).
    pub(crate) fn goid(&self) -> u64 {
        self.goid.load(Relaxed)
    }

    pub(crate) fn set_goid(&self, goid: u64) {
        self.goid.store(goid, Relaxed);
    }

    /// Whether a thread waits for the runtime's main G (`Runtime::poll_ending`).
    pub(crate) fn waiting(&self) -> bool {
        self.waiting.load(Acquire)
    }

    pub(crate) fn set_waiting(&self) {
        self.waiting.store(true, Release);
    }
}
