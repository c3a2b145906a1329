//! A guided tour of goro: `cargo run --release --example tour`.
//!
//! Each step prints a heading and what it shows about the scheduler core that exists today:
//!
//! 1. goroutines are cheap: 100_000 of them, spawned and joined;
//! 2. work stealing: CPU-busy Gs spawned on one P spread over every P's thread;
//! 3. a panicking G is caught and reported as a `JoinError`; the program goes on;
//! 4. `yield_now` is fair: Gs spinning on it do not starve a newcomer;
//! 5. `runnext`: a G woken by another runs next on the same P (the ping-pong fast path);
//! 6. `GORO_DEBUG=schedtrace=N` and `goro::runtime::metrics()`.
//!
//! Channels, `select!`, `WaitGroup` and `sync::Map` will join the tour as those issues land;
//! until then step 5 hand-rolls the one-slot handoff that a channel will provide.

use std::collections::HashSet;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// `#[goro::main]` turns `async fn main` into `fn main() { goro::run(async { .. }) }`: this
/// thread becomes M0 and runs the body as the main G, like Go's `func main`.
#[goro::main]
async fn main() {
    println!("goro tour: {} Ps (GORO_MAXPROCS overrides the CPU count)\n", goro::max_procs());
    goroutines().await;
    work_stealing().await;
    panics_are_caught().await;
    yield_fairness().await;
    runnext().await;
    schedtrace();
}

/// Prints a step's heading.
fn heading(title: &str) {
    println!("== {title}");
}

/// Step 1. `goro::go` is Go's `go` statement; its `JoinHandle` is a future of the G's result.
async fn goroutines() {
    heading("1. goroutines: spawn 100_000 Gs and wait for all of them");
    const N: usize = 100_000;
    let counter = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let counter = counter.clone();
            // `go!{ body }` is `goro::go(async move { body })`.
            goro::go! { counter.fetch_add(1, Ordering::Relaxed); }
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    let took = start.elapsed();
    println!(
        "   {} Gs ran in {:.1?}: {} ns per G (spawn + run + join)\n",
        counter.load(Ordering::Relaxed),
        took,
        took.as_nanos() / N as u128
    );
}

/// Step 2. New Gs go to the spawning P's queue; idle Ps' threads steal half of it.
async fn work_stealing() {
    heading("2. work stealing: one G spawns 64 CPU-busy Gs");
    let before = goro::runtime::metrics();
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let t = threads.clone();
    let start = Instant::now();
    // One spawner G: every busy G starts in its P's run queue.
    let spawner = goro::go! {
        let busy: Vec<_> = (0..64)
            .map(|_| {
                let t = t.clone();
                goro::go! {
                    // 2 ms of CPU work with no await: the Gs queued behind it on this P
                    // only run sooner if another thread steals them.
                    let start = Instant::now();
                    let mut x = 0u64;
                    while start.elapsed() < Duration::from_millis(2) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                    }
                    t.lock().unwrap().insert(std::thread::current().id());
                }
            })
            .collect();
        for h in busy {
            h.await.unwrap();
        }
    };
    spawner.await.unwrap();
    let took = start.elapsed();
    let after = goro::runtime::metrics();
    println!(
        "   steals: {}, Gs stolen: {}; the busy Gs ran on {} threads",
        after.steals - before.steals,
        after.stolen_gs - before.stolen_gs,
        threads.lock().unwrap().len()
    );
    println!("   64 x 2 ms of CPU work took {took:.1?} of wall time\n");
}

/// Step 3. In Go a panicking goroutine kills the program; in goro the G's `JoinHandle`
/// returns a `JoinError` and the runtime carries on.
async fn panics_are_caught() {
    heading("3. a panicking G is caught and reported through its JoinHandle");
    // The panic hook would print the panic and a backtrace hint; silence it for this step.
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = goro::go! { "forty-two".parse::<u32>().unwrap() }.await;
    std::panic::set_hook(previous_hook);

    let err = result.unwrap_err();
    println!("   is_panic() = {}: {err}", err.is_panic());
    // The runtime is unharmed: the next G runs as usual.
    let answer = goro::go! { 6 * 7 }.await.unwrap();
    println!("   main goes on; the next G returned {answer}\n");
}

