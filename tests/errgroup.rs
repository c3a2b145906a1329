//! `goro::sync::errgroup`: x/sync's `errgroup_test.go` ported as a Go user would port it (the
//! tests named after Go's), then what goro adds: the order of slots, panics, back pressure,
//! subtasks adding subtasks, a plain thread waiting.

mod common;

use common::HANG;
use goro::context::{self, Context, ContextError};
use goro::sync::errgroup::Group;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::*};
use std::sync::Arc;

/// Go's `errors.New`: a shared, comparable error value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GoError(&'static str);

impl std::fmt::Display for GoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for GoError {}

/// Go's `TestZeroGroup`: after each `Go`, `Wait` returns the group's first error, for the
/// group's whole life.
#[test]
fn test_zero_group() {
    goro::run(async {
        let err1 = GoError("errgroup_test: 1");
        let err2 = GoError("errgroup_test: 2");
        let cases: [&[Option<GoError>]; 5] = [
            &[],
            &[None],
            &[Some(err1.clone())],
            &[Some(err1.clone()), None],
            &[Some(err1.clone()), None, Some(err2.clone())],
        ];
        for errs in cases {
            let g = Group::<GoError>::new();
            let mut first_err = None;
            for (i, err) in errs.iter().enumerate() {
                let e = err.clone();
                g.go(async move { e.map_or(Ok(()), Err) });
                if first_err.is_none() && err.is_some() {
                    first_err = err.clone();
                }
                let g_err = g.wait().await.err();
                assert_eq!(g_err, first_err, "after g.go for err in {:?}: g.wait() = {g_err:?}", &errs[..=i]);
            }
        }
    });
}

/// The cases of Go's `TestWithContext` and `TestCancelCause`: the errors the subtasks return,
/// and the one `Wait` must.
fn doom_cases() -> [(Vec<Option<GoError>>, Option<GoError>); 4] {
    let err_doom = GoError("group_test: doomed");
    [
        (vec![], None),
        (vec![None], None),
        (vec![Some(err_doom.clone())], Some(err_doom.clone())),
        (vec![Some(err_doom.clone()), None], Some(err_doom)),
    ]
}

/// Go's `TestWithContext`: `Wait` returns the first error, and the context is done after it.
#[test]
fn test_with_context() {
    goro::run(async {
        for (errs, want) in doom_cases() {
            let (g, ctx) = Group::<GoError>::with_context(&Context::background());
            for err in &errs {
                let e = err.clone();
                g.go(async move { e.map_or(Ok(()), Err) });
            }
            assert_eq!(g.wait().await.err(), want, "for err in {errs:?}");
            let canceled = goro::select! {
                recv(ctx.done()) -> _ => true,
                default => false,
            };
            assert!(canceled, "for err in {errs:?}: ctx.done() was not closed");
        }
    });
}

/// Go's `TestTryGo`.
#[test]
fn test_try_go() {
    goro::run(async {
        let g = Group::<GoError>::new();
        let n = 42;
        g.set_limit(42);
        let (ch_tx, ch_rx) = goro::chan::<()>(0);
        let f = || {
            let ch = ch_tx.clone();
            async move {
                ch.send(()).await.unwrap();
                Ok(())
            }
        };
        for i in 0..n {
            assert!(g.try_go(f()), "TryGo should succeed but got fail at {i}-th call.");
        }
        assert!(!g.try_go(f()), "TryGo is expected to fail but succeeded.");
        let rx = ch_rx.clone();
        goro::go! {
            for _ in 0..n {
                rx.recv().await;
            }
        };
        g.wait().await.unwrap();

        assert!(g.try_go(f()), "TryGo should success but got fail after all goroutines.");
        let rx = ch_rx.clone();
        goro::go! { rx.recv().await };
        g.wait().await.unwrap();

        // Switch limit.
        g.set_limit(1);
        assert!(g.try_go(f()), "TryGo should success but got failed.");
        assert!(!g.try_go(f()), "TryGo should fail but succeeded.");
        let rx = ch_rx.clone();
        goro::go! { rx.recv().await };
        g.wait().await.unwrap();

        // Block all calls.
        g.set_limit(0);
        for _ in 0..1 << 10 {
            assert!(!g.try_go(f()), "TryGo should fail but got succeeded.");
        }
        g.wait().await.unwrap();
    });
}

/// Go's `TestGoLimit`.
#[test]
fn test_go_limit() {
    goro::run(async {
        const LIMIT: i32 = 10;
        let g = Group::<String>::new();
        g.set_limit(LIMIT as isize);
        let active = Arc::new(AtomicI32::new(0));
        for _ in 0..=1 << 10 {
            let active = active.clone();
            g.go(async move {
                let n = active.fetch_add(1, SeqCst) + 1;
                if n > LIMIT {
                    return Err(format!("saw {n} active goroutines; want ≤ {LIMIT}"));
                }
                goro::time::sleep(std::time::Duration::from_micros(1)).await; // others may increment meanwhile
                active.fetch_sub(1, SeqCst);
                Ok(())
            });
        }
        g.wait().await.unwrap();
    });
}

