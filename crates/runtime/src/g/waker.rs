//! The G is its own `Waker`: the waker's data pointer is the G's header.
//!
//! `clone` takes a reference, `drop` releases one, and a wake runs the `NOTIFIED` transition of
//! [`state`](super::state): only the wake that finds the G waiting enqueues it, through its
//! scheduler's `ready` (Go's `goready`; see [`Schedule`](super::Schedule)), which puts it in the
//! current P's `runnext` when the waker runs on an M of the G's own runtime.
//!
//! Two things a G does to its own waker during its poll are noted on the polling thread
//! ([`Polling`]) instead of in the state word. Go's runtime does neither step below at all: a
//! parked G is a pointer its waiter holds, kept alive by the collector, and `Gosched` puts the
//! running G on the global queue without touching another word.
//! - **The first clone lends the M's reference.** A G that parks clones its waker (the
//!   channel's `sudog` keeps the clone) and the poll's end then drops the reference the M held
//!   for the poll: two read-modify-writes of the state word to hand one reference from the M to
//!   the waiter. The first clone made on the polling thread takes the M's reference over
//!   instead, and the poll's end leaves the count alone ([`RunRef::Lent`]). The M needs no
//!   reference to finish its work on the G meanwhile: while the G is `RUNNING` the all-Gs
//!   list's reference keeps it allocated, and only the M that runs it drops that one
//!   (`complete`). If the G finishes, is cancelled or is re-queued instead, the M takes a
//!   reference again in the transition that needs it.
//! - **A wake by reference of the running G is a note.** `yield_now` (and any future that
//!   wakes itself by reference before it returns `Pending`) sets [`SelfWake::Yes`], and the
//!   poll's end sets `NOTIFIED` in the one transition it makes anyway, instead of a CAS of its
//!   own during the poll. A wake from any other thread, or by value, takes the state word's path.

use super::raw::Header;
use super::state::{RunRef, SelfWake, ToNotified};
use std::cell::Cell;
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

/// `Polling`'s word: the polled G's header address (a G starts on a cache line of its own, so
/// its low bits are free) and these two flags.
const LENT: usize = 1 << 0;
const SELF_WOKEN: usize = 1 << 1;
const FLAGS: usize = LENT | SELF_WOKEN;

#[cfg(not(loom))]
std::thread_local! {
    static POLLING: Cell<usize> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static POLLING: Cell<usize> = Cell::new(0);
}

/// The G this thread polls, from [`Polling::begin`] to [`Polling::end`]: what the waker's
/// functions look at to tell a clone or a wake of the polled G on its own thread (see the
/// module docs). A poll inside a poll (a `block_on` of another runtime inside a G) saves the
/// outer record and puts it back.
///
/// The thread-local has no destructor, so it is there for as long as the thread runs code;
/// `try_with` still guards the calls, and a thread whose record is gone notes nothing (every
/// clone takes a reference, every wake takes the state word's path).
#[must_use = "a poll's record must be ended"]
pub(crate) struct Polling {
    /// The record this one replaced.
    outer: usize,
}

impl Polling {
    /// Called by the M that moved `g` to `RUNNING`, just before it polls it, holding the run
    /// queue's reference.
    #[inline]
    pub(crate) fn begin(g: NonNull<Header>) -> Polling {
        let addr = g.as_ptr() as usize;
        debug_assert_eq!(addr & FLAGS, 0, "goro: a G's header is not aligned");
        Polling { outer: POLLING.try_with(|p| p.replace(addr)).unwrap_or(0) }
    }

    /// Called as soon as the poll returns: what it did with the M's reference and its own
    /// wakes. The poll (`Vtable::poll`) catches a panic, so this always runs.
    #[inline]
    pub(crate) fn end(self) -> (RunRef, SelfWake) {
        let word = POLLING.try_with(|p| p.replace(self.outer)).unwrap_or(0);
        let run_ref = if word & LENT != 0 { RunRef::Lent } else { RunRef::Kept };
        let wake = if word & SELF_WOKEN != 0 { SelfWake::Yes } else { SelfWake::No };
        (run_ref, wake)
    }
}

/// Sets `flag` in this thread's poll record if the record is of the G at `data` once the bits
/// of `ignore` are masked out of it; returns whether it did.
#[inline]
fn note(data: *const (), ignore: usize, flag: usize) -> bool {
    POLLING
        .try_with(|p| {
            let word = p.get();
            let ours = word & !ignore == data as usize;
            if ours {
                p.set(word | flag);
            }
            ours
        })
        .unwrap_or(false)
}

/// Whether the G at `data` is the one this thread polls, its reference not lent yet: then it
/// is lent now, to the clone being made (`LENT` is not masked out: it is lent once).
#[inline]
fn lend_run_ref(data: *const ()) -> bool {
    note(data, SELF_WOKEN, LENT)
}

/// Whether the G at `data` is the one this thread polls: then its wake is noted.
#[inline]
fn note_self_wake(data: *const ()) -> bool {
    note(data, FLAGS, SELF_WOKEN)
}

/// # Safety (all four)
/// `data` is the header of a live G on which the waker holds a reference; or the waker is the
/// one its poll was given (`borrowed_waker`), used during that poll, whose reference may be
/// lent to a clone by now: the G is then `RUNNING`, and the all-Gs list's reference keeps it.
unsafe fn clone(data: *const ()) -> RawWaker {
    // The first clone of the polled G's waker on its thread takes the M's reference over.
    if !lend_run_ref(data) {
        // SAFETY: see above.
        let (_, header) = unsafe { g_of(data) };
        header.state.ref_inc();
    }
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
    if note_self_wake(data) {
        // The G wakes itself while it runs: the poll's end re-queues it.
        return;
    }
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
