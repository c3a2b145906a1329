//! [`Map`]: Go's classic `sync.Map` (Go 1.9 to 1.23, before 1.24 moved to a hash-trie), with
//! the same algorithm and the same names for its parts.
//!
//! # Layout
//!
//! - `read`: an atomic pointer to an immutable `readOnly { m, amended }` snapshot. `m` maps keys
//!   to entries and is shared (`Arc`) between snapshots; `amended` says that `dirty` holds some
//!   key that `m` lacks. `read` is loaded without the lock; it is only replaced with the lock
//!   held, and a replaced snapshot is retired to the epoch collector (see `reclaim.rs`).
//! - `mu` guards `dirty` (a `HashMap`, or nil) and `misses`. When `dirty` exists it holds every
//!   non-expunged entry of `read.m` plus the keys stored since the last promotion.
//! - An entry (`entry.rs`) is an atomic pointer `p` to an immutable value slot, or nil
//!   (deleted), or `expunged` (deleted and absent from `dirty`). The same entry object is shared
//!   by `read.m` and `dirty`, so a store to a key present in `read` is one CAS on its entry, with
//!   no lock, and is visible through both maps.
//!
//! # The moves
//!
//! - **load** of a key in `read.m`: no lock, no allocation, no shared write. A miss with
//!   `amended` takes the lock, looks again in `read` (it may have been promoted meanwhile), then
//!   in `dirty`, and counts a *miss*.
//! - **promotion** (`missLocked`): once `misses >= len(dirty)`, `dirty` becomes the new `read.m`
//!   (`amended = false`), `dirty` becomes nil and `misses` 0. A copy costs `len(dirty)`, and
//!   that many locked lookups paid for it.
//! - **first new key after a promotion** (`dirtyLocked`): `dirty` is rebuilt from `read.m`:
//!   non-expunged entries are copied, nil ones are expunged (`tryExpungeLocked`) and left out;
//!   then `read` is replaced by `{ m: read.m, amended: true }` and the key goes into `dirty`.
//! - **store to an expunged entry**: under the lock, `unexpungeLocked` (expunged → nil) and put
//!   the entry back into `dirty` before unlocking, then store.
//! - **range**: if `amended`, promote `dirty` at once under the lock (range is O(n) anyway), then
//!   iterate the snapshot without the lock.
//!
//! # Invariants (checked by the loom models and the tests)
//!
//! 1. An expunged entry is never in `dirty`, and an entry in `dirty` is never expunged.
//! 2. If `dirty` exists, every non-expunged entry of `read.m` is in `dirty` (the same entry).
//! 3. `read.amended` implies `dirty` exists. (Go's comment says more, "`dirty` contains some
//!    key not in `m`", but a `LoadAndDelete` of a dirty-only key can leave `amended` set with no
//!    such key until the next promotion; that only costs locked lookups, as in Go.)
//! 4. Hence a key that is present is never missed by a load: it is in `read.m`, or in `dirty`
//!    with `amended` set, and the locked re-check of `read` covers a promotion that raced with
//!    the first look.
//! 5. Entry states change only as `entry.rs` describes: nil → expunged and expunged → nil only
//!    with the lock held.
//!
//! Go's memory-model promise holds: a write (`store`, `delete`, ...) happens-before any read
//! operation that observes it (Release on every publish, Acquire on every load).
//!
//! # Memory
//!
//! Values live in their own heap slots, immutable once stored; replacing or deleting a value
//! retires its slot to crossbeam-epoch, and so does replacing `read`. A load pins the thread
//! (cheap, thread-local), reads through the snapshot and clones the value before unpinning. Live
//! values are dropped when the map is dropped; retired ones when the epoch advances past every
//! thread that could still see them.

#[cfg(test)]
mod check;
mod entry;
mod reclaim;
#[cfg(all(test, not(loom)))]
mod tests;
mod walk;

use self::entry::{Entry, Slot, Unpublished};
use self::reclaim::{Guard, Reclaim, Reclaimer, Tracked};
use crate::loom::{Arc, AtomicPtr, Mutex, MutexGuard, Ordering::*};
use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

