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

#[cfg(not(loom))]
pub(super) use self::epoch::{Guard, LockScope, Reclaimer, Tracked};
#[cfg(loom)]
pub(super) use self::model::{Guard, LockScope, Reclaimer, Tracked};

/// An object that can be retired: it carries a [`Tracked`] (a zero-sized no-op outside loom).
pub(super) trait Reclaim: Sized {
    /// The object's tracking state.
    #[cfg_attr(not(loom), allow(dead_code))] // only the loom stand-in marks objects
    fn tracked(&self) -> &Tracked;

    /// Frees a retired object, once no guard can see it: a box, unless the type says otherwise
    /// (an entry's inline slot, `entry.rs`).
    ///
    /// # Safety
    /// `ptr` was retired once and is called here once, when no guard that could see it lives;
    /// it is a `Box::into_raw` pointer unless the type's own `destroy` says what it is.
    unsafe fn destroy(ptr: *mut Self) {
        // SAFETY: per this function's contract, the only owner of a live box.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

#[cfg(not(loom))]
mod epoch {
    use super::Reclaim;
    use std::cell::Cell;
    use std::marker::PhantomData;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// The map's handle on reclamation: zero-sized, the default crossbeam-epoch collector is
    /// global.
    #[derive(Debug, Default)]
    pub(crate) struct Reclaimer;

    impl Reclaimer {
        pub(crate) const fn new() -> Reclaimer {
            Reclaimer
        }

        /// Pins the current thread.
        ///
        /// A first pin costs a fenced store to the thread's own epoch slot (a `lock cmpxchg` on
        /// x86), about as much as the rest of a `load`. So on goro's threads, inside a G's poll,
        /// the thread stays pinned for the rest of the poll by an *anchor* guard, and an
        /// operation's guard only borrows it (a thread-local counter: no fence, no crossbeam
        /// call); the runtime drops the anchor when the poll ends or the G enters
        /// `goro::syscall` (`coop::at_poll_end`), and it re-pins every [`ANCHOR_OPS`]
        /// operations, so the global epoch keeps advancing during a long poll. Elsewhere (plain
        /// threads, other executors) every operation pins and unpins.
        #[inline]
        pub(crate) fn pin(&self) -> Guard<'_> {
            let anchored = ANCHOR.try_with(Anchor::enter).unwrap_or(false);
            Guard {
                inner: if anchored { None } else { Some(crossbeam_epoch::pin()) },
                _reclaimer: PhantomData,
                _not_send: PhantomData,
            }
        }
    }

    /// Map operations between two re-pins of a poll's anchor guard (crossbeam-epoch's own
    /// rhythm: it collects garbage every 128 pins).
    const ANCHOR_OPS: u32 = 128;

    /// Objects retired under the anchor that are handed to crossbeam-epoch together, as one
    /// deferred call, followed by a flush (see [`Anchor`]). Each hand-over allocates two blocks
    /// of a few KiB (the next batch's buffer, crossbeam's sealed bag), and glibc consolidates
    /// its free small chunks on such an allocation: so not too often.
    const BATCH: usize = 512;

    /// One retired object, not yet handed to crossbeam-epoch: its box and its destructor.
    struct Retired {
        ptr: *mut (),
        /// `destroy::<T>` for the `T` that `ptr` points to.
        destroy: unsafe fn(*mut ()),
    }

    /// The anchor of the poll running on this thread (see [`Reclaimer::pin`]).
    ///
    /// Objects retired by an operation that borrows the anchor are kept in `retired`, and
    /// handed to crossbeam-epoch [`BATCH`] at a time as *one* deferred call, followed by a
    /// flush: crossbeam's own path (a 32-byte deferred per object, and a 2 KiB bag sealed,
    /// copied and allocated at every flush) cost more than the store that retired the object.
    /// Deferring later than the unlink is sound: the object is freed only after every thread
    /// pinned at the hand-over has unpinned, and a thread pinned at the unlink is either still
    /// pinned then, which holds the epoch back as much, or unpinned already. The anchor is
    /// pinned until it is dropped, so what an operation retired stays readable for as long as
    /// its guard lives, as with a guard of its own. What is left when the anchor drops is
    /// deferred object by object (no flush: a short poll that stored once pays what it did
    /// before), so it is never stranded in this thread.
    struct Anchor {
        /// The anchor guard, while the poll running on this thread has one.
        guard: Cell<Option<crossbeam_epoch::Guard>>,
        /// Whether `guard` holds one (read on every pin; `guard` is only taken and put back).
        anchored: Cell<bool>,
        /// Operations that borrowed the anchor since it was last (re)pinned.
        ops: Cell<u32>,
        /// Guards alive on this thread that borrow the anchor (nested ones: a `V::clone` or a
        /// destructor that uses a map). The anchor is re-pinned or dropped only at 0.
        active: Cell<u32>,
        /// The poll ended (or entered a syscall) while a guard borrowed the anchor: drop it
        /// when the last one goes.
        orphan: Cell<bool>,
        /// Retired objects not yet handed over, and how many.
        retired: Cell<Vec<Retired>>,
        pending: Cell<usize>,
    }

    impl Anchor {
        /// Borrows the anchor for a new guard, pinning one first if this is a goro M inside a
        /// poll that has none; `false` if the guard must pin on its own.
        #[inline]
        fn enter(&self) -> bool {
            let active = self.active.get();
            if !self.anchored.get() {
                return active == 0 && self.start();
            }
            if active == 0 {
                let ops = self.ops.get() + 1;
                if ops >= ANCHOR_OPS {
                    self.repin();
                    self.ops.set(0);
                } else {
                    self.ops.set(ops);
                }
            }
            self.active.set(active + 1);
            true
        }

        /// Pins an anchor for the rest of the poll, if there is a poll.
        #[cold]
        fn start(&self) -> bool {
            if !goro_runtime::coop::at_poll_end(drop_anchor) {
                return false;
            }
            // A first pin may collect garbage (crossbeam does so every 128 of them), and a
            // destructor run there may use a map: that nested operation anchors on its own
            // (this one is not registered yet) and is over when `pin` returns. Replacing its
            // anchor below just unpins one of two nested crossbeam guards.
            let guard = crossbeam_epoch::pin();
            drop(self.guard.replace(Some(guard)));
            self.anchored.set(true);
            self.ops.set(0);
            self.active.set(1);
            true
        }

        /// Lets the global epoch move on during a long poll. No guard borrows the anchor
        /// (`active` is 0), so nothing of this thread reads a retired object.
        #[cold]
        fn repin(&self) {
            let mut guard = self.guard.take();
            if let Some(g) = &mut guard {
                // crossbeam re-pins only if no other guard of this thread pins it.
                g.repin();
            }
            self.guard.set(guard);
        }

        /// A guard that borrowed the anchor is dropped.
        #[inline]
        fn leave(&self) {
            let active = self.active.get() - 1;
            self.active.set(active);
            if active == 0 && (self.pending.get() >= BATCH || self.orphan.get()) {
                self.leave_slow();
            }
        }

        #[cold]
        fn leave_slow(&self) {
            if self.pending.get() >= BATCH {
                self.hand_over();
            }
            if self.orphan.get() && self.active.get() == 0 {
                self.release();
            }
        }

        /// Retires `r` (an operation borrowing the anchor removed it from the map).
        #[inline]
        fn push(&self, r: Retired) {
            let mut retired = self.retired.take();
            retired.push(r);
            self.retired.set(retired);
            self.pending.set(self.pending.get() + 1);
        }

        /// Hands the retired objects to crossbeam-epoch as one deferred call and flushes, so
        /// that any thread may free them once the epoch allows; does nothing while this thread
        /// may not collect (it holds a map's lock, or is inside a collection).
        fn hand_over(&self) {
            if !may_collect() {
                return;
            }
            let batch = self.retired.replace(Vec::with_capacity(BATCH));
            self.pending.set(0);
            // Nested in the anchor (pinned while a guard borrows it or a poll runs): no fence.
            let guard = crossbeam_epoch::pin();
            if !batch.is_empty() {
                // SAFETY: every object in `batch` was retired by `Guard::retire`, whose
                // contract makes it unique and unlinked, retired once, and its destruction
                // on any thread is sound; deferring it now (after the unlink) frees it only
                // after every guard pinned now is dropped (see `Anchor`). The closure holds
                // the `Vec` (three words: stored inline, no allocation).
                unsafe { guard.defer_unchecked(move || destroy_all(batch)) };
            }
            flush(&guard);
        }

        /// Drops the anchor (no guard borrows it), handing what it retired over first.
        fn release(&self) {
            // Emptied in place, so that its buffer serves the next poll (deferring runs no user
            // code, so nothing else uses the cell meanwhile).
            let mut batch = self.retired.take();
            self.pending.set(0);
            let guard = self.guard.take();
            self.anchored.set(false);
            self.orphan.set(false);
            self.ops.set(0);
            if !batch.is_empty() {
                let pinned = guard.as_ref().map_or_else(|| Some(crossbeam_epoch::pin()), |_| None);
                let defer_with = guard.as_ref().or(pinned.as_ref()).expect("a guard");
                for r in batch.drain(..) {
                    // SAFETY: as in `hand_over`, for each object alone (a deferred call of two
                    // words, inline), as `Guard::retire` of a guard of its own does.
                    unsafe { defer_with.defer_unchecked(move || (r.destroy)(r.ptr)) };
                }
            }
            self.retired.set(batch);
            drop(guard);
        }
    }

    impl Drop for Anchor {
        /// The thread exits: nothing it retired may be stranded.
        fn drop(&mut self) {
            self.release();
        }
    }

    /// Destroys a batch of retired objects (a deferred call of [`Anchor::hand_over`]).
    fn destroy_all(batch: Vec<Retired>) {
        for r in batch {
            // SAFETY: crossbeam-epoch runs this once every guard that could see these objects
            // is dropped; each is retired once and its `destroy` matches its type (`Anchor`).
            unsafe { (r.destroy)(r.ptr) }
        }
    }

    thread_local! {
        /// The anchor of the poll running on this thread, and what it retired.
        static ANCHOR: Anchor = const {
            Anchor {
                guard: Cell::new(None),
                anchored: Cell::new(false),
                ops: Cell::new(0),
                active: Cell::new(0),
                orphan: Cell::new(false),
                retired: Cell::new(Vec::new()),
                pending: Cell::new(0),
            }
        };
        /// This thread's map locks and collections (see [`Held`]).
        static HELD: Held = const {
            Held { top: Cell::new(0), outer: [const { Cell::new(0) }; OUTER], depth: Cell::new(0), no_collect: Cell::new(0) }
        };
    }

    /// How many enclosing locked maps [`Held`] remembers for re-entry detection.
    const OUTER: usize = 7;

    /// What a thread holds: the maps whose lock it holds, and how many sections of it must not
    /// start a collection of garbage. (No `Drop`, so its thread-local needs no registration.)
    struct Held {
        /// The innermost map whose lock this thread holds (its address), or 0.
        top: Cell<usize>,
        /// The enclosing ones, outermost first (only a key's `Hash` or `Eq` that uses another
        /// map while its own is locked nests them); past `OUTER` of them, the deeper ones are
        /// not remembered, so a re-entry from there is not detected.
        outer: [Cell<usize>; OUTER],
        /// How many enclosing locked maps there are.
        depth: Cell<usize>,
        /// Map locks held, plus collections this crate started that are running (see the
        /// module docs).
        no_collect: Cell<u32>,
    }

    /// A section of this thread that must not start a collection: a flush, while it runs.
    struct NoCollect;

    impl NoCollect {
        fn enter() -> NoCollect {
            let _ = HELD.try_with(|h| h.no_collect.set(h.no_collect.get() + 1));
            NoCollect
        }
    }

    impl Drop for NoCollect {
        fn drop(&mut self) {
            let _ = HELD.try_with(|h| h.no_collect.set(h.no_collect.get() - 1));
        }
    }

    /// May this thread start a collection now? Not while it holds a map's lock, nor inside a
    /// collection this crate started (so a destructor that uses the map does not start another
    /// one inside it), nor while its thread-locals are being torn down.
    fn may_collect() -> bool {
        HELD.try_with(|h| h.no_collect.get() == 0).unwrap_or(false)
    }

    /// Collects garbage (`Guard::flush`) if this thread may, as a section that starts no other.
    fn flush(guard: &crossbeam_epoch::Guard) {
        if may_collect() {
            let _section = NoCollect::enter();
            guard.flush();
        }
    }

    /// What a call into a map from code run under the map's own lock gets instead of a
    /// deadlock.
    const REENTERED: &str = "goro::sync::Map re-entered while this thread holds the map's lock: \
        a key's Hash or Eq (or the map's hasher) called back into the same map, which would \
        deadlock; Hash and Eq must not use the map they key";

    /// The map's lock, held by this thread: created just before locking, dropped just after
    /// unlocking. While it lives, the epoch collector does not run on this thread (so no
    /// destructor runs under the lock), and a second lock of the same map by this thread panics
    /// (see `REENTERED`) before it could deadlock. A flush asked for under the lock
    /// ([`flush_on_unlock`](Self::flush_on_unlock)) runs when it drops.
    pub(crate) struct LockScope<'g> {
        /// The map locked before this one on this thread (its `Hash` or `Eq` runs this), or 0.
        enclosing: usize,
        guard: &'g Guard<'g>,
        flush: bool,
    }

