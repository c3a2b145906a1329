//! W9 (4 tasks each do 250_000 `add(1)`/`done()` pairs on one wait group, then main waits) for
//! goro's `WaitGroup` and the tokio `Notify` wait group (`benches/common/notify_wg.rs`), each
//! beside the same tasks doing bare `fetch_add`/`fetch_sub` pairs on one `AtomicU64` on the
//! same runtime (each add's result checked by one compare): the floor a wait group's own code
//! adds to. A fifth row runs goro's bare pairs with Go's `Add` tests inlined after each add
//! instead of the one compare. The five are alternated in one process, and a sample is 5 runs
//! back to back inside one main task, as criterion's `iter_custom` runs them
//! (`benches/common/exec.rs`). Prints the median ns per pair of each and the medians of the
//! per-sample ratios. It shows what the test after `add`'s locked add costs, which decides
//! W9's ratio to tokio (`settled` in `crates/sync/src/waitgroup.rs` has the figures).
//!
//! ```sh
//! cargo run --release -p goro-benches --example w9_probe -- 20   # samples of each
//! ```
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../common/notify_wg.rs"]
mod notify_wg;

use notify_wg::NotifyWaitGroup;

const TASKS: u64 = 4;
const PAIRS: u64 = 250_000;
const RUNS: u32 = 5;

/// What the tasks' pairs hit: the wait group itself, or a bare counter beside it (the wait
/// group then only counts the tasks).
#[derive(Clone, Copy, PartialEq)]
enum Pairs {
    WaitGroup,
    Bare,
    BareGoTests,
}

/// The pairs of one task on a bare counter: the result of each add is used, as a wait group
/// uses it (checks on it decide whether the add is done).
fn bare_pairs(c: &AtomicU64) {
    for _ in 0..PAIRS {
        let up = c.fetch_add(1 << 32, Ordering::AcqRel);
        assert!(up >> 32 != u64::from(u32::MAX), "counter overflow");
        let down = c.fetch_sub(1 << 32, Ordering::AcqRel);
        assert!(down >> 32 != 0, "negative counter");
    }
}

/// The pairs of one task on a bare counter, each add followed by Go's `Add` tests (`v` the new
/// counter, `w` the waiters): `if v > 0 && (w == 0 || delta < 0 || v != delta)` is the quiet
/// return, anything else a panic here.
fn bare_pairs_go_tests(c: &AtomicU64) {
    #[inline(always)]
    fn add(c: &AtomicU64, d: i32) {
        let step = (i64::from(d) as u64) << 32;
        let state = c.fetch_add(step, Ordering::AcqRel).wrapping_add(step);
        let (v, w) = ((state >> 32) as i32, state as u32);
        if !(v > 0 && (w == 0 || d < 0 || v != d)) {
            misuse(d, v, w);
        }
    }
    #[cold]
    #[inline(never)]
    fn misuse(d: i32, v: i32, w: u32) {
        panic!("add({d}) left counter {v}, waiters {w}");
    }
    for _ in 0..PAIRS {
        add(c, 1);
        add(c, -1);
    }
}

/// What a sample needs from a runtime and its wait group.
trait System {
    type Wg: Clone + Send + Sync + 'static;
    fn wait_group() -> Self::Wg;
    fn add(wg: &Self::Wg, n: u64);
    fn done(wg: &Self::Wg);
    fn wait(wg: &Self::Wg) -> impl Future<Output = ()> + Send + '_;
    fn spawn(task: impl Future<Output = ()> + Send + 'static);
}

struct Goro;
impl System for Goro {
    type Wg = goro::sync::WaitGroup;
    fn wait_group() -> Self::Wg {
        goro::sync::WaitGroup::new()
    }
    #[inline(always)]
    fn add(wg: &Self::Wg, n: u64) {
        wg.add(n as isize);
    }
    #[inline(always)]
    fn done(wg: &Self::Wg) {
        wg.done();
    }
    fn wait(wg: &Self::Wg) -> impl Future<Output = ()> + Send + '_ {
        wg.wait()
    }
    fn spawn(task: impl Future<Output = ()> + Send + 'static) {
        drop(goro::go(task));
    }
}

struct Tokio;
impl System for Tokio {
    type Wg = Arc<NotifyWaitGroup>;
    fn wait_group() -> Self::Wg {
        Arc::new(NotifyWaitGroup::new())
    }
    #[inline(always)]
    fn add(wg: &Self::Wg, n: u64) {
        wg.add(n as usize);
    }
    #[inline(always)]
    fn done(wg: &Self::Wg) {
        wg.done();
    }
    fn wait(wg: &Self::Wg) -> impl Future<Output = ()> + Send + '_ {
        wg.wait()
    }
    fn spawn(task: impl Future<Output = ()> + Send + 'static) {
        drop(tokio::spawn(task));
    }
}

/// One sample: `RUNS` runs of W9 back to back, in the calling main task.
async fn sample<S: System>(pairs: Pairs) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..RUNS {
        let start = Instant::now();
        let wg = S::wait_group();
        let bare = Arc::new(AtomicU64::new(1 << 40));
        S::add(&wg, TASKS);
        for _ in 0..TASKS {
            let (wg, bare) = (wg.clone(), bare.clone());
            S::spawn(async move {
                match pairs {
                    Pairs::WaitGroup => {
                        for _ in 0..PAIRS {
                            S::add(&wg, 1);
                            S::done(&wg);
                        }
                    }
                    Pairs::Bare => bare_pairs(&bare),
                    Pairs::BareGoTests => bare_pairs_go_tests(&bare),
                }
                S::done(&wg);
            });
        }
        S::wait(&wg).await;
        total += start.elapsed();
    }
    total
}

fn per_pair(d: Duration) -> f64 {
    d.as_nanos() as f64 / f64::from(RUNS) / (TASKS * PAIRS) as f64
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(20);
    let g = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let t = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let goro = |p| per_pair(g.block_on(sample::<Goro>(p)));
    let tokio = |p| per_pair(t.block_on(t.spawn(sample::<Tokio>(p))).unwrap());
    let runs: [(&str, &dyn Fn() -> f64); 5] = [
        ("goro", &|| goro(Pairs::WaitGroup)),
        ("tokio_notify", &|| tokio(Pairs::WaitGroup)),
        ("goro_bare", &|| goro(Pairs::Bare)),
        ("tokio_bare", &|| tokio(Pairs::Bare)),
        ("goro_bare_go_tests", &|| goro(Pairs::BareGoTests)),
    ];
    let mut r: [Vec<f64>; 5] = Default::default();
    for i in 0..=n {
        for (k, (_, run)) in runs.iter().enumerate() {
            let x = run();
            if i > 0 {
                r[k].push(x); // the first round warms up
            }
        }
    }
    let ratio = |a: usize, b: usize| median(&r[a].iter().zip(&r[b]).map(|(x, y)| x / y).collect::<Vec<_>>());
    let each: Vec<String> = runs.iter().zip(&r).map(|((name, _), v)| format!("{name} {:.1}", median(v))).collect();
    println!("ns per pair: {}", each.join(", "));
    println!(
        "goro/tokio_notify {:.2}  goro/goro_bare {:.2}  tokio_notify/tokio_bare {:.2}  goro_bare/tokio_bare {:.2}  \
         goro_bare_go_tests/goro_bare {:.2}",
        ratio(0, 1),
        ratio(0, 2),
        ratio(1, 3),
        ratio(2, 3),
        ratio(4, 2)
    );
}
