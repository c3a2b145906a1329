//! [`Cond`]: Go's `sync.Cond`, a condition variable for goro's [`Mutex`].
//!
//! # Design
//!
//! Go's `notifyList` is a ticket queue: `Wait` takes a ticket while it still holds the lock,
//! unlocks, then sleeps until its ticket is notified; `Signal` notifies the oldest ticket,
//! `Broadcast` all of them. Here a ticket is a [`Node`] of the crate's FIFO wait list, inside
//! the pinned [`CondWait`] future: the first poll queues it *before* it unlocks the mutex, so a
//! `signal` that follows any change made under the lock finds the waiter queued (no lost
//! wake-up, as Go's ticket order guarantees).
//!
//! # Invariants
//!
//! 1. A node is queued at most once, by its future's first poll, with the current *broadcast
//!    generation* (the list's extra data) as its data, and leaves the list only under the
//!    list's lock: popped by a notifier (which stores the outcome, [`SIGNALED`] or
//!    [`BROADCAST`], last) or removed by its dropped future.
//! 2. `broadcast` bumps the generation and wakes, in batches (unlocking between them), only the
//!    nodes of older generations: the waiters that were queued when it was called. Nodes queued
//!    meanwhile carry the new generation and sit behind the older ones (FIFO), so the drain
//!    stops at the first of them.
//! 3. A future that was woken by `signal` but never returned the guard to its caller (dropped
//!    while it relocks the mutex, or before it saw the wake-up) passes the signal on, by calling
//!    `signal` once itself. A signal is therefore never absorbed by a waiter that gave up; a
//!    waiter woken by `broadcast` passes nothing on (everybody of its round was woken).
//! 4. Wakers are woken after the list's lock is released.

use crate::mutex::{Lock, Mutex, MutexGuard};
use crate::waitlist::{Node, WaitList, WakeBatch, WAITING};
use goro_runtime::WaitReason;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A node's outcome: woken by [`Cond::signal`].
const SIGNALED: u8 = 1;
/// A node's outcome: woken by [`Cond::broadcast`].
const BROADCAST: u8 = 2;

/// A condition variable (Go's `sync.Cond`): Gs wait on it, with a goro [`Mutex`] locked, until
/// another G signals a change.
///
/// Go's `c.Wait()` unlocks `c.L`, sleeps, and locks `c.L` again before returning. Here the lock
/// is the guard: [`wait`](Cond::wait) takes the guard, unlocks, waits, and gives back a guard of
/// the same mutex, locked again. As in Go, a `Cond` is not tied to one mutex by its type (Go's
/// `NewCond(l)` takes any `Locker`): use it with one mutex only. As in Go, a woken waiter
/// cannot assume that the condition holds (another G may have taken the lock first): wait in a
/// loop.
///
/// ```
/// use goro::sync::{Cond, Mutex};
/// use std::sync::Arc;
///
/// goro::run(async {
///     // A queue with Go's `for len(q) == 0 { c.Wait() }` consumer.
///     let state = Arc::new((Mutex::new(Vec::<u32>::new()), Cond::new()));
///     let consumer = goro::go({
///         let state = state.clone();
///         async move {
///             let (mu, cond) = &*state;
///             let mut q = mu.lock().await;
///             while q.is_empty() {
///                 q = cond.wait(q).await;
///             }
///             q.remove(0)
///         }
///     });
///     let (mu, cond) = &*state;
///     mu.lock().await.push(7);
///     cond.signal();
///     assert_eq!(consumer.await.unwrap(), 7);
/// });
/// ```
pub struct Cond {
    /// The waiting tickets; the extra data is the broadcast generation.
    list: WaitList<u64>,
}

impl Cond {
    /// A condition variable with no waiters.
    ///
    /// ```
    /// let c = goro::sync::Cond::new();
    /// c.signal(); // nobody waits: nothing happens, as in Go
    /// ```
    pub fn new() -> Cond {
        Cond { list: WaitList::new(0) }
    }

