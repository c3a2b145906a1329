//! The G: a spawned future with Go's goroutine header. See [`raw`] for the layout, [`state`]
//! for the lifecycle word, and [`waker`] for how a G wakes itself into a run queue.

pub(crate) mod allgs;
pub(crate) mod gfree;
mod join;
pub(crate) mod raw;
pub(crate) mod state;
pub(crate) mod waker;

pub use join::{JoinError, JoinHandle};
pub use raw::{WaitReason, HEADER_SIZE};

use crate::loom::Ordering::Relaxed;
use raw::Header;
use state::{ToIdle, ToRunning};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

/// A G pointer that an M or queue owns one reference of.
pub(crate) type GPtr = NonNull<Header>;

/// Runs a G popped from a run queue (Go's `execute` minus the bookkeeping): polls it, or drops
/// its future if it was aborted, and finishes it if it is done.
///
/// Returns the G back if it must be re-queued (it woke itself during the poll, as
/// `yield_now` does); the caller puts it at the tail of its local queue.
///
/// # Safety
/// The caller owns the queue's reference on `g`.
pub(crate) unsafe fn run(g: GPtr) -> Option<GPtr> {
    // SAFETY: we own a reference.
    let h = unsafe { g.as_ref() };
    match h.state.transition_to_running() {
        ToRunning::Poll => {}
        ToRunning::Cancel => {
            // SAFETY: RUNNING is ours.
            unsafe { (h.vtable.cancel)(g) };
            // SAFETY: RUNNING is ours, and we hold the queue's reference.
            unsafe { complete(g, true) };
            return None;
        }
        ToRunning::Failed => {
            if h.state.ref_dec(1) {
                // SAFETY: that was the last reference.
                unsafe { (h.vtable.dealloc)(g) };
            }
            return None;
        }
    }
    // Whatever the G waited on before is over; a primitive that parks it again says why.
    h.wait_reason.store(0, Relaxed);
    // SAFETY: RUNNING is ours.
    let ready = unsafe { (h.vtable.poll)(g) };
    if ready {
        // SAFETY: as above.
        unsafe { complete(g, true) };
        return None;
    }
    // When it parked, if it parks (written before the transition: once the G is idle, another
    // M may run and free it). A G woken during the poll is re-queued; the time is unused then.
    h.parked_at.store(h.shared().coarse_ms(), Relaxed);
    match h.state.transition_to_idle() {
        ToIdle::Idle => None,
        ToIdle::Requeue => Some(g),
        ToIdle::Cancel => {
            // SAFETY: still RUNNING, ours.
            unsafe { (h.vtable.cancel)(g) };
            // SAFETY: as above.
            unsafe { complete(g, true) };
            None
        }
    }
}

/// Finishes a G whose output is stored: publishes `COMPLETE`, leaves `allgs`, hands the output
/// to the `JoinHandle` (waking it) or drops it, and drops the list's reference and the
/// caller's.
///
/// # Safety
/// The caller moved the G to `RUNNING` and owns one reference besides the list's. `in_list` is
/// false only when shutdown already took the G out of `allgs`.
pub(crate) unsafe fn complete(g: GPtr, in_list: bool) {
    // SAFETY: the caller owns a reference.
    let h = unsafe { g.as_ref() };
    let prev = h.state.transition_to_complete();
    // Leave `allgs` (or join the P's batch of finished Gs, which `num_goroutine` does not
    // count) before the JoinHandle can see the output: a G whose result was received is no
    // longer counted.
    let mut batched = None;
    if in_list {
        batched = defer_unlink(g);
        if batched.is_none() {
            h.shared().allgs.remove(g);
        }
    }
    if !prev.is_join_interested() {
        // SAFETY: no JoinHandle: the output is ours to drop.
        unsafe { (h.vtable.drop_output)(g) };
    } else if prev.is_join_waker_set() {
        // SAFETY: JOIN_WAKER is set: reading the slot is allowed; nobody writes it.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            h.join_waker.with(|w| {
                if let Some(w) = unsafe { &*w } {
                    w.wake_by_ref();
                }
            })
        }));
        let now = h.state.unset_join_waker_after_complete();
        if !now.is_join_interested() {
            // The JoinHandle is gone and the slot is ours again.
            // SAFETY: JOIN_WAKER is clear and the JoinHandle will not come back.
            h.join_waker.with_mut(|w| unsafe { *w = None });
        }
    }
    match batched {
        // The batch holds the list's reference: drop only the caller's.
        Some((p, full)) => {
            if h.state.ref_dec(1) {
                unreachable!("goro: a finished G in a dead batch lost its list reference");
            }
            if full {
                let sh = h.shared();
                // SAFETY: this thread owns P `p` (it just pushed to its batch), and we are not
                // inside its `with_local`.
                unsafe { flush_dead(sh, &sh.ps[p]) };
            }
        }
        None => {
            if h.state.ref_dec(2) {
                // SAFETY: those were the last references.
                unsafe { (h.vtable.dealloc)(g) };
            }
        }
    }
}

