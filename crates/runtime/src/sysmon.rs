//! sysmon: the runtime's monitor thread, which runs with no P (Go's `sysmon`).
//!
//! It wakes every 20 µs while it has something to do, backing off to 10 ms when nothing
//! happens, and sleeps until woken while every P is idle. Each round it:
//! - **retakes Ps from syscalls** (Go's `retake`): a P that has stayed in the same
//!   `goro::syscall` across a round, while it has queued work (or nobody else is looking for
//!   work, or for 10 ms), is taken (CAS `P_SYSCALL` → `P_IDLE`) and handed to another M;
//! - **asks long-running Gs to yield**: a P that has run the same time slice for 10 ms gets its
//!   `preempt` flag set, which goro's yield points honour (see `coop`);
//! - **hands off Ps stuck in a blocked poll** (`detach`): a P whose M has been inside one poll
//!   for two time slices, asleep in the kernel (the G called something that blocks the thread,
//!   outside `goro::syscall`), is replaced by a spare P slot, which gets its queued Gs and an
//!   M. The stuck M keeps the old P until its poll returns, then turns it into a spare, and
//!   reports the G on stderr once per spawn location. A poll that is *computing* (a loop with
//!   no yield point) is not handed off: another thread would only compete for the same CPUs;
//!   it keeps its P until it yields, as Go's goroutines did before asynchronous preemption.
//!   `Builder::handoff_blocked(false)` turns the hand-off off;
//! - **polls the network** if nobody has for 10 ms while Gs wait on I/O, and starts an M if a
//!   timer is overdue while a P is idle;
//! - prints the `GORO_DEBUG=schedtrace=N` line every N ms.
//!
//! Nothing here runs on the scheduler's hot paths: sysmon only reads per-P counters
//! (`schedtick`, `polls`, `syscalltick`) that the Ms bump as they go.

use crate::config;
use crate::g::raw::Who;
use crate::loom::{thread, Ordering::*};
use crate::m::MCtx;
use crate::metrics::schedtrace_line;
use crate::p::{self, P_DETACHED, P_IDLE, P_RUNNING, P_SYSCALL};
use crate::sched::Shared;
use std::collections::HashSet;
use std::io;
use std::panic::Location;
use std::sync::{Arc as StdArc, Mutex as StdMutex};
use std::task::Waker;
use std::time::{Duration, Instant};

/// Go's `forcePreemptNS`: a time slice.
const TIME_SLICE: Duration = Duration::from_millis(10);
/// A poll that has run this long without returning has its P handed off (two time slices:
/// the preemption request at one slice gives a G that reaches a yield point the chance to
/// yield first).
const BLOCKED_POLL: Duration = Duration::from_millis(20);
/// Shortest and longest sleep between rounds (Go's 20 µs and 10 ms).
const MIN_DELAY: Duration = Duration::from_micros(20);
const MAX_DELAY: Duration = Duration::from_millis(10);
/// Quiet rounds before the sleep starts doubling (Go's 50).
const QUIET_ROUNDS: u32 = 50;

pub(crate) struct Sysmon {
    thread: thread::JoinHandle<()>,
}

/// What sysmon saw of one P slot on earlier rounds.
#[derive(Clone, Copy)]
struct Seen {
    schedtick: u32,
    schedwhen: Instant,
    preempted: bool,
    polls: u64,
    pollwhen: Instant,
    syscalltick: u64,
    syscallwhen: Instant,
    /// When the stuck poll's thread was first looked at, and how long it had run or waited for
    /// a CPU by then (Linux's schedstat), to tell a blocked thread from a busy one.
    stat: Option<(Instant, u64)>,
}

impl Sysmon {
    pub(crate) fn start(shared: StdArc<Shared>, schedtrace: Option<Duration>) -> io::Result<Sysmon> {
        let name = format!("{}-sysmon", shared.config.thread_name);
        let thread = thread::Builder::new().name(name).spawn(move || run(&shared, schedtrace))?;
        Ok(Sysmon { thread })
    }

    pub(crate) fn stop(self, shared: &Shared) {
        shared.sysmon.stop.store(true, SeqCst);
        shared.sysmon.parker.unpark();
        let _ = self.thread.join();
    }
}