type Table<K, V, S> = HashMap<K, Arc<Entry<V>>, S>;

/// Go's `readOnly`: an immutable snapshot, swapped atomically into `Map::read`.
struct ReadOnly<K, V, S> {
    m: Arc<Table<K, V, S>>,
    /// `dirty` may contain some key not in `m` (so a miss must look there).
    amended: bool,
    tracked: Tracked,
}

impl<K, V, S> ReadOnly<K, V, S> {
    fn new(m: Arc<Table<K, V, S>>, amended: bool) -> ReadOnly<K, V, S> {
        ReadOnly { m, amended, tracked: Tracked::new() }
    }
}

impl<K, V, S> Reclaim for ReadOnly<K, V, S> {
    fn tracked(&self) -> &Tracked {
        &self.tracked
    }
}

/// What `mu` guards.
struct Dirty<K, V, S> {
    /// Go's `dirty`: `None` is Go's nil map.
    m: Option<Table<K, V, S>>,
    /// Locked lookups since `read` was last replaced by a promotion.
    misses: usize,
}

/// A concurrent map: Go's `sync.Map`, with the same algorithm (Go 1.9 to 1.23).
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
/// is one CAS on that key's entry. It loses when new keys keep arriving, or keys are deleted
/// and re-added (each round of that goes through the lock and eventually copies the map), and
/// when every operation needs the lock anyway; prefer `dashmap` or a `Mutex<HashMap>` then.
///
/// Differences from Go, all forced by Rust:
///
/// - Values are returned by clone (`V: Clone`): a load clones the value while the entry is
///   pinned; use `Arc<T>` for values that are expensive to clone. A store allocates a small
///   box for the value, as Go boxes it in an interface.
/// - `K`, `V` and `S` must be `Send + 'static`: a replaced value may be dropped later, on
///   another thread, by the epoch collector.
/// - `range` hands out references to a clone of each value (taken under a short pin per entry),
///   so the callback may block or take as long as it likes without holding up reclamation.
/// - [`len`](Map::len) and [`is_empty`](Map::is_empty) exist (Go has none); both walk the map.
///
/// The user code that the map calls (`K`'s `Hash`, `Eq` and `Clone`, `V`'s `Clone` and
/// `PartialEq`) may run while the map's internal lock is held, so it must not call back into
/// the same map.
///
/// The lock is a short, thread-blocking lock (Go's `sync.Mutex` parks the goroutine instead): a
/// locked section does a bounded amount of work, at most one copy of the map.
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
    /// Go's `read`: never null, a `Box<ReadOnly>` from `Box::into_raw`.
    read: AtomicPtr<ReadOnly<K, V, S>>,
    /// Go's `mu`, with what it guards.
    mu: Mutex<Dirty<K, V, S>>,
    hash_builder: S,
    reclaim: Reclaimer,
    /// The map owns `K`s and `V`s; `Send`/`Sync` are implemented by hand below (the atomic
    /// pointers would otherwise make the map `Send + Sync` for any `K` and `V`).
    _owns: PhantomData<(K, V, *const ())>,
}

// SAFETY: a `Map` owns its keys, values and hasher, so moving it to another thread moves them.
unsafe impl<K: Send, V: Send, S: Send> Send for Map<K, V, S> {}

