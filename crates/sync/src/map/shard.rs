//! [`Shard`]: one shard of a [`Map`](super::Map), the whole of Go's classic `sync.Map` (the
//! module docs of `map`) on the keys whose hash picks it, and the snapshot (`ReadOnly`) and
//! locked state (`Dirty`) it is made of. Its walks (`range`, `len`, `clear`) are in `walk.rs`.

use super::dropping::DropAll;
use super::entry::{Entry, EntryRef, LoadOrStore, Slot, Unpublished};
use super::hash::Hashing;
use super::reclaim::{Guard, LockScope, Reclaim, Reclaimer, Tracked};
use super::slab::Slab;
use super::table::{Place, Table};
use crate::loom::{lock_as_syscall, Arc, AtomicBool, AtomicPtr, Mutex, MutexGuard, Ordering::*};
use crossbeam_utils::CachePadded;
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// A copy of a `read.m` taken without the lock, to become the new `dirty` (see
/// `Shard::amend_locked`).
struct DirtyCopy<K, V, S> {
    /// The snapshot whose table it copies (kept alive, so that its address identifies it).
    src: Arc<ReadOnly<K, V, S>>,
    /// The entries of `src` that held a value when copied.
    table: Table<K, V, S>,
    /// The others (nil when copied): to be expunged, or put into `dirty` after all if they got
    /// a value since.
    deleted: Garbage<K, V>,
}

/// What a store offers to the locked section: its value as it is, or in a slot of its own (a
/// `swap` whose entry in `read` turned out expunged).
enum Offer<V> {
    Value(V),
    Slot(Unpublished<V>),
}

impl<V> Offer<V> {
    /// The value, taken back out of its slot (no user code runs: the value is moved, the memory
    /// freed).
    fn into_value(self) -> V {
        match self {
            Offer::Value(v) => v,
            Offer::Slot(s) => s.into_value(),
        }
    }

    /// The value in a slot of its own, to store into an existing entry.
    fn into_slot(self) -> Unpublished<V> {
        match self {
            Offer::Slot(s) => s,
            Offer::Value(v) => Unpublished::new(v),
        }
    }

    /// A new entry holding the value, carved from the shard's slab (lock held).
    fn into_entry(self, slab: &mut Slab<Entry<V>>) -> EntryRef<V> {
        EntryRef::carve(slab, self.into_value())
    }
}

/// Keys and entries taken out of `dirty` under the lock, dropped after unlocking.
type Garbage<K, V> = Vec<(K, EntryRef<V>)>;

/// Drops, after unlocking, what a store's locked section left over: a dirty copy that turned
/// out stale or unneeded, and what a dirty rebuild took out. Each object on its own: two
/// panicking key destructors must not abort (see `dropping.rs`). Takes them by reference: moved
/// by value, the `Option<DirtyCopy>` (80 bytes, nearly always `None`) would be copied on every
/// store just to be tested.
#[inline]
fn drop_leftovers<K, V, S>(copy: &mut Option<DirtyCopy<K, V, S>>, garbage: &mut Garbage<K, V>) {
    if copy.is_some() || garbage.capacity() != 0 {
        drop_leftovers_slow(copy.take(), std::mem::take(garbage));
    }
}

#[cold]
fn drop_leftovers_slow<K, V, S>(copy: Option<DirtyCopy<K, V, S>>, garbage: Garbage<K, V>) {
    let mut all = DropAll::new();
    all.drop(copy);
    all.drop_pairs(garbage.into_iter());
    all.finish();
}

/// Go's `readOnly`: a snapshot, swapped atomically into `Shard::read`, its table immutable.
///
/// Unlike Go's, `amended` is an atomic flag of the snapshot rather than a field of an immutable
/// value: Go replaces the whole `readOnly` to set it, sharing `m` between the two; here it is set
/// in place (under the lock, from false to true, once per snapshot), so the snapshot can own its
/// table and a load reaches the table's buckets one pointer sooner (shard, snapshot, buckets).
/// A reader still sees `m` and `amended` of one snapshot: a snapshot replaced by a promotion
/// keeps `amended` set, so a reader still holding it takes the lock and looks again.
pub(super) struct ReadOnly<K, V, S> {
    pub(super) m: Table<K, V, S>,
    /// `dirty` may contain some key not in `m` (so a miss must look there).
    amended: AtomicBool,
    tracked: Tracked,
}

