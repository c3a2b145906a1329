//! Integration tests of `goro::time` (sleep, after, tick, Timer, Ticker, after_func), porting the
//! ideas of Go's `src/time/sleep_test.go` and `tick_test.go`.
//!
//! Timing rules, so that nothing flakes on a loaded 2-core machine: lower bounds are exact (a
//! timer never fires before its deadline, and a value on a timer channel is the time it fired,
//! so it is never earlier than the deadline either); upper bounds are generous ([`SLACK`] late
//! at least). Sleeping is the subject here, so the tests sleep; they never sleep to order two Gs
//! where a channel or a condition can.

mod common;

use common::{panic_message, rt, watchdog, yield_until, HANG};
use goro::chan::{Receiver, TryRecvError};
use goro::sync::WaitGroup;
use goro::time::{after, after_func, sleep, sleep_until, tick, Ticker, Timer};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Per-test watchdog: far beyond what any test needs.
const LIMIT: Duration = Duration::from_secs(120);

/// How late a timer may be before a test calls it broken: huge next to the sleeps here, so a
/// stalled machine never fails a test, and still far below "never".
const SLACK: Duration = Duration::from_secs(2);

const MS: Duration = Duration::from_millis(1);

/// Polls `f` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

/// Receives from `rx`, failing the test if nothing comes within `limit` (a timer that never
/// fires) or if the channel closes.
async fn recv_within<T: Send>(rx: &Receiver<T>, limit: Duration, what: &str) -> T {
    goro::select! {
        recv(rx) -> v => v.unwrap_or_else(|| panic!("{what}: channel closed")),
        recv(after(limit)) -> _ => panic!("{what}: nothing received within {limit:?}"),
    }
}

/// Whether a receive on `rx` completes within `d`, with a value or because the channel is
/// closed (waiting the whole `d` if neither happens).
async fn arrives_within<T: Send>(rx: &Receiver<T>, d: Duration) -> bool {
    goro::select! {
        recv(rx) -> _ => true,
        recv(after(d)) -> _ => false,
    }
}

/// A small xorshift generator: reproducible "random" delays for the race tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Busy-waits about `n` spin iterations (a sub-microsecond to a few-microsecond jitter).
fn spin(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

// ---------------------------------------------------------------------------------------------
// sleep, sleep_until, Sleep
// ---------------------------------------------------------------------------------------------

/// Go's TestSleep: a sleep lasts at least its duration, in the main G and in a spawned G.
#[test]
fn sleep_lasts_at_least_its_duration() {
    let _w = watchdog("sleep_lasts_at_least_its_duration", LIMIT);
    rt(2).block_on(async {
        let durations = [Duration::ZERO, Duration::from_micros(1), MS, 10 * MS, 25 * MS];
        for d in durations {
            let start = Instant::now();
            sleep(d).await;
            let e = start.elapsed();
            assert!(e >= d, "main G: sleep({d:?}) slept for only {e:?}");
            assert!(e < d + SLACK, "main G: sleep({d:?}) took {e:?}");
        }
        let h = goro::go(async move {
            for d in durations {
                let start = Instant::now();
                sleep(d).await;
                let e = start.elapsed();
                assert!(e >= d, "G: sleep({d:?}) slept for only {e:?}");
                assert!(e < d + SLACK, "G: sleep({d:?}) took {e:?}");
            }
        });
        h.await.unwrap();
    });
}

/// A zero sleep and a deadline in the past are ready at the first poll: no timer, no yield,
/// and no runtime needed (Go's `Sleep(0)` returns at once). Go's TestSleepZeroDeadlock: zero
/// sleeps mixed with channel operations while another G works.
#[test]
fn zero_and_past_sleeps_do_not_wait() {
    let _w = watchdog("zero_and_past_sleeps_do_not_wait", LIMIT);
    // Outside any runtime: they must not even look for one.
    assert!(poll_once(&mut sleep(Duration::ZERO)).is_ready());
    let past = Instant::now().checked_sub(Duration::from_secs(1)).unwrap_or_else(Instant::now);
    assert!(poll_once(&mut sleep_until(past)).is_ready());
    assert!(poll_once(&mut sleep_until(Instant::now())).is_ready());

    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<()>(0);
        let busy = goro::go(async move {
            for _ in 0..100 {
                goro::runtime::yield_now().await;
            }
            tx.send(()).await.unwrap();
        });
        for _ in 0..100 {
            assert!(poll_once(&mut sleep(Duration::ZERO)).is_ready());
            sleep(Duration::ZERO).await;
            let (t, r) = goro::chan(1);
            t.send(true).await.unwrap();
            assert_eq!(r.recv().await, Some(true));
        }
        assert_eq!(rx.recv().await, Some(()));
        busy.await.unwrap();
        assert_eq!(goro::runtime::metrics().timers, 0, "a zero sleep armed a timer");
    });
}

#[test]
fn sleep_until_reaches_its_deadline() {
    let _w = watchdog("sleep_until_reaches_its_deadline", LIMIT);
    rt(2).block_on(async {
        for ms in [1, 7, 15] {
            let deadline = Instant::now() + ms * MS;
            sleep_until(deadline).await;
            let now = Instant::now();
            assert!(now >= deadline, "woke {:?} early", deadline - now);
            assert!(now < deadline + SLACK, "woke {:?} late", now - deadline);
        }
    });
}

/// `Sleep::reset` moves an armed sleep earlier or later, and makes a finished one wait again.
#[test]
fn sleep_reset_moves_the_deadline() {
    let _w = watchdog("sleep_reset_moves_the_deadline", LIMIT);
    rt(2).block_on(async {
        // Earlier: an hour becomes 10 ms.
        let mut s = pin!(sleep(Duration::from_secs(3600)));
        assert!(poll_once(&mut s).is_pending(), "armed");
        let deadline = Instant::now() + 10 * MS;
        s.as_mut().reset(deadline);
        s.as_mut().await;
        let now = Instant::now();
        assert!(now >= deadline && now < deadline + SLACK);

        // A finished sleep, reset, waits again.
        let deadline = Instant::now() + 10 * MS;
        s.as_mut().reset(deadline);
        assert_eq!(s.deadline(), Some(deadline));
        s.as_mut().await;
        assert!(Instant::now() >= deadline, "a reset finished sleep returned early");

        // Later: 5 ms becomes 40 ms; the first arming must not end it.
        let mut s = pin!(sleep(5 * MS));
        assert!(poll_once(&mut s).is_pending());
        let deadline = Instant::now() + 40 * MS;
        s.as_mut().reset(deadline);
        s.await;
        let now = Instant::now();
        assert!(now >= deadline, "woke by the old deadline, {:?} early", deadline - now);
    });
}

