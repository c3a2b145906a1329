//! The public [`Map`]: its shards, and which shard a key belongs to. Each shard is Go's
//! classic `sync.Map` (the module docs, [`Shard`]). Nothing here changes after `new`: every
//! operation is one shard's (or, for `range`, `clear`, `len` and `is_empty`, each shard's in
//! turn), so the map has no protocol of its own to model-check beyond a shard's.

use super::dropping::DropAll;
use super::hash::{shard_of, Hashing};
use super::shard::Shard;
use crossbeam_utils::CachePadded;
use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash};

/// A concurrent map: Go's `sync.Map`, with the same algorithm (Go 1.9 to 1.23) in each of its
/// shards.
///
/// Like Go's, it is specialized. Go's advice applies as is: most code should use a plain
/// `HashMap` behind a [`Mutex`](crate::Mutex), for better type safety and to keep other
/// invariants next to the map's contents. `Map` is built for two cases:
///
/// 1. an entry for a given key is written once but read many times, as in caches that only
///    grow;
/// 2. several threads or Gs read, write and overwrite entries for *disjoint* sets of keys.
///
/// In these two cases it beats a locked map, and also a sharded one such as `dashmap`: a load of
/// a key that is present takes no lock and writes no shared memory (a sharded map's read lock
/// is a shared write, and readers of one shard contend on it), and an overwrite of a present key
/// is one CAS on that key's entry. New keys, and keys deleted and re-added, go through a lock
/// and eventually a copy (see "Shards" for how that lock is split); when every operation needs
/// the lock anyway, prefer `dashmap` or a `Mutex<HashMap>`.
///
/// Differences from Go, all forced by Rust:
///
/// - Values are returned by clone (`V: Clone`): a load clones the value while the entry is
///   pinned; use `Arc<T>` for values that are expensive to clone. A new key's entry (the
///   value inside it; Go allocates the entry and boxes the value in an interface) is carved
///   from its shard's current block of entries (16 for a `u64` value: as many as fit in 512
///   bytes), so a new key costs a fraction of an allocation; an overwrite allocates a small
///   box for the new value. A block is freed with the last of its entries: a map whose keys
///   are deleted at random while new ones come in can hold up to 16 times the entry memory its
///   live keys need (Go reuses such room; this map does not).
/// - `K`, `V` and `S` must be `Send + 'static`: a replaced value may be dropped later, on
///   another thread, by the epoch collector.
/// - `range` hands out references to a clone of each value (taken under a short pin per entry),
///   so the callback may block or take as long as it likes without holding up reclamation.
/// - [`len`](Map::len) and [`is_empty`](Map::is_empty) exist (Go has none); both walk the map.
///
/// # Shards
///
/// The map is split by key into shards, each of them Go's `sync.Map` on its own (its own read
/// snapshot, dirty map, lock and miss count): 4 per CPU (`std::thread::available_parallelism`),
/// rounded up to a power of two, at most 64. With one lock for all, as in Go, every store of a
/// new key waited for every other G's: two Gs storing new keys ran 1.5-2x slower than one G
/// alone. A key is hashed once per operation; the hash picks its shard and finds the key in
/// that shard's tables. A load of a present key still takes no lock and writes no shared
/// memory. What it changes that a program can see:
///
/// - [`clear`](Map::clear) empties the shards one after the other: a `load` running during it
///   may find some keys already gone and others not yet (Go's `Clear`, one lock for all, takes
///   them all at once). A key stored during a `clear` may or may not survive it, as in Go.
/// - [`range`](Map::range) walks shard after shard, promoting each shard's dirty map as it comes
///   to it: its promise (every key present for the whole call is visited once) is Go's.
/// - `new` allocates each shard's empty snapshot: about 220 bytes per shard, 1.8 KB on a 2-CPU
///   machine (Go's zero `sync.Map` allocates nothing until it is used).
///
/// # Hashing
///
/// Keys are hashed with `S`, but for one case: with the default `S = RandomState` and a
/// primitive integer key type (`u64`, `i32`, `usize`, ...), the map hashes keys with a fast
/// keyed hash of its own (a folded multiply, as hashbrown's default foldhash and Go's fallback
/// hash do), seeded at random per map, instead of SipHash, which cost a third of a `load`. Like
/// Go's map hash, it resists hash flooding only as far as its seed stays unknown. Other key
/// types, and any other hasher given to [`with_hasher`](Map::with_hasher), are used as given.
///
/// # User code the map runs
///
/// The map calls `K`'s `Hash`, `Eq`, `Clone` and `Drop`, `V`'s `Clone`, `PartialEq` and `Drop`,
/// the hasher `S`, and `range`'s callback. Of these, only **`Hash` and `Eq` of keys (and the
/// hasher's hashing)** ever run under one of the map's internal locks: a key is hashed once,
/// before locking, but a shard's dirty table compares keys with `Eq` to find one, and rehashes
/// the keys it holds when it grows. They must not call back into the same map: such a call could
/// deadlock the thread, so it is detected and panics instead (the lock is released and the map
/// stays usable). Keep
/// `Hash` and `Eq` plain functions of the key, as `HashMap` already asks. (As with `HashMap`, a
/// panicking `Hash` or `Eq` is propagated to the caller, but may lose entries of the map.)
///
/// Everything else runs with no lock held, so it may use the map freely:
///
/// - **Clones** (`load` and friends, `load_or_store`'s result, the keys copied when the dirty map
///   is rebuilt) happen outside the lock.
/// - **Destructors**: a value replaced by `store`/`swap`/`compare_and_swap` or removed by
///   `delete`/`load_and_delete`/`compare_and_delete` may still be read by a concurrent `load`, so
///   it is dropped later by the epoch collector, on whatever thread collects (never while that
///   thread holds this map's lock). A destructor there may store into the map (a cache that
///   records its evictions in itself works). If it panics, the panic is contained: the panic hook
///   reports it, and it does not unwind into the unrelated G or thread that happened to collect.
///   Drops the map makes on the caller's behalf (the values `clear` takes out of the dirty map,
///   the unused `value` of a `load_or_store` that loaded, the `key` passed to a store of a key
///   already present, dropping the map itself) happen in the caller, after unlocking: every
///   object is dropped even if several destructors panic, and the first panic is resumed in the
///   caller, with the map consistent.
///
/// The lock is a short, thread-blocking lock (Go's `sync.Mutex` parks the goroutine instead): a
/// locked section does a bounded amount of work, at most one pass over the shard's entries. A G
/// that finds it held waits as in a [`goro::syscall`](goro_runtime::syscall): one pass over a
/// large shard takes milliseconds, and meanwhile the G's P goes to another thread, so the Gs
/// queued behind it run, as they would in Go.
///
/// ```
/// use goro::sync::Map;
/// use std::sync::Arc;
///
/// let cache: Arc<Map<u64, String>> = Arc::new(Map::new());
/// goro::run(async {
///     let hs: Vec<_> = (0..4u64)
///         .map(|g| {
///             let cache = cache.clone();
///             goro::go(async move {
///                 for k in (g * 100)..(g * 100 + 100) {
///                     cache.store(k, format!("v{k}"));
///                 }
///             })
///         })
///         .collect();
///     for h in hs {
///         h.await.unwrap();
///     }
/// });
/// assert_eq!(cache.load(&7).as_deref(), Some("v7"));
/// assert_eq!(cache.len(), 400);
/// ```
pub struct Map<K, V, S = RandomState> {
    /// A power of two of them, each on lines of its own (two shards' locks and read pointers
    /// never share a line). Never empty. Dropping the map drops them in turn: a shard whose
    /// values' destructors panic drops all of them and then resumes the first panic, and the
    /// slice's drop goes on with the other shards while that unwinds (their own panics are
    /// discarded then, see `dropping.rs`), so no `Drop` of the map's own is needed.
    shards: Box<[CachePadded<Shard<K, V, S>>]>,
    /// The map's hashing; each shard's tables hash with a clone of it (the same seeds), so a key
    /// is hashed once per operation, here, and its hash picks its shard and finds it there.
    hashing: Hashing<K, S>,
}

