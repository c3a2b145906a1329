//! Cooperative preemption: how a G that keeps running is made to yield.
//!
//! Go preempts a goroutine that has run for 10 ms by a signal; a future cannot be interrupted
//! that way, so goro keeps Go's trigger and changes the mechanism. sysmon sets the running P's
//! `preempt` flag when the same G (or `runnext` chain) has had it for a whole time slice; every
//! yield point of goro (each channel operation, `select!`, lock acquisition, `WaitGroup::wait`,
//! `sleep`, a join, a socket operation, `yield_now`) asks [`should_yield`] first, and if the flag is up it clears it, wakes its own
//! task and returns `Pending` once: the G goes to the back of the run queue, behind the Gs that
//! waited. A G that never reaches a yield point (a CPU-bound loop, or a call that blocks the
//! thread) is dealt with by sysmon's hand-off instead.
//!
//! The check is a thread-local load and a load of a flag on the P's own cache line: each M
//! publishes its P's flags in its thread's record while it holds the P (see `current`).

use std::task::{Context, Poll};

pub(crate) use crate::current::set_budget;

/// Whether the calling G should yield now because sysmon asked its P to (the flag is cleared:
/// one yield per request). Always `false` off the runtime's threads.
///
/// For a long computation without goro yield points, which would otherwise keep its P for
/// as long as it runs:
///
/// ```
/// let rt = goro_runtime::Builder::new().build().unwrap();
/// rt.block_on(async {
///     let mut sum = 0u64;
///     for i in 0..1_000_000u64 {
///         sum = sum.wrapping_add(i * i);
///         if goro_runtime::coop::should_yield() {
///             goro_runtime::yield_now().await; // sysmon saw us run for 10 ms: let others in
///         }
///     }
///     assert!(sum > 0);
/// });
/// ```
#[inline]
pub fn should_yield() -> bool {
    crate::current::take_preempt()
}

/// A yield point: `Pending` (after waking the task, so it is polled again soon) if sysmon asked
/// this G's P to preempt it, else `Ready`. Call it first in a `poll` that would otherwise
/// complete without ever returning `Pending`; returning `Pending` before doing anything keeps
/// the operation cancel-safe.
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
///
/// struct AlwaysReady;
/// impl Future for AlwaysReady {
///     type Output = ();
///     fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
///         std::task::ready!(goro_runtime::coop::poll_proceed(cx));
///         Poll::Ready(())
///     }
/// }
/// goro::run(AlwaysReady);
/// ```
#[inline]
pub fn poll_proceed(cx: &mut Context<'_>) -> Poll<()> {
    if should_yield() {
        cx.waker().wake_by_ref();
        return Poll::Pending;
    }
    Poll::Ready(())
}

/// [`at_poll_end`] for the runtime itself, in a slot of its own (a panic caught inside a G
/// is printed when the poll ends: see `panics`). Does nothing off the runtime's threads' TLS.
pub(crate) fn at_poll_end_runtime(f: fn()) {
    #[cfg(not(loom))]
    crate::current::at_poll_end(1, f);
    #[cfg(loom)]
    let _ = f;
}

/// Asks the runtime to call `f` on this thread when the poll now running ends (a G's poll, or
/// the main future's), or sooner: before the G enters [`syscall`](crate::syscall), or when the
/// first poll on this thread ends inside a `block_on` of another runtime that the G calls (the
/// state is the thread's, and that runtime's Gs share it). Returns `false`, and arranges
/// nothing, off the runtime's threads, or if another function is already registered for this
/// poll. Not part of the stable API.
///
/// For thread-local state that is cheap to keep across the operations of one poll but must not
/// outlive it: `goro::sync::Map` keeps its thread pinned in crossbeam-epoch for a whole poll
/// this way, so its operations do not each pay the pin's fence.
#[doc(hidden)]
pub fn at_poll_end(f: fn()) -> bool {
    #[cfg(not(loom))]
    return crate::current::holds_p() && crate::current::at_poll_end(0, f);
    #[cfg(loom)]
    {
        let _ = f;
        false
    }
}

/// Calls the function registered by [`at_poll_end`], if any (the runtime, after each poll).
#[inline]
pub(crate) fn run_poll_end() {
    #[cfg(not(loom))]
    crate::current::take_poll_end().into_iter().flatten().for_each(|f| f());
}
