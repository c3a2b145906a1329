//! Semaphore: acquire/release/cancel; permits are conserved and no waiter is stranded.

use super::poll_once_then_drop;
use crate::Semaphore;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// One permit, two acquirers: mutual exclusion (loom reports overlapping cell accesses), both
/// get through, and the permit is back at the end.
#[test]
fn loom_sem_exclusion() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let cell = Arc::new(UnsafeCell::new(0u32));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (sem, cell) = (sem.clone(), cell.clone());
                thread::spawn(move || {
                    sem.acquire_blocking(1);
                    // SAFETY: the permit excludes the other thread; loom checks it.
                    cell.with_mut(|p| unsafe { *p += 1 });
                    sem.release(1);
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        // SAFETY: both threads joined.
        assert_eq!(cell.with(|p| unsafe { *p }), 2);
        assert_eq!(sem.available(), 1);
    });
}

/// Weights: with 1 of 2 permits held, a weight-2 and a weight-1 acquire race the release; FIFO
/// never strands either, and all permits come back.
#[test]
fn loom_sem_weighted() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(2));
        assert!(sem.try_acquire(1));
        let s = sem.clone();
        let heavy = thread::spawn(move || {
            s.acquire_blocking(2);
            s.release(2);
        });
        let s = sem.clone();
        let light = thread::spawn(move || {
            s.acquire_blocking(1);
            s.release(1);
        });
        sem.release(1);
        heavy.join().unwrap();
        light.join().unwrap();
        assert_eq!(sem.available(), 2);
    });
}

/// A queued acquire is dropped while the permit is released and another acquirer waits: the
/// permit is never lost (the dropped future either was not granted, or gives its grant back),
/// and the other waiter gets through.
#[test]
fn loom_sem_cancel() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(1));
        assert!(sem.try_acquire(1));
        let s = sem.clone();
        let dropper = thread::spawn(move || {
            let got = poll_once_then_drop(s.acquire(1));
            if got {
                s.release(1); // it returned Ready: the permit was ours
            }
        });
        let s = sem.clone();
        let waiter = thread::spawn(move || {
            s.acquire_blocking(1);
            s.release(1);
        });
        sem.release(1);
        dropper.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(sem.available(), 1);
        assert!(sem.try_acquire(1));
    });
}

/// x/sync's cancel-at-the-front case: a weight-2 acquire queued at the front (1 of 2 permits
/// held) holds back a weight-1 acquire behind it; when it gives up, the weight-1 one must be let
/// through at once. The held permit is released only after that, so a stranded waiter is a
/// deadlock, which loom reports.
#[test]
fn loom_sem_cancel_front_lets_next_through() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(2));
        assert!(sem.try_acquire(1));
        let s = sem.clone();
        let heavy = thread::spawn(move || {
            assert!(!poll_once_then_drop(s.acquire(2)), "only 1 permit is free");
        });
        let s = sem.clone();
        let light = thread::spawn(move || {
            s.acquire_blocking(1);
            s.release(1);
        });
        heavy.join().unwrap();
        light.join().unwrap();
        sem.release(1);
        assert_eq!(sem.available(), 2);
    });
}

/// `loom_sem_cancel` with the guards: the held permit is a guard dropped on the main thread, a
/// queued `acquire_owned` future is dropped (its permit, if it was granted, is released by the
/// guard it returned, dropped at once), and the other waiter holds a borrowed guard. Every
/// permit comes back.
#[test]
fn loom_sem_guards_cancel() {
    loom::model(|| {
        // The public API takes a std `Arc` (`acquire_owned(self: Arc<Self>)`).
        let sem = std::sync::Arc::new(Semaphore::new(1));
        let held = sem.clone().try_acquire_owned(1).expect("free");
        let s = sem.clone();
        let dropper = thread::spawn(move || {
            poll_once_then_drop(s.acquire_owned(1));
        });
        let s = sem.clone();
        let waiter = thread::spawn(move || {
            let permit = s.acquire_guard_blocking(1);
            assert_eq!(permit.permits(), 1);
        });
        drop(held);
        dropper.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(sem.available(), 1);
        assert!(sem.try_acquire_guard(1).is_some());
    });
}