/// A sleep in the main future with no other G: the runtime's only M sleeps in the netpoller
/// until the deadline (nothing else would wake it), on one and on two Ps, and under `run`.
#[test]
fn sleep_in_main_future_with_no_other_g() {
    let _w = watchdog("sleep_in_main_future_with_no_other_g", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            assert_eq!(goro::runtime::num_goroutine(), 1, "only the main G");
            let start = Instant::now();
            sleep(20 * MS).await;
            let e = start.elapsed();
            assert!(e >= 20 * MS && e < 20 * MS + SLACK, "{procs} procs: slept {e:?}");
            // Again, now that the runtime has been idle.
            let start = Instant::now();
            let v = after(15 * MS).recv().await.expect("after's value");
            assert!(v >= start + 15 * MS);
            assert!(start.elapsed() < 15 * MS + SLACK);
        });
    }
    let e = goro::run(async {
        let start = Instant::now();
        sleep(10 * MS).await;
        start.elapsed()
    });
    assert!(e >= 10 * MS && e < 10 * MS + SLACK, "goro::run: slept {e:?}");
}

/// Sleeps on one P: several Gs sleep while another G keeps the only P busy (timers are checked
/// at every schedule, not only by an idle M); and Go's TestAfterQueuing: on one P there is one
/// heap, run by one M, so `after` channels fire in deadline order.
#[goro::test(max_procs = 1)]
async fn sleeps_on_one_proc() {
    let _w = watchdog("sleeps_on_one_proc", LIMIT);
    assert_eq!(goro::runtime::max_procs(), 1);

    // Sleepers against a G that only yields.
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let busy = goro::go(async move {
        let mut yields = 0u64;
        while !s.load(SeqCst) {
            goro::runtime::yield_now().await;
            yields += 1;
        }
        yields
    });
    let sleepers: Vec<_> = (1..=8u32)
        .map(|i| {
            goro::go(async move {
                let d = i * 3 * MS;
                let start = Instant::now();
                sleep(d).await;
                let e = start.elapsed();
                assert!(e >= d && e < d + SLACK, "sleep({d:?}) took {e:?} on a busy P");
            })
        })
        .collect();
    for h in sleepers {
        h.await.unwrap();
    }
    stop.store(true, SeqCst);
    assert!(busy.await.unwrap() > 0);

    // TestAfterQueuing.
    const SLOTS: [u32; 13] = [5, 3, 6, 6, 6, 1, 1, 2, 7, 9, 4, 8, 0];
    let delta = 10 * MS;
    let (tx, rx) = goro::chan::<(usize, Instant)>(SLOTS.len());
    // Each deadline is known to lie in [before + d, after + d] of its `after` call.
    let mut bounds = Vec::new();
    for (i, slot) in SLOTS.into_iter().enumerate() {
        let before = Instant::now();
        let c = after(slot * delta);
        bounds.push((before + slot * delta, Instant::now() + slot * delta));
        let tx = tx.clone();
        drop(goro::go(async move { tx.send((i, c.recv().await.unwrap())).await.unwrap() }));
    }
    let mut fired = vec![None; SLOTS.len()];
    for _ in SLOTS {
        let (i, t) = rx.recv().await.unwrap();
        assert!(t >= bounds[i].0, "after({:?}) fired early", SLOTS[i] * delta);
        fired[i] = Some(t);
    }
    // A timer whose deadline is surely earlier fired no later.
    for i in 0..SLOTS.len() {
        for j in 0..SLOTS.len() {
            if bounds[i].1 <= bounds[j].0 {
                assert!(fired[i] <= fired[j], "fired out of deadline order: slot {} after slot {}", SLOTS[i], SLOTS[j]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// after and select
// ---------------------------------------------------------------------------------------------

/// Go's TestAfter: the value is the time it fired, never before the deadline.
#[test]
fn after_delivers_the_time_once_due() {
    let _w = watchdog("after_delivers_the_time_once_due", LIMIT);
    rt(2).block_on(async {
        let start = Instant::now();
        let d = 20 * MS;
        let v = after(d).recv().await.expect("after's value");
        let now = Instant::now();
        assert!(v >= start + d, "after({d:?}) sent a time {:?} early", start + d - v);
        assert!(v <= now);
        assert!(now - start < d + SLACK);

        // Go's TestAfterTick: ten in a row take at least ten times as long.
        let start = Instant::now();
        for _ in 0..10 {
            after(2 * MS).recv().await.unwrap();
        }
        assert!(start.elapsed() >= 20 * MS);
    });
}

/// `after` as a `select!` timeout: it fires when nothing else is ready, and loses to a value
/// that is.
#[test]
fn after_as_select_timeout() {
    let _w = watchdog("after_as_select_timeout", LIMIT);
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<u32>(0);
        let start = Instant::now();
        let timed_out = goro::select! {
            recv(rx) -> v => panic!("nothing was sent, got {v:?}"),
            recv(after(20 * MS)) -> t => t.expect("after's value"),
        };
        assert!(timed_out >= start + 20 * MS);
        assert!(start.elapsed() < 20 * MS + SLACK);

        // The value wins over an hour-long timeout.
        let sender = goro::go(async move { tx.send(7).await.unwrap() });
        let got = goro::select! {
            recv(rx) -> v => v,
            recv(after(Duration::from_secs(3600))) -> _ => panic!("an hour passed?"),
        };
        assert_eq!(got, Some(7));
        sender.await.unwrap();

        // A select loop with a fresh timeout each round, Go's most common timer idiom.
        let (tx, rx) = goro::chan::<u32>(0);
        let producer = goro::go(async move {
            for i in 0..5 {
                sleep(MS).await;
                tx.send(i).await.unwrap();
            }
        });
        let mut got = Vec::new();
        loop {
            goro::select! {
                recv(rx) -> v => match v {
                    Some(v) => got.push(v),
                    None => break,
                },
                recv(after(SLACK)) -> _ => panic!("a value was {SLACK:?} late"),
            }
        }
        assert_eq!(got, [0, 1, 2, 3, 4]);
        producer.await.unwrap();
    });
}

/// Go's TestOverflowSleep: a duration the clock cannot represent never fires (it must not wrap
/// around to a short one).
#[test]
fn overflowing_durations_never_fire() {
    let _w = watchdog("overflowing_durations_never_fire", LIMIT);
    rt(2).block_on(async {
        goro::select! {
            recv(after(Duration::MAX)) -> _ => panic!("after(Duration::MAX) fired"),
            recv(after(25 * MS)) -> _ => {}
        }
        let t = Timer::new(Duration::MAX);
        assert!(!arrives_within(&t.c, 10 * MS).await);
        assert!(t.stop(), "an overflowing timer is armed until stopped");
        let mut s = pin!(sleep(Duration::MAX));
        assert!(poll_once(&mut s).is_pending());
        assert_eq!(s.deadline(), None);
    });
}

/// `after`'s channel after it delivered: Go's `<-time.After(d)` a second time blocks forever
/// (its channel is never closed), so a `select!` loop that keeps the channel of one `after`
/// sees its case fire once. In goro the fired, detached timer drops the channel's only sender,
/// so the channel reads as closed and a second receive returns `None` at once: such a loop
/// spins on the timeout case.
#[test]
fn after_channel_does_not_close_after_firing() {
    let _w = watchdog("after_channel_does_not_close_after_firing", LIMIT);
    rt(2).block_on(async {
        let c = after(MS);
        c.recv().await.expect("the one value");
        assert!(!arrives_within(&c, 20 * MS).await, "a second receive must block, as in Go");
    });
}

// ---------------------------------------------------------------------------------------------
// Timer
// ---------------------------------------------------------------------------------------------

/// Go's TestAfterStop: a timer stopped before it fires returns `true` once, never delivers, and
/// an after_func stopped in time never runs.
#[test]
fn timer_stop_before_fire() {
    let _w = watchdog("timer_stop_before_fire", LIMIT);
    rt(2).block_on(async {
        let created = Instant::now();
        let t0 = Timer::new(50 * MS);
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let t1 = after_func(60 * MS, move || r.store(true, SeqCst));
        let stopped0 = t0.stop();
        let stopped1 = t1.stop();
        if Instant::now() < created + 50 * MS {
            // Neither could have fired yet (exact: they fire no earlier than their deadline).
            assert!(stopped0, "stop of a pending timer returned false");
            assert!(stopped1, "stop of a pending after_func returned false");
        }
        assert!(!t0.stop(), "stop returned true twice");
        assert!(!t1.stop(), "stop returned true twice");
        sleep(120 * MS).await;
        if stopped0 {
            assert_eq!(t0.c.try_recv(), Err(TryRecvError::Empty), "event 0 was not stopped");
        }
        if stopped1 {
            assert!(!ran.load(SeqCst), "event 1 was not stopped");
        }
        // The channel stays open (the Timer holds its sender): a receive would block, as in Go.
        assert!(!t0.c.is_closed());
    });
}

/// A timer that fired but whose value nobody received: `stop` returns true (it kept the value
/// from being received) and the value is gone (Go 1.23: no stale value after Stop).
#[test]
fn timer_stop_after_fire_discards_the_value() {
    let _w = watchdog("timer_stop_after_fire_discards_the_value", LIMIT);
    rt(2).block_on(async {
        for d in [Duration::ZERO, MS] {
            let t = Timer::new(d);
            yield_until("the timer to fire", || t.c.len() == 1).await;
            assert!(t.stop(), "stop of a fired timer whose value nobody received returned false");
            assert_eq!(t.c.try_recv(), Err(TryRecvError::Empty), "the unreceived value survived stop");
            assert!(!t.stop());
            assert!(!arrives_within(&t.c, 10 * MS).await, "a stopped timer delivered");
        }
    });
}

/// Go's TestReset, with exact bounds: `reset` returns true for a pending timer (not fired, or
/// fired with its value unreceived: Go 1.23) and false for one stopped or whose value was
/// received, re-arms in every case, and the value that arrives is the new arming's (never the
/// old one's, received or not).
#[test]
fn timer_reset_return_values() {
    let _w = watchdog("timer_reset_return_values", LIMIT);
    rt(2).block_on(async {
        let d = 10 * MS;
        // Pending: true; the value comes no earlier than the new deadline.
        let t = Timer::new(Duration::from_secs(3600));
        let r = Instant::now();
        assert!(t.reset(3 * d), "resetting a pending timer returned false");
        let v = recv_within(&t.c, 3 * d + SLACK, "reset timer").await;
        assert!(v >= r + 3 * d, "reset timer fired {:?} early", r + 3 * d - v);

        // Fired and received: false, and it fires again.
        let r = Instant::now();
        assert!(!t.reset(d), "resetting an expired timer returned true");
        let v = recv_within(&t.c, d + SLACK, "re-armed expired timer").await;
        assert!(v >= r + d);

        // Fired, not received: true; the stale value is dropped, the next one is new.
        let created = Instant::now();
        assert!(!t.reset(Duration::ZERO));
        yield_until("the timer to fire", || t.c.len() == 1).await;
        let r = Instant::now();
        assert!(t.reset(2 * d), "resetting a fired, unreceived timer returned false");
        let v = recv_within(&t.c, 2 * d + SLACK, "re-armed fired timer").await;
        assert!(v >= r + 2 * d, "got the stale value from {:?}", v - created);

        // Stopped: false, and it fires.
        let t = Timer::new(Duration::from_secs(3600));
        assert!(t.stop());
        let r = Instant::now();
        assert!(!t.reset(d), "resetting a stopped timer returned true");
        let v = recv_within(&t.c, d + SLACK, "re-armed stopped timer").await;
        assert!(v >= r + d);
        // Pending again, then stopped: true.
        assert!(!t.reset(Duration::from_secs(3600)));
        assert!(t.reset(Duration::from_secs(3600)));
        assert!(t.stop());
    });
}

/// Reset to an earlier deadline fires early; reset to a later one does not fire at the old one.
#[test]
fn timer_reset_earlier_and_later() {
    let _w = watchdog("timer_reset_earlier_and_later", LIMIT);
    rt(2).block_on(async {
        let t = Timer::new(Duration::from_secs(3600));
        let r = Instant::now();
        assert!(t.reset(10 * MS));
        let v = recv_within(&t.c, SLACK, "reset earlier").await;
        assert!(v >= r + 10 * MS);

        let created = Instant::now();
        let t = Timer::new(100 * MS);
        let r = Instant::now();
        let was = t.reset(300 * MS);
        if Instant::now() < created + 100 * MS {
            assert!(was, "resetting a pending timer returned false");
        }
        let v = recv_within(&t.c, 300 * MS + SLACK, "reset later").await;
        assert!(v >= r + 300 * MS, "fired at the old deadline, {:?} after creation", v - created);
    });
}

/// Go's TestZeroTimer (golang/go#44868): zero-duration timers are never missed by the scheduler.
#[test]
fn zero_timers_are_never_missed() {
    let _w = watchdog("zero_timers_are_never_missed", LIMIT);
    rt(2).block_on(async {
        for i in 0..2_000 {
            let s = Instant::now();
            let t = Timer::new(Duration::ZERO);
            recv_within(&t.c, SLACK, &format!("zero timer {i}")).await;
            assert!(s.elapsed() < SLACK);
        }
    });
}

/// A timer reset from a plain thread (outside any P) while the runtime's only M sleeps in the
/// netpoller until a far deadline: the reset must wake it (Go's `wakeNetPoller`).
#[test]
fn timer_reset_from_a_plain_thread_wakes_the_sleeping_runtime() {
    let _w = watchdog("timer_reset_from_a_plain_thread", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let t = Arc::new(Timer::new(Duration::from_secs(3600)));
            let t2 = t.clone();
            let th = std::thread::spawn(move || {
                // Let the runtime go to sleep until the hour-long deadline first.
                std::thread::sleep(30 * MS);
                let r = Instant::now();
                assert!(t2.reset(10 * MS));
                r
            });
            let v = recv_within(&t.c, HANG, "timer reset from a thread").await;
            let r = th.join().unwrap();
            assert!(v >= r + 10 * MS);
            assert!(v < r + 10 * MS + SLACK, "{procs} procs: the sleeping M was not woken: {:?}", v - r);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// after_func
// ---------------------------------------------------------------------------------------------

/// f runs in a G of its own: not under the timer's lock (so it can stop its own timer, which
/// returns false as it already fired), it is counted by `num_goroutine`, and the timer's `c`
/// never delivers nor closes. Go's TestAfterFunc: a chain of after_funcs, each started by the
/// previous f.
#[test]
fn after_func_runs_f_in_its_own_g() {
    let _w = watchdog("after_func_runs_f_in_its_own_g", LIMIT);
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<(usize, Option<bool>)>(1);
        let slot: Arc<Mutex<Option<Timer>>> = Arc::new(Mutex::new(None));
        let s = slot.clone();
        // Armed for an hour until its handle is in the slot, then reset to 5 ms.
        let t = after_func(Duration::from_secs(3600), move || {
            // Under the timer's lock this would deadlock; in a G of its own it returns false.
            let own = s.lock().unwrap().take();
            let stopped = own.as_ref().map(Timer::stop);
            tx.try_send((goro::runtime::num_goroutine(), stopped)).unwrap();
            drop(own);
        });
        *slot.lock().unwrap() = Some(t);
        let start = Instant::now();
        assert!(slot.lock().unwrap().as_ref().unwrap().reset(5 * MS));
        let (n, stopped) = recv_within(&rx, SLACK, "after_func's f").await;
        assert!(start.elapsed() >= 5 * MS);
        assert!(n >= 2, "f did not run in a G of its own (num_goroutine = {n})");
        assert_eq!(stopped, Some(false), "f could not stop its own, fired timer");

        // `c` never delivers and never closes.
        let t = after_func(MS, || {});
        assert!(!arrives_within(&t.c, 30 * MS).await, "after_func's c delivered");
        assert_eq!(t.c.try_recv(), Err(TryRecvError::Empty));
        assert!(!t.c.is_closed());

        // TestAfterFunc: ten after_funcs, each started by the previous f, their Timers dropped
        // as Go drops them.
        let (done_tx, done_rx) = goro::chan::<u32>(1);
        fn link(left: u32, done: goro::chan::Sender<u32>) {
            let _ = after_func(Duration::ZERO, move || {
                if left == 0 {
                    done.try_send(10).unwrap();
                } else {
                    link(left - 1, done.clone());
                }
            });
        }
        link(10, done_tx);
        assert_eq!(recv_within(&done_rx, SLACK, "after_func chain").await, 10);
    });
}

/// Stopping an after_func timer in time keeps f from running; dropping it does not (Go
/// programs drop the Timer of `time.AfterFunc` and expect f to run).
#[test]
fn after_func_stop_prevents_f_and_drop_does_not() {
    let _w = watchdog("after_func_stop_prevents_f_and_drop_does_not", LIMIT);
    rt(2).block_on(async {
        let stopped_ran = Arc::new(AtomicUsize::new(0));
        let created = Instant::now();
        let r = stopped_ran.clone();
        let t = after_func(40 * MS, move || {
            r.fetch_add(1, SeqCst);
        });
        let (tx, rx) = goro::chan::<()>(1);
        drop(after_func(MS, move || {
            tx.try_send(()).unwrap();
        }));
        let stopped = t.stop();
        if Instant::now() < created + 40 * MS {
            assert!(stopped);
        }
        recv_within(&rx, SLACK, "the f of a dropped after_func Timer").await;
        sleep(60 * MS).await;
        if stopped {
            assert_eq!(stopped_ran.load(SeqCst), 0, "f ran after stop returned true");
        }
        assert!(!t.stop());
    });
}

// ---------------------------------------------------------------------------------------------
// Ticker and tick
// ---------------------------------------------------------------------------------------------

/// A ticker delivers increasing times, the i-th no earlier than i periods after it started.
#[test]
fn ticker_delivers_ticks() {
    let _w = watchdog("ticker_delivers_ticks", LIMIT);
    rt(2).block_on(async {
        let d = 10 * MS;
        let start = Instant::now();
        let tk = Ticker::new(d);
        let mut prev = start;
        for i in 1..=5u32 {
            let v = recv_within(&tk.c, d + SLACK, "tick").await;
            assert!(v >= start + i * d, "tick {i} came {:?} early", start + i * d - v);
            assert!(v > prev, "ticks out of order");
            prev = v;
        }
        assert!(start.elapsed() < 5 * d + SLACK);
        tk.stop();
    });
}

/// Go's TestTicker: count/2 ticks of d, reset to 2d, count/2 more, at least 3·d·count/2 in all;
/// then the stopped ticker stays silent.
#[test]
fn ticker_reset_and_stop() {
    let _w = watchdog("ticker_reset_and_stop", LIMIT);
    rt(2).block_on(async {
        let (count, d) = (10u32, 5 * MS);
        // Before the ticker is armed: its first ticks are due a period after the arming, so a
        // thread descheduled between the two would otherwise shorten the total it must reach.
        let t0 = Instant::now();
        let tk = Ticker::new(d);
        for _ in 0..count / 2 {
            recv_within(&tk.c, d + SLACK, "tick").await;
        }
        let r = Instant::now();
        tk.reset(2 * d);
        let mut prev = r;
        for i in 1..=count / 2 {
            let v = recv_within(&tk.c, 2 * d + SLACK, "tick after reset").await;
            assert!(v >= r + i * 2 * d, "tick {i} after reset came early");
            assert!(v > prev);
            prev = v;
        }
        tk.stop();
        let dt = t0.elapsed();
        assert!(dt >= 3 * d * (count / 2), "{count} ticks took only {dt:?}");
        assert!(!arrives_within(&tk.c, 4 * d).await, "ticker did not shut down");

        // Reset restarts a stopped ticker; an hour-long one reset to 5 ms ticks at 5 ms.
        let r = Instant::now();
        tk.reset(d);
        let v = recv_within(&tk.c, d + SLACK, "tick of a restarted ticker").await;
        assert!(v >= r + d);
        let tk = Ticker::new(Duration::from_secs(3600));
        let r = Instant::now();
        tk.reset(d);
        let v1 = recv_within(&tk.c, d + SLACK, "tick").await;
        let v2 = recv_within(&tk.c, d + SLACK, "tick").await;
        assert!(v1 >= r + d && v2 >= r + 2 * d);

        // Go's TestTeardown.
        for _ in 0..3 {
            let tk = Ticker::new(2 * MS);
            recv_within(&tk.c, SLACK, "tick").await;
            tk.stop();
        }
    });
}

/// Stop discards a tick that was sent and not received (Go 1.23), and nothing comes after.
#[test]
fn ticker_stop_discards_a_pending_tick() {
    let _w = watchdog("ticker_stop_discards_a_pending_tick", LIMIT);
    rt(2).block_on(async {
        let tk = Ticker::new(MS);
        yield_until("a tick to be pending", || tk.c.len() == 1).await;
        tk.stop();
        assert_eq!(tk.c.try_recv(), Err(TryRecvError::Empty), "a tick survived stop");
        assert!(!arrives_within(&tk.c, 20 * MS).await, "a stopped ticker ticked");
    });
}

/// A slow receiver gets dropped ticks, not a backlog: after 25+ periods unreceived, at most the
/// one buffered tick (plus one fired meanwhile) is there, and the ticker does not then fire the
/// missed ticks in a burst: it resumes on its period (Go's catch-up to the next boundary).
#[test]
fn ticker_drops_ticks_for_a_slow_receiver() {
    let _w = watchdog("ticker_drops_ticks_for_a_slow_receiver", LIMIT);
    rt(2).block_on(async {
        let d = 10 * MS;
        let tk = Ticker::new(d);
        sleep(25 * d).await;
        let mut drained = 0;
        while tk.c.try_recv().is_ok() {
            drained += 1;
        }
        assert!((1..=2).contains(&drained), "{drained} ticks were waiting: queued, not dropped");
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(recv_within(&tk.c, d + SLACK, "tick after a slow receive").await);
        }
        // Two ticks apart are at least one period apart (less a clock-reading skew): a burst
        // of missed ticks would be microseconds apart.
        for w in v.windows(3) {
            assert!(w[2] - w[0] >= d / 2, "ticks came in a burst: {:?}", w[2] - w[0]);
        }
        tk.stop();
    });
}

/// `Ticker::new(0)` panics with Go's message (Go's TestNewTickerLtZeroDuration), and so does
/// `reset(0)` (TestTickerResetLtZeroDuration).
#[test]
fn ticker_zero_period_panics() {
    let _w = watchdog("ticker_zero_period_panics", LIMIT);
    rt(2).block_on(async {
        let p = catch_unwind(|| Ticker::new(Duration::ZERO)).expect_err("Ticker::new(0) must panic");
        let msg = panic_message(&*p);
        assert!(msg.contains("non-positive interval"), "unclear panic message: {msg}");
        let p = catch_unwind(|| tick(Duration::ZERO)).expect_err("tick(0) must panic");
        assert!(panic_message(&*p).contains("non-positive interval"));
        let tk = Ticker::new(Duration::from_secs(3600));
        let p = catch_unwind(AssertUnwindSafe(|| tk.reset(Duration::ZERO))).expect_err("reset(0) must panic");
        assert!(panic_message(&*p).contains("non-positive interval"));
    });
}

/// `tick`'s ticker has no handle to stop it: it stops itself once its receiver is gone, and
/// its heap entry goes with it. Same for a dropped `after` once its deadline passes.
#[test]
fn tick_stops_once_its_receiver_is_dropped() {
    let _w = watchdog("tick_stops_once_its_receiver_is_dropped", LIMIT);
    rt(2).block_on(async {
        assert_eq!(goro::runtime::metrics().timers, 0);
        // Read before the ticker exists: its ticks are due at its creation + i ms.
        let start = Instant::now();
        let c = tick(MS);
        for i in 1..=3u32 {
            let v = recv_within(&c, SLACK, "tick").await;
            assert!(v >= start + i * MS);
        }
        assert!(goro::runtime::metrics().timers >= 1, "the ticker has no heap entry");
        drop(c);
        drop(after(5 * MS));
        // Each check follows a sleep whose own entry was popped when it fired.
        let deadline = Instant::now() + HANG;
        loop {
            sleep(2 * MS).await;
            let n = goro::runtime::metrics().timers;
            if n == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "timers never swept: {n} entries left");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Stop and reset racing the firing
// ---------------------------------------------------------------------------------------------

const RACE_ROUNDS: usize = 2_000;

/// A G stops timers that are firing on the runtime's Ms right then. Invariant (Go 1.23): once
/// `stop` has returned, whatever it returned, the channel never delivers that arming's value.
#[test]
fn timer_stop_racing_fire_never_delivers_after_stop() {
    let _w = watchdog("timer_stop_racing_fire", LIMIT);
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<(Timer, u64)>(16);
        let stopper = goro::go(async move {
            let mut kept = Vec::new();
            let (mut stopped, mut fired) = (0usize, 0usize);
            while let Some((t, jitter)) = rx.recv().await {
                spin(jitter);
                if t.stop() {
                    stopped += 1;
                } else {
                    fired += 1;
                }
                assert_eq!(t.c.try_recv(), Err(TryRecvError::Empty), "a value right after stop");
                kept.push(t);
            }
            (kept, stopped, fired)
        });
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..RACE_ROUNDS {
            let t = Timer::new(Duration::from_nanos(rng.below(200_000)));
            tx.send((t, rng.below(2_000))).await.unwrap();
        }
        drop(tx);
        let (kept, stopped, fired) = stopper.await.unwrap();
        assert_eq!(stopped + fired, RACE_ROUNDS);
        // Every deadline (< 200 µs) is long past: a value now would be a stale delivery.
        sleep(5 * MS).await;
        for t in &kept {
            assert_eq!(t.c.try_recv(), Err(TryRecvError::Empty), "delivered after stop returned");
            assert!(!t.stop());
        }
        eprintln!("timer_stop_racing_fire: {stopped} stopped in time, {fired} had fired");
    });
}

/// The exactly-once rule of a one-shot against a racing stop: for each after_func, either stop
/// returned true and f never runs, or stop returned false and f runs, once.
#[test]
fn after_func_stop_racing_fire_exactly_one_outcome() {
    let _w = watchdog("after_func_stop_racing_fire", LIMIT);
    rt(2).block_on(async {
        let ran: Arc<Vec<AtomicU8>> = Arc::new((0..RACE_ROUNDS).map(|_| AtomicU8::new(0)).collect());
        let (tx, rx) = goro::chan::<(Timer, u64)>(16);
        let stopper = goro::go(async move {
            let mut results = Vec::new();
            while let Some((t, jitter)) = rx.recv().await {
                spin(jitter);
                results.push(t.stop());
            }
            results
        });
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for i in 0..RACE_ROUNDS {
            let r = ran.clone();
            let t = after_func(Duration::from_nanos(rng.below(200_000)), move || {
                r[i].fetch_add(1, SeqCst);
            });
            tx.send((t, rng.below(2_000))).await.unwrap();
        }
        drop(tx);
        let stopped = stopper.await.unwrap();
        let should_run = stopped.iter().filter(|s| !**s).count();
        let count = || ran.iter().filter(|r| r.load(SeqCst) > 0).count();
        yield_until("every fired after_func to run", || count() >= should_run).await;
        // Deadlines (< 200 µs) long past: anything stopped in time that was going to run
        // wrongly has had ample time to.
        sleep(5 * MS).await;
        for (i, s) in stopped.iter().enumerate() {
            let runs = ran[i].load(SeqCst);
            if *s {
                assert_eq!(runs, 0, "after_func {i}: stop returned true, yet f ran");
            } else {
                assert_eq!(runs, 1, "after_func {i}: stop returned false, yet f ran {runs} times");
            }
        }
        eprintln!("after_func race: {} stopped in time, {should_run} ran", RACE_ROUNDS - should_run);
    });
}

/// Reset racing the firing: once `reset(1h)` returns, the old arming's value is never
/// delivered, and the timer is armed for the hour (stop returns true).
#[test]
fn timer_reset_racing_fire_never_delivers_the_old_value() {
    let _w = watchdog("timer_reset_racing_fire", LIMIT);
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<(Timer, u64)>(16);
        let resetter = goro::go(async move {
            let mut kept = Vec::new();
            while let Some((t, jitter)) = rx.recv().await {
                spin(jitter);
                t.reset(Duration::from_secs(3600));
                assert_eq!(t.c.try_recv(), Err(TryRecvError::Empty), "a value right after reset");
                kept.push(t);
            }
            kept
        });
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..RACE_ROUNDS {
            let t = Timer::new(Duration::from_nanos(rng.below(200_000)));
            tx.send((t, rng.below(2_000))).await.unwrap();
        }
        drop(tx);
        let kept = resetter.await.unwrap();
        sleep(5 * MS).await;
        for t in &kept {
            assert_eq!(t.c.try_recv(), Err(TryRecvError::Empty), "the old arming delivered after reset");
            assert!(t.stop(), "reset did not re-arm the timer");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Many sleepers
// ---------------------------------------------------------------------------------------------

/// 10_000 Gs each sleep 10 ms: none wakes early, and all have woken within 2 s.
#[test]
fn ten_thousand_sleepers_wake_within_two_seconds() {
    let _w = watchdog("ten_thousand_sleepers", LIMIT);
    const N: usize = 10_000;
    rt(2).block_on(async {
        let early = Arc::new(AtomicUsize::new(0));
        let wg = WaitGroup::new();
        let start = Instant::now();
        for _ in 0..N {
            let early = early.clone();
            drop(wg.go(async move {
                let s = Instant::now();
                sleep(10 * MS).await;
                if s.elapsed() < 10 * MS {
                    early.fetch_add(1, SeqCst);
                }
            }));
        }
        wg.wait().await;
        let e = start.elapsed();
        assert_eq!(early.load(SeqCst), 0, "some sleeps returned early");
        assert!(e < Duration::from_secs(2), "{N} sleepers of 10 ms took {e:?}");
        let m = goro::runtime::metrics();
        assert!(m.threads <= m.procs + 2, "{} threads for {N} sleepers: {m:?}", m.threads);
    });
}

/// 100_000 Gs asleep at once: each is a heap entry, not a thread. The thread count stays at
/// about the P count while they sleep and after they wake.
#[test]
fn hundred_thousand_sleepers_cost_no_thread_each() {
    let _w = watchdog("hundred_thousand_sleepers", LIMIT);
    const N: usize = 100_000;
    let rt = rt(2);
    rt.block_on(async {
        let asleep = Arc::new(AtomicUsize::new(0));
        let woke = Arc::new(AtomicUsize::new(0));
        let wg = WaitGroup::new();
        let wake_at = Instant::now() + Duration::from_secs(1);
        for _ in 0..N {
            let (asleep, woke) = (asleep.clone(), woke.clone());
            drop(wg.go(async move {
                asleep.fetch_add(1, SeqCst);
                sleep_until(wake_at).await;
                if Instant::now() >= wake_at {
                    woke.fetch_add(1, SeqCst);
                }
            }));
        }
        // Each G counts itself just before its sleep arms (same poll, maybe on the other M, so
        // the count can lead the timers by a moment): wait for both, or for the wake-up time.
        yield_until("every G to fall asleep", || {
            asleep.load(SeqCst) == N && (goro::runtime::metrics().timers >= N || Instant::now() >= wake_at)
        })
        .await;
        let m = goro::runtime::metrics();
        if Instant::now() < wake_at {
            assert_eq!(woke.load(SeqCst), 0);
            assert!(m.timers >= N, "{N} sleeping Gs but {} timers", m.timers);
        }
        assert!(m.threads <= m.procs + 2, "{} threads with {N} sleeping Gs: {m:?}", m.threads);
        wg.wait().await;
        assert_eq!(woke.load(SeqCst), N, "some sleepers woke early");
        assert!(Instant::now() < wake_at + SLACK, "the sleepers woke {:?} late", Instant::now() - wake_at);
        let m = goro::runtime::metrics();
        assert!(m.threads <= m.procs + 2, "{} threads after {N} sleepers: {m:?}", m.threads);
    });
}

/// Dropped sleeps leave stale heap entries that must not pile up: below the sweep threshold
/// they leave when their deadline reaches the top of the heap; in bulk, the next arming on the
/// same heap sweeps them (Go's `cleantimers`), long before their hour-long deadlines.
#[test]
fn dropped_sleeps_are_swept() {
    let _w = watchdog("dropped_sleeps_are_swept", LIMIT);
    rt(2).block_on(async {
        let h = goro::go(async {
            assert_eq!(goro::runtime::metrics().timers, 0);
            // A few short ones: gone once their deadlines pass.
            for _ in 0..10 {
                let mut s = sleep(5 * MS);
                assert!(poll_once(&mut s).is_pending());
            }
            sleep(20 * MS).await;
            assert_eq!(goro::runtime::metrics().timers, 0, "short stale entries not removed at their deadline");

            // Many hour-long ones, then one more arming, all in one poll (so on one P's heap).
            {
                let mut sleeps: Vec<_> = (0..1_000).map(|_| sleep(Duration::from_secs(3600))).collect();
                for s in &mut sleeps {
                    assert!(poll_once(s).is_pending());
                }
                assert!(goro::runtime::metrics().timers >= 1_000);
            }
            let mut s = sleep(MS);
            assert!(poll_once(&mut s).is_pending());
            let n = goro::runtime::metrics().timers;
            assert!(n < 100, "{n} heap entries after 1000 stopped sleeps and one arming: not swept");
            s.await;
            assert_eq!(goro::runtime::metrics().timers, 0);
        });
        h.await.unwrap();
    });
}

/// A Sleep armed on one runtime and dropped inside another (a future moved between runtimes)
/// must stop its timer on the runtime it was armed on, not index the other's Ps.
#[test]
fn sleep_dropped_on_another_runtime() {
    let _w = watchdog("sleep_dropped_on_another_runtime", LIMIT);
    let a = rt(2);
    // Two Gs running at once are on both Ps: one of the sleeps is armed on P1's heap.
    let sleeps = a.block_on(async {
        let here = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let here = here.clone();
                goro::go(async move {
                    here.fetch_add(1, SeqCst);
                    let until = Instant::now() + Duration::from_secs(5);
                    while here.load(SeqCst) < 2 && Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    let mut s = sleep(Duration::from_secs(3600));
                    assert!(poll_once(&mut s).is_pending());
                    [s]
                })
            })
            .collect();
        let mut out = Vec::new();
        for h in hs {
            out.extend(h.await.unwrap());
        }
        assert_eq!(goro::runtime::metrics().timers, 2);
        out
    });
    let b = rt(1);
    b.block_on(async move { drop(sleeps) });
    // `a`'s timers still work.
    a.block_on(async {
        let start = Instant::now();
        sleep(MS).await;
        assert!(start.elapsed() >= MS);
    });
}

// ---------------------------------------------------------------------------------------------
// Timers with other work
// ---------------------------------------------------------------------------------------------

/// Timers keep firing on time while both Ps are busy with a channel ping-pong (the timers are
/// run at every schedule), and a ticker and sleepers run alongside it.
#[test]
fn timers_and_channel_pingpong_together() {
    let _w = watchdog("timers_and_channel_pingpong_together", LIMIT);
    rt(2).block_on(async {
        const ROUNDS: u64 = 20_000;
        let (ping_tx, ping_rx) = goro::chan::<u64>(0);
        let (pong_tx, pong_rx) = goro::chan::<u64>(0);
        let ponger = goro::go(async move {
            while let Some(v) = ping_rx.recv().await {
                pong_tx.send(v + 1).await.unwrap();
            }
        });
        let pinger = goro::go(async move {
            let mut v = 0;
            for _ in 0..ROUNDS {
                ping_tx.send(v).await.unwrap();
                v = pong_rx.recv().await.unwrap();
            }
            v
        });
        let sleepers: Vec<_> = (0..4u32)
            .map(|i| {
                goro::go(async move {
                    for _ in 0..20 {
                        let d = (i + 1) * MS;
                        let s = Instant::now();
                        sleep(d).await;
                        let e = s.elapsed();
                        assert!(e >= d && e < d + SLACK, "sleep({d:?}) took {e:?} beside the ping-pong");
                    }
                })
            })
            .collect();
        let ticks = goro::go(async {
            let start = Instant::now();
            let tk = Ticker::new(2 * MS);
            for i in 1..=10u32 {
                let v = recv_within(&tk.c, SLACK, "tick beside the ping-pong").await;
                assert!(v >= start + i * 2 * MS);
            }
        });
        assert_eq!(pinger.await.unwrap(), ROUNDS);
        ponger.await.unwrap();
        ticks.await.unwrap();
        for h in sleepers {
            h.await.unwrap();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Misuse
// ---------------------------------------------------------------------------------------------

/// Outside a runtime, a sleep that has to wait panics when polled, naming `goro::run`; so do
/// the channel timers when made.
#[test]
fn timers_outside_a_runtime_panic_naming_goro_run() {
    let p = catch_unwind(|| poll_once(&mut sleep(MS))).expect_err("a sleep polled outside a runtime must panic");
    let msg = panic_message(&*p);
    assert!(msg.contains("goro::run"), "the panic does not say what to do: {msg}");
    for (what, p) in [
        ("Timer::new", catch_unwind(|| drop(Timer::new(MS))).err()),
        ("after", catch_unwind(|| drop(after(MS))).err()),
        ("after_func", catch_unwind(|| drop(after_func(MS, || {}))).err()),
        ("Ticker::new", catch_unwind(|| drop(Ticker::new(MS))).err()),
    ] {
        let p = p.unwrap_or_else(|| panic!("{what} outside a runtime must panic"));
        let msg = panic_message(&*p);
        assert!(msg.contains("goro::run"), "{what}: unclear panic message: {msg}");
    }
}

/// Go's debounce: `reset` of an `after_func` timer that already ran schedules `f` again.
#[test]
fn after_func_reset_after_it_ran_runs_f_again() {
    let _w = watchdog("after_func_reset_after_it_ran_runs_f_again", LIMIT);
    rt(2).block_on(async {
        let (tx, rx) = goro::chan::<u32>(4);
        let t = after_func(Duration::from_millis(1), move || tx.try_send(1).unwrap());
        assert_eq!(recv_within(&rx, SLACK, "first run").await, 1);
        assert!(!t.reset(Duration::from_millis(1)), "it had fired");
        assert_eq!(recv_within(&rx, SLACK, "second run").await, 1);
        assert!(t.stop() || rx.try_recv().is_err());
    });
}

// ---- Go's own tests of timer channels (src/time/tick_test.go, sleep_test.go), as a Go user
// ports them: Go 1.23's synchronous timer channels (GODEBUG asynctimerchan=0). ----

/// What Go's `testTimerChan` needs of a `*Timer` or a `*Ticker`: `Stop` and `Reset` that say
/// whether a value was pending, and the channel.
trait GoTimer {
    fn stop(&self) -> bool;
    fn reset(&self, d: Duration) -> bool;
    fn c(&self) -> &Receiver<Instant>;
    fn is_ticker(&self) -> bool;
}

impl GoTimer for Timer {
    fn stop(&self) -> bool {
        Timer::stop(self)
    }
    fn reset(&self, d: Duration) -> bool {
        Timer::reset(self, d)
    }
    fn c(&self) -> &Receiver<Instant> {
        &self.c
    }
    fn is_ticker(&self) -> bool {
        false
    }
}

/// Go's `tickerTimer`: a Ticker whose `Stop` and `Reset` return bools, as the test's does.
struct TickerTimer {
    ticker: Ticker,
    stopped: std::cell::Cell<bool>,
}

impl GoTimer for TickerTimer {
    fn stop(&self) -> bool {
        let pending = !self.stopped.replace(true);
        self.ticker.stop();
        pending
    }
    fn reset(&self, d: Duration) -> bool {
        let pending = !self.stopped.replace(false);
        self.ticker.reset(d);
        pending
    }
    fn c(&self) -> &Receiver<Instant> {
        &self.ticker.c
    }
    fn is_ticker(&self) -> bool {
        true
    }
}

const NS: Duration = Duration::from_nanos(1);
const HOUR: Duration = Duration::from_secs(3600);

/// Go's `testTimerChan` with `synctimerchan` true.
async fn test_timer_chan(tim: &impl GoTimer) {
    let c = tim.c();
    let is_ticker = tim.is_ticker();
    // Retry parameters. Enough to deflake even on slow machines.
    let sched = 10 * MS;
    let tries = 100;
    let no_tick = || assert!(c.try_recv().is_err(), "extra tick");
    let assert_tick = || async {
        if c.try_recv().is_ok() {
            return;
        }
        for _ in 0..tries {
            sleep(sched).await;
            if c.try_recv().is_ok() {
                return;
            }
        }
        panic!("missing tick");
    };
    let not_done = |done: &Receiver<bool>| assert!(done.try_recv() == Err(TryRecvError::Empty), "early done");
    let wait_done = |done: Receiver<bool>| async move {
        for _ in 0..tries {
            sleep(sched).await;
            if done.try_recv() != Err(TryRecvError::Empty) {
                return;
            }
        }
        panic!("never got done");
    };

    // Test simple stop; timer never in heap.
    tim.stop();
    no_tick();

    // Test modify of timer not in heap.
    tim.reset(10000 * Duration::from_secs(1));
    no_tick();

    // Test modify of timer in heap.
    tim.reset(NS);
    sleep(sched).await;
    assert_tick().await;

    // Sleep long enough that a second tick must happen if this is a ticker.
    // Test that Reset does not lose the tick that should have happened.
    sleep(sched).await;
    tim.reset(10000 * Duration::from_secs(1));
    no_tick();

    // Reset timer in heap (already reset above, but just in case).
    tim.reset(10000 * Duration::from_secs(1));

    // Test stop while timer in heap (because goroutine is blocked on <-C).
    let (done_tx, done) = goro::chan::<bool>(0);
    not_done(&done);
    let c2 = c.clone();
    goro::go(async move {
        c2.recv().await;
        drop(done_tx); // close(done)
    });
    sleep(sched).await;
    not_done(&done);

    // Test reset far away while timer in heap.
    tim.reset(20000 * Duration::from_secs(1));
    sleep(sched).await;
    not_done(&done);

    // Test imminent reset while in heap.
    tim.reset(NS);
    wait_done(done).await;

    // If this is a ticker, another tick should have come in already (they are 1ns apart). If
    // a timer, it should have stopped.
    if is_ticker {
        assert_tick().await;
    } else {
        no_tick();
    }

    tim.stop();
    no_tick();

    // Again using select and with two goroutines waiting.
    tim.reset(10000 * Duration::from_secs(1));
    let (done_tx, done) = goro::chan::<bool>(2);
    let (stop_tx, stop) = goro::chan::<bool>(0);
    let mut finished = Vec::new();
    for _ in 0..2 {
        let (c, done_tx, stop) = (c.clone(), done_tx.clone(), stop.clone());
        let (closed_tx, closed) = goro::chan::<bool>(0);
        finished.push(closed);
        goro::go(async move {
            goro::select! {
                recv(c) -> _ => done_tx.send(true).await.unwrap(),
                recv(stop) -> _ => {}
            }
            drop(closed_tx);
        });
    }
    sleep(sched).await;
    not_done(&done);
    tim.reset(sched / 2);
    sleep(sched).await;
    wait_done(done.clone()).await;
    tim.stop();
    drop(stop_tx); // close(stop)
    for closed in finished {
        wait_done(closed).await;
    }
    if is_ticker {
        // An extra send might have sent done again (handled by buffering done above).
        let _ = done.try_recv();
        // An extra send after that might have filled C.
        let _ = c.try_recv();
    }
    not_done(&done);

    // Test enqueueTimerChan when timer is stopped.
    let (stop_tx, stop) = goro::chan::<bool>(0);
    let (done_tx, done) = goro::chan::<bool>(2);
    for _ in 0..2 {
        let (c, done_tx, stop) = (c.clone(), done_tx.clone(), stop.clone());
        goro::go(async move {
            goro::select! {
                recv(c) -> _ => panic!("unexpected data"),
                recv(stop) -> _ => {}
            }
            done_tx.send(true).await.unwrap();
        });
    }
    sleep(sched).await;
    drop(stop_tx);
    wait_done(done.clone()).await;
    wait_done(done).await;

    // Test that Stop and Reset block old values from being received (go.dev/issue/37196).
    tim.reset(NS);
    sleep(10 * MS).await;
    assert!(tim.stop(), "tim.Stop() = false, want true");
    no_tick();

    tim.reset(HOUR);
    no_tick();
    assert!(tim.reset(NS), "tim.Reset() = false, want true");
    assert_tick().await;
    sleep(10 * MS).await;
    if is_ticker {
        assert_tick().await;
        sleep(10 * MS).await;
    } else {
        no_tick();
    }
    assert_eq!(tim.reset(HOUR), is_ticker, "tim.Reset(Hour)");
    no_tick();
}

/// Go's `TestChan`, Go 1.23's synchronous channels: a Timer and a Ticker.
#[test]
fn test_chan() {
    let _w = watchdog("test_chan", LIMIT);
    rt(2).block_on(async {
        let tim = Timer::new(10000 * Duration::from_secs(1));
        test_timer_chan(&tim).await;
        let tim = TickerTimer { ticker: Ticker::new(10000 * Duration::from_secs(1)), stopped: Default::default() };
        test_timer_chan(&tim).await;
    });
}

/// Go's `testStopResetResult`: two 1 ms timers race in a select, 1000 Gs times 100; the loser is
/// stopped (or reset), and when that says it was not pending, its value must be there to
/// receive: a `stop` that said "fired" and drained the value would leave the read blocked
/// forever.
fn test_stop_reset_result(test_stop: bool) {
    let _w = watchdog(if test_stop { "test_stop_result" } else { "test_reset_result" }, LIMIT);
    rt(2).block_on(async move {
        let stop_or_reset = move |t: &Timer| if test_stop { t.stop() } else { t.reset(HOUR) };
        let (start_tx, start) = goro::chan::<()>(0);
        let wg = WaitGroup::new();
        const N: usize = 1000;
        wg.add(N as isize);
        for _ in 0..N {
            let (wg, start) = (wg.clone(), start.clone());
            goro::go(async move {
                start.recv().await;
                for _ in 0..100 {
                    let timer1 = Timer::new(MS);
                    let timer2 = Timer::new(MS);
                    goro::select! {
                        recv(timer1.c) -> _ => {
                            if !stop_or_reset(&timer2) {
                                // The test fails if this channel read times out.
                                recv_within(&timer2.c, HANG, "timer2 after stop/reset said fired").await;
                            }
                        }
                        recv(timer2.c) -> _ => {
                            if !stop_or_reset(&timer1) {
                                recv_within(&timer1.c, HANG, "timer1 after stop/reset said fired").await;
                            }
                        }
                    }
                }
                wg.done();
            });
        }
        drop(start_tx); // close(start)
        wg.wait().await;
    });
}

/// Go's `TestStopResult`.
#[test]
fn test_stop_result() {
    test_stop_reset_result(true);
}

/// Go's `TestResetResult`.
#[test]
fn test_reset_result() {
    test_stop_reset_result(false);
}

/// Go's `TestTickerStress`, at 1 and 2 Ps: a G loops on `Sleep(1ns)` while main takes 100 ticks
/// of a 1 ns ticker. goro's `sleep` of a deadline already passed returned at once, so at 1 P the
/// loop never gave the P back and main never ran (Go's `Sleep(1ns)` parks).
#[test]
fn test_ticker_stress() {
    let _w = watchdog("test_ticker_stress", LIMIT);
    for procs in [1, 2] {
        rt(procs).block_on(async {
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let sleeper = goro::go(async move {
                while !s.load(SeqCst) {
                    sleep(NS).await;
                }
            });
            let ticker = Ticker::new(NS);
            for _ in 0..100 {
                ticker.c.recv().await.unwrap();
            }
            ticker.stop();
            stop.store(true, SeqCst);
            sleeper.await.unwrap();
        });
    }
}
