//! The walks over a whole shard: `range` (Go's `Range`, which promotes the dirty map first),
//! `len`/`is_empty` (not in Go) and `clear` (Go's `Clear`). [`Map`](super::Map) runs them shard
//! after shard.

use super::reclaim::Guard;
use super::shard::{ReadOnly, Shard};
use std::hash::{BuildHasher, Hash};

impl<K, V, S> Shard<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Send + 'static,
{
    /// Calls `f` on each key and value present, until `f` returns `false` (Go's `Range`).
    /// Returns `false` if `f` did.
    pub(super) fn range<F>(&self, f: &mut F) -> bool
    where
        F: FnMut(&K, &V) -> bool,
    {
        let snapshot = {
            let g = self.reclaim.pin();
            self.snapshot(self.read_for_walk(&g))
        };
        for (k, e) in snapshot.m.iter() {
            let v = {
                let g = self.reclaim.pin();
                e.load(&g).map(|s| s.value().clone())
            };
            if let Some(v) = v {
                if !f(k, &v) {
                    return false;
                }
            }
        }
        true
    }

    /// The snapshot to walk: `read`, after promoting `dirty` if `read` is amended (Go's
    /// `Range` prologue).
    fn read_for_walk<'g>(&'g self, g: &'g Guard<'_>) -> &'g ReadOnly<K, V, S> {
        let read = self.load_read(g);
        if !read.amended() {
            return read;
        }
        let mut l = self.lock(g);
        let read = self.load_read(g);
        if !read.amended() {
            return read;
        }
        self.promote_locked(&mut l, g);
        self.load_read(g)
    }

    /// Deletes every key (Go's `Clear`).
    pub(super) fn clear(&self) {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if read.m.is_empty() && !read.amended() {
            // Avoid allocating a new snapshot if the map was already empty.
            return;
        }
        // The new tables are made before locking (cloning the hasher is user code), and the
        // unused ones dropped after unlocking.
        let mut new_read = Some(self.empty_table());
        let mut new_dirty = Some(self.empty_table());
        let old_dirty = {
            let mut l = self.lock(&g);
            let read = self.load_read(&g);
            if !read.m.is_empty() || read.amended() {
                let m = new_read.take().expect("one new read table");
                self.store_read_locked(ReadOnly::new(m, false), &mut l, &g);
            }
            // Go's `clear(m.dirty)`: emptied, but a non-nil dirty map stays non-nil.
            let old = match &mut l.m {
                Some(m) => Some(std::mem::replace(m, new_dirty.take().expect("one new dirty table"))),
                None => None,
            };
            // Don't immediately promote the newly cleared dirty map on the next operation.
            l.misses = 0;
            old
        };
        drop((new_read, new_dirty));
        // Entries (and their values) only `dirty` held are dropped here, outside the lock,
        // every one of them; the first destructor panic, if any, is resumed here (`Table`'s
        // drop).
        drop(old_dirty);
        g.flush();
    }

    /// The number of keys present, promoting `dirty` first as `range` does.
    pub(super) fn len(&self) -> usize {
        let g = self.reclaim.pin();
        self.read_for_walk(&g).m.values().filter(|e| e.load(&g).is_some()).count()
    }

    /// Whether no key is present. Promotes nothing: if the read snapshot has no value it looks
    /// in the dirty map under the lock.
    pub(super) fn is_empty(&self) -> bool {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if read.m.values().any(|e| e.load(&g).is_some()) {
            return false;
        }
        if !read.amended() {
            return true;
        }
        let l = self.lock(&g);
        !l.m.as_ref().is_some_and(|m| m.values().any(|e| e.load(&g).is_some()))
    }
}
