//! sysmon: the runtime's monitor thread, which runs with no P (Go's `sysmon`).
//!
//! It wakes every 20 µs while it has something to do, backing off to 10 ms when nothing
//! happens, and sleeps until woken while every P is idle (then resumes at 10 ms). Each round
//! it:
//! - **retakes Ps from syscalls** (Go's `retake`): a P that has stayed in the same
//!   `goro::syscall` across a round, while it has queued work (or nobody else is looking for
//!   work, or for 10 ms), is taken (CAS `P_SYSCALL` → `P_IDLE`) and handed to another M; so
//!   is one whose G's poll has held it for a time slice, at that poll's next syscall, if Gs or
//!   due timers wait in it (the syscall is where Go's preemption would have taken the P);
//! - **asks long-running Gs to yield**: a P that has run the same time slice for 10 ms gets its
//!   `preempt` flag set, which goro's yield points honour (see `coop`);
//! - **takes work off a poll that computes**: while every P is busy, a P whose poll has run
//!   for a time slice has its queued Gs moved to the global queue and its due timers to a P
//!   that schedules, where Go would have preempted the G and run them
//!   (`move_work_off_stuck_polls`);
//! - **gives waiting work a turn**: when the global queue, or an M back from a syscall, has
//!   waited a time slice, every running P serves it at its next schedule (`fairness_due`), as
//!   it does every 61 ticks; ticks are not bounded in time when a G computes;
//! - **hands off Ps stuck in a blocked poll** (`detach`): a P whose M has been inside one poll
//!   for two time slices, asleep in the kernel for most of two time slices of it (the G called
//!   something that blocks the thread, outside `goro::syscall`), is replaced by a spare P slot,
//!   which gets its queued Gs, its timers and an M. The stuck M keeps the old P until its poll
//!   returns, then turns it into a spare, and reports the G on stderr once per spawn location.
//!   A poll that is *computing* (a loop with no yield point), whose thread merely waits for a
//!   CPU on a loaded machine, or sleeps for moments (a page fault, an allocator's lock), is
//!   never handed off: Linux's accounts say which (see `threads::look_at` and `Naps`), and
//!   another thread would only compete for the same CPUs. It keeps its P until it yields,
//!   as Go's goroutines did before asynchronous preemption; after [`LONG_POLL`] sysmon says so
//!   on stderr, once per spawn location. `Builder::handoff_blocked(false)` turns the hand-off
//!   off;
//! - **polls the network** if nobody has for 10 ms while Gs wait on I/O, and starts an M if a
//!   timer is overdue while a P is idle;
//! - prints the `GORO_DEBUG=schedtrace=N` line every N ms.
//!
//! Nothing here runs on the scheduler's hot paths: sysmon only reads per-P counters
//! (`schedtick`, `polls`, `syscalltick`) that the Ms bump as they go.

use crate::config;
use crate::loom::Ordering::*;
use crate::metrics::schedtrace_line;
use crate::p::{self, P_DETACHED, P_IDLE, P_RUNNING, P_SYSCALL};
use crate::sched::Shared;
use crate::threads::Look;
use std::panic::Location;
use std::sync::Arc as StdArc;
use std::task::Waker;
use std::time::{Duration, Instant};

/// Go's `forcePreemptNS`: a time slice.
const TIME_SLICE: Duration = Duration::from_millis(10);
/// A poll that has run this long without returning has its P handed off (two time slices:
/// the preemption request at one slice gives a G that reaches a yield point the chance to
/// yield first).
const BLOCKED_POLL: Duration = Duration::from_millis(20);
/// A poll that computes this long without returning is reported (it cannot be preempted).
pub(crate) const LONG_POLL: Duration = Duration::from_secs(1);
/// Shortest and longest sleep between rounds (Go's 20 µs and 10 ms).
const MIN_DELAY: Duration = Duration::from_micros(20);
const MAX_DELAY: Duration = Duration::from_millis(10);
/// Quiet rounds before the sleep starts doubling (Go's 50).
const QUIET_ROUNDS: u32 = 50;

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
    /// How much of the poll running since `pollwhen` its thread has spent asleep.
    naps: Naps,
    /// Whether that poll was reported as a long computation.
    reported_long: bool,
}

