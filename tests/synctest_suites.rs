//! goro's own time, context and deadline tests again, in a `goro::synctest` bubble: where the
//! tests on the real clock (tests/time.rs, tests/context.rs, tests/net_pipe.rs) bound a wait
//! between a minimum and a slack for a loaded machine, a bubble's clock makes every instant
//! exact, and each test takes no real time.

use goro::context::{self, Context, ContextError};
use goro::net::pipe;
use goro::time::{after, after_func, now, sleep, sleep_until, timeout, Elapsed, Ticker, Timer};
use std::io::ErrorKind;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

/// tests/time.rs `sleep_lasts_at_least_its_duration`: in a bubble, exactly its duration, in
/// the root and in a G.
#[goro::test(synctest)]
async fn sleep_lasts_exactly_its_duration() {
    let durations = [Duration::ZERO, Duration::from_nanos(1), Duration::from_micros(1), MS, 25 * MS];
    for d in durations {
        let start = now();
        sleep(d).await;
        assert_eq!(now() - start, d, "root: sleep({d:?})");
    }
    goro::go(async move {
        for d in durations {
            let start = now();
            sleep(d).await;
            assert_eq!(now() - start, d, "G: sleep({d:?})");
        }
    })
    .await
    .unwrap();
}

/// tests/time.rs `sleep_until_reaches_its_deadline` and `sleep_reset_moves_the_deadline`.
#[goro::test(synctest)]
async fn sleep_until_and_reset_wake_at_the_instant() {
    for ms in [1, 7, 15] {
        let deadline = now() + ms * MS;
        sleep_until(deadline).await;
        assert_eq!(now(), deadline);
    }
    let start = now();
    let mut s = pin!(sleep(Duration::from_secs(3600)));
    s.as_mut().reset(start + 10 * MS);
    s.as_mut().await;
    assert_eq!(now() - start, 10 * MS, "an hour moved to 10 ms");
    s.as_mut().reset(now() + 20 * MS);
    s.await;
    assert_eq!(now() - start, 30 * MS, "a finished sleep waits again after a reset");
}

/// tests/time.rs `after_as_select_timeout`: the timeout wins at exactly its instant, the
/// message at its own.
#[goro::test(synctest)]
async fn after_as_a_select_timeout() {
    let start = now();
    let (tx, rx) = goro::chan::<u32>(0);
    goro::go(async move {
        sleep(20 * MS).await;
        tx.send(7).await.unwrap();
    });
    let first = goro::select! {
        recv(rx) -> v => v,
        recv(after(5 * MS)) -> _ => None,
    };
    assert_eq!((first, now() - start), (None, 5 * MS), "the timeout first");
    let second = goro::select! {
        recv(rx) -> v => v,
        recv(after(Duration::from_secs(1))) -> _ => None,
    };
    assert_eq!((second, now() - start), (Some(7), 20 * MS), "then the message");
}

/// tests/time.rs `timer_stop_before_fire`, `timer_reset_return_values`: a timer's value
/// carries the instant it fired at, which is its deadline.
#[goro::test(synctest)]
async fn timers_fire_at_their_deadline_and_stop_and_reset_as_go() {
    let start = now();
    let t = Timer::new(10 * MS);
    assert!(t.stop(), "stopped before it fired");
    assert!(!t.stop());
    assert!(!t.reset(5 * MS), "it was stopped");
    assert_eq!(t.c.recv().await, Some(start + 5 * MS));
    assert_eq!(now() - start, 5 * MS);
    assert!(!t.reset(MS), "its value was received");
    sleep(2 * MS).await; // it fires meanwhile, unreceived
    assert!(t.reset(MS), "a fired, unreceived value is discarded");
    assert_eq!(t.c.recv().await, Some(start + 8 * MS));
}

/// tests/time.rs `after_func_runs_f_in_its_own_g`: at the instant, in a G of the bubble.
#[goro::test(synctest)]
async fn after_func_runs_at_its_instant() {
    let start = now();
    let (tx, rx) = goro::chan::<Duration>(1);
    let _t = after_func(30 * MS, move || {
        tx.try_send(now() - start).unwrap();
    });
    assert_eq!(rx.recv().await, Some(30 * MS));
    let stopped = after_func(MS, || panic!("a stopped after_func ran"));
    assert!(stopped.stop());
    sleep(10 * MS).await;
}

/// tests/time.rs `ticker_delivers_ticks` and `ticker_drops_ticks_for_a_slow_receiver`: ticks
/// at every multiple of the period; a receiver that sleeps through three ticks gets the first
/// (the channel holds one) and then the next on time.
#[goro::test(synctest)]
async fn ticker_ticks_on_the_period_and_drops_for_a_slow_receiver() {
    let start = now();
    let ticker = Ticker::new(10 * MS);
    for i in 1..=5 {
        assert_eq!(ticker.c.recv().await, Some(start + i * 10 * MS));
    }
    sleep(35 * MS).await; // ticks at 60, 70, 80 ms: one kept, two dropped
    assert_eq!(ticker.c.recv().await, Some(start + 60 * MS));
    assert_eq!(ticker.c.recv().await, Some(start + 90 * MS));
    assert_eq!(now() - start, 90 * MS);
    ticker.stop();
}

