//! `goro::context`: Go's `src/context/context_test.go` ported in spirit (Background/TODO,
//! WithCancel, ParentFinishesChild, ChildFinishesFirst, Deadline, Timeout, CanceledTimeout,
//! Values, SimultaneousCancels, InterlockedCancels, Layers, CancelRemoves,
//! WithCancelCanceledParent, cause), plus what goro adds: `done()` in `select!` next to other
//! channels, many Gs and plain threads released by one cancel, `err()` set before `done()`
//! closes, and the tree's bookkeeping (a long-lived parent does not grow).
//!
//! Waits are on the channels under test, bounded by `HANG` (a failure detector, never a
//! synchronization); the only sleeps check that something does *not* happen.

mod common;

use common::{rt, watchdog, HANG};
use goro::context::{self, CancelFunc, Context, ContextError};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

/// Whether `ctx.done()` is closed now, without waiting.
fn is_closed(ctx: &Context) -> bool {
    match ctx.done().try_recv() {
        Err(goro::chan::TryRecvError::Closed) => true,
        Err(goro::chan::TryRecvError::Empty) => false,
        Ok(()) => panic!("a value was sent on a done channel"),
    }
}

/// Waits for `ctx` to be done, at most `HANG`; panics naming `what` if it is not.
async fn wait_done(ctx: &Context, what: &str) {
    goro::select! {
        recv(ctx.done()) -> v => assert_eq!(v, None, "{what}: done() delivered a value"),
        recv(goro::time::after(HANG)) -> _ => panic!("{what}: not done after {HANG:?}"),
    }
}

fn assert_live(ctx: &Context, what: &str) {
    assert!(!is_closed(ctx), "{what}: done() closed, but it should block");
    assert_eq!(ctx.err(), None, "{what}: err()");
}

fn assert_done(ctx: &Context, what: &str, err: ContextError) {
    assert!(is_closed(ctx), "{what}: done() blocks, but it should be closed");
    assert_eq!(ctx.err(), Some(err), "{what}: err()");
}

#[test]
fn types_are_send_sync_clone() {
    fn check<T: Clone + Send + Sync + 'static>() {}
    check::<Context>();
    check::<CancelFunc>();
    check::<context::CancelCauseFunc>();
    check::<ContextError>();
    check::<context::Cause>();
}

#[test]
fn error_texts_are_gos() {
    assert_eq!(ContextError::Canceled.to_string(), "context canceled");
    assert_eq!(ContextError::DeadlineExceeded.to_string(), "context deadline exceeded");
    let e: Box<dyn std::error::Error + Send + Sync> = ContextError::DeadlineExceeded.into();
    assert_eq!(e.to_string(), "context deadline exceeded");
    assert!(ContextError::DeadlineExceeded.is_timeout());
    assert!(!ContextError::Canceled.is_timeout());
}

// ---------------------------------------------------------------------------------------------
// TestBackground, TestTODO
// ---------------------------------------------------------------------------------------------

#[test]
fn background_and_todo_are_never_done() {
    for (ctx, name) in [(Context::background(), "context.Background"), (Context::todo(), "context.TODO")] {
        assert_live(&ctx, name);
        assert_eq!(ctx.deadline(), None);
        assert_eq!(format!("{ctx:?}"), name);
        assert!(ctx.done().same_channel(&ctx.done()));
        assert!(!ctx.done().is_closed());
        assert_eq!(ctx.num_children(), 0);
        assert!(context::cause(&ctx).is_none());
    }
    // Every handle of the roots is one and the same context, and nothing closes its channel:
    // not even a cancelled descendant.
    let (child, cancel) = context::with_cancel(&Context::background());
    cancel();
    assert!(is_closed(&child));
    assert_live(&Context::background(), "background after a child's cancel");
    assert!(Context::default().done().same_channel(&Context::background().done()));
}

#[test]
fn background_done_blocks_in_select() {
    let _w = watchdog("background_done_blocks_in_select", LIMIT);
    rt(2).block_on(async {
        let bg = Context::background();
        let fired = goro::select! {
            recv(bg.done()) -> _ => false,
            recv(goro::time::after(Duration::from_millis(20))) -> _ => true,
        };
        assert!(fired, "the background's done() fired");
    });
}

// ---------------------------------------------------------------------------------------------
// TestWithCancel
// ---------------------------------------------------------------------------------------------

#[test]
fn with_cancel_cancels_itself_and_its_children() {
    let (c1, cancel) = context::with_cancel(&Context::background());
    assert_eq!(format!("{c1:?}"), "context.Background.WithCancel");
    let (c2, _cancel2) = context::with_cancel(&c1);
    let c3 = context::with_value(&c2, "k", 1u8);
    for (c, n) in [(&c1, "c1"), (&c2, "c2"), (&c3, "c3")] {
        assert_live(c, n);
    }
    cancel();
    // No waiting: when cancel() returns, the whole subtree is cancelled (Go's test sleeps).
    for (c, n) in [(&c1, "c1"), (&c2, "c2"), (&c3, "c3")] {
        assert_done(c, n, ContextError::Canceled);
    }
}

