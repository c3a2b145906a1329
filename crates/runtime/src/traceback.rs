//! What every G is doing: [`goroutines`](crate::goroutines()) (Go's goroutine profile) and [`dump`](crate::dump()) (Go's
//! `runtime.Stack(buf, true)`, what `SIGQUIT` and the deadlock report print).
//!
//! A Go traceback shows each goroutine's stack; a goro G is a future, whose "stack" is its
//! state machine, so the dump shows instead what the G waits on (Go's wait reason, set by the
//! goro primitive that parked it) and where it was spawned, by whom. Everything is read from
//! `allgs` under its shard locks and from the G headers' atomics: the dump stops nothing, and
//! costs the running Gs nothing but the reason and park time they write when they park.
//!
//! The main future of `Runtime::block_on` is no G, but it is Go's goroutine 1 all the same:
//! it appears as goroutine 0, "the main future", with its own wait reason.

use crate::g::raw::{WaitReason, MAIN_FUTURE, NO_PARENT};
use crate::g::state::Snapshot;
use crate::loom::Ordering::Relaxed;
use crate::sched::Shared;
use std::fmt::{self, Write as _};
use std::panic::Location;
use std::time::Duration;

/// What a G is doing (Go's `_Grunning`, `_Grunnable`, `_Gwaiting`, `_Gsyscall`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GoroutineStatus {
    /// An M is polling it.
    Running,
    /// In a run queue, or about to be: it will run when a P gets to it.
    Runnable,
    /// Parked until something wakes it; [`Goroutine::wait_reason`] says what.
    Waiting,
    /// Inside [`syscall`](crate::syscall()) (or a `*_blocking` call, which is one).
    Syscall,
}

/// One G as [`goroutines`](crate::goroutines) sees it (a row of Go's goroutine profile).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Goroutine {
    /// Go's goroutine id; 0 for the main future of [`Runtime::block_on`](crate::Runtime::block_on),
    /// which is no G but is the program's main all the same.
    pub id: u64,
    /// What it is doing.
    pub status: GoroutineStatus,
    /// Why it waits, while [`Waiting`](GoroutineStatus::Waiting) (Go's words: `chan receive`,
    /// `sync.Mutex.Lock`, ...; [`Future`](WaitReason::Future) for a future that is not
    /// goro's), and [`Syscall`](WaitReason::Syscall) in a syscall.
    pub wait_reason: Option<WaitReason>,
    /// How long it has waited, while waiting (to about 10 ms: the runtime's coarse clock).
    pub waited: Option<Duration>,
    /// Where it was spawned (`go`, `Runtime::spawn`), or where `block_on` was called.
    pub location: &'static Location<'static>,
    /// The id of the G that spawned it (0: the main future of `block_on`); `None` if it was
    /// spawned from outside any G (a plain thread), and for the main future itself.
    pub parent: Option<u64>,
    /// Whether it is the program's main: the main G of `#[goro::main]` (or `#[goro::test]`), or
    /// the main future of `block_on`.
    pub main: bool,
}

impl Goroutine {
    /// The first line of its block in a dump, Go's `goroutineheader`:
    /// `goroutine 7 [chan receive, 2 minutes]:`.
    fn header(&self, out: &mut String) {
        let state = match (self.status, self.wait_reason) {
            (GoroutineStatus::Running, _) => "running",
            (GoroutineStatus::Runnable, _) => "runnable",
            (GoroutineStatus::Syscall, _) => "syscall",
            (GoroutineStatus::Waiting, r) => r.unwrap_or(WaitReason::Future).as_str(),
        };
        let _ = write!(out, "goroutine {} [{state}", self.id);
        // As Go's `goroutineheader`: the time only from a minute on, and always "minutes"
        // (`1 minutes` too: it is what people grep dumps for).
        if let Some(w) = self.waited.filter(|w| *w >= Duration::from_secs(60)) {
            let _ = write!(out, ", {} minutes", w.as_secs() / 60);
        }
        out.push_str("]:\n");
    }
}

impl fmt::Display for Goroutine {
    /// Its block in a dump: the header line, then where it came from.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.header(&mut s);
        match (self.id, self.parent) {
            (MAIN_FUTURE, _) => {
                let _ = writeln!(s, "main future of block_on, called at {}", self.location);
            }
            _ if self.main => {
                let _ = writeln!(s, "main goroutine, started at {}", self.location);
            }
            (_, Some(MAIN_FUTURE)) => {
                let _ = writeln!(s, "created by the main future at {}", self.location);
            }
            (_, Some(p)) => {
                let _ = writeln!(s, "created by goroutine {p} at {}", self.location);
            }
            (_, None) => {
                let _ = writeln!(s, "created outside any goroutine at {}", self.location);
            }
        }
        f.write_str(&s)
    }
}

