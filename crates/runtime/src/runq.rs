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
//! "Only the owner" is a type, as in tokio's `queue.rs`: [`new`] makes one queue and returns its
//! two halves, the unique [`Local`] (pushes and pops, all `&mut self`; it lives in the P's
//! owner-only core, which the M holding the P holds) and the shareable [`Steal`] (thieves,
//! sysmon's looks; it lives in the P). Whoever has `&mut Local` is the owner; no call needs an
//! `unsafe` promise.
//!
//! The item type is generic (`T` is the pointee) so the loom models can run it with plain
//! boxes; the scheduler uses it with G headers.

use crate::loom::{AtomicPtr, AtomicU32, Ordering::*};
use crossbeam_utils::CachePadded;
use std::ptr::{self, NonNull};
use std::sync::Arc as StdArc;

/// Slots in the ring (Go: 256). Loom models shrink it so they reach overflow.
#[cfg(not(loom))]
pub(crate) const CAP: usize = 256;
/// Slots in the ring (Go: 256). Loom models shrink it so they reach overflow.
#[cfg(loom)]
pub(crate) const CAP: usize = 4;

const MASK: u32 = CAP as u32 - 1;

/// The ring and `runnext`, shared by the two halves.
struct Inner<T> {
    /// Next slot to pop or steal from; advanced by CAS (owner and thieves).
    head: CachePadded<AtomicU32>,
    /// Next free slot; written only by the owner.
    tail: CachePadded<AtomicU32>,
    buf: Box<[AtomicPtr<T>]>,
    runnext: CachePadded<AtomicPtr<T>>,
}

/// The owner's half of a queue: the only one that pushes and pops (Go's `runqput`,
/// `runqget`). There is exactly one per queue, so `&mut Local` means "the owner".
pub(crate) struct Local<T> {
    q: StdArc<Inner<T>>,
}

/// The shared half of a queue: thieves (`runqsteal`) and anyone who looks at it.
pub(crate) struct Steal<T>(StdArc<Inner<T>>);

impl<T> Clone for Steal<T> {
    fn clone(&self) -> Steal<T> {
        Steal(self.0.clone())
    }
}

/// A new, empty queue: its owner's half and its shared half.
pub(crate) fn new<T>() -> (Local<T>, Steal<T>) {
    let q = StdArc::new(Inner {
        head: CachePadded::new(AtomicU32::new(0)),
        tail: CachePadded::new(AtomicU32::new(0)),
        buf: (0..CAP).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
        runnext: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
    });
    (Local { q: q.clone() }, Steal(q))
}

/// A batch taken off a full ring for the global queue (`runqputslow`): half the ring plus the
/// item that did not fit.
pub(crate) type OverflowBatch<T> = arrayvec_lite::Batch<T>;

impl<T> Inner<T> {
    fn slot(&self, i: u32) -> &AtomicPtr<T> {
        &self.buf[(i & MASK) as usize]
    }

