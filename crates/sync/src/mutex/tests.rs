//! The state machine of the `raw` module, step by step on one thread: futures are polled by hand
//! (a `lock()` that returns `Pending` is queued), and the starvation threshold is set to zero
//! ("every woken waiter starves") or to "never", so nothing depends on the machine's speed.

use super::raw::{LOCKED, STARVING, WAITER, WOKEN};
use super::{Lock, Mutex, MutexGuard};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

const NEVER: u64 = u64::MAX;
const ALWAYS: u64 = 0;

fn mutex(threshold_ns: u64) -> Mutex<u32> {
    let m = Mutex::new(0);
    set_threshold(&m, threshold_ns);
    m
}

fn set_threshold(m: &Mutex<u32>, ns: u64) {
    m.raw.threshold_ns.store(ns, std::sync::atomic::Ordering::Relaxed);
}

fn state<T>(m: &Mutex<T>) -> usize {
    m.raw.state()
}

fn poll<'a>(f: &mut Pin<Box<Lock<'a, u32>>>) -> Option<MutexGuard<'a, u32>> {
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(g) => Some(g),
        Poll::Pending => None,
    }
}

/// A `lock()` future polled once, queued behind a held lock.
fn queued(m: &Mutex<u32>) -> Pin<Box<Lock<'_, u32>>> {
    let mut f = Box::pin(m.lock());
    assert!(poll(&mut f).is_none(), "the lock is held: the future must queue");
    f
}

#[test]
fn uncontended_lock_and_unlock_leave_a_clean_word() {
    let m = mutex(NEVER);
    let g = m.try_lock().unwrap();
    assert_eq!(state(&m), LOCKED);
    drop(g);
    assert_eq!(state(&m), 0);
    let mut f = Box::pin(m.lock());
    let g = poll(&mut f).unwrap();
    assert_eq!(state(&m), LOCKED);
    drop(g);
    assert_eq!(state(&m), 0);
}

/// Normal mode: unlock wakes the front waiter (WOKEN, counted out), a running locker barges
/// ahead of it, and the woken waiter goes back to the *front* (Go's queueLifo), so the next
/// unlock wakes it again rather than the waiter that queued after it.
#[test]
fn normal_mode_barging_and_front_requeue() {
    let m = mutex(NEVER);
    let held = m.try_lock().unwrap();
    let mut a = queued(&m);
    let mut b = queued(&m);
    assert_eq!(state(&m), LOCKED | (2 * WAITER));
    drop(held);
    assert_eq!(state(&m), WOKEN | WAITER, "a woken, b still queued");
    let barger = m.try_lock().expect("normal mode: a running locker may barge");
    assert_eq!(state(&m), LOCKED | WOKEN | WAITER);
    assert!(poll(&mut a).is_none(), "a lost the race: it queues again");
    assert_eq!(state(&m), LOCKED | (2 * WAITER), "WOKEN cleared, not starving");
    drop(barger);
    assert!(poll(&mut b).is_none(), "b was not woken: a went back to the front");
    let g = poll(&mut a).expect("a was woken and the lock is free");
    assert_eq!(state(&m), LOCKED | WAITER);
    drop(g);
    drop(poll(&mut b).expect("b woken by a's unlock"));
    assert_eq!(state(&m), 0);
}

/// A woken waiter that loses after waiting past the threshold switches to starvation mode; then
/// each unlock hands the lock to the front waiter (the holder's `try_lock` and new arrivals get
/// nothing), arrivals queue at the back, and the hand-off to the last waiter ends the mode.
#[test]
fn starvation_mode_hands_off_in_queue_order() {
    let m = mutex(ALWAYS);
    let held = m.try_lock().unwrap();
    let mut a = queued(&m);
    let mut b = queued(&m);
    drop(held);
    let barger = m.try_lock().unwrap();
    assert!(poll(&mut a).is_none());
    assert_eq!(state(&m), LOCKED | STARVING | (2 * WAITER), "a starved: starvation mode");
    drop(barger);
    // Handed to a: LOCKED again on a's behalf; the mode stays (b still waits, a starved).
    assert_eq!(state(&m), LOCKED | STARVING | WAITER);
    assert!(m.try_lock().is_none());
    let mut c = queued(&m); // an arrival: no barging, no spinning, to the back
    assert_eq!(state(&m), LOCKED | STARVING | (2 * WAITER));
    let ga = poll(&mut a).expect("handed off");
    drop(ga);
    assert!(poll(&mut c).is_none(), "b is ahead of c");
    assert!(m.try_lock().is_none(), "handed to b: nobody else may take it");
    let gb = poll(&mut b).expect("handed off");
    assert_eq!(state(&m), LOCKED | STARVING | WAITER);
    drop(gb);
    assert_eq!(state(&m), LOCKED, "handed to the last waiter: back to normal mode");
    drop(poll(&mut c).expect("handed off"));
    assert_eq!(state(&m), 0);
}

