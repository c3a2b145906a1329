//! W9's work with no runtime at all: N plain threads share W9's 1_000_000 `add(1)`/`done()`
//! pairs (a `fetch_add` and a `fetch_sub` of one shared `AtomicU64`, as goro's `WaitGroup` and
//! the tokio `Notify` wait group both do), 40 runs; prints ns per pair (min, median, max), timed
//! from the first thread's start to the last thread's end. With 4 threads on 2 cores this is
//! the cost of the counter's cache line moving between the cores: the floor of W9's row. Not a
//! cargo target; run it by hand:
//!
//! ```sh
//! rustc -O benches/floor/w9_pairs.rs -o /tmp/w9_pairs && /tmp/w9_pairs 4 && /tmp/w9_pairs 1
//! ```
use std::sync::atomic::{AtomicU64, Ordering::AcqRel};
use std::sync::{Arc, Barrier};
use std::time::Instant;
fn main() {
    let threads: usize = std::env::args().nth(1).map_or(2, |s| s.parse().unwrap());
    let mut v = Vec::new();
    for _ in 0..40 {
        let c = Arc::new(AtomicU64::new(1 << 40));
        let b = Arc::new(Barrier::new(threads + 1));
        let per = 1_000_000 / threads as u64;
        let t0 = Instant::now();
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (c, b) = (c.clone(), b.clone());
                std::thread::spawn(move || {
                    b.wait();
                    let s = t0.elapsed();
                    for _ in 0..per {
                        c.fetch_add(1 << 32, AcqRel);
                        c.fetch_sub(1 << 32, AcqRel);
                    }
                    (s, t0.elapsed())
                })
            })
            .collect();
        b.wait();
        let r: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let start = r.iter().map(|x| x.0).min().unwrap();
        let end = r.iter().map(|x| x.1).max().unwrap();
        v.push((end - start).as_nanos() as f64 / 1e6);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{threads} threads: ns per pair min {:.1} median {:.1} max {:.1}", v[0], v[20], v[39]);
}