/// Go's `TestCancelCause`: the context's cause is the group's first error, or
/// `context.Canceled` when there was none.
#[test]
fn test_cancel_cause() {
    goro::run(async {
        for (errs, want) in doom_cases() {
            let (g, ctx) = Group::<GoError>::with_context(&Context::background());
            for err in &errs {
                let e = err.clone();
                g.try_go(async move { e.map_or(Ok(()), Err) });
            }
            assert_eq!(g.wait().await.err(), want, "for err in {errs:?}");
            let cause = context::cause(&ctx).expect("the context is done");
            match &want {
                Some(want) => assert_eq!(cause.downcast_ref::<GoError>(), Some(want), "for err in {errs:?}"),
                None => assert_eq!(cause.downcast_ref::<ContextError>(), Some(&ContextError::Canceled)),
            }
        }
    });
}

/// Go's `Go` takes its slot (or waits for it) in the call: with a limit of 1, `go(a)` where `a`
/// blocks, then `try_go(b)`: `a` holds the slot, so `try_go` fails, and `a` runs. The slot used
/// to be taken by `go`'s G when it first ran, after `try_go` had taken it.
#[test]
fn go_takes_its_slot_in_the_order_of_the_calls() {
    goro::run(async {
        let g = Group::<GoError>::new();
        g.set_limit(1);
        let (release_tx, release_rx) = goro::chan::<()>(0);
        let (ran_tx, ran_rx) = goro::chan::<&str>(2);
        let ran = ran_tx.clone();
        g.go(async move {
            ran.send("a").await.unwrap();
            release_rx.recv().await;
            Ok(())
        });
        assert!(!g.try_go(async { Ok(()) }), "try_go took the slot of an earlier go");
        // Three more in line, and a try_go that must not jump it once the slot frees.
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        for i in 0..3 {
            let order = order.clone();
            g.go(async move {
                order.lock().unwrap().push(i);
                Ok(())
            });
        }
        assert_eq!(ran_rx.recv().await, Some("a"));
        drop(release_tx);
        g.wait().await.unwrap();
        assert_eq!(*order.lock().unwrap(), [0, 1, 2], "slots went out of the order of the go calls");
        drop(ran_tx);
    });
}

/// A G waiting in line for its slot may be dropped (its runtime shut down) without losing the
/// slot: the next one in line gets it.
#[test]
fn a_subtask_dropped_while_in_line_passes_its_slot_on() {
    let g = Group::<GoError>::new();
    g.set_limit(1);
    let (release_tx, release_rx) = goro::chan::<()>(0);
    {
        let rt = goro::runtime::Builder::new().max_procs(1).build().unwrap();
        rt.block_on(async {
            g.go(async move {
                release_rx.recv().await;
                Ok(())
            });
            g.go(async { Ok(()) }); // in line; its G is dropped with the runtime
        });
        drop(rt);
    }
    // Both subtasks are done (dropped with their runtime), and the slot came back.
    goro::run(async {
        g.wait().await.unwrap();
        assert!(g.try_go(async { Ok(()) }), "a slot was lost with a dropped subtask");
        g.wait().await.unwrap();
    });
    drop(release_tx);
}

/// The group's context is a child: cancelling the parent cancels it, not the other way round.
#[test]
fn context_is_a_child_of_the_parent() {
    goro::run(async {
        let (parent, cancel) = goro::context::with_cancel(&Context::background());
        let (g, ctx) = Group::<&str>::with_context(&parent);
        g.go(async { Err("failed") });
        assert_eq!(g.wait().await, Err("failed"));
        assert!(ctx.err().is_some());
        assert_eq!(parent.err(), None);
        let (_g, ctx) = Group::<&str>::with_context(&parent);
        cancel();
        assert!(ctx.err().is_some());
    });
}

/// An error cancels the context, so the subtasks that watch it stop.
#[test]
fn an_error_stops_the_subtasks_that_watch_the_context() {
    goro::run(async {
        let (g, ctx) = Group::<String>::with_context(&Context::background());
        let stopped = Arc::new(AtomicUsize::new(0));
        for _ in 0..4 {
            let (ctx, stopped) = (ctx.clone(), stopped.clone());
            g.go(async move {
                ctx.done().recv().await; // runs until cancelled
                stopped.fetch_add(1, SeqCst);
                Ok(())
            });
        }
        g.go(async { Err("boom".to_string()) });
        let got = goro::time::timeout(HANG, g.wait()).await.expect("the error must cancel the others");
        assert_eq!(got, Err("boom".to_string()));
        assert_eq!(stopped.load(SeqCst), 4);
        assert_eq!(ctx.err(), Some(ContextError::Canceled));
        assert_eq!(context::cause(&ctx).unwrap().to_string(), "boom");
    });
}

