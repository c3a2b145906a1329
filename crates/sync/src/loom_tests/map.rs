//! Map: loads, stores, deletes and the CAS family racing a promotion (`dirty` becoming `read`)
//! and a dirty-map rebuild (nil entries being expunged). Every model checks the map's
//! invariants (`Map::check_invariants`, which is valid at any moment because it holds the lock)
//! and its linearizable outcome. Under loom the map's reclamation is the stand-in of
//! `map/reclaim.rs`: a read of a value or snapshot that EBR could already have freed, or that
//! does not happen-after its publication, fails the model.

use crate::Map;
use loom::sync::Arc;
use loom::thread;
use std::collections::hash_map::DefaultHasher;
use std::hash::BuildHasherDefault;

/// A deterministic hasher: loom replays each execution, so iteration order (which decides the
/// order of the atomic operations in a dirty rebuild or a range) must not change between runs.
type H = BuildHasherDefault<DefaultHasher>;

fn map<V: Clone + Send + 'static>() -> Arc<Map<u32, V, H>> {
    Arc::new(Map::with_hasher(H::default()))
}

fn keys<V: Clone + Send + 'static>(m: &Map<u32, V, H>) -> Vec<(u32, V)> {
    let mut out = Vec::new();
    m.range(|k, v| {
        out.push((*k, v.clone()));
        true
    });
    out.sort_by_key(|(k, _)| *k);
    out
}

/// Key 1 lives only in `dirty`. One thread loads it twice (its first miss promotes `dirty`,
/// since `misses >= len(dirty)`); the other stores a new key, which either goes into the
/// existing `dirty` or, after the promotion, rebuilds `dirty` from `read`. A key that is present
/// is never missed, and the new key is found afterwards.
#[test]
fn loom_map_load_across_promotion_and_rebuild() {
    loom::model(|| {
        let m = map();
        m.store(1, 10);
        let m2 = m.clone();
        let storer = thread::spawn(move || {
            m2.store(2, 20);
            assert_eq!(m2.load(&2), Some(20));
            m2.check_invariants();
        });
        assert_eq!(m.load(&1), Some(10));
        assert_eq!(m.load(&1), Some(10));
        m.check_invariants();
        storer.join().unwrap();
        assert_eq!(m.load(&1), Some(10));
        assert_eq!(m.load(&2), Some(20));
        m.check_invariants();
        assert_eq!(keys(&m), vec![(1, 10), (2, 20)]);
    });
}

/// Key 1 is deleted in `read` (entry nil, no `dirty`). Storing a new key rebuilds `dirty`,
/// expunging key 1's entry, while another thread stores key 1 again: either its lock-free swap
/// beats the expunge (and the rebuild copies the entry), or it finds the entry expunged and
/// unexpunges it into `dirty` under the lock. Either way key 1 survives the next promotion.
#[test]
fn loom_map_store_races_expunge() {
    loom::model(|| {
        let m = map();
        m.store(1, 10);
        keys(&m); // promote: read = {1}
        m.delete(&1);
        let m2 = m.clone();
        let rebuild = thread::spawn(move || {
            m2.store(2, 20);
            m2.check_invariants();
        });
        m.store(1, 11);
        m.check_invariants();
        rebuild.join().unwrap();
        m.check_invariants();
        assert_eq!(m.load(&1), Some(11));
        // `range` promotes `dirty`: a key missing from it would vanish here.
        assert_eq!(keys(&m), vec![(1, 11), (2, 20)]);
        assert_eq!(m.load(&1), Some(11));
    });
}

/// Two `load_or_store`s of one new key: exactly one stores, and both return its value.
#[test]
fn loom_map_load_or_store_new_key_one_winner() {
    loom::model(|| {
        let m = map();
        let m2 = m.clone();
        let other = thread::spawn(move || m2.load_or_store(1, 2));
        let mine = m.load_or_store(1, 1);
        let theirs = other.join().unwrap();
        assert!(mine.1 != theirs.1, "exactly one stores: {mine:?} {theirs:?}");
        let winner = if mine.1 { theirs.0 } else { mine.0 };
        assert_eq!(mine.0, winner);
        assert_eq!(theirs.0, winner);
        assert_eq!(m.load(&1), Some(winner));
        m.check_invariants();
    });
}