    /// Unlocks the guard's mutex, waits for [`signal`](Cond::signal) or
    /// [`broadcast`](Cond::broadcast), locks the mutex again and returns the new guard (Go's
    /// `Wait`). The waiter joins the queue before the mutex is unlocked, so a signal sent after
    /// any change made under the lock reaches it.
    ///
    /// While it waits for the signal the G's wait reason is `sync.Cond.Wait`; while it locks
    /// the mutex again, `sync.Mutex.Lock`.
    ///
    /// # Cancel safety
    ///
    /// Go's `Wait` cannot be given up; this future can be dropped at any point, and then:
    /// never polled, it unlocks the mutex (the guard is dropped); queued, it leaves the queue;
    /// woken by a `signal` but dropped before it returned the guard (while it relocks), it
    /// passes the signal on to the next waiter, so no signal is lost to a waiter that gave up.
    /// A dropped wait never leaves the mutex locked.
    ///
    /// ```
    /// use goro::sync::{Cond, Mutex};
    /// use std::sync::Arc;
    /// goro::run(async {
    ///     let s = Arc::new((Mutex::new(false), Cond::new()));
    ///     let s2 = s.clone();
    ///     goro::go(async move {
    ///         *s2.0.lock().await = true;
    ///         s2.1.broadcast();
    ///     });
    ///     let mut ready = s.0.lock().await;
    ///     while !*ready {
    ///         ready = s.1.wait(ready).await;
    ///     }
    /// });
    /// ```
    pub fn wait<'c, 'a, T: ?Sized>(&'c self, guard: MutexGuard<'a, T>) -> CondWait<'c, 'a, T> {
        CondWait { cond: self, node: Node::new(), state: Stage::Start(guard) }
    }

    /// [`wait`](Cond::wait) for plain threads: parks the thread instead of a G. Called from a
    /// G it blocks the whole M: use `wait(guard).await` there.
    ///
    /// ```
    /// use goro::sync::{Cond, Mutex};
    /// use std::sync::Arc;
    /// let s = Arc::new((Mutex::new(0), Cond::new()));
    /// let s2 = s.clone();
    /// let t = std::thread::spawn(move || {
    ///     *s2.0.lock_blocking() = 1;
    ///     s2.1.signal();
    /// });
    /// let mut n = s.0.lock_blocking();
    /// while *n == 0 {
    ///     n = s.1.wait_blocking(n);
    /// }
    /// drop(n);
    /// t.join().unwrap();
    /// ```
    #[track_caller]
    pub fn wait_blocking<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        goro_runtime::__private::block_on_thread_for("`cond.wait(guard).await`", self.wait(guard))
    }

    /// Wakes the waiter that has waited longest, if any (Go's `Signal`). The caller need not
    /// hold the mutex (Go allows both), but the change it signals must have been made under
    /// the mutex, or a waiter may miss it.
    ///
    /// ```
    /// use goro::sync::{Cond, Mutex};
    /// use std::sync::Arc;
    /// goro::run(async {
    ///     let s = Arc::new((Mutex::new(None), Cond::new()));
    ///     let s2 = s.clone();
    ///     let waiter = goro::go(async move {
    ///         let mut slot = s2.0.lock().await;
    ///         loop {
    ///             match slot.take() {
    ///                 Some(v) => return v,
    ///                 None => slot = s2.1.wait(slot).await,
    ///             }
    ///         }
    ///     });
    ///     *s.0.lock().await = Some("job");
    ///     s.1.signal();
    ///     assert_eq!(waiter.await.unwrap(), "job");
    /// });
    /// ```
    pub fn signal(&self) {
        let w = self.list.lock().pop_front(SIGNALED);
        if let Some(w) = w {
            w.wake();
        }
    }

    /// Wakes every waiter that is waiting now (Go's `Broadcast`). Waiters that start waiting
    /// while it runs are not woken by it.
    ///
    /// ```
    /// use goro::sync::{Cond, Mutex};
    /// use std::sync::Arc;
    /// goro::run(async {
    ///     let s = Arc::new((Mutex::new(0u32), Cond::new()));
    ///     let gs: Vec<_> = (0..3)
    ///         .map(|_| {
    ///             let s = s.clone();
    ///             goro::go(async move {
    ///                 let mut g = s.0.lock().await;
    ///                 *g += 1; // announce: waiting
    ///                 s.1.signal(); // tell main
    ///                 while *g < 100 {
    ///                     g = s.1.wait(g).await;
    ///                 }
    ///             })
    ///         })
    ///         .collect();
    ///     let mut g = s.0.lock().await;
    ///     while *g < 3 {
    ///         g = s.1.wait(g).await;
    ///     }
    ///     *g = 100;
    ///     drop(g);
    ///     s.1.broadcast();
    ///     for h in gs {
    ///         h.await.unwrap();
    ///     }
    /// });
    /// ```
    pub fn broadcast(&self) {
        let mut batch = WakeBatch::new();
        let mut list = self.list.lock();
        let generation = *list.extra();
        *list.extra() = generation + 1;
        loop {
            let mut more = false;
            while let Some(d) = list.front_data() {
                if d > generation {
                    break;
                }
                if batch.is_full() {
                    more = true;
                    break;
                }
                batch.push(list.pop_front(BROADCAST));
            }
            drop(list);
            batch.wake_all();
            if !more {
                return;
            }
            list = self.list.lock();
        }
    }
}