/// Starts sysmon if it has not started yet (Go starts it with the program; goro with a
/// runtime's first work, `block_on` or `Runtime::spawn`, so that building a runtime starts no
/// thread). Not under loom: models call sysmon's functions themselves.
pub(crate) fn ensure_started(sh: &StdArc<Shared>) {
    // A bubble has no sysmon: nothing runs beside its one M, and its clock is its own.
    #[cfg(not(loom))]
    if sh.config.bubble.is_none() && !sh.sysmon.started.load(Acquire) && !sh.sysmon.started.swap(true, AcqRel) {
        let name = format!("{}-sysmon", sh.config.thread_name);
        let (shared, schedtrace) = (sh.clone(), sh.config.schedtrace);
        match crate::loom::thread::Builder::new().name(name).spawn(move || run(&shared, schedtrace)) {
            Ok(t) => *sh.sysmon.thread.lock() = Some(t),
            Err(e) => config::warn_once(&format!(
                "goro: cannot start the sysmon thread ({e}); blocked Ms will not be handed off"
            )),
        }
    }
    #[cfg(loom)]
    let _ = sh;
}

/// Stops sysmon and waits for its thread (shutdown).
pub(crate) fn stop(sh: &Shared) {
    // Taken out of the lock first: sysmon's own last round may look at the scheduler.
    let t = sh.sysmon.thread.lock().take();
    if let Some(t) = t {
        sh.sysmon.stop.store(true, SeqCst);
        sh.sysmon.parker.unpark();
        let _ = t.join();
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
            naps: Naps::default(),
            reported_long: false,
        };
        sh.allp.iter().len()
    ];
    let mut next_trace = schedtrace.map(|d| start + d);
    let mut delay = MIN_DELAY;
    let mut quiet = 0u32;
    let mut outside_waiting_since = None;
    let _own = crate::threads::OwnThread::enter();
    let mut deadlock = crate::checkdead::Watch::default();
    let mut deadlock_due: Option<Duration> = None;
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
                // A deadlock may be in sight: look again when its grace period ends.
                match deadlock_due {
                    Some(d) => sh.sysmon.parker.park_timeout(d),
                    None => sh.sysmon.parker.park(),
                }
            }
            sh.sysmon.waiting.store(false, SeqCst);
            // A round at once, before any other sleep: the deadlock check's grace period ends
            // with this wake-up, and a P that went to work may be idle again already (a program
            // that deadlocks), when the test above would put sysmon back to sleep with nothing
            // looked at. After it the rounds go on at the longest sleep: Go wakes a parked
            // sysmon only from a syscall, and then at its shortest; goro wakes it for every P
            // that goes to work (a poll may block its thread, which only sysmon sees), and that
            // alone is no reason to hurry: a G's time slice and a blocked poll are measured in
            // 10 ms anyway. Restarting at 20 µs would cost a server whose Ps all idle now and
            // then about 60 wake-ups of this thread per idle spell (50 quick rounds, then the
            // doubling): some hundreds a second under HTTP load, where the longest sleep costs
            // 100. Only a hand-off (`retake` acting) brings the quick rounds back.
        } else {
            sh.sysmon.parker.park_timeout(sleep);
        }
        if sh.sysmon.stop.load(Acquire) {
            break;
        }
        sh.tick_coarse_ms();
        let now = Instant::now();
        // As in Go, only handing a P off resets the sleep to its shortest: that is when Ms are
        // blocking, and more may follow. A preemption request or a network poll does not (a
        // ping-pong that inherits its time slice gets a request every 10 ms, and rounds at
        // 20 µs would then cost a thread wake-up per 20 µs).
        let acted = retake(sh, &mut seen, now);
        move_work_off_stuck_polls(sh, &seen, now);
        deadlock_due = deadlock.round(sh, now);
        outside_waiting_since = give_outside_work_a_turn(sh, outside_waiting_since, now);
        poll_network(sh);
        let next_timer = crate::timer::earliest(sh);
        if next_timer != 0 && next_timer <= sh.nanotime() && sh.idle.npidle() > 0 {
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

/// A P whose poll has computed for a time slice without returning holds work that nobody else
/// takes while every other P is busy: the Gs in its queue and the due timers in its heap wait
/// for its M's next `schedule`, and the other Ms steal only when they run out of work of their
/// own (a P with a ping-pong never does). Go preempts such a G after a time slice, and its P
/// runs them; goro cannot preempt a poll, so sysmon takes them off the P: the queued Gs go to
/// the global queue (which the busy Ps serve every 61 ticks, and at once once it has waited a
/// time slice: [`give_outside_work_a_turn`]), and the heap moves to a P whose M schedules
/// (Go's `moveTimers`), which runs the due timers at its next `schedule`.
///
/// Only while no P idles: an idle P's M, woken for the work (`wakep`), steals both itself, as
/// Go's idle Ms do. And only while another P schedules: if every P is stuck (or there is only
/// one), the work stays, since no M would run it sooner. The stuck G may queue Gs and arm
/// timers on its P meanwhile; they are moved the same way a round later.
fn move_work_off_stuck_polls(sh: &Shared, seen: &[Seen], now: Instant) {
    if sh.idle.npidle() > 0 {
        return;
    }
    let used = sh.allp.used();
    // Running one poll since a time slice ago at least, as sysmon last saw it (`retake` just
    // updated `seen`).
    let stuck = |i: usize| {
        let polls = used[i].stats.polls.load(Relaxed);
        used[i].status.load(Relaxed) == P_RUNNING
            && polls & 1 == 1
            && polls == seen[i].polls
            && now - seen[i].pollwhen >= TIME_SLICE
    };
    // A P that schedules: running, and its poll count moved within the last time slice.
    let schedules = |j: usize| used[j].status.load(Relaxed) == P_RUNNING && now - seen[j].pollwhen < TIME_SLICE;
    let now_ns = sh.nanos_at(now);
    for (i, pp) in used.iter().enumerate() {
        let timer0 = pp.timers.earliest();
        let timers_due = timer0 != 0 && timer0 <= now_ns;
        let holds_work = timers_due || !pp.runq.is_empty();
        if !holds_work || !stuck(i) {
            continue;
        }
        // Nobody to take the work: it waits for this poll, as it would anywhere else.
        let Some(to) = (0..used.len()).find(|&j| j != i && schedules(j)) else { continue };
        // The ring and `runnext`, as a thief takes them (the owner only pushes meanwhile), half
        // at a time through a scratch ring.
        let (mut scratch, _) = crate::runq::new();
        let mut gs = Vec::new();
        while let Some((g, _)) = pp.runq.steal_into(&mut scratch, true, || true) {
            gs.push(g);
            scratch.drain(|g| gs.push(g));
        }
        if !gs.is_empty() {
            sh.globrunqputbatch(gs.into_iter());
        }
        if timers_due {
            crate::timer::move_timers(sh, i, to);
        }
        sh.stats.stuck_poll_moves.fetch_add(1, Relaxed);
    }
}

/// Work waiting outside the Ps' queues (the global queue, Ms back from a syscall waiting for
/// a P) since `since`: once that is a time slice, every running P is asked to give it a turn
/// at its next schedule (`P::fairness_due`). The Ps do so every 61 ticks anyway (Go's rule);
/// this bounds the wait in time as well, since a G computing without yield points makes a
/// tick last as long as it computes. Returns the new `since`.
fn give_outside_work_a_turn(sh: &Shared, since: Option<Instant>, now: Instant) -> Option<Instant> {
    if sh.global.is_empty() && sh.idle.syscall_waiting() == 0 {
        return None;
    }
    let since = since.unwrap_or(now);
    if now - since < TIME_SLICE {
        return Some(since);
    }
    for p in sh.allp.used() {
        if p.status.load(Relaxed) == P_RUNNING {
            p.fairness_due.store(true, Relaxed);
        }
    }
    Some(now)
}

/// Every P idle and none in a syscall or stuck: nothing for sysmon to watch.
fn all_idle(sh: &Shared) -> bool {
    sh.idle.npidle() == sh.allp.procs()
        && sh.allp.used().iter().all(|p| matches!(p.status.load(Acquire), P_IDLE | p::P_SPARE))
}

/// Go's sysmon netpoll: if Gs wait on I/O and nobody has polled for 10 ms (every M busy),
/// poll here and queue the ready Gs globally.
fn poll_network(sh: &Shared) -> bool {
    let mut ready = Vec::new();
    if !sh.netpoll.poll_if_stale(TIME_SLICE.as_nanos() as u64, || sh.nanotime(), &mut ready) {
        return false;
    }
    let any = !ready.is_empty();
    // From a thread with no P: to the global queue, and an M is woken for them.
    ready.into_iter().for_each(Waker::wake);
    any
}

/// Go's `retake`; returns whether it handed a P off (from a syscall, or a blocked poll).
fn retake(sh: &Shared, seen: &mut [Seen], now: Instant) -> bool {
    let mut acted = false;
    for (i, pp) in sh.allp.used().iter().enumerate() {
        let s = &mut seen[i];
        match pp.status.load(Acquire) {
            P_SYSCALL => {
                let overran = s.watch_slice(pp, now) >= TIME_SLICE;
                let t = pp.stats.syscalltick.load(Relaxed);
                if t != s.syscalltick {
                    s.syscalltick = t;
                    s.syscallwhen = now;
                    // A new syscall, by a poll that has held this P for a whole time slice:
                    // the poll's syscalls are its only yield points (a G looping on blocking
                    // calls, the blocking iterator, never ends its poll, and takes its P back
                    // after each call by the fast path). Go would have preempted that G at
                    // the slice's end and run the P's queue and timers; here the P is taken
                    // at its syscall if they wait (`held_work`), or they would wait for as
                    // long as the loop lasts (seconds, seen: main's 10 ms sleeps, armed on
                    // that P, while the other P ran a `yield_now` loop and never stole).
                    if !(overran && held_work(sh, pp, now)) {
                        continue;
                    }
                    acted |= retake_syscall(sh, i);
                    continue;
                }
                // The same syscall for a whole round. Go keeps the P if it has no work, others
                // are looking for work anyway, and the call is young.
                let others = sh.idle.nmspinning() + sh.idle.npidle() > 0;
                if !held_work(sh, pp, now) && others && now - s.syscallwhen < TIME_SLICE {
                    continue;
                }
                acted |= retake_syscall(sh, i);
            }
            P_RUNNING => {
                if s.watch_slice(pp, now) >= TIME_SLICE && !s.preempted {
                    pp.flags.preempt.store(true, Relaxed);
                    sh.stats.preemptions.fetch_add(1, Relaxed);
                    s.preempted = true;
                }
                let polls = pp.stats.polls.load(Relaxed);
                if polls != s.polls {
                    s.polls = polls;
                    s.pollwhen = now;
                    s.naps = Naps::default();
                    s.reported_long = false;
                } else if polls & 1 == 1 {
                    // One poll has been running since `pollwhen`, a round ago at least.
                    wake_for_runnext(sh, pp);
                    let stuck = now - s.pollwhen;
                    if stuck >= TIME_SLICE / 2 {
                        // Unknown (no /proc) counts as asleep: then every stuck poll is handed
                        // off, as before Linux could be asked.
                        let waits = pp.flags.lock_waits.load(Relaxed);
                        let look = crate::threads::look_at(pp.tid.load(Relaxed));
                        let look = if waits & 1 == 1 || pp.flags.lock_waits.load(Relaxed) != waits {
                            // In (or through) a wait for one of goro's own locks.
                            Look::Awake
                        } else {
                            look.unwrap_or(Look::Asleep { busy: None, at: Instant::now() })
                        };
                        s.naps.look(look, waits);
                    }
                    if s.naps.blocked() {
                        if stuck >= BLOCKED_POLL
                            && s.preempted
                            && sh.config.handoff_blocked
                            && detach(sh, i, polls, sh.nanos_at(s.pollwhen))
                        {
                            acted = true;
                        }
                    } else if stuck >= LONG_POLL && !s.reported_long && !s.naps.asleep {
                        s.reported_long = true;
                        report_long_poll(sh, pp.stats.curgoid.load(Relaxed), stuck);
                    }
                }
            }
            _ => {}
        }
    }
    acted
}

impl Seen {
    /// Follows P `pp`'s time slice (its `schedtick`: one G, or one `runnext` chain, polled
    /// since) and returns how long it has lasted, as far as sysmon has seen. The slice goes
    /// on through the poll's syscalls, so both a running and a `P_SYSCALL` P are watched.
    fn watch_slice(&mut self, pp: &crate::p::P, now: Instant) -> Duration {
        let tick = pp.stats.schedtick.load(Relaxed);
        if tick != self.schedtick {
            self.schedtick = tick;
            self.schedwhen = now;
            self.preempted = false;
        }
        now - self.schedwhen
    }
}

/// How much of one poll its thread has spent asleep in the kernel, and whether that makes the
/// poll a blocked one: asleep for at least half of each of two consecutive spans of a time
/// slice or more.
///
/// It is measured, not sampled. Taking "asleep at every look" for "asleep all along" would hand
/// off computing polls whose thread sleeps for moments now and then (main spawning 100 000 Gs
/// finds its thread asleep in `brk` at times, behind the other threads' page faults): sysmon's
/// looks back off to 10 ms apart, and two of them falling in such moments is enough (tests/hand_off.rs,
/// `computing_threads_that_sleep_for_moments_are_not_taken_for_blocked_ones`).
/// Between two looks that find the thread asleep, Linux's accounts are settled
/// ([`Look::Asleep`]), so the time it slept in between is exact: the time passed minus its time
/// on a CPU and waiting for one. A look that finds it awake says nothing exact, and only clears
/// the verdict (a blocked thread that is running now is not blocked); where Linux keeps no
/// accounts, it also starts the measurement again, so that only "asleep at every look" counts.
///
/// Sleeps in goro's own locks are not the user's blocking calls either (main spawning Gs waits
/// for the global queue's lock while the M that holds it is descheduled): a look during one
/// counts as awake, and a measurement over a span in which the thread waited for one is void
/// (the P's `lock_waits` moved; see `current::lock_wait`).
#[derive(Clone, Copy, Default)]
struct Naps {
    /// The look that began the current measurement: when, the thread's busy time then, and
    /// its P's `lock_waits`.
    from: Option<(Instant, Option<Duration>, u64)>,
    /// Consecutive measurements over a time slice that found the thread asleep for at least
    /// half of it, until one does not or a look finds the thread awake.
    asleep_spans: u32,
    /// Whether the last look found the thread asleep (a poll that sleeps is not reported as a
    /// long computation).
    asleep: bool,
}

impl Naps {
    /// Two measurements in a row found the thread asleep: the poll is blocked. One alone still
    /// handed off a computing G that naps, beside five busy threads, 1 run in 20.
    fn blocked(&self) -> bool {
        self.asleep_spans >= 2
    }

    fn look(&mut self, look: Look, lock_waits: u64) {
        self.asleep = matches!(look, Look::Asleep { .. });
        // Timed by the look itself: sysmon's round clock was off by however long sysmon was
        // descheduled before it looked, and that counted as sleep (a computing main that naps
        // was handed off on a loaded machine, 1 run in 20).
        let Look::Asleep { busy, at: now } = look else {
            self.asleep_spans = 0;
            if matches!(self.from, Some((_, None, _))) {
                // Without accounts nothing says how long it was awake: start again (the rule
                // before Linux's accounts were read, "asleep at every look").
                self.from = None;
            }
            return;
        };
        let Some((from, busy0, lock_waits0)) = self.from else {
            self.from = Some((now, busy, lock_waits));
            return;
        };
        let span = now - from;
        if span < TIME_SLICE {
            return;
        }
        // Without Linux's accounts at both ends, asleep at both ends counts as asleep all
        // along; with them at one end only, the span says nothing.
        let ran = match (busy0, busy) {
            (Some(b0), Some(b)) => Some(b.saturating_sub(b0)),
            (None, None) => Some(Duration::ZERO),
            _ => None,
        };
        let asleep = ran.is_some_and(|ran| span.saturating_sub(ran) * 2 >= span);
        self.asleep_spans = if asleep && lock_waits == lock_waits0 { self.asleep_spans + 1 } else { 0 };
        self.from = Some((now, busy, lock_waits));
    }
}

/// Whether P `pp` holds work that waits for it to schedule: a queued G, or a timer due by
/// `now` in its heap.
fn held_work(sh: &Shared, pp: &crate::p::P, now: Instant) -> bool {
    let timer0 = pp.timers.earliest();
    !pp.runq.is_empty() || (timer0 != 0 && timer0 <= sh.nanos_at(now))
}

/// Go's `ready` wakes a P for every G it makes runnable; goro's wakes one only when the G is
/// stealable at once (see `ready` in `schedule`), and leaves a G alone in `runnext` to its waker's M,
/// which runs it as soon as the waker's poll ends. This is the other half: the waker's poll
/// has gone on for a whole round, so an idle P is woken to steal the G (the spinning M takes a
/// running victim's `runnext` after a few microseconds), and the G does not wait for the
/// waker's computation while a P idles.
fn wake_for_runnext(sh: &Shared, pp: &crate::p::P) {
    if pp.runq.has_runnext() && sh.idle.npidle() > 0 {
        sh.wakep();
    }
}

/// Takes P `i` from the M in a syscall on it and hands it off (Go's `retake` of a
/// `_Psyscall` P); `false` if the M took it back first (its CAS and ours cannot both win).
pub(crate) fn retake_syscall(sh: &Shared, i: usize) -> bool {
    // The M stays counted as running (see `SyscallsWithoutP`): before the P stops showing it.
    sh.syscalls_without_p().enter();
    if sh.allp[i].status.compare_exchange(P_SYSCALL, P_IDLE, AcqRel, Relaxed).is_err() {
        sh.syscalls_without_p().leave();
        return false;
    }
    sh.stats.handoffs.fetch_add(1, Relaxed);
    sh.handoffp(i);
    true
}

/// Replaces P `i`, whose M has been stuck in the poll numbered `polls` since `since`, by a
/// spare slot that gets its queued Gs and an M. Returns whether it did.
pub(crate) fn detach(sh: &Shared, i: usize, polls: u64, since: u64) -> bool {
    let pp = &sh.allp[i];
    let mut idle = sh.idle.lock();
    let Some(spare) = idle.spare_get() else {
        drop(idle);
        config::warn_once("goro: too many Gs are blocking their threads at once; no spare P is left to hand their work to (use goro::syscall around blocking calls)");
        return false;
    };
    // The spare goes into use before the stuck P goes out of it, so that a slot in use can
    // always be found (`Allp::timer_home`).
    sh.allp.use_spare(spare);
    sh.allp[spare].status.store(P_IDLE, Release);
    // Under the scheduler lock the stuck M cannot be giving the P up meanwhile (it does that
    // under this lock); the CAS then the re-read of `polls` make sure it is still stuck in
    // that same poll (if it has moved on, undo).
    let stuck = pp.status.compare_exchange(P_RUNNING, P_DETACHED, AcqRel, Relaxed).is_ok();
    if !stuck || pp.stats.polls.load(Acquire) != polls {
        if stuck {
            pp.status.store(P_RUNNING, Release);
        }
        sh.allp[spare].status.store(p::P_SPARE, Release);
        drop(idle);
        // The spare was in use for a moment: a timer may have landed on it (rule 1 of
        // `timer`'s "Timers move with their P"), before it goes back on the list.
        crate::timer::move_timers(sh, spare, sh.allp.timer_home());
        sh.idle.lock().spare_put(spare);
        return false;
    }
    pp.blocked_since.store(since, Relaxed);
    drop(idle);
    sh.stats.handoffs.fetch_add(1, Relaxed);
    sh.stats.blocked_polls.fetch_add(1, Relaxed);
    // The spare takes the stuck P's place: its timers first (rule 1 of `timer`'s "Timers move
    // with their P": the status is published), then its queue.
    crate::timer::move_timers(sh, i, spare);
    // Move the stuck P's queued Gs to the spare, which nobody else can reach yet (sysmon owns it
    // until `handoffp`: it is in use but on no list, so its core is ours to take); the stuck M
    // only pushes to its ring, and stealing is safe against that.
    let mut core = sh.allp[spare].take_core();
    if let Some((g, _)) = pp.runq.steal_into(&mut core.runq, true, || true) {
        // Half a ring was moved, so there is room.
        core.runq.push_back(g, |_| unreachable!("goro: half a ring overflowed the spare's"));
    }
    sh.allp[spare].put_core(core);
    // The rest (at most half a ring) through a scratch ring to the global queue.
    let (mut scratch, _) = crate::runq::new();
    while let Some((g, _)) = pp.runq.steal_into(&mut scratch, true, || true) {
        sh.global.push(g);
        scratch.drain(|g| sh.global.push(g));
    }
    sh.handoffp(spare);
    true
}

/// A poll has computed for `stuck` (at least [`LONG_POLL`]) without returning: one line on
/// stderr per spawn location. Printed by sysmon, since the M may never come back.
fn report_long_poll(sh: &Shared, goid: u64, stuck: Duration) {
    let at = if goid == 0 { None } else { sh.allgs.with_g(goid, |h| h.location) };
    let (whom, key) = match at {
        Some(at) => (format!("G {goid} spawned at {at}"), at),
        None if goid == 0 => ("the main G (block_on)".to_owned(), Location::caller()),
        // Finished meanwhile: nothing to say.
        None => return,
    };
    config::warn_once_at("long poll", key, || {
        format!(
            "goro: {whom} has computed for {}s without reaching a yield point; goro cannot preempt it, so \
             what waits for its thread waits too. Insert goro::runtime::yield_now().await in long loops (or check \
             goro::coop::should_yield())",
            stuck.as_secs()
        )
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    /// The other way CI's main, spawning 100 000 Gs on a loaded machine, can sleep, made
    /// certain: the global queue's lock is held by an M that the OS descheduled (here a thread
    /// that holds it for 300 ms). Main's thread sleeps in that lock, which is goro's own, not a
    /// blocking call of the user's: no P is handed off (`current::lock_wait` marks the wait;
    /// without the mark, this is taken for a blocked poll every time).
    #[test]
    fn a_poll_waiting_for_goros_own_lock_is_not_a_blocked_one() {
        let rt = crate::Builder::new().max_procs(2).build().unwrap();
        let sh = rt.shared().clone();
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let _q = sh.global.lock_for_test();
            held_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        held_rx.recv().unwrap();
        rt.block_on(async {
            // More than a ring holds, in one poll: the overflow goes to the global queue.
            for _ in 0..10_000 {
                drop(crate::go(async {}));
            }
        });
        holder.join().unwrap();
        let m = rt.metrics();
        assert_eq!(m.blocked_polls, 0, "a wait for goro's own lock was taken for a blocked poll: {m:?}");
    }
}
