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
//!   Unlike Go, the copy (which clones keys: user code) is made with the lock released, and
//!   installed under the lock only if `dirty` is still nil and `read.m` is still the table
//!   that was copied; otherwise the store copies again (`Map::amend_locked`).
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
//! # User code and the lock
//!
//! No user code runs under `mu` but the `Hash` and `Eq` of keys (and the hasher) that the
//! dirty `HashMap` needs; a call back into the map from those panics instead of deadlocking
//! (`reclaim::LockScope`). Clones happen after unlocking, keys and entries taken out of
//! `dirty` are dropped after unlocking, and the epoch collector never runs on a thread that
//! holds `mu` (`reclaim.rs`). See "User code the map runs" on [`Map`], and `dropping.rs` for
//! destructors that panic.
//!
//! # Memory
//!
//! Values live in their own heap slots, immutable once stored; replacing or deleting a value
//! retires its slot to crossbeam-epoch, and so does replacing `read`. A load pins the thread
//! (cheap, thread-local: inside a G's poll it only borrows the poll's pin), reads through the
//! snapshot and clones the value before unpinning. Inside a poll, retired objects are handed to
//! crossbeam-epoch in batches (see `reclaim.rs`). Live values are dropped when the map is
//! dropped; retired ones when the epoch advances past every thread that could still see them.
//!
//! # Hashing
//!
//! The tables hash with `S`, except that std's `RandomState` with a primitive integer key gets
//! a keyed folded-multiply hash instead of SipHash (`hash.rs`).

#[cfg(test)]
mod check;
mod dropping;
mod entry;
mod hash;
mod reclaim;
#[cfg(all(test, not(loom)))]
mod tests;
mod walk;

use self::dropping::DropAll;
use self::entry::{Entry, LoadOrStore, Slot, Unpublished};
use self::hash::Hashing;
use self::reclaim::{Guard, LockScope, Reclaim, Reclaimer, Tracked};
use crate::loom::{Arc, AtomicPtr, Mutex, MutexGuard, Ordering::*};
use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// A key-to-entry table: `read.m` (shared, immutable) or `dirty`. A plain `HashMap` but for its
/// drop, which runs each key's and entry's destructor on its own (see `dropping.rs`).
struct Table<K, V, S>(HashMap<K, Arc<Entry<V>>, Hashing<K, S>>);

impl<K, V, S> Deref for Table<K, V, S> {
    type Target = HashMap<K, Arc<Entry<V>>, Hashing<K, S>>;

    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<K, V, S> DerefMut for Table<K, V, S> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<K, V, S> Drop for Table<K, V, S> {
    fn drop(&mut self) {
        let mut all = DropAll::new();
        all.drop_pairs(self.0.drain());
        all.finish();
    }
}

/// A copy of a `read.m` taken without the lock, to become the new `dirty` (see
/// `Map::amend_locked`).
struct DirtyCopy<K, V, S> {
    /// The table it copies (kept alive, so that its address identifies it).
    src: Arc<Table<K, V, S>>,
    /// The entries of `src` that held a value when copied.
    table: Table<K, V, S>,
    /// The others (nil when copied): to be expunged, or put into `dirty` after all if they got
    /// a value since.
    deleted: Garbage<K, V>,
}

/// What `load_or_store` offers to store: its value, or (for a key that was not in `read`) an
/// entry already built around it, which no other thread has seen.
enum Offer<V> {
    Value(V),
    Fresh(Arc<Entry<V>>),
}

impl<V> Offer<V> {
    /// The value, taken back out of the entry if one was built (no user code runs: the value
    /// is moved, the entry's memory freed).
    fn into_value(self) -> V {
        match self {
            Offer::Value(v) => v,
            Offer::Fresh(e) => match Arc::try_unwrap(e) {
                Ok(e) => e.into_value(),
                Err(_) => unreachable!("sync.Map: an unpublished entry was shared"),
            },
        }
    }

