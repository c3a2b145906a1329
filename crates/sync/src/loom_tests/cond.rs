//! Cond: a signal is never lost between a waiter's unlock and its park, a broadcast reaches
//! every waiter of its round, and a signalled waiter that gives up passes the signal on.

use super::poll_once_then_drop;
use crate::{Cond, Mutex};
use loom::sync::Arc;
use loom::thread;

/// One waiter, one signaller that sets the flag under the lock and signals after unlocking: the
/// waiter always wakes (queued before it unlocked, so the signal finds it).
#[test]
fn loom_cond_signal_not_lost() {
    loom::model(|| {
        let s = Arc::new((Mutex::new(false), Cond::new()));
        let s2 = s.clone();
        let signaller = thread::spawn(move || {
            *s2.0.lock_blocking() = true;
            s2.1.signal();
        });
        let mut g = s.0.lock_blocking();
        while !*g {
            g = s.1.wait_blocking(g);
        }
        drop(g);
        signaller.join().unwrap();
    });
}

/// Two waiters, one broadcast: both wake.
#[test]
fn loom_cond_broadcast_wakes_all() {
    loom::model(|| {
        let s = Arc::new((Mutex::new(false), Cond::new()));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    let mut g = s.0.lock_blocking();
                    while !*g {
                        g = s.1.wait_blocking(g);
                    }
                })
            })
            .collect();
        *s.0.lock_blocking() = true;
        s.1.broadcast();
        for w in waiters {
            w.join().unwrap();
        }
    });
}

/// One item, one signal, two waiters of which one gives up after queueing (its future polled
/// once, then dropped). If the signal went to the one that gave up, it must be passed on:
/// otherwise the other waits forever, which loom reports as a deadlock.
#[test]
fn loom_cond_given_up_wait_passes_signal_on() {
    loom::model(|| {
        let s = Arc::new((Mutex::new(0u32), Cond::new()));
        let s1 = s.clone();
        let quitter = thread::spawn(move || {
            let g = s1.0.lock_blocking();
            if *g == 0 {
                poll_once_then_drop(s1.1.wait(g));
            }
        });
        let s2 = s.clone();
        let consumer = thread::spawn(move || {
            let mut g = s2.0.lock_blocking();
            while *g == 0 {
                g = s2.1.wait_blocking(g);
            }
            *g -= 1;
        });
        *s.0.lock_blocking() += 1;
        s.1.signal();
        quitter.join().unwrap();
        consumer.join().unwrap();
        assert_eq!(*s.0.lock_blocking(), 0);
    });
}