impl<K, V, S> ReadOnly<K, V, S> {
    pub(super) fn new(m: Table<K, V, S>, amended: bool) -> ReadOnly<K, V, S> {
        ReadOnly { m, amended: AtomicBool::new(amended), tracked: Tracked::new() }
    }

    /// Go's `read.amended`.
    #[inline(always)]
    pub(super) fn amended(&self) -> bool {
        self.amended.load(Acquire)
    }
}

/// A replaced snapshot, retired to the epoch collector: its `Arc` is dropped once no reader can
/// still reach it through `read` (a `range` may hold another `Arc` of it for longer).
struct Retired<K, V, S>(Arc<ReadOnly<K, V, S>>);

impl<K, V, S> Reclaim for Retired<K, V, S> {
    fn tracked(&self) -> &Tracked {
        &self.0.tracked
    }
}

/// What `mu` guards.
pub(super) struct Dirty<K, V, S> {
    /// Go's `dirty`: `None` is Go's nil map.
    pub(super) m: Option<Table<K, V, S>>,
    /// Locked lookups since `read` was last replaced by a promotion.
    pub(super) misses: usize,
    /// Where the shard's new entries are carved from (`slab.rs`).
    slab: Slab<Entry<V>>,
}

/// `mu`, held by this thread (see [`Shard::lock`]). Dereferences to what `mu` guards.
pub(super) struct Locked<'a, K, V, S> {
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

/// One shard of a [`Map`](super::Map): Go's classic `sync.Map` (the module docs), on the keys
/// whose pick hash falls on it. Nothing in here knows about the other shards.
pub(super) struct Shard<K, V, S> {
    /// Go's `read`: never null, an `Arc<ReadOnly>` from `Arc::into_raw`.
    read: AtomicPtr<ReadOnly<K, V, S>>,
    /// Go's `mu`, with what it guards, on cache lines of its own: every locked store writes
    /// them, and every load reads `read`, which must not move between the cores with them.
    pub(super) mu: CachePadded<Mutex<Dirty<K, V, S>>>,
    /// The tables' hashing: `S`, or a fast keyed hash for the default `S` (see `hash.rs`).
    hash_builder: Hashing<K, S>,
    pub(super) reclaim: Reclaimer,
    /// The address of the whole map's shards, the same for every shard of one map: what
    /// [`LockScope`] knows the map by, so that a key's `Hash` calling back into the map is
    /// caught whichever shard it lands on. Set by [`Map`](super::Map) once the shards are in
    /// place.
    pub(super) map_id: usize,
    /// The map owns `K`s and `V`s; `Send`/`Sync` are implemented by hand below (the atomic
    /// pointers would otherwise make the map `Send + Sync` for any `K` and `V`).
    _owns: PhantomData<(K, V, *const ())>,
}

// SAFETY: a `Shard` owns its keys, values and hasher, so moving it to another thread moves them.
unsafe impl<K: Send, V: Send, S: Send> Send for Shard<K, V, S> {}

// SAFETY: through `&Shard`, any thread may read keys and values by reference and clone them (so
// `K, V: Sync`), move keys and values in and out, or have them dropped on another thread by the
// epoch collector (so `K, V: Send`), and hash with the builder or drop clones of it elsewhere
// (`S: Send + Sync`). Everything else is atomics and a mutex.
unsafe impl<K: Send + Sync, V: Send + Sync, S: Send + Sync> Sync for Shard<K, V, S> {}

