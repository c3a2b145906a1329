//! The G: a spawned future with Go's goroutine header. See [`raw`] for the layout, [`state`]
//! for the lifecycle word, and [`waker`] for how a G wakes itself into a run queue.

pub(crate) mod allgs;
mod error;
pub(crate) mod gfree;
mod join;
pub(crate) mod origin;
pub(crate) mod raw;
pub(crate) mod state;
pub(crate) mod waker;

pub use error::JoinError;
pub use join::JoinHandle;
#[cfg(loom)]
pub(crate) use join::ModelJoin;
pub(crate) use raw::{Schedule, Unlink};
pub use raw::{WaitReason, HEADER_SIZE};

use crate::loom::{AtomicU32, Ordering::Relaxed};
use crate::trace::Stop;
use raw::Header;
use state::{RunRef, ToIdle, ToRunning};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

/// A G pointer that an M or queue owns one reference of.
pub(crate) type GPtr = NonNull<Header>;

/// A new G running `future` (see [`raw::allocate`]): the G, with the run queue's reference,
/// its `JoinHandle`, with the join reference, and whether its memory came from a free list.
#[allow(clippy::too_many_arguments)]
pub(crate) fn new_g<F, S: Schedule>(
    future: F,
    sched: &std::sync::Arc<S>,
    global: &gfree::GlobalFree,
    goid: u64,
    parent: u64,
    location: &'static std::panic::Location<'static>,
    local: Option<&mut gfree::LocalFree>,
) -> (GPtr, JoinHandle<F::Output>, bool)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (g, reused) = raw::allocate(future, sched, global, goid, parent, location, local);
    // SAFETY: `allocate` made a G whose output is `F::Output`, holding the join reference among
    // its first ones; it is handed to the handle here, and nowhere else.
    (g, unsafe { JoinHandle::from_raw(g) }, reused)
}

/// Runs a G popped from a run queue (Go's `execute` minus the bookkeeping): polls it, or drops
/// its future if it was aborted, and finishes it if it is done.
///
/// Returns the G back if it must be re-queued (it woke itself during the poll, as
/// `yield_now` does); the caller puts it at the tail of its local queue.
///
/// `clock` is the runtime's coarse clock (`Shared::coarse_clock`), which stamps `parked_at`
/// when the poll ends with the G waiting: passed by the M, not asked of the G's scheduler,
/// which would be two indirect calls on every park.
///
/// # Safety
/// The caller owns the queue's reference on `g`.
pub(crate) unsafe fn run(g: GPtr, clock: &AtomicU32) -> Option<GPtr> {
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
    let goid = h.goid;
    // Looked at once per poll: a trace costs an untraced poll this one load.
    let traced = crate::trace::is_enabled();
    if traced {
        crate::trace::go_start(goid, h.location, h.trace_take_flow());
    }
    // SAFETY: the M polling holds a reference for the whole poll, or lends it to a clone of
    // this waker, and then the list's reference keeps the G alive while it is RUNNING (see
    // `waker`).
    let waker = unsafe { waker::borrowed_waker(g) };
    let polling = waker::Polling::begin(g);
    // SAFETY: RUNNING is ours.
    let ready = unsafe { (h.vtable.poll)(g, &waker) };
    let (run_ref, self_wake) = polling.end();
    if ready {
        if traced {
            crate::trace::go_stop(goid, Stop::Exit, "");
        }
        if run_ref == RunRef::Lent {
            // `complete` drops the M's reference: take back the one a waker kept.
            h.state.ref_inc();
        }
        // SAFETY: as above, and the M holds a reference again.
        unsafe { complete(g, true) };
        return None;
    }
    // When it parked, if it parks (written before the transition: once the G is idle, another
    // M may run and free it). A G woken during the poll is re-queued; the time is unused then.
    h.parked_at.store(clock.load(Relaxed), Relaxed);
    // The trace's reason for the end of the poll: the G's, so read before the transition too.
    let reason = if traced { h.wait_reason.load(Relaxed) } else { 0 };
    let stop = |how: Stop, why: &str| {
        if traced {
            crate::trace::go_stop(goid, how, why);
        }
    };
    match h.state.transition_to_idle(run_ref, self_wake) {
        ToIdle::Idle => {
            stop(Stop::Block, raw::WaitReason::from_u8(reason).as_str());
            None
        }
        ToIdle::Requeue => {
            stop(Stop::Requeue, "");
            Some(g)
        }
        ToIdle::Cancel => {
            stop(Stop::Exit, "");
            if run_ref == RunRef::Lent {
                // As for a completion: `complete` drops the M's reference.
                h.state.ref_inc();
            }
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
    let mut unlink = Unlink::Done;
    if in_list {
        unlink = h.scheduler().unlink(g);
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
    match unlink {
        // The batch holds the list's reference: drop only the caller's.
        Unlink::Batched | Unlink::Flush(..) => {
            if h.state.ref_dec(1) {
                unreachable!("goro: a finished G in a dead batch lost its list reference");
            }
            if let Unlink::Flush(p, batch) = unlink {
                h.scheduler().unlink_batch(p, batch);
            }
        }
        Unlink::Done => {
            if h.state.ref_dec(2) {
                // SAFETY: those were the last references.
                unsafe { (h.vtable.dealloc)(g) };
            }
        }
    }
}

/// Drops the all-Gs list's references on Gs just unlinked from it (a batch of finished Gs).
pub(crate) fn drop_list_refs(gs: &[GPtr]) {
    for &g in gs {
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

#[cfg(all(test, not(loom)))]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    /// A future that does to its own waker, in its polls, all a future may: clones (the first
    /// takes over the M's reference), a clone of a clone, a drop of the first clone, a wake by
    /// reference of itself (the note on the polling thread), a wake by value from another
    /// thread racing the poll's end, a nested runtime's G polled in the middle of its poll, and
    /// a completion while a clone is still alive (its output).
    struct OwnWaker {
        polls: usize,
        inner: Arc<crate::Runtime>,
    }

    impl Future for OwnWaker {
        type Output = Waker;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Waker> {
            self.polls += 1;
            match self.polls {
                1 => {
                    let first = cx.waker().clone();
                    // Another G polled on this thread, inside this poll: its clones and wakes
                    // are its own.
                    self.inner.block_on(async {
                        crate::go(async { crate::yield_now().await }).await.unwrap();
                    });
                    let second = first.clone();
                    drop(first);
                    cx.waker().wake_by_ref();
                    drop(second);
                    Poll::Pending
                }
                2 => {
                    let w = cx.waker().clone();
                    std::thread::spawn(move || w.wake());
                    Poll::Pending
                }
                _ => Poll::Ready(cx.waker().clone()),
            }
        }
    }

    /// Whatever a G does to its own waker during a poll, every reference is released when it
    /// is done (the runtime's count of the G is given back) and none twice (a debug build
    /// checks the count on every release).
    #[test]
    fn a_gs_own_waker_used_in_its_poll_keeps_the_count() {
        let rt = crate::Builder::new().max_procs(2).build().unwrap();
        let inner = Arc::new(crate::Builder::new().max_procs(1).build().unwrap());
        let states = [rt.shared().clone(), inner.shared().clone()];
        rt.block_on(async {
            for _ in 0..200 {
                let w = crate::go(OwnWaker { polls: 0, inner: inner.clone() }).await.unwrap();
                // A wake after completion does nothing, and drops the clone's reference.
                w.wake();
            }
        });
        drop(inner);
        drop(rt);
        for sh in &states {
            assert_eq!(Arc::strong_count(sh), 1, "a G was never freed");
        }
    }
}
