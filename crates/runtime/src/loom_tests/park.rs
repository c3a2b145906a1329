//! Models of [`Parker`] (an M's sleep) and the thread waker behind [`JoinHandle::join`]:
//! an unpark before, during or after a park is never lost. A lost wake-up shows as a loom
//! deadlock (the parked thread waits on the condvar forever).
//!
//! [`JoinHandle::join`]: crate::JoinHandle::join

use super::g::{assert_freed, settle, shared, spawn, spawn_m, Counts, READY};
use super::model;
use crate::park::Parker;
use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;

/// One park against one unpark from another thread, in every order: the unpark before the
/// park (the token is kept), between its fast-path check and its CAS to `PARKED` (the sleeper
/// sees `NOTIFIED` under the lock), or while it waits (the unparker takes the lock, then
/// signals).
#[test]
fn loom_park_vs_unpark() {
    model(|| {
        let p = Arc::new(Parker::new());
        let t = {
            let p = p.clone();
            thread::spawn(move || p.unpark())
        };
        p.park();
        t.join().unwrap();
    });
}

/// A parker is reused: the second park consumes only the second unpark (the first park left
/// the state `EMPTY`, whichever path it returned by).
#[test]
fn loom_park_twice() {
    model(|| {
        let p = Arc::new(Parker::new());
        let round = Arc::new(AtomicBool::new(false));
        let t = {
            let (p, round) = (p.clone(), round.clone());
            thread::spawn(move || {
                p.unpark();
                while !round.load(SeqCst) {
                    thread::yield_now();
                }
                p.unpark();
            })
        };
        p.park();
        round.store(true, SeqCst);
        p.park();
        t.join().unwrap();
    });
}

/// Two unparkers at once (an M woken by `startm` and by its main future's waker): the sleeper
/// wakes, and neither unpark finds the state in a value it does not expect.
#[test]
fn loom_park_vs_two_unparks() {
    model(|| {
        let p = Arc::new(Parker::new());
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let p = p.clone();
                thread::spawn(move || p.unpark())
            })
            .collect();
        p.park();
        for t in ts {
            t.join().unwrap();
        }
    });
}

/// `park_timeout` against an unpark (loom has no time: its timed wait is an untimed one, so
/// this checks that the timed path, too, never sleeps through an unpark).
#[test]
fn loom_park_timeout_vs_unpark() {
    model(|| {
        let p = Arc::new(Parker::new());
        let t = {
            let p = p.clone();
            thread::spawn(move || p.unpark())
        };
        p.park_timeout(std::time::Duration::from_millis(1));
        t.join().unwrap();
    });
}

/// `JoinHandle::join` on a plain thread (a `ThreadWaker` over a `Parker`) while an M completes
/// the G: the completion's wake of the join waker is never lost, and `join` returns the output.
#[test]
fn loom_join_blocking_vs_complete() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let jh = spawn(&sh, READY, &counts);
        let m = spawn_m(&sh);
        drop(jh.join().expect("the G returned"));
        m.join().unwrap();
        assert_eq!(settle(&sh), (0, 0));
        assert_eq!(counts.out_drops.load(SeqCst), 1);
        assert_eq!(counts.fut_drops.load(SeqCst), 1);
        assert_freed(sh);
    });
}