    /// Items in the ring, not counting `runnext` (approximate if read by a non-owner).
    fn len(&self) -> usize {
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
    fn is_empty(&self) -> bool {
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
}

impl<T> Steal<T> {
    /// Items in the ring, not counting `runnext` (approximate: the owner may be at work).
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether ring and `runnext` are both empty (Go's `runqempty`).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the `runnext` slot holds an item (sysmon).
    pub(crate) fn has_runnext(&self) -> bool {
        !self.0.runnext.load(Acquire).is_null()
    }

    /// `runqsteal`: moves half of this queue's items into `dst` (the thief's own queue, which
    /// must be empty) and returns one of them to run now, with how many were taken. With
    /// `steal_runnext`, an empty ring lets the thief take the victim's `runnext`, after `pause`
    /// returns `true` (the caller's chance to let a running victim schedule it first; `pause`
    /// returning `false` gives up).
    pub(crate) fn steal_into(
        &self,
        dst: &mut Local<T>,
        steal_runnext: bool,
        pause: impl FnOnce() -> bool,
    ) -> Option<(NonNull<T>, usize)> {
        debug_assert!(!StdArc::ptr_eq(&self.0, &dst.q), "goro: a queue stealing from itself");
        let dst = &*dst.q;
        let dst_tail = dst.tail.load(Relaxed);
        debug_assert_eq!(dst_tail, dst.head.load(Acquire), "stealing into a non-empty queue");
        let n = self.grab(dst, dst_tail, steal_runnext, pause);
        if n == 0 {
            return None;
        }
        let n = n - 1;
        let item = dst.slot(dst_tail.wrapping_add(n)).load(Relaxed);
        if n > 0 {
            // Only the owner of `dst` (us, by `&mut`) writes its tail.
            dst.tail.store(dst_tail.wrapping_add(n), Release);
        }
        NonNull::new(item).map(|it| (it, n as usize + 1))
    }

    /// `runqgrab`: copies half of the ring into `dst`'s free slots starting at `dst_tail`
    /// (not yet published), then claims them with a CAS on `head`.
    fn grab(&self, dst: &Inner<T>, dst_tail: u32, steal_runnext: bool, pause: impl FnOnce() -> bool) -> u32 {
        let q = &*self.0;
        let mut pause = Some(pause);
        loop {
            let h = q.head.load(Acquire);
            let t = q.tail.load(Acquire);
            let n = t.wrapping_sub(h);
            let n = n - n / 2;
            if n == 0 {
                if steal_runnext {
                    let next = q.runnext.load(Acquire);
                    if !next.is_null() {
                        if let Some(p) = pause.take() {
                            if !p() {
                                return 0;
                            }
                        }
                        if q.runnext.compare_exchange(next, ptr::null_mut(), AcqRel, Relaxed).is_err() {
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
                let item = q.slot(h.wrapping_add(i)).load(Relaxed);
                dst.slot(dst_tail.wrapping_add(i)).store(item, Relaxed);
            }
            if q.head.compare_exchange(h, h.wrapping_add(n), AcqRel, Acquire).is_ok() {
                return n;
            }
        }
    }
}

impl<T> Local<T> {
    /// Items in the ring, not counting `runnext`.
    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether ring and `runnext` are both empty.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// `runqput(pp, g, next=true)`: makes `item` the next to run; the item it displaces (if
    /// any) goes to the tail, and `spill` gets whatever did not fit in the ring (see
    /// [`push_back`](Self::push_back)). Returns whether an item was displaced.
    #[inline]
    pub(crate) fn push_next(&mut self, item: NonNull<T>, spill: impl FnOnce(&OverflowBatch<T>)) -> bool {
        let old = self.q.runnext.swap(item.as_ptr(), AcqRel);
        match NonNull::new(old) {
            None => false,
            Some(old) => {
                self.push_back(old, spill);
                true
            }
        }
    }

    /// `runqput(pp, g, next=false)`: appends `item` at the tail. If the ring is full, half of
    /// it plus `item` go to `spill` as a batch for the global queue (`runqputslow`).
    ///
    /// The batch is handed by reference from the cold path that builds it, not returned: an
    /// `Option` of its 1 KiB array returned by value was copied whole on every push (a third
    /// of the cost of a `yield_now`, W3), and boxing it would allocate where Go does not.
    #[inline]
    pub(crate) fn push_back(&mut self, item: NonNull<T>, spill: impl FnOnce(&OverflowBatch<T>)) {
        let q = &*self.q;
        let mut spill = Some(spill);
        loop {
            let h = q.head.load(Acquire);
            // Only we write tail.
            let t = q.tail.load(Relaxed);
            if t.wrapping_sub(h) < CAP as u32 {
                q.slot(t).store(item.as_ptr(), Relaxed);
                q.tail.store(t.wrapping_add(1), Release);
                return;
            }
            if self.grab_half_for_overflow(h, t, item, &mut spill) {
                return;
            }
            // A thief took some meanwhile: there is room now.
        }
    }

    /// `runqputslow`: moves `[h, h + n/2)` out by CAS, plus `item`, and hands the batch to
    /// `spill`; `false` if a thief moved `head` first (then there is room).
    #[cold]
    fn grab_half_for_overflow<S: FnOnce(&OverflowBatch<T>)>(
        &self,
        h: u32,
        t: u32,
        item: NonNull<T>,
        spill: &mut Option<S>,
    ) -> bool {
        let q = &*self.q;
        let n = t.wrapping_sub(h) / 2;
        debug_assert_eq!(n as usize, CAP / 2);
        let mut batch = OverflowBatch::new();
        for i in 0..n {
            batch.push(q.slot(h.wrapping_add(i)).load(Relaxed));
        }
        if q.head.compare_exchange(h, h.wrapping_add(n), AcqRel, Acquire).is_err() {
            return false;
        }
        batch.push(item.as_ptr());
        (spill.take().expect("spilled once"))(&batch);
        true
    }

    /// Takes `runnext`. The caller runs it inheriting the time slice.
    pub(crate) fn pop_runnext(&mut self) -> Option<NonNull<T>> {
        let next = self.q.runnext.load(Relaxed);
        if next.is_null() {
            return None;
        }
        // A thief may take it concurrently: CAS, not a plain store.
        match self.q.runnext.compare_exchange(next, ptr::null_mut(), AcqRel, Relaxed) {
            Ok(p) => NonNull::new(p),
            Err(_) => None,
        }
    }

    /// Takes the head of the ring.
    pub(crate) fn pop(&mut self) -> Option<NonNull<T>> {
        let q = &*self.q;
        loop {
            let h = q.head.load(Acquire);
            let t = q.tail.load(Relaxed);
            if h == t {
                return None;
            }
            let item = q.slot(h).load(Relaxed);
            if q.head.compare_exchange(h, h.wrapping_add(1), AcqRel, Acquire).is_ok() {
                return NonNull::new(item);
            }
        }
    }

    /// Appends a batch taken from the global queue. At most `CAP - len` items: one more is a
    /// scheduler bug, and panics before it could overwrite a queued item.
    pub(crate) fn push_batch(&mut self, items: impl Iterator<Item = NonNull<T>>) {
        let q = &*self.q;
        let t0 = q.tail.load(Relaxed);
        // Thieves only move `head` forward, so the room can only grow meanwhile.
        let room = CAP as u32 - t0.wrapping_sub(q.head.load(Acquire));
        let mut t = t0;
        for item in items {
            assert!(t.wrapping_sub(t0) < room, "goro: a batch larger than the room left in the run queue");
            q.slot(t).store(item.as_ptr(), Relaxed);
            t = t.wrapping_add(1);
        }
        q.tail.store(t, Release);
    }

    /// Empties the queue (shutdown, or a P leaving use), handing every item to `f`.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(NonNull<T>)) {
        while let Some(item) = self.pop_runnext().or_else(|| self.pop()) {
            f(item);
        }
    }
}

/// A tiny fixed-capacity vector for the overflow batch, so `runqputslow` allocates nothing
/// (Go uses a stack array too).
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
    fn no_spill(_: &OverflowBatch<usize>) {
        panic!("the ring overflowed");
    }

    fn take(p: NonNull<usize>) -> usize {
        // SAFETY: every item in these tests came from `item`.
        *unsafe { Box::from_raw(p.as_ptr()) }
    }

    #[test]
    fn fifo_and_runnext() {
        let (mut q, _) = new();
        q.push_back(item(1), no_spill);
        q.push_back(item(2), no_spill);
        assert!(!q.push_next(item(3), no_spill));
        // Displaces 3 to the tail.
        assert!(q.push_next(item(4), no_spill));
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

    #[test]
    fn overflow_moves_half_plus_one() {
        let (mut q, _) = new();
        for i in 0..CAP {
            q.push_back(item(i), no_spill);
        }
        let mut got = Vec::new();
        q.push_back(item(CAP), |batch| {
            assert_eq!(batch.len(), CAP / 2 + 1);
            got = batch.iter().map(take).collect();
        });
        let want: Vec<usize> = (0..CAP / 2).chain([CAP]).collect();
        assert_eq!(got, want);
        assert_eq!(q.len(), CAP / 2);
        let mut rest = Vec::new();
        while let Some(p) = q.pop() {
            rest.push(take(p));
        }
        assert_eq!(rest, (CAP / 2..CAP).collect::<Vec<_>>());
    }

    #[test]
    fn steal_takes_half() {
        let (mut victim, stealer) = new();
        let (mut thief, _) = new();
        for i in 0..10 {
            victim.push_back(item(i), no_spill);
        }
        let (first, n) = stealer.steal_into(&mut thief, false, || true).unwrap();
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

    #[test]
    fn steal_runnext_only_when_asked() {
        let (mut victim, stealer) = new();
        let (mut thief, _) = new();
        victim.push_next(item(7), no_spill);
        assert!(stealer.steal_into(&mut thief, false, || true).is_none());
        assert!(stealer.steal_into(&mut thief, true, || false).is_none());
        let (g, n) = stealer.steal_into(&mut thief, true, || true).unwrap();
        assert_eq!((take(g), n), (7, 1));
        assert!(stealer.is_empty());
    }

    #[test]
    fn wraps_around_many_times() {
        let (mut q, _) = new();
        for round in 0..(3 * CAP) {
            q.push_back(item(round), no_spill);
            q.push_back(item(round + 1), no_spill);
            assert_eq!(take(q.pop().unwrap()), round);
            assert_eq!(take(q.pop().unwrap()), round + 1);
        }
    }

    #[test]
    #[should_panic(expected = "larger than the room")]
    fn push_batch_refuses_more_than_the_room() {
        let (mut q, _) = new();
        for i in 0..CAP - 1 {
            q.push_back(item(i), no_spill);
        }
        q.push_batch([item(1), item(2)].into_iter());
    }
}
