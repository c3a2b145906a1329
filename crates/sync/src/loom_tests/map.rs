//! Map: loads, stores, deletes and the CAS family racing a promotion (`dirty` becoming `read`)
//! and a dirty-map rebuild (nil entries being expunged). Every model checks the map's
//! invariants (`Map::check_invariants`, valid at any moment because it holds the lock) and the
//! linearizable outcome. Under loom the map's reclamation is the stand-in of `map/reclaim/model.rs`: a
//! read of a value or snapshot that EBR could already have freed, or that does not
//! happen-after its publication, fails the model.
//!
//! Each race runs in every orientation ([`race`], [`race3`]): loom's DPOR remembers only the
//! last access to each atomic, so when a thread loads a pointer and then CASes it, an earlier
//! load by another thread is forgotten and the order "CAS first, then the other thread's load"
//! is never tried. Which side runs on the main thread (and which spawned thread starts first)
//! decides which orders loom finds, so every side takes every seat.
//! `loom_map_explores_both_orders` guards this: it fails if the lock-free reader never sees
//! the concurrent store.
//!
//! Mutations tried by hand (each made at least one model fail, then was reverted):
//!
//! | mutation | caught by |
//! |---|---|
//! | store to an expunged entry unexpunges it but does not put it back into `dirty` | store_races_expunge, swap_delete_race_rebuild |
//! | the dirty rebuild (`amend_locked`) leaves out of `dirty` an entry that was nil when copied but got a value before the install | store_races_expunge, load_or_store_deleted_key_races_expunge, swap_delete_race_rebuild |
//! | the dirty rebuild expunges nil entries but still puts them into `dirty` | store_races_expunge, load_or_store_deleted_key_races_expunge, three_way_promotion, swap_delete_race_rebuild, two_rebuilds_race |
//! | `trySwap` stores into an expunged entry | store_races_expunge, swap_delete_race_rebuild |
//! | `load`'s locked path does not look at `read` again | load_across_promotion_and_rebuild, delete_races_promotion, three_way_promotion |
//! | `tryLoadOrStore` checks for nil, then stores (no CAS) | load_or_store_deleted_key_races_expunge |
//! | `tryCompareAndSwap` compares, then swaps unconditionally | compare_and_swap_in_dirty, compare_and_swap_races_compare_and_delete |
//! | `range` does not promote an amended `dirty` | range_races_store and five others |
//! | entry loads and CASes `Relaxed` | compare_and_swap_in_dirty, compare_and_swap_races_compare_and_delete, load_or_store_deleted_key_races_expunge (causality) |
//! | `read` published and loaded `Relaxed` | ten models (causality) |
//! | `store_read_locked` retires the new snapshot instead of the old | every model (use after reclamation) |
//! | `load` drops its guard before cloning the value | explores_both_orders, reclaim_under_readers (use after reclamation) |
//! | the dirty copy (made without the lock) is installed without checking that `read.m` is still the table it copied | rebuild_races_clear |
//! | `load_or_store` of a key absent from `read` never looks in `read` again under the lock (not only while `read.m` is the table it looked in) | load_or_store_races_promotion (invariant 2: the key gets a second entry in `dirty`) |
//! | retiring an entry's inline first value without taking a count of the entry | first_value_outlives_its_entry ("an entry's count went below zero": a debug assertion, since an entry's memory is its block's and outlives it), explores_both_orders, delete_races_promotion, compare_and_swap_in_dirty, compare_and_swap_races_compare_and_delete |

use crate::Map;
use loom::sync::Arc;
use loom::thread;
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::BuildHasherDefault;

/// A deterministic hasher: loom replays executions, so iteration order (which decides the order
/// of the atomic operations in a dirty rebuild or a range) must not change between runs.
type H = BuildHasherDefault<DefaultHasher>;
type M<V> = Map<u32, V, H>;

fn keys<V: Clone + Send + 'static>(m: &M<V>) -> Vec<(u32, V)> {
    let mut out = Vec::new();
    m.range(|k, v| {
        out.push((*k, v.clone()));
        true
    });
    out.sort_by_key(|(k, _)| *k);
    out
}

/// Runs `op`, then checks the invariants (mid-race, for the other sides may still run).
fn checked<V: Clone + Send + 'static, R>(op: fn(&M<V>) -> R, m: &M<V>) -> R {
    let r = op(m);
    m.check_invariants();
    r
}

