//! The walks over the whole map: `range` (Go's `Range`, which promotes the dirty map first),
//! `len`/`is_empty` (not in Go), `clear` (Go's `Clear`) and `Debug`.

use super::reclaim::Guard;
use super::{Map, ReadOnly};
use crate::loom::Arc;
use std::fmt;
use std::hash::{BuildHasher, Hash};

impl<K, V, S> Map<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Send + 'static,
{
    /// Calls `f` on each key and value present, until `f` returns `false` (Go's `Range`).
    ///
    /// As in Go, this is not a consistent snapshot: no key is visited twice, and every key
    /// present for the whole call is visited (unless `f` stops early), but a key stored or
    /// deleted concurrently (also by `f`) may or may not be, and may be seen with any value it
    /// had during the call. `f` may call any method of the map. If new keys were stored since
    /// the last promotion, `range` first promotes the dirty map under the lock (the walk is O(n)
    /// anyway), then walks the snapshot without the lock. Each value is cloned (under a short
    /// epoch pin) before `f` sees it, so `f` may block without holding up memory reclamation.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// for i in 0..10 {
    ///     m.store(i, i * i);
    /// }
    /// let mut sum = 0;
    /// m.range(|_k, v| {
    ///     sum += v;
    ///     true
    /// });
    /// assert_eq!(sum, 285);
    ///
    /// let mut seen = 0;
    /// m.range(|_, _| {
    ///     seen += 1;
    ///     seen < 3 // stop after three
    /// });
    /// assert_eq!(seen, 3);
    /// ```
    pub fn range<F>(&self, mut f: F)
    where
        F: FnMut(&K, &V) -> bool,
    {
        let table = {
            let g = self.reclaim.pin();
            Arc::clone(&self.read_for_walk(&g).m)
        };
        for (k, e) in table.iter() {
            let v = {
                let g = self.reclaim.pin();
                e.load(&g).map(|s| s.value().clone())
            };
            if let Some(v) = v {
                if !f(k, &v) {
                    break;
                }
            }
        }
    }

    /// The snapshot to walk: `read`, after promoting `dirty` if `read` is amended (Go's
    /// `Range` prologue).
    fn read_for_walk<'g>(&'g self, g: &'g Guard<'_>) -> &'g ReadOnly<K, V, S> {
        let read = self.load_read(g);
        if !read.amended {
            return read;
        }
        let mut l = self.lock(g);
        let read = self.load_read(g);
        if !read.amended {
            return read;
        }
        self.promote_locked(&mut l, g);
        self.load_read(g)
    }

    /// Deletes every key (Go's `Clear`).
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, 1);
    /// m.store(2, 2);
    /// m.clear();
    /// assert!(m.is_empty());
    /// ```
    pub fn clear(&self) {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if read.m.is_empty() && !read.amended {
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
            if !read.m.is_empty() || read.amended {
                let m = new_read.take().expect("one new read table");
                self.store_read_locked(ReadOnly::new(Arc::new(m), false), &mut l, &g);
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

    /// The number of keys present. Go's `sync.Map` has no `Len`: this walks the map like
    /// [`range`](Map::range) does, in O(n) (promoting the dirty map first if new keys were
    /// stored since the last promotion), without cloning anything. Under concurrent writes the
    /// count is that of no single instant: a key present for the whole call is counted, one
    /// stored or deleted meanwhile may or may not be. Keep a counter of your own if you need
    /// the size often.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, ());
    /// m.store(2, ());
    /// m.delete(&1);
    /// assert_eq!(m.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        let g = self.reclaim.pin();
        self.read_for_walk(&g).m.values().filter(|e| e.load(&g).is_some()).count()
    }

    /// Whether no key is present. Stops at the first present key, and promotes nothing: if the
    /// read snapshot has no value it looks in the dirty map under the lock. Under concurrent
    /// writes, the same caveat as [`len`](Map::len) applies.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// assert!(m.is_empty());
    /// m.store("k", 1);
    /// assert!(!m.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if read.m.values().any(|e| e.load(&g).is_some()) {
            return false;
        }
        if !read.amended {
            return true;
        }
        let l = self.lock(&g);
        !l.m.as_ref().is_some_and(|m| m.values().any(|e| e.load(&g).is_some()))
    }
}

impl<K, V, S> fmt::Debug for Map<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static + fmt::Debug,
    V: Clone + Send + 'static + fmt::Debug,
    S: BuildHasher + Clone + Send + 'static,
{
    /// Formats the present entries as a map (walking it like [`range`](Map::range)).
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, "one");
    /// assert_eq!(format!("{m:?}"), r#"{1: "one"}"#);
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_map();
        self.range(|k, v| {
            out.entry(k, v);
            true
        });
        out.finish()
    }
}
