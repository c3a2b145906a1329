//! `goro::sync::errgroup`: x/sync's `errgroup_test.go` in spirit (the zero group, the first
//! error wins, `WithContext` cancels, `TryGo` and `SetLimit`), plus panics and back pressure.

mod common;

use common::HANG;
use goro::context::{Context, ContextError};
use goro::sync::errgroup::Group;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;

/// TestZeroGroup: the first error is returned, later ones are not; no error gives `Ok`.
#[test]
fn zero_group_returns_the_first_error() {
    goro::run(async {
        let g = Group::<&str>::new();
        assert_eq!(g.wait().await, Ok(()));
        // The first error: the subtasks finish one after another, in order.
        let (step_tx, step_rx) = goro::chan::<()>(0);
        let step_rx = Arc::new(step_rx);
        for e in ["first", "second", "third"] {
            let step_rx = step_rx.clone();
            g.go(async move {
                step_rx.recv().await;
                Err(e)
            });
        }
        for _ in 0..3 {
            step_tx.send(()).await.unwrap(); // one subtask fails per step
            goro::yield_now().await;
        }
        let got = g.wait().await;
        assert!(matches!(got, Err("first" | "second" | "third")), "{got:?}");
        // Handed out once.
        assert_eq!(g.wait().await, Ok(()));
    });
}

/// TestWithContext: an error cancels the context; so does `wait`, error or not.
#[test]
fn with_context_cancels_on_error_and_on_wait() {
    goro::run(async {
        let (g, ctx) = Group::<String>::with_context(&Context::background());
        g.go(async { Ok(()) });
        assert_eq!(g.wait().await, Ok(()));
        assert_eq!(ctx.err(), Some(ContextError::Canceled), "wait cancels the context");

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
    });
}

/// The group's context is a child: cancelling the parent cancels it, not the other way round.
#[test]
fn context_is_a_child_of_the_parent() {
    goro::run(async {
        let (parent, cancel) = goro::context::with_cancel(&Context::background());
        let (g, ctx) = Group::<()>::with_context(&parent);
        g.go(async { Err(()) });
        assert_eq!(g.wait().await, Err(()));
        assert!(ctx.err().is_some());
        assert_eq!(parent.err(), None);
        let (_g, ctx) = Group::<()>::with_context(&parent);
        cancel();
        assert!(ctx.err().is_some());
    });
}

/// TestTryGo: with a limit, `try_go` refuses once the group is full and accepts again once a
/// slot frees.
#[test]
fn try_go_respects_the_limit() {
    goro::run(async {
        let g = Group::<()>::new();
        const N: usize = 3;
        g.set_limit(N as isize);
        let (release_tx, release_rx) = goro::chan::<()>(0);
        let release_rx = Arc::new(release_rx);
        for i in 0..N {
            let r = release_rx.clone();
            assert!(
                g.try_go(async move {
                    r.recv().await;
                    Ok(())
                }),
                "slot {i} should be free"
            );
        }
        assert!(!g.try_go(async { Ok(()) }), "the group is full");
        release_tx.send(()).await.unwrap(); // one subtask ends
                                            // Its slot frees as its G ends; wait for that (not a sleep: poll try_go).
        let deadline = std::time::Instant::now() + HANG;
        while !g.try_go(async { Ok(()) }) {
            assert!(std::time::Instant::now() < deadline, "a slot never freed");
            goro::yield_now().await;
        }
        drop(release_tx);
        g.wait().await.unwrap();
        // Empty again: set_limit is allowed.
        g.set_limit(1);
        assert!(g.try_go(async { Ok(()) }));
        g.wait().await.unwrap();
    });
}

/// TestGoLimit: never more than the limit running at once, with `go` (Gs that wait for their
/// slot) and `go_wait` (a caller that waits).
#[test]
fn go_and_go_wait_never_exceed_the_limit() {
    goro::run(async {
        const LIMIT: usize = 4;
        for use_go_wait in [false, true] {
            let g = Group::<String>::new();
            g.set_limit(LIMIT as isize);
            let running = Arc::new(AtomicUsize::new(0));
            let max = Arc::new(AtomicUsize::new(0));
            for _ in 0..50 {
                let (r, max) = (running.clone(), max.clone());
                let task = async move {
                    let running = r;
                    let now = running.fetch_add(1, SeqCst) + 1;
                    max.fetch_max(now, SeqCst);
                    if now > LIMIT {
                        return Err(format!("{now} running at once"));
                    }
                    for _ in 0..3 {
                        goro::yield_now().await;
                    }
                    running.fetch_sub(1, SeqCst);
                    Ok(())
                };
                if use_go_wait {
                    g.go_wait(task).await;
                    assert!(running.load(SeqCst) <= LIMIT);
                } else {
                    g.go(task);
                }
            }
            goro::time::timeout(HANG, g.wait()).await.unwrap().unwrap();
            assert!(max.load(SeqCst) >= 1);
        }
    });
}

/// SetLimit while subtasks are active panics with Go's message.
#[test]
fn set_limit_while_active_panics() {
    goro::run(async {
        let g = Group::<()>::new();
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
/// subtask has finished.
#[test]
fn a_panic_is_propagated_by_wait() {
    goro::run(async {
        let (g, ctx) = Group::<()>::with_context(&Context::background());
        let finished = Arc::new(AtomicUsize::new(0));
        let (c, f) = (ctx.clone(), finished.clone());
        g.go(async move {
            c.done().recv().await;
            f.fetch_add(1, SeqCst);
            Ok(())
        });
        g.go(async { panic!("subtask exploded") });
        let w = goro::go(async move { g.wait().await });
        let err = goro::time::timeout(HANG, w).await.unwrap().unwrap_err();
        assert!(err.is_panic());
        assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "subtask exploded");
        assert_eq!(finished.load(SeqCst), 1, "wait returned before the other subtask");
        assert!(ctx.err().is_some());
    });
}

/// Subtasks may add subtasks (a crawler adds the links it found): `wait` waits for all.
#[test]
fn subtasks_add_subtasks() {
    goro::run(async {
        let g = Group::<()>::new();
        let count = Arc::new(AtomicUsize::new(0));
        fn spawn(g: &Group<()>, depth: u32, count: Arc<AtomicUsize>) {
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
    let rt = goro::Builder::new().max_procs(2).build().unwrap();
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
}

#[test]
fn group_and_wait_are_send() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Group<String>>();
    fn send<T: Send>() {}
    send::<goro::sync::errgroup::Wait<'static, String>>();
}
