//! What a new key's entry costs, with no map around it: 500_000 new keys go into 8 hash tables
//! (std's `HashMap`, hashbrown inside, the table picked by the hash as a `sync::Map` shard is),
//! three ways; 20 runs each, ns per key (min, median). The tables are dropped between runs, as
//! W13's passes drop their map, so a run's allocations reuse what the previous run freed.
//!
//! - `inline`: the value is the key itself (dashmap's case: no entry to allocate);
//! - `malloc`: one 32-byte allocation per key, as a map that allocates each entry alone does;
//! - `blocks`: entries carved in order from 16-entry blocks, as a `sync::Map` shard's slab does.
//!
//! Not a cargo target; run it by hand:
//!
//! ```sh
//! rustc -O benches/floor/entry_alloc.rs -o /tmp/entry_alloc && /tmp/entry_alloc
//! ```
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

/// The hash is computed once, by `mix`, and passed through.
#[derive(Default)]
struct Passed(u64);
impl Hasher for Passed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!()
    }
    fn write_u64(&mut self, h: u64) {
        self.0 = h;
    }
}

fn mix(k: u64) -> u64 {
    let f = (k ^ 0x243f_6a88_85a3_08d3) as u128 * 0x9e37_79b9_7f4a_7c15u128;
    (f as u64) ^ ((f >> 64) as u64)
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    Inline,
    Malloc,
    Blocks,
}

type Entry = [u64; 4];

fn run(way: Way) -> f64 {
    let mut tables: Vec<HashMap<u64, usize, BuildHasherDefault<Passed>>> = (0..8).map(|_| HashMap::default()).collect();
    let mut blocks: Vec<Box<[Entry; 16]>> = Vec::new();
    let mut carved = 16;
    let start = Instant::now();
    for k in 1_000..501_000u64 {
        let h = mix(k);
        let v = match way {
            Way::Inline => k as usize,
            Way::Malloc => Box::into_raw(Box::new([k, 1, 0, 0])) as usize,
            Way::Blocks => {
                if carved == 16 {
                    blocks.push(Box::new([[0; 4]; 16]));
                    carved = 0;
                }
                let b = blocks.last_mut().unwrap();
                b[carved] = [k, 1, 0, 0];
                carved += 1;
                &b[carved - 1] as *const Entry as usize
            }
        };
        tables[(h >> 32) as usize & 7].insert(h, v);
    }
    let ns = start.elapsed().as_nanos() as f64 / 500_000.0;
    if way == Way::Malloc {
        for t in &mut tables {
            for (_, v) in t.drain() {
                // SAFETY: each value is a pointer from `Box::into_raw` above, freed once.
                drop(unsafe { Box::from_raw(v as *mut Entry) });
            }
        }
    }
    ns
}

fn main() {
    for (name, way) in [("inline", Way::Inline), ("malloc", Way::Malloc), ("blocks", Way::Blocks)] {
        let mut v: Vec<f64> = (0..20).map(|_| run(way)).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("{name}: {:.1} ns per key (min {:.1})", v[10], v[0]);
    }
}
