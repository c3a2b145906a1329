//! [`Map`]: Go's classic `sync.Map` (Go 1.9 to 1.23, before 1.24 moved to a hash-trie), with
//! the same algorithm and the same names for its parts, in each of the map's shards.
//!
//! # Shards
//!
//! A [`Map`] (`sharded.rs`) is a power of two of [`Shard`](shard::Shard)s (`shard.rs`), each of
//! them the whole algorithm below on the keys whose hash picks it; no operation but `range`,
//! `clear`, `len` and `is_empty` (which visit the shards in turn) touches two shards, and
//! nothing in a shard knows of the others. A key is hashed once per operation (`hash.rs`), and that hash picks the shard
//! and finds the key in the shard's tables (`table.rs`). The loom models check one shard.
//!
//! # Layout (of a shard)
//!
//! - `read`: an atomic pointer to a `readOnly { m, amended }` snapshot. `m` maps keys to
//!   entries and never changes; `amended` says that `dirty` holds some key that `m` lacks, and
//!   is set in place (Go replaces the snapshot to set it). `read` is loaded without the lock; it
//!   is only replaced with the lock held, and a replaced snapshot is retired to the epoch
//!   collector (see `reclaim/`).
//! - `mu` guards `dirty` (a `HashMap`, or nil), `misses`, and the slab new entries are carved
//!   from (`slab.rs`). When `dirty` exists it holds every non-expunged entry of `read.m` plus
//!   the keys stored since the last promotion.
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
//! - **promotion** (`missLocked`): once `misses >= len(dirty)`, `dirty` becomes the `m` of a new
//!   snapshot (`amended = false`), `dirty` becomes nil and `misses` 0. The next rebuild's copy
//!   costs `len(dirty)`, and that many locked lookups paid for it. The replaced snapshot keeps
//!   `amended` set, so a reader still holding it takes the lock and looks again.
//! - **first new key after a promotion** (`dirtyLocked`): `dirty` is rebuilt from `read.m`:
//!   non-expunged entries are copied, nil ones are expunged (`tryExpungeLocked`) and left out;
//!   then `read.amended` is set and the key goes into `dirty`.
//!   Unlike Go, the copy (which clones keys: user code) is made with the lock released, and
//!   installed under the lock only if `dirty` is still nil and `read.m` is still the table
//!   that was copied; otherwise the store copies again (`Shard::amend_locked`).
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
//! holds `mu` (`reclaim/`). See "User code the map runs" on [`Map`], and `dropping.rs` for
//! destructors that panic.
//!
//! # Memory
//!
//! Values live in slots, immutable once stored: an entry's first value inside the entry, every
//! later one in a heap slot of its own (`entry.rs`). A shard carves its new entries in order
//! from blocks of 16 (`slab.rs`), under its lock: a new key costs a sixteenth of an allocation,
//! and its entry lands next to the previous one rather than wherever the allocator's free lists
//! point. A block is freed with its last entry. Replacing or deleting a value retires its slot
//! to crossbeam-epoch, and so does replacing `read`. A load pins the thread (cheap,
//! thread-local: inside a G's poll it only borrows the poll's pin), reads through the snapshot
//! and clones the value before unpinning.
//! Inside a poll, retired objects are handed to crossbeam-epoch in batches (see `reclaim/epoch.rs`).
//! Live values are dropped when the map is dropped; retired ones when the epoch advances past
//! every thread that could still see them.
//!
//! # Hashing
//!
//! The tables hash with `S`, except that std's `RandomState` with a primitive integer key gets
//! a keyed folded-multiply hash instead of SipHash (`hash.rs`).
//!
//! # Files
//!
//! - `sharded.rs`: [`Map`], its shards and the public API, which hashes a key once and hands
//!   the operation to the key's shard;
//! - `shard.rs`: `Shard`, the algorithm above, with `ReadOnly` (Go's `readOnly`) and `Dirty`
//!   (what `mu` guards); `walk.rs`: a shard's `range`, `len`, `is_empty` and `clear`;
//! - `entry.rs`: Go's `entry` and the value slots; `slab.rs`: the blocks entries are carved
//!   from;
//! - `table.rs`: the hash tables of `read.m` and `dirty`; `hash.rs`: how keys are hashed;
//! - `reclaim/`: when a retired value or snapshot may be freed (crossbeam-epoch, or its loom
//!   stand-in);
//! - `dropping.rs`: running user destructors, many at once, when one may panic;
//! - `check.rs` (the invariants above, checked by the tests and the loom models) and
//!   `tests.rs`: test code.

#[cfg(test)]
mod check;
mod dropping;
mod entry;
mod hash;
mod reclaim;
mod shard;
mod sharded;
mod slab;
mod table;
#[cfg(all(test, not(loom)))]
mod tests;
mod walk;

pub use self::sharded::Map;
