//! Go's `entry`: one key's slot, an atomic pointer `p` that is a value, nil (deleted) or the
//! `expunged` sentinel, and the operations on it (`load`, `tryLoadOrStore`, `trySwap`, ...).
//!
//! # Ownership and lifetimes
//!
//! - A value lives in a [`Slot`], never mutated once published into an entry. The entry owns
//!   the slot its `p` points to. An entry's *first* value lives in a slot inside the entry
//!   (`first`), so that a new key costs no allocation of its own (entries are carved from their
//!   shard's blocks, `slab.rs`); every later value gets a heap slot of its own, created by
//!   [`Unpublished`]. `p` never points back at `first` once it has left it.
//! - A slot that is swapped or CASed *out* of `p` is owned by the thread whose atomic operation
//!   removed it; that thread retires it through its epoch [`Guard`] at once, and may keep
//!   reading it (and hand out a `&'g Slot`) for as long as that guard lives. Retiring the
//!   inline slot retires a [`FirstSlot`]: it holds a count of the entry, so the entry's
//!   memory outlives every guard that could still read the slot, and when collected it drops
//!   the value in place and then that count.
//! - An entry is shared, counted by [`EntryRef`]s (an `Arc` without a weak count), between the
//!   `read` tables and the `dirty` map. It is dropped when its last `EntryRef` goes, which frees
//!   the slot still in `p` immediately and gives back the entry's count of its block. That is
//!   sound because a reader can only reach an entry through a table it holds (a `read`
//!   snapshot, kept alive by its guard, or the `dirty` map under the lock) or through an
//!   `EntryRef` it cloned, and every borrow of the current slot is tied to the borrow of the
//!   entry: while anyone can still read that slot, the entry is alive.
//!   An entry exists only behind `EntryRef`s ([`EntryRef::carve`] is its one constructor,
//!   and nothing moves an entry out of them), so the inline slot never moves; the operations
//!   that retire a slot are methods of `EntryRef`, so a retirement's count is a clone of one.
//!
//! `expunged` is the address of a private static, never dereferenced and never equal to a heap
//! pointer. Slot pointers are never reused while a guard that read them lives (EBR), so a CAS
//! that compares a pointer it loaded under the same guard has no ABA problem.

