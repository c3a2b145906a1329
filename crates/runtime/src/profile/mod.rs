//! Go's block and mutex profiles: `runtime.SetBlockProfileRate`, `runtime.SetMutexProfileFraction`
//! and the records that `goro::pprof` writes in pprof's format.
//!
//! goro's channels, `select!` and sync types call the event functions here, in the G that
//! blocked (or unlocked), so that a sampled event's stack is the user's: a G is a future, and
//! while the primitive's `poll` runs, the thread's stack holds the `poll` of every `async fn`
//! that awaits it, down to the G's own poll in the scheduler. The stack is captured as return
//! addresses when an event is sampled and symbolized only when the profile is read.

mod bucket;
mod record;
mod stack;

pub use record::{Frame, Line, Record};

use crate::m;
use bucket::Table;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

/// Go's `blockprofilerate`, in nanoseconds (Go keeps CPU ticks); 0: off.
static BLOCK_RATE: AtomicI64 = AtomicI64::new(0);
/// Go's `mutexprofilerate`; 0: off.
static MUTEX_RATE: AtomicI64 = AtomicI64::new(0);
/// Whether either rate is on: the one load a wait pays while both are off.
static PROFILING: AtomicBool = AtomicBool::new(false);

/// Changes a rate with `set` and [`PROFILING`] with it, under a lock: two changes at once
/// could otherwise leave `PROFILING` off with a rate on.
fn set_rate<R>(set: impl FnOnce() -> R) -> R {
    static RATES: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    let _g = RATES.lock();
    let r = set();
    PROFILING.store(BLOCK_RATE.load(Relaxed) > 0 || MUTEX_RATE.load(Relaxed) > 0, Relaxed);
    r
}

/// Go's `runtime.SetBlockProfileRate`: from now on, sample on average one blocking event per
/// `rate` nanoseconds spent blocked (`1`: every event; `0` or less: none, the default).
///
/// Counted where a G waits in goro: a channel send or receive, `select!`, and the sync types'
/// waits (`Mutex`, `RwMutex`, `WaitGroup::wait`, `Cond::wait`, `Semaphore::acquire`). An
/// event shorter than `rate` is sampled with probability `delay / rate` and then counts
/// `rate / delay` times, so that the profile's totals are unbiased, as in Go.
pub fn set_block_profile_rate(rate: i64) {
    set_rate(|| BLOCK_RATE.store(rate.max(0), Relaxed));
}

/// Go's `runtime.SetMutexProfileFraction`: from now on, sample on average one in `rate`
/// contention events on goro's `Mutex` and `RwMutex` (`1`: every one; `0`: none, the default;
/// a negative `rate` only reads the current one). Returns the previous rate.
///
/// As in Go, an event is recorded by the G that unlocks a mutex some other G waits for, with
/// the unlocker's stack and the time the woken waiter waited, and the profile scales each
/// sampled event by the rate.
pub fn set_mutex_profile_fraction(rate: i32) -> i32 {
    if rate < 0 {
        return MUTEX_RATE.load(Relaxed) as i32;
    }
    set_rate(|| MUTEX_RATE.swap(i64::from(rate), Relaxed) as i32)
}

/// The current block profile rate (nanoseconds; 0: off).
pub fn block_profile_rate() -> i64 {
    BLOCK_RATE.load(Relaxed)
}

/// The block profile: every stack sampled since the program started, with its counts.
pub fn block_records() -> Vec<Record> {
    BLOCK.records()
}

/// The mutex profile: every stack sampled since the program started, with its counts (already
/// scaled by the rate they were sampled at).
pub fn mutex_records() -> Vec<Record> {
    MUTEX.records()
}

static BLOCK: Table = Table::new();
static MUTEX: Table = Table::new();

/// When a G starts to wait, for [`block_event`] and [`mutex_event`]: now on the profiles'
/// clock, or 0 (no event will be recorded) while both profiles are off. Call it where the G
/// parks, and keep the answer with the wait.
#[doc(hidden)]
#[inline]
pub fn wait_start() -> u64 {
    if cfg!(loom) || !PROFILING.load(Relaxed) {
        return 0;
    }
    now()
}

/// Go's `blockevent`: the G that called [`wait_start`] at `t0` stops waiting now (call it in
/// the G, in the primitive's `poll` that returns `Ready`, so that the sampled stack is the
/// user's). Nothing when `t0` is 0.
///
/// The delay runs until the G runs again; Go's runs until the G is made runnable, so goro's
/// includes the time the woken G waited for a P.
#[doc(hidden)]
#[inline]
pub fn block_event(t0: u64) {
    if t0 != 0 {
        block_event_sampled(t0);
    }
}

#[cold]
#[inline(never)]
fn block_event_sampled(t0: u64) {
    let rate = BLOCK_RATE.load(Relaxed);
    if rate <= 0 {
        return;
    }
    let delay = (now().saturating_sub(t0)).max(1) as i64;
    // Go's `blocksampled`: an event at least `rate` long always, a shorter one with probability
    // `delay / rate`...
    if rate > delay && (cheaprand() % rate as u64) as i64 > delay {
        return;
    }
    // ...and then it counts `rate / delay` times (Go's `saveblockevent`: "remove sampling bias").
    let (count, delay) = if delay < rate { (rate as f64 / delay as f64, rate as f64) } else { (1.0, delay as f64) };
    BLOCK.add(stack::capture(), origin(), count, delay);
}

/// Go's `mutexevent`: called by the G that unlocks and wakes a waiter that started waiting at
/// `t0` (from [`wait_start`]), with the unlocker's stack. Nothing when `t0` is 0.
#[doc(hidden)]
#[inline]
pub fn mutex_event(t0: u64) {
    if t0 != 0 {
        mutex_event_sampled(t0);
    }
}

#[cold]
#[inline(never)]
fn mutex_event_sampled(t0: u64) {
    let rate = MUTEX_RATE.load(Relaxed);
    if rate <= 0 || cheaprand() % rate as u64 != 0 {
        return;
    }
    let delay = now().saturating_sub(t0) as f64;
    // Scaled by the rate when recorded, as Go's `saveblockevent` does for the mutex profile.
    let rate = rate as f64;
    MUTEX.add(stack::capture(), origin(), rate, rate * delay);
}

/// The root of a stack captured now: what the calling thread polls.
fn origin() -> Option<m::Origin> {
    m::current(|ctx| ctx.and_then(m::MCtx::polled_origin))
}

/// Nanoseconds on the profiles' clock (monotonic, never 0: 0 means "not measured").
fn now() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    epoch.elapsed().as_nanos() as u64 + 1
}

/// Go's `cheaprand64`, per thread: xorshift64* seeded from the thread's address space and clock.
fn cheaprand() -> u64 {
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = (s as *const Cell<u64> as u64) ^ now().rotate_left(32) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}
