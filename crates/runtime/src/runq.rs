//! A P's local run queue: Go's `runq` ring plus the `runnext` slot.
//!
//! A fixed ring of [`CAP`] slots indexed by two free-running `u32` counters. Only the owning
//! P pushes (at `tail`) and pops (at `head`, by CAS); thieves take half the queue from `head`
//! by CAS as well. This is Go's algorithm (`runqput`, `runqget`, `runqgrab`, `runqsteal`,
//! `runqputslow`), with every slot an `AtomicPtr` so that a thief's speculative read of a slot
//! that the owner is about to reuse is an atomic read, not a data race: the CAS on `head`
//! decides whether what it read counts.
//!
//! Invariants:
//! - `tail - head <= CAP` whenever read consistently (head first, then tail).
//! - Slots in `[head, tail)` hold queued items; only the owner writes slots outside that range,
//!   and only the owner advances `tail` (Release, so the slot writes are visible to whoever
//!   Acquire-loads `tail`).
//! - An item leaves the ring exactly once: by the CAS that moves `head` past it.
//! - `runnext` holds at most one item; the owner swaps it, thieves may CAS it to null (only in
//!   the last stealing pass).
//!
//! The item type is generic (`T` is the pointee) so the loom models can run it with plain
//! boxes; the scheduler uses it with G headers.

use crate::loom::{AtomicPtr, AtomicU32, Ordering::*};
use crossbeam_utils::CachePadded;
use std::ptr::{self, NonNull};

/// Slots in the ring (Go: 256). Loom models shrink it so they reach overflow.
#[cfg(not(loom))]
pub(crate) const CAP: usize = 256;
/// Slots in the ring (Go: 256). Loom models shrink it so they reach overflow.
#[cfg(loom)]
pub(crate) const CAP: usize = 4;

const MASK: u32 = CAP as u32 - 1;

pub(crate) struct LocalQueue<T> {
    /// Next slot to pop or steal from; advanced by CAS (owner and thieves).
    head: CachePadded<AtomicU32>,
    /// Next free slot; written only by the owner.
    tail: CachePadded<AtomicU32>,
    buf: Box<[AtomicPtr<T>]>,
    runnext: CachePadded<AtomicPtr<T>>,
}

// SAFETY: the queue moves `T` pointers between threads; callers use it only for Send items.
unsafe impl<T: Send> Send for LocalQueue<T> {}
// SAFETY: all shared state is atomic; see the invariants above.
unsafe impl<T: Send> Sync for LocalQueue<T> {}

/// A batch taken off a full ring for the global queue (`runqputslow`): half the ring plus the
/// item that did not fit.
///
/// Boxed: every push returns an `Option` of it, and a by-value `Option` of the 1 KiB array was
/// copied whole (a `memcpy`) on every push, overflow or not: 18% of a `yield_now` (W3). A
/// pointer-sized `Option` costs nothing on the common path; the allocation happens once per
/// `CAP / 2` items that overflow, where half the ring moves to the global queue anyway.
pub(crate) type OverflowBatch<T> = Box<arrayvec_lite::Batch<T>>;

impl<T> LocalQueue<T> {
    pub(crate) fn new() -> LocalQueue<T> {
        LocalQueue {
            head: CachePadded::new(AtomicU32::new(0)),
            tail: CachePadded::new(AtomicU32::new(0)),
            buf: (0..CAP).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
            runnext: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        }
    }

    fn slot(&self, i: u32) -> &AtomicPtr<T> {
        &self.buf[(i & MASK) as usize]
    }

    /// Items in the ring, not counting `runnext` (approximate if read by a non-owner).
    pub(crate) fn len(&self) -> usize {
        loop {
            let h = self.head.load(Acquire);
            let t = self.tail.load(Acquire);
            // Re-read head: a consistent pair has head unchanged across the tail read.
            if self.head.load(Acquire) == h {
                return t.wrapping_sub(h).min(CAP as u32) as usize;
            }
        }
    }