/// tests/time.rs `ten_thousand_sleepers_wake_within_two_seconds`: each wakes at its instant,
/// and the bubble's clock ends at the last one.
#[goro::test(synctest)]
async fn ten_thousand_sleepers_each_wake_at_their_instant() {
    let start = now();
    let late = Arc::new(AtomicUsize::new(0));
    let wg = goro::sync::WaitGroup::new();
    for i in 0..10_000u32 {
        let (late, wg) = (late.clone(), wg.clone());
        wg.add(1);
        goro::go(async move {
            let d = Duration::from_millis(u64::from(i % 100));
            sleep(d).await;
            if now() - start != d {
                late.fetch_add(1, SeqCst);
            }
            wg.done();
        });
    }
    wg.wait().await;
    assert_eq!(late.load(SeqCst), 0, "sleepers woke off their instant");
    assert_eq!(now() - start, 99 * MS);
}

/// tests/time.rs's `timeout`: the call's output, or `Elapsed` at exactly the duration.
#[goro::test(synctest)]
async fn timeout_elapses_at_its_duration() {
    let start = now();
    let (_tx, rx) = goro::chan::<u32>(0);
    assert_eq!(timeout(Duration::from_secs(5), rx.recv()).await, Err(Elapsed));
    assert_eq!(now() - start, Duration::from_secs(5));
    assert_eq!(timeout(Duration::from_secs(5), sleep(MS)).await, Ok(()));
    assert_eq!(now() - start, Duration::from_secs(5) + MS);
}

/// tests/context.rs's deadlines: `with_timeout` is done at its instant with
/// `DeadlineExceeded`; a child's deadline is the earlier of its own and its parent's; a
/// cancel before the deadline wins with `Canceled`.
#[goro::test(synctest)]
async fn context_deadlines_fire_at_their_instant() {
    let start = now();
    let (ctx, _cancel) = context::with_timeout(&Context::background(), Duration::from_secs(60));
    assert_eq!(ctx.deadline(), Some(start + Duration::from_secs(60)));
    let (child, _cancel_child) = context::with_timeout(&ctx, Duration::from_secs(3600));
    assert_eq!(child.deadline(), ctx.deadline(), "a child keeps the earlier deadline");
    child.done().recv().await;
    assert_eq!(now() - start, Duration::from_secs(60));
    assert_eq!((ctx.err(), child.err()), (Some(ContextError::DeadlineExceeded), Some(ContextError::DeadlineExceeded)));

    let (ctx, cancel) = context::with_deadline(&Context::background(), now() + Duration::from_secs(10));
    let canceller = goro::go(async move {
        sleep(Duration::from_secs(3)).await;
        cancel();
    });
    ctx.done().recv().await;
    assert_eq!(now() - start, Duration::from_secs(63));
    assert_eq!(ctx.err(), Some(ContextError::Canceled));
    canceller.await.unwrap();
}

/// A G waiting on `Context::background().done()` (which never closes) is durably blocked in a
/// bubble, as on Go's nil `Done()`: a select over it and a timer lets the clock move.
#[goro::test(synctest)]
async fn a_select_on_the_background_context_lets_time_move() {
    let start = now();
    let bg = Context::background();
    goro::select! {
        recv(bg.done()) -> _ => panic!("the background context was cancelled"),
        recv(after(Duration::from_secs(30))) -> _ => {}
    }
    assert_eq!(now() - start, Duration::from_secs(30));
}

/// tests/net_pipe.rs's deadlines: a blocked read or write on a pipe fails with `TimedOut` at
/// exactly its deadline, and a deadline moved while an operation waits takes effect.
#[goro::test(synctest)]
async fn pipe_deadlines_fire_at_their_instant() {
    let start = now();
    let (a, b) = pipe();
    a.set_read_deadline(Some(start + Duration::from_secs(5))).unwrap();
    let mut buf = [0; 8];
    assert_eq!(a.read(&mut buf).await.unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(now() - start, Duration::from_secs(5));

    b.set_write_deadline(Some(now() + Duration::from_secs(3600))).unwrap();
    let b = Arc::new(b);
    let mover = {
        let b = b.clone();
        goro::go(async move {
            sleep(Duration::from_secs(2)).await;
            b.set_write_deadline(Some(now() + Duration::from_secs(1))).unwrap();
        })
    };
    assert_eq!(b.write(b"nobody reads").await.unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(now() - start, Duration::from_secs(8), "the deadline moved to 2 s + 1 s later");
    mover.await.unwrap();
}
