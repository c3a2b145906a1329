//! Deadlock detection (Go's `checkdead`): when every G of a runtime is parked and nothing can
//! wake any of them, the program is stuck for good. Go then prints `fatal error: all
//! goroutines are asleep - deadlock!` and a dump, and exits 2; goro does the same through the
//! runtime's main (see `Runtime::block_on` and `entry`).
//!
//! # The rule
//!
//! Go counts its Ms: no M running Go code and none in a syscall means nothing can run again.
//! A Rust program has threads that are not the runtime's, and any of them may hold a channel
//! handle or a waker and wake a G at any moment, unseen. So goro reports a deadlock only when,
//! for a whole [`GRACE`] period (sysmon looks every round):
//!
//! - every runtime of the process is *quiescent*: every P idle, no M spinning, every run queue
//!   empty, no G in a syscall or stuck in a blocked poll, no M back from a syscall waiting, no
//!   live timer, no G waiting on I/O, every main future (`block_on`) parked; and nothing ran
//!   meanwhile (the Ps' poll counts did not move);
//! - and no thread of the process can wake a G unseen: every thread is one of goro's (an M,
//!   sysmon) or is blocked in one of goro's blocking calls (a `*_blocking` method,
//!   `JoinHandle::join`, the wait of `#[goro::main]` for its main G), which only a G could end
//!   (Linux's `/proc/self/task` lists them). The one exception is the main thread of a test
//!   binary, the test harness's own, which `#[goro::test]` tells the runtime to ignore.
//!
//! A plain thread that holds a handle (a reader of stdin that will send its first line in a
//! minute), a tokio runtime's threads, a watchdog thread: each keeps the report from being
//! made, however long the Gs wait. That is the price of never crying wolf; the one case goro
//! cannot see is a thread it ignores, the test harness's main thread, waking a G (it does not,
//! unless a test hands it a handle). Where `/proc` cannot be read (not Linux), no deadlock is
//! reported. `Builder::deadlock_detection(false)` turns the check off.

use crate::loom::Ordering::*;
use crate::sched::Shared;
use std::sync::{Mutex as StdMutex, Weak};
use std::time::{Duration, Instant};

/// How long every runtime must stay quiescent before a deadlock is reported.
pub(crate) const GRACE: Duration = Duration::from_secs(1);

/// The message a deadlock report starts with (Go's, after Go's `fatal error: `).
pub const DEADLOCK: &str = "all goroutines are asleep - deadlock!";

pub(crate) use crate::config::Census;

/// Every runtime of the process (weakly), for the cross-runtime quiescence check: a G of one
/// runtime may be woken by a G of another.
static RUNTIMES: StdMutex<Vec<Weak<Shared>>> = StdMutex::new(Vec::new());

pub(crate) fn register(sh: &std::sync::Arc<Shared>) {
    let mut rts = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner());
    rts.retain(|w| w.strong_count() > 0);
    rts.push(std::sync::Arc::downgrade(sh));
}

/// The dump of every live runtime of the process (`SIGQUIT`), one after the other.
pub(crate) fn dump_all() -> String {
    let rts: Vec<_> = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
    let n = rts.len();
    let mut out = String::new();
    for (i, rt) in rts.iter().enumerate() {
        if n > 1 {
            out.push_str(&format!("goro runtime {} of {n}:\n\n", i + 1));
        }
        out.push_str(&crate::traceback::dump_of(rt));
        out.push('\n');
    }
    out
}

/// Whether some thread of the process that is not goro's may wake a G; `true` where the
/// threads cannot be listed.
fn foreign_threads(census: Census) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return true };
    let main = std::process::id();
    let own = crate::threads::own_threads();
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { return true };
        if own.contains(&tid) {
            continue;
        }
        if tid == main && census == Census::ExceptMainThread {
            continue;
        }
        return true;
    }
    false
}

/// Whether nothing of `sh` runs or can fire by itself (see the module docs).
pub(crate) fn quiescent(sh: &Shared) -> bool {
    sh.idle.npidle() == sh.allp.procs()
        && sh.idle.nmspinning() == 0
        && sh.idle.syscall_waiting() == 0
        && !sh.syscalls_without_p().any()
        && !sh.any_work()
        && sh.allp.used().iter().all(|p| matches!(p.status.load(Acquire), crate::p::P_IDLE | crate::p::P_SPARE))
        && !sh.netpoll.any_waiters()
        && sh.mains.with(|ms| ms.iter().all(|m| m.parked()))
        && !crate::timer::any_live_timer(sh)
}

/// A count that moves whenever anything of `sh` runs: polls of Gs and main futures, spawns and
/// wakes from outside (which make a G run, which moves the Ps' poll counts).
pub(crate) fn activity(sh: &Shared) -> u64 {
    let polls: u64 = sh.allp.used().iter().map(|p| p.stats.polls.load(Relaxed)).sum();
    polls.wrapping_add(sh.mains.polls()).wrapping_add(sh.stats.spawned_off_p.load(Relaxed))
}

/// sysmon's view of one runtime's possible deadlock.
#[derive(Default)]
pub(crate) struct Watch {
    /// Since when every runtime has looked quiescent, and their activity then.
    since: Option<(Instant, Vec<u64>)>,
}

impl Watch {
    /// One sysmon round: reports a deadlock of `sh` if every runtime has stayed quiescent for
    /// [`GRACE`] and no foreign thread exists. Returns how long sysmon may sleep before it must
    /// look again (`None`: no deadlock in sight, sleep as it likes).
    pub(crate) fn round(&mut self, sh: &Shared, now: Instant) -> Option<Duration> {
        if !sh.config.deadlock_detection || sh.fatal.has_ended() {
            self.since = None;
            return None;
        }
        // Our own runtime first: the common case (work going on) costs no lock.
        if !quiescent(sh) {
            self.since = None;
            return None;
        }
        let rts: Vec<_> = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(Weak::upgrade).collect();
        if !rts.iter().all(|rt| quiescent(rt)) {
            self.since = None;
            return None;
        }
        let act: Vec<u64> = rts.iter().map(|rt| activity(rt)).collect();
        match &self.since {
            Some((t0, a0)) if *a0 == act => {
                let waited = now - *t0;
                if waited < GRACE {
                    return Some(GRACE - waited);
                }
            }
            _ => {
                self.since = Some((now, act));
                return Some(GRACE);
            }
        }
        self.since = None;
        if foreign_threads(sh.config.census) {
            return None;
        }
        report(sh);
        None
    }
}

/// Ends `sh`'s run with the report (see `fatal`); with no main there to receive it, it is
/// printed on stderr.
///
/// While a flight recorder runs, its window (the last seconds of the execution trace) is
/// written to a file first, named in the report's second paragraph.
fn report(sh: &Shared) {
    let recorded = match crate::trace::dump_for_report("deadlock") {
        Some(Ok(path)) => format!("the flight recorder's trace of the last seconds: {}\n\n", path.display()),
        Some(Err(e)) => format!("the flight recorder's trace could not be written: {e}\n\n"),
        None => String::new(),
    };
    let text = format!("{DEADLOCK}\n\n{recorded}{}", crate::traceback::dump_of(sh));
    let nobody = sh.mains.with(|ms| ms.is_empty()) && !sh.mains.waiting();
    if sh.end_run(crate::fatal::Ending::Deadlock(text.clone())) && nobody {
        crate::config::warn_once(&format!("goro: {text}"));
    }
}
