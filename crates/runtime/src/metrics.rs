//! Runtime counters (Go's `runtime/metrics`, plus the scheduler events Go only shows in traces).

use crate::loom::Ordering::Relaxed;
use crate::sched::Shared;

/// A snapshot of a runtime's state and counters; see [`metrics`](crate::metrics()).
///
/// Gauges (`goroutines` .. `local_runq`) describe the moment of the call; the counters
/// (`spawned` and below) only grow over the runtime's life.
///
/// ```
/// let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
/// rt.block_on(async { goro::go(async {}).await.unwrap() });
/// let m = rt.metrics();
/// assert_eq!(m.procs, 2);
/// assert!(m.spawned >= 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Live Gs, main Gs (threads in `block_on`) included (Go's `NumGoroutine`).
    pub goroutines: usize,
    /// Ps (Go's `GOMAXPROCS`).
    pub procs: usize,
    /// Ms: threads the runtime started that are alive, plus threads inside `block_on`.
    pub threads: usize,
    /// Ps owned by no M.
    pub idle_procs: usize,
    /// Ms looking for work to steal.
    pub spinning_threads: usize,
    /// Ms asleep in the idle-M list.
    pub idle_threads: usize,
    /// Gs in the global run queue.
    pub global_runq: usize,
    /// Gs in the Ps' local rings (not counting `runnext`).
    pub local_runq: usize,
    /// Gs spawned.
    pub spawned: u64,
    /// Spawns whose memory came from a P's free list of dead Gs (Go's `gfget`).
    pub gfree_reused: u64,
    /// Successful steals (each moves half of a victim's queue).
    pub steals: u64,
    /// Gs moved by steals.
    pub stolen_gs: u64,
    /// Ps handed to another M because theirs left or blocked (`handoffp` that started an M).
    pub handoffs: u64,
    /// Threads woken (or started) to run Gs: Ms taken off the idle list, or new ones, each
    /// handed an idle P (Go's `startm`). Each costs a futex wake-up and a context switch.
    pub thread_wakeups: u64,
    /// The part of `thread_wakeups` that woke a *spinning* M (Go's `wakep`): one sent to look
    /// for work rather than handed some, which, when it finds a G, wakes the next spinning M if
    /// a P still idles.
    pub spinning_wakeups: u64,
    /// Gs run from a P's `runnext` slot.
    pub runnext_runs: u64,
    /// Times an M took work from the global run queue.
    pub global_runq_polls: u64,
    /// Preemption requests made by sysmon.
    pub preemptions: u64,
    /// Times a full local ring spilled half of itself to the global queue (`runqputslow`).
    pub local_runq_overflows: u64,
    /// Entries in the Ps' timer heaps (pending timers, plus stopped ones not yet swept out).
    pub timers: usize,
    /// Gs waiting for I/O readiness in the netpoller.
    pub io_waiters: usize,
    /// Polls that blocked their thread (plain blocking code in a G, outside `goro::syscall`)
    /// long enough that sysmon handed their P's work to another M.
    pub blocked_polls: u64,
    /// Times sysmon took the queued Gs or the due timers off a P whose G had computed for a
    /// time slice without returning, while every other P was busy, so that they run elsewhere
    /// (Go would have preempted the G).
    pub stuck_poll_moves: u64,
}

impl Metrics {
    pub(crate) fn collect(sh: &Shared) -> Metrics {
        let mut m = Metrics {
            goroutines: sh.num_goroutine(),
            procs: sh.allp.procs(),
            threads: sh.threads.alive() + sh.mains.count(),
            idle_procs: sh.idle.npidle(),
            spinning_threads: sh.idle.nmspinning(),
            idle_threads: sh.idle.nmidle(),
            global_runq: sh.global.len(),
            handoffs: sh.stats.handoffs.load(Relaxed),
            thread_wakeups: sh.stats.thread_wakeups.load(Relaxed),
            spinning_wakeups: sh.stats.spinning_wakeups.load(Relaxed),
            spawned: sh.stats.spawned_off_p.load(Relaxed),
            io_waiters: sh.netpoll.waiters(),
            blocked_polls: sh.stats.blocked_polls.load(Relaxed),
            stuck_poll_moves: sh.stats.stuck_poll_moves.load(Relaxed),
            preemptions: sh.stats.preemptions.load(Relaxed),
            ..Metrics::default()
        };
        for p in sh.allp.used() {
            let s = &p.stats;
            m.local_runq += p.runq.len();
            m.timers += p.timers.len();
            m.spawned += s.spawned.load(Relaxed);
            m.gfree_reused += s.gfree_reused.load(Relaxed);
            m.steals += s.steals.load(Relaxed);
            m.stolen_gs += s.stolen_gs.load(Relaxed);
            m.runnext_runs += s.runnext_runs.load(Relaxed);
            m.global_runq_polls += s.global_runq_polls.load(Relaxed);
            m.local_runq_overflows += s.local_runq_overflows.load(Relaxed);
        }
        m
    }
}

/// Go's `schedtrace` line: `SCHED 1000ms: gomaxprocs=2 idleprocs=0 threads=4
/// spinningthreads=0 idlethreads=1 runqueue=0 [3 1]`.
pub(crate) fn schedtrace_line(sh: &Shared) -> String {
    let m = Metrics::collect(sh);
    // One length per P in use (a spare slot, or a P given up by a stuck M, is not one).
    let locals: Vec<String> = sh
        .allp
        .used()
        .iter()
        .filter(|p| !matches!(p.status.load(Relaxed), crate::p::P_SPARE | crate::p::P_DETACHED))
        .map(|p| p.runq.len().to_string())
        .collect();
    format!(
        "SCHED {}ms: gomaxprocs={} idleprocs={} threads={} spinningthreads={} idlethreads={} runqueue={} [{}]",
        sh.start().elapsed().as_millis(),
        m.procs,
        m.idle_procs,
        m.threads,
        m.spinning_threads,
        m.idle_threads,
        m.global_runq,
        locals.join(" ")
    )
}