#[test]
fn done_is_one_channel_per_context() {
    let (ctx, cancel) = context::with_cancel(&Context::background());
    let v = context::with_value(&ctx, 1u32, "v");
    let (other, cancel_other) = context::with_cancel(&Context::background());
    assert!(ctx.done().same_channel(&ctx.done()));
    assert!(ctx.clone().done().same_channel(&ctx.done()));
    assert!(v.done().same_channel(&ctx.done()), "a value context shares its ancestor's channel");
    assert!(!other.done().same_channel(&ctx.done()));
    let early = ctx.done(); // taken before the cancel, released by it
    cancel();
    assert_eq!(early.recv_blocking(), None);
    cancel_other();
}

// ---------------------------------------------------------------------------------------------
// TestParentFinishesChild, TestWithCancelCanceledParent
// ---------------------------------------------------------------------------------------------

#[test]
fn parent_finishes_child() {
    let _w = watchdog("parent_finishes_child", LIMIT);
    rt(2).block_on(async {
        // parent -> cancel_child
        // parent -> value_child -> timer_child
        let (parent, cancel) = context::with_cancel(&Context::background());
        let (cancel_child, _cancel1) = context::with_cancel(&parent);
        let value_child = context::with_value(&parent, "key", "value");
        let (timer_child, _cancel2) = context::with_timeout(&value_child, Duration::from_secs(10_000 * 3600));
        for (c, n) in [(&parent, "parent"), (&cancel_child, "cancel"), (&value_child, "value"), (&timer_child, "timer")]
        {
            assert_live(c, n);
        }
        // The value node is not cancelable: the timer child registers with `parent`.
        assert_eq!(parent.num_children(), 2);
        assert_eq!(value_child.num_children(), 2, "a value node reports its cancelable ancestor");

        cancel();
        assert_eq!(parent.num_children(), 0, "cancel did not clear the children");
        for (c, n) in [(&parent, "parent"), (&cancel_child, "cancel"), (&value_child, "value"), (&timer_child, "timer")]
        {
            assert_done(c, n, ContextError::Canceled);
        }

        // Children of a cancelled parent are born cancelled, with its error.
        let precanceled = context::with_value(&parent, "key", "value");
        assert_done(&precanceled, "with_value of a cancelled parent", ContextError::Canceled);
        let (born, _c) = context::with_cancel(&parent);
        assert_done(&born, "with_cancel of a cancelled parent", ContextError::Canceled);
        let (born, _c) = context::with_timeout(&parent, Duration::from_secs(3600));
        assert_done(&born, "with_timeout of a cancelled parent", ContextError::Canceled);
        assert_eq!(parent.num_children(), 0, "a child born cancelled is not registered");
    });
}

#[test]
fn child_of_deadline_exceeded_parent_is_born_with_its_error() {
    let (parent, _cancel) = context::with_deadline(&Context::background(), Instant::now());
    assert_done(&parent, "parent with a past deadline", ContextError::DeadlineExceeded);
    let (child, _c) = context::with_cancel(&parent);
    assert_done(&child, "child", ContextError::DeadlineExceeded);
}

// ---------------------------------------------------------------------------------------------
// TestChildFinishesFirst, TestCancelRemoves
// ---------------------------------------------------------------------------------------------

#[test]
fn child_finishes_first() {
    let (cancelable, stop) = context::with_cancel(&Context::background());
    for parent in [Context::background(), cancelable.clone()] {
        let (child, cancel) = context::with_cancel(&parent);
        assert_live(&parent, "parent");
        assert_live(&child, "child");
        let expect = if parent.done().same_channel(&Context::background().done()) { 0 } else { 1 };
        assert_eq!(parent.num_children(), expect);

        cancel();
        assert_eq!(parent.num_children(), 0, "the child's cancel did not remove it from its parent");
        assert_done(&child, "child", ContextError::Canceled);
        assert_live(&parent, "parent after the child's cancel");
    }
    stop();
}

#[test]
fn cancel_removes_cancel_and_timeout_children() {
    let _w = watchdog("cancel_removes_cancel_and_timeout_children", LIMIT);
    rt(2).block_on(async {
        let (ctx, stop) = context::with_cancel(&Context::background());
        assert_eq!(ctx.num_children(), 0);
        let (_c, cancel) = context::with_cancel(&ctx);
        assert_eq!(ctx.num_children(), 1);
        cancel();
        assert_eq!(ctx.num_children(), 0);
        let (_c, cancel) = context::with_timeout(&ctx, Duration::from_secs(3600));
        assert_eq!(ctx.num_children(), 1);
        cancel();
        assert_eq!(ctx.num_children(), 0);
        // A deadline that fires removes its context as well: right after its `done` closes (as
        // in Go, the child is unlinked from its parent just after), so wait for it.
        let (c, _cancel) = context::with_timeout(&ctx, Duration::from_millis(1));
        wait_done(&c, "1ms timeout").await;
        while ctx.num_children() != 0 {
            goro::runtime::yield_now().await; // the watchdog bounds this
        }
        stop();
    });
}

