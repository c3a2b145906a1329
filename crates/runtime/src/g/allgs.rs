//! `allgs`: every G that has not finished, so shutdown can drop them all.
//!
//! Go keeps `allgs` for the garbage collector and tracebacks. goro needs it for one thing: when
//! the main G returns, Gs that are waiting (held only by wakers inside channels, timers, other
//! Gs) must still have their futures dropped, or the cycles between them would leak. The list is
//! sharded by goid: a P takes goids 16 at a time, so a P's consecutive spawns land in one shard
//! whose lock and head stay in that P's cache.
//!
//! Go never unlinks a G (its `allgs` keeps dead Gs for reuse). goro unlinks, but a G finished on
//! a P is unlinked lazily: `complete` parks it in the P's [`DeadGs`] batch and the batch is
//! unlinked with one lock per shard run ([`AllGs::remove_batch`]) when it fills, and by
//! shutdown. Without the batch, each finish took a lock that the spawning M had just taken on
//! another core: a third of W1's cost per G.
//!
//! Invariants: a G is in its shard from spawn until it is unlinked after completion; the list
//! holds one reference on it meanwhile (released by whoever unlinks it: the completer, or the
//! flush of the batch it sits in). A closed shard accepts no G: `insert` then returns `false`
//! and the spawner cancels the G at once. Shutdown flushes every P's batch before it drains the
//! list, so the drain only meets Gs that have not completed.

use super::raw::{DeadBatch, Header, DEAD_BATCH};
use crate::loom::Mutex;
use crossbeam_utils::CachePadded;
use std::ops::ControlFlow;
use std::ptr::NonNull;

/// Goids are taken from the runtime's counter this many at a time (Go's `_GoidCacheBatch`).
pub(crate) const GOID_BATCH: u64 = 16;

struct Shard {
    head: Option<NonNull<Header>>,
    len: usize,
    closed: bool,
}

// SAFETY: the raw pointers are Gs, which are Send + Sync; they are only followed under the lock.
unsafe impl Send for Shard {}

pub(crate) struct AllGs {
    shards: Box<[CachePadded<Mutex<Shard>>]>,
    mask: u64,
}

impl AllGs {
    pub(crate) fn new(procs: usize) -> AllGs {
        let n = (procs * 4).next_power_of_two().max(4);
        let shards =
            (0..n).map(|_| CachePadded::new(Mutex::new(Shard { head: None, len: 0, closed: false }))).collect();
        AllGs { shards, mask: n as u64 - 1 }
    }

    fn shard_index(&self, g: &Header) -> usize {
        ((g.goid / GOID_BATCH) & self.mask) as usize
    }

    fn shard(&self, g: &Header) -> &Mutex<Shard> {
        &self.shards[self.shard_index(g)]
    }

    /// Adds a new G; `false` if the runtime is shutting down (the G was not added).
    pub(crate) fn insert(&self, g: NonNull<Header>) -> bool {
        // SAFETY: the caller holds a reference on `g`.
        let h = unsafe { g.as_ref() };
        let mut s = self.shard(h).lock();
        if s.closed {
            return false;
        }
        // SAFETY: links are only touched under this shard's lock, which we hold.
        unsafe {
            h.all_prev.with_mut(|p| *p = None);
            h.all_next.with_mut(|n| *n = s.head);
            if let Some(old) = s.head {
                old.as_ref().all_prev.with_mut(|p| *p = Some(g));
            }
        }
        s.head = Some(g);
        s.len += 1;
        true
    }

    /// Removes a finished G.
    pub(crate) fn remove(&self, g: NonNull<Header>) {
        // SAFETY: the caller holds a reference on `g`.
        let h = unsafe { g.as_ref() };
        let mut s = self.shard(h).lock();
        // SAFETY: under the shard lock of `g`, which is in the list; the caller holds a reference.
        unsafe { unlink(&mut s, g) };
    }

    /// Removes finished Gs, taking each shard's lock once per run of Gs of that shard (the
    /// slice is sorted by shard first).
    ///
    /// # Safety
    /// Every G of `gs` is in the list, appears once, and the caller holds a reference on it.
    pub(crate) unsafe fn remove_batch(&self, gs: &mut [NonNull<Header>]) {
        // SAFETY: the caller holds a reference on every G of `gs`, so their headers are live.
        let shard_of = |g: &NonNull<Header>| self.shard_index(unsafe { g.as_ref() });
        gs.sort_unstable_by_key(shard_of);
        for run in gs.chunk_by(|a, b| shard_of(a) == shard_of(b)) {
            let mut s = self.shards[shard_of(&run[0])].lock();
            for &g in run {
                // SAFETY: under the lock of `g`'s shard; caller contract for the rest.
                unsafe { unlink(&mut s, g) };
            }
        }
    }