fn run(sh: &Shared, schedtrace: Option<Duration>) {
    let start = Instant::now();
    let mut seen = vec![
        Seen {
            schedtick: 0,
            schedwhen: start,
            preempted: false,
            polls: 0,
            pollwhen: start,
            syscalltick: 0,
            syscallwhen: start,
            stat: None,
        };
        sh.ps.len()
    ];
    let mut next_trace = schedtrace.map(|d| start + d);
    let mut delay = MIN_DELAY;
    let mut quiet = 0u32;
    while !sh.sysmon.stop.load(Acquire) {
        let mut sleep = delay;
        if let Some(t) = next_trace {
            sleep = sleep.min(t.saturating_duration_since(Instant::now()));
        }
        if next_trace.is_none() && delay == MAX_DELAY && all_idle(sh) {
            // Nothing has run for a while (the rounds backed off to the longest sleep, and every
            // P is idle): sleep until a P goes to work (`Shared::wake_sysmon`). Only then: a
            // runtime that idles between I/O events every few microseconds would otherwise pay
            // a wake-up of this thread per event. Re-check after raising the flag, or a P taken
            // in between would find nobody to wake.
            sh.sysmon.waiting.store(true, SeqCst);
            if all_idle(sh) {
                sh.sysmon.parker.park();
            }
            sh.sysmon.waiting.store(false, SeqCst);
            delay = MIN_DELAY;
            quiet = 0;
            continue;
        }
        sh.sysmon.parker.park_timeout(sleep);
        if sh.sysmon.stop.load(Acquire) {
            break;
        }
        let now = Instant::now();
        // As in Go, only handing a P off resets the sleep to its shortest: that is when Ms are
        // blocking, and more may follow. A preemption request or a network poll does not (a
        // ping-pong that inherits its time slice gets a request every 10 ms, and rounds at
        // 20 µs would then cost a thread wake-up per 20 µs).
        let acted = retake(sh, &mut seen, now);
        poll_network(sh);
        let next_timer = crate::timer::earliest(sh);
        if next_timer != 0 && next_timer <= sh.nanotime() && sh.npidle.load(SeqCst) > 0 {
            // A timer is overdue and a P idles: an M to run it.
            sh.wakep();
        }
        if let Some(t) = next_trace.as_mut() {
            if now >= *t {
                eprintln!("{}", schedtrace_line(sh));
                *t += schedtrace.expect("set with next_trace");
            }
        }
        if acted {
            quiet = 0;
            delay = MIN_DELAY;
        } else {
            quiet += 1;
            if quiet > QUIET_ROUNDS {
                delay = (delay * 2).min(MAX_DELAY);
            }
        }
    }
}

/// Every P idle and none in a syscall or stuck: nothing for sysmon to watch.
fn all_idle(sh: &Shared) -> bool {
    sh.npidle.load(SeqCst) == sh.procs
        && sh.used_ps().iter().all(|p| matches!(p.status.load(Acquire), P_IDLE | p::P_SPARE))
}

/// Go's sysmon netpoll: if Gs wait on I/O and nobody has polled for 10 ms (every M busy),
/// poll here and queue the ready Gs globally.
fn poll_network(sh: &Shared) -> bool {
    if !sh.netpoll.any_waiters() {
        return false;
    }
    let last = sh.netpoll.lastpoll.load(SeqCst);
    if last == 0 || last + TIME_SLICE.as_nanos() as u64 > sh.nanotime() {
        return false;
    }
    let mut ready = Vec::new();
    if sh.netpoll.poll(Some(Duration::ZERO), &mut ready) {
        sh.netpoll.lastpoll.store(sh.nanotime(), SeqCst);
    }
    let any = !ready.is_empty();
    // From a thread with no P: to the global queue, and an M is woken for them.
    ready.into_iter().for_each(Waker::wake);
    any
}

/// Go's `retake`; returns whether it handed a P off (from a syscall, or a blocked poll).
fn retake(sh: &Shared, seen: &mut [Seen], now: Instant) -> bool {
    let mut acted = false;
    for (i, pp) in sh.used_ps().iter().enumerate() {
        let s = &mut seen[i];
        match pp.status.load(Acquire) {
            P_SYSCALL => {
                let t = pp.stats.syscalltick.load(Relaxed);
                if t != s.syscalltick {
                    s.syscalltick = t;
                    s.syscallwhen = now;
                    continue;
                }
                // The same syscall for a whole round. Go keeps the P if it has no work, others
                // are looking for work anyway, and the call is young.
                let others = sh.nmspinning.load(SeqCst) + sh.npidle.load(SeqCst) > 0;
                if pp.runq.is_empty() && others && now - s.syscallwhen < TIME_SLICE {
                    continue;
                }
                acted |= retake_syscall(sh, i);
            }
            P_RUNNING => {
                let tick = pp.stats.schedtick.load(Relaxed);
                if tick != s.schedtick {
                    s.schedtick = tick;
                    s.schedwhen = now;
                    s.preempted = false;
                } else if !s.preempted && now - s.schedwhen >= TIME_SLICE {
                    pp.preempt.store(true, Relaxed);
                    sh.preemptions.fetch_add(1, Relaxed);
                    s.preempted = true;
                }
                let polls = pp.stats.polls.load(Relaxed);
                if polls != s.polls {
                    s.polls = polls;
                    s.pollwhen = now;
                    s.stat = None;
                } else if polls & 1 == 1 && sh.config.handoff_blocked {
                    // One poll has been running since `pollwhen`.
                    let stuck = now - s.pollwhen;
                    let tid = pp.tid.load(Relaxed);
                    if stuck >= TIME_SLICE / 2 && s.stat.is_none() {
                        s.stat = Some((now, schedstat_busy(tid).unwrap_or(0)));
                    }
                    if stuck >= BLOCKED_POLL
                        && s.preempted
                        && blocked(s, tid, now)
                        && detach(sh, i, polls, sh.nanos_at(s.pollwhen))
                    {
                        acted = true;
                    }
                }
            }
            _ => {}
        }
    }
    acted
}