use super::reclaim::{Guard, Reclaim, Tracked};
use super::slab::{Block, Slab};
use crate::loom::{AtomicPtr, AtomicUsize, Ordering::*, UntrackedUnsafeCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Deref;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

/// One stored value, immutable once published.
pub(super) struct Slot<V> {
    tracked: Tracked,
    value: V,
}

impl<V> Slot<V> {
    /// The value. (Under loom: checks that the slot was published to this thread and is not yet
    /// reclaimed.)
    #[inline]
    pub(super) fn value(&self) -> &V {
        self.tracked.access();
        &self.value
    }
}

impl<V> Reclaim for Slot<V> {
    fn tracked(&self) -> &Tracked {
        &self.tracked
    }
}

/// A slot that no other thread has seen yet; freed on drop unless published.
pub(super) struct Unpublished<V>(NonNull<Slot<V>>);

impl<V> Unpublished<V> {
    pub(super) fn new(value: V) -> Unpublished<V> {
        Unpublished(NonNull::from(Box::leak(Box::new(Slot { tracked: Tracked::new(), value }))))
    }

    fn as_ptr(&self) -> *mut Slot<V> {
        self.0.as_ptr()
    }

    /// Gives up ownership: the pointer was just stored into an entry.
    fn published(self) {
        std::mem::forget(self);
    }

    /// Takes the value back out.
    pub(super) fn into_value(self) -> V {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        // SAFETY: `p` came from `Box::leak` in `new`, and no other thread has seen it (it was
        // never published), so this is the only owner.
        unsafe { Box::from_raw(p) }.value
    }
}

impl<V> Drop for Unpublished<V> {
    fn drop(&mut self) {
        // SAFETY: as in `into_value`: the unique owner of a leaked box, never published.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// The outcome of [`Entry::try_load_or_store`].
pub(super) enum LoadOrStore<'a, V> {
    /// The entry holds this value; the offered one was not stored and comes back.
    Loaded(&'a Slot<V>, V),
    /// The offered value was stored in this slot.
    Stored(&'a Slot<V>),
    /// The entry is expunged: nothing was stored.
    Expunged(V),
}

static EXPUNGED: u8 = 0;

/// The `expunged` sentinel: a deleted entry that is *not* in the dirty map.
#[inline(always)]
fn expunged<V>() -> *mut Slot<V> {
    ptr::addr_of!(EXPUNGED).cast_mut().cast()
}

/// Is `p` a real slot (neither nil nor expunged)?
#[inline(always)]
fn is_value<V>(p: *mut Slot<V>) -> bool {
    !p.is_null() && p != expunged()
}

/// Go's `entry`. States of `p` and their meaning (with `m` the map):
///
/// - a slot: the key is present; the entry is in `read.m` and/or `dirty` (if `dirty` exists, it
///   is there too);
/// - nil: deleted, and either `dirty` is nil or `dirty[key]` is this entry;
/// - expunged: deleted, `dirty` is not nil, and the entry is *not* in it.
///
/// Transitions: slot ⇄ slot / nil without the lock (store, delete, CAS); nil → expunged only
/// under the lock when `dirty` is built; expunged → nil only under the lock, and then the entry
/// is put in `dirty` before the lock is released.
pub(super) struct Entry<V> {
    p: AtomicPtr<Slot<V>>,
    /// The `EntryRef`s (and `FirstSlot`s) that own the entry.
    refs: AtomicUsize,
    /// The block the entry was carved from, of which it owns one count (`slab.rs`), given back
    /// when the entry is dropped.
    block: NonNull<Block<Entry<V>>>,
    /// The first value's slot. Initialized by `carve`; it holds a live value while `p` points at
    /// it, and after that until the [`FirstSlot`] retired for it is collected. Written only
    /// through the cell's pointer, by whoever drops that value, once; otherwise only read.
    first: UntrackedUnsafeCell<MaybeUninit<Slot<V>>>,
}

// SAFETY: an entry is an atomic pointer to an immutable slot and possibly the inline slot, read
// by reference from any thread (so `V: Sync`) and dropped or moved out on whichever thread
// removes or collects it (so `V: Send`); the one write to `first` after `carve` is its drop,
// made once by the thread that owns the value then (see `first`). `block` is only used to give
// back a count of the block, an atomic operation, on whichever thread drops the entry.
unsafe impl<V: Send + Sync> Sync for Entry<V> {}
// SAFETY: as for `Sync`: moving an entry moves its values, which are `Send`.
unsafe impl<V: Send> Send for Entry<V> {}

impl<V> Entry<V> {
    /// The address of the inline slot (initialized or not).
    #[inline(always)]
    fn first_slot(&self) -> *mut Slot<V> {
        self.first.get().cast()
    }

    /// Go's `load`: the current value, if any.
    #[inline]
    pub(super) fn load<'a>(&'a self, _g: &'a Guard<'_>) -> Option<&'a Slot<V>> {
        let p = self.p.load(Acquire);
        if is_value(p) {
            // SAFETY: `p` was current in this entry when loaded under `_g`. If it is swapped out
            // later it is retired, and not freed before `_g` drops; the entry itself (which would
            // free its current slot when dropped) is borrowed for `'a`.
            Some(unsafe { &*p })
        } else {
            None
        }
    }

    /// Does the entry hold a value right now (neither nil nor expunged)?
    pub(super) fn has_value(&self) -> bool {
        is_value(self.p.load(Acquire))
    }

    /// Is the entry expunged? (Stable while the lock is held: only locked code changes it.)
    pub(super) fn is_expunged(&self) -> bool {
        self.p.load(Acquire) == expunged()
    }

    /// Go's `tryLoadOrStore`: the current value, or `value` stored into a nil entry; `value`
    /// comes back if the entry is expunged. The value is not cloned here: the caller clones it
    /// from the slot (readable while both the entry and `_g` are borrowed), after unlocking if
    /// it holds the map's lock, and drops a `value` that was not stored there too.
    pub(super) fn try_load_or_store<'a>(&'a self, value: V, _g: &'a Guard<'_>) -> LoadOrStore<'a, V> {
        let mut p = self.p.load(Acquire);
        if p == expunged() {
            return LoadOrStore::Expunged(value);
        }
        if !p.is_null() {
            // SAFETY: a real slot loaded under `_g` from an entry we borrow (see `load`).
            return LoadOrStore::Loaded(unsafe { &*p }, value);
        }
        // Allocate only now that a store is likely (Go's escape-analysis trick).
        let new = Unpublished::new(value);
        loop {
            match self.p.compare_exchange(ptr::null_mut(), new.as_ptr(), AcqRel, Acquire) {
                Ok(_) => {
                    let stored = new.as_ptr();
                    new.published();
                    // SAFETY: we just published `stored` under `_g`, into an entry borrowed for
                    // `'a`: while it stays current the entry keeps it, and if someone swaps it
                    // out and retires it, that happens after `_g` was pinned.
                    return LoadOrStore::Stored(unsafe { &*stored });
                }
                Err(cur) => p = cur,
            }
            if p == expunged() {
                return LoadOrStore::Expunged(new.into_value());
            }
            if !p.is_null() {
                // SAFETY: as above for a real slot loaded under `_g`.
                return LoadOrStore::Loaded(unsafe { &*p }, new.into_value());
            }
        }
    }

    /// Go's `unexpungeLocked`: expunged → nil. If it returns `true`, the caller (holding the
    /// lock) must put the entry into `dirty` before unlocking.
    pub(super) fn unexpunge_locked(&self) -> bool {
        self.p.compare_exchange(expunged(), ptr::null_mut(), AcqRel, Acquire).is_ok()
    }

    /// Go's `tryExpungeLocked`: nil → expunged (lock held); is the entry expunged now?
    pub(super) fn try_expunge_locked(&self) -> bool {
        let mut p = self.p.load(Acquire);
        while p.is_null() {
            match self.p.compare_exchange(ptr::null_mut(), expunged(), AcqRel, Acquire) {
                Ok(_) => return true,
                Err(cur) => p = cur,
            }
        }
        p == expunged()
    }

    /// Frees the current value now, leaving the entry nil.
    ///
    /// # Safety
    /// No other thread can be using the map (the map is being dropped): nobody can read the
    /// slot concurrently or later.
    pub(super) unsafe fn drop_value_now(&self) {
        let p = self.p.swap(ptr::null_mut(), AcqRel);
        // SAFETY: the entry owned this slot and we just took it out of `p`, which leaves the
        // entry nil (its drop frees nothing more); per the contract no reader remains.
        unsafe { self.free_current(p) }
    }

    /// Frees `p`, the slot the entry held: drops the inline slot's value in place, or frees a
    /// boxed slot; nil and expunged hold nothing.
    ///
    /// # Safety
    /// `p` was the entry's current slot, just taken out of `p` (or the entry is being dropped),
    /// and nobody can read it any more.
    unsafe fn free_current(&self, p: *mut Slot<V>) {
        if p == self.first_slot() {
            // SAFETY: `p` still pointed at the inline slot, so it holds the first value, which
            // nobody else will drop (it was never retired), and nobody reads it (contract).
            unsafe { ptr::drop_in_place(p) }
        } else if is_value(p) {
            // SAFETY: a slot other than the inline one came from `Box::leak` (`Unpublished`)
            // and was owned by the entry; nobody reads it (contract).
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// The operations that take a value out of `p`. Each retires what it took out, and retiring the
/// inline slot takes a count of the entry: so they are methods of a counted reference, whose
/// pointer the count is copied from.
impl<V> EntryRef<V> {
    /// Retires the slot that was just removed from `p` by this thread's atomic operation, and
    /// returns it, readable for as long as the guard lives.
    ///
    /// # Safety
    /// `old` is a real slot that the caller's own successful swap/CAS took out of this entry's
    /// `p`.
    #[inline]
    unsafe fn retire_removed<'g>(&self, old: *mut Slot<V>, g: &'g Guard<'_>) -> &'g Slot<V>
    where
        V: 'static,
    {
        if old == self.first_slot() {
            let owner = self.clone().into_raw();
            // SAFETY: `owner` is a counted pointer to this entry (a copy of this reference's,
            // with its provenance), owned by the `FirstSlot` from now on. Our atomic operation
            // removed the inline slot from `p`, which never points back at it, so it is retired
            // once, and its value stays initialized until the `FirstSlot` is destroyed (after
            // every guard pinned now, `g` among them, is dropped), which is also how long the
            // returned borrow lives.
            unsafe {
                g.retire(owner.cast::<FirstSlot<V>>().cast_mut());
                return &*old;
            }
        }
        // SAFETY: the caller's atomic operation removed `old` from the only place it was
        // reachable from (this entry's `p`), so no load that starts later returns it, and only
        // that one operation can have removed it, so it is retired once. It is not the inline
        // slot, so it came from `Box::leak` (`Unpublished`). The reference is valid while `g`
        // lives: `g` was pinned before the removal.
        unsafe {
            g.retire(old);
            &*old
        }
    }

    /// Go's `trySwap`: stores `new` unless the entry is expunged; returns the old value
    /// (retired), or `Err(new)` if expunged.
    pub(super) fn try_swap<'g>(
        &self,
        new: Unpublished<V>,
        g: &'g Guard<'_>,
    ) -> Result<Option<&'g Slot<V>>, Unpublished<V>>
    where
        V: 'static,
    {
        let mut p = self.p.load(Acquire);
        loop {
            if p == expunged() {
                return Err(new);
            }
            match self.p.compare_exchange(p, new.as_ptr(), AcqRel, Acquire) {
                Ok(old) => {
                    new.published();
                    // SAFETY: our CAS removed `old` (if it is a slot: it is not expunged).
                    return Ok((!old.is_null()).then(|| unsafe { self.retire_removed(old, g) }));
                }
                Err(cur) => p = cur,
            }
        }
    }

    /// Go's `swapLocked`: the entry is known not to be expunged (lock held).
    pub(super) fn swap_locked<'g>(&self, new: Unpublished<V>, g: &'g Guard<'_>) -> Option<&'g Slot<V>>
    where
        V: 'static,
    {
        let old = self.p.swap(new.as_ptr(), AcqRel);
        new.published();
        debug_assert!(old != expunged(), "sync.Map: swapLocked on an expunged entry");
        // SAFETY: our swap removed `old`; it is a real slot when not nil (never expunged here).
        is_value(old).then(|| unsafe { self.retire_removed(old, g) })
    }

    /// Go's `delete`: value → nil; returns the deleted value (retired).
    pub(super) fn delete<'g>(&self, g: &'g Guard<'_>) -> Option<&'g Slot<V>>
    where
        V: 'static,
    {
        let mut p = self.p.load(Acquire);
        loop {
            if !is_value(p) {
                return None;
            }
            match self.p.compare_exchange(p, ptr::null_mut(), AcqRel, Acquire) {
                // SAFETY: our CAS removed the real slot `p`.
                Ok(_) => return Some(unsafe { self.retire_removed(p, g) }),
                Err(cur) => p = cur,
            }
        }
    }

    /// Go's `tryCompareAndSwap`: swaps in `new` if the current value equals `old`.
    pub(super) fn try_compare_and_swap(&self, old: &V, new: V, g: &Guard<'_>) -> bool
    where
        V: PartialEq + 'static,
    {
        let mut p = self.p.load(Acquire);
        // SAFETY: `p` is a real slot (checked first) loaded under `g` from an entry we borrow
        // (see `load`).
        if !is_value(p) || unsafe { &*p }.value() != old {
            return false;
        }
        // Allocate only once the comparison has succeeded.
        let new = Unpublished::new(new);
        loop {
            match self.p.compare_exchange(p, new.as_ptr(), AcqRel, Acquire) {
                Ok(_) => {
                    new.published();
                    // SAFETY: our CAS removed the real slot `p`.
                    unsafe { self.retire_removed(p, g) };
                    return true;
                }
                Err(cur) => p = cur,
            }
            // SAFETY: as above: a real slot, just loaded (by the failed CAS) under `g`.
            if !is_value(p) || unsafe { &*p }.value() != old {
                return false;
            }
        }
    }

    /// The loop of Go's `CompareAndDelete`: value equal to `old` → nil.
    pub(super) fn try_compare_and_delete(&self, old: &V, g: &Guard<'_>) -> bool
    where
        V: PartialEq + 'static,
    {
        let mut p = self.p.load(Acquire);
        loop {
            // SAFETY: a real slot loaded under `g` from an entry we borrow.
            if !is_value(p) || unsafe { &*p }.value() != old {
                return false;
            }
            match self.p.compare_exchange(p, ptr::null_mut(), AcqRel, Acquire) {
                Ok(_) => {
                    // SAFETY: our CAS removed the real slot `p`.
                    unsafe { self.retire_removed(p, g) };
                    return true;
                }
                Err(cur) => p = cur,
            }
        }
    }
}

impl<V> Drop for Entry<V> {
    fn drop(&mut self) {
        let p = self.p.load(Acquire);
        // SAFETY: the last `EntryRef` of the entry is gone, so no table, operation or `FirstSlot`
        // can reach it, and every borrow of its current slot was tied to a borrow of the entry
        // (module docs): `p` is the entry's, and nobody reads it any more.
        unsafe { self.free_current(p) }
    }
}

/// The inline slot of an [`Entry`], retired: a pointer to the entry (same address) that owns
/// one count of it (an `EntryRef` turned into a pointer). Destroying it drops the first value
/// and then that count.
#[repr(transparent)]
pub(super) struct FirstSlot<V>(Entry<V>);

impl<V> Reclaim for FirstSlot<V> {
    fn tracked(&self) -> &Tracked {
        // SAFETY: a `FirstSlot` exists only as a retired pointer whose first value is still
        // initialized: it is dropped by `destroy`, after which nothing reads it.
        unsafe { &(*self.0.first_slot()).tracked }
    }

    unsafe fn destroy(ptr: *mut FirstSlot<V>) {
        // SAFETY: per `destroy`'s contract this runs once; this object owns the count that
        // `retire_removed` gave up with `EntryRef::into_raw`, taken back here once. Taken back
        // first, so that it is given back even if the value's destructor panics (or the entry,
        // and whatever value it holds now, would leak).
        let owner = unsafe { EntryRef::from_raw(ptr.cast::<Entry<V>>().cast_const()) };
        let first = owner.first_slot();
        // SAFETY: no guard can read the retired slot any more (`destroy`'s contract), and `p`
        // left the inline slot for good, so the first value is initialized and dropped here
        // only; `owner` keeps the entry's memory alive meanwhile.
        let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { ptr::drop_in_place(first) }));
        // May drop the entry, whose `free_current` does not touch `first` again. Not during
        // an unwind: a second panic there (the current value's destructor) would abort.
        drop(owner);
        if let Err(payload) = dropped {
            resume_unwind(payload); // to the collector, which contains it (`reclaim/epoch.rs`)
        }
    }
}

/// A counted reference to an [`Entry`]: what the tables hold and operations keep. It is `Arc`
/// without the weak count, which no entry needs (an entry with a `u64` value is 32 bytes, its
/// block pointer included; with a weak count it would be 40).
pub(super) struct EntryRef<V> {
    ptr: NonNull<Entry<V>>,
    /// Owns an `Entry` (for drop check and variance).
    _owns: PhantomData<Entry<V>>,
}

// SAFETY: as `Arc<Entry<V>>`: a reference sent to another thread lets it read the entry and
// maybe drop it there, so the entry must be `Send + Sync`.
unsafe impl<V> Send for EntryRef<V> where Entry<V>: Send + Sync {}
// SAFETY: as for `Send`: a shared reference can be cloned, then dropped, on another thread.
unsafe impl<V> Sync for EntryRef<V> where Entry<V>: Send + Sync {}

impl<V> EntryRef<V> {
    /// A new entry holding `value` in its inline slot, carved from `slab` (the shard's, under
    /// its lock). The only way to make an entry: every entry lives behind `EntryRef`s.
    pub(super) fn carve(slab: &mut Slab<Entry<V>>, value: V) -> EntryRef<V> {
        let ptr = slab.carve(|block| Entry {
            p: AtomicPtr::new(ptr::null_mut()),
            refs: AtomicUsize::new(1), // this reference
            block,
            first: UntrackedUnsafeCell::new(MaybeUninit::new(Slot { tracked: Tracked::new(), value })),
        });
        let e = EntryRef { ptr, _owns: PhantomData };
        // Not shared yet: whoever gets the `EntryRef` from us sees this store.
        e.p.store(e.first_slot(), Relaxed);
        e
    }

    /// Are these references to the same entry?
    #[cfg_attr(not(test), allow(dead_code))] // used by the invariant checks
    pub(super) fn ptr_eq(a: &EntryRef<V>, b: &EntryRef<V>) -> bool {
        a.ptr == b.ptr
    }

    /// Gives the count up as a pointer (to be taken back by `from_raw`).
    fn into_raw(self) -> *const Entry<V> {
        let p = self.ptr.as_ptr().cast_const();
        std::mem::forget(self);
        p
    }

    /// Takes back a count given up by `into_raw`.
    ///
    /// # Safety
    /// `p` came from `into_raw`, and is taken back once.
    unsafe fn from_raw(p: *const Entry<V>) -> EntryRef<V> {
        // SAFETY: `into_raw` got it from a `NonNull` (this function's contract).
        EntryRef { ptr: unsafe { NonNull::new_unchecked(p.cast_mut()) }, _owns: PhantomData }
    }
}

impl<V> EntryRef<V> {
    /// Drops the entry, whose last count this reference held, and gives back its count of its
    /// block (even if the value's destructor panics: the block would leak).
    #[cold]
    fn drop_entry(&mut self) {
        /// Gives the count back when dropped.
        struct Release<V>(NonNull<Block<Entry<V>>>);
        impl<V> Drop for Release<V> {
            fn drop(&mut self) {
                // SAFETY: the entry owned this count, and is dropped (or being unwound out of)
                // by now; nothing uses it afterwards.
                unsafe { Block::release(self.0, 1) }
            }
        }
        let e = self.ptr.as_ptr();
        // SAFETY: that was the last count: nobody else can reach the entry, which was written
        // into its block by `carve` and is dropped here once; its room is not reused.
        let _release = Release(unsafe { (*e).block });
        // SAFETY: as above.
        unsafe { ptr::drop_in_place(e) };
    }
}

impl<V> Clone for EntryRef<V> {
    #[inline]
    fn clone(&self) -> EntryRef<V> {
        // Relaxed, as `Arc::clone`: the new reference is made from one that already exists,
        // so no other thread can free the entry meanwhile.
        if self.refs.fetch_add(1, Relaxed) > isize::MAX as usize {
            std::process::abort(); // as `Arc`: billions of leaked references
        }
        EntryRef { ptr: self.ptr, _owns: PhantomData }
    }
}

impl<V> Deref for EntryRef<V> {
    type Target = Entry<V>;

    #[inline]
    fn deref(&self) -> &Entry<V> {
        // SAFETY: this reference owns a count, so the entry is alive while it is borrowed.
        unsafe { self.ptr.as_ref() }
    }
}

impl<V> Drop for EntryRef<V> {
    #[inline]
    fn drop(&mut self) {
        // AcqRel, as `Arc`'s Release decrement and Acquire fence: every use of the entry
        // through another reference happens before the last one frees it.
        let refs = self.refs.fetch_sub(1, AcqRel);
        // An entry dropped while still counted elsewhere is not freed memory any more (its
        // block outlives it), so no allocator would notice the next use: this does.
        debug_assert!(refs != 0, "sync.Map: an entry's count went below zero");
        if refs == 1 {
            self.drop_entry();
        }
    }
}
