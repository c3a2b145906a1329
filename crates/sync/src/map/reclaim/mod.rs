//! Memory reclamation for [`Map`](super::Map): when may a value or a `readOnly` snapshot that
//! was swapped out be freed, given that lock-free readers may still be looking at it?
//!
//! Outside loom this is crossbeam-epoch (epoch-based reclamation, EBR): every map operation pins
//! the thread once ([`Reclaimer::pin`]), and an object unlinked from the map is handed to
//! [`Guard::retire`], which defers its destruction (`defer_destroy`) until every thread that was
//! pinned at that moment has unpinned. A `Guard` is what makes a `&'g` borrow of a shared object
//! sound, so every function that hands out such a borrow takes the guard and ties the borrow's
//! lifetime to it.
//!
//! # Under loom: a checkable stand-in
//!
//! crossbeam-epoch cannot run under `--cfg loom`: it has its own `crossbeam_loom` cfg (a second
//! RUSTFLAGS switch, the `loom` feature of crossbeam-epoch and crossbeam-utils, and no default
//! collector, so every call site would change), and its global epoch, participant list and
//! garbage bags would multiply the interleavings of even a two-operation model past anything
//! that finishes. So under loom the same API is backed by a tiny *model* of EBR's contract:
//!
//! - [`Reclaimer::pin`] issues a `fence(SeqCst)` (crossbeam's pin has one too) and registers the
//!   guard in a per-map table; [`Guard::retire`] issues a `fence(SeqCst)` and records the set of
//!   guards alive at that moment. Loom orders SeqCst fences totally, so a guard pinned after a
//!   retirement is guaranteed to observe the unlink that preceded it, which is exactly the
//!   guarantee EBR gives.
//! - When the last guard of that set is dropped, the object is *marked reclaimed* (it is not
//!   freed yet). Every read of a value slot or a `readOnly` snapshot goes through
//!   [`Tracked::access`], which panics on a reclaimed object. So a model fails if the map ever
//!   reads an object through a path that a later-pinned guard can still reach after retirement
//!   (retire before unlink), retires an object twice, or reads one after dropping the guard that
//!   protected it. The mark is a loom atomic (Relaxed, so it synchronizes nothing): marking and
//!   reading are then operations loom knows to be in conflict, and it tries both orders. The
//!   marking thread fences (`SeqCst`) first: EBR frees an object only after synchronizing with
//!   the thread that retired it, so the mark happens-after the object's construction.
//! - The fences make this model slightly stronger than C++ fences (loom joins the clocks of
//!   successive SeqCst fences), so a missing Release/Acquire can be masked in a schedule where a
//!   retirement's fence precedes the reader's pin; the models still catch such bugs in other
//!   schedules (see the mutations listed in `loom_tests/map.rs`).
//! - [`Tracked`] also holds a loom `UnsafeCell<()>` created with the object: `access` reads it,
//!   so loom reports an access that does not happen-after the object's construction, i.e. a
//!   publication (of a value into an entry, of a snapshot into `read`) whose Release/Acquire
//!   pairing is missing.
//! - Reclaimed and still-pending objects are all freed when the map (and so its `Reclaimer`) is
//!   dropped, so a model ends with no leaks, and loom's leak check of its `Arc`s (entries and
//!   tables) stays meaningful.
//!
//! # Where retired objects are dropped
//!
//! A retired object's destructor is user code (a value's `Drop`, or a snapshot's table full of
//! keys and entries), and crossbeam-epoch runs it on whatever thread *collects*: a first `pin`
//! every 128, a `flush`, a thread's exit. So:
//!
//! - No collection while the map's lock is held: [`LockScope`] marks the locked section on this
//!   thread, and [`Guard::flush`] (and the poll anchor's hand-over of a batch) do nothing inside
//!   it; a flush that a locked section asks for runs after the unlock. crossbeam's own collection
//!   happens only on a thread's *first* pin, and every locked section runs with its operation's
//!   guard pinned, so that one cannot happen there. A destructor that calls back into the map
//!   (a cache recording its evictions in itself) therefore never finds the lock held by its own
//!   thread.
//! - A destructor's panic stays in the destructor: each retired object is dropped under
//!   `catch_unwind` and the panic is discarded (the panic hook has reported it by then). It
//!   never unwinds into the unrelated G or thread that happened to collect, nor through
//!   crossbeam's collector, and two panics never meet (an abort). Drops that the map makes on
//!   behalf of a caller (see `dropping.rs`) surface the panic in that caller instead.
//! - A collection this crate starts (a flush) starts no other inside it, so a destructor that
//!   uses the map does not recurse into the collector: it can nest at most once, inside one of
//!   crossbeam's own periodic collections. (Marking each destructor instead would cost every
//!   retired value two thread-local accesses.)
//!
//! [`LockScope`] also detects a call into the map from code it runs under its own lock (a key's
//! `Hash` or `Eq`): that call would deadlock the thread, so it panics instead.
//!
//! What the stand-in does *not* check: crossbeam-epoch's own algorithm (global epoch advance,
//! bag sealing; crossbeam tests that), the cost and timing of deferred garbage (nothing is
//! freed before the map drops), and the drop of an entry's *current* value when the entry's
//! last `Arc` goes (an immediate free in both builds, argued in `entry.rs`). Its bookkeeping
//! (guard ids, retired lists) uses a `std` mutex on purpose, never held across a loom operation:
//! it is instrumentation, not part of the algorithm, and must add no interleavings of its own.
//!
//! # Files
//!
//! - `tracked.rs`: what a retired object carries, the [`Reclaim`] trait and [`Tracked`];
//! - `epoch.rs`: the crossbeam-epoch build (outside loom);
//! - `model.rs`: the stand-in (under loom).

#[cfg(not(loom))]
mod epoch;
#[cfg(loom)]
mod model;
mod tracked;

#[cfg(not(loom))]
pub(super) use self::epoch::{Guard, LockScope, Reclaimer};
#[cfg(loom)]
pub(super) use self::model::{Guard, LockScope, Reclaimer};
pub(super) use self::tracked::{Reclaim, Tracked};
