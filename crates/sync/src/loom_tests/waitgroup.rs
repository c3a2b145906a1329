//! WaitGroup: add/done/wait, a waiter released exactly when the counter reaches zero, waits
//! dropped mid-way.

use super::poll_once_then_drop;
use crate::WaitGroup;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};

/// Two Gs each write their own cell, then `done`; the waiter reads both after `wait`. Released
/// early (before the second `done`) it would race with a write, which loom reports.
#[test]
fn loom_wg_waiter_released_at_zero() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(2);
        let cells = Arc::new([UnsafeCell::new(0u32), UnsafeCell::new(0u32)]);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (wg, cells) = (wg.clone(), cells.clone());
                thread::spawn(move || {
                    // SAFETY: only this thread writes cell i before `done`; the waiter reads it after.
                    cells[i].with_mut(|p| unsafe { *p = 1 });
                    wg.done();
                })
            })
            .collect();
        wg.wait_blocking();
        for c in cells.iter() {
            // SAFETY: loom checks that the write happened-before this read.
            assert_eq!(c.with(|p| unsafe { *p }), 1);
        }
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Two waiters, one `done`: both are released (the release wakes every waiter of its round).
#[test]
fn loom_wg_two_waiters() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let wg = wg.clone();
                thread::spawn(move || wg.wait_blocking())
            })
            .collect();
        wg.done();
        for w in waiters {
            w.join().unwrap();
        }
    });
}

/// A wait that queued (or not) is dropped, then its thread calls `done`, while another thread
/// starts a new round (`add(1)`, `done`) at any moment. The dropped wait must leave no phantom
/// waiter: with one, the counter would reach zero with a waiter counted, and a new round's
/// `add(1)` from zero would panic with Go's misuse message.
#[test]
fn loom_wg_dropped_wait_leaves_no_waiter() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let w = wg.clone();
        let dropper = thread::spawn(move || {
            poll_once_then_drop(w.wait());
            w.done();
        });
        wg.add(1);
        wg.done();
        dropper.join().unwrap();
        wg.wait_blocking();
    });
}

/// A wait is dropped while the counter reaches zero and another waiter waits: the other waiter
/// is released, and the count stays exact whether the drop removed a counted node, an uncounted
/// one that the release was about to drain, or found its node already released (a new round
/// then works: an off-by-one in the count would make its `add(1)` panic or its wait hang).
#[test]
fn loom_wg_dropped_wait_vs_release() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let w = wg.clone();
        let waiter = thread::spawn(move || w.wait_blocking());
        let w = wg.clone();
        let dropper = thread::spawn(move || {
            poll_once_then_drop(w.wait());
        });
        wg.done();
        waiter.join().unwrap();
        dropper.join().unwrap();
        wg.add(1);
        wg.done();
        wg.wait_blocking();
    });
}

/// A new round begins while the previous zero is still releasing (`WakeBatch::CAP` is 1 under
/// loom, so the release unlocks between its two waiters): the new round's waiter, queued behind
/// an old one, is not released by the old zero (it carries the new generation), the old waiter
/// is, and the new round's own zero then releases the new waiter.
///
/// The main thread owns all three wait futures (polling them by hand), so the queue order is
/// fixed: `first` (released first, which lets the main thread go on), then `old`, then the new
/// round's `new`.
#[test]
fn loom_wg_new_round_not_released_by_old_zero() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = pin!(wg.wait());
        let mut old = pin!(wg.wait());
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert!(old.as_mut().poll(&mut cx).is_pending());
        let w = wg.clone();
        let doner = thread::spawn(move || w.done());
        goro_runtime::__private::block_on_thread(first.as_mut());
        // Round 2, possibly while `old` is still queued for round 1's release (Go calls this a
        // misuse; goro tolerates it).
        wg.add(1);
        let mut new = pin!(wg.wait());
        assert!(new.as_mut().poll(&mut cx).is_pending(), "round 2 has not reached zero");
        doner.join().unwrap();
        assert!(old.as_mut().poll(&mut cx).is_ready(), "round 1's zero releases every round 1 waiter");
        assert!(new.as_mut().poll(&mut cx).is_pending(), "released by round 1's zero");
        wg.done(); // this thread's own release completes the node before returning
        assert!(new.as_mut().poll(&mut cx).is_ready());
    });
}

/// A waiter of the old round is dropped while the release drains it (`WakeBatch::CAP` is 1
/// under loom: the release unlocks after waking `first`, with `second` still queued). The drop
/// must not uncount `second` (the release already did): an extra decrement would borrow from
/// the counter, and the next round's `done` would panic with a negative counter.
#[test]
fn loom_wg_drop_while_draining() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = pin!(wg.wait());
        let mut second = Box::pin(wg.wait());
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        let w = wg.clone();
        let doner = thread::spawn(move || w.done());
        goro_runtime::__private::block_on_thread(first.as_mut());
        drop(second);
        doner.join().unwrap();
        wg.add(1);
        wg.done();
        wg.wait_blocking();
    });
}

/// The `done` that reaches zero with a waiter counted is slow to take the lock; meanwhile that
/// waiter gives up, a new round starts (legal: no waiter is left) and a new waiter queues. The
/// late release must see the new round's counter and leave the new waiter alone.
#[test]
fn loom_wg_late_release_after_new_round() {
    loom::model(|| {
        let wg = WaitGroup::new();
        wg.add(1);
        let mut cx = Context::from_waker(Waker::noop());
        let mut old = Box::pin(wg.wait());
        assert!(old.as_mut().poll(&mut cx).is_pending());
        let w = wg.clone();
        let doner = thread::spawn(move || w.done());
        drop(old);
        wg.add(1);
        let mut new = pin!(wg.wait());
        assert!(new.as_mut().poll(&mut cx).is_pending(), "the counter is 1 or 2 here");
        doner.join().unwrap();
        assert!(new.as_mut().poll(&mut cx).is_pending(), "released while the new round's counter is 1");
        wg.done();
        assert!(new.as_mut().poll(&mut cx).is_ready());
    });
}