    impl<'g> LockScope<'g> {
        /// Enters the locked section of the map at address `map` (call it, then lock).
        ///
        /// # Panics
        /// If this thread already holds that map's lock.
        #[inline]
        pub(crate) fn enter(map: usize, guard: &'g Guard<'g>) -> LockScope<'g> {
            let entered = HELD
                .try_with(|h| {
                    let top = h.top.get();
                    if top != 0 {
                        // Nested in another map's locked section (its key's `Hash` or `Eq`).
                        let depth = h.depth.get();
                        let outer = &h.outer[..depth.min(OUTER)];
                        if top == map || outer.iter().any(|m| m.get() == map) {
                            return None;
                        }
                        if let Some(slot) = h.outer.get(depth) {
                            slot.set(top);
                        }
                        h.depth.set(depth + 1);
                    }
                    h.top.set(map);
                    h.no_collect.set(h.no_collect.get() + 1);
                    Some(top)
                })
                .unwrap_or(Some(0));
            let Some(enclosing) = entered else { panic!("{REENTERED}") };
            LockScope { enclosing, guard, flush: false }
        }

        /// Asks for a flush of this thread's garbage once the lock is released (after retiring
        /// a whole table).
        pub(crate) fn flush_on_unlock(&mut self) {
            self.flush = true;
        }
    }

    impl Drop for LockScope<'_> {
        fn drop(&mut self) {
            // Locked sections nest strictly (an inner one is inside a `Hash` or `Eq` call).
            let _ = HELD.try_with(|h| {
                h.top.set(self.enclosing);
                if self.enclosing != 0 {
                    h.depth.set(h.depth.get() - 1);
                }
                h.no_collect.set(h.no_collect.get() - 1);
            });
            if self.flush {
                self.guard.flush();
            }
        }
    }

    /// The collector's half of [`Guard::retire`]: drops a retired object, on whatever thread
    /// collects. A panic of its destructor is contained here (see the module docs).
    ///
    /// # Safety
    /// `ptr` is what `Reclaim::destroy` takes for a `T` (a `Box::into_raw` pointer unless `T`
    /// says otherwise), was retired once, and every guard that could still see it has been
    /// dropped (crossbeam-epoch calls this only then).
    unsafe fn destroy<T: Reclaim>(ptr: *mut T) {
        // SAFETY: per this function's contract, which is `Reclaim::destroy`'s.
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { T::destroy(ptr) }));
        if let Err(payload) = dropped {
            crate::map::dropping::discard(payload);
        }
    }

    /// [`destroy`] of a type-erased pointer to a `T`.
    ///
    /// # Safety
    /// As for `destroy::<T>`, and `ptr` points to a `T`.
    unsafe fn destroy_erased<T: Reclaim>(ptr: *mut ()) {
        // SAFETY: per this function's contract.
        unsafe { destroy(ptr.cast::<T>()) }
    }

    /// Drops the anchor (the runtime, when the poll ends or its G enters a syscall); if a
    /// guard still borrows it, when that guard goes.
    fn drop_anchor() {
        let _ = ANCHOR.try_with(|a| {
            if a.active.get() > 0 {
                a.orphan.set(true);
            } else {
                a.release();
            }
        });
    }

    /// A pinned thread: objects retired while it lives are not freed before it is dropped.
    pub(crate) struct Guard<'r> {
        /// This guard's own pin, or `None` if it borrows the poll's anchor (see [`Anchor`]).
        inner: Option<crossbeam_epoch::Guard>,
        _reclaimer: PhantomData<&'r Reclaimer>,
        /// Bound to this thread's pin (as a crossbeam guard is).
        _not_send: PhantomData<*const ()>,
    }

    impl Drop for Guard<'_> {
        #[inline]
        fn drop(&mut self) {
            if self.inner.is_none() {
                // The anchor cannot have been torn down while this guard borrowed it: the
                // thread-local is only dropped at thread exit, after every operation.
                let _ = ANCHOR.try_with(Anchor::leave);
            }
        }
    }

    impl Guard<'_> {
        /// Defers freeing `ptr` until every thread pinned now has unpinned.
        ///
        /// # Safety
        ///
        /// - `ptr` is what `T`'s [`Reclaim::destroy`] takes (a `Box::into_raw` pointer unless
        ///   `T` says otherwise) and is retired at most once;
        /// - it is already unreachable: no load that starts after this call can return it;
        /// - dropping the `T` later, on any thread, is sound (the map requires its `K`, `V` and
        ///   `S` to be `Send + 'static`).
        #[inline]
        pub(crate) unsafe fn retire<T: Reclaim + 'static>(&self, ptr: *mut T) {
            match &self.inner {
                Some(g) => {
                    // SAFETY: crossbeam-epoch calls this closure once, after every guard that
                    // was pinned when it was deferred (below) is dropped; `ptr` is then
                    // retired once and nobody can reach it (this function's contract):
                    // `destroy`'s contract.
                    let destroy_later = move || unsafe { destroy(ptr) };
                    // SAFETY: forwarded from this function's contract: `ptr` is retired once
                    // and unlinked, so the deferred call (one pointer: stored inline, no
                    // allocation) runs once, after every guard that might still see it;
                    // dropping a `T` on the collecting thread is sound (`T`'s parts are
                    // `Send + 'static`).
                    unsafe { g.defer_unchecked(destroy_later) }
                }
                None => {
                    // Kept by the anchor, handed over later (see `Anchor`); `destroy_erased`
                    // is called on it once, as `destroy` above. (The anchor outlives this
                    // guard, see `drop`; were it gone, the object would leak, never be freed
                    // early.)
                    let r = Retired { ptr: ptr.cast(), destroy: destroy_erased::<T> };
                    let _ = ANCHOR.try_with(|a| a.push(r));
                }
            }
        }

        /// Moves this thread's deferred garbage to the global queue so any thread may free it
        /// soon, and collects some (used after retiring a whole table). Does nothing while this
        /// thread holds a map's lock or is inside a flush already.
        pub(crate) fn flush(&self) {
            match &self.inner {
                Some(g) => flush(g),
                None => {
                    let _ = ANCHOR.try_with(Anchor::hand_over);
                }
            }
        }
    }

    /// Loom's access tracking; nothing outside loom.
    #[derive(Debug, Default)]
    pub(crate) struct Tracked;

    impl Tracked {
        #[inline(always)]
        pub(crate) fn new() -> Tracked {
            Tracked
        }

        #[inline(always)]
        pub(crate) fn access(&self) {}
    }
}

