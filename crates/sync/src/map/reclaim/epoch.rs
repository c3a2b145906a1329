//! Reclamation outside loom: crossbeam-epoch behind the map's API (`Reclaimer`, `Guard`,
//! `LockScope`), with the batches of a G's poll, the locked sections that collect nothing, and
//! destructors whose panics stay in them (the module docs of `reclaim`).

use super::tracked::Reclaim;
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
        if !goro_runtime::__private::at_poll_end(drop_anchor) {
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
