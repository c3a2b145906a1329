//! Reclamation under loom: the checkable stand-in for crossbeam-epoch that the module docs of
//! `reclaim` describe, with the same API (`Reclaimer`, `Guard`, `LockScope`).

use super::tracked::Reclaim;
use crate::loom::{fence, Ordering::Relaxed, Ordering::SeqCst};
use std::collections::BTreeSet;
// Bookkeeping, invisible to loom on purpose (see the module docs).
use std::sync::Mutex as StdMutex;

/// Per-map bookkeeping of live guards and retired objects.
#[derive(Default)]
pub(crate) struct Reclaimer {
    state: StdMutex<State>,
}

#[derive(Default)]
struct State {
    next_guard: u64,
    live_guards: BTreeSet<u64>,
    retired: Vec<Retired>,
}

struct Retired {
    ptr: *mut (),
    /// The guards that were live when it was retired and are not yet dropped.
    waiting_for: BTreeSet<u64>,
    mark: unsafe fn(*mut ()),
    free: unsafe fn(*mut ()),
}

/// # Safety
/// `ptr` is a live `*mut T` (retired objects stay allocated until the `Reclaimer` drops).
unsafe fn mark_reclaimed<T: Reclaim>(ptr: *mut ()) {
    // SAFETY: per this function's contract.
    unsafe { (*ptr.cast::<T>()).tracked().reclaimed.store(true, Relaxed) }
}

/// # Safety
/// `ptr` is what `T`'s `Reclaim::destroy` takes, and is freed once.
unsafe fn free<T: Reclaim>(ptr: *mut ()) {
    // SAFETY: per this function's contract.
    unsafe { T::destroy(ptr.cast::<T>()) }
}

impl Reclaimer {
    pub(crate) fn new() -> Reclaimer {
        Reclaimer::default()
    }

    pub(crate) fn pin(&self) -> Guard<'_> {
        fence(SeqCst);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let id = s.next_guard;
        s.next_guard += 1;
        s.live_guards.insert(id);
        Guard { reclaimer: self, id, _not_send: std::marker::PhantomData }
    }
}

impl Drop for Reclaimer {
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for r in s.retired.drain(..) {
            // SAFETY: every retired pointer is what its type's `Reclaim::destroy` takes
            // (`retire`'s contract) and is recorded once (`retire` asserts it); the map is
            // being dropped, so nothing can reach it.
            unsafe { (r.free)(r.ptr) }
        }
    }
}

pub(crate) struct Guard<'r> {
    reclaimer: &'r Reclaimer,
    id: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Guard<'_> {
    /// Records `ptr` as retired: marked reclaimed once every guard live now has dropped,
    /// freed when the map drops.
    ///
    /// # Safety
    /// As for the crossbeam-epoch version.
    pub(crate) unsafe fn retire<T: Reclaim + 'static>(&self, ptr: *mut T) {
        fence(SeqCst);
        let mut s = self.reclaimer.state.lock().unwrap_or_else(|e| e.into_inner());
        assert!(!s.retired.iter().any(|r| r.ptr == ptr.cast()), "sync.Map: an object was retired twice");
        let waiting_for = s.live_guards.clone();
        debug_assert!(waiting_for.contains(&self.id));
        s.retired.push(Retired { ptr: ptr.cast(), waiting_for, mark: mark_reclaimed::<T>, free: free::<T> });
    }

    pub(crate) fn flush(&self) {}
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut now_reclaimed = Vec::new();
        {
            let mut s = self.reclaimer.state.lock().unwrap_or_else(|e| e.into_inner());
            s.live_guards.remove(&self.id);
            for r in &mut s.retired {
                if r.waiting_for.remove(&self.id) && r.waiting_for.is_empty() {
                    now_reclaimed.push((r.mark, r.ptr));
                }
            }
        }
        // Marking is a loom operation (a scheduling point): not under the std mutex. The
        // fence orders the marks after the retirements (whose fences came first): EBR's
        // collector frees an object only after synchronizing with the thread that retired
        // it (crossbeam's garbage bags and global epoch), so its destructor happens-after
        // everything that thread saw, the object's construction included. Without it, a
        // mark by a thread that never saw the object is a causality violation of the model
        // itself.
        if !now_reclaimed.is_empty() {
            fence(SeqCst);
        }
        for (mark, ptr) in now_reclaimed {
            // SAFETY: retired objects stay allocated until the `Reclaimer` drops.
            unsafe { mark(ptr) }
        }
    }
}

/// The locked section of a map: nothing to track under loom (its guard's `flush` does
/// nothing, and a model never re-enters a map from `Hash`).
pub(crate) struct LockScope<'g> {
    _guard: std::marker::PhantomData<&'g ()>,
}

impl<'g> LockScope<'g> {
    pub(crate) fn enter(_map: usize, _guard: &'g Guard<'g>) -> LockScope<'g> {
        LockScope { _guard: std::marker::PhantomData }
    }

    pub(crate) fn flush_on_unlock(&mut self) {}
}
