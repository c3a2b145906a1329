//! `#[goro::main]` and `#[goro::test]` against the real runtime.
//!
//! The token rewriting itself is unit-tested in `crates/macros`; this checks that what it
//! expands to compiles against the facade (`goro::run`, `goro::runtime::Builder`, `Runtime::block_on`)
//! and runs the body as a G.

mod common;

use common::child::{is_child, run_child_status};

#[goro::test]
async fn runs_the_body_as_a_goroutine() {
    assert_eq!(goro::go(async { 1 }).await.unwrap(), 1);
}

#[goro::test(max_procs = 1)]
async fn max_procs_one() {
    assert_eq!(goro::runtime::max_procs(), 1);
    assert_eq!(goro::go(async { 1 }).await.unwrap(), 1);
}

#[goro::test(max_procs = 3)]
async fn max_procs_three() {
    assert_eq!(goro::runtime::max_procs(), 3);
    let handles: Vec<_> = (0..10u32).map(|i| goro::go(async move { i * 2 })).collect();
    let mut sum = 0;
    for h in handles {
        sum += h.await.unwrap();
    }
    assert_eq!(sum, 90);
}

const PROCS: usize = 2;

/// `max_procs` takes any `usize` expression, not only a literal.
#[goro::test(max_procs = PROCS)]
async fn max_procs_from_a_const() {
    assert_eq!(goro::runtime::max_procs(), PROCS);
}

/// A `Send` main is a G of its own, as Go's main goroutine: it runs on the runtime's threads
/// (whichever P is free), and the thread that called it only waits.
#[goro::test]
async fn a_send_main_runs_as_a_g() {
    let name = std::thread::current().name().map(str::to_owned);
    assert!(name.as_deref().is_some_and(|n| n.starts_with("goro-m")), "main ran on {name:?}");
    assert_eq!(goro::runtime::num_goroutine(), 1);
}

/// A main that holds something `!Send` across an await still compiles, and runs on the calling
/// thread (`Runtime::block_on`'s way).
#[goro::test(max_procs = 2)]
async fn a_non_send_main_runs_on_the_calling_thread() {
    let local = std::rc::Rc::new(5);
    goro::runtime::yield_now().await;
    assert_eq!(*local, 5);
    let name = std::thread::current().name().map(str::to_owned);
    assert!(!name.as_deref().is_some_and(|n| n.starts_with("goro-m")), "main ran on {name:?}");
    assert_eq!(goro::runtime::num_goroutine(), 1);
}

/// A test may return a `Result`, and `?` works in the body.
#[goro::test]
async fn returns_a_result() -> Result<(), std::num::ParseIntError> {
    let n: u32 = goro::go(async { "41".parse::<u32>() }).await.unwrap()?;
    assert_eq!(n + 1, 42);
    Ok(())
}

/// The main G's panic reaches the test harness, and `#[should_panic]` stays on the test.
#[goro::test]
#[should_panic(expected = "boom")]
async fn should_panic_is_kept() {
    goro::runtime::yield_now().await;
    panic!("boom");
}

#[goro::test]
#[ignore = "checks that #[ignore] stays on the generated test"]
async fn ignore_is_kept() {
    panic!("an ignored test ran");
}

mod nested {
    /// Visibility is kept.
    #[goro::test(max_procs = 1)]
    pub(crate) async fn in_a_module() {
        assert_eq!(goro::runtime::max_procs(), 1);
    }
}

macro_rules! goro_test {
    ($name:ident, $procs:expr, $body:block) => {
        #[goro::test(max_procs = $procs)]
        async fn $name() $body
    };
}

goro_test!(made_by_macro_rules, 2, {
    assert_eq!(goro::runtime::max_procs(), 2);
});

/// `#[goro::main]` does not insist on the name `main`, so its expansion can be called from here.
mod main_expansion {
    #[goro::main(max_procs = 2)]
    pub async fn with_builder() -> u32 {
        assert_eq!(goro::runtime::max_procs(), 2);
        goro::go(async { 40 }).await.unwrap() + 2
    }

    #[goro::main]
    pub async fn with_run() -> Result<u32, std::num::ParseIntError> {
        "5".parse()
    }
}

#[test]
fn main_expands_to_a_plain_fn() {
    assert_eq!(main_expansion::with_builder(), 42);
    assert_eq!(main_expansion::with_run(), Ok(5));
}

/// Go users' goleak: a test whose Gs are still parked when its body returns fails, naming them.
#[goro::test]
#[should_panic(expected = "1 goroutine is still alive when the test returned")]
async fn a_test_that_leaks_a_g_fails() {
    let (tx, rx) = goro::chan::<u32>(0);
    goro::go(async move { rx.recv().await });
    // The sender outlives the test: the G waits forever (a dropped sender would wake it).
    Box::leak(Box::new(tx));
}

/// `allow_leaks` opts out.
#[goro::test(allow_leaks)]
async fn allow_leaks_lets_a_parked_g_be() {
    let (tx, rx) = goro::chan::<u32>(0);
    goro::go(async move { rx.recv().await });
    Box::leak(Box::new(tx));
}

/// A G told to stop just before the body returns is finishing, not leaked.
#[goro::test]
async fn a_g_that_is_finishing_is_no_leak() {
    let (tx, rx) = goro::chan::<u32>(0);
    goro::go(async move {
        while rx.recv().await.is_some() {}
        goro::time::sleep(std::time::Duration::from_millis(20)).await;
    });
    tx.send(1).await.unwrap();
    drop(tx);
}

/// What goro catches that Go cannot: a G blocked on a channel whose other side is gone is
/// woken (it gets `None`), so it finishes instead of leaking.
#[goro::test]
async fn a_g_on_a_channel_whose_sender_is_dropped_is_no_leak() {
    let (tx, rx) = goro::chan::<u32>(0);
    goro::go(async move { assert_eq!(rx.recv().await, None) });
    goro::runtime::yield_now().await;
    drop(tx);
}

/// A leak fails the test at the test: the panic's location is the test's, not goro's
/// `entry.rs` (where a user would look for a bug in goro).
#[goro::test]
async fn case_a_leak_points_at_the_test() {
    if is_child("case_a_leak_points_at_the_test") {
        let (tx, rx) = goro::chan::<u32>(0);
        goro::go(async move { rx.recv().await });
        Box::leak(Box::new(tx));
    }
}

#[test]
fn a_leak_failure_points_at_the_test() {
    let (status, out) = run_child_status("case_a_leak_points_at_the_test", &[]);
    assert!(!status.success(), "the leaking test passed:\n{}", out.stderr);
    assert!(out.stderr.contains("still alive when the test returned"), "{}", out.stderr);
    assert!(
        out.stderr.contains("panicked at tests/macros.rs:"),
        "the failure does not point at the test:\n{}",
        out.stderr
    );
}

/// The failing test of `a_failing_test_shows_its_panic`, run as a child (an ignored test, so
/// that it fails nowhere else).
#[goro::test]
#[ignore = "run by a_failing_test_shows_its_panic"]
async fn child_fails_with_a_message() {
    assert_eq!(1 + 1, 3, "the message of the failed assertion");
}

/// A `#[goro::test]` whose body panics fails with the panic's message and location, where the
/// test harness shows it (the main G's panic is resumed on the test's thread, which calls no
/// panic hook: it is printed there first).
#[test]
fn a_failing_test_shows_its_panic() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["child_fails_with_a_message", "--exact", "--ignored", "--test-threads=1"])
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("the message of the failed assertion"), "{stdout}");
    assert!(stdout.contains("tests/macros.rs:"), "{stdout}");
}