/// Step 4. `yield_now` (Go's `runtime.Gosched`) puts the G at the back of its P's queue, so
/// Gs spinning on it take turns and cannot keep a newcomer from running.
async fn yield_fairness() {
    heading("4. yield_now fairness: Gs spinning on every P do not starve a new G");
    let spinners = 2 * goro::max_procs();
    let (stop, started) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let yields = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..spinners)
        .map(|_| {
            let (stop, started, yields) = (stop.clone(), started.clone(), yields.clone());
            goro::go! {
                let mut mine = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    mine += 1;
                    if mine == 1 {
                        started.fetch_add(1, Ordering::Relaxed);
                    }
                    yields.fetch_add(1, Ordering::Relaxed);
                    goro::yield_now().await;
                }
                mine
            }
        })
        .collect();
    // Let all of them get going first: every P is then busy with spinners.
    while started.load(Ordering::Relaxed) < spinners || yields.load(Ordering::Relaxed) < 10_000 {
        goro::yield_now().await;
    }
    let (start, at_spawn) = (Instant::now(), yields.load(Ordering::Relaxed));
    let y = yields.clone();
    let newcomer = goro::go! {
        stop.store(true, Ordering::Relaxed);
        (start.elapsed(), y.load(Ordering::Relaxed) - at_spawn)
    };
    let (waited, yields_between) = newcomer.await.unwrap();
    let mut counts = Vec::new();
    for h in handles {
        counts.push(h.await.unwrap());
    }
    println!("   the newcomer ran {waited:.1?} after its spawn ({yields_between} spinner yields in between)");
    println!(
        "   the {spinners} spinners yielded {} to {} times each: every one of them kept getting turns\n",
        counts.iter().min().unwrap(),
        counts.iter().max().unwrap()
    );
}

/// A one-slot handoff, a stand-in for an unbuffered channel until `goro::chan` lands: `put`
/// fills the slot and wakes the waiting G; `take` waits until the slot is full and empties it.
/// One putter and one taker per slot, and a put only into an empty slot.
#[derive(Default)]
struct Handoff {
    full: AtomicBool,
    value: AtomicU64,
    waker: Mutex<Option<Waker>>,
}

impl Handoff {
    fn put(&self, v: u64) {
        self.value.store(v, Ordering::Relaxed);
        self.full.store(true, Ordering::Release);
        // Taking the lock after the store pairs with `take` registering its waker under the
        // lock before its second look at `full`: either it sees the value, or we see its waker.
        let waker = self.waker.lock().unwrap().take();
        if let Some(w) = waker {
            // A wake from a G of the same runtime puts the woken G in this P's `runnext`.
            w.wake();
        }
    }

    async fn take(&self) -> u64 {
        poll_fn(|cx| {
            for attempt in 0..2 {
                if self.full.swap(false, Ordering::Acquire) {
                    return Poll::Ready(self.value.load(Ordering::Relaxed));
                }
                if attempt == 0 {
                    *self.waker.lock().unwrap() = Some(cx.waker().clone());
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Step 5. Two Gs bounce a token. Each put wakes the other G into the current P's `runnext`,
/// so the pair stays on one P, warm in cache: Go's fast path for channel ping-pong.
async fn runnext() {
    heading("5. runnext: two Gs bounce a token through a one-slot handoff");
    const ROUNDS: u64 = 100_000;
    let (ping, pong) = (Arc::new(Handoff::default()), Arc::new(Handoff::default()));
    let before = goro::runtime::metrics();
    let start = Instant::now();
    let (p1, q1) = (ping.clone(), pong.clone());
    let a = goro::go! {
        for i in 0..ROUNDS {
            p1.put(i);
            assert_eq!(q1.take().await, i + 1);
        }
    };
    let b = goro::go! {
        for _ in 0..ROUNDS {
            let v = ping.take().await;
            pong.put(v + 1);
        }
    };
    a.await.unwrap();
    b.await.unwrap();
    let took = start.elapsed();
    let runs = goro::runtime::metrics().runnext_runs - before.runnext_runs;
    println!(
        "   {ROUNDS} round trips in {took:.1?} ({} ns each); runnext_runs grew by {runs} (2 wakes per trip)\n",
        took.as_nanos() / ROUNDS as u128
    );
}

/// Step 6. Go's `GODEBUG=schedtrace=N` is `GORO_DEBUG=schedtrace=N`: a `SCHED` line on stderr
/// every N ms. `goro::runtime::metrics()` gives the same numbers, and more, as a struct.
fn schedtrace() {
    heading("6. schedtrace and metrics");
    println!("   to watch the scheduler, run: GORO_DEBUG=schedtrace=100 cargo run --release --example tour");
    println!("   goro::runtime::metrics() at the end of the tour:");
    println!("{:#?}", goro::runtime::metrics());
}
