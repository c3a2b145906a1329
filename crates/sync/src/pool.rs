//! [`Pool<T>`]: Go's `sync.Pool`, a cache of reusable values with a per-P fast path.
//!
//! # Layout
//!
//! One *local* slot per P (indexed by [`goro_runtime::__private::current_proc_index`], modulo the slot count
//! fixed at creation), plus one more for callers off goro (plain threads, other executors), each
//! [`CachePadded`] so that Ps do not share cache lines. A slot holds, under its own lock, a
//! `private` value (Go's `poolLocal.private`) and a `shared` deque (Go's `poolChain`): the owner
//! pushes and pops at the back, others steal from the front. Go needs no lock here because it
//! pins the G to its P; goro's P index is only a hint (a P can be handed to another M while a
//! thread is descheduled in the middle of a pool call), so each slot has a lock, which in the
//! common case only its own P ever takes, so it is uncontended.
//!
//! `get` looks at: its own `private`, its own `shared` (back), the other slots' `shared` (front),
//! the victim cache, and finally calls `new`. `put` fills `private`, else pushes on `shared`.
//!
//! # Victim cache and `clear`
//!
//! Go calls `poolCleanup` at every GC: each pool's primary caches become its victim cache and
//! the old victim cache is dropped, so an unused value survives one GC and is freed at the next.
//! goro has no GC, so [`Pool::clear`] is that step, called by the user (for instance from a G
//! that ticks every few seconds). There is no automatic trigger: any heuristic (a size cap, a
//! timer, counting calls) would drop values at moments the user cannot predict, and no trigger
//! of Go's exists to copy. Without `clear`, a pool keeps at most as many values as were put and
//! not taken back.
//!
//! # Invariants
//!
//! - Every value put is, at every moment, in exactly one place (a slot's `private`, a slot's
//!   `shared`, or the victim cache) until a `get` returns it or `clear`/the pool's drop drops it:
//!   nothing is lost without being dropped, and nothing is handed out twice.
//! - No lock is held while user code runs: `new` is called, and values are dropped, outside every
//!   lock (a `T::drop` or `new` may use the pool itself).
//! - The `*_len` atomics are hints (updated under the lock they describe, read `Relaxed` to skip
//!   empty queues without locking them). A stale hint can only make a `get` miss a value, which
//!   stays in the pool; Go's `Get` "may choose to ignore the pool" too.

use crate::loom::{AtomicUsize, Mutex, Ordering::*};
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;
use std::fmt;

/// A set of temporary values that may be saved and reused: Go's `sync.Pool`.
///
/// [`get`](Pool::get) returns some value previously given to [`put`](Pool::put), or a new one
/// from the constructor; which one is unspecified, so callers must reset what they get. Values
/// are cached per P, so Gs on different Ps rarely touch the same lock.
///
/// A put value is kept until a `get` takes it or it is dropped by [`clear`](Pool::clear) (Go's
/// GC-time cleanup: call it yourself, see its docs) or with the pool.
///
/// ```
/// use goro::sync::Pool;
/// use std::sync::Arc;
///
/// goro::run(async {
///     let bufs = Arc::new(Pool::new(|| Vec::<u8>::with_capacity(1024)));
///     let hs: Vec<_> = (0..8)
///         .map(|i| {
///             let bufs = bufs.clone();
///             goro::go(async move {
///                 let mut buf = bufs.get();
///                 buf.clear();
///                 buf.extend_from_slice(format!("item {i}").as_bytes());
///                 let n = buf.len();
///                 bufs.put(buf);
///                 n
///             })
///         })
///         .collect();
///     for h in hs {
///         assert_eq!(h.await.unwrap(), 6);
///     }
/// });
/// ```
pub struct Pool<T> {
    new: Box<dyn Fn() -> T + Send + Sync>,
    /// One slot per P, then the slot of callers off goro.
    locals: Box<[CachePadded<Local<T>>]>,
    victim: Mutex<Vec<T>>,
    /// Hint: `victim.len()`.
    victim_len: AtomicUsize,
}

struct Local<T> {
    inner: Mutex<LocalInner<T>>,
    /// Hint: `inner.shared.len()`.
    shared_len: AtomicUsize,
}

struct LocalInner<T> {
    private: Option<T>,
    shared: VecDeque<T>,
}

