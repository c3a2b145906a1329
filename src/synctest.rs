//! Testing concurrent, time-dependent code in a *bubble* (Go 1.25's `testing/synctest`), with
//! every schedule replayable from a seed.
//!
//! [`test()`] runs a future as the root of a new bubble, on the calling thread. Every G it
//! spawns (transitively) belongs to the bubble, and inside it goro's clock is the bubble's:
//! [`time::now`](crate::time::now) starts at the bubble's start and
//! [`time::system_now`](crate::time::system_now) at 2000-01-01T00:00:00Z, and neither moves
//! while any G of the bubble can run. Once every G is *durably blocked* (below), time jumps
//! to the next timer, all at once: a test of a one-hour timeout takes no time and sees the
//! exact instant.
//!
//! ```
//! use std::time::Duration;
//! goro::synctest::test(async {
//!     let start = goro::time::now();
//!     let (tx, rx) = goro::chan::<&str>(0);
//!     goro::go!(async move {
//!         goro::time::sleep(Duration::from_secs(3600)).await;
//!         tx.send("an hour later").await.unwrap();
//!     });
//!     assert_eq!(rx.recv().await, Some("an hour later"));
//!     assert_eq!(goro::time::now() - start, Duration::from_secs(3600)); // exactly
//! });
//! ```
//!
//! # Durably blocked
//!
//! A G is durably blocked when only another G of its bubble can wake it (Go's definition).
//! goro's primitives say what each G waits on, so the bubble knows. Durably blocking, when
//! the primitive was made inside the bubble:
//!
//! - Go's list: a send or receive on a channel, a `select!` whose every case is such a channel
//!   (or no case at all), [`Cond::wait`](crate::sync::Cond), [`WaitGroup::wait`](crate::sync::WaitGroup)
//!   (a group made in the bubble: Go counts one whose first `add` ran there, which goro could
//!   only learn at a cost on every `add`), sleeping and every
//!   timer ([`time::sleep`](crate::time::sleep), `after`, `tick`, `Timer`, `Ticker`,
//!   `after_func`, `timeout`, context deadlines), and [`wait`] itself;
//! - beyond Go: [`Mutex`](crate::sync::Mutex), [`RwMutex`](crate::sync::RwMutex) and
//!   [`Semaphore`](crate::sync::semaphore::Semaphore) made in the bubble, and awaiting a
//!   [`JoinHandle`](crate::runtime::JoinHandle) of a G of the bubble. Go cannot count a `sync.Mutex`,
//!   because its holder may be outside the bubble and nothing records who holds it; a goro
//!   lock made in the bubble is one the bubble's Gs use, so only they can release it.
//!   ([`Once`](crate::sync::Once) never blocks in a bubble: its action is synchronous, and the
//!   bubble runs one G at a time, so no second caller can find it running.)
//!
//! Not durable: I/O on real sockets (the network may answer), [`syscall`](crate::syscall),
//! any future that is not goro's (a tokio channel, a hand-written future: a G parked on one
//! shows `future` in the dump), and a goro primitive made outside the bubble (another
//! thread may wake it). While such a G waits, the bubble's clock stands still and the bubble
//! waits for the outside world, as Go's does.
//!
//! When every G is durably blocked, in Go's order: a pending [`wait`] returns; else the clock
//! jumps to the next timer; else the bubble is deadlocked, and [`test()`] panics with a message
//! that starts with `deadlock: all goroutines in bubble are blocked` and holds the bubble's
//! dump. A root that returns while Gs of the bubble stay blocked fails the same way with
//! `deadlock: main bubble goroutine has exited but blocked goroutines remain`; [`test()`]
//! returns only once every G of the bubble has exited.
//!
//! A bubble's channels, and the `Timer`s, `Ticker`s and [`Pipe`](crate::net::Pipe)s made in
//! it, may not be used from outside it: that panics in the caller, naming the bubble.
//!
//! # One G at a time, from a seed
//!
//! Go's bubbles run on the parallel scheduler, so a failing schedule cannot be replayed. A goro
//! bubble runs its Gs one at a time on the calling thread (whatever `GORO_MAXPROCS` says), and
//! every choice it makes (which runnable G runs next, `select!`'s random case, which of the
//! Gs woken by timers due at one instant goes first) comes from the bubble's seed. The same
//! seed replays the same run, step by step, as long as nothing from outside the bubble takes
//! part (real I/O, other threads). The seed of [`test()`] is random, or `GORO_SEED=<n>` from the
//! environment; a failing bubble prints `GORO_SEED=<n>` on stderr, and [`test_seed`] (or the
//! variable) replays that run. [`explore`] runs a program under many seeds with a
//! randomized-priority scheduler, to find the rare schedules.
//!
//! What a bubble costs: a step (choosing the next G) moves the Gs made runnable since the last
//! step into the bubble's run set and draws one random number (under PCT, a look at each
//! runnable G's priority); a G that blocks costs a census of the bubble's Gs only when no G
//! is left to run. Measured (`cargo bench -p goro-benches --bench synctest`), a step takes
//! 1.16-1.28x what it takes on a one-P runtime, 1.5-1.7x under PCT, and a bubble is built and
//! dropped in about 6 us. Outside bubbles nothing runs of this.
//!
//! A G is classed by the last goro primitive it waited on in its poll: a G that awaits a goro
//! channel and some other future at once (a hand-written `select` of the two) counts as
//! waiting on the channel. Wrap such a wait so that the foreign future is awaited alone, or
//! keep it out of bubbles.
//!
//! # Porting from Go
//!
//! | Go | goro |
//! |----|------|
//! | `synctest.Test(t, func(t *testing.T) { .. })` | `#[goro::test(synctest)] async fn t() { .. }`, or [`test()`]`(async { .. })` |
//! | `synctest.Wait()` | [`wait`]`().await` |
//! | (beyond Go) a foreign future only the bubble wakes | [`durable`]`(fut).await`: a G waiting on it is durably blocked |
//! | `time.Now()` in a bubble | [`goro::time::now`](crate::time::now), [`goro::time::system_now`](crate::time::system_now) (not `std::time::Instant::now`, which is the real clock) |

