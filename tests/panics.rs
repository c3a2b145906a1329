//! Panics that are not lost: a G's panic that no `JoinHandle` observes is printed in Go's shape
//! (not as Rust's `thread 'goro-m-1' panicked` line), and ends the run where Go would
//! (`UnhandledPanic::ShutdownRuntime`: `#[goro::main]`, `#[goro::test]`).
//!
//! What a process prints on stderr is checked in a child process (this binary, re-run).

mod common;

use common::child::{is_child, run_child, run_child_status};
use goro::runtime::{Builder, UnhandledPanic};
use std::time::Duration;

fn rt(policy: UnhandledPanic) -> goro::runtime::Runtime {
    Builder::new().max_procs(2).unhandled_panic(policy).build().unwrap()
}

#[test]
fn case_detached_panic() {
    if is_child("case_detached_panic") {
        rt(UnhandledPanic::Ignore).block_on(async {
            let (tx, rx) = goro::chan::<()>(0);
            let h = goro::go(async move {
                let _tx = tx;
                panic!("detached boom");
            });
            drop(h); // detached: nothing will observe the panic
            assert_eq!(rx.recv().await, None); // the G is gone (its sender dropped)
            eprintln!("main goes on");
        });
    }
}

/// A detached G's panic: Go's `panic: ` line, where it happened, the G's block; no Rust
/// thread line; and (the default) the program goes on.
#[test]
fn a_detached_gs_panic_is_printed_in_gos_shape() {
    let out = run_child("case_detached_panic", &[]);
    let err = &out.stderr;
    assert!(err.contains("panic: detached boom\n\tat tests/panics.rs:"), "{err}");
    assert!(err.contains(" [running]:\ncreated by the main future at tests/panics.rs:"), "{err}");
    assert!(!err.contains("thread 'goro-m"), "Rust's line too:\n{err}");
    assert!(err.contains("main goes on"), "{err}");
}

#[test]
fn case_handle_dropped_unread() {
    if is_child("case_handle_dropped_unread") {
        rt(UnhandledPanic::Ignore).block_on(async {
            let h = goro::go(async { panic!("unread boom") });
            while !h.is_finished() {
                goro::runtime::yield_now().await;
            }
            drop(h); // finished, its panic never read
        });
    }
}

#[test]
fn case_observed_panic() {
    if is_child("case_observed_panic") {
        rt(UnhandledPanic::ShutdownRuntime).block_on(async {
            let err = goro::go(async { panic!("observed boom") }).await.unwrap_err();
            assert!(err.is_panic());
            assert_eq!(err.to_string().split(": ").last(), Some("observed boom"));
        });
        eprintln!("main returned");
    }
}

#[test]
fn case_caught_inside() {
    if is_child("case_caught_inside") {
        rt(UnhandledPanic::ShutdownRuntime).block_on(async {
            let r = goro::go(async { std::panic::catch_unwind(|| panic!("caught boom")).is_err() }).await;
            assert!(r.unwrap());
        });
    }
}

/// A handle dropped without reading its G's panic: printed then. A panic the handle returns:
/// the program's to report, goro prints nothing (and does not end the run, whatever the
/// policy). A panic caught inside the G: printed when the poll ends, as Rust's hook would have.
#[test]
fn observed_unread_and_caught_panics() {
    let err = run_child("case_handle_dropped_unread", &[]).stderr;
    assert!(err.contains("panic: unread boom\n"), "{err}");
    let err = run_child("case_observed_panic", &[]).stderr;
    assert!(!err.contains("observed boom"), "{err}");
    assert!(err.contains("main returned"), "{err}");
    let err = run_child("case_caught_inside", &[]).stderr;
    assert!(err.contains("panicked at tests/panics.rs:") && err.contains("caught boom"), "{err}");
    assert!(!err.contains("panic: caught boom"), "{err}");
}

/// `ShutdownRuntime`: `block_on` resumes the detached G's panic, though main would wait forever.
#[test]
fn shutdown_runtime_resumes_the_panic_in_block_on() {
    let rt = rt(UnhandledPanic::ShutdownRuntime);
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            drop(goro::go(async {
                goro::time::sleep(Duration::from_millis(5)).await;
                panic!("ends the run")
            }));
            std::future::pending::<()>().await;
        })
    }));
    let payload = ended.expect_err("block_on returned");
    assert_eq!(*payload.downcast::<&str>().unwrap(), "ends the run");
}

#[test]
fn case_goro_main_panic() {
    if is_child("case_goro_main_panic") {
        use goro::__private::{Main, RunAsG as _};
        let main = Main::new(Builder::new().max_procs(2), async {
            drop(goro::go(async { panic!("helper boom") }));
            std::future::pending::<()>().await;
        });
        main.run();
    }
}

/// `#[goro::main]`: a G's unobserved panic ends the program as Go's does: the report on
/// stderr, exit status 2.
#[test]
fn goro_main_exits_2_on_a_gs_panic() {
    let (status, out) = run_child_status("case_goro_main_panic", &[]);
    assert_eq!(status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("panic: helper boom\n"), "{}", out.stderr);
}

/// `#[goro::test]`: a test whose helper G panics fails, with the helper's panic.
#[goro::test(max_procs = 2)]
#[should_panic(expected = "helper of a test boom")]
async fn a_test_whose_helper_g_panics_fails() {
    drop(goro::go(async { panic!("helper of a test boom") }));
    std::future::pending::<()>().await;
}

#[test]
fn case_plain_thread_panic() {
    if is_child("case_plain_thread_panic") {
        let _rt = rt(UnhandledPanic::Ignore); // goro's hook is installed
        let r = std::thread::Builder::new().name("plain".into()).spawn(|| panic!("plain boom")).unwrap().join();
        assert!(r.is_err());
    }
}

/// Panics outside goro's Gs go to the previous hook, unchanged.
#[test]
fn a_plain_threads_panic_is_rusts() {
    let err = run_child("case_plain_thread_panic", &[]).stderr;
    assert!(err.contains("thread 'plain'") && err.contains("panicked at tests/panics.rs:"), "{err}");
    assert!(err.contains("plain boom") && !err.contains("panic: plain boom"), "{err}");
}