    /// Whether ring and `runnext` are both empty (Go's `runqempty`), as seen by anyone.
    pub(crate) fn is_empty(&self) -> bool {
        // Go's reasoning: an item moves from runnext to the ring only by the owner, in the order
        // "store tail, then clear runnext", so reading head/tail, then runnext, then tail again
        // cannot miss an item that is moving.
        loop {
            let h = self.head.load(Acquire);
            let t = self.tail.load(Acquire);
            let next = self.runnext.load(Acquire);
            if self.tail.load(Acquire) == t {
                return h == t && next.is_null();
            }
        }
    }

    /// Whether the `runnext` slot holds an item, as seen by anyone (sysmon).
    pub(crate) fn has_runnext(&self) -> bool {
        !self.runnext.load(Acquire).is_null()
    }

    /// `runqput(pp, g, next=true)`: makes `item` the next to run; the item it displaces (if
    /// any) goes to the tail. Owner only. Returns whether an item was displaced, and whatever
    /// did not fit in the ring (see [`push_back`](Self::push_back)).
    ///
    /// # Safety
    /// Only the owner of the queue may call it.
    pub(crate) unsafe fn push_next(&self, item: NonNull<T>) -> (bool, Option<OverflowBatch<T>>) {
        let old = self.runnext.swap(item.as_ptr(), AcqRel);
        match NonNull::new(old) {
            None => (false, None),
            // SAFETY: caller is the owner.
            Some(old) => (true, unsafe { self.push_back(old) }),
        }
    }

    /// `runqput(pp, g, next=false)`: appends `item` at the tail. Owner only. If the ring is
    /// full, half of it plus `item` come back as a batch for the global queue
    /// (`runqputslow`).
    ///
    /// # Safety
    /// Only the owner of the queue may call it.
    pub(crate) unsafe fn push_back(&self, item: NonNull<T>) -> Option<OverflowBatch<T>> {
        loop {
            let h = self.head.load(Acquire);
            // Only we write tail.
            let t = self.tail.load(Relaxed);
            if t.wrapping_sub(h) < CAP as u32 {
                self.slot(t).store(item.as_ptr(), Relaxed);
                self.tail.store(t.wrapping_add(1), Release);
                return None;
            }
            if let Some(batch) = self.grab_half_for_overflow(h, t, item) {
                return Some(batch);
            }
            // A thief took some meanwhile: there is room now.
        }
    }

    /// `runqputslow`: moves `[h, h + n/2)` out by CAS, plus `item`.
    fn grab_half_for_overflow(&self, h: u32, t: u32, item: NonNull<T>) -> Option<OverflowBatch<T>> {
        let n = t.wrapping_sub(h) / 2;
        debug_assert_eq!(n as usize, CAP / 2);
        let mut batch = Box::new(arrayvec_lite::Batch::new());
        for i in 0..n {
            batch.push(self.slot(h.wrapping_add(i)).load(Relaxed));
        }
        if self.head.compare_exchange(h, h.wrapping_add(n), AcqRel, Acquire).is_err() {
            return None;
        }
        batch.push(item.as_ptr());
        Some(batch)
    }

    /// Takes `runnext` (owner only). The caller runs it inheriting the time slice.
    ///
    /// # Safety
    /// Only the owner of the queue may call it.
    pub(crate) unsafe fn pop_runnext(&self) -> Option<NonNull<T>> {
        let next = self.runnext.load(Relaxed);
        if next.is_null() {
            return None;
        }
        // A thief may take it concurrently: CAS, not a plain store.
        match self.runnext.compare_exchange(next, ptr::null_mut(), AcqRel, Relaxed) {
            Ok(p) => NonNull::new(p),
            Err(_) => None,
        }
    }

    /// Takes the head of the ring (owner only).
    ///
    /// # Safety
    /// Only the owner of the queue may call it.
    pub(crate) unsafe fn pop(&self) -> Option<NonNull<T>> {
        loop {
            let h = self.head.load(Acquire);
            let t = self.tail.load(Relaxed);
            if h == t {
                return None;
            }
            let item = self.slot(h).load(Relaxed);
            if self.head.compare_exchange(h, h.wrapping_add(1), AcqRel, Acquire).is_ok() {
                return NonNull::new(item);
            }
        }
    }