/// Models `a` and `b` running concurrently on a map prepared by `setup`, then `check`s the
/// results and the invariants; once with `a` on the main thread and `b` spawned, once the other
/// way round.
fn race<V, RA, RB>(setup: fn(&M<V>), a: fn(&M<V>) -> RA, b: fn(&M<V>) -> RB, check: fn(&M<V>, RA, RB))
where
    V: Clone + Send + Sync + 'static,
    RA: Send + 'static,
    RB: Send + 'static,
{
    for a_on_main in [true, false] {
        loom::model(move || {
            let m = Arc::new(Map::with_hasher(H::default()));
            setup(&m);
            let m2 = m.clone();
            // Each side also checks the invariants right after its operation, while the other
            // side may still be running.
            let (ra, rb) = if a_on_main {
                let t = thread::spawn(move || checked(b, &m2));
                (checked(a, &m), t.join().unwrap())
            } else {
                let t = thread::spawn(move || checked(a, &m2));
                let rb = checked(b, &m);
                (t.join().unwrap(), rb)
            };
            m.check_invariants();
            check(&m, ra, rb);
            m.check_invariants();
        });
    }
}

/// Three concurrent operations of one kind of result, in all six seatings (main thread, first
/// spawned, second spawned). `check` gets the results in the order of `ops`.
fn race3<R: Send + 'static>(setup: fn(&M<u32>), ops: [fn(&M<u32>) -> R; 3], check: fn(&M<u32>, [R; 3])) {
    for perm in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
        loom::model(move || {
            let m = Arc::new(Map::with_hasher(H::default()));
            setup(&m);
            let spawn = |i: usize| {
                let (m, op) = (m.clone(), ops[i]);
                thread::spawn(move || checked(op, &m))
            };
            let (t1, t2) = (spawn(perm[1]), spawn(perm[2]));
            let r_main = checked(ops[perm[0]], &m);
            let mut rs: [Option<R>; 3] = [None, None, None];
            rs[perm[0]] = Some(r_main);
            rs[perm[1]] = Some(t1.join().unwrap());
            rs[perm[2]] = Some(t2.join().unwrap());
            m.check_invariants();
            check(&m, rs.map(Option::unwrap));
            m.check_invariants();
        });
    }
}

/// Promote `dirty` (a range does), so that the keys stored so far are in `read`.
fn promote<V: Clone + Send + 'static>(m: &M<V>) {
    keys(m);
}

/// A lock-free load racing an overwrite sees the old or the new value, and loom does explore
/// both (this fails if a model's scheduling ever stops reaching the "store first" order).
#[test]
fn loom_map_explores_both_orders() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let seen2 = seen.clone();
    loom::model(move || {
        let m = Arc::new(Map::with_hasher(H::default()));
        m.store(1, 10);
        promote(&m);
        let m2 = m.clone();
        let t = thread::spawn(move || m2.load(&1));
        m.store(1, 11);
        let v = t.join().unwrap();
        assert!(matches!(v, Some(10) | Some(11)), "{v:?}");
        seen2.lock().unwrap().insert(v);
    });
    assert_eq!(*seen.lock().unwrap(), [Some(10), Some(11)].into_iter().collect());
}

/// Key 1 lives only in `dirty`. One side loads it twice (its first miss promotes `dirty`, since
/// `misses >= len(dirty)`); the other stores a new key, which goes into the existing `dirty`
/// or, after the promotion, rebuilds `dirty` from `read`, then loads it back. A present key is
/// never missed, and the new key is found afterwards.
#[test]
fn loom_map_load_across_promotion_and_rebuild() {
    race(
        |m| m.store(1, 10),
        |m| [m.load(&1), m.load(&1)],
        |m| {
            m.store(2, 20);
            m.load(&2)
        },
        |m, a, b| {
            assert_eq!(a, [Some(10), Some(10)]);
            assert_eq!(b, Some(20));
            assert_eq!(keys(m), vec![(1, 10), (2, 20)]);
        },
    );
}

/// Key 1 is deleted in `read` (entry nil, no `dirty`). Storing a new key rebuilds `dirty`,
/// expunging key 1's entry, while the other side stores key 1 again: either its lock-free swap
/// beats the expunge (and the rebuild copies the entry), or it finds the entry expunged and
/// unexpunges it into `dirty` under the lock. Either way key 1 survives the next promotion.
#[test]
fn loom_map_store_races_expunge() {
    race(
        |m| {
            m.store(1, 10);
            promote(m);
            m.delete(&1);
        },
        |m| m.store(2, 20),
        |m| m.store(1, 11),
        |m, (), ()| {
            assert_eq!(m.load(&1), Some(11));
            // `range` promotes `dirty`: a key missing from it would vanish here.
            assert_eq!(keys(m), vec![(1, 11), (2, 20)]);
            assert_eq!(m.load(&1), Some(11));
        },
    );
}

