//! How the map hashes its keys: with the `S` it was given, except for the default `S =
//! RandomState` with an integer key type, which gets a fast keyed hash of its own.
//!
//! std's `RandomState` is SipHash-1-3: for a `u64` key it is about a third of a `load` (five
//! SipRounds on one dependency chain, measured with perf on W11). Go hashes its map keys with
//! a keyed AES or multiply-mix hash, and hashbrown's own default is foldhash, a keyed *folded
//! multiply* (the 128-bit product of two words, its halves XORed): both are fast, randomly
//! seeded, and DoS-resistant only in the minimal sense (an attacker who cannot see the seed or
//! time the map finely cannot aim collisions). An integer key gets that here: one folded
//! multiply of the key with a per-map seed, then one more to spread it over the bits hashbrown
//! uses (the top 7 for its tag, the low ones for the bucket). The seeds are drawn from the map's
//! own `RandomState` when it is created, so they differ per map and per process.
//!
//! Only this case changes: other key types (strings, tuples, user types) are hashed with `S` as
//! before, and a map given any other `BuildHasher` (`with_hasher`, `Default`) uses it as is. The
//! choice is made from `TypeId`s at compile time: no branch is left in the hashing code. It is
//! invisible but for speed: the map never shows hashes or its order to the user. An integer key
//! type `K` can only be looked up by `K` itself (no other `Q` has `K: Borrow<Q>`), so a stored
//! key and a lookup always take the same path.

use std::any::TypeId;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;

/// How the map hashes its keys: with `S`, or the fast keyed hash. Not a `BuildHasher`: the tables
/// are hashbrown `HashTable`s, which take the hash, so nothing needs a `Hasher` of both kinds.
pub(super) struct Hashing<K, S> {
    inner: S,
    /// The fast hash's seeds (unused, and zero, unless [`Hashing::fast`]).
    seeds: [u64; 2],
    _key: PhantomData<fn(&K)>,
}

impl<K, S: Clone> Clone for Hashing<K, S> {
    fn clone(&self) -> Self {
        Hashing { inner: self.inner.clone(), seeds: self.seeds, _key: PhantomData }
    }
}

/// Whether `K` is a primitive integer type.
fn is_integer<K: 'static>() -> bool {
    let k = TypeId::of::<K>();
    [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<u128>(),
        TypeId::of::<usize>(),
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<i128>(),
        TypeId::of::<isize>(),
    ]
    .contains(&k)
}

impl<K: 'static, S: BuildHasher + 'static> Hashing<K, S> {
    /// Whether keys are hashed with the fast keyed hash: `S` is std's `RandomState` (the
    /// default) and `K` an integer type.
    #[inline(always)]
    fn fast() -> bool {
        TypeId::of::<S>() == TypeId::of::<RandomState>() && is_integer::<K>()
    }

    /// The map's hashing, from the `S` it was given.
    pub(super) fn new(inner: S) -> Hashing<K, S> {
        let seeds = if Self::fast() {
            // Random per map (RandomState's keys are random per thread and bumped per
            // instance); odd, so that no multiply by a seed loses bits.
            [inner.hash_one(0x243f_6a88_85a3_08d3_u64) | 1, inner.hash_one(0x1319_8a2e_0370_7344_u64) | 1]
        } else {
            [0; 2]
        };
        Hashing { inner, seeds, _key: PhantomData }
    }
}

impl<K: 'static, S: BuildHasher + 'static> Hashing<K, S> {
    /// The hash of `key`. Each case hashes with its own hasher type (see [`Fast`]); inlined:
    /// left to itself the compiler kept it a call, 7% of a load.
    #[inline]
    pub(super) fn hash_one<Q: std::hash::Hash + ?Sized>(&self, key: &Q) -> u64 {
        if Self::fast() {
            let mut h = Fast { acc: self.seeds[0], seed: self.seeds[1] };
            key.hash(&mut h);
            h.finish()
        } else {
            self.inner.hash_one(key)
        }
    }
}

/// The fast keyed hash's state. A type of its own, so that a key's `Hash` instantiated for it
/// is a few instructions: instantiated for an enum of this and `S`'s hasher (one `Hasher` type,
/// as a `HashMap` would need), the compiler keeps `<u64 as Hash>::hash` a call (3.6% of a load
/// in W11, seen with perf).
struct Fast {
    acc: u64,
    seed: u64,
}