    /// Appends a batch the owner took from the global queue; there must be room.
    ///
    /// # Safety
    /// Only the owner of the queue may call it, with at most `CAP - len` items.
    pub(crate) unsafe fn push_batch(&self, items: impl Iterator<Item = NonNull<T>>) {
        let t0 = self.tail.load(Relaxed);
        let mut t = t0;
        for item in items {
            self.slot(t).store(item.as_ptr(), Relaxed);
            t = t.wrapping_add(1);
        }
        debug_assert!(t.wrapping_sub(self.head.load(Acquire)) <= CAP as u32);
        self.tail.store(t, Release);
    }

    /// `runqsteal`: moves half of `self`'s items into `dst` (the thief's own queue) and returns
    /// one of them to run now. With `steal_runnext`, an empty ring lets the thief take the
    /// victim's `runnext`, after `pause` returns `true` (the caller's chance to let a running
    /// victim schedule it first; `pause` returning `false` gives up).
    ///
    /// # Safety
    /// The caller must own `dst`, and `dst` must be empty.
    pub(crate) unsafe fn steal_into(
        &self,
        dst: &LocalQueue<T>,
        steal_runnext: bool,
        pause: impl FnOnce() -> bool,
    ) -> Option<(NonNull<T>, usize)> {
        let dst_tail = dst.tail.load(Relaxed);
        debug_assert_eq!(dst_tail, dst.head.load(Acquire), "stealing into a non-empty queue");
        let n = self.grab(dst, dst_tail, steal_runnext, pause);
        if n == 0 {
            return None;
        }
        let n = n - 1;
        let item = dst.slot(dst_tail.wrapping_add(n)).load(Relaxed);
        if n > 0 {
            dst.tail.store(dst_tail.wrapping_add(n), Release);
        }
        NonNull::new(item).map(|it| (it, n as usize + 1))
    }

    /// `runqgrab`: copies half of the ring into `dst`'s free slots starting at `dst_tail`
    /// (not yet published), then claims them with a CAS on `head`.
    fn grab(&self, dst: &LocalQueue<T>, dst_tail: u32, steal_runnext: bool, pause: impl FnOnce() -> bool) -> u32 {
        let mut pause = Some(pause);
        loop {
            let h = self.head.load(Acquire);
            let t = self.tail.load(Acquire);
            let n = t.wrapping_sub(h);
            let n = n - n / 2;
            if n == 0 {
                if steal_runnext {
                    let next = self.runnext.load(Acquire);
                    if !next.is_null() {
                        if let Some(p) = pause.take() {
                            if !p() {
                                return 0;
                            }
                        }
                        if self.runnext.compare_exchange(next, ptr::null_mut(), AcqRel, Relaxed).is_err() {
                            continue;
                        }
                        dst.slot(dst_tail).store(next, Relaxed);
                        return 1;
                    }
                }
                return 0;
            }
            if n > CAP as u32 / 2 {
                // head and tail were read at different times: read again.
                continue;
            }
            for i in 0..n {
                let item = self.slot(h.wrapping_add(i)).load(Relaxed);
                dst.slot(dst_tail.wrapping_add(i)).store(item, Relaxed);
            }
            if self.head.compare_exchange(h, h.wrapping_add(n), AcqRel, Acquire).is_ok() {
                return n;
            }
        }
    }

    /// Empties the queue (shutdown; no concurrent users), handing every item to `f`.
    pub(crate) fn drain(&self, mut f: impl FnMut(NonNull<T>)) {
        if let Some(n) = NonNull::new(self.runnext.swap(ptr::null_mut(), AcqRel)) {
            f(n);
        }
        // SAFETY: no concurrent users at shutdown, so we are the owner.
        while let Some(item) = unsafe { self.pop() } {
            f(item);
        }
    }
}

/// A tiny fixed-capacity vector for the overflow batch (Go uses a stack array; here it is boxed,
/// see [`OverflowBatch`]).
pub(crate) mod arrayvec_lite {
    use super::CAP;
    use std::ptr::NonNull;

    /// Up to `CAP / 2 + 1` non-null items.
    pub(crate) struct Batch<T> {
        items: [*mut T; CAP / 2 + 1],
        len: usize,
    }