#[test]
fn long_lived_parent_does_not_grow() {
    let _w = watchdog("long_lived_parent_does_not_grow", LIMIT);
    rt(2).block_on(async {
        let (server, stop) = context::with_cancel(&Context::background());
        let keep = (0..3).map(|_| context::with_cancel(&server)).collect::<Vec<_>>();
        for i in 0..20_000 {
            // One request: a value, a timeout, a nested cancel, all released by `cancel`.
            let req = context::with_value(&server, "request", i);
            let (ctx, cancel) = context::with_timeout(&req, Duration::from_secs(3600));
            let (inner, cancel_inner) = context::with_cancel(&ctx);
            assert_eq!(server.num_children(), 4);
            if i % 2 == 0 {
                cancel_inner(); // the inner one first, on half of them
            }
            cancel();
            assert_done(&inner, "inner", ContextError::Canceled);
        }
        assert_eq!(server.num_children(), 3, "cancelled children stayed in their parent");
        // Each cancel stopped its hour-long timer: the runtime swept the stopped entries out of
        // its timer heaps instead of keeping 20 000 pending ones.
        let timers = goro::runtime::metrics().timers;
        assert!(timers < 2_000, "{timers} timers in the heaps: cancel did not stop the deadlines' timers");
        for (_, c) in &keep {
            c();
        }
        assert_eq!(server.num_children(), 0);
        stop();
    });
}

#[test]
fn dropped_uncancelled_context_does_not_report_done() {
    // Nobody can cancel it any more, so its done() must block forever, as in Go; in particular
    // dropping its last handle must not close the channel.
    let done = {
        let (ctx, _cancel) = context::with_cancel(&Context::background());
        ctx.done()
    };
    assert_eq!(done.try_recv(), Err(goro::chan::TryRecvError::Empty));
    assert!(!done.is_closed());
}

// ---------------------------------------------------------------------------------------------
// TestDeadline, TestTimeout, TestCanceledTimeout
// ---------------------------------------------------------------------------------------------

#[test]
fn timeout_fires_with_deadline_exceeded_not_early() {
    let _w = watchdog("timeout_fires_with_deadline_exceeded_not_early", LIMIT);
    rt(2).block_on(async {
        for _ in 0..5 {
            let start = Instant::now();
            let (ctx, cancel) = context::with_timeout(&Context::background(), Duration::from_millis(10));
            assert!(format!("{ctx:?}").starts_with("context.Background.WithDeadline("), "{ctx:?}");
            let deadline = ctx.deadline().expect("a timeout context has a deadline");
            assert!(deadline >= start + Duration::from_millis(10));
            assert_eq!(ctx.err(), None, "done before 10ms");
            ctx.done().recv().await;
            let took = start.elapsed();
            assert!(took >= Duration::from_millis(10), "fired after {took:?}, before its 10ms");
            assert!(took < Duration::from_secs(2), "fired after {took:?}");
            assert!(Instant::now() >= deadline);
            assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
            let cause = context::cause(&ctx).unwrap();
            assert_eq!(cause.downcast_ref::<ContextError>(), Some(&ContextError::DeadlineExceeded));
            cancel(); // after the deadline: no effect on err
            assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
        }
    });
}

#[test]
fn deadline_in_the_past_or_now_is_done_at_once() {
    // No runtime needed: no timer is armed.
    let bg = Context::background();
    let (c, _cancel) = context::with_deadline(&bg, Instant::now() - Duration::from_millis(1));
    assert_done(&c, "deadline in the past", ContextError::DeadlineExceeded);
    let (c, _cancel) = context::with_deadline(&bg, Instant::now());
    assert_done(&c, "deadline now", ContextError::DeadlineExceeded);
    let (c, _cancel) = context::with_timeout(&bg, Duration::ZERO);
    assert_done(&c, "zero timeout", ContextError::DeadlineExceeded);
}

#[test]
fn deadline_is_inherited_and_never_extended() {
    let _w = watchdog("deadline_is_inherited_and_never_extended", LIMIT);
    rt(2).block_on(async {
        let bg = Context::background();
        let start = Instant::now();
        let (parent, cancel_parent) = context::with_timeout(&bg, Duration::from_millis(50));
        let pd = parent.deadline().unwrap();

        // A later deadline is the parent's (Go's test: WithDeadline+otherContext+WithDeadline).
        let (later, cancel_later) = context::with_deadline(&parent, start + Duration::from_secs(3600));
        assert_eq!(later.deadline(), Some(pd));
        assert!(format!("{later:?}").ends_with(".WithCancel"), "{later:?}");
        // An earlier one is its own.
        let (earlier, cancel_earlier) = context::with_timeout(&parent, Duration::from_millis(5));
        let ed = earlier.deadline().unwrap();
        assert!(ed < pd);
        // Values and plain cancels inherit it.
        let (c, cancel_c) = context::with_cancel(&context::with_value(&earlier, 1u8, 1u8));
        assert_eq!(c.deadline(), Some(ed));
        assert_eq!(context::with_value(&parent, 1u8, 1u8).deadline(), Some(pd));
        assert_eq!(parent.num_children(), 2);

        wait_done(&c, "the 5ms grandchild").await;
        assert_eq!(c.err(), Some(ContextError::DeadlineExceeded), "a deadline propagates as DeadlineExceeded");
        assert!(Instant::now() >= ed);
        assert_done(&earlier, "earlier", ContextError::DeadlineExceeded);

        wait_done(&later, "child of the 50ms parent").await;
        assert!(Instant::now() >= pd, "the child ended before its parent's deadline");
        // (`wait_done` gives up after 20s: long before the child's own hour.)
        assert_eq!(later.err(), Some(ContextError::DeadlineExceeded));
        assert_done(&parent, "parent", ContextError::DeadlineExceeded);
        assert_eq!(parent.num_children(), 0);
        for c in [cancel_parent, cancel_later, cancel_earlier, cancel_c] {
            c();
        }
    });
}

