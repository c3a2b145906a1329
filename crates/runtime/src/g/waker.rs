//! The G is its own `Waker`: the waker's data pointer is the G's header.
//!
//! `clone` takes a reference, `drop` releases one, and a wake runs the `NOTIFIED` transition of
//! [`state`](super::state): only the wake that finds the G waiting enqueues it, through its
//! scheduler's `ready` (Go's `goready`; see [`Schedule`](super::Schedule)), which puts it in the
//! current P's `runnext` when the waker runs on an M of the G's own runtime.

use super::raw::Header;
use super::state::ToNotified;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

/// A raw waker for `ptr` (that does not take a reference by itself).
fn raw(ptr: NonNull<Header>) -> RawWaker {
    RawWaker::new(ptr.as_ptr() as *const (), &VTABLE)
}

/// The G a waker's data pointer is, and its header.
///
/// # Safety
/// `data` came from [`raw`], and the header stays live for `'a` (a reference is held on it).
unsafe fn g_of<'a>(data: *const ()) -> (NonNull<Header>, &'a Header) {
    debug_assert!(!data.is_null(), "goro: a G waker without its G");
    // SAFETY: caller contract; non-null because `raw` made it from a `NonNull`.
    unsafe {
        let ptr = NonNull::new_unchecked(data as *mut Header);
        (ptr, ptr.as_ref())
    }
}

/// # Safety (all four)
/// `data` is the header of a live G on which the waker holds a reference.
unsafe fn clone(data: *const ()) -> RawWaker {
    // SAFETY: see above.
    let (_, header) = unsafe { g_of(data) };
    header.state.ref_inc();
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake(data: *const ()) {
    // SAFETY: see above: the waker's reference keeps the G alive until the transition below
    // consumes it.
    let (ptr, header) = unsafe { g_of(data) };
    match header.state.transition_to_notified_by_val() {
        // The waker's reference is now the run queue's.
        // SAFETY: the waker's reference is handed over.
        (ToNotified::Submit, _) => unsafe { Header::schedule(ptr) },
        // SAFETY: that was the last reference.
        (ToNotified::Nothing, true) => unsafe { (header.vtable.dealloc)(ptr) },
        (ToNotified::Nothing, false) => {}
    }
}

unsafe fn wake_by_ref(data: *const ()) {
    // SAFETY: see above: the waker's reference keeps the G alive.
    let (ptr, header) = unsafe { g_of(data) };
    if header.state.transition_to_notified_by_ref() == ToNotified::Submit {
        // SAFETY: the transition took a new reference for the run queue, handed over here.
        unsafe { Header::schedule(ptr) };
    }
}

unsafe fn drop_waker(data: *const ()) {
    // SAFETY: see above: the waker's reference keeps the G alive until released here.
    let (ptr, header) = unsafe { g_of(data) };
    if header.state.ref_dec(1) {
        // SAFETY: that was the last reference.
        unsafe { (header.vtable.dealloc)(ptr) };
    }
}

/// A waker for the G that does not own a reference: valid while the caller holds one.
///
/// # Safety
/// The caller must keep a reference to the G for as long as the waker (not its clones) lives.
pub(crate) unsafe fn borrowed_waker(ptr: NonNull<Header>) -> ManuallyDrop<Waker> {
    // SAFETY: `raw` builds a waker whose drop would release a reference; it is
    // never dropped (ManuallyDrop), and clones take their own references.
    ManuallyDrop::new(unsafe { Waker::from_raw(raw(ptr)) })
}
