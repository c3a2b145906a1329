//! The G's lifecycle word: a handful of flag bits and a reference count in one `AtomicUsize`.
//!
//! Go keeps `g.atomicstatus` (`_Grunnable`, `_Grunning`, `_Gwaiting`, `_Gdead`) and relies on
//! its garbage collector to keep a G's memory alive. Here the same word also counts the
//! references that keep the G's allocation alive, so one CAS decides both "who may run or
//! enqueue this G" and "who frees it". The layout follows tokio's task state, which solved the
//! same problem for futures:
//!
//! | bit | name | meaning |
//! |-----|------|---------|
//! | 0 | `RUNNING` | an M is polling the future (Go's `_Grunning`) |
//! | 1 | `NOTIFIED` | the G sits in exactly one run queue, or will be re-queued when its poll returns (`_Grunnable`) |
//! | 2 | `COMPLETE` | the future is gone; its output (or `JoinError`) is stored (`_Gdead`) |
//! | 3 | `JOIN_INTEREST` | a `JoinHandle` still exists |
//! | 4 | `JOIN_WAKER` | the join waker slot is set; see below for who owns it |
//! | 5 | `CANCELLED` | `abort` (or shutdown) asked for the future to be dropped |
//! | 6.. | refcount | owners of the allocation |
//!
//! A G that is none of running, notified or complete is *waiting* (`_Gwaiting`): only wakers
//! refer to it.
//!
//! Invariants (what the loom models check):
//! - `NOTIFIED` is set by exactly one waker between two polls; only the waker that sets it while
//!   the G is neither running nor complete enqueues the G. So a G is never in two queues, and a
//!   wake of a running G is remembered (the M re-queues it after the poll) instead of lost.
//! - A wake after `COMPLETE` does nothing.
//! - The references are: one for the all-Gs list (dropped at completion), one for the
//!   `JoinHandle`, one for the queue slot or M that holds a notified G, one per `Waker`.
//! - Join waker slot ownership: while `JOIN_WAKER` is clear the `JoinHandle` alone may write the
//!   slot; while it is set nobody writes it and both sides may read it. After completion the
//!   M reads (wakes) it, then clears `JOIN_WAKER`, handing the slot back to the `JoinHandle`.

use crate::loom::{AtomicUsize, Ordering::*};
use std::fmt;

pub(crate) const RUNNING: usize = 1 << 0;
pub(crate) const NOTIFIED: usize = 1 << 1;
pub(crate) const COMPLETE: usize = 1 << 2;
pub(crate) const JOIN_INTEREST: usize = 1 << 3;
pub(crate) const JOIN_WAKER: usize = 1 << 4;
pub(crate) const CANCELLED: usize = 1 << 5;
const REF_SHIFT: usize = 6;
pub(crate) const REF_ONE: usize = 1 << REF_SHIFT;

/// A freshly spawned G: queued once, with a `JoinHandle`, and three references (all-Gs list,
/// `JoinHandle`, run queue).
pub(crate) const INITIAL: usize = NOTIFIED | JOIN_INTEREST | (3 * REF_ONE);

/// The lifecycle word of a G.
pub(crate) struct State(AtomicUsize);

/// One reading of the word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(pub(crate) usize);

impl Snapshot {
    pub(crate) fn is_running(self) -> bool {
        self.0 & RUNNING != 0
    }
    pub(crate) fn is_notified(self) -> bool {
        self.0 & NOTIFIED != 0
    }
    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }
    pub(crate) fn is_join_interested(self) -> bool {
        self.0 & JOIN_INTEREST != 0
    }
    pub(crate) fn is_join_waker_set(self) -> bool {
        self.0 & JOIN_WAKER != 0
    }
    pub(crate) fn is_cancelled(self) -> bool {
        self.0 & CANCELLED != 0
    }
    pub(crate) fn ref_count(self) -> usize {
        self.0 >> REF_SHIFT
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("running", &self.is_running())
            .field("notified", &self.is_notified())
            .field("complete", &self.is_complete())
            .field("join_interest", &self.is_join_interested())
            .field("join_waker", &self.is_join_waker_set())
            .field("cancelled", &self.is_cancelled())
            .field("refs", &self.ref_count())
            .finish()
    }
}

/// What an M must do with a G it popped from a run queue.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToRunning {
    /// Poll it.
    Poll,
    /// Drop its future: it was aborted.
    Cancel,
    /// Someone else owns it (never happens while the invariants hold); drop the queue's ref.
    Failed,
}

