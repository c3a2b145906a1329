//! What the current thread is to goro, in one thread-local record: the M it is (Go's
//! `getg().m`), the flags of the P it holds (sysmon's preemption request and the count of its
//! waits for goro's locks), a synctest bubble's yield count, and what to run when the current
//! poll ends.
//!
//! One record, one thread-local lookup: every yield point reads it (`coop::should_yield`), and
//! the flags of the P are one pointer away, on the P's own cache line.
//!
//! # Who writes what, and why every read is sound
//!
//! - The M is published by `m::enter` for the length of a closure (an M's loop, `block_on`) and
//!   the previous one put back after it, so a `block_on` inside a G nests. This module keeps it
//!   as an untyped pointer: `m` owns the type and the cast.
//! - The P's flags are published by the M that takes the P ([`publish_p`], from `hold`: an
//!   `acquirep`, or the P taken back after a syscall) and cleared when it lets the P go
//!   ([`clear_p`]). The record owns a strong count of the flags while it shows them (and keeps
//!   it until the M takes another P or stops being current), so a read through it can never
//!   meet freed memory, whatever order Ms, Ps and runtimes are torn down in.
//! - Everything else is this thread's alone.

// The record sits below the `loom` shim (whose mutex reports its waits here), so it takes its
// two atomics from std or loom itself.
use crossbeam_utils::CachePadded;
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU64};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering::Relaxed;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

/// The flags of a P that its owner's thread reads on hot paths and sysmon watches: published in
/// the owner's record while it holds the P.
#[derive(Default)]
pub(crate) struct PFlags {
    /// Set by sysmon when the running G has had the P for a whole time slice (10 ms): goro's
    /// yield points then return `Pending` once (see `coop`).
    pub(crate) preempt: AtomicBool,
    /// Twice the waits for goro's own locks by the thread holding this P, plus one while it
    /// waits (see [`lock_wait`]): sysmon does not count those as a blocked poll.
    pub(crate) lock_waits: AtomicU64,
}

/// How a P holds its flags: shared with the record of the thread that holds the P.
pub(crate) type PFlagsArc = Arc<CachePadded<PFlags>>;

/// The functions to call when the current poll ends: a user's (`coop::at_poll_end`) and the
/// runtime's own (`coop::at_poll_end_runtime`).
type PollEnd = [Option<fn()>; 2];

/// A strong count of a P's flags, as a raw pointer the record can keep in a `Cell` (null: no
/// flags). The record's `kept` always holds one of these, taken out and put back whole, so every
/// count is released exactly once: by this type's drop.
struct OwnedP(*const CachePadded<PFlags>);

impl OwnedP {
    const NONE: OwnedP = OwnedP(ptr::null());

    fn new(flags: &PFlagsArc) -> OwnedP {
        OwnedP(Arc::into_raw(flags.clone()))
    }

    /// The pointer, whose count the caller stores (in the record).
    fn into_raw(self) -> *const CachePadded<PFlags> {
        let p = self.0;
        std::mem::forget(self);
        p
    }
}

impl Drop for OwnedP {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a non-null pointer came from `Arc::into_raw` (`new`) with its count, which
            // only this value owns (the record hands its pointer over whole, see `Record::kept`).
            drop(unsafe { Arc::from_raw(self.0) });
        }
    }
}

struct Record {
    /// The current M (an `m::MCtx`), null if this thread is none.
    m: Cell<*const ()>,
    /// The flags of the P this thread holds, null if none; when not null, equal to `kept`.
    p: Cell<*const CachePadded<PFlags>>,
    /// An [`OwnedP`]'s pointer: a count of the flags of the last P this M held, kept across a
    /// release and a take of the same P (a `goro::syscall` does both, and counting them would
    /// cost it two atomic read-modify-writes each way), replaced when the M takes another P and
    /// released when the M stops being the current one ([`restore`]). Kept raw: a
    /// thread-local with a destructor costs every access a check of its state.
    kept: Cell<*const CachePadded<PFlags>>,
    /// The yield points left in this poll before it yields (0: no count; only a synctest bubble
    /// counts, see [`set_budget`]).
    budget: Cell<u32>,
    poll_end: Cell<PollEnd>,
}

