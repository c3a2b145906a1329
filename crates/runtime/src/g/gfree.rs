//! Recycled G memory: Go's per-P free list of dead Gs (`gfput`/`gfget`) for futures.
//!
//! Go never returns a dead G to the allocator: `gfput` keeps it on the P's `gFree` list (up to
//! 64, then half moves to the global `sched.gFree`), and `newproc` takes one back with `gfget`.
//! A goro G is a header plus a future of the user's type, so blocks are kept per *size class*:
//! a G whose cell fits in 128, 192, 256, 384, ... 2048 bytes gets a block of exactly that class
//! (so at most a third of a block is slack), and a freed block of a class can host any later G
//! of the same class. Larger or over-aligned Gs go straight to the allocator.
//!
//! The per-P lists are owned by the M that holds the P (no synchronization); the global lists
//! sit behind one mutex and are touched only in batches of [`BATCH`].

use crate::loom::Mutex;
use std::alloc::Layout;
use std::ptr::NonNull;

/// Block sizes, smallest first.
const CLASSES: [usize; 9] = [128, 192, 256, 384, 512, 768, 1024, 1536, 2048];
/// The alignment of every G's memory, pooled or not: one cache line, so that no two Gs share
/// a line. At the allocator's 16, 128-byte blocks fall 144 bytes apart and the tail of one G's
/// future shares a line with the next G's state word; two Ps polling neighbouring Gs then move
/// that line between the cores on every poll (W3, 200 Gs yielding on 2 Ps, takes 25-45 ns per
/// yield that way, depending on where the allocator's blocks fall, against 17-19 ns aligned;
/// tokio aligns its task cells for the same reason). A G that needs more is not pooled.
pub(crate) const ALIGN: usize = 64;
/// A P keeps at most this many blocks of one class (Go: 64).
const LOCAL_MAX: usize = 64;
/// Blocks move between a P and the global lists this many at a time (Go: 32).
const BATCH: usize = 32;
/// The global lists keep at most this many blocks of one class; more go back to the allocator.
const GLOBAL_MAX: usize = 16 * 1024;

/// A size class, or `None` for a G that is allocated and freed on its own.
pub(crate) fn class_of(layout: Layout) -> Option<u8> {
    if layout.align() > ALIGN {
        return None;
    }
    CLASSES.iter().position(|&c| layout.size() <= c).map(|c| c as u8)
}

/// The allocation behind a block of `class`: the class's bytes plus one cache line, at the
/// allocator's own alignment. The block starts at the first line boundary past the
/// allocation's start (16 to 64 bytes in), and the byte just before it records how far in.
///
/// Asking the allocator for 64-byte alignment instead (`posix_memalign`) makes every fresh G
/// cost a split of the chunk and two frees of its ends: spawning 100 000 Gs (W1) 16% slower,
/// the 100 000 sleeping Gs of W15 up to 36%. This costs a line of memory per block: a parked G
/// takes 208 bytes of RSS instead of 144, and spawning a million Gs into fresh memory
/// (tests/soak_sched.rs) faults in 64 MB more.
fn raw_layout(class: u8) -> Layout {
    // CLASSES are small non-zero sizes and RAW_ALIGN a power of two.
    Layout::from_size_align(CLASSES[class as usize] + ALIGN, RAW_ALIGN).expect("valid size class")
}

/// The alignment [`raw_layout`] asks of the allocator: what it gives every small allocation.
const RAW_ALIGN: usize = 16;

/// A block of G memory that nobody uses.
#[derive(Debug)]
pub(crate) struct Block(NonNull<u8>);

// SAFETY: a `Block` is unused memory owned by whichever list holds it.
unsafe impl Send for Block {}

impl Block {
    pub(crate) fn new(ptr: NonNull<u8>) -> Block {
        Block(ptr)
    }
    pub(crate) fn as_ptr(&self) -> NonNull<u8> {
        self.0
    }
}

/// Gives a block back to the allocator.
pub(crate) fn free_block(class: u8, block: Block) {
    let p = block.0.as_ptr();
    // SAFETY: every pooled block was made by `alloc_block(class)`: the byte before it is inside
    // the same allocation and holds the block's offset from that allocation's start, which was
    // allocated with `raw_layout(class)`. Nothing else writes that byte (a G's cell starts at
    // the block).
    unsafe {
        let offset = usize::from(p.sub(1).read());
        std::alloc::dealloc(p.sub(offset), raw_layout(class));
    }
}

