//! Models of deadlock detection's "nothing can wake them" check ([`checkdead`]): its two looks
//! at a runtime (quiescent, and the same activity count) against a wake that races them, from
//! a plain thread, from a timer, and from a G on an M; and against an M inside `goro::syscall`
//! whose P sysmon retakes meanwhile. A G is parked with its waker stashed;
//! the racing thread wakes it (and nobody runs it afterwards, so a wake that happened stays
//! visible as a queued G).
//!
//! The threads count their steps on one `SeqCst` counter, so the models can say when the wake
//! happened relative to the looks:
//! - no false report: a wake that completed before the first look began is seen (the check does
//!   not conclude "deadlock");
//! - none missed: a wake that began only after the second look ended cannot have been seen, and
//!   the check concludes "deadlock" (the runtime was quiescent all along).
//!
//! The runtime may start no M (`max_threads` 0: `wakep` hands the P straight back), so that the
//! model's threads are the only actors, and its one P starts idle, as in a quiet runtime.
//!
//! [`checkdead`]: crate::checkdead

use super::g::{settle, spawn, take_stashed, Counts, STASH_FOREVER, STASH_THEN_READY};
use super::model;
use crate::checkdead::{activity, quiescent};
use crate::sched::Shared;
use crate::timer::{Action, TimerCore};
use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc as StdArc;
use std::task::Waker;

/// A runtime whose P idles and which may start no thread.
fn quiet_runtime() -> StdArc<Shared> {
    Shared::new(super::g::config(0), crate::m::mstart).expect("shared")
}

/// A G that ran once and parked, and its stashed waker.
fn parked_g(sh: &StdArc<Shared>) -> (crate::JoinHandle<super::g::Out>, Arc<Counts>, Waker) {
    let counts = Counts::new();
    let h = spawn(sh, STASH_THEN_READY, &counts);
    assert_eq!(super::g::run_queued(sh), 1);
    let w = take_stashed(&counts);
    (h, counts, w)
}

/// The check's two looks (with no grace period in between: loom has no clock), each bracketed
/// by steps: `(concluded, step before the first look, step after the second)`.
fn check(sh: &Shared, steps: &AtomicUsize) -> (bool, usize, usize) {
    let before = steps.fetch_add(1, SeqCst);
    let first = quiescent(sh).then(|| activity(sh));
    let second = quiescent(sh).then(|| activity(sh));
    let after = steps.fetch_add(1, SeqCst);
    (first.is_some() && first == second, before, after)
}

/// Asserts the two properties of the module docs for a wake whose steps were `woke_from` (the
/// step before it began) and `woke_by` (the step after it completed).
fn assert_sound(concluded: bool, before: usize, after: usize, woke_from: usize, woke_by: usize) {
    if woke_by < before {
        assert!(!concluded, "a deadlock was concluded though a G was woken before the check began");
    }
    if woke_from > after {
        assert!(concluded, "a quiescent runtime was not found deadlocked");
    }
}

/// A plain thread wakes the parked G (it goes to the global queue) while the check looks.
#[test]
fn loom_checkdead_vs_plain_thread_wake() {
    model(|| {
        let sh = quiet_runtime();
        let (h, _counts, w) = parked_g(&sh);
        let steps = Arc::new(AtomicUsize::new(0));
        let waker = {
            let steps = steps.clone();
            thread::spawn(move || {
                let from = steps.fetch_add(1, SeqCst);
                w.wake();
                let by = steps.fetch_add(1, SeqCst);
                (from, by)
            })
        };
        let (concluded, before, after) = check(&sh, &steps);
        let (from, by) = waker.join().unwrap();
        assert_sound(concluded, before, after, from, by);
        drop(h);
        settle(&sh);
    });
}

/// A timer armed by another thread, whose firing wakes the parked G (a sleeping G), races the
/// check; the timer is fired by a third thread (an M holding the P, as every M that runs
/// timers does).
#[test]
fn loom_checkdead_vs_timer() {
    model(|| {
        let sh = quiet_runtime();
        let (h, _counts, w) = parked_g(&sh);
        let steps = Arc::new(AtomicUsize::new(0));
        let timer = StdArc::new(TimerCore::new(Action::Wake(Some(w))));
        let armer = {
            let (steps, sh, timer) = (steps.clone(), sh.clone(), timer.clone());
            thread::spawn(move || {
                let from = steps.fetch_add(1, SeqCst);
                timer.arm(&*sh, 10, 0);
                let by = steps.fetch_add(1, SeqCst);
                (from, by)
            })
        };
        // Timers are run by Ms holding a P (`findrunnable`'s `check_timers`, `steal_work`): the
        // woken G lands in its queue, where the M would run it.
        let firer = {
            let (steps, sh) = (steps.clone(), sh.clone());
            thread::spawn(move || {
                let from = steps.fetch_add(1, SeqCst);
                if let Some(p) = sh.pidleget() {
                    let ctx = crate::m::MCtx::new(sh.clone(), StdArc::new(crate::idle::M::new()), None);
                    crate::m::enter(&ctx, || {
                        ctx.acquirep(p);
                        crate::timer::run_timers(&*sh, 0, 10);
                        let p = ctx.releasep().expect("held");
                        sh.pidleput(p);
                    })
                }
                from
            })
        };
        let (concluded, before, after) = check(&sh, &steps);
        let (from, by) = armer.join().unwrap();
        let fire_from = firer.join().unwrap();
        // From its arming on, the timer is live or has fired (and queued the G): either way
        // the check must not conclude once the arming completed before it began. It must
        // conclude if neither the arming nor the M began before it ended.
        assert_sound(concluded, before, after, from.min(fire_from), by);
        timer.stop(Some(&*sh));
        drop(h);
        settle(&sh);
    });
}

