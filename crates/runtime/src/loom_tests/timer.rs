//! Models of the timer core: [`TimerCore::arm`]/[`stop`](TimerCore::stop)/
//! [`set_waker`](TimerCore::set_waker) racing [`timer::run_timers`] on other threads.
//!
//! There is no clock: each "M" thread runs a heap with an explicit `now`, as `check_timers`
//! would after reading the clock. The runtime has no M of its own (every P is taken, as in the
//! [`g`](super::g) models), so `wake_netpoller`'s `wakep` starts no thread; arming from these
//! threads (no P) pushes onto P0's heap, which is the one the models run.
//!
//! What the models check, besides loom's own checks (no deadlock between a timer's lock and
//! its heap's lock, no data race):
//! - a one-shot arming fires at most once, and exactly one of {`stop` returned true, the
//!   action ran} holds; once `stop` or a re-arm has returned, the old arming never runs its
//!   action (Go 1.23's guarantee), and `stop`/`arm` return whether it was still pending;
//! - a periodic timer has exactly one live heap entry while armed, its catch-up skips missed
//!   periods rather than firing once per period, and an action returning `false` stops it;
//! - the waker of a sleeping G set while the timer fires is either the one woken, or
//!   `set_waker` reports that the timer already fired (no lost wake-up);
//! - the heap's count of stale entries is exact once the threads are joined (an overcount
//!   would make every push rebuild a small heap);
//! - timers move with their P: when sysmon detaches P0 (whose M is stuck in a poll) and the
//!   stuck M later gives it up, racing an arming by the stuck G and a thief firing P0's heap,
//!   no entry is left on P0 (out of use, so never run again) and each arming fires once;
//! - when sysmon moves the heap of a P whose poll computes to a P that schedules, racing the
//!   stuck G's arming and re-arming on its own heap and the other P's M running its heap, each
//!   arming fires at most once, a re-armed timer's old arming never after the re-arm returned,
//!   and every live arming is left on a heap in use.

use super::g::shared;
use super::model;
use crate::sched::Shared;
use crate::timer::{self, Action, Nanos, TimerCore};
use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc as StdArc;
use std::task::{Wake, Waker};

/// A timer whose action counts its runs and returns `keep_going` (for a periodic timer,
/// `false` stops it: a ticker whose receiver is gone).
fn counting(runs: &Arc<AtomicUsize>, keep_going: bool) -> StdArc<TimerCore> {
    let r = runs.clone();
    StdArc::new(TimerCore::new(Action::Call(Box::new(move || {
        r.fetch_add(1, SeqCst);
        keep_going
    }))))
}

/// An M running P0's heap at `now`, on a thread of its own.
fn m(sh: &StdArc<Shared>, now: Nanos) -> thread::JoinHandle<usize> {
    let sh = sh.clone();
    thread::spawn(move || timer::run_timers(&*sh, 0, now))
}

/// Once every thread is joined: the deadlines of P0's live entries, after checking that the
/// heap's stale count matches its stale entries.
fn census(sh: &Shared) -> Vec<Nanos> {
    census_of(sh, 0)
}

/// [`census`] of P slot `p`'s heap.
fn census_of(sh: &Shared, p: usize) -> Vec<Nanos> {
    let (live, stale_entries, stale_count) = sh.allp[p].timers.census();
    assert_eq!(stale_count, stale_entries, "P{p}: the heap's count of stale entries is off");
    live
}

/// sysmon's `detach` of P0, whose M is stuck in a poll: the first spare slot takes its place
/// (its status, its timers, its queue), and P0 goes out of use. A spinning M is pretended from
/// then on, so that `handoffp` idles the spare and `wakep` starts no thread (the models have
/// no Ms). Returns the spare's index.
fn detach_p0(sh: &Shared) -> usize {
    use crate::loom::Ordering::Relaxed;
    sh.idle.spinning_start();
    let polls = 1; // one poll running
    sh.allp[0].stats.polls.store(polls, Relaxed);
    assert!(crate::sysmon::detach(sh, 0, polls, 1), "detach refused");
    // Detached, or already a spare if the stuck M's poll returned meanwhile.
    assert!(!crate::p::in_use(sh.allp[0].status.load(SeqCst)));
    sh.allp.procs()
}