#[test]
fn cancel_before_the_deadline_wins_and_stops_the_timer() {
    let _w = watchdog("cancel_before_the_deadline_wins_and_stops_the_timer", LIMIT);
    rt(2).block_on(async {
        let (parent, stop) = context::with_timeout(&Context::background(), Duration::from_secs(3600));
        let (ctx, cancel) = context::with_timeout(&parent, Duration::from_millis(20));
        cancel();
        assert_done(&ctx, "cancelled timeout", ContextError::Canceled);
        assert_live(&parent, "its parent");
        // Past the child's deadline: the error does not turn into DeadlineExceeded (this sleep
        // checks that nothing happens; it synchronizes nothing).
        goro::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(ctx.err(), Some(ContextError::Canceled));
        assert_live(&parent, "its parent after the child's deadline");
        stop();
    });
}

#[test]
fn huge_timeout_means_no_deadline_overflow() {
    let (ctx, cancel) = context::with_timeout(&Context::background(), Duration::MAX);
    assert_live(&ctx, "Duration::MAX timeout");
    cancel();
    assert_done(&ctx, "Duration::MAX timeout", ContextError::Canceled);
}

// ---------------------------------------------------------------------------------------------
// Cancel: idempotent, concurrent, from Gs and threads; TestSimultaneousCancels,
// TestInterlockedCancels
// ---------------------------------------------------------------------------------------------

#[test]
fn cancel_is_idempotent_and_concurrent_from_threads_and_gs() {
    let _w = watchdog("cancel_is_idempotent_and_concurrent_from_threads_and_gs", LIMIT);
    let runtime = rt(2);
    for _ in 0..50 {
        let (ctx, cancel) = context::with_cancel(&Context::background());
        let (child, _cc) = context::with_cancel(&ctx);
        // One close releases the 4 threads and the 4 Gs at once.
        let (start_tx, start) = goro::chan::<()>(0);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (cancel, start, child) = (cancel.clone(), start.clone(), child.clone());
                std::thread::spawn(move || {
                    start.recv_blocking();
                    cancel();
                    // When any cancel() returns, the subtree is cancelled.
                    assert_eq!(child.err(), Some(ContextError::Canceled));
                })
            })
            .collect();
        let gs: Vec<_> = (0..4)
            .map(|_| {
                let (cancel, start, child) = (cancel.clone(), start.clone(), child.clone());
                runtime.spawn(async move {
                    start.recv().await;
                    cancel();
                    assert_eq!(child.err(), Some(ContextError::Canceled));
                })
            })
            .collect();
        assert_live(&child, "child before the cancels");
        start_tx.close();
        for t in threads {
            t.join().unwrap();
        }
        for g in gs {
            g.join().unwrap();
        }
        cancel();
        assert_done(&ctx, "ctx", ContextError::Canceled);
        assert_done(&child, "child", ContextError::Canceled);
    }
}

#[test]
fn simultaneous_cancels() {
    let _w = watchdog("simultaneous_cancels", LIMIT);
    rt(2).block_on(async {
        // A tree of ~100 contexts, 4 children each, all cancelled at once in spawn order.
        let (root, cancel) = context::with_cancel(&Context::background());
        let mut all: Vec<(Context, CancelFunc)> = vec![(root.clone(), cancel)];
        let mut q = 0;
        while all.len() < 100 {
            let parent = all[q].0.clone();
            q += 1;
            for _ in 0..4 {
                all.push(context::with_cancel(&parent));
            }
        }
        let wg = goro::sync::WaitGroup::new();
        for (_, cancel) in all.iter().rev() {
            let cancel = cancel.clone();
            wg.go(async move { cancel() });
        }
        for (i, (ctx, _)) in all.iter().enumerate() {
            wait_done(ctx, &format!("context {i}")).await;
        }
        goro::select! {
            recv(goro::go(async move { wg.wait().await }).into_channel()) -> _ => {},
            recv(goro::time::after(HANG)) -> _ => panic!("cancel functions did not return"),
        }
        assert_eq!(root.err(), Some(ContextError::Canceled));
        assert_eq!(root.num_children(), 0);
    });
}

/// A `JoinHandle` as a channel, to bound a join with `select!`.
trait IntoChannel<T> {
    fn into_channel(self) -> goro::chan::Receiver<T>;
}

impl<T: Send + 'static> IntoChannel<T> for goro::runtime::JoinHandle<T> {
    fn into_channel(self) -> goro::chan::Receiver<T> {
        let (tx, rx) = goro::chan(1);
        goro::go(async move {
            let _ = tx.send(self.await.unwrap()).await;
        });
        rx
    }
}

#[test]
fn interlocked_cancels() {
    let _w = watchdog("interlocked_cancels", LIMIT);
    rt(2).block_on(async {
        for _ in 0..100 {
            let (parent, cancel_parent) = context::with_cancel(&Context::background());
            let (child, cancel_child) = context::with_cancel(&parent);
            let p = parent.clone();
            goro::go(async move {
                p.done().recv().await;
                cancel_child();
            });
            cancel_parent();
            wait_done(&child, "child").await;
        }
    });
}

// ---------------------------------------------------------------------------------------------
// done() in select!, many waiters, err() ordering
// ---------------------------------------------------------------------------------------------

