//! Property tests of `goro::sync::Map` against `HashMap` (the idea of Go's
//! `TestMapMatchesRWMutex` and `TestMapMatchesDeepCopy`: every operation returns what a plain
//! map would, in any sequence).
//!
//! 1. One thread, random sequences of every operation on a few keys (so that keys move between
//!    the read and dirty maps, get expunged and come back, and CAS comparisons both hit and
//!    miss): each result must equal the model's, and `range`/`len` must match it at every step.
//! 2. Several threads, each with its own random sequence on its own disjoint set of keys: since
//!    no other thread touches a thread's keys, every result it sees must still equal its own
//!    sequential model (while the others promote and rebuild the shared maps under it), its
//!    `range` must show exactly its keys, and at the end the map must equal the union of the
//!    models.

use goro::sync::Map;
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Barrier};

#[derive(Debug, Clone)]
enum Op {
    Load(u8),
    Store(u8, u8),
    LoadOrStore(u8, u8),
    LoadAndDelete(u8),
    Delete(u8),
    Swap(u8, u8),
    CompareAndSwap(u8, u8, u8),
    CompareAndDelete(u8, u8),
    /// `range`, stopping after this many entries if `Some`.
    Range(Option<u8>),
    Clear,
    Len,
}

/// Keys `key(k)` for `k` in `0..keys`, values in `0..4` (small, so CAS comparisons often match).
fn op(keys: u8, global_ops: bool) -> impl Strategy<Value = Op> {
    let k = 0..keys;
    let v = 0u8..4;
    let common = prop_oneof![
        4 => k.clone().prop_map(Op::Load),
        3 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::Store(k, v)),
        2 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::LoadOrStore(k, v)),
        2 => k.clone().prop_map(Op::LoadAndDelete),
        2 => k.clone().prop_map(Op::Delete),
        2 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::Swap(k, v)),
        2 => (k.clone(), v.clone(), v.clone()).prop_map(|(k, o, n)| Op::CompareAndSwap(k, o, n)),
        1 => (k.clone(), v.clone()).prop_map(|(k, o)| Op::CompareAndDelete(k, o)),
        1 => proptest::option::of(0u8..4).prop_map(Op::Range),
    ];
    if global_ops {
        prop_oneof![12 => common, 1 => Just(Op::Clear), 1 => Just(Op::Len)].boxed()
    } else {
        common.boxed()
    }
}

/// Applies `op` to the map and to the model, and checks that they agree. `mine` tells which
/// keys belong to the caller (the only ones `range` results are checked for).
fn apply(
    m: &Map<u32, u32>,
    model: &mut HashMap<u32, u32>,
    op: &Op,
    key: impl Fn(u8) -> u32,
    mine: impl Fn(u32) -> bool,
) {
    let val = |v: u8| v as u32;
    match *op {
        Op::Load(k) => assert_eq!(m.load(&key(k)), model.get(&key(k)).copied(), "{op:?}"),
        Op::Store(k, v) => {
            m.store(key(k), val(v));
            model.insert(key(k), val(v));
        }
        Op::LoadOrStore(k, v) => {
            let want = match model.get(&key(k)) {
                Some(&old) => (old, true),
                None => {
                    model.insert(key(k), val(v));
                    (val(v), false)
                }
            };
            assert_eq!(m.load_or_store(key(k), val(v)), want, "{op:?}");
        }
        Op::LoadAndDelete(k) => assert_eq!(m.load_and_delete(&key(k)), model.remove(&key(k)), "{op:?}"),
        Op::Delete(k) => {
            m.delete(&key(k));
            model.remove(&key(k));
        }
        Op::Swap(k, v) => assert_eq!(m.swap(key(k), val(v)), model.insert(key(k), val(v)), "{op:?}"),
        Op::CompareAndSwap(k, o, n) => {
            let want = model.get(&key(k)) == Some(&val(o));
            if want {
                model.insert(key(k), val(n));
            }
            assert_eq!(m.compare_and_swap(&key(k), &val(o), val(n)), want, "{op:?}");
        }
        Op::CompareAndDelete(k, o) => {
            let want = model.get(&key(k)) == Some(&val(o));
            if want {
                model.remove(&key(k));
            }
            assert_eq!(m.compare_and_delete(&key(k), &val(o)), want, "{op:?}");
        }
        Op::Range(stop) => {
            let mut seen = BTreeMap::new();
            let mut calls = 0;
            m.range(|&k, &v| {
                calls += 1;
                if mine(k) {
                    assert!(seen.insert(k, v).is_none(), "range visited {k} twice");
                }
                stop.is_none_or(|s| calls <= s as usize)
            });
            match stop {
                None => {
                    let want: BTreeMap<_, _> = model.iter().map(|(&k, &v)| (k, v)).collect();
                    assert_eq!(seen, want, "range");
                }
                Some(s) => {
                    // Stopped early: a subset of the model, and no more calls than asked for.
                    assert!(calls <= s as usize + 1);
                    for (k, v) in &seen {
                        assert_eq!(model.get(k), Some(v), "range (stopped)");
                    }
                }
            }
        }
        Op::Clear => {
            m.clear();
            model.clear();
        }
        Op::Len => {
            assert_eq!(m.len(), model.len(), "len");
            assert_eq!(m.is_empty(), model.is_empty(), "is_empty");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// One thread: the map behaves like a `HashMap` under any sequence of operations.
    #[test]
    fn matches_hashmap(ops in proptest::collection::vec(op(5, true), 1..120)) {
        let m = Map::new();
        let mut model = HashMap::new();
        for op in &ops {
            // (No `len` check after each step: `len` promotes the dirty map, which would keep
            // the map out of the states worth testing, such as an expunged entry in `read`.)
            apply(&m, &mut model, op, |k| k as u32, |_| true);
        }
        let mut all = BTreeMap::new();
        m.range(|&k, &v| { all.insert(k, v); true });
        prop_assert_eq!(all, model.into_iter().collect::<BTreeMap<_, _>>());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Three threads on disjoint keys (thread `t` owns the keys `k * 3 + t`): each sees exactly
    /// its own sequential model, and the final map is the union of the models.
    #[test]
    fn disjoint_threads_match_their_models(
        seqs in proptest::collection::vec(proptest::collection::vec(op(5, false), 1..150), 3),
    ) {
        const THREADS: u32 = 3;
        let m = Arc::new(Map::new());
        let start = Arc::new(Barrier::new(THREADS as usize));
        let ts: Vec<_> = seqs
            .into_iter()
            .enumerate()
            .map(|(t, ops)| {
                let (m, start) = (m.clone(), start.clone());
                let t = t as u32;
                std::thread::spawn(move || {
                    let mut model = HashMap::new();
                    start.wait();
                    for op in &ops {
                        apply(&m, &mut model, op, |k| k as u32 * THREADS + t, |k| k % THREADS == t);
                    }
                    model
                })
            })
            .collect();
        let mut union = BTreeMap::new();
        for t in ts {
            union.extend(t.join().unwrap());
        }
        let mut all = BTreeMap::new();
        m.range(|&k, &v| { all.insert(k, v); true });
        prop_assert_eq!(m.len(), union.len());
        prop_assert_eq!(all, union);
    }
}