/// Where a G (or a main future) is in its life, as its lifecycle word says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Polled,
    Queued,
    Parked,
}

impl Phase {
    /// A G's phase from its lifecycle word; `None` once it is complete.
    fn of(state: Snapshot) -> Option<Phase> {
        if state.is_complete() {
            None
        } else if state.is_running() {
            Some(Phase::Polled)
        } else if state.is_notified() {
            Some(Phase::Queued)
        } else {
            Some(Phase::Parked)
        }
    }
}

/// How long since `parked_at` on the coarse clock, brought up to now first (sysmon, which
/// moves it, sleeps while every P idles: a hung program's dump is read just then).
fn waited_since(sh: &Shared, parked_at: u32) -> Duration {
    Duration::from_millis(u64::from(sh.tick_coarse_ms().saturating_sub(parked_at)))
}

impl Goroutine {
    /// The row of a G that is running: how Go prints the goroutine that panicked; also the
    /// start of every row ([`with_state`](Goroutine::with_state) sets the rest).
    pub(crate) fn panicking(id: u64, location: &'static Location<'static>, parent: u64) -> Goroutine {
        Goroutine {
            id,
            status: GoroutineStatus::Running,
            wait_reason: None,
            waited: None,
            location,
            parent: (parent != NO_PARENT).then_some(parent),
            main: false,
        }
    }

    /// The row of a G (or main future) `g` (whose identity fields are set) in `phase`, whose
    /// wait-reason slot holds `reason` and which parked at `parked_at`: a polled G whose reason
    /// is `Syscall` is in a syscall; a parked one waits for `reason`.
    fn with_state(mut self, sh: &Shared, phase: Phase, reason: WaitReason, parked_at: u32) -> Goroutine {
        (self.status, self.wait_reason) = match phase {
            Phase::Polled if reason == WaitReason::Syscall => (GoroutineStatus::Syscall, Some(reason)),
            Phase::Polled => (GoroutineStatus::Running, None),
            Phase::Queued => (GoroutineStatus::Runnable, None),
            Phase::Parked => (GoroutineStatus::Waiting, Some(reason)),
        };
        self.waited = (phase == Phase::Parked).then(|| waited_since(sh, parked_at));
        self
    }
}

/// Every live G of `sh`, the main futures of `block_on` first, then by id.
pub(crate) fn goroutines_of(sh: &Shared) -> Vec<Goroutine> {
    let mut out: Vec<Goroutine> = sh
        .mains
        .snapshot()
        .iter()
        .map(|m| {
            let phase = if m.polling.load(Relaxed) {
                Phase::Polled
            } else if m.is_notified() {
                Phase::Queued
            } else {
                Phase::Parked
            };
            let reason = WaitReason::from_u8(m.wait_reason.load(Relaxed));
            let mut g = Goroutine::panicking(MAIN_FUTURE, m.location, NO_PARENT);
            g.main = true;
            g.with_state(sh, phase, reason, m.parked_at.load(Relaxed))
        })
        .collect();
    let mains = out.len();
    sh.allgs.for_each(|h| {
        if let Some(phase) = Phase::of(h.state.load()) {
            let mut g = Goroutine::panicking(h.goid, h.location, h.parent);
            g.main = h.goid == sh.mains.goid();
            out.push(g.with_state(sh, phase, h.wait_reason(), h.parked_at.load(Relaxed)));
        }
    });
    out[mains..].sort_unstable_by_key(|g| g.id);
    out
}

/// Every G as [`dump`](crate::dump()) prints them, one block each, separated by blank lines.
pub(crate) fn dump_of(sh: &Shared) -> String {
    let gs = goroutines_of(sh);
    let mut s = String::new();
    for (i, g) in gs.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ = write!(s, "{g}");
    }
    s
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn header(waited: Option<Duration>) -> String {
        let mut g = Goroutine::panicking(7, Location::caller(), 1);
        g.status = GoroutineStatus::Waiting;
        g.wait_reason = Some(WaitReason::ChanReceive);
        g.waited = waited;
        let mut s = String::new();
        g.header(&mut s);
        s
    }

    /// Go's `goroutineheader`: no time under a minute, then whole minutes, always "minutes".
    #[test]
    fn the_wait_shows_from_a_minute_on_in_gos_words() {
        assert_eq!(header(None), "goroutine 7 [chan receive]:\n");
        assert_eq!(header(Some(Duration::from_secs(59))), "goroutine 7 [chan receive]:\n");
        assert_eq!(header(Some(Duration::from_secs(66))), "goroutine 7 [chan receive, 1 minutes]:\n");
        assert_eq!(header(Some(Duration::from_secs(150))), "goroutine 7 [chan receive, 2 minutes]:\n");
    }
}