// SAFETY: through `&Map`, any thread may read keys and values by reference and clone them (so
// `K, V: Sync`), move keys and values in and out, or have them dropped on another thread by the
// epoch collector (so `K, V: Send`), and hash with the builder or drop clones of it elsewhere
// (`S: Send + Sync`). Everything else is atomics and a mutex.
unsafe impl<K: Send + Sync, V: Send + Sync, S: Send + Sync> Sync for Map<K, V, S> {}

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
    /// An empty map that hashes keys with `hash_builder` (a faster hasher than std's default
    /// SipHash speeds up every operation, at the usual cost in HashDoS resistance).
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// let m = goro::sync::Map::with_hasher(RandomState::new());
    /// m.store(1, "one");
    /// assert_eq!(m.load(&1), Some("one"));
    /// ```
    pub fn with_hasher(hash_builder: S) -> Map<K, V, S> {
        let empty = ReadOnly::new(Arc::new(HashMap::with_hasher(hash_builder.clone())), false);
        Map {
            read: AtomicPtr::new(Box::into_raw(Box::new(empty))),
            mu: Mutex::new(Dirty { m: None, misses: 0 }),
            hash_builder,
            reclaim: Reclaimer::new(),
            _owns: PhantomData,
        }
    }

    /// Go's `loadReadOnly`: the current snapshot, valid while `g` lives.
    #[inline]
    fn load_read<'g>(&'g self, _g: &'g Guard<'_>) -> &'g ReadOnly<K, V, S> {
        let p = self.read.load(Acquire);
        // SAFETY: `read` always holds a pointer from `Box::into_raw` (set in `with_hasher`,
        // replaced only by `store_read_locked`, which retires the old one). `_g` was pinned
        // before this load, so a snapshot retired after it is not freed before `_g` drops, and
        // the borrow is tied to `_g`.
        let read = unsafe { &*p };
        read.tracked.access();
        read
    }

    /// Replaces `read` (lock held: `_d` is the proof) and retires the old snapshot.
    fn store_read_locked(&self, new: ReadOnly<K, V, S>, _d: &mut Dirty<K, V, S>, g: &Guard<'_>) {
        let old = self.read.swap(Box::into_raw(Box::new(new)), AcqRel);
        // SAFETY: `old` came from `Box::into_raw`; the swap unlinked it, so loads that start
        // now get the new snapshot; only the thread whose swap removed it retires it, once. A
        // `ReadOnly` holds only `K`, `V`, `S` data (all `Send + 'static`).
        unsafe { g.retire(old) };
    }

    fn empty_table(&self) -> Table<K, V, S> {
        HashMap::with_hasher(self.hash_builder.clone())
    }

    /// Go's `missLocked`: counts a locked lookup; promotes `dirty` once the misses have paid
    /// for the copy.
    fn miss_locked(&self, d: &mut Dirty<K, V, S>, g: &Guard<'_>) {
        d.misses += 1;
        if d.misses < d.m.as_ref().map_or(0, HashMap::len) {
            return;
        }
        self.promote_locked(d, g);
    }

    /// `read.Store(&readOnly{m: m.dirty}); m.dirty = nil; m.misses = 0`.
    fn promote_locked(&self, d: &mut Dirty<K, V, S>, g: &Guard<'_>) {
        let m = d.m.take().unwrap_or_else(|| self.empty_table());
        self.store_read_locked(ReadOnly::new(Arc::new(m), false), d, g);
        d.misses = 0;
        // The old snapshot's table may be large: let any thread free it soon.
        g.flush();
    }

    /// Go's `dirtyLocked`: if `dirty` is nil, rebuilds it from `read.m`, expunging nil entries.
    fn dirty_locked(&self, d: &mut Dirty<K, V, S>, read: &ReadOnly<K, V, S>) {
        if d.m.is_some() {
            return;
        }
        // Copy first (user code runs here: `K::clone` and `K::hash`; a panic leaves the map as
        // it was), then expunge (atomics only). Expunged entries stay expunged while we hold
        // the lock, so skipping them early is safe.
        let mut m = HashMap::with_capacity_and_hasher(read.m.len(), self.hash_builder.clone());
        for (k, e) in read.m.iter() {
            if !e.is_expunged() {
                m.insert(k.clone(), Arc::clone(e));
            }
        }
        m.retain(|_, e: &mut Arc<Entry<V>>| !e.try_expunge_locked());
        d.m = Some(m);
    }

    /// The dirty map, which must exist here (invariants 1 and 3).
    fn dirty_mut<'d>(d: &'d mut MutexGuard<'_, Dirty<K, V, S>>) -> &'d mut Table<K, V, S> {
        d.m.as_mut().expect("sync.Map invariant broken: an expunged entry or an amended read without a dirty map")
    }

    /// Returns the value stored for `key`, or `None` (Go's `Load`).
    ///
    /// A key present in the read snapshot (the steady state of a read-mostly map) costs an
    /// epoch pin, one atomic load of the snapshot, one hash lookup, one atomic load of the
    /// entry and a clone of the value: no lock, no allocation, no shared write.
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
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        match read.m.get(key) {
            Some(e) => e.load(&g).map(|s| s.value().clone()),
            None if !read.amended => None,
            None => self.load_locked(key, &g),
        }
    }

    /// The locked half of `load`.
    #[cold]
    fn load_locked<Q>(&self, key: &Q, g: &Guard<'_>) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let e = {
            let mut d = self.mu.lock();
            // Avoid reporting a spurious miss if `dirty` got promoted while we waited for `mu`.
            let read = self.load_read(g);
            match read.m.get(key) {
                Some(e) => Arc::clone(e),
                None if read.amended => {
                    let e = d.m.as_ref().and_then(|m| m.get(key)).cloned();
                    // Present or not, this key takes the slow path until the next promotion.
                    self.miss_locked(&mut d, g);
                    e?
                }
                None => return None,
            }
        };
        let v = e.load(g).map(|s| s.value().clone());
        v
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
        let g = self.reclaim.pin();
        self.swap_inner(key, value, &g);
    }

    /// Stores `value` for `key` and returns the previous value, if any (Go's `Swap`).
    ///
    /// ```
    /// let m = goro::sync::Map::new();
    /// assert_eq!(m.swap(1, "a"), None);
    /// assert_eq!(m.swap(1, "b"), Some("a"));
    /// ```
    pub fn swap(&self, key: K, value: V) -> Option<V> {
        let g = self.reclaim.pin();
        self.swap_inner(key, value, &g).map(|s| s.value().clone())
    }

    /// Go's `Swap`; the old value's slot is already retired and readable while `g` lives.
    fn swap_inner<'g>(&'g self, key: K, value: V, g: &'g Guard<'_>) -> Option<&'g Slot<V>> {
        let new = Unpublished::new(value);
        let read = self.load_read(g);
        let new = match read.m.get(&key) {
            Some(e) => match e.try_swap(new, g) {
                Ok(old) => return old,
                Err(new) => new,
            },
            None => new,
        };

        let mut d = self.mu.lock();
        let read = self.load_read(g);
        if let Some(e) = read.m.get(&key) {
            if e.unexpunge_locked() {
                // The entry was expunged: `dirty` exists and lacks it. Put it back before
                // unlocking, so that `dirty` keeps every non-expunged entry of `read`.
                Self::dirty_mut(&mut d).insert(key, Arc::clone(e));
            }
            e.swap_locked(new, g)
        } else if let Some(e) = d.m.as_ref().and_then(|m| m.get(&key)) {
            e.swap_locked(new, g)
        } else {
            if !read.amended {
                // The first new key since the last promotion: build `dirty` and mark `read`
                // incomplete.
                self.dirty_locked(&mut d, read);
                self.store_read_locked(ReadOnly::new(Arc::clone(&read.m), true), &mut d, g);
            }
            Self::dirty_mut(&mut d).insert(key, Arc::new(Entry::new(new)));
            None
        }
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
        let g = self.reclaim.pin();
        let g = &g;
        // Avoid locking if it's a clean hit.
        let read = self.load_read(g);
        let value = match read.m.get(&key) {
            Some(e) => match e.try_load_or_store(value, g) {
                Ok(r) => return r,
                Err(value) => value,
            },
            None => value,
        };

        let mut d = self.mu.lock();
        let read = self.load_read(g);
        if let Some(e) = read.m.get(&key) {
            if e.unexpunge_locked() {
                Self::dirty_mut(&mut d).insert(key, Arc::clone(e));
            }
            match e.try_load_or_store(value, g) {
                Ok(r) => r,
                Err(_) => unreachable!("sync.Map: entry expunged while the lock is held"),
            }
        } else if let Some(e) = d.m.as_ref().and_then(|m| m.get(&key)) {
            let r = match e.try_load_or_store(value, g) {
                Ok(r) => r,
                Err(_) => unreachable!("sync.Map invariant broken: an expunged entry in dirty"),
            };
            self.miss_locked(&mut d, g);
            r
        } else {
            if !read.amended {
                self.dirty_locked(&mut d, read);
                self.store_read_locked(ReadOnly::new(Arc::clone(&read.m), true), &mut d, g);
            }
            let actual = value.clone();
            Self::dirty_mut(&mut d).insert(key, Arc::new(Entry::new(Unpublished::new(value))));
            (actual, false)
        }
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
        let g = self.reclaim.pin();
        self.delete_inner(key, &g).map(|s| s.value().clone())
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
        let g = self.reclaim.pin();
        self.delete_inner(key, &g);
    }

    /// Go's `LoadAndDelete`; the deleted value's slot is already retired.
    fn delete_inner<'g, Q>(&'g self, key: &Q, g: &'g Guard<'_>) -> Option<&'g Slot<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let read = self.load_read(g);
        if let Some(e) = read.m.get(key) {
            return e.delete(g);
        }
        if !read.amended {
            return None;
        }
        let e = {
            let mut d = self.mu.lock();
            let read = self.load_read(g);
            match read.m.get(key) {
                Some(e) => Arc::clone(e),
                None if read.amended => {
                    let e = d.m.as_mut().and_then(|m| m.remove(key));
                    // Present or not, this key takes the slow path until the next promotion.
                    self.miss_locked(&mut d, g);
                    e?
                }
                None => return None,
            }
        };
        e.delete(g)
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
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if let Some(e) = read.m.get(key) {
            return e.try_compare_and_swap(old, new, &g);
        }
        if !read.amended {
            return false; // No existing value for key.
        }
        match self.find_locked(key, &g) {
            // Go keeps the lock for the comparison; the entry's CAS loop needs none (the
            // lock-free path above runs it unlocked too), so `V::eq` runs outside the lock.
            Some(e) => e.try_compare_and_swap(old, new, &g),
            None => false,
        }
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
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if let Some(e) = read.m.get(key) {
            return e.try_compare_and_delete(old, &g);
        }
        if !read.amended {
            return false;
        }
        // Go does not delete the key from `dirty` here: the comparison still has to be made.
        // The entry is expunged when `dirty` is next rebuilt.
        match self.find_locked(key, &g) {
            Some(e) => e.try_compare_and_delete(old, &g),
            None => false,
        }
    }

    /// The locked lookup of `CompareAndSwap`/`CompareAndDelete`: `read` again, then `dirty`
    /// (counting a miss when found there).
    #[cold]
    fn find_locked<Q>(&self, key: &Q, g: &Guard<'_>) -> Option<Arc<Entry<V>>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut d = self.mu.lock();
        let read = self.load_read(g);
        if let Some(e) = read.m.get(key) {
            return Some(Arc::clone(e));
        }
        let e = d.m.as_ref().and_then(|m| m.get(key)).cloned();
        if e.is_some() {
            // The key's set did not change, but we needed the lock to find the entry: count
            // a miss so that the map eventually reaches its fast steady state.
            self.miss_locked(&mut d, g);
        }
        e
    }
}

impl<K, V, S> Drop for Map<K, V, S> {
    fn drop(&mut self) {
        let read = self.read.load(Acquire);
        // SAFETY: `read` always holds a live box from `Box::into_raw` (see `load_read`); with
        // `&mut self` no operation is running, so nothing else uses it, and it is freed once.
        let read = unsafe { Box::from_raw(read) };
        let d = self.mu.lock();
        for e in read.m.values().chain(d.m.iter().flat_map(|m| m.values())) {
            // SAFETY: `&mut self`: no operation on this map is running or can start, so nobody
            // reads these entries' values. Freeing them now (rather than when retired
            // snapshots that share the entries are collected) makes dropping the map drop
            // every live value at once.
            unsafe { e.drop_value_now() };
        }
        drop(d);
        drop(read);
    }
}
