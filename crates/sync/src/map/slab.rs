//! Where entries live: [`Block`]s of [`BLOCK`] entries, handed out in order by each shard's
//! [`Slab`] under the shard's lock.
//!
//! # Why not one allocation per entry
//!
//! A new key needs an entry (Go's `newEntry`, one object per key). With one `malloc` per entry,
//! a map that is filled after another was dropped gets its entries from the allocator's free
//! lists in the order the old entries were freed: scattered, so that each new key's entry is a
//! cache miss inside `malloc` (reading the free chunk's link) and another when it is written.
//! `benches/floor/entry_alloc.rs` puts 500 000 new keys into 8 hash tables, dropped between
//! runs: with no entry at all 57-78 ns per key, with one `malloc` per entry 85-117, with entries
//! carved in order from 16-entry blocks 62-70 (medians of three runs, 2026-12-06). Go's
//! allocator carves objects from a span in address order, too. So a shard carves its entries
//! from a block, one after the other, and allocates a block per [`BLOCK`] new keys. The block
//! memory is also what makes dropping a large map cheaper: its entries are freed a block at a
//! time, not one `free` each.
//!
//! # Lifetime
//!
//! A block is freed when its last entry is, not when its shard is: entries outlive the map
//! (a snapshot retired to the epoch collector still holds counts of them, and so does a retired
//! first value). `live` counts the entries handed out and not yet freed, plus one while the
//! block is a slab's current one, which keeps it from being freed while entries may still be
//! carved from it. It starts at `BLOCK + 1`, as if every entry were handed out at once: a slab
//! then carves without touching the count, and gives back, when it moves on, the entries it
//! never carved (none, if the block is full) and its own one.
//!
//! What this costs: a block stays allocated while any of its entries does, so a map whose keys
//! are deleted at random can keep up to `BLOCK` times the memory its live entries need (Go's
//! spans have the same property, but Go reuses a span's free slots; these are not reused).

use super::entry::Entry;
use crate::loom::{AtomicUsize, Ordering::*};
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};

/// Entries per block: 16 entries of a `u64` value make a 512-byte block.
pub(super) const BLOCK: usize = 16;

/// [`BLOCK`] entries' room, and the count that frees it.
pub(super) struct Block<V> {
    /// Entries carved and not freed, plus those not carved yet, plus one while it is a slab's
    /// current block (see the module docs).
    live: AtomicUsize,
    /// Under loom, an object the model checks is dropped by the end of each execution: a block
    /// that is never freed fails the model.
    #[cfg(loom)]
    leak_check: crate::loom::Arc<()>,
    /// Written once each, by the slab that carves them (through the block's raw pointer), and
    /// from then on reached only through the `EntryRef`s of that entry.
    entries: [MaybeUninit<Entry<V>>; BLOCK],
}

impl<V> Block<V> {
    /// Gives back `n` counts of block `b`, and frees it if they were the last.
    ///
    /// # Safety
    /// The caller owns `n` counts of `b` (entries it freed, or room it will never carve, or a
    /// slab's own count), and uses neither them nor the entries they stood for afterwards.
    pub(super) unsafe fn release(b: NonNull<Block<V>>, n: usize) {
        // SAFETY: the caller owns counts, so the block is allocated; `live` is only used through
        // shared references.
        let live = unsafe { &(*b.as_ptr()).live };
        // AcqRel, as `EntryRef`'s drop: every use of the block's entries happens before it is
        // freed.
        if live.fetch_sub(n, AcqRel) == n {
            // SAFETY: those were the last counts: every entry carved from the block was dropped
            // (each owned a count until then), and no slab carves from it any more. It came from
            // `Box::into_raw` in `Slab::carve`; its entries need no drop (`MaybeUninit`).
            drop(unsafe { Box::from_raw(b.as_ptr()) });
            #[cfg(all(test, not(loom)))]
            LIVE_BLOCKS.with(|n| n.set(n.get() - 1));
        }
    }
}

/// A shard's current block and how many of its entries are carved. Lives in the shard's
/// `Dirty`, under its lock: carving is a plain increment.
pub(super) struct Slab<V> {
    block: Option<NonNull<Block<V>>>,
    /// Entries of `block` carved so far.
    carved: usize,
}

// SAFETY: a slab owns one count of its block, and hands out entries that own one each; it is
// moved and used as the `Dirty` that holds it is, under the shard's lock, and entries carved from
// it reach other threads as `EntryRef`s, which carry their own bounds.
unsafe impl<V: Send> Send for Slab<V> {}
// SAFETY: a shared slab gives access to nothing (every method takes `&mut self`).
unsafe impl<V> Sync for Slab<V> {}

impl<V> Slab<V> {
    pub(super) const fn new() -> Slab<V> {
        Slab { block: None, carved: 0 }
    }

    /// Writes `entry` into the next free room, and returns where it is. The entry owns one
    /// count of its block from now on (see `Entry::block`).
    pub(super) fn carve(&mut self, entry: impl FnOnce(NonNull<Block<V>>) -> Entry<V>) -> NonNull<Entry<V>> {
        let b = match self.block {
            Some(b) if self.carved < BLOCK => b,
            _ => self.next_block(),
        };
        let i = self.carved;
        self.carved += 1;
        // SAFETY: `b` is this slab's current block (it owns a count, so it is allocated), and
        // room `i` was never carved: nobody else reaches it. The pointer keeps the provenance of
        // `Box::into_raw`, for the whole block.
        unsafe {
            let room = ptr::addr_of_mut!((*b.as_ptr()).entries).cast::<Entry<V>>().add(i);
            room.write(entry(b));
            NonNull::new_unchecked(room)
        }
    }

    /// Gives the current block up (if any) and starts a new one.
    #[cold]
    fn next_block(&mut self) -> NonNull<Block<V>> {
        self.give_up();
        let mut b = Box::<Block<V>>::new_uninit();
        // SAFETY: a field of the fresh allocation, written before the block is assumed
        // initialized; the entries need no initialization (`MaybeUninit`).
        let b = unsafe {
            ptr::addr_of_mut!((*b.as_mut_ptr()).live).write(AtomicUsize::new(BLOCK + 1));
            #[cfg(loom)]
            ptr::addr_of_mut!((*b.as_mut_ptr()).leak_check).write(crate::loom::Arc::new(()));
            b.assume_init()
        };
        #[cfg(all(test, not(loom)))]
        LIVE_BLOCKS.with(|n| n.set(n.get() + 1));
        let b = NonNull::from(Box::leak(b));
        self.block = Some(b);
        self.carved = 0;
        b
    }

    /// Gives back the slab's own count of its block and the room it never carved.
    fn give_up(&mut self) {
        if let Some(b) = self.block.take() {
            // SAFETY: the slab owns its count and the `BLOCK - carved` counts of the room it
            // never carved, and will carve no more from `b`.
            unsafe { Block::release(b, BLOCK - self.carved + 1) }
        }
    }
}

impl<V> Drop for Slab<V> {
    fn drop(&mut self) {
        self.give_up();
    }
}

#[cfg(all(test, not(loom)))]
thread_local! {
    /// Blocks allocated minus blocks freed, by this thread (for the tests).
    pub(super) static LIVE_BLOCKS: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}
