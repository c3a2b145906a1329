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
//! publishes a pointer to its P's flag while it holds the P.

use crate::loom::{AtomicBool, Ordering::*};
use std::cell::Cell;
use std::ptr;
use std::task::{Context, Poll};

/// What a yield point reads: the `preempt` flag of the P this thread holds (null: none), and
/// the yield points left in this poll before it yields (0: no count; only a synctest bubble
/// counts, see [`set_budget`]). One thread-local, so the count costs the others one compare.
struct Slot {
    flag: Cell<*const AtomicBool>,
    budget: Cell<u32>,
}

#[cfg(not(loom))]
thread_local! {
    static PREEMPT: Slot = const { Slot { flag: Cell::new(ptr::null()), budget: Cell::new(0) } };
}
#[cfg(loom)]
loom::thread_local! {
    static PREEMPT: Slot = Slot { flag: Cell::new(ptr::null()), budget: Cell::new(0) };
}

/// A synctest bubble's preemption, in place of sysmon's (a bubble has no sysmon, and its
/// choices must not depend on time): the poll about to start yields at its `n`-th yield point
/// (`n >= 2`, so that each poll gets at least one operation done). 0 turns the count off.
pub(crate) fn set_budget(n: u32) {
    let _ = PREEMPT.try_with(|c| c.budget.set(n));
}

/// Publishes `flag` as this thread's P's preemption flag (null: holds no P); returns the one
/// it replaces (`m::enter` puts an outer M's back when a nested `block_on` leaves).
///
/// # Safety
/// `flag` stays valid until it is replaced by another call on this thread (the `Shared` that
/// owns the P outlives the M holding it).
pub(crate) unsafe fn set_flag(flag: *const AtomicBool) -> *const AtomicBool {
    PREEMPT.try_with(|c| c.flag.replace(flag)).unwrap_or(ptr::null())
}

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
    let flag = PREEMPT
        .try_with(|c| {
            let b = c.budget.get();
            if b != 0 {
                c.budget.set(b - 1);
                if b == 1 {
                    return None;
                }
            }
            Some(c.flag.get())
        })
        .unwrap_or(Some(ptr::null()));
    let Some(flag) = flag else {
        // A bubble's count ran out.
        return true;
    };
    if flag.is_null() {
        return false;
    }
    // SAFETY: published by `set_flag`, valid while this thread holds the P.
    let flag = unsafe { &*flag };
    if flag.load(Relaxed) {
        flag.store(false, Relaxed);
        return true;
    }
    false
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

/// The functions to call when the current poll ends: the one of [`at_poll_end`], and the
/// runtime's own (see [`at_poll_end_runtime`]).
#[cfg(not(loom))]
type PollEnd = [Option<fn()>; 2];

#[cfg(not(loom))]
thread_local! {
    static POLL_END: Cell<PollEnd> = const { Cell::new([None, None]) };
}

/// [`at_poll_end`] for the runtime itself, in a slot of its own (a panic caught inside a G
/// is printed when the poll ends: see `panics`). Does nothing off the runtime's threads' TLS.
pub(crate) fn at_poll_end_runtime(f: fn()) {
    #[cfg(not(loom))]
    let _ = POLL_END.try_with(|h| {
        let mut slots = h.get();
        slots[1] = Some(f);
        h.set(slots);
    });
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
    {
        let on_m = PREEMPT.try_with(|c| !c.flag.get().is_null()).unwrap_or(false);
        if !on_m {
            return false;
        }
        POLL_END
            .try_with(|h| {
                let mut slots = h.get();
                match slots[0] {
                    None => {
                        slots[0] = Some(f);
                        h.set(slots);
                        true
                    }
                    Some(g) => std::ptr::fn_addr_eq(g, f),
                }
            })
            .unwrap_or(false)
    }
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
    if let Ok(slots) = POLL_END.try_with(|h| h.replace([None, None])) {
        slots.into_iter().flatten().for_each(|f| f());
    }
}