/// What an M must do after a poll returned `Pending`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToIdle {
    /// The G waits; the M's reference was dropped (or stays lent to a waker).
    Idle,
    /// It was woken during the poll: re-queue it (the M's reference goes with it).
    Requeue,
    /// It was aborted during the poll: drop its future now (the M keeps its reference, and
    /// must take one back if it lent it).
    Cancel,
}

/// What a G's poll did with the M's reference on it (see [`waker`](super::waker)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunRef {
    /// The M still holds it.
    Kept,
    /// A clone of the G's waker holds it now.
    Lent,
}

/// Whether the G woke itself by reference during its poll, a wake noted on the polling thread
/// (see [`waker`](super::waker)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SelfWake {
    No,
    Yes,
}

/// What a waker must do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ToNotified {
    /// Nothing: already queued, running (will be re-queued), or complete.
    Nothing,
    /// Enqueue the G; a reference for the queue has been accounted for.
    Submit,
}

impl State {
    pub(crate) fn new(initial: usize) -> State {
        State(AtomicUsize::new(initial))
    }

    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.0.load(Acquire))
    }

    fn update<T>(&self, mut f: impl FnMut(Snapshot) -> (Option<usize>, T)) -> (Snapshot, T) {
        let mut cur = self.0.load(Acquire);
        loop {
            let (next, out) = f(Snapshot(cur));
            let Some(next) = next else {
                return (Snapshot(cur), out);
            };
            match self.0.compare_exchange_weak(cur, next, AcqRel, Acquire) {
                Ok(_) => return (Snapshot(cur), out),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Called by the M that popped the G (it holds the queue's reference).
    pub(crate) fn transition_to_running(&self) -> ToRunning {
        self.update(|s| {
            if !s.is_notified() || s.is_running() || s.is_complete() {
                return (None, ToRunning::Failed);
            }
            let next = (s.0 | RUNNING) & !NOTIFIED;
            let what = if s.is_cancelled() { ToRunning::Cancel } else { ToRunning::Poll };
            (Some(next), what)
        })
        .1
    }

    /// Called after a `Pending` poll, with what the poll did with the M's reference and its
    /// own wakes (see [`waker`](super::waker)). A reference lent to a waker stays the waker's:
    /// the M then drops none when the G waits, and takes one back in the same CAS to re-queue
    /// it, or with [`ref_inc`](Self::ref_inc) to cancel it. A wake the G noted of itself sets
    /// `NOTIFIED` here.
    pub(crate) fn transition_to_idle(&self, run_ref: RunRef, wake: SelfWake) -> ToIdle {
        self.update(|s| {
            debug_assert!(s.is_running());
            if s.is_cancelled() {
                return (None, ToIdle::Cancel);
            }
            let idle = s.0 & !RUNNING;
            if s.is_notified() || wake == SelfWake::Yes {
                let requeued = idle | NOTIFIED;
                return match run_ref {
                    RunRef::Kept => (Some(requeued), ToIdle::Requeue),
                    RunRef::Lent => (Some(requeued + REF_ONE), ToIdle::Requeue),
                };
            }
            debug_assert!(s.ref_count() >= 2 || run_ref == RunRef::Lent, "the all-Gs list holds a reference");
            match run_ref {
                RunRef::Kept => (Some(idle - REF_ONE), ToIdle::Idle),
                RunRef::Lent => (Some(idle), ToIdle::Idle),
            }
        })
        .1
    }

    /// `RUNNING -> COMPLETE`; returns the word as it was, whose join bits tell the M what to do.
    pub(crate) fn transition_to_complete(&self) -> Snapshot {
        let prev = Snapshot(self.0.fetch_xor(RUNNING | COMPLETE, AcqRel));
        debug_assert!(prev.is_running() && !prev.is_complete());
        prev
    }

    /// A wake that keeps the caller's reference (`wake_by_ref`).
    pub(crate) fn transition_to_notified_by_ref(&self) -> ToNotified {
        self.update(|s| {
            if s.is_complete() || s.is_notified() {
                (None, ToNotified::Nothing)
            } else if s.is_running() {
                (Some(s.0 | NOTIFIED), ToNotified::Nothing)
            } else {
                (Some((s.0 | NOTIFIED) + REF_ONE), ToNotified::Submit)
            }
        })
        .1
    }

    /// A wake that consumes the caller's reference (`wake`): on `Submit` that reference becomes
    /// the queue's; on `Nothing` it has been dropped, and `true` in the second field says it
    /// was the last one.
    pub(crate) fn transition_to_notified_by_val(&self) -> (ToNotified, bool) {
        self.update(|s| {
            if s.is_complete() || s.is_notified() {
                let next = s.0 - REF_ONE;
                (Some(next), (ToNotified::Nothing, Snapshot(next).ref_count() == 0))
            } else if s.is_running() {
                (Some((s.0 | NOTIFIED) - REF_ONE), (ToNotified::Nothing, false))
            } else {
                (Some(s.0 | NOTIFIED), (ToNotified::Submit, false))
            }
        })
        .1
    }

    /// `abort`: mark cancelled, and enqueue the G if it is waiting so an M drops its future.
    pub(crate) fn transition_to_notified_and_cancel(&self) -> ToNotified {
        self.update(|s| {
            if s.is_complete() || s.is_cancelled() {
                (None, ToNotified::Nothing)
            } else if s.is_running() || s.is_notified() {
                (Some(s.0 | NOTIFIED | CANCELLED), ToNotified::Nothing)
            } else {
                (Some((s.0 | NOTIFIED | CANCELLED) + REF_ONE), ToNotified::Submit)
            }
        })
        .1
    }

    /// Shutdown: claim a G that no M will ever run again, as if an M had popped it. Returns
    /// `false` if it is already complete. Takes a reference for the claimer.
    pub(crate) fn transition_to_shutdown(&self) -> bool {
        self.update(|s| {
            if s.is_complete() || s.is_running() {
                (None, false)
            } else {
                (Some((s.0 | RUNNING | CANCELLED) + REF_ONE), true)
            }
        })
        .1
    }

    /// `JoinHandle` drop: give up the output. Returns the word as it was; if it was complete,
    /// the caller now owns (and must drop) the output.
    pub(crate) fn unset_join_interest(&self) -> Snapshot {
        self.update(|s| {
            debug_assert!(s.is_join_interested());
            let next = if s.is_complete() {
                s.0 & !JOIN_INTEREST
            } else {
                // Not complete: the JoinHandle takes the waker slot back with the same CAS.
                s.0 & !(JOIN_INTEREST | JOIN_WAKER)
            };
            (Some(next), ())
        })
        .0
    }

    /// `JoinHandle` poll, after writing the slot: publish it. `Err` if the G completed first (the
    /// slot stays the JoinHandle's).
    pub(crate) fn set_join_waker(&self) -> Result<(), Snapshot> {
        let (prev, ok) = self.update(|s| {
            debug_assert!(s.is_join_interested() && !s.is_join_waker_set());
            if s.is_complete() {
                (None, false)
            } else {
                (Some(s.0 | JOIN_WAKER), true)
            }
        });
        if ok {
            Ok(())
        } else {
            Err(prev)
        }
    }

    /// `JoinHandle` poll with a different waker: take the slot back. `Err` if complete.
    pub(crate) fn unset_join_waker(&self) -> Result<(), Snapshot> {
        let (prev, ok) = self.update(|s| {
            // The G may have completed (and the M cleared JOIN_WAKER) since the caller looked.
            debug_assert!(s.is_join_interested() && (s.is_join_waker_set() || s.is_complete()));
            if s.is_complete() {
                (None, false)
            } else {
                (Some(s.0 & !JOIN_WAKER), true)
            }
        });
        if ok {
            Ok(())
        } else {
            Err(prev)
        }
    }

    /// The M, after waking the join waker of a completed G: hand the slot back.
    pub(crate) fn unset_join_waker_after_complete(&self) -> Snapshot {
        Snapshot(self.0.fetch_and(!JOIN_WAKER, AcqRel) & !JOIN_WAKER)
    }

    pub(crate) fn ref_inc(&self) {
        let prev = self.0.fetch_add(REF_ONE, Relaxed);
        // A count that ever reaches half the word is a leak gone wild; stop before it wraps.
        if prev > usize::MAX / 2 {
            std::process::abort();
        }
    }

    /// Drops `n` references; `true` if they were the last ones (the caller frees the G).
    pub(crate) fn ref_dec(&self, n: usize) -> bool {
        let prev = Snapshot(self.0.fetch_sub(n * REF_ONE, AcqRel));
        debug_assert!(prev.ref_count() >= n, "G refcount underflow: {prev:?}");
        prev.ref_count() == n
    }
}
