//! How a run ends before its main returns, as Go's does: a deadlock (`checkdead`), or a G's
//! panic that nothing observed when the runtime was built to end on one
//! (`Builder::unhandled_panic`). The ending goes to whoever waits for the runtime's main: the
//! Ms inside `block_on` (they return it as a panic), and the thread of `#[goro::main]` or
//! `#[goro::test]` waiting for the main G (`Runtime::poll_ending`).

use crate::loom::Ordering::*;
use crate::sched::Shared;
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
    /// Set once, by the first ending; taken by the first main that returns it.
    ending: Option<Ending>,
    waiters: Vec<Waker>,
}

/// Ends `sh`'s run with `ending`, unless it ended already (the first ending wins): wakes the Ms
/// inside `block_on` and the threads waiting in [`poll_ending`]. Returns whether it was first.
pub(crate) fn end_run(sh: &Shared, ending: Ending) -> bool {
    let waiters = {
        let mut f = sh.fatal.lock();
        if sh.ended.load(Acquire) {
            return false;
        }
        f.ending = Some(ending);
        sh.ended.store(true, Release);
        std::mem::take(&mut f.waiters)
    };
    for m in sh.mains.lock().clone() {
        m.wake_for_ending();
    }
    sh.netpoll.wake();
    // Outside the lock: a waker is the waiting executor's code.
    waiters.into_iter().for_each(Waker::wake);
    true
}

/// The ending of `sh`, taken, if the run ended (`None` after another main took it: then a
/// plain message stands in); else `None`, and `waker` is woken when it ends.
pub(crate) fn poll_ending(sh: &Shared, waker: &Waker) -> Option<Ending> {
    let mut f = sh.fatal.lock();
    if sh.ended.load(Acquire) {
        return Some(f.ending.take().unwrap_or_else(|| {
            Ending::Panic(Box::new("goro: the run ended (another main took the reason)".to_owned()))
        }));
    }
    if !f.waiters.iter().any(|w| w.will_wake(waker)) {
        f.waiters.push(waker.clone());
    }
    None
}

/// The ending of `sh`, taken (for an M in `block_on` that saw `Shared::ended`).
pub(crate) fn take_ending(sh: &Shared) -> Ending {
    sh.fatal
        .lock()
        .ending
        .take()
        .unwrap_or_else(|| Ending::Panic(Box::new("goro: the run ended (another main took the reason)".to_owned())))
}