    /// An entry holding the value.
    fn into_entry(self) -> Arc<Entry<V>> {
        match self {
            Offer::Value(v) => Arc::new(Entry::new(Unpublished::new(v))),
            Offer::Fresh(e) => e,
        }
    }
}

/// Keys and entries taken out of `dirty` under the lock, dropped after unlocking.
type Garbage<K, V> = Vec<(K, Arc<Entry<V>>)>;

/// Drops, after unlocking, what a store's locked section left over: a dirty copy that turned
/// out stale or unneeded, and what a dirty rebuild took out. Each object on its own: two
/// panicking key destructors must not abort (see `dropping.rs`).
#[inline]
fn drop_leftovers<K, V, S>(copy: Option<DirtyCopy<K, V, S>>, garbage: Garbage<K, V>) {
    if copy.is_some() || garbage.capacity() != 0 {
        drop_leftovers_slow(copy, garbage);
    }
}

#[cold]
fn drop_leftovers_slow<K, V, S>(copy: Option<DirtyCopy<K, V, S>>, garbage: Garbage<K, V>) {
    let mut all = DropAll::new();
    all.drop(copy);
    all.drop_pairs(garbage.into_iter());
    all.finish();
}

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

/// `mu`, held by this thread (see [`Map::lock`]). Dereferences to what `mu` guards.
struct Locked<'a, K, V, S> {
    d: MutexGuard<'a, Dirty<K, V, S>>,
    /// Declared after `d`, so dropped after the unlock: ends the no-collection section and runs
    /// the flush a promotion asked for.
    scope: LockScope<'a>,
}

impl<K, V, S> Deref for Locked<'_, K, V, S> {
    type Target = Dirty<K, V, S>;

    fn deref(&self) -> &Dirty<K, V, S> {
        &self.d
    }
}