    impl<T> Batch<T> {
        pub(crate) fn new() -> Batch<T> {
            Batch { items: [std::ptr::null_mut(); CAP / 2 + 1], len: 0 }
        }
        pub(crate) fn push(&mut self, p: *mut T) {
            self.items[self.len] = p;
            self.len += 1;
        }
        #[cfg(all(test, not(loom)))]
        pub(crate) fn len(&self) -> usize {
            self.len
        }
        pub(crate) fn iter(&self) -> impl Iterator<Item = NonNull<T>> + '_ {
            self.items[..self.len].iter().map(|&p| NonNull::new(p).expect("batch items are non-null"))
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn item(v: usize) -> NonNull<usize> {
        NonNull::from(Box::leak(Box::new(v)))
    }
    fn take(p: NonNull<usize>) -> usize {
        // SAFETY: every item in these tests came from `item`.
        *unsafe { Box::from_raw(p.as_ptr()) }
    }

    #[test]
    fn fifo_and_runnext() {
        let q = LocalQueue::new();
        // SAFETY: the test thread is the only user of these queues, so it is their owner.
        unsafe {
            assert!(q.push_back(item(1)).is_none());
            assert!(q.push_back(item(2)).is_none());
            assert!(matches!(q.push_next(item(3)), (false, None)));
            // Displaces 3 to the tail.
            assert!(matches!(q.push_next(item(4)), (true, None)));
            assert_eq!(q.len(), 3);
            assert!(!q.is_empty());
            assert_eq!(take(q.pop_runnext().unwrap()), 4);
            assert!(q.pop_runnext().is_none());
            assert_eq!(take(q.pop().unwrap()), 1);
            assert_eq!(take(q.pop().unwrap()), 2);
            assert_eq!(take(q.pop().unwrap()), 3);
            assert!(q.pop().is_none());
            assert!(q.is_empty());
        }
    }

    #[test]
    fn overflow_moves_half_plus_one() {
        let q = LocalQueue::new();
        // SAFETY: the test thread is the only user of these queues, so it is their owner.
        unsafe {
            for i in 0..CAP {
                assert!(q.push_back(item(i)).is_none());
            }
            let batch = q.push_back(item(CAP)).expect("full ring overflows");
            assert_eq!(batch.len(), CAP / 2 + 1);
            let got: Vec<usize> = batch.iter().map(take).collect();
            let want: Vec<usize> = (0..CAP / 2).chain([CAP]).collect();
            assert_eq!(got, want);
            assert_eq!(q.len(), CAP / 2);
            let mut rest = Vec::new();
            while let Some(p) = q.pop() {
                rest.push(take(p));
            }
            assert_eq!(rest, (CAP / 2..CAP).collect::<Vec<_>>());
        }
    }

    #[test]
    fn steal_takes_half() {
        let victim = LocalQueue::new();
        let thief = LocalQueue::new();
        // SAFETY: the test thread is the only user of these queues, so it is their owner.
        unsafe {
            for i in 0..10 {
                victim.push_back(item(i));
            }
            let (first, n) = victim.steal_into(&thief, false, || true).unwrap();
            assert_eq!(n, 5);
            // The thief runs the last stolen item and keeps the others in order.
            assert_eq!(take(first), 4);
            assert_eq!(thief.len(), 4);
            assert_eq!(victim.len(), 5);
            for want in 0..4 {
                assert_eq!(take(thief.pop().unwrap()), want);
            }
            for want in 5..10 {
                assert_eq!(take(victim.pop().unwrap()), want);
            }
        }
    }

    #[test]
    fn steal_runnext_only_when_asked() {
        let victim = LocalQueue::new();
        let thief = LocalQueue::new();
        // SAFETY: the test thread is the only user of these queues, so it is their owner.
        unsafe {
            victim.push_next(item(7));
            assert!(victim.steal_into(&thief, false, || true).is_none());
            assert!(victim.steal_into(&thief, true, || false).is_none());
            let (g, n) = victim.steal_into(&thief, true, || true).unwrap();
            assert_eq!((take(g), n), (7, 1));
            assert!(victim.is_empty());
        }
    }

    #[test]
    fn wraps_around_many_times() {
        let q = LocalQueue::new();
        // SAFETY: the test thread is the only user of these queues, so it is their owner.
        unsafe {
            for round in 0..(3 * CAP) {
                q.push_back(item(round));
                q.push_back(item(round + 1));
                assert_eq!(take(q.pop().unwrap()), round);
                assert_eq!(take(q.pop().unwrap()), round + 1);
            }
        }
    }
}
