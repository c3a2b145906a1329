//! Mutex: Go's normal and starvation modes and the Rust-only cancellation paths. Every model
//! checks mutual exclusion (the data is a loom `UnsafeCell`), that every locker gets through (a
//! lost wake-up leaves a thread parked forever, which loom reports as a deadlock), and that the
//! state word is clean at the end. Loom has no clock: `Mutex::new_starving` makes every woken
//! waiter count as having waited past the 1 ms threshold. The models that target a path also
//! check, through `raw::stats`, that some execution reached it (a model that never reaches its
//! path would pass against any bug there).

use super::poll_once_then_drop;
use crate::mutex::stats;
use crate::Mutex;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering::*};
use loom::sync::Arc;
use loom::thread;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::task::{Context, Poll, Wake, Waker};

type Counter = Mutex<UnsafeCell<u32>>;

/// Adds one to the counter under the lock, blocking the thread.
fn bump(m: &Counter) {
    let g = m.lock_blocking();
    // SAFETY: the guard excludes every other access; loom checks that it does.
    g.with_mut(|p| unsafe { *p += 1 });
}

/// Adds one to the counter, trying `try_lock` first (it must fail while the lock is being
/// handed off in starvation mode, even though `LOCKED` is clear then).
fn bump_try_first(m: &Counter) {
    match m.try_lock() {
        // SAFETY: the guard excludes every other access; loom checks that it does.
        Some(g) => g.with_mut(|p| unsafe { *p += 1 }),
        None => bump(m),
    }
}

/// The counter's value and the state word at the end of a model.
fn finish(m: &Counter) -> (u32, usize) {
    let g = m.try_lock().expect("the mutex was left held");
    // SAFETY: the guard excludes every other access.
    let n = g.with(|p| unsafe { *p });
    drop(g);
    (n, m.raw_state())
}

/// `loom::model`, printing how many executions it explored (visible with `--nocapture`).
fn model(f: impl Fn() + Send + Sync + 'static) {
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let start = std::time::Instant::now();
    loom::model(move || {
        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    eprintln!("loom: {} executions in {:.1?}", runs.load(std::sync::atomic::Ordering::Relaxed), start.elapsed());
}

/// Runs `model` and checks that the path counted by `stat` was reached in some execution.
fn model_reaching(stat: &'static AtomicUsize, what: &str, f: impl Fn() + Send + Sync + 'static) {
    let before = stats::get(stat);
    model(f);
    assert!(stats::get(stat) > before, "no execution of the model reached {what}");
}

/// Polls with the noop waker (the caller polls again itself).
fn poll_noop<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

/// Puts a `starving` mutex into starvation mode on the calling thread, step by step: held, one
/// waiter queued, unlocked (the waiter is woken), taken again by a barger, and the waiter polled
/// again (it "waited too long" and requeues with STARVING). Returns the barger's guard and the
/// waiter, queued at the front.
macro_rules! starvation_mode {
    ($m:expr) => {{
        let m: &Counter = $m;
        let held = m.try_lock().unwrap();
        let mut first = Box::pin(m.lock());
        assert!(poll_noop(first.as_mut()).is_pending());
        drop(held); // wakes `first`
        let barger = m.try_lock().expect("normal mode: barging allowed");
        assert!(poll_noop(first.as_mut()).is_pending(), "lost to the barger");
        let s = m.raw_state();
        assert_eq!(s & 0b111, 0b101, "LOCKED | STARVING expected, state {s:#x}");
        (barger, first)
    }};
}

/// Two threads and the main thread's final check: exclusion, both get through, clean state.
#[test]
fn loom_mutex_exclusion_two_threads() {
    model(|| {
        let m = Arc::new(Counter::new(UnsafeCell::new(0)));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || bump(&m))
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(finish(&m), (1 + 1, 0));
    });
}

/// Three lockers (two threads and main): a woken waiter competes with a barger and a spinner.
#[test]
fn loom_mutex_exclusion_three_lockers() {
    model(|| {
        let m = Arc::new(Counter::new(UnsafeCell::new(0)));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || bump(&m))
            })
            .collect();
        bump(&m);
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(finish(&m), (3, 0));
    });
}

/// The switch to starvation mode under races: main holds the lock, a thread waits, main unlocks
/// and relocks at once (barging). When the woken thread finds it held, it switches the mutex to
/// starvation mode, and main's next unlock must hand the lock over.
#[test]
fn loom_mutex_starvation_entry_and_hand_off() {
    let entries = stats::get(&stats::STARVATION_ENTRIES);
    model_reaching(&stats::HAND_OFFS, "a hand-off", || {
        let m = Arc::new(Counter::new_starving(UnsafeCell::new(0)));
        let held = m.try_lock().unwrap();
        let t = {
            let m = m.clone();
            thread::spawn(move || bump(&m))
        };
        drop(held);
        bump(&m);
        t.join().unwrap();
        assert_eq!(finish(&m), (2, 0));
    });
    assert!(stats::get(&stats::STARVATION_ENTRIES) > entries, "starvation mode never entered");
}