/// Puts a finished G (with the list's reference) into the current P's batch of Gs to unlink,
/// if this thread holds a P of the G's runtime: `Some((p, batch_full))`.
fn defer_unlink(g: GPtr) -> Option<(usize, bool)> {
    // SAFETY: the caller holds a reference.
    let sh = unsafe { g.as_ref() }.shared();
    crate::context::with(|ctx| {
        let p = crate::context::current_p_of(ctx, sh)?;
        let pp = &sh.ps[p];
        // SAFETY: this thread owns the P, and `push` neither polls nor drops Gs.
        let full = unsafe { pp.with_local(|l| l.dead.push(g)) };
        crate::p::bump(&pp.stats.dead_pending, 1);
        Some((p, full))
    })
}

/// Unlinks the Gs of `p`'s dead batch from `allgs` and drops the list's references on them.
///
/// # Safety
/// The calling thread owns `p` (or no M runs), and is not inside `p.with_local`.
pub(crate) unsafe fn flush_dead(sh: &crate::sched::Shared, p: &crate::p::P) {
    // SAFETY: caller contract; `take` neither polls nor drops Gs.
    let (mut gs, n) = unsafe { p.with_local(|l| l.dead.take()) };
    if n == 0 {
        return;
    }
    let batch = &mut gs[..n];
    // SAFETY: each G was pushed once, with the list's reference, and is still in the list.
    unsafe { sh.allgs.remove_batch(batch) };
    crate::p::bump(&p.stats.dead_pending, (n as u64).wrapping_neg());
    for &g in batch.iter() {
        // SAFETY: the list's reference, which the batch held, is ours to drop.
        let h = unsafe { g.as_ref() };
        if h.state.ref_dec(1) {
            // SAFETY: that was the last reference.
            unsafe { (h.vtable.dealloc)(g) };
        }
    }
}

/// Shutdown: drops the future of a G that no M will run again (it came out of `allgs` with the
/// list's reference).
///
/// # Safety
/// No M of the runtime is running, and the caller owns the list's reference on `g`.
pub(crate) unsafe fn shutdown(g: GPtr) {
    // SAFETY: the caller owns a reference.
    let h = unsafe { g.as_ref() };
    if h.state.transition_to_shutdown() {
        // SAFETY: RUNNING is ours now.
        unsafe { (h.vtable.cancel)(g) };
        // SAFETY: we hold the claim's reference and the list's.
        unsafe { complete(g, false) };
    } else if h.state.ref_dec(1) {
        // SAFETY: that was the last reference.
        unsafe { (h.vtable.dealloc)(g) };
    }
}

/// Drops a queue's reference on a G that will not be run (the queue is being discarded).
///
/// # Safety
/// The caller owns that reference.
pub(crate) unsafe fn drop_ref(g: GPtr) {
    // SAFETY: the caller owns a reference.
    let h = unsafe { g.as_ref() };
    if h.state.ref_dec(1) {
        // SAFETY: that was the last reference.
        unsafe { (h.vtable.dealloc)(g) };
    }
}