/// Two `load_or_store`s of a key whose entry is nil in `read` (the lock-free CAS race), while
/// the main thread's store of a new key expunges that entry (sending them to the locked path).
#[test]
fn loom_map_load_or_store_deleted_key_races_expunge() {
    loom::model(|| {
        let m = map();
        m.store(1, 0);
        keys(&m);
        m.delete(&1);
        let ts: Vec<_> = [1, 2]
            .into_iter()
            .map(|v| {
                let m = m.clone();
                thread::spawn(move || m.load_or_store(1, v))
            })
            .collect();
        m.store(3, 3);
        let rs: Vec<_> = ts.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(rs.iter().filter(|r| !r.1).count(), 1, "exactly one stores: {rs:?}");
        let winner = rs.iter().find(|r| !r.1).unwrap().0;
        assert!(rs.iter().all(|r| r.0 == winner));
        m.check_invariants();
        assert_eq!(keys(&m), vec![(1, winner), (3, 3)]);
    });
}

/// `compare_and_swap` against `compare_and_delete` from the same old value on a key in `read`:
/// exactly one succeeds, and the final state is the winner's.
#[test]
fn loom_map_compare_and_swap_races_compare_and_delete() {
    loom::model(|| {
        let m = map();
        m.store(1, 0);
        keys(&m);
        let m2 = m.clone();
        let cas = thread::spawn(move || m2.compare_and_swap(&1, &0, 1));
        let deleted = m.compare_and_delete(&1, &0);
        let swapped = cas.join().unwrap();
        assert!(swapped != deleted, "exactly one wins: swapped {swapped}, deleted {deleted}");
        assert_eq!(m.load(&1), if swapped { Some(1) } else { None });
        m.check_invariants();
    });
}

/// Two `compare_and_swap`s of a key that is only in `dirty` (the locked lookup, whose miss
/// promotes `dirty`): exactly one wins.
#[test]
fn loom_map_compare_and_swap_in_dirty() {
    loom::model(|| {
        let m = map();
        m.store(1, 0);
        let m2 = m.clone();
        let other = thread::spawn(move || m2.compare_and_swap(&1, &0, 2));
        let mine = m.compare_and_swap(&1, &0, 1);
        let theirs = other.join().unwrap();
        assert!(mine != theirs);
        assert_eq!(m.load(&1), Some(if mine { 1 } else { 2 }));
        m.check_invariants();
    });
}

/// A delete of a dirty-only key (removed from `dirty` under the lock, counting a miss) races
/// loads of another dirty-only key whose misses promote `dirty`.
#[test]
fn loom_map_delete_races_promotion() {
    loom::model(|| {
        let m = map();
        m.store(1, 10);
        m.store(2, 20);
        let m2 = m.clone();
        let deleter = thread::spawn(move || m2.load_and_delete(&1));
        assert_eq!(m.load(&2), Some(20));
        assert_eq!(m.load(&2), Some(20));
        assert_eq!(deleter.join().unwrap(), Some(10));
        assert_eq!(m.load(&1), None);
        m.check_invariants();
        assert_eq!(keys(&m), vec![(2, 20)]);
    });
}

/// `range` while a new key is stored: `range` promotes `dirty` first, so the key present before
/// it started is visited.
#[test]
fn loom_map_range_races_store() {
    loom::model(|| {
        let m = map();
        m.store(1, 10);
        let m2 = m.clone();
        let storer = thread::spawn(move || m2.store(2, 20));
        let seen = keys(&m);
        assert!(seen.contains(&(1, 10)), "{seen:?}");
        storer.join().unwrap();
        assert_eq!(keys(&m), vec![(1, 10), (2, 20)]);
        m.check_invariants();
    });
}

/// A lock-free load of a value that is being swapped out and retired, and a `clear` that
/// retires the snapshot under the reader. Values are loom `Arc`s, so loom also reports any value
/// the map leaks or frees twice; the reclamation stand-in reports a read of a retired object
/// after every guard that could see it is gone.
#[test]
fn loom_map_reclaim_under_readers() {
    loom::model(|| {
        let m = map::<Arc<u32>>();
        m.store(1, Arc::new(10));
        keys(&m);
        let m2 = m.clone();
        let writer = thread::spawn(move || {
            assert_eq!(m2.swap(1, Arc::new(11)).as_deref(), Some(&10));
            m2.clear();
        });
        let v = m.load(&1).map(|v| *v);
        assert!(matches!(v, None | Some(10) | Some(11)), "{v:?}");
        writer.join().unwrap();
        assert!(m.load(&1).is_none());
        m.check_invariants();
    });
}
