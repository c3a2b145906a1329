//! How many runs `goro::synctest::explore` takes to find three classic Go bugs, scaled from the
//! 2 Gs of the loom models (tests/model/tests/models) to 10, 100 and 1000 Gs:
//!
//! - `waitgroup`: `wg.Add(1)` inside the goroutine, so `Wait` can return before the workers ran;
//! - `lock_order`: two Gs locking the same two mutexes in opposite orders, among others that
//!   lock neighbouring pairs in one order (a deadlock);
//! - `sync_map`: a lost update, each G reading a `sync.Map` entry, yielding, storing it plus one.
//!
//! The programs (examples/explore/programs.rs) are shared with tests/synctest_explore.rs, which also checks that the reported
//! seeds replay, and that the fixed programs pass). For each bug and size, `explore` runs under
//! ten base seeds (`GORO_SEED`, which `explore` reads as its base), and the table gives the
//! median and the largest number of runs it took until the first failing one, and the wall time
//! of those `explore` calls:
//!
//! ```text
//! cargo run --release --example explore 2>/dev/null
//! ```
//!
//! (stderr gets a line from `explore` for each failing run, with its seed.)

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [10, 100, 1000];
/// The base seeds: one `explore` per seed, bug and size.
const BASE_SEEDS: std::ops::RangeInclusive<u64> = 1..=10;
/// The runs one `explore` gets before the bug counts as not found.
const MAX_RUNS: usize = 2000;

#[path = "explore/programs.rs"]
mod programs;
use programs::{hits, transfers, workers};

// ---- the measurement ---------------------------------------------------------------------

/// One `explore(MAX_RUNS, ..)` under base seed `base`: the run that failed (None: none did) and
/// the wall time.
fn runs_until_found<Fut: std::future::Future<Output = ()>>(
    base: u64,
    program: impl Fn() -> Fut,
) -> (Option<usize>, Duration) {
    std::env::set_var("GORO_SEED", base.to_string());
    let start = Instant::now();
    let out = catch_unwind(AssertUnwindSafe(|| goro::synctest::explore(MAX_RUNS, &program)));
    let took = start.elapsed();
    std::env::remove_var("GORO_SEED");
    let Err(p) = out else { return (None, took) };
    let msg = p.downcast::<String>().map(|s| *s).unwrap_or_default();
    // explore's message: "goro::synctest::explore: run {i} of {runs} failed: ..."
    let run = msg.split("run ").nth(1).and_then(|s| s.split(" of ").next()).and_then(|s| s.parse().ok());
    assert!(run.is_some(), "explore failed without saying which run:\n{msg}");
    (run, took)
}

fn median<T: Copy + Ord>(v: &mut [T]) -> T {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // The failing runs panic on purpose: keep their messages (deadlock reports of 1000 Gs
    // among them) off the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    println!(
        "{:<11} {:>5}  {:>12} {:>9}  {:>10} {:>10}  (over {} base seeds, at most {MAX_RUNS} runs each)",
        "bug",
        "Gs",
        "median runs",
        "max runs",
        "median ms",
        "max ms",
        BASE_SEEDS.count()
    );
    type Program = fn(usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;
    let bugs: [(&str, Program); 3] = [
        ("waitgroup", |n| Box::pin(workers(n, true))),
        ("lock_order", |n| Box::pin(transfers(n, false))),
        ("sync_map", |n| Box::pin(hits(n, false))),
    ];
    for (bug, program) in bugs {
        for n in SIZES {
            let mut runs = Vec::new();
            let mut times = Vec::new();
            let mut missed = 0;
            for base in BASE_SEEDS {
                let (run, took) = runs_until_found(base, || program(n));
                match run {
                    Some(r) => runs.push(r),
                    None => missed += 1,
                }
                times.push(took);
            }
            let (med, max) = if runs.is_empty() {
                ("-".to_owned(), "-".to_owned())
            } else {
                let max = *runs.iter().max().unwrap();
                (median(&mut runs).to_string(), max.to_string())
            };
            let max_ms = times.iter().max().unwrap().as_secs_f64() * 1e3;
            let med_ms = median(&mut times).as_secs_f64() * 1e3;
            let missed = if missed > 0 { format!("  not found under {missed} seeds") } else { String::new() };
            println!("{bug:<11} {n:>5}  {med:>12} {max:>9}  {med_ms:>10.1} {max_ms:>10.1}{missed}");
        }
    }
}
