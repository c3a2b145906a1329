//! What one cache line costs to move between this machine's two CPUs, sampled over time: two
//! plain threads take turns writing one `AtomicU64` (each waits, spinning, for the other's
//! write), 200_000 turns per sample, one sample every `period` ms for `secs` seconds; prints
//! the time since start and ns per hand-over for each sample.
//!
//! On the project's 2-vCPU VM this is bimodal, and the mode changes while a process runs:
//! about 40 ns per hand-over at times, about 220 ns at others (the hypervisor places the two
//! vCPUs close or far apart). Every row whose Gs share a cache line across the two Ms follows
//! it: W1 (one counter and one `Arc` count per G, touched by the spawner and by the M running
//! the G) took 11-12 ms per run in one criterion process and 21-24 ms in the next, at every
//! build. Compare such rows only within one mode: `benches/compare.py` takes one sample (`0` as
//! the only argument prints one number) before and after each measurement and reports each
//! row's ratio over the rounds measured in the same mode. Not a cargo target; by hand:
//!
//! ```sh
//! rustc -O benches/floor/handoff_modes.rs -o /tmp/handoff_modes && /tmp/handoff_modes 30 250
//! ```
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// ns per hand-over of the line, over `turns` turns of each thread (`examples/w7_probe.rs` takes
/// its samples here too).
pub fn sample(turns: u64) -> f64 {
    let line = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let hs: Vec<_> = (0..2)
        .map(|k| {
            let line = line.clone();
            std::thread::spawn(move || {
                for i in 0..turns {
                    let mine = 2 * i + k;
                    while line.load(Acquire) != mine {
                        std::hint::spin_loop();
                    }
                    line.store(mine + 1, Release);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    t0.elapsed().as_nanos() as f64 / (2 * turns) as f64
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().unwrap());
    let secs = args.next().unwrap_or(30);
    let period = Duration::from_millis(args.next().unwrap_or(250));
    if secs == 0 {
        // One sample (what benches/compare.py takes around each measurement).
        println!("{:.1}", sample(200_000));
        return;
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        let at = start.elapsed();
        println!("{:6.2} s  {:6.1} ns", at.as_secs_f64(), sample(200_000));
        std::thread::sleep(period.saturating_sub(start.elapsed() - at));
    }
}