/// On a thread of its own, the stuck M holding P0: runs `f` with P0 as its current P (what a
/// G polled there sees, and the M once the poll returns).
fn stuck_m(sh: &StdArc<Shared>, f: impl FnOnce(&crate::m::MCtx) + Send + 'static) -> thread::JoinHandle<()> {
    let sh = sh.clone();
    thread::spawn(move || {
        let ctx = crate::m::MCtx::new(sh, StdArc::new(crate::idle::M::new()), None);
        crate::m::enter(&ctx, || {
            // P0 is taken (every P is, see `shared`) and stays `P_RUNNING`: only its core moves here.
            ctx.hold(0);
            f(&ctx);
        })
    })
}

/// Timers move with their P (`timer`'s module docs): sysmon detaches P0 while the G stuck on
/// it arms a timer there and a thief fires P0's expired timer. Nothing stays on P0 (a detached
/// P, then a spare, which no M runs: the bug was a timer left there forever); each arming
/// fires exactly once, from the spare's heap if the thief did not fire it first.
#[test]
fn loom_timer_moves_with_a_detached_p() {
    model(|| {
        let sh = shared();
        let (r1, r2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let t1 = counting(&r1, true);
        t1.arm(&*sh, 10, 0);
        let t2 = counting(&r2, true);
        // Its poll never returns (within the model): only the arming's own move (rule 2) can
        // take this timer off P0.
        let stuck = stuck_m(&sh, move |ctx| {
            t2.arm(&*ctx.shared, 20, 0);
        });
        let thief = m(&sh, 10);
        let spare = detach_p0(&sh);
        stuck.join().unwrap();
        let fired = thief.join().unwrap();
        assert!(census_of(&sh, 0).is_empty(), "a timer stayed on the detached P");
        let live = census_of(&sh, spare);
        let n1 = r1.load(SeqCst);
        assert_eq!(n1 + usize::from(live.contains(&10)), 1, "t1 fired {n1} times, live on the spare: {live:?}");
        assert!(live.contains(&20), "the stuck G's timer is not on the spare: {live:?}");
        assert_eq!(fired, n1);
        assert_eq!(timer::run_timers(&*sh, spare, 1_000), live.len());
        assert_eq!((r1.load(SeqCst), r2.load(SeqCst)), (1, 1));
    });
}

/// A thief fires a ticker on P0 (which re-arms it on P0's heap) while sysmon detaches P0 and
/// the stuck M then gives it up (it becomes a spare): the ticker ends up with exactly one live
/// entry, on the P in use, and nothing stays on P0.
#[test]
fn loom_timer_ticker_fired_on_a_detached_p_moves() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, true);
        t.arm(&*sh, 10, 10);
        // Its poll returns: it gives P0 up if detached (`check_detached`: P0 becomes a spare,
        // its timers move to a P in use).
        let stuck = stuck_m(&sh, |ctx| ctx.check_detached(None));
        let thief = m(&sh, 10);
        let spare = detach_p0(&sh);
        stuck.join().unwrap();
        let fired = thief.join().unwrap();
        assert!(census_of(&sh, 0).is_empty(), "a timer stayed on the detached P");
        let live = census_of(&sh, spare);
        assert_eq!(fired, runs.load(SeqCst));
        assert_eq!(live, [if fired == 1 { 20 } else { 10 }], "the ticker's entries: {live:?}");
        assert!(t.stop(Some(&*sh)));
        assert!(census_of(&sh, spare).is_empty());
    });
}

/// Stop racing the firing of a one-shot: exactly one of {stop returned true, the action ran};
/// stop returning false means the action has run to completion already; nothing fires later.
#[test]
fn loom_timer_stop_racing_fire() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, true);
        assert!(!t.arm(&*sh, 10, 0), "a new timer was not armed");
        let m = m(&sh, 10);
        let stopped = t.stop(Some(&*sh));
        let runs_at_stop = runs.load(SeqCst);
        let fired = m.join().unwrap();
        let ran = runs.load(SeqCst);
        assert_eq!(ran + usize::from(stopped), 1, "stopped: {stopped}, action runs: {ran}");
        assert_eq!(runs_at_stop, ran, "the action ran after stop returned");
        // `run_timers` also counts an entry it popped live that the stop cancelled before the
        // firing took the timer's lock: an upper bound.
        assert!(fired >= ran && fired <= 1, "run_timers reported {fired} firings, the action ran {ran} times");
        assert!(!t.is_armed());
        assert_eq!(timer::run_timers(&*sh, 0, 1_000), 0);
        assert_eq!(runs.load(SeqCst), ran);
        assert!(census(&sh).is_empty());
    });
}