impl<T> Pool<T> {
    /// A pool whose [`get`](Pool::get) calls `new` when it has nothing cached (Go's `Pool.New`).
    ///
    /// It gets one slot per P of the current runtime ([`goro::runtime::max_procs`](fn@goro_runtime::max_procs);
    /// outside a runtime, the number a new one would get), plus one for callers off goro. Used
    /// from a runtime with more Ps, slots are shared modulo that number.
    ///
    /// ```
    /// let pool = goro::sync::Pool::new(String::new);
    /// assert_eq!(pool.get(), "");
    /// ```
    pub fn new(new: impl Fn() -> T + Send + Sync + 'static) -> Pool<T> {
        let procs = goro_runtime::max_procs().max(1);
        let locals = (0..=procs)
            .map(|_| {
                CachePadded::new(Local {
                    inner: Mutex::new(LocalInner { private: None, shared: VecDeque::new() }),
                    shared_len: AtomicUsize::new(0),
                })
            })
            .collect();
        Pool { new: Box::new(new), locals, victim: Mutex::new(Vec::new()), victim_len: AtomicUsize::new(0) }
    }

    /// Takes a cached value, or makes one with the constructor if none is found (Go's `Get`).
    /// Which cached value is unspecified: reset it before use.
    ///
    /// ```
    /// let pool = goro::sync::Pool::new(|| 0u32);
    /// pool.put(7);
    /// assert_eq!(pool.get(), 7); // same thread, nothing in between: the value just put
    /// assert_eq!(pool.get(), 0); // empty: a new one
    /// ```
    pub fn get(&self) -> T {
        let me = self.my_slot();
        let local = &self.locals[me];
        {
            let mut l = local.inner.lock();
            if let Some(v) = l.private.take() {
                return v;
            }
            if let Some(v) = l.shared.pop_back() {
                local.shared_len.store(l.shared.len(), Relaxed);
                return v;
            }
        }
        if let Some(v) = self.steal(me) {
            return v;
        }
        if self.victim_len.load(Relaxed) != 0 {
            let mut victim = self.victim.lock();
            if let Some(v) = victim.pop() {
                self.victim_len.store(victim.len(), Relaxed);
                return v;
            }
        }
        (self.new)()
    }

    /// Adds `value` to the pool for a later [`get`](Pool::get) (Go's `Put`).
    ///
    /// ```
    /// let pool = goro::sync::Pool::new(Vec::<u8>::new);
    /// let mut v = pool.get();
    /// v.push(1);
    /// v.clear();
    /// pool.put(v);
    /// ```
    pub fn put(&self, value: T) {
        let local = &self.locals[self.my_slot()];
        let mut l = local.inner.lock();
        if l.private.is_none() {
            l.private = Some(value);
        } else {
            l.shared.push_back(value);
            local.shared_len.store(l.shared.len(), Relaxed);
        }
    }

    /// Ages the cache by one step, as Go's garbage collector does at every cycle (`poolCleanup`):
    /// the values cached now become the *victim cache*, still handed out by `get` once the
    /// primary caches are empty, and the previous victim cache is dropped. A value that nobody
    /// takes therefore survives one `clear` and is dropped by the second.
    ///
    /// goro has no GC, so nothing calls this automatically: call it periodically (for instance
    /// from a G on a ticker) to let an idle pool shrink. Values are dropped on the calling
    /// thread, after every lock of the pool is released.
    ///
    /// ```
    /// let pool = goro::sync::Pool::new(|| 0);
    /// pool.put(1);
    /// pool.clear(); // 1 moves to the victim cache
    /// assert_eq!(pool.get(), 1);
    /// pool.put(2);
    /// pool.clear();
    /// pool.clear(); // 2 is dropped
    /// assert_eq!(pool.get(), 0);
    /// ```
    pub fn clear(&self) {
        let mut primary = Vec::new();
        for local in self.locals.iter() {
            let mut l = local.inner.lock();
            primary.extend(l.private.take());
            primary.extend(l.shared.drain(..));
            local.shared_len.store(0, Relaxed);
        }
        let old = {
            let mut victim = self.victim.lock();
            self.victim_len.store(primary.len(), Relaxed);
            std::mem::replace(&mut *victim, primary)
        };
        drop(old);
    }

    /// The slot of the caller: its P's, or the last one off goro.
    fn my_slot(&self) -> usize {
        let procs = self.locals.len() - 1;
        match goro_runtime::__private::current_proc_index() {
            Some(p) => p % procs,
            None => procs,
        }
    }

    /// Takes the oldest shared value of another slot, trying them in order after `me`.
    fn steal(&self, me: usize) -> Option<T> {
        let n = self.locals.len();
        for i in 1..n {
            let local = &self.locals[(me + i) % n];
            if local.shared_len.load(Relaxed) == 0 {
                continue;
            }
            let mut l = local.inner.lock();
            if let Some(v) = l.shared.pop_front() {
                local.shared_len.store(l.shared.len(), Relaxed);
                return Some(v);
            }
        }
        None
    }
}

impl<T> fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool").field("slots", &self.locals.len()).finish_non_exhaustive()
    }
}
