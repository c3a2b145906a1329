//! Where entries live: [`Block`]s of up to 16 entries ([`block_len`]: as many as fit in 512
//! bytes), handed out in order by each shard's [`Slab`] under the shard's lock.
//!
//! A block holds any `T`: the map's is `Entry<V>` (`entry.rs`), which names the block it was
//! carved from. So the entry knows its slab, and the slab nothing of entries.
//!
//! # Why not one allocation per entry
//!
//! A new key needs an entry (Go's `newEntry`, one object per key). With one `malloc` per entry,
//! a map that is filled after another was dropped gets its entries from the allocator's free
//! lists in the order the old entries were freed: scattered, so that each new key's entry is a
//! cache miss inside `malloc` (reading the free chunk's link) and another when it is written.
//! `benches/floor/entry_alloc.rs` puts 500 000 new keys into 8 hash tables, dropped between
//! runs: with no entry at all 57-78 ns per key, with one `malloc` per entry 85-117, with entries
//! carved in order from 16-entry blocks 62-70 (medians of three runs). Go's
//! allocator carves objects from a span in address order, too. So a shard carves its entries
//! from a block, one after the other, and allocates a block per [`block_len`] new keys. The block
//! memory is also what makes dropping a large map cheaper: its entries are freed a block at a
//! time, not one `free` each.
//!
//! # Lifetime
//!
//! A block is freed when its last entry is, not when its shard is: entries outlive the map
//! (a snapshot retired to the epoch collector still holds counts of them, and so does a retired
//! first value). `live` counts the entries handed out and not yet freed, plus one while the
//! block is a slab's current one, which keeps it from being freed while entries may still be
//! carved from it. It starts at `block_len + 1`, as if every entry were handed out at once: a slab
//! then carves without touching the count, and gives back, when it moves on, the entries it
//! never carved (none, if the block is full) and its own one.
//!
//! What this costs:
//! - a block stays allocated while any of its entries does (or a retired first value of one,
//!   until the epoch collector drops it), so a map whose keys are deleted at random while new
//!   ones come in can keep up to `block_len` times the entry memory its live keys need (Go's
//!   spans have the same property, but Go reuses a span's free room; this room is not reused);
//! - every shard that has stored a key keeps a partly carved block for as long as it lives
//!   (`clear` included): at most 16 entries' room, about 520 bytes for a `u64` value, so 4 KiB
//!   for the 8 shards of a map on 2 CPUs and 33 KiB for 64 shards. Entries of 512 bytes or more
//!   get a block each, so a large value never pays for 15 unused neighbours;
//! - every [`block_len`]-th new key allocates its block with the shard's lock held; no user
//!   code runs there.

use crate::loom::{AtomicUsize, Ordering::*};
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::mem::{size_of, MaybeUninit};
use std::ptr::{self, NonNull};

/// How many entries `T` a block holds: as many as fit in 512 bytes, from 1 (an entry of 512
/// bytes or more is a block of its own) to 16 (a `u64` value's entry is 32 bytes).
pub(super) const fn block_len<T>() -> usize {
    let fit = 512 / size_of::<T>();
    if fit == 0 {
        1
    } else if fit > 16 {
        16
    } else {
        fit
    }
}

/// A block's header; the room for [`block_len`] entries follows it in the same allocation.
#[repr(C)]
pub(super) struct Block<T> {
    /// Entries carved and not freed, plus those not carved yet, plus one while it is a slab's
    /// current block (see the module docs).
    live: AtomicUsize,
    /// Under loom, an object the model checks is dropped by the end of each execution: a block
    /// that is never freed fails the model.
    #[cfg(loom)]
    leak_check: crate::loom::Arc<()>,
    /// Where the entries' room starts (an array of no fixed length: [`Block::layout`]). Each
    /// entry is written once, by the slab that carves it (through the block's raw pointer), and
    /// from then on reached only through the `EntryRef`s of that entry.
    entries: [MaybeUninit<T>; 0],
}

impl<T> Block<T> {
    /// The header and the room for [`block_len`] entries after it.
    fn layout() -> Layout {
        let room = Layout::array::<T>(block_len::<T>()).expect("sync.Map: a block of entries overflows");
        let (layout, at) = Layout::new::<Block<T>>().extend(room).expect("sync.Map: a block of entries overflows");
        debug_assert_eq!(at, std::mem::offset_of!(Block<T>, entries));
        layout.pad_to_align()
    }

