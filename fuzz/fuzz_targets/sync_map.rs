//! `goro::sync::Map` against `std::collections::HashMap`, one thread, checked after every op.
//!
//! The keys come from a small space (so operations collide) and loads of absent keys are
//! frequent, so the read/dirty state machine goes through many promotions (`misses >=
//! len(dirty)`), dirty rebuilds (expunging deleted entries) and unexpunges.
#![no_main]

use goro::sync::Map;
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut data)) = data.split_first() else { return };
    // Two key widths: u8 over 16 keys (dense collisions) or u16 over 300 keys (bigger maps,
    // longer promotions).
    if mode & 1 == 0 {
        run::<u8>(&mut data, |b| b % 16);
    } else {
        run::<u16>(&mut data, |b| u16::from(b) * 7 % 300);
    }
});

fn take(data: &mut &[u8]) -> Option<u8> {
    let (&b, rest) = data.split_first()?;
    *data = rest;
    Some(b)
}

fn run<K>(data: &mut &[u8], key: impl Fn(u8) -> K)
where
    K: Eq + std::hash::Hash + Clone + Copy + std::fmt::Debug + Ord + Send + Sync + 'static,
{
    let m: Map<K, u32> = Map::new();
    let mut model: HashMap<K, u32> = HashMap::new();
    let mut next = 1u32;
    let mut step = 0usize;
    while let Some(op) = take(data) {
        let k = key(take(data).unwrap_or(0));
        let mut val = || {
            next += 1;
            next
        };
        step += 1;
        match op % 16 {
            // Loads dominate: misses are what drive promotions.
            0..=3 => assert_eq!(m.load(&k), model.get(&k).copied(), "step {step}: load({k:?})"),
            4 | 5 => {
                let v = val();
                m.store(k, v);
                model.insert(k, v);
            }
            6 => {
                let v = val();
                let got = m.load_or_store(k, v);
                let want = match model.get(&k) {
                    Some(&old) => (old, true),
                    None => {
                        model.insert(k, v);
                        (v, false)
                    }
                };
                assert_eq!(got, want, "step {step}: load_or_store({k:?}, {v})");
            }
            7 => assert_eq!(m.load_and_delete(&k), model.remove(&k), "step {step}: load_and_delete({k:?})"),
            8 => {
                m.delete(&k);
                model.remove(&k);
            }
            9 => {
                let v = val();
                assert_eq!(m.swap(k, v), model.insert(k, v), "step {step}: swap({k:?}, {v})");
            }
            10 => {
                // Compare against the current value half the time, a wrong one otherwise.
                let cur = model.get(&k).copied();
                let old = match (take(data).unwrap_or(0) & 1, cur) {
                    (0, Some(c)) => c,
                    _ => 0,
                };
                let v = val();
                let want = cur == Some(old);
                if want {
                    model.insert(k, v);
                }
                assert_eq!(m.compare_and_swap(&k, &old, v), want, "step {step}: compare_and_swap({k:?}, {old}, {v})");
            }
            11 => {
                let cur = model.get(&k).copied();
                let old = match (take(data).unwrap_or(0) & 1, cur) {
                    (0, Some(c)) => c,
                    _ => 0,
                };
                let want = cur == Some(old);
                if want {
                    model.remove(&k);
                }
                assert_eq!(m.compare_and_delete(&k, &old), want, "step {step}: compare_and_delete({k:?}, {old})");
            }
            12 | 13 => {
                // Range, stopping after `limit` entries (255: never stop early).
                let limit = usize::from(take(data).unwrap_or(255));
                let mut seen = Vec::new();
                m.range(|k, v| {
                    seen.push((*k, *v));
                    seen.len() < limit
                });
                let mut sorted = seen.clone();
                sorted.sort();
                sorted.dedup_by_key(|e| e.0);
                assert_eq!(sorted.len(), seen.len(), "step {step}: range visited a key twice: {seen:?}");
                for (k, v) in &seen {
                    assert_eq!(model.get(k), Some(v), "step {step}: range saw {k:?} => {v}, model {model:?}");
                }
                let want = model.len().min(limit.max(1));
                assert_eq!(seen.len(), want, "step {step}: range (limit {limit}) saw {seen:?}, model {model:?}");
            }
            14 => {
                if take(data).unwrap_or(0) & 7 == 0 {
                    m.clear();
                    model.clear();
                }
            }
            _ => {
                assert_eq!(m.len(), model.len(), "step {step}: len");
                assert_eq!(m.is_empty(), model.is_empty(), "step {step}: is_empty");
            }
        }
    }
    // Full comparison at the end.
    let mut all = Vec::new();
    m.range(|k, v| {
        all.push((*k, *v));
        true
    });
    all.sort();
    let mut want: Vec<_> = model.iter().map(|(k, v)| (*k, *v)).collect();
    want.sort();
    assert_eq!(all, want, "final contents");
    for (k, v) in &want {
        assert_eq!(m.load(k), Some(*v));
    }
}