/// How many shards a new map gets: 4 per CPU, rounded up to a power of two, at most 64
/// (`dashmap`'s rule, capped). One under loom: the models check one shard's algorithm, which is
/// all there is to check.
fn shard_count() -> usize {
    #[cfg(loom)]
    return 1;
    #[cfg(not(loom))]
    {
        static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *COUNT.get_or_init(|| {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            (4 * cpus).next_power_of_two().min(64)
        })
    }
}

impl<K, V> Map<K, V, RandomState>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    /// An empty map (Go's zero `sync.Map`).
    ///
    /// ```
    /// let m: goro::sync::Map<&'static str, i32> = goro::sync::Map::new();
    /// assert!(m.is_empty());
    /// ```
    pub fn new() -> Map<K, V, RandomState> {
        Map::with_hasher(RandomState::new())
    }

    /// A map of one shard, for the unit tests of the algorithm (whose counts are one shard's).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn with_one_shard() -> Map<K, V, RandomState> {
        Map::with_shards(RandomState::new(), 1)
    }
}

impl<K, V, S> Default for Map<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Default + Send + 'static,
{
    /// An empty map.
    ///
    /// ```
    /// let m: goro::sync::Map<u32, u32> = Default::default();
    /// assert_eq!(m.load(&1), None);
    /// ```
    fn default() -> Map<K, V, S> {
        Map::with_hasher(S::default())
    }
}