use goro_runtime::__private::synctest::{panic_message, splitmix64, BubbleSpec, BubbleSummary, Policy};
use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::Duration;

pub use goro_runtime::__private::synctest::{wait, Wait};

/// Awaits `fut`, a future that is not goro's, saying that only the bubble wakes it: its
/// wakers are called by the bubble's own Gs, timers and pipes, never by a thread or a socket
/// outside. A G waiting on it is then *durably blocked*, as one waiting on a goro channel is,
/// so that the bubble's clock can advance and [`wait`] can return.
///
/// A G parked on a foreign future is otherwise not durably blocked (something outside the
/// bubble might wake it), and a bubble with such a G waits for the outside instead of
/// advancing its clock: this is for the futures of a library that synchronizes its own tasks
/// with primitives of its own. [`goro::hyper`](crate) wraps what it spawns in it (hyper's
/// tasks wake one another); a test awaiting hyper's client (`send_request`) in a bubble
/// wraps that. Outside a bubble it is `fut.await`.
///
/// If something outside the bubble does wake `fut`, the bubble may advance its clock or end
/// a [`wait`] too early: the promise is the caller's.
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::sync::{Arc, Mutex};
/// use std::task::{Context, Poll, Waker};
/// use std::time::Duration;
///
/// /// A one-shot of some other library: a slot and a waker.
/// #[derive(Clone, Default)]
/// struct Slot(Arc<Mutex<(Option<u32>, Option<Waker>)>>);
/// impl Future for Slot {
///     type Output = u32;
///     fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
///         let mut s = self.0.lock().unwrap();
///         match s.0.take() {
///             Some(v) => Poll::Ready(v),
///             None => { s.1 = Some(cx.waker().clone()); Poll::Pending }
///         }
///     }
/// }
///
/// goro::synctest::test(async {
///     let slot = Slot::default();
///     let filler = slot.clone();
///     goro::go(async move {
///         goro::time::sleep(Duration::from_secs(60)).await; // a minute of the bubble's time
///         let mut s = filler.0.lock().unwrap();
///         s.0 = Some(7);
///         s.1.take().map(Waker::wake);
///     });
///     // Without `durable`, the bubble would wait for a wake from outside, and never advance.
///     assert_eq!(goro::synctest::durable(slot).await, 7);
/// });
/// ```
pub async fn durable<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    // Whether the awaiting G runs in a bubble, asked at its first wait only (a G never leaves
    // the bubble it was started in): outside bubbles, where goro::hyper's Gs wrap every
    // connection in this, a wait costs a branch and no look at the runtime.
    let mut in_bubble = None;
    std::future::poll_fn(|cx| {
        let r = fut.as_mut().poll(cx);
        if r.is_pending() && *in_bubble.get_or_insert_with(|| goro_runtime::__private::synctest::tag() != 0) {
            goro_runtime::__private::synctest::mark_durable();
        }
        r
    })
    .await
}