impl Default for Cond {
    fn default() -> Cond {
        Cond::new()
    }
}

impl fmt::Debug for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cond").field("waiters", &self.list.lock().len()).finish()
    }
}

/// Where a [`CondWait`] is.
enum Stage<'a, T: ?Sized> {
    /// Not polled yet: holds the lock.
    Start(MutexGuard<'a, T>),
    /// The node is queued (or a notifier completed it and the future has not seen it yet); the
    /// mutex is unlocked.
    Queued(&'a Mutex<T>),
    /// Woken (by a signal, if the flag is set): locking the mutex again.
    Relock(Lock<'a, T>, bool),
    /// The guard was returned.
    Done,
}

/// The future of [`Cond::wait`]: resolves to the guard, locked again.
///
/// Cancel-safe: see [`Cond::wait`] (a dropped wait never loses a signal, never leaves the mutex
/// locked).
#[must_use = "futures do nothing unless you `.await` them (and the guard stays locked until then)"]
pub struct CondWait<'c, 'a, T: ?Sized> {
    cond: &'c Cond,
    /// Queued on `cond.list` while `state` is `Queued` and its state is `WAITING`; pinned with
    /// the future.
    node: Node,
    state: Stage<'a, T>,
}

impl<'a, T: ?Sized> Future for CondWait<'_, 'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        // SAFETY: nothing is moved out of the pinned future: `node` stays where it is, and the
        // `Lock` inside `Relock` is only ever dropped in place (by an assignment to `state`).
        let this = unsafe { self.get_unchecked_mut() };
        loop {
            match &mut this.state {
                Stage::Start(guard) => {
                    // A yield point, before anything happened (the guard is still held).
                    std::task::ready!(goro_runtime::coop::poll_proceed(cx));
                    let mutex = MutexGuard::mutex(guard);
                    let mut list = this.cond.list.lock();
                    let generation = *list.extra();
                    // SAFETY: the node was never queued (first poll); it is pinned inside this
                    // future, whose `Drop` removes it under the lock while it is queued, so it
                    // stays at its address for as long as it is linked.
                    unsafe { list.push(&this.node, cx.waker().clone(), generation, false) };
                    drop(list);
                    // Queued first, unlocked second (invariant 1): Go's ticket order.
                    drop(std::mem::replace(&mut this.state, Stage::Queued(mutex)));
                    this.cond.list.park_reason(WaitReason::SyncCondWait);
                    return Poll::Pending;
                }
                Stage::Queued(mutex) => {
                    // The waitlist protocol: a state other than WAITING, read with Acquire,
                    // means a notifier unlinked the node and will not touch it again.
                    if this.node.state() == WAITING {
                        let mut list = this.cond.list.lock();
                        if this.node.state() == WAITING {
                            list.set_waker(&this.node, cx.waker());
                            drop(list);
                            this.cond.list.park_reason(WaitReason::SyncCondWait);
                            return Poll::Pending;
                        }
                    }
                    this.node.waited();
                    let signaled = this.node.state() == SIGNALED;
                    let mutex: &'a Mutex<T> = mutex;
                    this.state = Stage::Relock(mutex.lock(), signaled);
                }
                Stage::Relock(lock, _) => {
                    // SAFETY: `lock` is pinned inside this pinned future and never moved out.
                    let guard = std::task::ready!(unsafe { Pin::new_unchecked(lock) }.poll(cx));
                    this.state = Stage::Done;
                    return Poll::Ready(guard);
                }
                Stage::Done => panic!("goro: a Cond::wait future polled after it completed"),
            }
        }
    }
}

impl<T: ?Sized> Drop for CondWait<'_, '_, T> {
    fn drop(&mut self) {
        let pass_on = match &self.state {
            // The guard is dropped with the field: the mutex unlocks.
            Stage::Start(_) | Stage::Done => false,
            Stage::Queued(_) => {
                if self.node.state() == WAITING {
                    let mut list = self.cond.list.lock();
                    if list.remove(&self.node) {
                        return; // never woken: nothing to pass on
                    }
                }
                self.node.state() == SIGNALED
            }
            Stage::Relock(_, signaled) => *signaled,
        };
        // Invariant 3. The `Lock` (if any) is dropped after this, with the field: it unlocks
        // or passes on the lock if it had been handed it.
        if pass_on {
            self.cond.signal();
        }
    }
}

impl<T: ?Sized> fmt::Debug for CondWait<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match self.state {
            Stage::Start(_) => "start",
            Stage::Queued(_) => "waiting",
            Stage::Relock(..) => "relocking",
            Stage::Done => "done",
        };
        f.debug_struct("CondWait").field("stage", &stage).finish()
    }
}