/// A waiter handed the lock that waited less than the threshold ends starvation mode itself,
/// even though others still wait (Go: two Gs could otherwise go lock-step in it forever).
#[test]
fn a_recipient_that_waited_briefly_ends_starvation_mode() {
    let m = mutex(ALWAYS);
    let held = m.try_lock().unwrap();
    let mut a = queued(&m);
    let mut b = queued(&m);
    let mut c = queued(&m);
    drop(held);
    let barger = m.try_lock().unwrap();
    assert!(poll(&mut a).is_none());
    assert_eq!(state(&m), LOCKED | STARVING | (3 * WAITER));
    drop(barger); // handed to a
    drop(poll(&mut a).expect("handed off")); // a starved: the mode stays; handed to b
    assert_eq!(state(&m), LOCKED | STARVING | WAITER);
    set_threshold(&m, NEVER); // b "waited less than the threshold"
    let gb = poll(&mut b).expect("handed off");
    assert_eq!(state(&m), LOCKED | WAITER, "b ended starvation mode; c still waits");
    drop(gb);
    assert_eq!(state(&m), WOKEN, "normal mode: c is woken, not handed the lock");
    drop(poll(&mut c).unwrap());
    assert_eq!(state(&m), 0);
}

/// Dropping a woken waiter passes the wake-up on: the next waiter is woken, WOKEN stays owned.
#[test]
fn dropped_woken_waiter_wakes_the_next() {
    let m = mutex(NEVER);
    let held = m.try_lock().unwrap();
    let a = queued(&m);
    let mut b = queued(&m);
    drop(held);
    assert_eq!(state(&m), WOKEN | WAITER);
    drop(a);
    assert_eq!(state(&m), WOKEN, "b woken in a's place");
    drop(poll(&mut b).expect("woken, lock free"));
    assert_eq!(state(&m), 0);
}

/// Dropping a woken waiter while the lock is held only gives up WOKEN: the holder's unlock
/// wakes the next waiter.
#[test]
fn dropped_woken_waiter_behind_a_barger_clears_woken() {
    let m = mutex(NEVER);
    let held = m.try_lock().unwrap();
    let a = queued(&m);
    let mut b = queued(&m);
    drop(held);
    let barger = m.try_lock().unwrap();
    drop(a);
    assert_eq!(state(&m), LOCKED | WAITER);
    drop(barger);
    assert_eq!(state(&m), WOKEN);
    drop(poll(&mut b).unwrap());
    assert_eq!(state(&m), 0);
}

/// Dropping a waiter that was handed the lock hands it on (and ends starvation mode if the
/// next is the last); dropping the last queued waiter behind a held lock ends it too.
#[test]
fn dropped_waiters_in_starvation_mode() {
    let m = mutex(ALWAYS);
    let held = m.try_lock().unwrap();
    let mut a = queued(&m);
    let mut b = queued(&m);
    let c = queued(&m);
    drop(held);
    let barger = m.try_lock().unwrap();
    assert!(poll(&mut a).is_none());
    assert_eq!(state(&m), LOCKED | STARVING | (3 * WAITER));
    drop(barger); // handed to a, which is dropped before it sees it
    drop(a); // hands on to b
    assert_eq!(state(&m), LOCKED | STARVING | WAITER);
    drop(c); // the last waiter leaves behind a held lock: the mode ends
    assert_eq!(state(&m), LOCKED);
    drop(poll(&mut b).expect("b had been handed the lock"));
    assert_eq!(state(&m), 0);
}