impl<K, V, S> Map<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Send + 'static,
{
    /// An empty map that hashes keys with `hash_builder`. std's `RandomState` (the default)
    /// with an integer key type gets the map's own fast keyed hash instead (see "Hashing" on
    /// [`Map`]); for other keys, a faster hasher than std's SipHash speeds up every operation,
    /// at the usual cost in HashDoS resistance.
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// let m = goro::sync::Map::with_hasher(RandomState::new());
    /// m.store(1, "one");
    /// assert_eq!(m.load(&1), Some("one"));
    /// ```
    pub fn with_hasher(hash_builder: S) -> Map<K, V, S> {
        Map::with_shards(hash_builder, shard_count())
    }

    fn with_shards(hash_builder: S, shards: usize) -> Map<K, V, S> {
        assert!(shards.is_power_of_two(), "sync.Map: {shards} shards is not a power of two");
        let hashing = Hashing::new(hash_builder);
        let mut shards: Box<[CachePadded<Shard<K, V, S>>]> =
            (0..shards).map(|_| CachePadded::new(Shard::new(hashing.clone()))).collect();
        let map_id = shards.as_ptr() as usize;
        for s in shards.iter_mut() {
            s.map_id = map_id;
        }
        Map { shards, hashing }
    }

    /// `key`'s hash, and the shard that holds `key` if any does.
    #[inline(always)]
    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> (u64, &Shard<K, V, S>) {
        let h = self.hashing.hash_one(key);
        (h, &self.shards[shard_of(h, self.shards.len())])
    }