/// Takes P `i` from the M in a syscall on it and hands it off (Go's `retake` of a
/// `_Psyscall` P); `false` if the M took it back first (its CAS and ours cannot both win).
pub(crate) fn retake_syscall(sh: &Shared, i: usize) -> bool {
    if sh.ps[i].status.compare_exchange(P_SYSCALL, P_IDLE, AcqRel, Relaxed).is_err() {
        return false;
    }
    sh.handoffs.fetch_add(1, Relaxed);
    sh.handoffp(i);
    true
}

/// Whether the thread of a poll that has not returned for [`BLOCKED_POLL`] is *blocked*
/// (asleep in the kernel: a blocking call), the case the hand-off is for. Linux's
/// `/proc/self/task/<tid>/schedstat` says how long the thread has run and waited for a CPU
/// since the first look (at half a time slice): if running and waiting together fill most of
/// that time, the thread is computing (a hog: handing its P off would only add a thread
/// competing for the CPUs; it yields at its next yield point) or merely descheduled (a loaded
/// machine), and it is left alone, with a new baseline for the next round. Where there is no
/// schedstat, every stuck poll counts as blocked.
fn blocked(s: &mut Seen, tid: u32, now: Instant) -> bool {
    let Some((t0, cpu0)) = s.stat else {
        s.stat = Some((now, schedstat_busy(tid).unwrap_or(0)));
        return false;
    };
    let Some(cpu1) = schedstat_busy(tid) else { return true };
    let wall = now.saturating_duration_since(t0).as_nanos() as u64;
    if cpu1.saturating_sub(cpu0) * 2 > wall {
        s.stat = Some((now, cpu1));
        return false;
    }
    true
}

/// Nanoseconds thread `tid` of this process has spent running plus waiting on a run queue
/// (schedstat's first two fields): the time it was not asleep.
fn schedstat_busy(tid: u32) -> Option<u64> {
    if tid == 0 {
        return None;
    }
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some(f.next()??.saturating_add(f.next()??))
}

/// The calling thread's kernel id on Linux (0 elsewhere), cached per thread: Ms publish it in
/// their P for [`blocked`].
pub(crate) fn current_tid() -> u32 {
    #[cfg(not(loom))]
    {
        thread_local! {
            static TID: std::cell::Cell<u32> = const { std::cell::Cell::new(u32::MAX) };
        }
        TID.with(|c| {
            if c.get() == u32::MAX {
                // "/proc/thread-self" links to "<pid>/task/<tid>".
                let tid = std::fs::read_link("/proc/thread-self")
                    .ok()
                    .and_then(|p| p.file_name()?.to_str()?.parse().ok())
                    .unwrap_or(0);
                c.set(tid);
            }
            c.get()
        })
    }
    #[cfg(loom)]
    0
}