/// Runs `fut` as the root G of a new bubble on the calling thread, and returns its output once
/// every G of the bubble has exited (Go's `synctest.Test`). See the [module docs](self).
///
/// The seed is `GORO_SEED` from the environment if set, else random; [`test_seed`] fixes it.
///
/// # Panics
/// If the bubble deadlocks (the message starts with `deadlock: all goroutines in bubble are
/// blocked`), if the root returns while Gs stay blocked (`deadlock: main bubble goroutine has
/// exited but blocked goroutines remain`), with any panic of the root or of a G of the bubble
/// (after printing `GORO_SEED=<n>` on stderr), and when called inside a bubble.
///
/// ```
/// use std::time::Duration;
/// let out = goro::synctest::test(async {
///     goro::time::sleep(Duration::from_secs(5)).await;
///     "slept five virtual seconds"
/// });
/// assert_eq!(out, "slept five virtual seconds");
/// ```
#[track_caller]
pub fn test<F: Future>(fut: F) -> F::Output {
    test_seed(env_seed().unwrap_or_else(random_seed), fut)
}

/// [`test()`] with the bubble's seed fixed: the same seed replays the same run (the seed a
/// failing bubble printed, or one [`explore`] reported).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// fn order(seed: u64) -> Vec<u32> {
///     let seen = Arc::new(Mutex::new(Vec::new()));
///     let s = seen.clone();
///     goro::synctest::test_seed(seed, async move {
///         let wg = goro::sync::WaitGroup::new();
///         for i in 0..8 {
///             let (wg, s) = (wg.clone(), s.clone());
///             wg.add(1);
///             goro::go!(async move {
///                 s.lock().unwrap().push(i);
///                 wg.done();
///             });
///         }
///         wg.wait().await;
///     });
///     let v = seen.lock().unwrap().clone();
///     v
/// }
/// assert_eq!(order(42), order(42));
/// ```
#[track_caller]
pub fn test_seed<F: Future>(seed: u64, fut: F) -> F::Output {
    let (out, _) = run(seed, fut);
    match out {
        Ok(v) => v,
        Err(p) => {
            eprintln!("goro: the synctest bubble failed; GORO_SEED={seed} replays it");
            resume_unwind(p)
        }
    }
}

/// Sleeps for `d` on the bubble's clock, then [`wait`]s (Go's `synctest.Sleep`): when it
/// returns, every G woken by the passing of `d` has run as far as it can.
///
/// # Panics
/// Outside a bubble.
pub async fn sleep(d: Duration) {
    let w = wait();
    crate::time::sleep(d).await;
    w.await
}

/// Runs the program `f()` in `runs` bubbles, each with its own seed and a randomized-priority
/// schedule (PCT: Burckhardt, Kothari, Musuvathi and Nagarakatte, ASPLOS 2010, as shuttle's
/// `check_pct`), and panics on the first run that fails, with its seed: `test_seed(seed, f())`
/// (or `GORO_SEED=<seed>` and the test again) replays it exactly.
///
/// Under PCT every G gets a random priority, the highest runnable G runs, and at two steps
/// chosen at random the running G drops below all others: a schedule that finds any bug of
/// depth 3 (three orderings that must all go wrong) with probability at least
/// 1/(n·k²) for n Gs and k steps, whatever the program's size; every goro primitive is a point
/// where the schedule can switch. Unlike a loom model it explores no schedule twice on
/// purpose and proves nothing, but it runs programs of any size: thousands of Gs, real timers
/// on the bubble's clock.
///
/// The base seed is `GORO_SEED` if set, else random; the seed of run `i` is derived from it.
///
/// ```should_panic
/// // A lost update between two Gs that read, yield and write: found in a few runs.
/// goro::synctest::explore(100, || async {
///     let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
///     let wg = goro::sync::WaitGroup::new();
///     for _ in 0..2 {
///         let (n, wg) = (n.clone(), wg.clone());
///         wg.add(1);
///         goro::go!(async move {
///             let v = n.load(std::sync::atomic::Ordering::SeqCst);
///             goro::runtime::yield_now().await;
///             n.store(v + 1, std::sync::atomic::Ordering::SeqCst);
///             wg.done();
///         });
///     }
///     wg.wait().await;
///     assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 2);
/// });
/// ```
#[track_caller]
pub fn explore<F, Fut>(runs: usize, f: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let base = env_seed().unwrap_or_else(random_seed);
    let mut steps = 256u64;
    for i in 0..runs {
        let seed = pct_seed(base, i as u64, steps);
        let (out, summary) = run(seed, f());
        if let Err(p) = out {
            eprintln!("goro: synctest::explore: run {} of {runs} failed; GORO_SEED={seed} replays it", i + 1);
            panic!(
                "goro::synctest::explore: run {} of {runs} failed: {}\nGORO_SEED={seed} replays it \
                 (goro::synctest::test_seed({seed}, ..))",
                i + 1,
                panic_message(&*p)
            );
        }
        steps = steps.max(summary.steps.next_power_of_two());
    }
}

