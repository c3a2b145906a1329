//! `goro::model` itself: its limits, what it refuses, the dump, virtual time, and how the
//! program ends.

use crate::harness::failure;
use goro::context::{self, Context, ContextError};
use goro::runtime::GoroutineStatus;
use goro::runtime::WaitReason;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

#[test]
fn go_past_the_thread_limit_panics_naming_it() {
    let msg = failure(|| {
        goro::model(|| async {
            for _ in 0..5 {
                goro::go(async {});
            }
        })
    });
    assert!(msg.contains("loom runs at most 5 threads"), "{msg}");
    assert!(msg.contains("the main G, 4 Gs"), "{msg}");
    assert!(msg.contains("goro_model.rs"), "{msg}");
}

#[test]
fn the_clock_takes_a_thread() {
    let msg = failure(|| {
        goro::model(|| async {
            for _ in 0..4 {
                goro::go(async {});
            }
            goro::time::sleep(MS).await;
        })
    });
    assert!(msg.contains("arming a timer (which starts the model's clock)"), "{msg}");
}

#[test]
fn syscall_is_not_available() {
    let msg = failure(|| goro::model(|| async { goro::syscall(|| ()) }));
    assert!(msg.contains("goro::syscall at") && msg.contains("not available in goro::model"), "{msg}");
}

#[test]
fn a_runtime_is_not_available() {
    let msg = failure(|| goro::model(|| async { goro::run(async {}) }));
    assert!(msg.contains("a runtime cannot be built inside goro::model"), "{msg}");
}

#[test]
fn a_g_that_panics_fails_the_model() {
    let msg = failure(|| {
        goro::model(|| async {
            let _ = goro::go(async { panic!("boom in a G") }).await;
        })
    });
    assert!(msg.contains("boom in a G"), "{msg}");
}

/// A deadlock that is no lock's: main waits on a channel whose sender it keeps.
#[test]
fn a_deadlock_shows_each_g_and_what_it_waits_on() {
    let msg = failure(|| {
        goro::model(|| async {
            let (tx, rx) = goro::chan::<u32>(0);
            let (_keep, never) = goro::chan::<u32>(0);
            goro::go(async move {
                let _ = never.recv().await;
                drop(tx);
            });
            let _ = rx.recv().await;
        })
    });
    assert!(msg.starts_with("goro::model: all goroutines are asleep - deadlock!\n\n"), "{msg}");
    assert!(msg.contains("goroutine 1 [chan receive]:\nmain goroutine, started at "), "{msg}");
    assert!(msg.contains("goroutine 2 [chan receive]:\ncreated by goroutine 1 at "), "{msg}");
}

/// `goroutines()`, `dump()` and `num_goroutine()` see the model's Gs.
#[test]
fn introspection_sees_the_models_gs() {
    goro::model(|| async {
        let (tx, rx) = goro::chan::<u32>(0);
        let h = goro::go(async move { rx.recv().await });
        let id = h.id();
        // Yield until the G parks on its receive (a loom yield: the others go first).
        while !goro::runtime::goroutines().iter().any(|g| g.id == id && g.status == GoroutineStatus::Waiting) {
            goro::runtime::yield_now().await;
        }
        let gs = goro::runtime::goroutines();
        assert_eq!(gs.len(), 2);
        assert_eq!(goro::runtime::num_goroutine(), 2);
        let g = gs.iter().find(|g| g.id == id).unwrap();
        assert_eq!(g.wait_reason, Some(WaitReason::ChanReceive));
        assert!(goro::runtime::dump().contains(&format!("goroutine {id} [chan receive]:")));
        tx.send(3).await.unwrap();
        assert_eq!(h.await.unwrap(), Some(3));
        assert_eq!(goro::runtime::num_goroutine(), 1);
    });
}

/// Virtual time moves only when the clock fires a timer, to its deadline: durations are exact.
#[test]
fn virtual_durations_are_exact() {
    goro::model(|| async {
        let a = goro::time::after(MS).recv().await.unwrap();
        goro::time::sleep(3 * MS).await;
        let b = goro::time::after(10 * MS).recv().await.unwrap();
        assert_eq!(b - a, 13 * MS);
    });
}

/// Timers fire in deadline order: the 5 ms timer, armed first, has always fired by the time the
/// 10 ms one has. (Armed the other way round, the 10 ms timer may fire first: main may be slow
/// to arm the second, as in Go.)
#[test]
fn timers_fire_in_deadline_order() {
    goro::model(|| async {
        let early = goro::time::after(5 * MS);
        let late = goro::time::after(10 * MS);
        let l = late.recv().await.unwrap();
        let e = early.try_recv().expect("the 10 ms timer fired before the 5 ms one");
        assert!(e < l);
    });
}

/// A ticker's ticks are a period apart, or a multiple of it when the receiver fell behind (the
/// channel holds one tick; the others are dropped, as in Go).
#[test]
fn a_ticker_ticks_every_period() {
    goro::model(|| async {
        let t = goro::time::Ticker::new(2 * MS);
        let a = t.c.recv().await.unwrap();
        let b = t.c.recv().await.unwrap();
        t.stop();
        let gap = (b - a).as_nanos();
        assert!(gap > 0 && gap % (2 * MS).as_nanos() == 0, "{gap} ns");
    });
}

#[test]
fn a_context_deadline_fires() {
    goro::model(|| async {
        let (ctx, cancel) = context::with_timeout(&Context::background(), 5 * MS);
        ctx.done().recv().await;
        assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
        cancel();
    });
}

#[test]
fn abort_cancels_a_waiting_g() {
    goro::model(|| async {
        let h = goro::go(std::future::pending::<()>());
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
    });
}

/// `yield_now` in a loop lets the other Gs run (each is a loom yield).
#[test]
fn spinning_on_yield_now_ends() {
    goro::model(|| async {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        goro::go(async move { f.store(true, SeqCst) });
        while !flag.load(SeqCst) {
            goro::runtime::yield_now().await;
        }
    });
}

/// Go's program exit: a generator G left sending forever when main returns is stopped. As on
/// goro's runtime, it may see main's receiver dropped first (main's locals go with its last
/// poll), so it stops on the send's error rather than unwrapping it.
#[test]
fn gs_still_running_when_main_returns_are_stopped() {
    goro::model(|| async {
        let (tx, rx) = goro::chan::<u32>(0);
        goro::go(async move {
            let mut i = 0;
            while tx.send(i).await.is_ok() {
                i += 1;
            }
        });
        assert_eq!(rx.recv().await, Some(0));
        assert_eq!(rx.recv().await, Some(1));
    });
}

/// `goro::net` and `goro::signal` exist in a loom build (a crate whose binary serves TCP must
/// build for its model tests: this crate's `src/bin/echo.rs` does), and refuse to run in a model
/// with a message that says why.
#[test]
fn net_and_signal_are_not_available() {
    let msg = failure(|| {
        goro::model(|| async {
            let _ = goro::net::TcpListener::bind("127.0.0.1:0").await;
        })
    });
    assert!(msg.contains("goro::net is not available in goro::model"), "{msg}");
    let msg = failure(|| {
        goro::model(|| async {
            let _ = goro::signal::try_notify_context(&Context::background(), [goro::signal::SIGUSR1]);
        })
    });
    assert!(msg.contains("goro::signal is not available in goro::model"), "{msg}");
}
