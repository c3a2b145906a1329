//! `allgs`: every G that has not finished, so shutdown can drop them all.
//!
//! Go keeps `allgs` for the garbage collector and tracebacks. goro needs it for one thing: when
//! the main G returns, Gs that are waiting (held only by wakers inside channels, timers, other
//! Gs) must still have their futures dropped, or the cycles between them would leak. The list is
//! sharded by goid so that spawning and finishing on different Ms rarely share a lock.
//!
//! Invariants: a G is in its shard from spawn until [`AllGs::remove`] at completion; the list
//! holds one reference on it meanwhile (released by the completer). A closed shard accepts no
//! G: `insert` then returns `false` and the spawner cancels the G at once.

use super::raw::Header;
use crate::loom::Mutex;
use crossbeam_utils::CachePadded;
use std::ptr::NonNull;

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

    fn shard(&self, g: &Header) -> &Mutex<Shard> {
        &self.shards[(g.goid & self.mask) as usize]
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
        // SAFETY: under the shard lock; `g` is in this shard (invariant), so its neighbours are
        // live Gs of the same shard.
        unsafe {
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
