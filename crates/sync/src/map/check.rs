//! Test-only views of the internals: the invariants of the module docs, checkable at any
//! moment (from unit tests and from inside loom models), and the read/dirty state.

use super::entry::EntryRef;
use super::shard::Shard;
use super::Map;
use std::hash::{BuildHasher, Hash};

impl<K, V, S> Shard<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Send + 'static,
{
    /// `(read.m.len(), read.amended, dirty.len() or None, misses)`, for the unit tests.
    #[cfg(all(test, not(loom)))]
    fn state(&self) -> (usize, bool, Option<usize>, usize) {
        let g = self.reclaim.pin();
        let d = self.mu.lock();
        let read = self.load_read(&g);
        (read.m.len(), read.amended(), d.m.as_ref().map(|m| m.len()), d.misses)
    }

    /// Checks invariants 1 to 3 of the module docs. Valid at any moment, even with lock-free
    /// operations in flight: it holds the lock, and the states it looks at (expunged or not,
    /// membership of `dirty`, `read` itself) only change under the lock. Panics (after
    /// unlocking) with the first violation found.
    #[cfg(test)]
    fn check_invariants(&self) {
        if let Err(msg) = self.invariants() {
            panic!("sync.Map invariant broken: {msg}");
        }
    }

    #[cfg(test)]
    fn invariants(&self) -> Result<(), &'static str> {
        let g = self.reclaim.pin();
        let d = self.mu.lock();
        let read = self.load_read(&g);
        if read.amended() && d.m.is_none() {
            return Err("amended read without a dirty map");
        }
        match &d.m {
            Some(dirty) => {
                if dirty.values().any(|e| e.is_expunged()) {
                    return Err("an expunged entry is in dirty");
                }
                for (k, e) in read.m.iter() {
                    match (e.is_expunged(), dirty.get(dirty.hash(k), k)) {
                        (true, Some(_)) => return Err("an expunged entry is in dirty"),
                        (true, None) => {}
                        (false, None) => return Err("a non-expunged entry of read is missing from dirty"),
                        (false, Some(de)) if !EntryRef::ptr_eq(e, de) => {
                            return Err("read and dirty hold different entries for one key")
                        }
                        (false, Some(_)) => {}
                    }
                }
            }
            None => {
                if read.m.values().any(|e| e.is_expunged()) {
                    return Err("an expunged entry without a dirty map");
                }
            }
        }
        Ok(())
    }
}

impl<K, V, S> Map<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Send + 'static,
{
    /// The one shard's [`Shard::state`], for the unit tests of the algorithm (which make their
    /// maps with [`Map::with_one_shard`]).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn state(&self) -> (usize, bool, Option<usize>, usize) {
        assert_eq!(self.shards().len(), 1, "state() is for maps of one shard");
        self.shards()[0].state()
    }

    /// Checks every shard's invariants (see [`Shard::check_invariants`]).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        for s in self.shards() {
            s.check_invariants();
        }
    }
}