impl Record {
    const fn new() -> Record {
        Record {
            m: Cell::new(ptr::null()),
            p: Cell::new(ptr::null()),
            kept: Cell::new(ptr::null()),
            budget: Cell::new(0),
            poll_end: Cell::new([None, None]),
        }
    }

    /// Keeps `new` and hands back the count it replaces.
    fn replace_kept(&self, new: OwnedP) -> OwnedP {
        OwnedP(self.kept.replace(new.into_raw()))
    }

    /// Runs `f` on the published flags, if any.
    #[inline]
    fn with_p<R>(&self, f: impl FnOnce(&PFlags) -> R) -> Option<R> {
        let p = self.p.get();
        // SAFETY: a non-null `p` equals `kept`, whose count the record owns and gives up only in
        // `replace_kept`, which `f` (this module's code, below) does not call.
        unsafe { p.as_ref() }.map(|flags| f(flags))
    }
}

#[cfg(not(loom))]
thread_local! {
    static RECORD: Record = const { Record::new() };
}
#[cfg(loom)]
loom::thread_local! {
    static RECORD: Record = Record::new();
}

/// The current M, null if none (see the module docs; `m` casts it).
#[inline]
pub(crate) fn m() -> *const () {
    RECORD.try_with(|r| r.m.get()).unwrap_or(ptr::null())
}

/// Publishes `m` as the current M and returns the one it replaces, with the P flags published
/// for that one (the caller is entering a nested M, which starts with no P, and puts both back
/// with [`restore`]).
pub(crate) fn enter_m(m: *const ()) -> Saved {
    RECORD
        .try_with(|r| Saved { m: r.m.replace(m), p: r.p.replace(ptr::null()), kept: r.replace_kept(OwnedP::NONE) })
        .unwrap_or(Saved { m: ptr::null(), p: ptr::null(), kept: OwnedP::NONE })
}

/// What [`enter_m`] replaced.
pub(crate) struct Saved {
    m: *const (),
    /// Null, or `kept`'s pointer.
    p: *const CachePadded<PFlags>,
    kept: OwnedP,
}

/// Puts back what [`enter_m`] replaced: the outer M, its P's flags and its count; the count the
/// inner M kept is released.
pub(crate) fn restore(saved: Saved) {
    let Saved { m, p, kept } = saved;
    // `try_with`: the thread may be tearing down its thread-locals (`kept` is released then).
    let _ = RECORD.try_with(move |r| {
        r.m.set(m);
        r.p.set(p);
        drop(r.replace_kept(kept));
    });
}

/// Publishes `flags` as those of the P this thread holds (`acquirep`, and the P taken back
/// after a syscall). Counts them only when they are not the ones kept already.
pub(crate) fn publish_p(flags: &PFlagsArc) {
    let _ = RECORD.try_with(|r| {
        let want = Arc::as_ptr(flags);
        if r.kept.get() != want {
            drop(r.replace_kept(OwnedP::new(flags)));
        }
        r.p.set(want);
    });
}

/// This thread holds no P any more (`releasep`); the count stays kept (see `Record::kept`).
pub(crate) fn clear_p() {
    let _ = RECORD.try_with(|r| r.p.set(ptr::null()));
}

/// Whether this thread holds a P (of any runtime).
pub(crate) fn holds_p() -> bool {
    RECORD.try_with(|r| !r.p.get().is_null()).unwrap_or(false)
}

/// The yield point's question (see `coop::should_yield`): `true` once a synctest bubble's count
/// runs out, or once per preemption request of sysmon to the P this thread holds (the request
/// is cleared).
#[inline]
pub(crate) fn take_preempt() -> bool {
    RECORD
        .try_with(|r| {
            let b = r.budget.get();
            if b != 0 {
                r.budget.set(b - 1);
                if b == 1 {
                    return true;
                }
            }
            r.with_p(|f| {
                let asked = f.preempt.load(Relaxed);
                if asked {
                    f.preempt.store(false, Relaxed);
                }
                asked
            })
            .unwrap_or(false)
        })
        .unwrap_or(false)
}

/// A synctest bubble's preemption, in place of sysmon's (a bubble has no sysmon, and its
/// choices must not depend on time): the poll about to start yields at its `n`-th yield point
/// (`n >= 2`, so that each poll gets at least one operation done). 0 turns the count off.
pub(crate) fn set_budget(n: u32) {
    let _ = RECORD.try_with(|r| r.budget.set(n));
}