/// For `#[goro::test(synctest)]`: [`test()`] of `f()`, run twice and compared step by step when
/// `GORO_SYNCTEST_CHECK_DETERMINISM=1`. Not part of the stable API.
#[doc(hidden)]
#[track_caller]
pub fn __test_fn<F, Fut>(f: F) -> Fut::Output
where
    F: Fn() -> Fut,
    Fut: Future,
{
    let seed = env_seed().unwrap_or_else(random_seed);
    if !check_determinism() {
        return test_seed(seed, f());
    }
    let (first, a) = run(seed, f());
    let first = first.unwrap_or_else(|p| {
        eprintln!("goro: the synctest bubble failed; GORO_SEED={seed} replays it");
        resume_unwind(p)
    });
    let (second, b) = run(seed, f());
    let _ = second.unwrap_or_else(|p| {
        eprintln!("goro: the synctest bubble failed on its replay; GORO_SEED={seed}");
        resume_unwind(p)
    });
    assert_eq!(
        a, b,
        "goro: GORO_SYNCTEST_CHECK_DETERMINISM: two runs of the bubble with GORO_SEED={seed} took different steps"
    );
    first
}

/// Whether `GORO_SYNCTEST_CHECK_DETERMINISM=1` asks for every bubble of `#[goro::test(synctest)]`
/// to run twice.
fn check_determinism() -> bool {
    std::env::var("GORO_SYNCTEST_CHECK_DETERMINISM").is_ok_and(|v| v == "1")
}

/// The seed's top bit says "PCT"; bits 56..62 hold log2 of the expected steps and 52..55 the
/// depth, so that a seed alone says how its run was scheduled.
const PCT: u64 = 1 << 63;
const PCT_DEPTH: u32 = 3;

fn pct_seed(base: u64, i: u64, steps: u64) -> u64 {
    let r = splitmix64(base ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) & ((1 << 52) - 1);
    let log = u64::from(steps.max(2).next_power_of_two().trailing_zeros().min(127));
    PCT | (log << 56) | (u64::from(PCT_DEPTH) << 52) | r
}

fn spec(seed: u64) -> BubbleSpec {
    let policy = if seed & PCT != 0 {
        let steps = 1u64 << ((seed >> 56) & 0x7f).min(62);
        let depth = ((seed >> 52) & 0xf) as u32;
        Policy::Pct { depth: depth.max(1), steps }
    } else {
        Policy::Random
    };
    BubbleSpec { seed, policy }
}

/// One bubble: its output (or the panic that ended it) and what it did.
fn run<F: Future>(seed: u64, fut: F) -> (Result<F::Output, Box<dyn Any + Send>>, BubbleSummary) {
    if goro_runtime::__private::synctest::current_seed().is_some() {
        panic!("goro: synctest::test called inside a synctest bubble");
    }
    let rt = crate::runtime::Builder::new()
        .thread_name("goro-bubble")
        .bubble(spec(seed))
        .build()
        .unwrap_or_else(|e| panic!("goro: cannot build a synctest bubble: {e}"));
    let select_rng = goro_chan::select::reseed(splitmix64(seed) | 1);
    let out = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(async {
            let v = fut.await;
            goro_runtime::__private::synctest::wait_exit().await;
            v
        })
    }));
    goro_chan::select::reseed(select_rng);
    let summary = rt.bubble_summary().expect("a bubble");
    drop(rt);
    (out, summary)
}

/// `GORO_SEED` from the environment; a value that is not a number is reported and ignored.
fn env_seed() -> Option<u64> {
    let v = std::env::var("GORO_SEED").ok()?;
    match v.trim().parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) => {
            eprintln!("goro: GORO_SEED={v:?} is not a number (a u64); using a random seed");
            None
        }
    }
}

/// A fresh seed for a run nobody fixed (plain seeds: the top bit is PCT's).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish() & !PCT
}