/// Two `load_or_store`s of one new key (both on the locked path): exactly one stores, and both
/// return its value.
#[test]
fn loom_map_load_or_store_new_key_one_winner() {
    race(
        |_| {},
        |m| m.load_or_store(1, 1),
        |m| m.load_or_store(1, 2),
        |m, a, b| {
            assert!(a.1 != b.1, "exactly one stores: {a:?} {b:?}");
            let winner = if a.1 { b.0 } else { a.0 };
            assert_eq!((a.0, b.0), (winner, winner));
            assert_eq!(m.load(&1), Some(winner));
        },
    );
}

/// A `load_or_store` of a key absent from `read` looks in `read` again under the lock only if
/// `read.m` is no longer the table it looked in. The other
/// side stores the same key (into `dirty`) and promotes it into a new `read.m` meanwhile: the
/// first side must then find it there (and load it), or have stored first (and been
/// overwritten). Either way the key is stored once, in one entry, and ends with the store's
/// value.
#[test]
fn loom_map_load_or_store_races_promotion() {
    race(
        |m| {
            m.store(9, 90);
            promote(m);
        },
        |m| m.load_or_store(1, 1),
        |m| {
            m.store(1, 2);
            promote(m);
        },
        |m, a, ()| {
            assert!(matches!(a, (1, false) | (2, true)), "{a:?}");
            assert_eq!(m.load(&1), Some(2));
            assert_eq!(keys(m), vec![(1, 2), (9, 90)]);
        },
    );
}

/// Two `load_or_store`s of a key whose entry is nil in `read` (the lock-free CAS race), while a
/// store of a new key expunges that entry (sending them to the locked path).
#[test]
fn loom_map_load_or_store_deleted_key_races_expunge() {
    race3(
        |m| {
            m.store(1, 0);
            promote(m);
            m.delete(&1);
        },
        [|m| m.load_or_store(1, 1), |m| m.load_or_store(1, 2), |m| (m.swap(3, 3).unwrap_or(3), false)],
        |m, [a, b, _]| {
            assert!(a.1 != b.1, "exactly one stores: {a:?} {b:?}");
            let winner = if a.1 { b.0 } else { a.0 };
            assert_eq!((a.0, b.0), (winner, winner));
            assert_eq!(keys(m), vec![(1, winner), (3, 3)]);
        },
    );
}

/// `compare_and_swap` against `compare_and_delete` from the same old value on a key in `read`:
/// exactly one succeeds, and the final state is the winner's.
#[test]
fn loom_map_compare_and_swap_races_compare_and_delete() {
    race(
        |m| {
            m.store(1, 0);
            promote(m);
        },
        |m| m.compare_and_swap(&1, &0, 1),
        |m| m.compare_and_delete(&1, &0),
        |m, swapped, deleted| {
            assert!(swapped != deleted, "exactly one wins: swapped {swapped}, deleted {deleted}");
            assert_eq!(m.load(&1), if swapped { Some(1) } else { None });
        },
    );
}

/// Two `compare_and_swap`s of a key that is only in `dirty` (the locked lookup, whose miss
/// promotes `dirty`): exactly one wins.
#[test]
fn loom_map_compare_and_swap_in_dirty() {
    race(
        |m| m.store(1, 0),
        |m| m.compare_and_swap(&1, &0, 1),
        |m| m.compare_and_swap(&1, &0, 2),
        |m, a, b| {
            assert!(a != b, "exactly one wins");
            assert_eq!(m.load(&1), Some(if a { 1 } else { 2 }));
        },
    );
}

/// A delete of a dirty-only key (removed from `dirty` under the lock, counting a miss) races
/// loads of another dirty-only key whose misses promote `dirty`.
#[test]
fn loom_map_delete_races_promotion() {
    race(
        |m| {
            m.store(1, 10);
            m.store(2, 20);
        },
        |m| m.load_and_delete(&1),
        |m| [m.load(&2), m.load(&2)],
        |m, a, b| {
            assert_eq!(a, Some(10));
            assert_eq!(b, [Some(20), Some(20)]);
            assert_eq!(m.load(&1), None);
            assert_eq!(keys(m), vec![(2, 20)]);
        },
    );
}

/// `range` while a new key is stored: `range` promotes `dirty` first, so the key present before
/// it started is visited.
#[test]
fn loom_map_range_races_store() {
    race(
        |m| m.store(1, 10),
        keys,
        |m| m.store(2, 20),
        |m, seen, ()| {
            assert!(seen.contains(&(1, 10)), "{seen:?}");
            assert_eq!(keys(m), vec![(1, 10), (2, 20)]);
        },
    );
}

