//! The global run queue (Go's `sched.runq`): where Gs go that were made runnable away from any
//! P of their runtime, and where a full local ring spills half of itself.
//!
//! A mutex-guarded FIFO plus an atomic length that lets every M check for work without taking
//! the lock (Go reads `sched.runqsize` the same way). The length is written under the lock and
//! read with `SeqCst` by the parking protocol (see `sched.rs`).

use crate::loom::{AtomicUsize, Mutex, Ordering::*};
use std::collections::VecDeque;
use std::ptr::NonNull;

pub(crate) struct GlobalQueue<T> {
    q: Mutex<VecDeque<Item<T>>>,
    len: AtomicUsize,
}

struct Item<T>(NonNull<T>);
// SAFETY: items are Gs (Send + Sync) passed between Ms; the queue is just their custodian.
unsafe impl<T> Send for Item<T> {}

impl<T> GlobalQueue<T> {
    pub(crate) fn new() -> GlobalQueue<T> {
        GlobalQueue { q: Mutex::new(VecDeque::new()), len: AtomicUsize::new(0) }
    }

    /// Lock-free length, possibly stale.
    pub(crate) fn len(&self) -> usize {
        self.len.load(SeqCst)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Holds the queue's lock (a test's stand-in for an M descheduled while it holds it).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn lock_for_test(&self) -> impl Drop + '_ {
        self.q.lock()
    }

    /// `globrunqput`.
    pub(crate) fn push(&self, item: NonNull<T>) {
        let mut q = self.q.lock();
        q.push_back(Item(item));
        self.len.store(q.len(), SeqCst);
    }

    /// `globrunqputbatch`.
    pub(crate) fn push_batch(&self, items: impl Iterator<Item = NonNull<T>>) {
        let mut q = self.q.lock();
        q.extend(items.map(Item));
        self.len.store(q.len(), SeqCst);
    }

    /// `globrunqget`: takes one item to run now and up to `max - 1` more, handed to `rest`
    /// (the caller's local ring), never more than `len / procs + 1` in total, so that one P
    /// does not take everything from the others.
    pub(crate) fn pop_batch(
        &self,
        procs: usize,
        max: usize,
        rest: impl FnOnce(&mut dyn Iterator<Item = NonNull<T>>),
    ) -> Option<NonNull<T>> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.q.lock();
        let n = (q.len() / procs + 1).min(q.len()).min(max);
        if n == 0 {
            return None;
        }
        let first = q.pop_front().map(|i| i.0);
        let mut more = q.drain(..n - 1).map(|i| i.0);
        rest(&mut more);
        drop(more);
        self.len.store(q.len(), SeqCst);
        first
    }

    /// Takes one item (the 1-in-61 fairness check).
    pub(crate) fn pop(&self) -> Option<NonNull<T>> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.q.lock();
        let item = q.pop_front().map(|i| i.0);
        self.len.store(q.len(), SeqCst);
        item
    }

    /// Removes everything (shutdown).
    pub(crate) fn drain(&self, mut f: impl FnMut(NonNull<T>)) {
        loop {
            let Some(item) = self.pop() else { return };
            f(item);
        }
    }
}
