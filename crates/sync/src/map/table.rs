//! [`Table`]: a key-to-entry hash table, `read.m` (shared, immutable) or `dirty`.
//!
//! It is hashbrown's `HashTable` (the table inside std's `HashMap`) rather than a `HashMap`, for
//! one reason: a key is hashed once per operation. [`Map`](super::Map) hashes the key with the
//! map's [`Hashing`], takes the key's shard from that hash, and every lookup in that shard's
//! tables uses the same hash; with a `HashMap` each of them hashed the key again (a second hash
//! for the shard, and a third and fourth in the dirty map under the lock). A table's own copy of
//! the hashing, with the same seeds, rehashes its keys when it grows, and hashes a key that
//! comes without its hash (a dirty rebuild, the tests).

use super::dropping::DropAll;
use super::entry::EntryRef;
use super::hash::Hashing;
use hashbrown::hash_table::{self, HashTable};
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};

pub(super) struct Table<K, V, S> {
    t: HashTable<(K, EntryRef<V>)>,
    hashing: Hashing<K, S>,
}

impl<K, V, S> Table<K, V, S>
where
    K: Eq + Hash + 'static,
    S: BuildHasher + 'static,
{
    /// An empty table; it allocates nothing until a key goes in.
    pub(super) fn new(hashing: Hashing<K, S>) -> Table<K, V, S> {
        Table { t: HashTable::new(), hashing }
    }

    /// An empty table with room for `n` keys.
    pub(super) fn with_capacity(n: usize, hashing: Hashing<K, S>) -> Table<K, V, S> {
        Table { t: HashTable::with_capacity(n), hashing }
    }

    /// The hash of `key`, as the map computes it (the table's hashing has the map's seeds).
    #[inline]
    pub(super) fn hash<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.hashing.hash_one(key)
    }

    /// The entry of `key`, whose hash is `h`.
    #[inline]
    pub(super) fn get<Q>(&self, h: u64, key: &Q) -> Option<&EntryRef<V>>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.t.find(h, |(k, _)| k.borrow() == key).map(|(_, e)| e)
    }

    /// Puts in `key` (hash `h`), which the table does not hold: every caller has just looked
    /// for it, under the lock that guards this table, or is copying another table's keys.
    #[inline]
    pub(super) fn insert(&mut self, h: u64, key: K, e: EntryRef<V>) {
        debug_assert!(self.get(h, &key).is_none(), "sync.Map: a key inserted twice into one table");
        let hashing = &self.hashing;
        self.t.insert_unique(h, (key, e), |(k, _)| hashing.hash_one(k));
    }

    /// Where `key` (hash `h`) is, or where it would go: one probe serves both the lookup and the
    /// insert that follows a miss (hashbrown's `entry`; it makes room for the key before it
    /// answers, as an insert would).
    #[inline]
    pub(super) fn place<Q>(&mut self, h: u64, key: &Q) -> Place<'_, K, V>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let hashing = &self.hashing;
        match self.t.entry(h, |(k, _)| k.borrow() == key, |(k, _)| hashing.hash_one(k)) {
            hash_table::Entry::Occupied(o) => Place::Found(&o.into_mut().1),
            hash_table::Entry::Vacant(v) => Place::Vacant(Vacant(v)),
        }
    }

    /// Takes `key` (hash `h`) out, with its entry.
    pub(super) fn remove_entry<Q>(&mut self, h: u64, key: &Q) -> Option<(K, EntryRef<V>)>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.t.find_entry(h, |(k, _)| k.borrow() == key).ok().map(|o| o.remove().0)
    }
}

impl<K, V, S> Table<K, V, S> {
    pub(super) fn len(&self) -> usize {
        self.t.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&K, &EntryRef<V>)> {
        self.t.iter().map(|(k, e)| (k, e))
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &EntryRef<V>> {
        self.t.iter().map(|(_, e)| e)
    }
}

/// What [`Table::place`] found.
pub(super) enum Place<'t, K, V> {
    /// The key's entry.
    Found(&'t EntryRef<V>),
    /// Where the key goes.
    Vacant(Vacant<'t, K, V>),
}

/// The place of a key the table lacks.
pub(super) struct Vacant<'t, K, V>(hash_table::VacantEntry<'t, (K, EntryRef<V>)>);

impl<K, V> Vacant<'_, K, V> {
    /// Puts in the key that was looked for (the caller passes the same key), with its entry.
    /// The key stays the caller's until here: moved into `place`, it would be dropped under the
    /// lock when found. Not checked by hashing it again: that is user code, under the lock.
    #[inline]
    pub(super) fn insert(self, key: K, e: EntryRef<V>) {
        self.0.insert((key, e));
    }
}

/// Each key's and entry's destructor runs on its own (see `dropping.rs`).
impl<K, V, S> Drop for Table<K, V, S> {
    fn drop(&mut self) {
        let mut all = DropAll::new();
        all.drop_pairs(self.t.drain());
        all.finish();
    }
}