/// Re-arming to a later deadline racing the firing of the first arming: `arm` returns whether
/// the first arming was still pending, the first arming never fires once `arm` has returned,
/// and the second fires once, at its own deadline.
#[test]
fn loom_timer_rearm_racing_fire() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, true);
        t.arm(&*sh, 10, 0);
        let m = m(&sh, 10);
        let was = t.arm(&*sh, 20, 0);
        let runs_at_rearm = runs.load(SeqCst);
        let fired = m.join().unwrap();
        assert_eq!(was, runs_at_rearm == 0, "arm's result disagrees with the first arming's fate");
        assert_eq!(runs.load(SeqCst), runs_at_rearm, "the first arming fired after arm returned");
        assert!(fired >= runs_at_rearm && fired <= 1);
        assert_eq!(timer::run_timers(&*sh, 0, 19), 0, "fired before the new deadline");
        assert_eq!(census(&sh), [20]);
        assert_eq!(timer::run_timers(&*sh, 0, 20), 1);
        assert_eq!(runs.load(SeqCst), runs_at_rearm + 1);
        assert!(census(&sh).is_empty());
    });
}

/// Re-arming to an earlier deadline (one the racing M may already run) while the first arming
/// fires: each arming fires at most once, the first one only if `arm` found it already fired.
#[test]
fn loom_timer_rearm_earlier_racing_fire() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, true);
        t.arm(&*sh, 10, 0);
        let m = m(&sh, 10);
        let was = t.arm(&*sh, 5, 0);
        m.join().unwrap();
        timer::run_timers(&*sh, 0, 1_000);
        assert_eq!(runs.load(SeqCst), usize::from(!was) + 1, "was pending: {was}");
        assert!(!t.is_armed());
        assert!(census(&sh).is_empty());
    });
}

/// Two Ms run the same heap at once (the owner and a thief) while a third thread stops one of
/// its two timers: each arming fires at most once, the other timer exactly once.
#[test]
fn loom_timer_two_ms_one_heap() {
    model(|| {
        let sh = shared();
        let (r1, r2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (t1, t2) = (counting(&r1, true), counting(&r2, true));
        t1.arm(&*sh, 5, 0);
        t2.arm(&*sh, 10, 0);
        let (a, b) = (m(&sh, 10), m(&sh, 10));
        let stopped = t2.stop(Some(&*sh));
        let fired = a.join().unwrap() + b.join().unwrap();
        let (n1, n2) = (r1.load(SeqCst), r2.load(SeqCst));
        assert_eq!(n1, 1, "t1 fired {n1} times");
        assert_eq!(n2 + usize::from(stopped), 1, "t2: stopped {stopped}, fired {n2} times");
        assert!(fired >= n1 + n2 && fired <= 2);
        assert!(census(&sh).is_empty());
    });
}

/// A ticker (period 10 from 10) run by two Ms at now = 10 and now = 25 while it is stopped: a
/// ticker is always armed, so stop returns true, and no tick follows its return.
#[test]
fn loom_timer_periodic_stop() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, true);
        t.arm(&*sh, 10, 10);
        let (a, b) = (m(&sh, 10), m(&sh, 25));
        let stopped = t.stop(Some(&*sh));
        let runs_at_stop = runs.load(SeqCst);
        a.join().unwrap();
        b.join().unwrap();
        assert!(stopped, "stop of a ticker returned false");
        assert_eq!(runs.load(SeqCst), runs_at_stop, "a tick after stop returned");
        assert!(runs_at_stop <= 2);
        assert!(census(&sh).is_empty(), "a stopped ticker left a live entry");
        assert_eq!(timer::run_timers(&*sh, 0, 1_000), 0);
    });
}