#[test]
fn done_in_select_with_other_channels() {
    let _w = watchdog("done_in_select_with_other_channels", LIMIT);
    rt(2).block_on(async {
        let (ctx, cancel) = context::with_cancel(&Context::background());
        let (jobs_tx, jobs) = goro::chan::<u32>(0);
        let (results_tx, results) = goro::chan::<u32>(0);
        let worker = {
            let ctx = ctx.clone();
            goro::go(async move {
                let mut handled = 0;
                loop {
                    goro::select! {
                        recv(jobs) -> j => {
                            let j = j.expect("jobs is never closed");
                            goro::select! {
                                send(results_tx, j * j) -> r => r.unwrap(),
                                recv(ctx.done()) -> _ => return (handled, ctx.err()),
                            }
                            handled += 1;
                        },
                        recv(ctx.done()) -> _ => return (handled, ctx.err()),
                    }
                }
            })
        };
        for i in 1..=5 {
            jobs_tx.send(i).await.unwrap();
            assert_eq!(results.recv().await, Some(i * i));
        }
        cancel();
        let (handled, err) = worker.await.unwrap();
        assert_eq!(handled, 5);
        assert_eq!(err, Some(ContextError::Canceled));
        // The worker is gone: a send now has no receiver (a select with default proves it).
        assert!(jobs_tx.try_send(6).is_err());
    });
}