/// Replaces P `i`, whose M has been stuck in the poll numbered `polls` since `since`, by a
/// spare slot that gets its queued Gs and an M. Returns whether it did.
fn detach(sh: &Shared, i: usize, polls: u64, since: u64) -> bool {
    let pp = &sh.ps[i];
    let mut idle = sh.idle.lock();
    // Under the scheduler lock the stuck M cannot be giving the P up meanwhile (it does that
    // under this lock); the CAS then the re-read of `polls` make sure it is still stuck in
    // that same poll (if it has moved on, undo).
    if pp.status.compare_exchange(P_RUNNING, P_DETACHED, AcqRel, Relaxed).is_err() {
        return false;
    }
    if pp.stats.polls.load(Acquire) != polls {
        pp.status.store(P_RUNNING, Release);
        return false;
    }
    let Some(spare) = idle.spare.pop() else {
        pp.status.store(P_RUNNING, Release);
        drop(idle);
        config::warn_once("goro: too many Gs are blocking their threads at once; no spare P is left to hand their work to (use goro::syscall around blocking calls)");
        return false;
    };
    sh.slots_used.fetch_max(spare + 1, AcqRel);
    pp.blocked_since.store(since, Relaxed);
    sh.ps[spare].status.store(P_IDLE, Relaxed);
    drop(idle);
    sh.handoffs.fetch_add(1, Relaxed);
    sh.blocked_polls.fetch_add(1, Relaxed);
    // Move the stuck P's queued Gs to the spare, which nobody else can reach yet (sysmon is its
    // owner until `handoffp`); the stuck M only pushes to its ring, and stealing is safe
    // against that.
    let sp = &sh.ps[spare];
    // SAFETY: sysmon owns the unpublished spare's ring, which is empty (a spare's ring is
    // emptied before it is put back on the spare list).
    if let Some((g, _)) = unsafe { pp.runq.steal_into(&sp.runq, true, || true) } {
        // SAFETY: as above; half a ring was moved, so there is room.
        let overflow = unsafe { sp.runq.push_back(g) };
        debug_assert!(overflow.is_none());
    }
    // The rest (at most half a ring) through a scratch ring to the global queue.
    let scratch = crate::runq::LocalQueue::new();
    // SAFETY: sysmon owns `scratch`, emptied after each steal.
    while let Some((g, _)) = unsafe { pp.runq.steal_into(&scratch, true, || true) } {
        sh.global.push(g);
        // SAFETY: as above.
        while let Some(g) = unsafe { scratch.pop() } {
            sh.global.push(g);
        }
    }
    sh.handoffp(spare);
    true
}

/// Called by the stuck M once its poll returned: one line on stderr per spawn location.
pub(crate) fn report_blocked(sh: &Shared, pid: usize, who: Option<Who>) {
    static SEEN: StdMutex<Option<HashSet<&'static Location<'static>>>> = StdMutex::new(None);
    let since = sh.ps[pid].blocked_since.load(Relaxed);
    let ms = sh.nanotime().saturating_sub(since) / 1_000_000;
    let msg = match who {
        Some(w) => {
            let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
            if !seen.get_or_insert_with(HashSet::new).insert(w.location) {
                return;
            }
            format!(
                "goro: G {} spawned at {} blocked its thread for {ms}ms in one poll (a blocking call, or a long \
                 computation with no await); its other Gs moved to another thread. Wrap blocking calls in goro::syscall",
                w.goid, w.location
            )
        }
        None => format!(
            "goro: the main G (block_on) blocked its thread for {ms}ms in one poll (a blocking call, or a long \
             computation with no await); its other Gs moved to another thread. Wrap blocking calls in goro::syscall"
        ),
    };
    config::warn_once(&msg);
}

/// The M side of sysmon's watch: the poll count it reads, and giving up a P that sysmon
/// detached while the M was stuck in a poll.
impl MCtx {
    /// Marks the start of a G's poll on this M's P: the P's poll count becomes a new odd
    /// value. sysmon reads an odd count that has not moved since its last look as "one poll
    /// has been running all along".
    #[inline]
    pub(crate) fn poll_start(&self) {
        // Only sysmon reads the count, and loom models run no sysmon: keep their paths short.
        #[cfg(not(loom))]
        if let Some(pid) = self.p.get() {
            let c = &self.shared.ps[pid].stats.polls;
            c.store(c.load(Relaxed).wrapping_add(2) | 1, Relaxed);
        }
    }

    /// Marks the end of a poll: the count becomes even (whatever happened in between: a poll
    /// that unwound leaves it odd only until the next start).
    #[inline]
    pub(crate) fn poll_end(&self) {
        #[cfg(not(loom))]
        if let Some(pid) = self.p.get() {
            let c = &self.shared.ps[pid].stats.polls;
            c.store(c.load(Relaxed).wrapping_add(1) & !1, Relaxed);
        }
    }

    /// After a poll: if sysmon detached our P while the poll blocked the thread (see
    /// `sysmon::detach`), give it up as a spare. Its remaining Gs go to the global queue.
    #[inline]
    pub(crate) fn check_detached(&self, who: Option<Who>) {
        let Some(pid) = self.p.get() else { return };
        if self.shared.ps[pid].status.load(Acquire) == p::P_DETACHED {
            self.drop_detached(pid, who);
        }
    }

    #[cold]
    fn drop_detached(&self, pid: usize, who: Option<Who>) {
        let sh = &*self.shared;
        let p = &sh.ps[pid];
        crate::sysmon::report_blocked(sh, pid, who);
        // SAFETY (both): this M still owns the ring (a detached P has no other owner).
        while let Some(g) = unsafe { p.runq.pop_runnext() }.or_else(|| unsafe { p.runq.pop() }) {
            sh.global.push(g);
        }
        let mut idle = sh.idle.lock();
        self.releasep();
        p.status.store(p::P_SPARE, Release);
        idle.spare.push(pid);
        drop(idle);
        // The Gs just queued globally need an M: ours has no P now.
        sh.wakep();
    }
}
