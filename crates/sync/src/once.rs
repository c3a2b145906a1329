//! [`Once`]: Go's `sync.Once`, an action performed exactly once.
//!
//! Go's algorithm: a `done` flag read with one `Acquire` load on the fast path, and a mutex that
//! the first callers take. Under the mutex, the first caller runs `f` and *then* sets `done`
//! (with `Release`, before it unlocks), so that no `call_once` returns before `f` has finished:
//! the callers that lost the race block on the mutex until then, and find `done` set.
//!
//! # Invariants
//!
//! - `f` runs at most once, and only under the mutex.
//! - `done` is set exactly when the one call of `f` has ended, by returning or by panicking (a
//!   drop guard sets it during the unwind, like Go's deferred store): a panicking `f` counts as
//!   done, and later calls do nothing.
//! - Everything `f` wrote happens-before every `call_once` that returns, through `done`'s
//!   Release/Acquire or through the mutex.
//!
//! `call_once` is synchronous, like Go's `Do`: callers that wait block their *thread*, where Go
//! blocks only the G. A G waits as in a `goro::syscall`, so its P goes to another thread after a
//! sysmon tick and the Gs queued behind it keep running; the thread itself stays asleep until
//! `f` returns. Keep `f` short, as Go's documentation also asks.

use crate::loom::{lock_as_syscall, AtomicBool, Mutex, Ordering::*};
use std::fmt;

/// Performs one action exactly once: Go's `sync.Once`.
///
/// [`call_once`](Once::call_once) is synchronous, like Go's `Do`: callers that arrive while the
/// first call runs block their *thread* until it returns, where Go blocks only the G. A G waits
/// as in a [`goro::syscall`](goro_runtime::syscall): its P goes to another thread meanwhile, so
/// the Gs queued behind it keep running. Keep the action short, as Go's documentation also asks.
///
/// ```
/// use goro::sync::Once;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// static INIT: Once = Once::new();
/// static CALLS: AtomicUsize = AtomicUsize::new(0);
///
/// goro::run(async {
///     let hs: Vec<_> = (0..8)
///         .map(|_| goro::go(async { INIT.call_once(|| { CALLS.fetch_add(1, Ordering::Relaxed); }) }))
///         .collect();
///     for h in hs {
///         h.await.unwrap();
///     }
/// });
/// assert_eq!(CALLS.load(Ordering::Relaxed), 1);
/// assert!(INIT.is_done());
/// ```
pub struct Once {
    /// Set once the call of `f` has ended; read first, on the fast path.
    done: AtomicBool,
    /// Held by the caller that runs `f`, and by the callers waiting for it to end.
    lock: Mutex<()>,
}

impl Once {
    /// A `Once` whose action has not run yet. A `const fn`, so a `Once` can be a `static` (Go's
    /// package-level `var once sync.Once`).
    ///
    /// ```
    /// static ONCE: goro::sync::Once = goro::sync::Once::new();
    /// assert!(!ONCE.is_done());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Once {
        Once { done: AtomicBool::new(false), lock: Mutex::new(()) }
    }

    /// A `Once` whose action has not run yet (not `const` under loom).
    #[cfg(loom)]
    pub fn new() -> Once {
        Once { done: AtomicBool::new(false), lock: Mutex::new(()) }
    }

    /// Calls `f` if and only if this is the first `call_once` of this `Once` (Go's `Do`). No call
    /// returns before that first `f` has returned: concurrent callers block until then.
    ///
    /// If `f` panics, the panic goes on to the caller, and the `Once` counts as done, as in Go:
    /// later calls return without calling anything.
    ///
    /// A call of `call_once` on the same `Once` from inside `f` deadlocks (as in Go). Waiting
    /// callers block their thread (on goro, the M): see [`Once`].
    ///
    /// ```
    /// let once = goro::sync::Once::new();
    /// let mut n = 0;
    /// once.call_once(|| n += 1);
    /// once.call_once(|| n += 1);
    /// assert_eq!(n, 1);
    /// ```
    #[inline]
    pub fn call_once(&self, f: impl FnOnce()) {
        if !self.done.load(Acquire) {
            self.call_slow(f);
        }
    }

    #[cold]
    fn call_slow(&self, f: impl FnOnce()) {
        /// Sets `done` when dropped: after `f` returns, or while a panic of `f` unwinds.
        struct SetDone<'a>(&'a AtomicBool);
        impl Drop for SetDone<'_> {
            fn drop(&mut self) {
                self.0.store(true, Release);
            }
        }
        let _locked = lock_as_syscall(&self.lock);
        if self.done.load(Acquire) {
            return;
        }
        // Declared after `_locked`, so dropped before it: `done` is set before the unlock.
        let _set = SetDone(&self.done);
        f();
    }

    /// Whether the action has run (returned or panicked). A `true` answer happens-after the end
    /// of `f`.
    ///
    /// ```
    /// let once = goro::sync::Once::new();
    /// assert!(!once.is_done());
    /// let _ = std::panic::catch_unwind(|| once.call_once(|| panic!("boom")));
    /// assert!(once.is_done()); // a panic counts as done, as in Go
    /// ```
    pub fn is_done(&self) -> bool {
        self.done.load(Acquire)
    }
}

// A panic in `f` leaves a `Once` consistent (done), with no poisoning to observe: like std's.
impl std::panic::UnwindSafe for Once {}
impl std::panic::RefUnwindSafe for Once {}

impl Default for Once {
    fn default() -> Once {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once").field("done", &self.is_done()).finish()
    }
}