impl Hasher for Fast {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Integers hash through the `write_*` below; this is the odd one out (`u128`'s default
        // path, or a platform's): 8 bytes at a time, the tail zero-padded.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.acc = folded_multiply(i ^ self.acc, self.seed ^ SPREAD);
    }

    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }

    #[inline(always)]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64);
    }

    #[inline(always)]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }

    #[inline(always)]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    #[inline(always)]
    fn write_u128(&mut self, i: u128) {
        self.write_u64(i as u64);
        self.write_u64((i >> 64) as u64);
    }

    /// A second multiply, so that the top bits (hashbrown's tag) depend on the low bits of the
    /// key as much as the bucket bits do.
    #[inline(always)]
    fn finish(&self) -> u64 {
        folded_multiply(self.acc, self.seed)
    }
}

/// The 128-bit product of `x` and `y`, its two halves XORed: every bit of the result depends
/// on every bit of both inputs (foldhash's and wyhash's mixing step).
#[inline(always)]
fn folded_multiply(x: u64, y: u64) -> u64 {
    let full = (x as u128).wrapping_mul(y as u128);
    (full as u64) ^ ((full >> 64) as u64)
}

/// A constant from π's digits, so that a zero word still moves the state.
const SPREAD: u64 = 0xa409_3822_299f_31d0;

/// Which of `shards` shards (a power of two) the key whose hash is `h` belongs to: bits 32 and up
/// of the hash. A table uses its hash's low bits for the bucket and the top 7 for the tag, so
/// the keys of one shard still spread over all of a table's buckets and tags (up to tables of
/// 2^32 buckets). Taking the shard from the fast hash's state before its last multiply, to know
/// it a multiply sooner, saved about 0.4 ns of a 5 ns load (W11), but for some seeds keys that
/// are multiples of 8 or 4096 then piled into a few shards (bits 32-34 or the top bits alike: one
/// folded multiply does not mix enough), so the shard comes from the finished hash. A weak user
/// hasher whose middle bits do not vary (an identity hash of small integers) puts every key in
/// one shard: the map then works as with one lock for all, as it did before it had shards.
#[inline(always)]
pub(super) fn shard_of(h: u64, shards: usize) -> usize {
    (h >> 32) as usize & (shards - 1)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_default_with_integer_keys_is_fast_and_nothing_else_is() {
        assert!(Hashing::<u64, RandomState>::fast());
        assert!(Hashing::<i32, RandomState>::fast());
        assert!(!Hashing::<String, RandomState>::fast());
        assert!(!Hashing::<(u64, u64), RandomState>::fast());
        assert!(!Hashing::<u64, std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>>::fast());
    }

    #[test]
    fn seeds_differ_per_map() {
        let (a, b) = (Hashing::<u64, _>::new(RandomState::new()), Hashing::<u64, _>::new(RandomState::new()));
        assert_ne!(a.hash_one(&7u64), b.hash_one(&7u64));
        assert_eq!(a.hash_one(&7u64), a.clone().hash_one(&7u64));
    }

    /// Sequential keys spread over both ends of the hash: distinct 7-bit tags and distinct
    /// low bits, about as a random function would give.
    #[test]
    fn sequential_keys_spread_over_tag_and_bucket_bits() {
        let h = Hashing::<u64, _>::new(RandomState::new());
        let hashes: Vec<u64> = (0..4096u64).map(|k| h.hash_one(&k)).collect();
        let low: HashSet<u64> = hashes.iter().map(|x| x & 4095).collect();
        let tags: HashSet<u64> = hashes.iter().map(|x| x >> 57).collect();
        // A random function hits about 63% of 4096 buckets with 4096 keys, and all 128 tags.
        assert!(low.len() > 2300, "{} of 4096 low-bit values", low.len());
        assert_eq!(tags.len(), 128);
    }

    /// Sequential keys, and keys that are all multiples of a power of two, spread evenly over
    /// the shards; one shard takes every key.
    #[test]
    fn shards_spread_keys_evenly() {
        for stride in [1u64, 8, 4096] {
            let h = Hashing::<u64, _>::new(RandomState::new());
            let mut count = [0usize; 8];
            for k in 0..8192u64 {
                count[shard_of(h.hash_one(&(k * stride)), 8)] += 1;
            }
            assert!(count.iter().all(|&c| (850..1200).contains(&c)), "stride {stride}: {count:?}");
        }
        let h = Hashing::<String, _>::new(RandomState::new());
        let mut count = [0usize; 64];
        for k in 0..8192u64 {
            count[shard_of(h.hash_one(&format!("key-{k}")), 64)] += 1;
        }
        assert!(count.iter().all(|&c| (70..200).contains(&c)), "strings: {count:?}");
        assert!((0..1000u64).all(|k| shard_of(h.hash_one(&k.to_string()), 1) == 0));
    }
}
