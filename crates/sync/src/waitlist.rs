//! The FIFO wait list every blocking type of this crate parks on (the role Go's runtime
//! semaphore, `semaRoot`, plays for `sync`).
//!
//! A [`Node`] is the record of one waiting operation: who to wake, one word of the waiter's
//! data (a semaphore weight, a generation), when it began to wait (for the block and mutex
//! profiles), and the outcome. Like goro-chan's sudogs it lives
//! *inside* the pinned future of the waiting operation (or on the stack of a thread blocked in a
//! `*_blocking` call), and the list links to it in place, so waiting allocates nothing.
//!
//! # Protocol
//!
//! The list's links, every queued node's links, `queued` flag, waker, data and wait start, and the
//! list's extra data `X` are guarded by the list's lock ([`WaitList::lock`]). A notifier, under
//! that lock, unlinks a node, takes its waker and *last* stores the outcome in the node's `state`
//! with `Release` ([`Locked::pop_front`]); it wakes the waker after unlocking and never touches the
//! node again. The owner may read `state` without the lock ([`Node::state`]): a value other than
//! [`WAITING`] (read with `Acquire`) means the node is no longer linked and is the owner's alone
//! again, so the owner may free it at once. Seeing `WAITING`, the owner must take the lock before
//! touching anything; in particular a future dropped while waiting takes the lock and
//! [`Locked::remove`]s its node (and then reads `state` again: a notifier may have completed it
//! just before, in which case the drop must pass on what it was given, which each type does in its
//! own way).
//!
//! Wakers are woken after the lock is released, so a waker that runs arbitrary code (another
//! executor's) cannot deadlock on the list.

use crate::loom::{AtomicU8, Mutex, MutexGuard, Ordering::*, UnsafeCell};
use std::marker::PhantomPinned;
use std::ptr;
use std::task::Waker;

/// The state of a node that is queued (or about to be) and not completed.
pub(crate) const WAITING: u8 = 0;

/// One waiting operation. Its address must not change while it is queued: it lives in a pinned
/// future or on a blocked thread's stack.
pub(crate) struct Node {
    prev: UnsafeCell<*const Node>,
    next: UnsafeCell<*const Node>,
    queued: UnsafeCell<bool>,
    waker: UnsafeCell<Option<Waker>>,
    data: UnsafeCell<u64>,
    /// When the wait began, for the block and mutex profiles (`goro_runtime::profile`), or 0.
    /// Guarded like `data`; kept when a waiter is queued again at the front (a mutex's woken
    /// waiter that lost the race), since its wait goes on.
    t0: UnsafeCell<u64>,
    state: AtomicU8,
    _pin: PhantomPinned,
}

// SAFETY: a node is shared between its owner and the notifiers of its list only under the
// protocol of the module docs: under the list's lock, or handed back by the Release/Acquire of
// `state`. Its fields (`Waker`, integers, pointers into the same list) may move between threads.
unsafe impl Send for Node {}
// SAFETY: as above.
unsafe impl Sync for Node {}

impl Node {
    pub(crate) fn new() -> Node {
        Node {
            prev: UnsafeCell::new(ptr::null()),
            next: UnsafeCell::new(ptr::null()),
            queued: UnsafeCell::new(false),
            waker: UnsafeCell::new(None),
            data: UnsafeCell::new(0),
            t0: UnsafeCell::new(0),
            state: AtomicU8::new(WAITING),
            _pin: PhantomPinned,
        }
    }

    /// Go's `blockevent` for a wait that is over: the owner calls it once it saw its node
    /// completed (`state` not [`WAITING`]), in the poll that returns `Ready`.
    #[inline]
    pub(crate) fn waited(&self) {
        // SAFETY: the caller saw the node completed: unlinked, and its owner's alone again.
        let t0 = unsafe { self.t0.with(|t| *t) };
        goro_runtime::__private::profile::block_event(t0);
    }

    /// The outcome a notifier stored, or [`WAITING`]. Readable without the lock (see the module
    /// docs for what each answer allows).
    #[inline]
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Acquire)
    }
}

