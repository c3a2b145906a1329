//! `goro::syscall`: a blocking call that does not hold up the Gs queued behind it (Go's
//! `entersyscall`/`exitsyscall`).
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

use crate::context;
use crate::loom::Ordering::*;
use crate::m::MCtx;
use crate::p::{self, P_RUNNING, P_SYSCALL};
use crate::WaitReason;

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
    let Some(pid) = context::with(|ctx| ctx.and_then(MCtx::entersyscall)) else {
        return f();
    };
    /// Takes a P back however `f` ends.
    struct Exit(usize);
    impl Drop for Exit {
        fn drop(&mut self) {
            context::with(|ctx| {
                if let Some(ctx) = ctx {
                    ctx.exitsyscall(self.0);
                }
            });
        }
    }
    let _exit = Exit(pid);
    f()
}

impl MCtx {
    /// Go's `entersyscall`: lets go of the P (loosely: it stays `P_SYSCALL` for our return).
    /// Returns the P, or `None` if this M holds none.
    pub(crate) fn entersyscall(&self) -> Option<usize> {
        let pid = self.p.get()?;
        // State kept for the length of a poll must not be held through a blocking call.
        crate::coop::run_poll_end();
        let pp = &self.shared.ps[pid];
        p::bump(&pp.stats.syscalltick, 1);
        // What the dump shows of the G meanwhile (`exitsyscall` clears it).
        self.with_wait_reason(|r| r.store(WaitReason::Syscall as u8, Relaxed));
        self.releasep();
        // After `releasep`: once sysmon can see `P_SYSCALL`, this M no longer touches the P.
        pp.status.store(P_SYSCALL, Release);
        Some(pid)
    }

    /// Go's `exitsyscall`: takes P `pid` back if sysmon left it, else another idle P, else
    /// waits for one (or for shutdown, when it goes on without a P).
    pub(crate) fn exitsyscall(&self, pid: usize) {
        self.with_wait_reason(|r| r.store(0, Relaxed));
        let pp = &self.shared.ps[pid];
        if pp.status.compare_exchange(P_SYSCALL, P_RUNNING, AcqRel, Relaxed).is_ok() {
            self.acquirep(pid);
            return;
        }
        self.exitsyscall_slow();
    }

    /// Gives P `pid`, which this M holds between two Gs, to an M back from a syscall that
    /// waits for a P (`exitsyscall_slow`); `false` if none waits. `findrunnable` calls it every
    /// 61st tick while one waits, so Gs that keep every P busy cannot starve the returning G
    /// (Go queues that G on the global run queue, which a busy P polls every 61 ticks; here its
    /// poll is still on the waiting M's stack, so the P goes to the M instead). This M is left
    /// without a P and looks for one (or sleeps) like any idle M.
    pub(crate) fn handoff_to_syscall_waiter(&self, pid: usize) -> bool {
        let sh = &*self.shared;
        let mut idle = sh.idle.lock();
        let Some(m) = idle.syscall_waiters.pop() else {
            return false;
        };
        sh.syscall_waiting.fetch_sub(1, Relaxed);
        let released = self.releasep();
        debug_assert_eq!(released, Some(pid), "goro: handing off a P this M does not hold");
        sh.ps[pid].status.store(P_RUNNING, Relaxed);
        sh.handoffs.fetch_add(1, Relaxed);
        // Under the lock, as `pidleput_locked` hands a P to a waiter.
        m.hand(pid, false);
        m.parker.unpark();
        true
    }

    /// Starts a fresh time slice on the P just taken after a syscall (Go's `execute` bumps
    /// `schedtick` when a G gets a P back): the G waited its turn, as a preempted G in Go waits
    /// on the global queue, and sysmon measures its next slice from here. Without this, a G
    /// whose P was retaken for overrunning its slice (a loop on blocking calls) found the slice
    /// still over on the P it got back, lost that P at its next syscall too, and crawled: the
    /// 2-P hand-off soak's blocking consumer fell from 39 000 values a second to 140.
    fn start_slice(&self) {
        if let Some(pid) = self.p.get() {
            let p = &self.shared.ps[pid];
            // SAFETY: this M owns `p`; no G runs inside the closure.
            let tick = unsafe {
                p.with_local(|l| {
                    l.schedtick = l.schedtick.wrapping_add(1);
                    l.schedtick
                })
            };
            p.stats.schedtick.store(tick, Relaxed);
        }
    }

    #[cold]
    fn exitsyscall_slow(&self) {
        let sh = &*self.shared;
        let mut idle = sh.idle.lock();
        if let Some(p) = sh.pidleget_locked(&mut idle) {
            drop(idle);
            self.acquirep(p);
            self.start_slice();
            return;
        }
        if sh.shutdown.load(Acquire) {
            return;
        }
        // `pidleput` hands the next freed P to us (under the same lock).
        idle.syscall_waiters.push(self.m.clone());
        sh.syscall_waiting.fetch_add(1, Relaxed);
        drop(idle);
        loop {
            self.m.parker.park();
            let mut idle = sh.idle.lock();
            if let Some((p, _)) = self.m.take_hand() {
                drop(idle);
                self.acquirep(p);
                self.start_slice();
                return;
            }
            if sh.shutdown.load(Acquire) {
                let me = std::sync::Arc::as_ptr(&self.m);
                let before = idle.syscall_waiters.len();
                idle.syscall_waiters.retain(|m| !std::ptr::eq(std::sync::Arc::as_ptr(m), me));
                sh.syscall_waiting.fetch_sub(before - idle.syscall_waiters.len(), Relaxed);
                return;
            }
        }
    }
}