#[test]
fn many_gs_and_threads_waiting_on_one_done_are_all_released() {
    let _w = watchdog("many_gs_and_threads_waiting_on_one_done_are_all_released", LIMIT);
    const GS: usize = 1000;
    const THREADS: usize = 4;
    let runtime = rt(2);
    let (ctx, cancel) = context::with_cancel(&Context::background());
    let ready = Arc::new(AtomicUsize::new(0));
    let (tx, results) = goro::chan::<Option<ContextError>>(GS + THREADS);
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (ctx, tx, ready) = (ctx.clone(), tx.clone(), ready.clone());
            std::thread::spawn(move || {
                let done = ctx.done();
                ready.fetch_add(1, SeqCst);
                assert_eq!(done.recv_blocking(), None);
                tx.send_blocking(ctx.err()).unwrap();
            })
        })
        .collect();
    runtime.block_on(async move {
        for _ in 0..GS {
            let (ctx, tx, ready) = (ctx.clone(), tx.clone(), ready.clone());
            goro::go(async move {
                let done = ctx.done();
                ready.fetch_add(1, SeqCst);
                done.recv().await;
                tx.send(ctx.err()).await.unwrap();
            });
        }
        drop(tx);
        // Every waiter holds the channel before the cancel (the count is no synchronization of
        // the cancel itself: a waiter arriving late would still be released).
        let deadline = Instant::now() + HANG;
        while ready.load(SeqCst) < GS + THREADS {
            assert!(Instant::now() < deadline, "waiters did not start");
            goro::runtime::yield_now().await;
        }
        assert_eq!(results.try_recv(), Err(goro::chan::TryRecvError::Empty), "a waiter was released early");
        cancel();
        let mut n = 0;
        while let Some(err) = goro::select! {
            recv(results) -> r => r,
            recv(goro::time::after(HANG)) -> _ => panic!("only {n} of {} waiters released", GS + THREADS),
        } {
            assert_eq!(err, Some(ContextError::Canceled));
            n += 1;
        }
        assert_eq!(n, GS + THREADS);
    });
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn err_is_set_before_done_closes() {
    let _w = watchdog("err_is_set_before_done_closes", LIMIT);
    rt(2).block_on(async {
        for round in 0..200 {
            let (ctx, cancel) = context::with_cancel(&Context::background());
            let (child, _c) = context::with_cancel(&context::with_value(&ctx, "round", round));
            let observers: Vec<_> = (0..4)
                .map(|i| {
                    let c = if i % 2 == 0 { ctx.clone() } else { child.clone() };
                    goro::go(async move {
                        // Spin on a non-blocking receive so the observer may run at the very
                        // moment the channel closes, on the other P.
                        loop {
                            match c.done().try_recv() {
                                Err(goro::chan::TryRecvError::Closed) => return c.err(),
                                Err(goro::chan::TryRecvError::Empty) => goro::runtime::yield_now().await,
                                Ok(()) => panic!("a value on done"),
                            }
                        }
                    })
                })
                .collect();
            // Cancel from a plain thread, concurrently with the observers on both Ps.
            let t = std::thread::spawn(move || cancel());
            for o in observers {
                assert_eq!(o.await.unwrap(), Some(ContextError::Canceled), "done() closed before err() was set");
            }
            t.join().unwrap();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// TestValues, TestLayersCancel, TestLayersTimeout
// ---------------------------------------------------------------------------------------------

#[derive(PartialEq, Debug)]
struct Key1(i32);
#[derive(PartialEq, Debug)]
struct Key2(i32);

const K1: Key1 = Key1(1);
const K2: Key2 = Key2(1); // same int as K1, another type
const K3: Key2 = Key2(3); // same type as K2, another int

fn check_values(c: &Context, name: &str, v1: Option<&str>, v2: Option<&str>, v3: Option<&str>) {
    assert_eq!(c.value::<&str>(&K1).copied(), v1, "{name}: k1");
    assert_eq!(c.value::<&str>(&K2).copied(), v2, "{name}: k2");
    assert_eq!(c.value::<&str>(&K3).copied(), v3, "{name}: k3");
}

#[test]
fn values() {
    let c0 = Context::background();
    check_values(&c0, "c0", None, None, None);

    let c1 = context::with_value(&c0, K1, "c1k1");
    check_values(&c1, "c1", Some("c1k1"), None, None);
    // Go: `context.Background.WithValue(type context.key1, val c1k1)`; goro names the types
    // (their exact spelling is `std::any::type_name`'s).
    let shown = format!("{c1:?}");
    assert!(shown.starts_with("context.Background.WithValue(type ") && shown.contains("Key1"), "{shown}");

    let c2 = context::with_value(&c1, K2, "c2k2");
    check_values(&c2, "c2", Some("c1k1"), Some("c2k2"), None);

    let c3 = context::with_value(&c2, K3, "c3k3");
    check_values(&c3, "c3", Some("c1k1"), Some("c2k2"), Some("c3k3"));

    // Go's `WithValue(c3, k1, nil)`: a nearer key with a value of another type shadows.
    let c4 = context::with_value(&c3, K1, ());
    check_values(&c4, "c4", None, Some("c2k2"), Some("c3k3"));
    assert_eq!(c4.value::<()>(&K1), Some(&()));

    // Through cancelable nodes, before and after the cancel.
    let (c5, cancel) = context::with_cancel(&c3);
    let c6 = context::with_value(&c5, K3, "c6k3");
    check_values(&c6, "c6", Some("c1k1"), Some("c2k2"), Some("c6k3"));
    cancel();
    check_values(&c6, "c6 after cancel", Some("c1k1"), Some("c2k2"), Some("c6k3"));
    check_values(&c5, "c5 after cancel", Some("c1k1"), Some("c2k2"), Some("c3k3"));

    // Keys of other types never match, even with the same representation.
    assert_eq!(c3.value::<&str>(&1i32), None);
    let s = context::with_value(&c0, "name", String::from("gopher"));
    assert_eq!(s.value::<String>(&"name").map(String::as_str), Some("gopher"));
    assert_eq!(s.value::<String>(&String::from("name")), None, "a String key is not a &str key");
}

/// A tiny deterministic PRNG (xorshift), so a failing layering can be replayed from its seed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn layers(seed: u64, timeout: bool) {
    // The cancel variant must not race its timers: under load, building the layers can take
    // longer than 20 ms, and the leaf would then report DeadlineExceeded, not Canceled.
    let timeout_after = if timeout { Duration::from_millis(20) } else { Duration::from_secs(3600) };
    rt(2).block_on(async move {
        let mut rng = Rng(seed);
        let mut ctx = Context::background();
        let (mut vals, mut cancels, mut timers) = (Vec::new(), Vec::new(), 0);
        let mut i = 0;
        while i < 30 || timers == 0 || cancels.is_empty() || vals.is_empty() {
            match rng.below(3) {
                0 => {
                    ctx = context::with_value(&ctx, i, i * 10);
                    vals.push(i);
                }
                1 => {
                    let (c, cancel) = context::with_cancel(&ctx);
                    ctx = c;
                    cancels.push(cancel);
                }
                _ => {
                    let (c, cancel) = context::with_timeout(&ctx, timeout_after);
                    ctx = c;
                    cancels.push(cancel);
                    timers += 1;
                }
            }
            i += 1;
        }
        let check = |ctx: &Context, when: &str| {
            for &k in &vals {
                assert_eq!(ctx.value::<usize>(&k), Some(&(k * 10)), "seed {seed}, {when}: value {k}");
            }
        };
        assert!(format!("{ctx:?}").starts_with("context.Background."));
        check(&ctx, "before cancel");
        if timeout {
            assert_eq!(ctx.err(), None, "seed {seed}: done before its timeout");
            wait_done(&ctx, &format!("seed {seed}: timeout")).await;
            assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded), "seed {seed}");
            check(&ctx, "after timeout");
        } else {
            let k = rng.below(cancels.len() as u64) as usize;
            cancels[k]();
            assert_done(&ctx, &format!("seed {seed}: leaf after cancel {k}"), ContextError::Canceled);
            check(&ctx, "after cancel");
        }
        for c in cancels {
            c();
        }
    });
}

#[test]
fn layers_cancel() {
    let _w = watchdog("layers_cancel", LIMIT);
    for seed in 1..=20 {
        layers(seed * 0x9E37_79B9, false);
    }
}

#[test]
fn layers_timeout() {
    let _w = watchdog("layers_timeout", LIMIT);
    for seed in 1..=5 {
        layers(seed * 0x9E37_79B9, true);
    }
}

// ---------------------------------------------------------------------------------------------
// Causes (Go 1.20's WithCancelCause, Go 1.21's WithDeadlineCause / WithTimeoutCause)
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct Shutdown;
impl std::fmt::Display for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("shutting down")
    }
}
impl std::error::Error for Shutdown {}

