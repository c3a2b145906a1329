//! Parking an OS thread: the M's sleep (Go's `notesleep`/`notewakeup` on `m.park`), also
//! sysmon's.
//!
//! The state word makes `unpark` before `park` count (the token is kept), and makes an unpark
//! of a thread that is not sleeping cost one atomic swap, no syscall:
//! `EMPTY -> PARKED` (by the sleeper, under the mutex) `-> NOTIFIED` (by the waker) `-> EMPTY`
//! (by the sleeper when it returns).

use crate::loom::{AtomicUsize, Condvar, Mutex, Ordering::*};
use std::time::Duration;

const EMPTY: usize = 0;
const PARKED: usize = 1;
const NOTIFIED: usize = 2;

#[derive(Debug)]
pub(crate) struct Parker {
    state: AtomicUsize,
    lock: Mutex<()>,
    cvar: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker { state: AtomicUsize::new(EMPTY), lock: Mutex::new(()), cvar: Condvar::new() }
    }

    /// Sleeps until [`unpark`](Self::unpark) (or returns at once if it already happened).
    pub(crate) fn park(&self) {
        self.park_inner(None)
    }

    /// As [`park`](Self::park), but gives up after `timeout` (it may also return early).
    pub(crate) fn park_timeout(&self, timeout: Duration) {
        self.park_inner(Some(timeout))
    }

    fn park_inner(&self, timeout: Option<Duration>) {
        if self.state.compare_exchange(NOTIFIED, EMPTY, SeqCst, SeqCst).is_ok() {
            return;
        }
        let mut guard = self.lock.lock();
        match self.state.compare_exchange(EMPTY, PARKED, SeqCst, SeqCst) {
            Ok(_) => {}
            Err(NOTIFIED) => {
                self.state.store(EMPTY, SeqCst);
                return;
            }
            Err(s) => unreachable!("goro: parker in state {s}"),
        }
        loop {
            match timeout {
                None => self.cvar.wait(&mut guard),
                Some(t) => self.cvar.wait_for(&mut guard, t),
            }
            if self.state.compare_exchange(NOTIFIED, EMPTY, SeqCst, SeqCst).is_ok() {
                return;
            }
            if timeout.is_some() {
                // Timed out (or spurious): go back to EMPTY unless a notification raced in.
                if self.state.swap(EMPTY, SeqCst) == NOTIFIED {
                    return;
                }
                return;
            }
        }
    }

    /// Wakes the sleeper, or makes its next `park` return at once.
    pub(crate) fn unpark(&self) {
        match self.state.swap(NOTIFIED, SeqCst) {
            EMPTY | NOTIFIED => {}
            PARKED => {
                // Take the lock so the sleeper is either before its CAS to PARKED (it will see
                // NOTIFIED) or inside `wait` (it gets the signal).
                drop(self.lock.lock());
                self.cvar.notify_one();
            }
            s => unreachable!("goro: parker in state {s}"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn unpark_before_park_is_kept() {
        let p = Parker::new();
        p.unpark();
        p.park();
    }

    #[test]
    fn unpark_from_another_thread() {
        let p = Arc::new(Parker::new());
        let p2 = p.clone();
        let t = std::thread::spawn(move || p2.unpark());
        p.park();
        t.join().unwrap();
    }

    #[test]
    fn timeout_returns() {
        let p = Parker::new();
        p.park_timeout(Duration::from_millis(1));
    }
}
