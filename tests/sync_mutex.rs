//! `goro::sync::Mutex` through the facade: Go's `src/sync/mutex_test.go` ported in spirit
//! (TestMutex's many lockers, TestMutexFairness: a G that relocks in a loop cannot starve one
//! that wants the lock once), try_lock, guards held across an await and moved between Gs,
//! cancellation of dropped lock futures, no poisoning, and Gs and plain threads at once.
//!
//! Nothing sleeps to synchronize: a future that must be queued is polled by hand (it is queued
//! once `poll` returns `Pending`), and waits are bounded by the watchdog.

mod common;

use common::*;
use goro::sync::Mutex;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn rt(procs: usize) -> goro::Runtime {
    goro::Builder::new().max_procs(procs).build().expect("build runtime")
}

fn poll_noop<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

fn hammer(procs: usize) {
    let _w = watchdog("hammer", LIMIT);
    const GS: u64 = 8;
    const N: u64 = 5_000;
    let m = Arc::new(Mutex::new((0u64, false)));
    let total = rt(procs).block_on(async {
        let hs: Vec<_> = (0..GS)
            .map(|_| {
                let m = m.clone();
                goro::go(async move {
                    for i in 0..N {
                        let mut g = m.lock().await;
                        assert!(!g.1, "two holders at once");
                        g.1 = true;
                        if i % 64 == 0 {
                            goro::yield_now().await; // hold it across a reschedule
                        }
                        g.0 += 1;
                        g.1 = false;
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
        m.lock().await.0
    });
    assert_eq!(total, GS * N);
}

#[test]
fn hammer_one_p() {
    hammer(1);
}

#[test]
fn hammer_two_ps() {
    hammer(2);
}

#[test]
fn threads_and_gs_share_one_mutex() {
    let _w = watchdog("mixed", LIMIT);
    let m = Arc::new(Mutex::new(0u64));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                for _ in 0..5_000 {
                    *m.lock_blocking() += 1;
                }
            })
        })
        .collect();
    rt(2).block_on(async {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                goro::go(async move {
                    for _ in 0..5_000 {
                        *m.lock().await += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    });
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*m.lock_blocking(), 20_000);
}

/// TestMutexFairness: one G locks and unlocks in a tight loop; another wants the lock once and
/// must get it (FIFO hand-off), long before the first G's loop would end on its own.
#[test]
fn relocking_g_cannot_starve_a_waiter() {
    let _w = watchdog("fairness", LIMIT);
    let m = Arc::new(Mutex::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    rt(2).block_on(async {
        let (m2, stop2) = (m.clone(), stop.clone());
        let hog = goro::go(async move {
            while !stop2.load(SeqCst) {
                drop(m2.lock().await);
            }
        });
        let m3 = m.clone();
        goro::go(async move { drop(m3.lock().await) }).await.unwrap();
        stop.store(true, SeqCst);
        hog.await.unwrap();
    });
}

#[test]
fn try_lock_fails_while_held() {
    let m = Mutex::new(1);
    rt(2).block_on(async {
        let mut g = m.lock().await;
        assert!(m.try_lock().is_none());
        *g += 1;
        drop(g);
        assert_eq!(*m.try_lock().unwrap(), 2);
    });
}

#[test]
fn dropped_lock_future_leaves_the_queue() {
    let m = Mutex::new(0);
    let g = m.try_lock().unwrap();
    {
        let mut waiting = pin!(m.lock());
        assert!(poll_noop(waiting.as_mut()).is_pending()); // queued behind `g`
    } // dropped while queued
    let mut next = pin!(m.lock());
    assert!(poll_noop(next.as_mut()).is_pending());
    drop(g);
    // The permit went to `next`, not to the dropped future.
    match poll_noop(next.as_mut()) {
        Poll::Ready(mut g) => *g += 1,
        Poll::Pending => panic!("the unlock was handed to a dropped waiter"),
    }
    assert_eq!(*m.try_lock().unwrap(), 1);
}

#[test]
fn dropped_after_being_handed_the_lock_unlocks() {
    let m = Mutex::new(());
    let g = m.try_lock().unwrap();
    let mut waiting = Box::pin(m.lock());
    assert!(poll_noop(waiting.as_mut()).is_pending());
    drop(g); // hands the lock to `waiting`
    drop(waiting); // never polled again: must give it back
    assert!(m.try_lock().is_some());
}

#[test]
fn panic_while_locked_unlocks_without_poisoning() {
    let m = Mutex::new(5);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut g = m.lock_blocking();
        *g = 6;
        panic!("boom");
    }));
    assert!(r.is_err());
    assert_eq!(*m.try_lock().expect("unlocked by unwinding"), 6);
}

#[test]
fn into_inner_get_mut_default_debug() {
    let mut m: Mutex<Vec<u8>> = Mutex::default();
    m.get_mut().push(1);
    assert_eq!(format!("{m:?}"), "Mutex { data: [1] }");
    let g = m.try_lock().unwrap();
    assert_eq!(format!("{m:?}"), "Mutex { data: <locked> }");
    drop(g);
    assert_eq!(m.into_inner(), [1]);
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Mutex<u8>>();
    send_sync::<goro::sync::MutexGuard<'static, u8>>();
}
