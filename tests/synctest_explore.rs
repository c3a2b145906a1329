//! `goro::synctest::explore` on the three classic Go bugs of the loom models
//! (tests/model/tests/models: waitgroup.rs, lock_order.rs, sync_map.rs), scaled from 2 Gs to
//! 10, 100 and 1000: loom cannot explore those sizes, a randomized-priority scheduler can look
//! at them. For each bug and size, `explore` must find the bug, and the seed it reports must
//! fail again under `test_seed` (a replay); each fixed program must pass `explore`.
//!
//! examples/explore.rs runs the same programs and says how many runs each took.

use goro::synctest;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

#[path = "../examples/explore/programs.rs"]
mod programs;
use programs::{hits, transfers, workers, LOST_UPDATE, WAITGROUP_BUG};
const DEADLOCK: &str = "deadlock: all goroutines in bubble are blocked";

/// The sizes every bug is scaled to.
const SIZES: [usize; 3] = [10, 100, 1000];

// ---- the checks --------------------------------------------------------------------------

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    match p.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => match p.downcast::<&str>() {
            Ok(s) => (*s).to_owned(),
            Err(_) => "(a panic without a message)".to_owned(),
        },
    }
}

/// `explore(runs, program)` must fail with `expect` in its message; the seed it reports must
/// fail again, with the same text, under `test_seed`. Returns the run that found it.
fn found_and_replayed<F, Fut>(runs: usize, program: F, expect: &str) -> usize
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let Err(p) = catch_unwind(AssertUnwindSafe(|| synctest::explore(runs, &program))) else {
        panic!("explore({runs}) passed a program with a bug (expected {expect:?})");
    };
    let msg = message(p);
    assert!(msg.contains(expect), "explore failed, but not with {expect:?}:\n{msg}");
    let seed: u64 = msg
        .split("GORO_SEED=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no GORO_SEED=<n> in the failure:\n{msg}"));
    let run: usize = msg
        .split("run ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no `run <i> of <runs>` in the failure:\n{msg}"));
    let Err(p) = catch_unwind(AssertUnwindSafe(|| synctest::test_seed(seed, program()))) else {
        panic!("GORO_SEED={seed} (run {run} of explore) did not replay the failure {expect:?}");
    };
    let replay = message(p);
    assert!(replay.contains(expect), "GORO_SEED={seed} replayed another failure:\n{replay}");
    run
}

#[test]
fn waitgroup_add_inside_the_goroutine_is_found_and_replayed() {
    for n in SIZES {
        found_and_replayed(20, || workers(n, true), WAITGROUP_BUG);
    }
}

#[test]
fn waitgroup_add_before_go_passes() {
    for n in SIZES {
        synctest::explore(50, || workers(n, false));
    }
}

#[test]
fn lock_order_deadlock_is_found_and_replayed_10() {
    found_and_replayed(500, || transfers(10, false), DEADLOCK);
}

#[test]
fn lock_order_deadlock_is_found_and_replayed_100() {
    found_and_replayed(500, || transfers(100, false), DEADLOCK);
}

#[test]
fn lock_order_deadlock_is_found_and_replayed_1000() {
    found_and_replayed(500, || transfers(1000, false), DEADLOCK);
}

#[test]
fn lock_order_one_order_passes() {
    for n in SIZES {
        synctest::explore(50, || transfers(n, true));
    }
}

#[test]
fn sync_map_lost_update_is_found_and_replayed() {
    for n in SIZES {
        found_and_replayed(20, || hits(n, false), LOST_UPDATE);
    }
}

#[test]
fn sync_map_compare_and_swap_passes() {
    for n in SIZES {
        synctest::explore(50, || hits(n, true));
    }
}