/// The list: its lock guards the links and the extra data `X` of the type that owns it.
pub(crate) struct WaitList<X = ()> {
    inner: Mutex<Links<X>>,
    /// The synctest bubble the primitive was made in (0: none): a wait on it is durable only
    /// for the Gs of that bubble (see `goro_runtime::bubble`).
    bubble: u64,
}

struct Links<X> {
    head: *const Node,
    tail: *const Node,
    len: usize,
    extra: X,
}

// SAFETY: the raw pointers refer to nodes that are `Send + Sync` and are only followed under the
// lock that owns them.
unsafe impl<X: Send> Send for Links<X> {}

impl<X> WaitList<X> {
    pub(crate) fn new(extra: X) -> WaitList<X> {
        WaitList {
            inner: Mutex::new(Links { head: ptr::null(), tail: ptr::null(), len: 0, extra }),
            bubble: goro_runtime::__private::synctest::tag(),
        }
    }

    /// The synctest bubble the primitive was made in (0: none). (Under loom no mutex asks: a
    /// model has no bubble and no clock.)
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn bubble(&self) -> u64 {
        self.bubble
    }

    /// Records that the calling G waits on this list's primitive for `reason` (durable in a
    /// synctest bubble when the primitive was made in the caller's bubble).
    #[inline]
    pub(crate) fn park_reason(&self, reason: goro_runtime::WaitReason) {
        goro_runtime::__private::synctest::set_wait_reason_of(reason, self.bubble);
    }

    /// Takes the list's lock.
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, X> {
        Locked { links: self.inner.lock() }
    }
}

/// The locked list (a guard: dropping it unlocks).
pub(crate) struct Locked<'a, X> {
    links: MutexGuard<'a, Links<X>>,
}