impl<K, V, S> DerefMut for Locked<'_, K, V, S> {
    fn deref_mut(&mut self) -> &mut Dirty<K, V, S> {
        &mut self.d
    }
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
/// hasher's hashing)** ever run under the map's internal lock: the dirty `HashMap` needs them to
/// find a key. They must not call back into the same map: such a call would deadlock the thread,
/// so it is detected and panics instead (the lock is released and the map stays usable). Keep
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
/// locked section does a bounded amount of work, at most one pass over the map's entries.
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
    /// The tables' hashing: `S`, or a fast keyed hash for the default `S` (see `hash.rs`).
    hash_builder: Hashing<K, S>,
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
        let hash_builder = Hashing::new(hash_builder);
        let empty = ReadOnly::new(Arc::new(Table(HashMap::with_hasher(hash_builder.clone()))), false);
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

    /// Locks `mu`. Panics instead if this thread already holds it (a key's `Hash` or `Eq`
    /// calling back into the map). Until the returned guard is dropped, this thread runs no
    /// epoch collection, so no destructor runs under the lock.
    #[inline]
    fn lock<'a>(&'a self, g: &'a Guard<'_>) -> Locked<'a, K, V, S> {
        let scope = LockScope::enter(self as *const Self as usize, g);
        Locked { d: self.mu.lock(), scope }
    }

    /// Replaces `read` (lock held: `_l` is the proof) and retires the old snapshot.
    fn store_read_locked(&self, new: ReadOnly<K, V, S>, _l: &mut Locked<'_, K, V, S>, g: &Guard<'_>) {
        let old = self.read.swap(Box::into_raw(Box::new(new)), AcqRel);
        // SAFETY: `old` came from `Box::into_raw`; the swap unlinked it, so loads that start
        // now get the new snapshot; only the thread whose swap removed it retires it, once. A
        // `ReadOnly` holds only `K`, `V`, `S` data (all `Send + 'static`).
        unsafe { g.retire(old) };
    }

    /// An empty table with a clone of the map's hasher (user code: never under the lock).
    fn empty_table(&self) -> Table<K, V, S> {
        Table(HashMap::with_hasher(self.hash_builder.clone()))
    }

    /// Go's `missLocked`: counts a locked lookup; promotes `dirty` once the misses have paid
    /// for the copy.
    fn miss_locked(&self, l: &mut Locked<'_, K, V, S>, g: &Guard<'_>) {
        l.misses += 1;
        if l.misses < l.m.as_ref().map_or(0, |m| m.len()) {
            return;
        }
        self.promote_locked(l, g);
    }

    /// `read.Store(&readOnly{m: m.dirty}); m.dirty = nil; m.misses = 0`. `dirty` exists: a
    /// promotion follows a miss or a range of an amended `read` (invariant 3).
    fn promote_locked(&self, l: &mut Locked<'_, K, V, S>, g: &Guard<'_>) {
        let m = l.m.take().expect("sync.Map invariant broken: a promotion without a dirty map");
        self.store_read_locked(ReadOnly::new(Arc::new(m), false), l, g);
        l.misses = 0;
        // The old snapshot's table may be large: let any thread free it soon. Not under the
        // lock: collecting runs destructors (user code).
        l.scope.flush_on_unlock();
    }

    /// Copies `src` (a `read.m`) without the lock, to become `dirty`: cloning keys and hashing
    /// them is user code. Go's `dirtyLocked` does it under the lock.
    #[cold]
    fn copy_table(&self, src: Arc<Table<K, V, S>>) -> DirtyCopy<K, V, S> {
        let mut table = Table(HashMap::with_capacity_and_hasher(src.len(), self.hash_builder.clone()));
        let mut deleted = Vec::new();
        for (k, e) in src.iter() {
            if e.has_value() {
                table.insert(k.clone(), Arc::clone(e));
            } else {
                deleted.push((k.clone(), Arc::clone(e)));
            }
        }
        DirtyCopy { src, table, deleted }
    }

    /// Before a new key goes into `dirty` (lock held, the key in neither map): makes sure that
    /// `dirty` exists and `read` is amended (Go's `if !read.amended { m.dirtyLocked();
    /// m.read.Store(&readOnly{m: read.m, amended: true}) }`).
    ///
    /// Go's `dirtyLocked` copies `read.m` under the lock; here the copy is made by the caller
    /// with the lock released ([`copy_table`](Self::copy_table)), because it clones keys. This
    /// returns `Err(src)` when `dirty` must be built and `copy` is not a copy of the current
    /// `read.m`: the caller unlocks, copies `src` into `copy` and starts over.
    ///
    /// A copy is current if `dirty` is still nil and `read.m` is still the table it copied:
    /// `dirty` becomes nil only by a promotion, which replaces `read.m`, so no locked code ran on
    /// the entries since the copy (none was expunged or unexpunged; none is expunged while
    /// `dirty` is nil); lock-free stores and deletes only moved entries between a value and
    /// nil. The copy splits the entries by their state when copied: those with a value become
    /// `dirty` as they are (one that was deleted since stays in `dirty` as nil, as any entry
    /// deleted after a rebuild does); those that were nil are expunged now, unless they got a
    /// value since: those go into `dirty` too (hashing the key under the lock, as Go does for
    /// every key). Invariants 1 and 2 hold after it. Expunged entries are taken out into
    /// `garbage`, dropped by the caller after unlocking. Stores of new keys that race here may
    /// each make a copy; one is installed and the others are dropped: some wasted work, only
    /// on the first new key after a promotion, in exchange for no key clone under the lock.
    #[inline(always)] // the common case is the first test
    fn amend_locked(
        &self,
        l: &mut Locked<'_, K, V, S>,
        read: &ReadOnly<K, V, S>,
        copy: &mut Option<DirtyCopy<K, V, S>>,
        garbage: &mut Garbage<K, V>,
        g: &Guard<'_>,
    ) -> Result<(), Arc<Table<K, V, S>>> {
        if read.amended {
            return Ok(());
        }
        if l.m.is_none() {
            match copy.take() {
                Some(DirtyCopy { src, table, deleted }) if Arc::ptr_eq(&src, &read.m) => {
                    l.m = Some(table);
                    for (k, e) in deleted {
                        if e.try_expunge_locked() {
                            garbage.push((k, e)); // a move: dropped by the caller
                        } else {
                            Self::dirty_mut(l).insert(k, e);
                        }
                    }
                    // `src` is `read.m`, which `read` still holds: not its last `Arc`.
                    drop(src);
                }
                stale => {
                    *copy = stale; // dropped by the caller, after unlocking
                    return Err(Arc::clone(&read.m));
                }
            }
        }
        self.store_read_locked(ReadOnly::new(Arc::clone(&read.m), true), l, g);
        Ok(())
    }

    /// The dirty map, which must exist here (invariants 1 and 3).
    fn dirty_mut<'d>(l: &'d mut Locked<'_, K, V, S>) -> &'d mut Table<K, V, S> {
        l.m.as_mut().expect("sync.Map invariant broken: an expunged entry or an amended read without a dirty map")
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
            let mut l = self.lock(g);
            // Avoid reporting a spurious miss if `dirty` got promoted while we waited for `mu`.
            let read = self.load_read(g);
            match read.m.get(key) {
                Some(e) => Arc::clone(e),
                None if read.amended => {
                    let e = l.m.as_ref().and_then(|m| m.get(key)).cloned();
                    // Present or not, this key takes the slow path until the next promotion.
                    self.miss_locked(&mut l, g);
                    drop(l);
                    e?
                }
                None => return None,
            }
        };
        // Unlocked: cloning is user code.
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

        // Dropped after the loop, so after unlocking: a dirty copy that turned out stale or
        // unneeded, and what a dirty rebuild took out. (So is `key`, when it is not moved into
        // `dirty`.)
        let mut copy = None;
        let mut garbage = Vec::new();
        let old = loop {
            let mut l = self.lock(g);
            let read = self.load_read(g);
            if let Some(e) = read.m.get(&key) {
                if e.is_expunged() {
                    // The entry was expunged: `dirty` exists and lacks it. Put it back before
                    // unexpunging (stable under the lock), so that `dirty` keeps every
                    // non-expunged entry of `read`, even if hashing the key panics.
                    Self::dirty_mut(&mut l).insert(key, Arc::clone(e));
                    let unexpunged = e.unexpunge_locked();
                    debug_assert!(unexpunged);
                }
                break e.swap_locked(new, g);
            }
            if let Some(e) = l.m.as_ref().and_then(|m| m.get(&key)) {
                break e.swap_locked(new, g);
            }
            match self.amend_locked(&mut l, read, &mut copy, &mut garbage, g) {
                Ok(()) => {
                    Self::dirty_mut(&mut l).insert(key, Arc::new(Entry::new(new)));
                    break None;
                }
                Err(src) => {
                    drop(l);
                    drop(copy.take());
                    copy = Some(self.copy_table(src)); // and try again
                }
            }
        };
        drop_leftovers(copy, garbage);
        old
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
        let (value, absent) = match read.m.get(&key) {
            Some(e) => match e.try_load_or_store(value, g) {
                LoadOrStore::Loaded(s, _) => return (s.value().clone(), true),
                LoadOrStore::Stored(s) => return (s.value().clone(), false),
                LoadOrStore::Expunged(value) => (value, false),
            },
            None => (value, true),
        };
        // A key absent from `read` is most likely new (a growing map's steady state): its entry
        // is built now, before locking, so that the locked section only links it in.
        let seen = Arc::as_ptr(&read.m);
        let offer =
            if absent { Offer::Fresh(Arc::new(Entry::new(Unpublished::new(value)))) } else { Offer::Value(value) };

        // Dropped after the loop, so after unlocking, as in `swap_inner`; and `held`, the entry
        // whose slot the result is cloned from (its current slot lives as long as it does).
        let mut copy = None;
        let mut garbage = Vec::new();
        let mut held: Option<Arc<Entry<V>>> = None;
        let r = loop {
            let mut l = self.lock(g);
            let read = self.load_read(g);
            // A `read.m` is immutable: if it is still the table that lacked the key above (it
            // cannot be freed and its address reused while `g` lives), it still lacks it.
            let in_read = if absent && std::ptr::eq(Arc::as_ptr(&read.m), seen) { None } else { read.m.get(&key) };
            if let Some(e) = in_read {
                if e.is_expunged() {
                    Self::dirty_mut(&mut l).insert(key, Arc::clone(e));
                    let unexpunged = e.unexpunge_locked();
                    debug_assert!(unexpunged);
                }
                break e.try_load_or_store(offer.into_value(), g);
            }
            if let Some(e) = l.m.as_ref().and_then(|m| m.get(&key)) {
                let e: &Arc<Entry<V>> = held.insert(Arc::clone(e));
                let r = e.try_load_or_store(offer.into_value(), g);
                self.miss_locked(&mut l, g);
                break r;
            }
            match self.amend_locked(&mut l, read, &mut copy, &mut garbage, g) {
                Ok(()) => {
                    let e: &Arc<Entry<V>> = held.insert(offer.into_entry());
                    // Nobody else sees the entry yet: its value is ours.
                    let stored = e.load(g).expect("a new entry holds its value");
                    Self::dirty_mut(&mut l).insert(key, Arc::clone(e));
                    break LoadOrStore::Stored(stored);
                }
                Err(src) => {
                    drop(l);
                    drop(copy.take());
                    copy = Some(self.copy_table(src)); // and try again
                }
            }
        };
        // Unlocked: clone the result, drop the value that was not stored.
        let out = match r {
            LoadOrStore::Loaded(s, unused) => {
                let v = s.value().clone();
                drop(unused);
                (v, true)
            }
            LoadOrStore::Stored(s) => (s.value().clone(), false),
            LoadOrStore::Expunged(_) => unreachable!("sync.Map: entry expunged while the lock is held"),
        };
        drop_leftovers(copy, garbage);
        out
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
        // `_key`: the key taken out of `dirty`, dropped after unlocking.
        let (e, _key) = {
            let mut l = self.lock(g);
            let read = self.load_read(g);
            match read.m.get(key) {
                Some(e) => (Arc::clone(e), None),
                None if read.amended => {
                    let removed = l.m.as_mut().and_then(|m| m.remove_entry(key));
                    // Present or not, this key takes the slow path until the next promotion.
                    self.miss_locked(&mut l, g);
                    drop(l);
                    let (k, e) = removed?;
                    (e, Some(k))
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
        let mut l = self.lock(g);
        let read = self.load_read(g);
        if let Some(e) = read.m.get(key) {
            return Some(Arc::clone(e));
        }
        let e = l.m.as_ref().and_then(|m| m.get(key)).cloned();
        if e.is_some() {
            // The key's set did not change, but we needed the lock to find the entry: count
            // a miss so that the map eventually reaches its fast steady state.
            self.miss_locked(&mut l, g);
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
        let dirty = self.mu.lock().m.take();
        // Every destructor runs, in this thread, and the first panic is resumed here at the end.
        let mut all = DropAll::new();
        let entries = read.m.values().chain(dirty.iter().flat_map(|m| m.values()));
        // SAFETY: `&mut self`: no operation on this map is running or can start, so nobody
        // reads these entries' values. Freeing them now (rather than when retired snapshots
        // that share the entries are collected) makes dropping the map drop every live value at
        // once. (A value whose destructor panics is already out of its entry.)
        all.run_each(entries, |e| unsafe { e.drop_value_now() });
        all.drop(dirty);
        all.drop(read);
        all.finish();
    }
}