    /// Calls `f` with the header of the G numbered `goid`, if it is in the list, under its
    /// shard's lock (`f` must not touch the list). For reports about a G that another thread
    /// is polling: the list's reference keeps the header alive while the lock is held.
    pub(crate) fn with_g<R>(&self, goid: u64, f: impl FnOnce(&Header) -> R) -> Option<R> {
        let s = self.shards[((goid / GOID_BATCH) & self.mask) as usize].lock();
        let mut f = Some(f);
        let mut out = None;
        walk(&s, |h| {
            if h.goid != goid {
                return ControlFlow::Continue(());
            }
            out = f.take().map(|f| f(h));
            ControlFlow::Break(())
        });
        out
    }

    /// Calls `f` with the header of every G in the list, one shard at a time under its lock
    /// (`f` must not touch the list; it sees Gs that finished but are not unlinked yet too).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Header)) {
        for shard in self.shards.iter() {
            walk(&shard.lock(), |h| {
                f(h);
                ControlFlow::Continue(())
            });
        }
    }

    /// Live Gs (for `num_goroutine`).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len).sum()
    }

    /// Closes every shard and hands each remaining G to `f`, with the list's reference.
    pub(crate) fn close_and_drain(&self, mut f: impl FnMut(NonNull<Header>)) {
        for shard in self.shards.iter() {
            shard.lock().closed = true;
        }
        for shard in self.shards.iter() {
            loop {
                let g = {
                    let mut s = shard.lock();
                    let Some(g) = s.head else { break };
                    // SAFETY: under the lock; `g` is the head of this shard.
                    unsafe {
                        let next = g.as_ref().all_next.with(|n| *n);
                        if let Some(n) = next {
                            n.as_ref().all_prev.with_mut(|p| *p = None);
                        }
                        g.as_ref().all_next.with_mut(|n| *n = None);
                        s.head = next;
                    }
                    s.len -= 1;
                    g
                };
                // Outside the lock: `f` drops futures, which may wake or spawn.
                f(g);
            }
        }
    }
}

/// Calls `f` with the header of each G of the locked shard `s`, from the head, until it breaks.
fn walk(s: &Shard, mut f: impl FnMut(&Header) -> ControlFlow<()>) {
    let mut cur = s.head;
    while let Some(g) = cur {
        // SAFETY: `s` is borrowed from its lock's guard, and under the shard lock a linked G is
        // live (the list holds a reference on it) and its links are written only under that lock.
        let (h, next) = unsafe {
            let h = g.as_ref();
            (h, h.all_next.with(|n| *n))
        };
        if f(h).is_break() {
            return;
        }
        cur = next;
    }
}

/// Takes `g` out of its shard's list.
///
/// # Safety
/// `s` is the locked shard of `g`, `g` is in it (so its neighbours are Gs of the same shard,
/// live while linked), and the caller holds a reference on `g`.
unsafe fn unlink(s: &mut Shard, g: NonNull<Header>) {
    // SAFETY: caller contract: `g` is live and its links are ours under the shard lock.
    unsafe {
        let h = g.as_ref();
        let prev = h.all_prev.with(|p| *p);
        let next = h.all_next.with(|n| *n);
        match prev {
            Some(p) => p.as_ref().all_next.with_mut(|n| *n = next),
            None => s.head = next,
        }
        if let Some(n) = next {
            n.as_ref().all_prev.with_mut(|p| *p = prev);
        }
        h.all_prev.with_mut(|p| *p = None);
        h.all_next.with_mut(|n| *n = None);
    }
    s.len -= 1;
}

/// Gs finished on a P that are still in `allgs`, waiting to be unlinked together (see the
/// module docs). Part of the P's owner-only state.
pub(crate) struct DeadGs {
    /// `gs[..len]` are the batch; the rest are placeholders, never followed.
    gs: [NonNull<Header>; DEAD_BATCH],
    len: usize,
}

// SAFETY: Gs are Send + Sync; the pointers are only followed by the P's owner.
unsafe impl Send for DeadGs {}

impl Default for DeadGs {
    fn default() -> DeadGs {
        DeadGs { gs: [NonNull::dangling(); DEAD_BATCH], len: 0 }
    }
}

impl DeadGs {
    /// Adds a finished G with the list's reference; `true` when the batch is now full.
    pub(crate) fn push(&mut self, g: NonNull<Header>) -> bool {
        self.gs[self.len] = g;
        self.len += 1;
        self.len == DEAD_BATCH
    }

    /// Empties the batch, handing its Gs (the first `.1` of `.0`, with their list references) to the
    /// caller.
    pub(crate) fn take(&mut self) -> DeadBatch {
        let out = (self.gs, self.len);
        self.len = 0;
        out
    }
}