#[test]
fn cause_propagates_to_the_subtree() {
    let (parent, cancel) = context::with_cancel_cause(&Context::background());
    let (child, _c) = context::with_cancel(&context::with_value(&parent, 0u8, 0u8));
    assert!(context::cause(&child).is_none());
    cancel(Some(Arc::new(Shutdown)));
    cancel(Some(Arc::new(std::io::Error::other("second")))); // ignored: the first cancel wins
    for c in [&parent, &child] {
        assert_eq!(c.err(), Some(ContextError::Canceled));
        assert!(context::cause(c).unwrap().downcast_ref::<Shutdown>().is_some());
    }
    // Born under a cancelled parent: the parent's cause too.
    let (late, _c) = context::with_cancel(&child);
    assert!(context::cause(&late).unwrap().downcast_ref::<Shutdown>().is_some());

    let (ctx, cancel) = context::with_cancel_cause(&Context::background());
    cancel(None);
    let cause = context::cause(&ctx).unwrap();
    assert_eq!(cause.downcast_ref::<ContextError>(), Some(&ContextError::Canceled));
}

#[test]
fn timeout_cause() {
    let _w = watchdog("timeout_cause", LIMIT);
    rt(2).block_on(async {
        let (ctx, cancel) =
            context::with_timeout_cause(&Context::background(), Duration::from_millis(5), Arc::new(Shutdown));
        wait_done(&ctx, "timeout with cause").await;
        assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
        assert!(context::cause(&ctx).unwrap().downcast_ref::<Shutdown>().is_some());
        cancel();

        // An explicit cancel first: the cause is Canceled, not the deadline's.
        let (ctx, cancel) =
            context::with_timeout_cause(&Context::background(), Duration::from_secs(3600), Arc::new(Shutdown));
        cancel();
        assert_eq!(context::cause(&ctx).unwrap().downcast_ref::<ContextError>(), Some(&ContextError::Canceled));
    });
}

// ---------------------------------------------------------------------------------------------
// Memory: deep chains, forgotten cancels
// ---------------------------------------------------------------------------------------------

#[test]
fn deep_chains_drop_without_overflowing_the_stack() {
    // The test thread's stack is 2 MiB; a recursive drop needs far more for these.
    let mut ctx = Context::background();
    for i in 0..100_000u32 {
        ctx = context::with_value(&ctx, i, i);
    }
    assert_eq!(ctx.value::<u32>(&0u32), Some(&0));
    drop(ctx);

    let mut ctx = Context::background();
    let mut cancels = Vec::new();
    for i in 0..100_000u32 {
        let (c, cancel) = context::with_cancel(&ctx);
        ctx = if i % 2 == 0 { context::with_value(&c, i, i) } else { c };
        cancels.push(cancel);
    }
    drop(ctx);
    drop(cancels); // never cancelled: freed all the same, iteratively
}

/// Counts its drops, to see a context's values freed.
struct Tracked(Arc<AtomicUsize>);
impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// The system allocator, counting the bytes each thread has allocated and not yet freed, so a
/// test can see a leak of memory it cannot otherwise reach (the tree's internal nodes).
struct CountingAlloc;

thread_local! {
    static LIVE_BYTES: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: the allocator also runs while a thread's locals are being torn down.
    let _ = LIVE_BYTES.try_with(|n| n.set(n.get() + delta));
}

// SAFETY: every call is forwarded unchanged to `System`; the counting touches no allocation.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        count(-(layout.size() as isize));
        // SAFETY: as above; `ptr` came from `System.alloc`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Bytes this thread allocated and did not free while running `f`.
fn leaked_by(f: impl FnOnce()) -> isize {
    let before = LIVE_BYTES.with(|n| n.get());
    f();
    LIVE_BYTES.with(|n| n.get()) - before
}

#[test]
fn forgotten_cancel_leaks_nothing_once_every_handle_is_gone() {
    let _ = Context::background(); // its one-time allocation is not a leak
    let tree = || {
        let (root, _cancel_root) = context::with_cancel(&Context::background());
        let (child, _cancel_child) = context::with_cancel(&context::with_value(&root, 1u8, 1u8));
        let (_grandchild, _cancel_grandchild) = context::with_cancel(&child);
        assert_eq!(root.num_children(), 1);
        assert_eq!(child.num_children(), 1);
    };
    assert_eq!(leaked_by(|| (0..100).for_each(|_| tree())), 0, "an uncancelled tree outlived its handles");
    // The same, cancelled: nothing either.
    let cancelled = || {
        let (root, cancel) = context::with_cancel(&Context::background());
        let (_child, _c) = context::with_cancel(&root);
        cancel();
    };
    assert_eq!(leaked_by(|| (0..100).for_each(|_| cancelled())), 0);
}

#[test]
fn a_live_descendant_still_hears_its_dropped_ancestors_cancel() {
    // The child's link to its parent is weak, but the child's Context keeps its ancestors
    // alive, and the parent's CancelFunc keeps it reachable: the cancel still arrives.
    let drops = Arc::new(AtomicUsize::new(0));
    let (root, cancel_root) = context::with_cancel(&Context::background());
    let (child, _c) = context::with_cancel(&context::with_value(&root, "tracked", Tracked(drops.clone())));
    drop(root);
    cancel_root();
    assert_done(&child, "child of a dropped, then cancelled root", ContextError::Canceled);
    drop((child, _c));
    assert_eq!(drops.load(SeqCst), 1, "the value node was not freed with the child");
}

// ---------------------------------------------------------------------------------------------
// TestWithoutCancel (Go 1.21)
// ---------------------------------------------------------------------------------------------