/// Three lockers on a mutex whose woken waiters always count as starving: every mix of
/// barging, requeueing at the front, entering starvation mode, hand-offs from waiter to waiter
/// and leaving the mode again keeps mutual exclusion and lets everybody through.
#[test]
fn loom_mutex_starvation_three_lockers() {
    model_reaching(&stats::HAND_OFFS, "a hand-off", || {
        let m = Arc::new(Counter::new_starving(UnsafeCell::new(0)));
        let held = m.try_lock().unwrap();
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || bump(&m))
            })
            .collect();
        drop(held);
        bump(&m);
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(finish(&m), (3, 0));
    });
}

/// In starvation mode the unlock hands the lock to the front waiter while a new arrival races
/// it (the arrival must queue behind, not barge, not even with `try_lock`): both get through, in mutual exclusion, and
/// the mode ends with the last waiter.
#[test]
fn loom_mutex_hand_off_races_an_arrival() {
    model_reaching(&stats::HAND_OFFS, "a hand-off", || {
        let m = Arc::new(Counter::new_starving(UnsafeCell::new(0)));
        let (barger, mut first) = starvation_mode!(&m);
        let t = {
            let m = m.clone();
            thread::spawn(move || bump_try_first(&m))
        };
        drop(barger); // hands the lock to `first`
        let g = goro_runtime::__private::block_on_thread(first.as_mut());
        // SAFETY: the guard excludes every other access.
        g.with_mut(|p| unsafe { *p += 1 });
        drop(g);
        t.join().unwrap();
        assert_eq!(finish(&m), (2, 0));
    });
}

/// A waiter that was handed the lock is dropped before it sees it, racing a new arrival: the
/// drop must hand the lock on (or release it), never leave it held.
#[test]
fn loom_mutex_handed_off_then_dropped() {
    model_reaching(&stats::HANDED_OFF_CANCELS, "a dropped recipient of a hand-off", || {
        let m = Arc::new(Counter::new_starving(UnsafeCell::new(0)));
        let (barger, first) = starvation_mode!(&m);
        let t = {
            let m = m.clone();
            thread::spawn(move || bump(&m))
        };
        drop(barger); // hands the lock to `first`...
        drop(first); // ...which gives up
        t.join().unwrap();
        assert_eq!(finish(&m), (1, 0));
    });
}

/// In starvation mode the only waiter gives up while the holder's unlock is handing the lock to
/// it, and a new locker arrives: whether the waiter leaves before the hand-off (which then finds
/// nobody and must end starvation mode, or the mutex stays closed to everyone), or after it
/// (and hands the lock on), the arrival gets through and the mutex ends free.
#[test]
fn loom_mutex_dropped_waiter_races_hand_off() {
    model(|| {
        // The barger's guard and the waiter go to different threads: they need a 'static mutex.
        let m: &'static Counter = Box::leak(Box::new(Counter::new_starving(UnsafeCell::new(0))));
        let (barger, first) = starvation_mode!(m);
        let unlocker = thread::spawn(move || drop(barger));
        let arrival = thread::spawn(move || bump_try_first(m));
        drop(first);
        unlocker.join().unwrap();
        arrival.join().unwrap();
        assert_eq!(finish(m), (1, 0));
    });
}

/// A `lock()` future dropped after one poll races the unlock and another waiter: whatever it
/// was (queued, woken, or holding the lock), the other waiter gets through and the lock is free
/// at the end.
#[test]
fn loom_mutex_dropped_lock_races_unlock() {
    model(|| {
        let m = Arc::new(Counter::new(UnsafeCell::new(0)));
        let held = m.try_lock().unwrap();
        let d = {
            let m = m.clone();
            thread::spawn(move || {
                poll_once_then_drop(m.lock()); // a guard it got is dropped too
            })
        };
        let w = {
            let m = m.clone();
            thread::spawn(move || bump(&m))
        };
        drop(held);
        d.join().unwrap();
        w.join().unwrap();
        assert_eq!(finish(&m), (1, 0));
    });
}

/// Records a wake-up and unparks the (loom) thread that waits for it.
struct Unpark {
    thread: thread::Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.woken.store(true, Release);
        self.thread.unpark();
    }
}

/// A waiter is woken in normal mode and dropped without being polled again, while another
/// waiter is queued behind it: the wake-up must pass to that waiter (else it parks forever and
/// loom reports the deadlock).
#[test]
fn loom_mutex_woken_then_dropped() {
    model_reaching(&stats::WOKEN_CANCELS, "a dropped woken waiter", || {
        let m = Arc::new(Counter::new(UnsafeCell::new(0)));
        let held = m.try_lock().unwrap();
        let d = {
            let m = m.clone();
            thread::spawn(move || {
                let unpark = std::sync::Arc::new(Unpark { thread: thread::current(), woken: AtomicBool::new(false) });
                let waker = Waker::from(unpark.clone());
                let mut f = Box::pin(m.lock());
                if let Poll::Ready(_guard) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
                    return; // the lock was free already
                }
                // Queued: now start a second waiter, which may queue behind us.
                let w = {
                    let m = m.clone();
                    thread::spawn(move || bump(&m))
                };
                while !unpark.woken.load(Acquire) {
                    thread::park();
                }
                drop(f); // woken (or handed nothing: normal mode), never polled again
                w.join().unwrap();
            })
        };
        drop(held);
        d.join().unwrap();
        let (_, state) = finish(&m);
        assert_eq!(state, 0);
    });
}