    /// A new block, its count at [`block_len`] + 1 (module docs).
    fn new() -> NonNull<Block<T>> {
        let layout = Self::layout();
        // SAFETY: the layout has a non-zero size (the header's count, at least).
        let Some(b) = NonNull::new(unsafe { alloc(layout) }.cast::<Block<T>>()) else { handle_alloc_error(layout) };
        // SAFETY: the header's fields of a fresh allocation with `Block`'s layout and more;
        // the entries' room needs no initialization (it is written as entries are carved).
        unsafe {
            ptr::addr_of_mut!((*b.as_ptr()).live).write(AtomicUsize::new(block_len::<T>() + 1));
            #[cfg(loom)]
            ptr::addr_of_mut!((*b.as_ptr()).leak_check).write(crate::loom::Arc::new(()));
        }
        #[cfg(all(test, not(loom)))]
        LIVE_BLOCKS.with(|n| n.set(n.get() + 1));
        b
    }

    /// Gives back `n` counts of block `b`, and frees it if they were the last.
    ///
    /// # Safety
    /// The caller owns `n` counts of `b` (entries it freed, or room it will never carve, or a
    /// slab's own count), and uses neither them nor the entries they stood for afterwards.
    pub(super) unsafe fn release(b: NonNull<Block<T>>, n: usize) {
        // SAFETY: the caller owns counts, so the block is allocated; `live` is only used through
        // shared references.
        let live = unsafe { &(*b.as_ptr()).live };
        // AcqRel, as `EntryRef`'s drop: every use of the block's entries happens before it is
        // freed.
        if live.fetch_sub(n, AcqRel) == n {
            // SAFETY: those were the last counts: every entry carved from the block was dropped
            // (each owned a count until then), and no slab carves from it any more. The header
            // was initialized by `new` and is dropped once, here (the entries' room holds
            // nothing to drop); the allocation came from `new`, with this layout.
            unsafe {
                ptr::drop_in_place(b.as_ptr());
                dealloc(b.as_ptr().cast(), Self::layout());
            }
            #[cfg(all(test, not(loom)))]
            LIVE_BLOCKS.with(|n| n.set(n.get() - 1));
        }
    }
}

/// A shard's current block and how many of its entries are carved. Lives in the shard's
/// `Dirty`, under its lock: carving is a plain increment.
pub(super) struct Slab<T> {
    block: Option<NonNull<Block<T>>>,
    /// Entries of `block` carved so far.
    carved: usize,
}

// SAFETY: a slab owns one count of its block, and hands out entries that own one each; it is
// moved and used as the `Dirty` that holds it is, under the shard's lock, and entries carved from
// it reach other threads as `EntryRef`s, which carry their own bounds.
unsafe impl<T: Send> Send for Slab<T> {}
// SAFETY: a shared slab gives access to nothing (every method takes `&mut self`).
unsafe impl<T> Sync for Slab<T> {}

impl<T> Slab<T> {
    pub(super) const fn new() -> Slab<T> {
        Slab { block: None, carved: 0 }
    }

    /// Writes `entry` into the next free room, and returns where it is. The entry owns one
    /// count of its block from now on (see `Entry::block`).
    pub(super) fn carve(&mut self, entry: impl FnOnce(NonNull<Block<T>>) -> T) -> NonNull<T> {
        let b = match self.block {
            Some(b) if self.carved < block_len::<T>() => b,
            _ => self.next_block(),
        };
        let i = self.carved;
        // SAFETY: `b` is this slab's current block (it owns a count, so it is allocated), and
        // room `i` (below `block_len`) was never carved: nobody else reaches it. The pointer keeps
        // the provenance of the whole allocation (`alloc` in `Block::new`).
        let room = unsafe {
            let room = ptr::addr_of_mut!((*b.as_ptr()).entries).cast::<T>().add(i);
            room.write(entry(b));
            NonNull::new_unchecked(room)
        };
        // Counted as carved once written: had `entry` panicked, the room would still be given
        // back as never carved.
        self.carved += 1;
        room
    }

    /// Gives the current block up (if any) and starts a new one.
    #[cold]
    fn next_block(&mut self) -> NonNull<Block<T>> {
        self.give_up();
        let b = Block::new();
        self.block = Some(b);
        self.carved = 0;
        b
    }

    /// Gives back the slab's own count of its block and the room it never carved.
    fn give_up(&mut self) {
        if let Some(b) = self.block.take() {
            // SAFETY: the slab owns its count and the `block_len - carved` counts of the room it
            // never carved, and will carve no more from `b`.
            unsafe { Block::release(b, block_len::<T>() - self.carved + 1) }
        }
    }
}

impl<T> Drop for Slab<T> {
    fn drop(&mut self) {
        self.give_up();
    }
}

#[cfg(all(test, not(loom)))]
thread_local! {
    /// Blocks allocated minus blocks freed, by this thread (for the tests).
    pub(super) static LIVE_BLOCKS: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}
