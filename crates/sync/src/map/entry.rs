//! Go's `entry`: one key's slot, an atomic pointer `p` that is a value, nil (deleted) or the
//! `expunged` sentinel, and the operations on it (`load`, `tryLoadOrStore`, `trySwap`, ...).
//!
//! # Ownership and lifetimes
//!
//! - A value lives in its own heap [`Slot`], created by [`Unpublished`] and never mutated once
//!   published into an entry. The entry owns the slot its `p` points to.
//! - A slot that is swapped or CASed *out* of `p` is owned by the thread whose atomic operation
//!   removed it; that thread retires it through its epoch [`Guard`] at once, and may keep
//!   reading it (and hand out a `&'g Slot`) for as long as that guard lives.
//! - An entry is shared (`Arc`) between the `read` tables and the `dirty` map. It is dropped when
//!   its last `Arc` goes, which frees the slot still in `p` immediately. That is sound because a
//!   reader can only reach an entry through a table it holds (a `read` snapshot, kept alive by
//!   its guard, or the `dirty` map under the lock) or through an `Arc` it cloned, and every
//!   borrow of the current slot is tied to the borrow of the entry: while anyone can still read
//!   that slot, the entry is alive.
//!
//! `expunged` is the address of a private static, never dereferenced and never equal to a heap
//! pointer. Slot pointers are never reused while a guard that read them lives (EBR), so a CAS
//! that compares a pointer it loaded under the same guard has no ABA problem.

use super::reclaim::{Guard, Reclaim, Tracked};
use crate::loom::{AtomicPtr, Ordering::*};
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
}

impl<V> Entry<V> {
    pub(super) fn new(value: Unpublished<V>) -> Entry<V> {
        let e = Entry { p: AtomicPtr::new(value.as_ptr()) };
        value.published();
        e
    }

    /// Retires the slot that was just removed from `p` by this thread's atomic operation, and
    /// returns it, readable for as long as the guard lives.
    ///
    /// # Safety
    /// `old` is a real slot that the caller's own successful swap/CAS took out of `p`.
    #[inline]
    unsafe fn retire_removed<'g>(old: *mut Slot<V>, g: &'g Guard<'_>) -> &'g Slot<V>
    where
        V: 'static,
    {
        // SAFETY: the caller's atomic operation removed `old` from the only place it was
        // reachable from (an entry's `p`), so no load that starts later returns it, and only
        // that one operation can have removed it, so it is retired once. Slots come from
        // `Box::leak`. The reference is valid while `g` lives: `g` was pinned before the removal.
        unsafe {
            g.retire(old);
            &*old
        }
    }

    /// Takes the value back out of an entry that no other thread has seen (one built before
    /// locking for a key that turned out to be present).
    pub(super) fn into_value(self) -> V {
        let p = self.p.swap(ptr::null_mut(), Relaxed);
        assert!(is_value(p), "sync.Map: an unpublished entry without its value");
        // SAFETY: the entry was never shared, so the slot in `p` (from `Unpublished::new`,
        // published only into this entry) is owned by it alone; the swap left the entry nil,
        // so its drop frees nothing.
        Unpublished(unsafe { NonNull::new_unchecked(p) }).into_value()
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
                    return Ok((!old.is_null()).then(|| unsafe { Self::retire_removed(old, g) }));
                }
                Err(cur) => p = cur,
            }
        }
    }

    /// Go's `unexpungeLocked`: expunged → nil. If it returns `true`, the caller (holding the
    /// lock) must put the entry into `dirty` before unlocking.
    pub(super) fn unexpunge_locked(&self) -> bool {
        self.p.compare_exchange(expunged(), ptr::null_mut(), AcqRel, Acquire).is_ok()
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
        is_value(old).then(|| unsafe { Self::retire_removed(old, g) })
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
                Ok(_) => return Some(unsafe { Self::retire_removed(p, g) }),
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
                    unsafe { Self::retire_removed(p, g) };
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
                    unsafe { Self::retire_removed(p, g) };
                    return true;
                }
                Err(cur) => p = cur,
            }
        }
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
        if is_value(p) {
            // SAFETY: the entry owned this slot (a `Box::leak`ed pointer) and we just took it
            // out; per the contract no reader remains.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl<V> Drop for Entry<V> {
    fn drop(&mut self) {
        let p = self.p.load(Acquire);
        if is_value(p) {
            // SAFETY: the last `Arc` of the entry is gone, so no table or operation can reach
            // it, and every borrow of its current slot was tied to a borrow of the entry (module
            // docs). The slot came from `Box::leak` and is owned by the entry.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}