/// A G running on an M wakes the parked G: the M holds the runtime's P from before the wake
/// until the woken G has run (it is queued on the M's P), as a real M does; the G parks again.
/// A G runnable through both looks is seen; everything after the check is not.
#[test]
fn loom_checkdead_vs_g_wake() {
    model(|| {
        let sh = quiet_runtime();
        let counts = Counts::new();
        let h = spawn(&sh, STASH_FOREVER, &counts);
        assert_eq!(super::g::run_queued(&sh), 1);
        let w = take_stashed(&counts);
        let steps = Arc::new(AtomicUsize::new(0));
        let m = {
            let (steps, sh) = (steps.clone(), sh.clone());
            thread::spawn(move || {
                let from = steps.fetch_add(1, SeqCst);
                let p = sh.pidleget()?;
                let ctx = crate::m::MCtx::new(sh.clone(), StdArc::new(crate::idle::M::new()), None);
                crate::m::enter(&ctx, || {
                    ctx.acquirep(p);
                    w.wake();
                    let by = steps.fetch_add(1, SeqCst);
                    // The M runs what its P holds before it lets the P go.
                    let ran_from = steps.fetch_add(1, SeqCst);
                    while let Some(gp) = ctx.with_core(|c| c.runq.pop_runnext()).flatten() {
                        ctx.execute(gp, crate::m::Slice::Fresh);
                    }
                    let p = ctx.releasep().expect("held");
                    sh.pidleput(p);
                    Some((from, by, ran_from))
                })
            })
        };
        let (concluded, before, after) = check(&sh, &steps);
        if let Some((from, by, ran_from)) = m.join().unwrap() {
            if by < before && ran_from > after {
                assert!(!concluded, "a deadlock was concluded though a G was runnable all along");
            }
            if from > after {
                assert!(concluded, "a quiescent runtime was not found deadlocked");
            }
        }
        drop(h);
        settle(&sh);
    });
}

/// This thread, as an M of `sh` holding its idle P, enters `goro::syscall`. Inside the call it
/// counts a step, runs `during` (which starts the threads that race the call, and returns how
/// to join them: the check's result and steps), and counts a step again; then it leaves the
/// call and gives its P back. Then the model's two properties: no deadlock concluded while the
/// M was inside across the whole check, and every count of the M undone once it is out.
fn in_syscall_during<J>(sh: &StdArc<Shared>, steps: &Arc<AtomicUsize>, during: impl FnOnce() -> J)
where
    J: FnOnce() -> (bool, usize, usize),
{
    let p = sh.pidleget().expect("the runtime's P idles");
    let ctx = crate::m::MCtx::new(sh.clone(), StdArc::new(crate::idle::M::new()), None);
    let (p, inside_from, inside_to, join) = crate::m::enter(&ctx, || {
        ctx.acquirep(p);
        let entered = ctx.entersyscall().expect("the M holds a P");
        // The call itself: two steps, between which the racing threads start.
        let inside_from = steps.fetch_add(1, SeqCst);
        let join = during();
        let inside_to = steps.fetch_add(1, SeqCst);
        ctx.exitsyscall(entered);
        (ctx.releasep().expect("a P is held after the call"), inside_from, inside_to, join)
    });
    sh.pidleput(p);
    let (concluded, before, after) = join();
    if inside_from < before && inside_to > after {
        assert!(!concluded, "a deadlock was concluded while an M was inside a syscall");
    }
    assert!(!sh.syscalls_without_p().any(), "an M out of its syscall is still counted in one");
    settle(sh);
}

/// An M inside `goro::syscall` while sysmon, in one round, retakes its P and looks for a
/// deadlock (`sysmon::run`: `retake`, then `Watch::round`): if the M was inside before the
/// check began and leaves only after it ended, the check does not conclude. The retaken P is
/// idle; the M is counted in `SyscallsWithoutP` from before the retake's CAS until it holds a P
/// again. Every count is undone once the M is out.
#[test]
fn loom_checkdead_vs_syscall() {
    model(|| {
        let sh = quiet_runtime();
        let steps = Arc::new(AtomicUsize::new(0));
        in_syscall_during(&sh, &steps, || {
            let (steps, sh) = (steps.clone(), sh.clone());
            let sysmon = thread::spawn(move || {
                crate::sysmon::retake_syscall(&sh, 0);
                check(&sh, &steps)
            });
            move || sysmon.join().unwrap()
        });
    });
}

/// As [`loom_checkdead_vs_syscall`], with the check made from another thread than the retake:
/// another runtime's sysmon, which looks at every runtime of the process. At the default bound
/// the interleaving that put the retake between the check's look at the counters and its look
/// at the Ps is out of reach (it takes three preemptions), so this model asks for three.
#[test]
fn loom_checkdead_from_elsewhere_vs_syscall() {
    super::model_with(
        |b| b.preemption_bound = Some(b.preemption_bound.unwrap_or(0).max(3)),
        || {
            let sh = quiet_runtime();
            let steps = Arc::new(AtomicUsize::new(0));
            in_syscall_during(&sh, &steps, || {
                let sysmon = {
                    let sh = sh.clone();
                    thread::spawn(move || crate::sysmon::retake_syscall(&sh, 0))
                };
                let checker = {
                    let (steps, sh) = (steps.clone(), sh.clone());
                    thread::spawn(move || check(&sh, &steps))
                };
                move || {
                    let checked = checker.join().unwrap();
                    sysmon.join().unwrap();
                    checked
                }
            });
        },
    );
}