/// Waits for a lock of goro's own: the contended path of the runtime's mutexes (the `shim`
/// that every goro crate locks with) and of the channels' lock. While `wait` runs, the P this
/// thread holds says so in its `lock_waits` (odd while waiting, one more when done), for
/// sysmon: the thread may sleep there for as long as the lock's holder is descheduled, which on
/// a loaded machine is milliseconds, and that is no blocking call of the user's (see
/// `sysmon::Naps`). Two stores to the P's counters, and only once the lock was found taken.
/// `wait` must not let the thread's P go (a lock's park or a spin; no `goro::syscall`).
#[inline]
pub fn lock_wait<R>(wait: impl FnOnce() -> R) -> R {
    #[cfg(not(loom))]
    {
        /// Ends the wait even if `wait` unwinds: an odd count left behind would read as a wait
        /// forever, and the P would never be handed off again.
        struct Done(*const CachePadded<PFlags>);
        impl Drop for Done {
            fn drop(&mut self) {
                let _ = RECORD.try_with(|r| {
                    // The same P: only this thread publishes its P, and a wait for a lock does
                    // not let it go (the callers' `wait` is a lock's park or a spin).
                    debug_assert_eq!(r.p.get(), self.0, "goro: a P was let go inside a wait for a lock");
                    r.with_p(|f| bump(&f.lock_waits))
                });
            }
        }
        let waiting = RECORD.try_with(|r| r.with_p(|f| bump(&f.lock_waits)).map(|()| r.p.get()));
        if let Ok(Some(p)) = waiting {
            let _done = Done(p);
            return wait();
        }
    }
    wait()
}

/// One more on an owner-written counter, without a read-modify-write instruction.
#[cfg(not(loom))]
fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

/// Registers `f` to run when the current poll ends (`coop::at_poll_end`, slot 0, or the
/// runtime's, slot 1): `false` if the slot holds another function already.
pub(crate) fn at_poll_end(slot: usize, f: fn()) -> bool {
    RECORD
        .try_with(|r| {
            let mut slots = r.poll_end.get();
            match slots[slot] {
                None => {
                    slots[slot] = Some(f);
                    r.poll_end.set(slots);
                    true
                }
                Some(g) => std::ptr::fn_addr_eq(g, f),
            }
        })
        .unwrap_or(false)
}

/// Takes the functions registered for the end of this poll.
pub(crate) fn take_poll_end() -> PollEnd {
    RECORD.try_with(|r| r.poll_end.replace([None, None])).unwrap_or([None, None])
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    fn published() -> *const CachePadded<PFlags> {
        RECORD.with(|r| r.p.get())
    }

    /// A `block_on` of another runtime inside a G: when it returns, and when it unwinds, the
    /// G's M shows its own P's flags again (else its Gs are never asked to yield and its lock
    /// waits read as sleeps to sysmon), and once both runtimes are gone no count of any P's
    /// flags is left behind.
    #[test]
    fn a_nested_block_on_gives_the_outer_m_its_p_flags_back() {
        let outer = crate::Builder::new().max_procs(1).build().unwrap();
        let inner = Arc::new(crate::Builder::new().max_procs(1).build().unwrap());
        let flags: Vec<PFlagsArc> =
            outer.shared().allp.iter().chain(inner.shared().allp.iter()).map(|p| p.flags.clone()).collect();
        let nested = inner.clone();
        outer.block_on(async move {
            crate::go(async move {
                let own = published();
                assert!(!own.is_null(), "a G's M shows its P's flags");
                nested.block_on(async {
                    assert_ne!(published(), own, "the inner M shows its own P's flags");
                });
                assert_eq!(published(), own, "after the nested block_on returned");
                let unwound = catch_unwind(AssertUnwindSafe(|| nested.block_on(async { panic!("inner main") })));
                assert!(unwound.is_err());
                assert_eq!(published(), own, "after the nested block_on unwound");
            })
            .await
            .unwrap();
        });
        drop(inner);
        drop(outer);
        for f in &flags {
            assert_eq!(Arc::strong_count(f), 1, "a count of a P's flags outlived its runtime");
        }
    }
}