/// `go_wait` (a caller that waits for its slot, Go's back pressure) never exceeds the limit.
#[test]
fn go_wait_never_exceeds_the_limit() {
    goro::run(async {
        const LIMIT: usize = 4;
        let g = Group::<String>::new();
        g.set_limit(LIMIT as isize);
        let running = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let r = running.clone();
            g.go_wait(async move {
                let now = r.fetch_add(1, SeqCst) + 1;
                if now > LIMIT {
                    return Err(format!("{now} running at once"));
                }
                for _ in 0..3 {
                    goro::runtime::yield_now().await;
                }
                r.fetch_sub(1, SeqCst);
                Ok(())
            })
            .await;
            assert!(running.load(SeqCst) <= LIMIT);
        }
        goro::time::timeout(HANG, g.wait()).await.unwrap().unwrap();
    });
}

/// SetLimit while subtasks are active panics with Go's message.
#[test]
fn set_limit_while_active_panics() {
    goro::run(async {
        let g = Group::<GoError>::new();
        let (tx, rx) = goro::chan::<()>(0);
        g.go(async move {
            rx.recv().await;
            Ok(())
        });
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| g.set_limit(2))).unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert_eq!(msg, "errgroup: modify limit while 1 goroutines in the group are still active");
        drop(tx);
        g.wait().await.unwrap();
    });
}

/// A panicking subtask cancels the context, and `wait` panics with its payload once every
/// subtask has finished; a later `wait` panics too (never `Ok`).
#[test]
fn a_panic_is_propagated_by_wait() {
    goro::run(async {
        let (g, ctx) = Group::<GoError>::with_context(&Context::background());
        let finished = Arc::new(AtomicUsize::new(0));
        let (c, f) = (ctx.clone(), finished.clone());
        g.go(async move {
            c.done().recv().await;
            f.fetch_add(1, SeqCst);
            Ok(())
        });
        g.go(async { panic!("subtask exploded") });
        let g2 = g.clone();
        let w = goro::go(async move { g2.wait().await });
        let err = goro::time::timeout(HANG, w).await.unwrap().unwrap_err();
        assert!(err.is_panic());
        assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "subtask exploded");
        assert_eq!(finished.load(SeqCst), 1, "wait returned before the other subtask");
        assert!(ctx.err().is_some());
        let again = goro::go(async move { g.wait().await }).await.unwrap_err();
        assert!(again.is_panic(), "a second wait after a panic returned");
    });
}

/// Subtasks may add subtasks (a crawler adds the links it found): `wait` waits for all.
#[test]
fn subtasks_add_subtasks() {
    goro::run(async {
        let g = Group::<GoError>::new();
        let count = Arc::new(AtomicUsize::new(0));
        fn spawn(g: &Group<GoError>, depth: u32, count: Arc<AtomicUsize>) {
            let g2 = g.clone();
            g.go(async move {
                count.fetch_add(1, SeqCst);
                if depth > 0 {
                    spawn(&g2, depth - 1, count.clone());
                    spawn(&g2, depth - 1, count);
                }
                Ok(())
            });
        }
        spawn(&g, 6, count.clone());
        g.wait().await.unwrap();
        assert_eq!(count.load(SeqCst), 127);
    });
}

/// A plain thread waits with `wait_blocking`.
#[test]
fn wait_blocking_from_a_thread() {
    let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let g = Group::<u8>::new();
    let (tx, rx) = goro::chan::<()>(0);
    rt.block_on(async {
        g.go(async move {
            rx.recv().await;
            Err(3)
        })
    });
    let g2 = g.clone();
    let t = std::thread::spawn(move || g2.wait_blocking());
    tx.send_blocking(()).unwrap();
    assert_eq!(t.join().unwrap(), Err(3));
    assert_eq!(g.wait_blocking(), Err(3), "the first error is the group's for its life");
}

/// `goro::context::Cause` is Go's `error`: `Clone` whatever the error behind it.
#[test]
fn a_group_of_causes_takes_errors_that_are_not_clone() {
    goro::run(async {
        let (g, ctx) = Group::<context::Cause>::with_context(&Context::background());
        g.go(async { Err(Arc::new(std::io::Error::other("disk on fire")) as context::Cause) });
        assert_eq!(g.wait().await.unwrap_err().to_string(), "disk on fire");
        assert_eq!(context::cause(&ctx).unwrap().to_string(), "disk on fire");
    });
}

#[test]
fn group_and_wait_are_send() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Group<String>>();
    fn send<T: Send>() {}
    send::<goro::sync::errgroup::Wait<'static, String>>();
}
