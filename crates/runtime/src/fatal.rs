//! How a run ends before its main returns, as Go's does: a deadlock (`checkdead`), or a G's
//! panic that nothing observed when the runtime was built to end on one
//! (`Builder::unhandled_panic`). The ending goes to whoever waits for the runtime's main: the
//! Ms inside `block_on` (they return it as a panic), and the thread of `#[goro::main]` or
//! `#[goro::test]` waiting for the main G (`Runtime::poll_ending`).

use crate::loom::{AtomicBool, Mutex, Ordering::*};
use std::any::Any;
use std::task::Waker;

/// Why a run ended early.
pub enum Ending {
    /// `all goroutines are asleep - deadlock!`, then the dump.
    Deadlock(String),
    /// A G's unobserved panic (its payload); it was printed in Go's shape when it happened.
    Panic(Box<dyn Any + Send>),
}

impl std::fmt::Debug for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Deadlock(r) => f.debug_tuple("Deadlock").field(r).finish(),
            Ending::Panic(_) => f.write_str("Panic(..)"),
        }
    }
}

/// The ending of one runtime and the threads waiting for it (`Shared::fatal`).
#[derive(Default)]
pub(crate) struct Fatal {
    /// Set once the run ended (read without the lock by the Ms in `block_on`).
    ended: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Set once, by the first ending; taken by the first main that returns it.
    ending: Option<Ending>,
    waiters: Vec<Waker>,
}

/// What stands in for the reason when another main took it.
fn taken() -> Ending {
    Ending::Panic(Box::new("goro: the run ended (another main took the reason)".to_owned()))
}

impl Fatal {
    /// Whether the run ended.
    #[inline]
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Acquire)
    }

    /// Records `ending` unless the run ended already (the first ending wins). Returns the
    /// wakers of the threads waiting in [`poll`](Self::poll), for the caller to wake outside
    /// any lock (a waker is the waiting executor's code), or `None` if it was not first. The
    /// caller also wakes the Ms inside `block_on` (`Shared::end_run`).
    pub(crate) fn end(&self, ending: Ending) -> Option<Vec<Waker>> {
        let mut st = self.state.lock();
        if self.ended.load(Acquire) {
            return None;
        }
        st.ending = Some(ending);
        self.ended.store(true, Release);
        Some(std::mem::take(&mut st.waiters))
    }

    /// The ending, taken, if the run ended (a plain message after another main took it); else
    /// `None`, and `waker` is woken when it ends.
    pub(crate) fn poll(&self, waker: &Waker) -> Option<Ending> {
        let mut st = self.state.lock();
        if self.ended.load(Acquire) {
            return Some(st.ending.take().unwrap_or_else(taken));
        }
        if !st.waiters.iter().any(|w| w.will_wake(waker)) {
            st.waiters.push(waker.clone());
        }
        None
    }

    /// The ending, taken (for an M in `block_on` that saw the run end).
    pub(crate) fn take(&self) -> Ending {
        self.state.lock().ending.take().unwrap_or_else(taken)
    }
}