#[cfg(loom)]
mod model {
    use super::Reclaim;
    use crate::loom::{fence, AtomicBool, Ordering::Relaxed, Ordering::SeqCst, UnsafeCell};
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
            // mark by a thread that never saw the object was a causality violation of the model
            // itself (found once entries stopped being loom `Arc`s, whose counts had hidden it).
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

    /// Loom's view of one shared object: its construction (a loom cell) and whether EBR would
    /// have freed it by now. `reclaimed` is a loom atomic (written and read `Relaxed`, so it
    /// adds no synchronization): that makes "mark reclaimed" and "access" dependent operations,
    /// so loom explores their interleavings, e.g. a read of a slot just after its reader unpinned.
    pub(crate) struct Tracked {
        constructed: UnsafeCell<()>,
        reclaimed: AtomicBool,
    }

    impl Tracked {
        pub(crate) fn new() -> Tracked {
            Tracked { constructed: UnsafeCell::new(()), reclaimed: AtomicBool::new(false) }
        }

        /// Checks that the object is not reclaimed and that its construction happens-before
        /// this access.
        #[track_caller]
        pub(crate) fn access(&self) {
            assert!(!self.reclaimed.load(Relaxed), "sync.Map: access to an object after EBR would have freed it");
            self.constructed.with(|_| ());
        }
    }
}