impl<K, V, S> Shard<K, V, S>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Clone + Send + 'static,
    S: BuildHasher + Clone + Send + 'static,
{
    /// An empty shard whose tables hash with `hash_builder`.
    pub(super) fn new(hash_builder: Hashing<K, S>) -> Shard<K, V, S> {
        let empty = Arc::new(ReadOnly::new(Table::new(hash_builder.clone()), false));
        Shard {
            read: AtomicPtr::new(Arc::into_raw(empty).cast_mut()),
            mu: CachePadded::new(Mutex::new(Dirty { m: None, misses: 0, slab: Slab::new() })),
            hash_builder,
            reclaim: Reclaimer::new(),
            map_id: 0,
            _owns: PhantomData,
        }
    }

    /// Go's `loadReadOnly`: the current snapshot, valid while `g` lives.
    #[inline]
    pub(super) fn load_read<'g>(&'g self, _g: &'g Guard<'_>) -> &'g ReadOnly<K, V, S> {
        let p = self.read.load(Acquire);
        // SAFETY: `read` always holds a pointer from `Arc::into_raw` (set in `new`, replaced only
        // by `store_read_locked`, which retires the old one with its `Arc`). `_g` was pinned
        // before this load, so a snapshot retired after it keeps that `Arc` until `_g` drops,
        // and the borrow is tied to `_g`.
        let read = unsafe { &*p };
        read.tracked.access();
        read
    }

    /// Locks `mu`. Panics instead if this thread already holds it (a key's `Hash` or `Eq`
    /// calling back into the map). Until the returned guard is dropped, this thread runs no
    /// epoch collection, so no destructor runs under the lock. A G that must wait for `mu` waits
    /// as in a `goro::syscall` (see [`lock_as_syscall`]): a holder can keep it for
    /// milliseconds (copying a large `read` into a new `dirty`, rehashing), and Go's waiter
    /// would not hold up its P meanwhile either.
    #[inline]
    pub(super) fn lock<'a>(&'a self, g: &'a Guard<'_>) -> Locked<'a, K, V, S> {
        let scope = LockScope::enter(self.map_id, g);
        Locked { d: lock_as_syscall(&self.mu), scope }
    }

    /// A counted reference to `read` (a snapshot loaded under a guard), to keep it past the
    /// guard: `range` walks it unpinned, a dirty copy names its source by it.
    pub(super) fn snapshot(&self, read: &ReadOnly<K, V, S>) -> Arc<ReadOnly<K, V, S>> {
        let p: *const ReadOnly<K, V, S> = read;
        // SAFETY: every snapshot `read` ever held came from `Arc::into_raw` (see `load_read`),
        // and `read` was loaded under a guard that still lives (the borrow says so): the `Arc`
        // that `read` or its retirement holds is not dropped yet, so the count is at least one
        // while it is raised, and the new `Arc` owns the count it raised.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }

    /// Replaces `read` (lock held: `_l` is the proof) and retires the old snapshot.
    pub(super) fn store_read_locked(&self, new: ReadOnly<K, V, S>, _l: &mut Locked<'_, K, V, S>, g: &Guard<'_>) {
        let old = self.read.swap(Arc::into_raw(Arc::new(new)).cast_mut(), AcqRel);
        // SAFETY: `old` came from `Arc::into_raw` and the `Arc` it stood for is taken back once,
        // here, by the thread whose swap unlinked it.
        let old = Retired(unsafe { Arc::from_raw(old) });
        // SAFETY: a fresh box, unique; loads that start now get the new snapshot, and those that
        // got the old one did so under guards that the epoch waits for. A `ReadOnly` holds only
        // `K`, `V`, `S` data (all `Send + 'static`).
        unsafe { g.retire(Box::into_raw(Box::new(old))) };
    }

    /// An empty table with a clone of the map's hasher (user code: never under the lock).
    pub(super) fn empty_table(&self) -> Table<K, V, S> {
        Table::new(self.hash_builder.clone())
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
    pub(super) fn promote_locked(&self, l: &mut Locked<'_, K, V, S>, g: &Guard<'_>) {
        let m = l.m.take().expect("sync.Map invariant broken: a promotion without a dirty map");
        self.store_read_locked(ReadOnly::new(m, false), l, g);
        l.misses = 0;
        // The old snapshot's table may be large: let any thread free it soon. Not under the
        // lock: collecting runs destructors (user code).
        l.scope.flush_on_unlock();
    }

    /// Copies `src` (a `read.m`) without the lock, to become `dirty`: cloning keys and hashing
    /// them is user code. Go's `dirtyLocked` does it under the lock.
    #[cold]
    fn copy_table(&self, src: Arc<ReadOnly<K, V, S>>) -> DirtyCopy<K, V, S> {
        let mut table = Table::with_capacity(src.m.len(), self.hash_builder.clone());
        let mut deleted = Vec::new();
        for (k, e) in src.m.iter() {
            if e.has_value() {
                table.insert(table.hash(k), k.clone(), EntryRef::clone(e));
            } else {
                deleted.push((k.clone(), EntryRef::clone(e)));
            }
        }
        DirtyCopy { src, table, deleted }
    }

    /// Before a key absent from `read` is looked for in `dirty` and, if new, put there (lock
    /// held): makes sure that `dirty` exists and `read` is amended (Go's `if !read.amended {
    /// m.dirtyLocked(); m.read.Store(&readOnly{m: read.m, amended: true}) }`, the flag set in
    /// place here).
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
    ) -> Result<(), Arc<ReadOnly<K, V, S>>> {
        if read.amended() {
            return Ok(());
        }
        if l.m.is_none() {
            match copy.take() {
                Some(DirtyCopy { src, table, deleted }) if std::ptr::eq(Arc::as_ptr(&src), read) => {
                    l.m = Some(table);
                    for (k, e) in deleted {
                        if e.try_expunge_locked() {
                            garbage.push((k, e)); // a move: dropped by the caller
                        } else {
                            let dirty = Self::dirty_mut(l);
                            dirty.insert(dirty.hash(&k), k, e);
                        }
                    }
                    // `src` is `read.m`, which `read` still holds: not its last `Arc`.
                    drop(src);
                }
                stale => {
                    *copy = stale; // dropped by the caller, after unlocking
                    return Err(self.snapshot(read));
                }
            }
        }
        // Go stores a new `readOnly{m: read.m, amended: true}`; here the flag is set in place.
        read.amended.store(true, Release);
        Ok(())
    }

    /// [`amend_locked`](Self::amend_locked), or, when `dirty` must be built from a copy that
    /// `copy` is not, unlocks and makes that copy: `None` says to lock again and start over.
    #[inline(always)] // as `amend_locked`: the common case is its first test
    fn amend_or_copy<'a>(
        &'a self,
        mut l: Locked<'a, K, V, S>,
        read: &ReadOnly<K, V, S>,
        copy: &mut Option<DirtyCopy<K, V, S>>,
        garbage: &mut Garbage<K, V>,
    ) -> Option<Locked<'a, K, V, S>> {
        match self.amend_locked(&mut l, read, copy, garbage) {
            Ok(()) => Some(l),
            Err(src) => {
                drop(l);
                drop(copy.take());
                *copy = Some(self.copy_table(src));
                None
            }
        }
    }

    /// The dirty map, which must exist here (invariants 1 and 3).
    fn dirty_mut<'d>(l: &'d mut Locked<'_, K, V, S>) -> &'d mut Table<K, V, S> {
        Self::dirty_and_slab(l).0
    }

    /// The dirty map, which must exist here, and the slab a new key's entry is carved from.
    fn dirty_and_slab<'d>(l: &'d mut Locked<'_, K, V, S>) -> (&'d mut Table<K, V, S>, &'d mut Slab<Entry<V>>) {
        let d: &mut Dirty<K, V, S> = l;
        let m = d.m.as_mut();
        (m.expect("sync.Map invariant broken: an expunged entry or an amended read without a dirty map"), &mut d.slab)
    }

    /// Returns the value stored for `key`, or `None` (Go's `Load`).
    #[inline]
    pub(super) fn load<Q>(&self, h: u64, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        match read.m.get(h, key) {
            Some(e) => e.load(&g).map(|s| s.value().clone()),
            None if !read.amended() => None,
            None => self.load_locked(h, key, &g),
        }
    }

    /// The locked half of `load`.
    #[cold]
    fn load_locked<Q>(&self, h: u64, key: &Q, g: &Guard<'_>) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let e = {
            let mut l = self.lock(g);
            // Avoid reporting a spurious miss if `dirty` got promoted while we waited for `mu`.
            let read = self.load_read(g);
            match read.m.get(h, key) {
                Some(e) => EntryRef::clone(e),
                None if read.amended() => {
                    let e = l.m.as_ref().and_then(|m| m.get(h, key)).cloned();
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
    pub(super) fn store(&self, h: u64, key: K, value: V) {
        let g = self.reclaim.pin();
        self.swap_inner(h, key, value, &g);
    }

    /// Stores `value` for `key` and returns the previous value, if any (Go's `Swap`).
    pub(super) fn swap(&self, h: u64, key: K, value: V) -> Option<V> {
        let g = self.reclaim.pin();
        self.swap_inner(h, key, value, &g).map(|s| s.value().clone())
    }

    /// Go's `Swap`; the old value's slot is already retired and readable while `g` lives.
    fn swap_inner<'g>(&'g self, h: u64, key: K, value: V, g: &'g Guard<'_>) -> Option<&'g Slot<V>> {
        let read = self.load_read(g);
        let offer = match read.m.get(h, &key) {
            Some(e) => match e.try_swap(Unpublished::new(value), g) {
                Ok(old) => return old,
                Err(new) => Offer::Slot(new),
            },
            None => Offer::Value(value),
        };

        // Dropped after the loop, so after unlocking: a dirty copy that turned out stale or
        // unneeded, and what a dirty rebuild took out. (So is `key`, when it is not moved into
        // `dirty`.)
        let mut copy = None;
        let mut garbage = Vec::new();
        let old = loop {
            let mut l = self.lock(g);
            let read = self.load_read(g);
            if let Some(e) = read.m.get(h, &key) {
                if e.is_expunged() {
                    // The entry was expunged: `dirty` exists and lacks it. Put it back before
                    // unexpunging (stable under the lock), so that `dirty` keeps every
                    // non-expunged entry of `read`, even if hashing the key panics.
                    Self::dirty_mut(&mut l).insert(h, key, EntryRef::clone(e));
                    let unexpunged = e.unexpunge_locked();
                    debug_assert!(unexpunged);
                }
                break e.swap_locked(offer.into_slot(), g);
            }
            let Some(mut l) = self.amend_or_copy(l, read, &mut copy, &mut garbage) else {
                continue; // a fresh copy is made: lock again
            };
            let (dirty, slab) = Self::dirty_and_slab(&mut l);
            match dirty.place(h, &key) {
                Place::Found(e) => break e.swap_locked(offer.into_slot(), g),
                Place::Vacant(v) => {
                    v.insert(key, offer.into_entry(slab));
                    break None;
                }
            }
        };
        drop_leftovers(&mut copy, &mut garbage);
        old
    }

    /// Returns the existing value for `key` if present (`true`: loaded); otherwise stores
    /// `value` and returns a clone of it (`false`: stored). Go's `LoadOrStore`. Among racing
    /// calls for a new key, exactly one stores; the others load its value.
    pub(super) fn load_or_store(&self, h: u64, key: K, value: V) -> (V, bool) {
        let g = self.reclaim.pin();
        let g = &g;
        // Avoid locking if it's a clean hit.
        let read = self.load_read(g);
        let (value, absent) = match read.m.get(h, &key) {
            Some(e) => match e.try_load_or_store(value, g) {
                LoadOrStore::Loaded(s, _) => return (s.value().clone(), true),
                LoadOrStore::Stored(s) => return (s.value().clone(), false),
                LoadOrStore::Expunged(value) => (value, false),
            },
            None => (value, true),
        };
        let seen: *const ReadOnly<K, V, S> = read;
        let offer = Offer::Value(value);

        // Dropped after the loop, so after unlocking, as in `swap_inner`; and `held`, the entry
        // whose slot the result is cloned from (its current slot lives as long as it does).
        let mut copy = None;
        let mut garbage = Vec::new();
        let mut held: Option<EntryRef<V>> = None;
        let r = loop {
            let mut l = self.lock(g);
            let read = self.load_read(g);
            // A `read.m` is immutable: if it is still the table that lacked the key above (it
            // cannot be freed and its address reused while `g` lives), it still lacks it.
            let in_read = if absent && std::ptr::eq(read, seen) { None } else { read.m.get(h, &key) };
            if let Some(e) = in_read {
                if e.is_expunged() {
                    Self::dirty_mut(&mut l).insert(h, key, EntryRef::clone(e));
                    let unexpunged = e.unexpunge_locked();
                    debug_assert!(unexpunged);
                }
                break e.try_load_or_store(offer.into_value(), g);
            }
            let Some(mut l) = self.amend_or_copy(l, read, &mut copy, &mut garbage) else {
                continue; // a fresh copy is made: lock again
            };
            let (dirty, slab) = Self::dirty_and_slab(&mut l);
            match dirty.place(h, &key) {
                Place::Found(e) => {
                    let e: &EntryRef<V> = held.insert(EntryRef::clone(e));
                    let r = e.try_load_or_store(offer.into_value(), g);
                    self.miss_locked(&mut l, g);
                    break r;
                }
                Place::Vacant(v) => {
                    let e: &EntryRef<V> = held.insert(offer.into_entry(slab));
                    // Nobody else sees the entry yet: its value is ours.
                    let stored = e.load(g).expect("a new entry holds its value");
                    v.insert(key, EntryRef::clone(e));
                    break LoadOrStore::Stored(stored);
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
        drop_leftovers(&mut copy, &mut garbage);
        out
    }

    /// Deletes `key` and returns its value, if it was present (Go's `LoadAndDelete`). The value
    /// is a clone: readers may still be looking at the stored one.
    pub(super) fn load_and_delete<Q>(&self, h: u64, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let g = self.reclaim.pin();
        self.delete_inner(h, key, &g).map(|s| s.value().clone())
    }

    /// Deletes `key` (Go's `Delete`).
    pub(super) fn delete<Q>(&self, h: u64, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let g = self.reclaim.pin();
        self.delete_inner(h, key, &g);
    }

    /// Go's `LoadAndDelete`; the deleted value's slot is already retired.
    fn delete_inner<'g, Q>(&'g self, h: u64, key: &Q, g: &'g Guard<'_>) -> Option<&'g Slot<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let read = self.load_read(g);
        if let Some(e) = read.m.get(h, key) {
            return e.delete(g);
        }
        if !read.amended() {
            return None;
        }
        // `_key`: the key taken out of `dirty`, dropped after unlocking.
        let (e, _key) = {
            let mut l = self.lock(g);
            let read = self.load_read(g);
            match read.m.get(h, key) {
                Some(e) => (EntryRef::clone(e), None),
                None if read.amended() => {
                    let removed = l.m.as_mut().and_then(|m| m.remove_entry(h, key));
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
    pub(super) fn compare_and_swap<Q>(&self, h: u64, key: &Q, old: &V, new: V) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: PartialEq,
    {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if let Some(e) = read.m.get(h, key) {
            return e.try_compare_and_swap(old, new, &g);
        }
        if !read.amended() {
            return false; // No existing value for key.
        }
        match self.find_locked(h, key, &g) {
            // Go keeps the lock for the comparison; the entry's CAS loop needs none (the
            // lock-free path above runs it unlocked too), so `V::eq` runs outside the lock.
            Some(e) => e.try_compare_and_swap(old, new, &g),
            None => false,
        }
    }

    /// Deletes `key` if its value equals `old` (Go's `CompareAndDelete`); returns whether it
    /// did. A missing key never matches.
    pub(super) fn compare_and_delete<Q>(&self, h: u64, key: &Q, old: &V) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: PartialEq,
    {
        let g = self.reclaim.pin();
        let read = self.load_read(&g);
        if let Some(e) = read.m.get(h, key) {
            return e.try_compare_and_delete(old, &g);
        }
        if !read.amended() {
            return false;
        }
        // Go does not delete the key from `dirty` here: the comparison still has to be made.
        // The entry is expunged when `dirty` is next rebuilt.
        match self.find_locked(h, key, &g) {
            Some(e) => e.try_compare_and_delete(old, &g),
            None => false,
        }
    }

    /// The locked lookup of `CompareAndSwap`/`CompareAndDelete`: `read` again, then `dirty`
    /// (counting a miss when found there).
    #[cold]
    fn find_locked<Q>(&self, h: u64, key: &Q, g: &Guard<'_>) -> Option<EntryRef<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut l = self.lock(g);
        let read = self.load_read(g);
        if let Some(e) = read.m.get(h, key) {
            return Some(EntryRef::clone(e));
        }
        let e = l.m.as_ref().and_then(|m| m.get(h, key)).cloned();
        if e.is_some() {
            // The key's set did not change, but we needed the lock to find the entry: count
            // a miss so that the map eventually reaches its fast steady state.
            self.miss_locked(&mut l, g);
        }
        e
    }
}

impl<K, V, S> Drop for Shard<K, V, S> {
    fn drop(&mut self) {
        let read = self.read.load(Acquire);
        // SAFETY: `read` always holds a pointer from `Arc::into_raw` (see `load_read`), whose
        // `Arc` is taken back once, here: with `&mut self` no operation is running.
        let read = unsafe { Arc::from_raw(read) };
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