/// A ticker run by two Ms at once, never stopped: exactly one live entry afterwards, on a
/// period boundary after the firings; a long gap then costs one tick, not one per period
/// missed (Go's catch-up).
#[test]
fn loom_timer_periodic_two_ms() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, true);
        t.arm(&*sh, 10, 10);
        let (a, b) = (m(&sh, 10), m(&sh, 25));
        let fired = a.join().unwrap() + b.join().unwrap();
        let n = runs.load(SeqCst);
        assert_eq!(fired, n, "nothing cancels a firing here");
        let live = census(&sh);
        assert_eq!(live.len(), 1, "a ticker must have exactly one live entry: {live:?}");
        match n {
            1 => assert!(live[0] == 20 || live[0] == 30, "next tick at {}", live[0]),
            2 => assert_eq!(live[0], 30, "next tick at {}", live[0]),
            _ => panic!("{n} ticks from firings at 10 and 25"),
        }
        assert_eq!(timer::run_timers(&*sh, 0, 1_005), 1, "a missed period fired on its own");
        assert_eq!(census(&sh), [1_010]);
        assert!(t.stop(Some(&*sh)));
    });
}

/// A ticker whose action returns false (a `tick` whose receiver is gone) stops itself at its
/// first tick, racing two Ms and an explicit stop: it ticks at most once, and stop returns
/// true exactly when it came first.
#[test]
fn loom_timer_periodic_self_stop() {
    model(|| {
        let sh = shared();
        let runs = Arc::new(AtomicUsize::new(0));
        let t = counting(&runs, false);
        t.arm(&*sh, 10, 10);
        let (a, b) = (m(&sh, 10), m(&sh, 25));
        let stopped = t.stop(Some(&*sh));
        let runs_at_stop = runs.load(SeqCst);
        a.join().unwrap();
        b.join().unwrap();
        let n = runs.load(SeqCst);
        assert_eq!(n, runs_at_stop, "a tick after stop returned");
        assert_eq!(n + usize::from(stopped), 1, "stopped: {stopped}, ticks: {n}");
        assert!(!t.is_armed());
        assert!(census(&sh).is_empty());
        assert_eq!(timer::run_timers(&*sh, 0, 1_000), 0);
    });
}

