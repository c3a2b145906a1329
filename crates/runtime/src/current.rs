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
//!   ([`clear_p`]). The record owns a strong count of the runtime the flags live in while it
//!   shows them (and keeps it until the M takes a P of another runtime or stops being current),
//!   so a read through it can never meet freed memory, whatever order Ms, Ps and runtimes are
//!   torn down in; and a syscall, or an M moving between the Ps of its runtime, counts nothing.
//! - Everything else is this thread's alone.

// The record sits below the `loom` shim (whose mutex reports its waits here), so it takes its
// two atomics from std or loom itself.
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU64};
use std::cell::Cell;
use std::ptr::{self, NonNull};
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
    /// The P's index (what the execution trace names the P this thread holds by).
    pub(crate) id: usize,
}

/// The functions to call when the current poll ends: a user's (`coop::at_poll_end`) and the
/// runtime's own (`coop::at_poll_end_runtime`).
type PollEnd = [Option<fn()>; 2];

/// What a [`Kept`] count keeps alive: any runtime's state, type-erased (this module is below
/// the scheduler and names none of its types).
type Erased = dyn Send + Sync;

/// A strong count of the runtime whose P's flags the record shows (or showed last), as a raw
/// pointer the record can keep in a `Cell` (`None`: no count). The record's `kept` always
/// holds one of these, taken out and put back whole, so every count is released exactly once:
/// by this type's drop.
struct Kept(Option<NonNull<Erased>>);

impl Kept {
    const NONE: Kept = Kept(None);

    fn new<O: Send + Sync + 'static>(owner: &Arc<O>) -> Kept {
        let erased: Arc<Erased> = owner.clone();
        Kept(NonNull::new(Arc::into_raw(erased).cast_mut()))
    }

    /// The pointer, whose count the caller stores (in the record).
    fn into_raw(self) -> Option<NonNull<Erased>> {
        let p = self.0;
        std::mem::forget(self);
        p
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            // SAFETY: the pointer came from `Arc::into_raw` (`new`) with its count, which only
            // this value owns (the record hands its pointer over whole, see `Record::kept`).
            drop(unsafe { Arc::from_raw(p.as_ptr().cast_const()) });
        }
    }
}

struct Record {
    /// The current M (an `m::MCtx`), null if this thread is none.
    m: Cell<*const ()>,
    /// The flags of the P this thread holds, null if none: inside the runtime that `kept`
    /// keeps alive.
    p: Cell<*const PFlags>,
    /// A [`Kept`]'s pointer: a count of the runtime of the last P this M held, kept across
    /// releases and takes of its Ps (a `goro::syscall` does both, and an M moves between Ps; a
    /// count each time would cost them atomic read-modify-writes on a line every M shares),
    /// replaced when the M takes a P of another runtime and released when it stops being the
    /// current M ([`restore`]). Kept raw: a thread-local with a destructor costs every access a
    /// check of its state.
    kept: Cell<Option<NonNull<Erased>>>,
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
            kept: Cell::new(None),
            budget: Cell::new(0),
            poll_end: Cell::new([None, None]),
        }
    }

    /// Keeps `new` and hands back the count it replaces.
    fn replace_kept(&self, new: Kept) -> Kept {
        Kept(self.kept.replace(new.into_raw()))
    }

    /// Runs `f` on the published flags, if any.
    #[inline]
    fn with_p<R>(&self, f: impl FnOnce(&PFlags) -> R) -> Option<R> {
        let p = self.p.get();
        // SAFETY: a non-null `p` lies in the runtime that `kept` counts (see `publish_p`), and
        // the record gives that count up only in `replace_kept`, which `f` (this module's code,
        // below) does not call; `publish_p` and `restore` replace `p` before their count.
        unsafe { p.as_ref() }.map(f)
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
        .try_with(|r| Saved { m: r.m.replace(m), p: r.p.replace(ptr::null()), kept: r.replace_kept(Kept::NONE) })
        .unwrap_or(Saved { m: ptr::null(), p: ptr::null(), kept: Kept::NONE })
}

/// What [`enter_m`] replaced.
pub(crate) struct Saved {
    m: *const (),
    /// Null, or flags inside the runtime `kept` counts.
    p: *const PFlags,
    kept: Kept,
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

/// Publishes the flags that `flags` finds in `owner` (a runtime's state) as those of the P this
/// thread holds (`acquirep`, and the P taken back after a syscall). The record keeps a count of
/// `owner`, taken only when it kept another one: the reference `flags` returns lives as long as
/// its borrow of `owner`, so it stays valid while that count does.
pub(crate) fn publish_p<O: Send + Sync + 'static>(owner: &Arc<O>, flags: impl FnOnce(&O) -> &PFlags) {
    let _ = RECORD.try_with(|r| {
        let same = r.kept.get().is_some_and(|k| ptr::eq(k.as_ptr().cast::<()>(), Arc::as_ptr(owner).cast::<()>()));
        r.p.set(ptr::null());
        if !same {
            drop(r.replace_kept(Kept::new(owner)));
        }
        r.p.set(flags(owner));
    });
}

/// This thread holds no P any more (`releasep`); the count stays kept (see `Record::kept`).
pub(crate) fn clear_p() {
    let _ = RECORD.try_with(|r| r.p.set(ptr::null()));
}

/// The index of the P this thread holds (of any runtime), if it holds one.
pub(crate) fn held_p() -> Option<usize> {
    RECORD.try_with(|r| r.with_p(|f| f.id)).ok().flatten()
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
        struct Done(*const PFlags);
        impl Drop for Done {
            fn drop(&mut self) {
                let _ = RECORD.try_with(|r| {
                    // The same P: only this thread publishes its P, and a wait for a lock does
                    // not let it go (the callers' `wait` is a lock's park or a spin).
                    debug_assert_eq!(r.p.get(), self.0, "goro: a P was let go inside a wait for a lock");
                    r.with_p(|f| bump(&f.lock_waits, 1))
                });
            }
        }
        let waiting = RECORD.try_with(|r| r.with_p(|f| bump(&f.lock_waits, 1)).map(|()| r.p.get()));
        if let Ok(Some(p)) = waiting {
            let _done = Done(p);
            return wait();
        }
    }
    wait()
}

/// Adds to an owner-written counter without a read-modify-write instruction (the lock waits
/// here, the P's stats; `loom` re-exports it, below which this module sits).
#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
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

    fn published() -> *const PFlags {
        RECORD.with(|r| r.p.get())
    }

    /// A `block_on` of another runtime inside a G: when it returns, and when it unwinds, the
    /// G's M shows its own P's flags again (else its Gs are never asked to yield and its lock
    /// waits read as sleeps to sysmon), and once both runtimes are gone no count of either is
    /// left behind.
    #[test]
    fn a_nested_block_on_gives_the_outer_m_its_p_flags_back() {
        let outer = crate::Builder::new().max_procs(1).build().unwrap();
        let inner = Arc::new(crate::Builder::new().max_procs(1).build().unwrap());
        let states = [outer.shared().clone(), inner.shared().clone()];
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
        for sh in &states {
            assert_eq!(Arc::strong_count(sh), 1, "a count of a runtime outlived it in a thread's record");
        }
    }
}