/// Lock-free loads of a value that is being swapped out and retired, then of a snapshot that
/// `clear` retires. Values are loom `Arc`s, so loom also reports a value the map leaks or
/// drops twice; the reclamation stand-in reports a read of a retired object once no guard that
/// could see it remains.
#[test]
fn loom_map_reclaim_under_readers() {
    race(
        |m| {
            m.store(1, Arc::new(10));
            promote(m);
        },
        |m| {
            let old = m.swap(1, Arc::new(11)).map(|v| *v);
            m.clear();
            old
        },
        |m| [m.load(&1).map(|v| *v), m.load(&1).map(|v| *v)],
        |m, old, seen| {
            assert_eq!(old, Some(10));
            for v in seen {
                assert!(matches!(v, None | Some(10) | Some(11)), "{v:?}");
            }
            assert!(m.load(&1).is_none());
        },
    );
}

/// An entry's first value lives inside the entry (`entry.rs`): an overwrite of a dirty-only key
/// retires that inline slot and reads it after unlocking, while a delete takes the entry out of
/// `dirty` and drops the table's count of it. The retired slot must keep the entry alive until
/// no guard can read it; values are loom `Arc`s, so loom reports one dropped twice or leaked.
#[test]
fn loom_map_first_value_outlives_its_entry() {
    race(
        |m| m.store(1, Arc::new(10)),
        |m| m.swap(1, Arc::new(11)).map(|v| *v),
        |m| m.load_and_delete(&1).map(|v| *v),
        |m, swapped, deleted| match (swapped, deleted) {
            // swap, then delete
            (Some(10), Some(11)) => assert!(m.load(&1).is_none()),
            // delete, then swap (a new entry)
            (None, Some(10)) => assert_eq!(m.load(&1).map(|v| *v), Some(11)),
            r => panic!("not linearizable: {r:?}"),
        },
    );
}

/// Three sides over a dirty-only map: loads whose misses promote, a new key stored (into
/// `dirty`, or a rebuilt one) and read back, and a delete of a dirty-only key.
#[test]
fn loom_map_three_way_promotion() {
    race3(
        |m| {
            m.store(1, 10);
            m.store(2, 20);
        },
        [
            |m| [m.load(&1), m.load(&1)],
            |m| {
                m.store(3, 30);
                [m.load(&3), None]
            },
            |m| [m.load_and_delete(&2), None],
        ],
        |m, [a, b, c]| {
            assert_eq!(a, [Some(10), Some(10)]);
            assert_eq!(b, [Some(30), None]);
            assert_eq!(c, [Some(20), None]);
            assert_eq!(keys(m), vec![(1, 10), (3, 30)]);
        },
    );
}

/// An overwrite and a delete of a key in `read` race a store of a new key (which rebuilds
/// `dirty`, expunging the entry if the delete left it nil): the results are linearizable.
#[test]
fn loom_map_swap_delete_race_rebuild() {
    race3(
        |m| {
            m.store(1, 0);
            promote(m);
        },
        [|m| m.swap(1, 1), |m| m.load_and_delete(&1), |m| m.swap(2, 2)],
        |m, [swapped, deleted, other]| {
            assert_eq!(other, None);
            match (swapped, deleted) {
                // swap, then delete
                (Some(0), Some(1)) => assert_eq!(keys(m), vec![(2, 2)]),
                // delete, then swap
                (None, Some(0)) => assert_eq!(keys(m), vec![(1, 1), (2, 2)]),
                r => panic!("not linearizable: {r:?}"),
            }
        },
    );
}

/// Two stores of new keys after a promotion, with a deleted (nil) key in `read`: both find no
/// `dirty`, so both copy `read.m` without the lock; the first to relock installs its copy
/// (expunging key 1) and the other finds `dirty` built and drops its own copy. Neither new
/// key is lost, and key 1 stays deleted.
#[test]
fn loom_map_two_rebuilds_race() {
    race(
        |m| {
            m.store(1, 10);
            m.store(2, 20);
            promote(m);
            m.delete(&1);
        },
        |m| m.store(3, 30),
        |m| m.store(4, 40),
        |m, (), ()| {
            assert_eq!(m.load(&1), None);
            assert_eq!(keys(m), vec![(2, 20), (3, 30), (4, 40)]);
        },
    );
}

/// A store of a new key copies `read.m` without the lock while `clear` replaces `read`: the
/// copy is stale (it holds key 1) and must not become `dirty`, or the next promotion would bring
/// key 1 back. Linearizable outcomes only: the store before the clear (nothing left) or after
/// it (only key 2).
#[test]
fn loom_map_rebuild_races_clear() {
    race(
        |m| {
            m.store(1, 10);
            promote(m);
        },
        |m| m.store(2, 20),
        |m| m.clear(),
        |m, (), ()| {
            let ks = keys(m);
            assert!(ks.is_empty() || ks == vec![(2, 20)], "not linearizable: {ks:?}");
            assert_eq!(m.load(&1), None);
        },
    );
}