    /// The index of `key`'s shard, for the unit tests.
    #[cfg(all(test, not(loom)))]
    pub(super) fn shard_index<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        shard_of(self.hashing.hash_one(key), self.shards.len())
    }

    #[cfg(test)]
    pub(super) fn shards(&self) -> &[CachePadded<Shard<K, V, S>>] {
        &self.shards
    }

    /// Returns the value stored for `key`, or `None` (Go's `Load`).
    ///
    /// A key present in the read snapshot (the steady state of a read-mostly map) costs an
    /// epoch pin (inside a G's poll, a thread-local counter), one atomic load of the snapshot,
    /// one hash lookup, one atomic load of the entry and a clone of the value: no lock, no
    /// allocation, no shared write.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store("k".to_string(), 1);
    /// assert_eq!(m.load("k"), Some(1)); // borrowed lookup: `String: Borrow<str>`
    /// assert_eq!(m.load(&"k".to_string()), Some(1));
    /// assert_eq!(m.load("missing"), None);
    /// ```
    #[inline]
    pub fn load<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (h, s) = self.shard(key);
        s.load(h, key)
    }

    /// Stores `value` for `key` (Go's `Store`). An overwrite of a key present in the read
    /// snapshot is one CAS, with no lock.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, "a");
    /// m.store(1, "b");
    /// assert_eq!(m.load(&1), Some("b"));
    /// ```
    pub fn store(&self, key: K, value: V) {
        let (h, s) = self.shard(&key);
        s.store(h, key, value)
    }

    /// Stores `value` for `key` and returns the previous value, if any (Go's `Swap`).
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// assert_eq!(m.swap(1, "a"), None);
    /// assert_eq!(m.swap(1, "b"), Some("a"));
    /// ```
    pub fn swap(&self, key: K, value: V) -> Option<V> {
        let (h, s) = self.shard(&key);
        s.swap(h, key, value)
    }

    /// Returns the existing value for `key` if present (`true`: loaded); otherwise stores
    /// `value` and returns a clone of it (`false`: stored). Go's `LoadOrStore`. Among racing
    /// calls for a new key, exactly one stores; the others load its value.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// assert_eq!(m.load_or_store("k", 1), (1, false));
    /// assert_eq!(m.load_or_store("k", 2), (1, true));
    /// ```
    pub fn load_or_store(&self, key: K, value: V) -> (V, bool) {
        let (h, s) = self.shard(&key);
        s.load_or_store(h, key, value)
    }

    /// Deletes `key` and returns its value, if it was present (Go's `LoadAndDelete`). The value
    /// is a clone: readers may still be looking at the stored one.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, "a");
    /// assert_eq!(m.load_and_delete(&1), Some("a"));
    /// assert_eq!(m.load_and_delete(&1), None);
    /// ```
    pub fn load_and_delete<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (h, s) = self.shard(key);
        s.load_and_delete(h, key)
    }

    /// Deletes `key` (Go's `Delete`).
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, "a");
    /// m.delete(&1);
    /// assert_eq!(m.load(&1), None);
    /// m.delete(&2); // absent: nothing happens
    /// ```
    pub fn delete<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (h, s) = self.shard(key);
        s.delete(h, key)
    }

    /// Swaps in `new` if the value stored for `key` equals `old` (Go's `CompareAndSwap`);
    /// returns whether it did. A missing key never matches.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, 10);
    /// assert!(!m.compare_and_swap(&1, &11, 12));
    /// assert!(m.compare_and_swap(&1, &10, 12));
    /// assert_eq!(m.load(&1), Some(12));
    /// assert!(!m.compare_and_swap(&2, &10, 12)); // missing key
    /// ```
    pub fn compare_and_swap<Q>(&self, key: &Q, old: &V, new: V) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: PartialEq,
    {
        let (h, s) = self.shard(key);
        s.compare_and_swap(h, key, old, new)
    }

    /// Deletes `key` if its value equals `old` (Go's `CompareAndDelete`); returns whether it
    /// did. A missing key never matches.
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// m.store(1, 10);
    /// assert!(!m.compare_and_delete(&1, &11));
    /// assert!(m.compare_and_delete(&1, &10));
    /// assert_eq!(m.load(&1), None);
    /// ```
    pub fn compare_and_delete<Q>(&self, key: &Q, old: &V) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: PartialEq,
    {
        let (h, s) = self.shard(key);
        s.compare_and_delete(h, key, old)
    }

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
        for s in self.shards.iter() {
            if !s.range(&mut f) {
                return;
            }
        }
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
        // Every shard is cleared even if a destructor panics in one of them; the first panic is
        // resumed at the end.
        let mut all = DropAll::new();
        for s in self.shards.iter() {
            all.run(|| s.clear());
        }
        all.finish();
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
        self.shards.iter().map(|s| s.len()).sum()
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
        self.shards.iter().all(|s| s.is_empty())
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