impl<X> Locked<'_, X> {
    /// The owning type's data guarded by this lock.
    #[inline]
    pub(crate) fn extra(&mut self) -> &mut X {
        &mut self.links.extra
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.links.len
    }

    /// Queues `node` at the back (`front == false`: a new wait, whose start the profiles note) or
    /// the front (a wait that goes on), to be woken with `waker`, carrying `data`.
    ///
    /// # Safety
    /// `node` is not queued, and it stays at its address until it is unlinked again: by a
    /// notifier, or by its owner through [`Locked::remove`] (a future's `Drop` does that).
    pub(crate) unsafe fn push(&mut self, node: &Node, waker: Waker, data: u64, front: bool) {
        let n: *const Node = node;
        // SAFETY (all accesses below): we hold the lock, which guards the links, the flag, the
        // waker and the data of every node of this list and of `node` (not queued yet: only its
        // owner, who is calling us, could touch it).
        unsafe {
            debug_assert!(!node.queued.with(|q| *q));
            node.queued.with_mut(|q| *q = true);
            node.waker.with_mut(|w| *w = Some(waker));
            node.data.with_mut(|d| *d = data);
            if !front {
                node.t0.with_mut(|t| *t = goro_runtime::__private::profile::wait_start());
            }
            node.state.store(WAITING, Relaxed);
            if front {
                node.prev.with_mut(|p| *p = ptr::null());
                node.next.with_mut(|p| *p = self.links.head);
                match self.links.head.as_ref() {
                    Some(h) => h.prev.with_mut(|p| *p = n),
                    None => self.links.tail = n,
                }
                self.links.head = n;
            } else {
                node.next.with_mut(|p| *p = ptr::null());
                node.prev.with_mut(|p| *p = self.links.tail);
                match self.links.tail.as_ref() {
                    Some(t) => t.next.with_mut(|p| *p = n),
                    None => self.links.head = n,
                }
                self.links.tail = n;
            }
        }
        self.links.len += 1;
    }

    /// The data of the node at the front, if any.
    pub(crate) fn front_data(&self) -> Option<u64> {
        // SAFETY: we hold the lock; a queued node is alive (its owner unlinks it under this lock
        // before it goes away).
        unsafe { self.links.head.as_ref().map(|h| h.data.with(|d| *d)) }
    }

    /// When the front node's wait began (see [`Node::waited`]); 0 if unknown or empty.
    pub(crate) fn front_wait_start(&self) -> u64 {
        // SAFETY: as in `front_data`.
        unsafe { self.links.head.as_ref().map_or(0, |h| h.t0.with(|t| *t)) }
    }

    /// Unlinks the front node, completes it with `state` (not [`WAITING`]) and returns its
    /// waker, to be woken after unlocking. `None` if the list is empty.
    pub(crate) fn pop_front(&mut self, state: u8) -> Option<Waker> {
        debug_assert_ne!(state, WAITING);
        // SAFETY: we hold the lock; a queued node is alive until it is unlinked, and after the
        // Release store of `state` we do not touch it (the owner may free it at once).
        unsafe {
            let h = self.links.head.as_ref()?;
            self.unlink(h);
            let waker = h.waker.with_mut(|w| (*w).take());
            h.state.store(state, Release);
            waker
        }
    }

    /// Unlinks `node` if it is queued here; returns whether it was (if not, a notifier completed
    /// it and its `state` says how).
    pub(crate) fn remove(&mut self, node: &Node) -> bool {
        // SAFETY: we hold the lock, which guards `queued` and the links.
        unsafe {
            if !node.queued.with(|q| *q) {
                return false;
            }
            self.unlink(node);
            node.waker.with_mut(|w| *w = None);
        }
        true
    }

    /// Replaces the waker of `node` if it is still queued (a re-poll from another task context).
    pub(crate) fn set_waker(&mut self, node: &Node, waker: &Waker) {
        // SAFETY: we hold the lock, which guards `queued` and the waker of a queued node.
        unsafe {
            if node.queued.with(|q| *q) {
                node.waker.with_mut(|w| match &mut *w {
                    Some(old) if old.will_wake(waker) => {}
                    slot => *slot = Some(waker.clone()),
                });
            }
        }
    }

    /// # Safety
    /// The lock is held and `node` is queued in this list.
    unsafe fn unlink(&mut self, node: &Node) {
        // SAFETY: per the contract, and neighbours of a queued node are queued (alive) too.
        unsafe {
            let prev = node.prev.with(|p| *p);
            let next = node.next.with(|p| *p);
            match prev.as_ref() {
                Some(p) => p.next.with_mut(|x| *x = next),
                None => self.links.head = next,
            }
            match next.as_ref() {
                Some(n) => n.prev.with_mut(|x| *x = prev),
                None => self.links.tail = prev,
            }
            node.prev.with_mut(|p| *p = ptr::null());
            node.next.with_mut(|p| *p = ptr::null());
            node.queued.with_mut(|q| *q = false);
        }
        self.links.len -= 1;
    }
}

/// Up to [`WakeBatch::CAP`] wakers collected under a lock and woken after it is released,
/// without allocating (a wake-all drains the list in batches of this size).
pub(crate) struct WakeBatch {
    wakers: [Option<Waker>; WakeBatch::CAP],
    len: usize,
}

impl WakeBatch {
    /// 32; 1 under loom, so that two waiters already make a wake-all unlock and relock between
    /// batches (as the runtime's ring shrinks under loom to reach overflow).
    pub(crate) const CAP: usize = if cfg!(loom) { 1 } else { 32 };

    pub(crate) fn new() -> WakeBatch {
        WakeBatch { wakers: std::array::from_fn(|_| None), len: 0 }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len == Self::CAP
    }

    /// Adds a waker; the batch must not be full.
    pub(crate) fn push(&mut self, w: Option<Waker>) {
        if let Some(w) = w {
            self.wakers[self.len] = Some(w);
            self.len += 1;
        }
    }

    /// Wakes everything collected (call with no lock held).
    pub(crate) fn wake_all(&mut self) {
        for w in &mut self.wakers[..self.len] {
            if let Some(w) = w.take() {
                w.wake();
            }
        }
        self.len = 0;
    }
}