#[test]
fn without_cancel_keeps_values_and_drops_cancellation() {
    let _w = watchdog("without_cancel_keeps_values_and_drops_cancellation", LIMIT);
    rt(2).block_on(async {
        let (parent, cancel) =
            context::with_timeout(&context::with_value(&Context::background(), K1, "v"), Duration::from_secs(3600));
        let detached = context::without_cancel(&parent);
        assert!(format!("{detached:?}").ends_with(".WithoutCancel"), "{detached:?}");
        assert_eq!(detached.deadline(), None);
        assert!(detached.done().same_channel(&Context::background().done()));
        let (child, cancel_child) = context::with_cancel(&detached);
        assert_eq!(parent.num_children(), 0, "a child under without_cancel registered with the cancelled-from tree");
        cancel();
        assert_done(&parent, "parent", ContextError::Canceled);
        assert_live(&detached, "detached");
        assert_live(&child, "child of detached");
        assert_eq!(detached.value::<&str>(&K1), Some(&"v"));
        assert_eq!(child.value::<&str>(&K1), Some(&"v"));
        cancel_child();
        assert_done(&child, "child of detached", ContextError::Canceled);
        assert_live(&detached, "detached after its child's cancel");
    });
}

// ---------------------------------------------------------------------------------------------
// or_done: an operation that is a future, raced against the context
// ---------------------------------------------------------------------------------------------

#[test]
fn or_done_returns_the_output_when_the_operation_wins() {
    let _w = watchdog("or_done_returns_the_output_when_the_operation_wins", LIMIT);
    rt(2).block_on(async {
        let (ctx, cancel) = context::with_cancel(&Context::background());
        let (tx, rx) = goro::chan::<u32>(1);
        tx.send(7).await.unwrap();
        assert_eq!(ctx.or_done(rx.recv()).await, Ok(Some(7)));
        assert_eq!(Context::background().or_done(async { 3 }).await, Ok(3));
        cancel();
    });
}

#[test]
fn or_done_on_a_done_context_never_polls_the_operation() {
    let _w = watchdog("or_done_on_a_done_context_never_polls_the_operation", LIMIT);
    rt(2).block_on(async {
        let (ctx, cancel) = context::with_cancel(&Context::background());
        cancel();
        let never = std::future::poll_fn(|_| -> std::task::Poll<()> { panic!("polled after the context was done") });
        assert_eq!(ctx.or_done(never).await, Err(ContextError::Canceled));
        // The context wins a tie too.
        assert_eq!(ctx.or_done(async { 1 }).await, Err(ContextError::Canceled));
    });
}

/// A pending receive raced against a cancel from another G: the cancel ends it with the
/// context's error, the dropped receive took nothing, and a value sent afterwards is still
/// there for the next receiver (cancel safety carries through).
#[test]
fn or_done_cancelled_mid_wait_loses_nothing() {
    let _w = watchdog("or_done_cancelled_mid_wait_loses_nothing", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let (ctx, cancel) = context::with_cancel(&Context::background());
            let (tx, rx) = goro::chan::<u32>(0);
            let parked = Arc::new(AtomicUsize::new(0));
            let waiter = {
                let (ctx, rx, parked) = (ctx.clone(), rx.clone(), parked.clone());
                goro::go(async move {
                    let mut recv = std::pin::pin!(rx.recv());
                    let op = std::future::poll_fn(|cx| {
                        let r = recv.as_mut().poll(cx);
                        if r.is_pending() {
                            parked.fetch_add(1, SeqCst); // the receive is queued on the channel
                        }
                        r
                    });
                    ctx.or_done(op).await
                })
            };
            let start = Instant::now();
            while parked.load(SeqCst) == 0 {
                assert!(start.elapsed() < HANG, "the waiter never parked");
                goro::runtime::yield_now().await;
            }
            let canceller = goro::go(async move { cancel() });
            canceller.await.unwrap();
            assert_eq!(waiter.await.unwrap(), Err(ContextError::Canceled));
            // No receiver is left queued: a sender waits for the next receiver.
            let sender = goro::go(async move { tx.send(9).await });
            goro::select! {
                recv(rx) -> v => assert_eq!(v, Some(9)),
                recv(goro::time::after(HANG)) -> _ => panic!("the value sent after the cancel never arrived"),
            }
            assert_eq!(sender.await.unwrap(), Ok(()));
        });
    }
}

/// Go's accept loop shut down by a deadline: `or_done(ln.accept())` returns the deadline's
/// error while connections keep being served until then.
#[test]
fn or_done_ends_an_accept_loop_at_the_deadline() {
    let _w = watchdog("or_done_ends_an_accept_loop_at_the_deadline", LIMIT);
    rt(2).block_on(async {
        let ln = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = ln.local_addr().unwrap();
        let (ctx, cancel) = context::with_timeout(&Context::background(), Duration::from_millis(200));
        let client = goro::go(async move {
            for _ in 0..3 {
                goro::net::TcpStream::connect(addr).await.unwrap();
            }
        });
        let start = Instant::now();
        let mut accepted = 0;
        let err = loop {
            match ctx.or_done(ln.accept()).await {
                Ok(conn) => {
                    conn.unwrap();
                    accepted += 1;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(err, ContextError::DeadlineExceeded);
        assert_eq!(accepted, 3);
        assert!(start.elapsed() < HANG);
        client.await.unwrap();
        cancel();
    });
}
