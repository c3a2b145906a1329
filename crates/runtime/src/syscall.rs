//! `goro::syscall`: a blocking call that does not hold up the Gs queued behind it (Go's
//! `entersyscall`/`exitsyscall`).
//!
//! The M's side (`MCtx::entersyscall`, `MCtx::exitsyscall`) is in [`m`](crate::m).
//!
//! Entering, the M marks its P `P_SYSCALL` and stops using it (it no longer holds it: a G
//! spawned or woken inside the call goes through the global queue). If the call outlasts a
//! sysmon tick while the P has work (or nobody else is looking for work), sysmon retakes the P
//! (CAS `P_SYSCALL` → `P_IDLE`) and hands it to another M. Returning, the M takes its P back if
//! it is still there (CAS `P_SYSCALL` → `P_RUNNING`: the fast path, no lock), else any idle P,
//! else it waits until a P is freed for it: the G's poll resumes only with a P, so at most
//! `max_procs` Ms run Gs at any time, as in Go.
//!
//! Exactly one of the two CASes succeeds, so the P is never owned twice and never lost; the
//! loom model `loom_tests::sched::loom_sched_syscall_vs_retake` checks it.
//!
//! An M inside the call is never idle, whatever became of its P: Go's `checkdead` counts it as
//! running, and never reports a deadlock while a goroutine is in a syscall (the call may
//! return and wake everybody). goro sees such an M through its P while the P is `P_SYSCALL`,
//! and through [`SyscallsWithoutP`](crate::idle::SyscallsWithoutP) once the P is gone.
//!
//! Entering is a CAS too (`P_RUNNING` → `P_SYSCALL`): if the poll that makes the call blocked
//! its thread before it, sysmon may have detached the P (a spare took its place, see
//! `sysmon::detach`); the M then gives the P up as a spare at once and, returning, takes any
//! idle P.

use crate::m::{MCtx, SyscallP};

/// Runs `f`, a call that may block its thread (file I/O, a blocking library call, a lock held
/// by another thread), letting the runtime hand this G's P to another M meanwhile, so the Gs
/// queued behind it keep running (Go does this for every system call).
///
/// Cheap when `f` returns quickly (two atomic operations on this P); outside a goro runtime,
/// or nested, it simply calls `f`. A panic in `f` propagates after the P is taken back.
///
/// ```
/// use std::time::Duration;
/// goro::run(async {
///     let (tx, rx) = goro::chan::<u32>(0);
///     // A G blocked in a syscall does not stop the others, even on one P.
///     goro::go(async move { goro::syscall(|| std::thread::sleep(Duration::from_millis(20))) });
///     goro::go(async move { tx.send(7).await.unwrap() });
///     assert_eq!(rx.recv().await, Some(7));
/// });
/// ```
#[cfg_attr(loom, track_caller)]
pub fn syscall<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(loom)]
    if crate::model::active() {
        crate::model::no_syscall();
    }
    let Some(entered) = crate::m::current(|ctx| ctx.and_then(MCtx::entersyscall)) else {
        return f();
    };
    /// Takes a P back however `f` ends.
    struct Exit(SyscallP);
    impl Drop for Exit {
        fn drop(&mut self) {
            crate::m::current(|ctx| {
                if let Some(ctx) = ctx {
                    ctx.exitsyscall(self.0);
                }
            });
        }
    }
    let _exit = Exit(entered);
    f()
}