/// Counts its wakes.
struct CountWake(Arc<AtomicUsize>);
impl Wake for CountWake {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A sleeping G polled again (`Sleep::poll` replacing its waker) while its timer fires: either
/// `set_waker` returns true and the new waker is woken, or it returns false (the sleep is over)
/// and the old waker was woken. Never neither (a lost wake-up), never both.
#[test]
fn loom_timer_waker_racing_fire() {
    model(|| {
        let sh = shared();
        let (w1, w2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let old = Waker::from(StdArc::new(CountWake(w1.clone())));
        let new = Waker::from(StdArc::new(CountWake(w2.clone())));
        let t = StdArc::new(TimerCore::new(Action::Wake(Some(old))));
        t.arm(&*sh, 10, 0);
        let m = m(&sh, 10);
        let pending = t.set_waker(&new);
        assert_eq!(m.join().unwrap(), 1);
        let (n1, n2) = (w1.load(SeqCst), w2.load(SeqCst));
        if pending {
            assert_eq!((n1, n2), (0, 1), "set_waker returned true but the new waker was not the one woken");
        } else {
            assert_eq!((n1, n2), (1, 0), "set_waker returned false but the old waker was not woken");
        }
        assert!(census(&sh).is_empty());
    });
}

/// Not a timer's race, but the same stuck M: sysmon detaches P0 while the G stuck on it enters
/// `goro::syscall`. Were entering to overwrite `P_DETACHED` with `P_SYSCALL`, returning would
/// take P0 back while the spare that replaced it stayed in use: two Ps in use with `procs` = 1.
/// Whichever CAS wins (the detach's or the syscall's), exactly `procs` slots end in use.
#[test]
fn loom_detach_races_entersyscall() {
    model(|| race_detach(|_| crate::syscall(|| ())));
}

/// The stuck M holding P0 does `m` while sysmon tries to detach P0 (`detach_p0`, but `m` may
/// change P0 first, and then the detach is refused); then exactly `procs` P slots are in use.
fn race_detach(m: impl FnOnce(&crate::m::MCtx) + Send + 'static) {
    let sh = shared();
    let stuck = stuck_m(&sh, m);
    sh.idle.spinning_start();
    sh.allp[0].stats.polls.store(1, crate::loom::Ordering::Relaxed);
    let _ = crate::sysmon::detach(&sh, 0, 1, 1);
    stuck.join().unwrap();
    let in_use = sh.allp.used().iter().filter(|p| crate::p::in_use(p.status.load(SeqCst))).count();
    assert_eq!(in_use, sh.allp.procs(), "P slots in use, of {} Ps", sh.allp.procs());
    assert!(sh.idle.npidle() <= sh.allp.procs());
}

/// The stuck M's poll returns just as sysmon detaches P0: the poll's end (its count made even)
/// and the M's look at P0's status can pass sysmon's detach (its CAS of the status, then its
/// look at the count) in both directions. So the M may go on holding P0 after sysmon has
/// detached it: when it then gives P0 up as idle, P0 must go to the spare list instead (two Ps
/// in use with `procs` = 1 is one too many). Or the M may see the detach that sysmon is about
/// to undo (the count it reads next is even): the M must then keep P0, or P0 and the spare both
/// end on the spare list (none in use). Both failed before; exactly `procs` slots end in use.
#[test]
fn loom_detach_races_a_poll_end() {
    model(|| {
        race_detach(|ctx| {
            ctx.poll_end();
            ctx.check_detached(None);
            if let Some(pid) = ctx.releasep() {
                ctx.shared.pidleput(pid);
            }
        })
    });
}

/// sysmon moves the heap of P0, whose G computes, to P1, whose M runs its own heap meanwhile
/// (`sysmon::move_work_off_stuck_polls`), while the computing G re-arms one timer and arms
/// another on P0. Both slots stay in use. Each arming fires at most once: `t1`'s first arming
/// exactly when the re-arm found it fired, its second once; `t2` once; the stale counts of both
/// heaps stay exact.
#[test]
fn loom_timer_moves_off_a_computing_p() {
    model(|| {
        let mut config = super::g::config(1);
        config.max_procs = 2;
        let sh = Shared::new(config, crate::m::mstart).expect("shared");
        while sh.pidleget().is_some() {}
        let (r1, r2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let t1 = counting(&r1, true);
        let t2 = counting(&r2, true);
        let was_pending = Arc::new(AtomicUsize::new(0));
        let computing = {
            let (t1, t2, was_pending) = (t1.clone(), t2.clone(), was_pending.clone());
            stuck_m(&sh, move |ctx| {
                // Armed on P0 (the M's P), then re-armed there as the move runs.
                t1.arm(&*ctx.shared, 10, 0);
                if t1.arm(&*ctx.shared, 30, 0) {
                    was_pending.fetch_add(1, SeqCst);
                }
                t2.arm(&*ctx.shared, 20, 0);
            })
        };
        let p1 = {
            let sh = sh.clone();
            thread::spawn(move || timer::run_timers(&*sh, 1, 25))
        };
        timer::move_timers(&*sh, 0, 1);
        computing.join().unwrap();
        p1.join().unwrap();
        let pending = was_pending.load(SeqCst) == 1;
        let fired_early = r1.load(SeqCst);
        assert!(
            fired_early <= 1 && (fired_early == 1) != pending,
            "t1's first arming: pending {pending}, fired {fired_early}"
        );
        // Whatever is left runs, wherever it is.
        let live: Vec<Nanos> = [census_of(&sh, 0), census_of(&sh, 1)].concat();
        timer::run_timers(&*sh, 0, 1_000);
        timer::run_timers(&*sh, 1, 1_000);
        assert_eq!(r1.load(SeqCst), fired_early + 1, "t1 fired {} times; live entries were {live:?}", r1.load(SeqCst));
        assert_eq!(r2.load(SeqCst), 1, "t2 fired {} times; live entries were {live:?}", r2.load(SeqCst));
        assert!(census_of(&sh, 0).is_empty() && census_of(&sh, 1).is_empty());
    });
}