/// Allocates a fresh block of `class`, starting on a cache line ([`ALIGN`]), aborting on
/// allocation failure like `Box` does.
pub(crate) fn alloc_block(class: u8) -> Block {
    let layout = raw_layout(class);
    // SAFETY: the layout has a non-zero size.
    let raw = unsafe { std::alloc::alloc(layout) };
    if raw.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // `raw` is RAW_ALIGN-aligned, so this is 16, 32, 48 or 64: at least one byte for the
    // offset before the block, and the class's bytes still end inside the allocation.
    let offset = ALIGN - raw.addr() % ALIGN;
    debug_assert!((RAW_ALIGN..=ALIGN).contains(&offset));
    // SAFETY: `offset <= ALIGN`, so the block and its class's bytes lie within the
    // `class + ALIGN` bytes allocated, and `offset >= 1` puts the offset byte in them too.
    unsafe {
        let block = raw.add(offset);
        block.sub(1).write(offset as u8);
        Block(NonNull::new_unchecked(block))
    }
}

/// A P's free lists (owner-only).
#[derive(Debug, Default)]
pub(crate) struct LocalFree {
    lists: [Vec<Block>; CLASSES.len()],
}

/// The runtime-wide free lists.
#[derive(Debug, Default)]
pub(crate) struct GlobalFree {
    lists: Mutex<[Vec<Block>; CLASSES.len()]>,
}

impl LocalFree {
    /// `gfget`: a recycled block of `class`, refilling from `global` when the P has none.
    pub(crate) fn get(&mut self, class: u8, global: &GlobalFree) -> Option<Block> {
        let list = &mut self.lists[class as usize];
        if list.is_empty() {
            let mut g = global.lists.lock();
            let glist = &mut g[class as usize];
            let n = glist.len().min(BATCH);
            list.extend(glist.drain(glist.len() - n..));
        }
        list.pop()
    }

    /// `gfput`: keep a dead G's block, spilling half to `global` when the P has too many.
    pub(crate) fn put(&mut self, class: u8, block: Block, global: &GlobalFree) {
        let list = &mut self.lists[class as usize];
        if list.capacity() == 0 {
            list.reserve_exact(LOCAL_MAX);
        }
        list.push(block);
        if list.len() >= LOCAL_MAX {
            let mut g = global.lists.lock();
            let glist = &mut g[class as usize];
            for b in list.drain(LOCAL_MAX - BATCH..) {
                if glist.len() < GLOBAL_MAX {
                    glist.push(b);
                } else {
                    free_block(class, b);
                }
            }
        }
    }

    /// Gives every block back to the allocator.
    pub(crate) fn free_all(&mut self) {
        for (class, list) in self.lists.iter_mut().enumerate() {
            for b in list.drain(..) {
                free_block(class as u8, b);
            }
        }
    }

    /// How many blocks this P holds.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.lists.iter().map(Vec::len).sum()
    }
}

impl GlobalFree {
    /// Gives every block back to the allocator.
    pub(crate) fn free_all(&self) {
        let mut g = self.lists.lock();
        for (class, list) in g.iter_mut().enumerate() {
            for b in list.drain(..) {
                free_block(class as u8, b);
            }
        }
    }
}

impl Drop for GlobalFree {
    fn drop(&mut self) {
        self.free_all();
    }
}

impl Drop for LocalFree {
    fn drop(&mut self) {
        self.free_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(Layout::from_size_align(1, 1).unwrap()), Some(0));
        assert_eq!(class_of(Layout::from_size_align(128, 8).unwrap()), Some(0));
        assert_eq!(class_of(Layout::from_size_align(129, 8).unwrap()), Some(1));
        assert_eq!(class_of(Layout::from_size_align(193, 16).unwrap()), Some(2));
        assert_eq!(class_of(Layout::from_size_align(2048, 16).unwrap()), Some(8));
        assert_eq!(class_of(Layout::from_size_align(2049, 16).unwrap()), None);
        assert_eq!(class_of(Layout::from_size_align(128, 64).unwrap()), Some(0));
        assert_eq!(class_of(Layout::from_size_align(64, 128).unwrap()), None);
    }

    /// Every G starts on a cache line of its own (see [`ALIGN`]): with the allocator's own
    /// alignment, blocks allocated one after another shared lines with their neighbours.
    #[test]
    fn blocks_start_on_their_own_cache_line() {
        for class in 0..CLASSES.len() as u8 {
            let blocks: Vec<Block> = (0..16).map(|_| alloc_block(class)).collect();
            for b in &blocks {
                assert_eq!(b.as_ptr().as_ptr() as usize % ALIGN, 0, "a block of {} bytes", CLASSES[class as usize]);
            }
            for b in blocks {
                free_block(class, b);
            }
        }
    }

    #[test]
    fn spill_and_refill() {
        let global = GlobalFree::default();
        let mut a = LocalFree::default();
        let mut b = LocalFree::default();
        for _ in 0..LOCAL_MAX {
            a.put(1, alloc_block(1), &global);
        }
        assert_eq!(a.len(), LOCAL_MAX - BATCH);
        // `b` has none of its own: it takes a batch from the global list.
        assert!(b.get(1, &global).is_some());
        assert_eq!(b.len(), BATCH - 1);
        assert!(b.get(0, &global).is_none());
    }
}
