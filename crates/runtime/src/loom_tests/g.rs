//! Models of the G lifecycle word ([`state`](crate::g::state)), [`g::run`], the G's waker and
//! the [`JoinHandle`].
//!
//! The harness drives a G by hand, as the scheduler would: [`spawn`] creates it from a thread
//! that is not an M, so it lands in the global queue; an "M" thread pops it and calls
//! [`g::run`] ([`run_queued`]); other threads abort it, wake it, or poll or drop its
//! `JoinHandle`. The runtime has no M at all: its only P is taken up front, so `wakep` finds no
//! idle P and starts no thread, and every wake from these non-M threads goes to the global
//! queue. After the threads are joined, [`settle`] runs whatever is still queued and then, as
//! the runtime's shutdown does, drops the futures of Gs that nobody will wake.
//!
//! What every model checks, besides its own property:
//! - the future is dropped exactly once, the output at most once (exactly once if it was
//!   produced), counted by `Drop` impls;
//! - the G's memory is freed: each G holds one strong count on its `Shared`, so once every
//!   handle is gone the count must be back to one ([`assert_freed`]); loom's leak check of the
//!   `loom::sync::Arc` inside the future and the output backs this up;
//! - the G is run only as often as it was legitimately made runnable (a wake after completion,
//!   or a second wake of a queued G, must not queue it again);
//! - loom's own checks: no data race on the `UnsafeCell`s (the join waker slot, the stage), no
//!   deadlock.

use super::model;
use crate::config::Config;
use crate::g::{self, JoinError, JoinHandle};
use crate::sched::Shared;
use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

/// The configuration of the models' runtimes: one P, at most `max_threads` Ms.
pub(super) fn config(max_threads: usize) -> Config {
    Config {
        max_procs: 1,
        max_threads,
        thread_name: "loom".to_owned(),
        stack_size: None,
        schedtrace: None,
        handoff_blocked: true,
        deadlock_detection: true,
        census: crate::checkdead::Census::AllThreads,
        unhandled_panic: crate::panics::UnhandledPanic::Ignore,
        on_thread_start: None,
        on_thread_stop: None,
        bubble: None,
    }
}

/// A runtime with no M: its only P is taken, as if by an M busy elsewhere, so that `wakep`
/// never starts a thread and the model's threads are the only actors.
pub(super) fn shared() -> StdArc<Shared> {
    let sh = Shared::new(config(1), crate::m::mstart).expect("shared");
    while sh.pidleget().is_some() {}
    sh
}

/// What an M does: pops Gs from the global queue and runs them; a G that woke itself during
/// its poll goes back to the queue. Returns how many runs it did.
pub(super) fn run_queued(sh: &Shared) -> usize {
    let mut runs = 0;
    while let Some(gp) = sh.global.pop() {
        runs += 1;
        // SAFETY: a G popped from a run queue comes with the queue's reference.
        if let Some(again) = unsafe { g::run(gp, sh.coarse_clock()) } {
            sh.global.push(again);
        }
    }
    runs
}

/// After every other thread is joined: runs what is still queued, then drops (as shutdown
/// does) every G that is still alive because it waits for a wake nobody will send. Returns the
/// runs and the number of Gs shutdown had to cancel.
pub(super) fn settle(sh: &Shared) -> (usize, usize) {
    let runs = run_queued(sh);
    let mut cancelled = 0;
    sh.flush_all_dead();
    // SAFETY: no thread runs a G any more, and each G comes with the list's reference.
    sh.allgs.close_and_drain(|gp| {
        cancelled += 1;
        unsafe { g::shutdown(gp) }
    });
    // SAFETY: the queue's references are ours; nobody will run these.
    sh.global.drain(|gp| unsafe { g::drop_ref(gp) });
    (runs, cancelled)
}

/// Every G of `sh` has been freed: each holds a strong count on its `Shared` until it is.
pub(super) fn assert_freed(sh: StdArc<Shared>) {
    assert_eq!(sh.allgs.len(), 0);
    assert_eq!(StdArc::strong_count(&sh), 1, "a G was not freed (its refcount never reached zero)");
}

/// What happened to one G's future and output, and the wakers its future handed out.
#[derive(Debug)]
pub(super) struct Counts {
    pub(super) polls: AtomicUsize,
    pub(super) fut_drops: AtomicUsize,
    pub(super) out_drops: AtomicUsize,
    /// Clones of the G's waker, taken by the future during its first poll; `None` once
    /// [`close_stash`](Counts::close_stash) said that no poll will fill it any more.
    stash: Mutex<Option<Vec<Waker>>>,
    stashed: Condvar,
}

impl Counts {
    pub(super) fn new() -> Arc<Counts> {
        Arc::new(Counts {
            polls: AtomicUsize::new(0),
            fut_drops: AtomicUsize::new(0),
            out_drops: AtomicUsize::new(0),
            stash: Mutex::new(Some(Vec::new())),
            stashed: Condvar::new(),
        })
    }

    pub(super) fn polls(&self) -> usize {
        self.polls.load(SeqCst)
    }

    /// No poll will stash a waker any more: wakes [`take_stashed_or_none`] (the wakers stashed
    /// meanwhile are dropped here).
    pub(super) fn close_stash(&self) {
        drop(self.stash.lock().unwrap().take());
        self.stashed.notify_all();
    }

    /// Checks the drop counts: the future exactly once, the output once if it was produced.
    pub(super) fn assert_dropped_once(&self, output_produced: bool) {
        assert_eq!(self.fut_drops.load(SeqCst), 1, "the future must be dropped exactly once");
        assert_eq!(self.out_drops.load(SeqCst), usize::from(output_produced), "output drops");
    }
}

/// How the test future behaves.
#[derive(Clone, Copy, Debug)]
pub(super) struct Script {
    /// How many clones of its waker the first poll puts in the stash.
    stash: usize,
    /// The poll (0-based) that returns `Ready`; `None`: always `Pending`.
    ready_at: Option<usize>,
    /// Whether the first poll wakes the G by reference (as `yield_now` does) after stashing.
    wake_self: bool,
}

/// First poll: stashes a waker and returns Pending; every later poll: Pending, forever.
pub(super) const STASH_FOREVER: Script = Script { stash: 1, ready_at: None, wake_self: false };
/// Ready at the first poll.
pub(super) const READY: Script = Script { stash: 0, ready_at: Some(0), wake_self: false };
/// Pending forever, and never wakes itself.
pub(super) const PENDING: Script = Script { stash: 0, ready_at: None, wake_self: false };
/// First poll: stashes a waker and returns Pending; second poll: Ready.
pub(super) const STASH_THEN_READY: Script = Script { stash: 1, ready_at: Some(1), wake_self: false };
/// First poll: stashes a waker and returns Ready (the waker outlives the future).
const STASH_AND_READY: Script = Script { stash: 1, ready_at: Some(0), wake_self: false };
/// First poll: stashes a waker, wakes itself by reference and returns Pending; second poll:
/// Ready.
const STASH_YIELD_THEN_READY: Script = Script { stash: 1, ready_at: Some(1), wake_self: true };
/// First poll: stashes two wakers and returns Pending; second poll: Ready.
const STASH_TWO_THEN_READY: Script = Script { stash: 2, ready_at: Some(1), wake_self: false };

pub(super) struct TestFuture {
    counts: Arc<Counts>,
    script: Script,
}

impl TestFuture {
    pub(super) fn new(counts: &Arc<Counts>, script: Script) -> TestFuture {
        TestFuture { counts: counts.clone(), script }
    }
}

/// The output; its drop is counted.
#[derive(Debug)]
pub(super) struct Out(Arc<Counts>);

impl Drop for Out {
    fn drop(&mut self) {
        self.0.out_drops.fetch_add(1, SeqCst);
    }
}

impl Future for TestFuture {
    type Output = Out;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Out> {
        let n = self.counts.polls.fetch_add(1, SeqCst);
        if n == 0 && self.script.stash > 0 {
            let mut stash = self.counts.stash.lock().unwrap();
            let stash = stash.as_mut().expect("a poll after the stash was closed");
            for _ in 0..self.script.stash {
                stash.push(cx.waker().clone());
            }
            self.counts.stashed.notify_all();
        }
        if n == 0 && self.script.wake_self {
            cx.waker().wake_by_ref();
        }
        if self.script.ready_at == Some(n) {
            Poll::Ready(Out(self.counts.clone()))
        } else {
            assert!(!matches!(self.script.ready_at, Some(r) if n > r), "polled after Ready");
            Poll::Pending
        }
    }
}

impl Drop for TestFuture {
    fn drop(&mut self) {
        self.counts.fut_drops.fetch_add(1, SeqCst);
    }
}

/// Spawns a G running `script` from this (non-M) thread: it goes to the global queue.
pub(super) fn spawn(sh: &StdArc<Shared>, script: Script, counts: &Arc<Counts>) -> JoinHandle<Out> {
    crate::m::newproc(sh, TestFuture::new(counts, script), Location::caller())
}

/// Spawns the "M" thread.
pub(super) fn spawn_m(sh: &StdArc<Shared>) -> thread::JoinHandle<usize> {
    let sh = sh.clone();
    thread::spawn(move || run_queued(&sh))
}

/// A waker that records that it was woken.
pub(super) struct Flag(AtomicBool);

impl Flag {
    pub(super) fn new() -> (StdArc<Flag>, Waker) {
        let f = StdArc::new(Flag(AtomicBool::new(false)));
        let w = Waker::from(f.clone());
        (f, w)
    }

    pub(super) fn woken(&self) -> bool {
        self.0.load(SeqCst)
    }
}

impl Wake for Flag {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &StdArc<Self>) {
        self.0.store(true, SeqCst);
    }
}

pub(super) fn poll_join<T>(jh: &mut JoinHandle<T>, waker: &Waker) -> Poll<Result<T, JoinError>> {
    Pin::new(jh).poll(&mut Context::from_waker(waker))
}

/// Polls a JoinHandle whose G is known to be complete.
fn poll_complete<T>(jh: &mut JoinHandle<T>) -> Result<T, JoinError> {
    let (_, w) = Flag::new();
    match poll_join(jh, &w) {
        Poll::Ready(r) => r,
        Poll::Pending => panic!("JoinHandle of a completed G returned Pending"),
    }
}

/// Takes one stashed waker, waiting (on a condvar, not spinning: loom bounds the branches of
/// a spin loop) for the future's first poll to stash it.
pub(super) fn take_stashed(counts: &Counts) -> Waker {
    take_stashed_or_none(counts).expect("the stash was closed before the first poll filled it")
}

/// [`take_stashed`] for a G that may never be polled: `None` once the stash is closed.
fn take_stashed_or_none(counts: &Counts) -> Option<Waker> {
    let mut stash = counts.stash.lock().unwrap();
    loop {
        match stash.as_mut() {
            None => return None,
            Some(wakers) => {
                if let Some(w) = wakers.pop() {
                    return Some(w);
                }
            }
        }
        stash = counts.stashed.wait(stash).unwrap();
    }
}

/// Completion against `abort` followed by dropping the JoinHandle (a detached, aborted G). The
/// G is polled at most once (abort before the M popped it: never); the future is dropped once;
/// the output, if produced, is dropped once, by the M (no join interest left) or by the
/// handle's drop (complete first); the G is freed.
#[test]
fn loom_g_complete_vs_abort_then_drop() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let jh = spawn(&sh, READY, &counts);
        let m = spawn_m(&sh);
        jh.abort();
        drop(jh);
        let runs = m.join().unwrap() + settle(&sh).0;
        assert_eq!(runs, 1, "an aborted queued G is run once (to drop its future)");
        let polls = counts.polls();
        assert!(polls <= 1);
        counts.assert_dropped_once(polls == 1);
        assert_freed(sh);
    });
}

/// A JoinHandle aborts its G then polls it, while an M runs the G (`script`): the poll returns
/// the output (the G completed before the abort took effect) or `Cancelled` (it never was
/// polled, or was waiting); a `Pending` poll is woken; exactly one outcome is ever seen.
fn abort_then_poll(script: Script) {
    model(move || {
        let sh = shared();
        let counts = Counts::new();
        let mut jh = spawn(&sh, script, &counts);
        let m = spawn_m(&sh);
        jh.abort();
        let (flag, w) = Flag::new();
        let first = poll_join(&mut jh, &w);
        drop(w);
        m.join().unwrap();
        let (_, cancelled_at_shutdown) = settle(&sh);
        assert_eq!(cancelled_at_shutdown, 0, "an aborted G finishes without shutdown's help");
        let out = match first {
            Poll::Ready(r) => r,
            Poll::Pending => {
                assert!(flag.woken(), "a JoinHandle that returned Pending was never woken");
                poll_complete(&mut jh)
            }
        };
        let polls = counts.polls();
        let produced = match out {
            Ok(o) => {
                assert_eq!(script.ready_at, Some(0));
                assert_eq!(polls, 1);
                drop(o);
                true
            }
            Err(e) => {
                assert!(e.is_cancelled(), "{e}");
                if script.ready_at == Some(0) {
                    assert_eq!(polls, 0, "a G that completes at its first poll was cancelled after it");
                }
                false
            }
        };
        drop(jh);
        counts.assert_dropped_once(produced);
        assert_eq!(StdArc::strong_count(&flag), 1, "the join waker was not dropped");
        assert_freed(sh);
    });
}

/// [`abort_then_poll`] with a G that completes at its first poll.
#[test]
fn loom_g_complete_vs_abort_then_poll() {
    abort_then_poll(READY);
}

/// [`abort_then_poll`] with a G that waits forever: the abort catches it queued (cancel at pop),
/// running (cancel after its poll) or waiting (abort queues it); the result is `Cancelled`.
#[test]
fn loom_g_pending_vs_abort_then_poll() {
    abort_then_poll(PENDING);
}

/// Two threads abort the same G (through a shared `&JoinHandle`) while an M polls it; the G
/// waits forever otherwise. `CANCELLED` is set once and the G is queued at most once for its
/// cancellation: at most one run to poll it plus at most one run to drop its future. The
/// JoinHandle then sees `Cancelled`.
#[test]
fn loom_g_two_aborts() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let jh = Arc::new(spawn(&sh, PENDING, &counts));
        let m = spawn_m(&sh);
        let other = {
            let jh = jh.clone();
            thread::spawn(move || jh.abort())
        };
        jh.abort();
        other.join().unwrap();
        let runs = m.join().unwrap();
        let (more, cancelled) = settle(&sh);
        assert_eq!(cancelled, 0, "an abort was lost");
        let polls = counts.polls();
        assert!(polls <= 1);
        // One run, if an abort came before the poll (cancel at pop) or during it (cancel after
        // it); two if the poll came first and an abort queued the waiting G. Never three.
        assert!(runs + more <= 1 + polls, "the G was queued more than once for its cancellation");
        let mut jh = Arc::try_unwrap(jh).unwrap_or_else(|_| panic!("the JoinHandle is still shared"));
        assert!(poll_complete(&mut jh).unwrap_err().is_cancelled());
        drop(jh);
        counts.assert_dropped_once(false);
        assert_freed(sh);
    });
}

/// The JoinHandle polls with one waker, then (if still pending) with another, while the G
/// completes: the join waker slot changes hands (`set_join_waker`, `unset_join_waker`, the M's
/// wake and hand-back) without a data race, and whichever waker is registered last is woken.
#[test]
fn loom_g_join_poll_twice_vs_complete() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let mut jh = spawn(&sh, READY, &counts);
        let m = spawn_m(&sh);
        let (fa, wa) = Flag::new();
        let (fb, wb) = Flag::new();
        let mut out = None;
        let mut last = None;
        for (f, w) in [(&fa, &wa), (&fb, &wb)] {
            match poll_join(&mut jh, w) {
                Poll::Ready(r) => {
                    out = Some(r);
                    break;
                }
                Poll::Pending => last = Some(f),
            }
        }
        drop((wa, wb));
        m.join().unwrap();
        assert_eq!(settle(&sh), (0, 0));
        let out = match out {
            Some(r) => r,
            None => {
                assert!(last.unwrap().woken(), "the last registered join waker was not woken");
                poll_complete(&mut jh)
            }
        };
        drop(out.expect("the G returned"));
        drop(jh);
        counts.assert_dropped_once(true);
        assert_eq!(StdArc::strong_count(&fa), 1, "a join waker leaked");
        assert_eq!(StdArc::strong_count(&fb), 1, "a join waker leaked");
        assert_freed(sh);
    });
}

/// The JoinHandle registers a waker and is then dropped while the G completes: either the
/// handle takes the slot back (the M then drops the output) or the M wakes the waker and hands
/// the slot back to a handle that is gone (the M then empties it). The output is dropped
/// exactly once and the waker is not leaked.
#[test]
fn loom_g_join_poll_then_drop_vs_complete() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let mut jh = spawn(&sh, READY, &counts);
        let m = spawn_m(&sh);
        let (flag, w) = Flag::new();
        if let Poll::Ready(r) = poll_join(&mut jh, &w) {
            drop(r.expect("the G returned"));
        }
        drop(w);
        drop(jh);
        m.join().unwrap();
        assert_eq!(settle(&sh), (0, 0));
        counts.assert_dropped_once(true);
        assert_eq!(StdArc::strong_count(&flag), 1, "the join waker leaked");
        assert_freed(sh);
    });
}

#[derive(Clone, Copy)]
enum WakeBy {
    Val,
    Ref,
}

fn wake(w: Waker, by: WakeBy) {
    match by {
        WakeBy::Val => w.wake(),
        WakeBy::Ref => {
            w.wake_by_ref();
            drop(w);
        }
    }
}

/// A waker the future cloned during its first poll wakes the G from another thread, while
/// that poll may still be running (the wake is remembered and the M re-queues the G) or after
/// it returned Pending (the waker queues it). Meanwhile the JoinHandle is polled. The G is
/// polled exactly twice, its output reaches the JoinHandle, and the G is freed.
fn wake_during_poll(by: WakeBy) {
    model(move || {
        let sh = shared();
        let counts = Counts::new();
        let mut jh = spawn(&sh, STASH_THEN_READY, &counts);
        let m = spawn_m(&sh);
        let waker = {
            let counts = counts.clone();
            thread::spawn(move || wake(take_stashed(&counts), by))
        };
        let (flag, w) = Flag::new();
        let first = poll_join(&mut jh, &w);
        drop(w);
        let runs = m.join().unwrap();
        waker.join().unwrap();
        let (more, cancelled) = settle(&sh);
        assert_eq!(cancelled, 0, "the wake was lost");
        assert_eq!(runs + more, 2, "one wake, one more run");
        assert_eq!(counts.polls(), 2);
        let out = match first {
            Poll::Ready(r) => r,
            Poll::Pending => {
                assert!(flag.woken(), "a pending JoinHandle was not woken");
                poll_complete(&mut jh)
            }
        };
        drop(out.expect("the G returned"));
        drop(jh);
        counts.assert_dropped_once(true);
        assert_freed(sh);
    });
}

/// [`wake_during_poll`] with `Waker::wake` (the waker's reference becomes the queue's).
#[test]
fn loom_g_wake_during_poll() {
    wake_during_poll(WakeBy::Val);
}

/// [`wake_during_poll`] with `Waker::wake_by_ref` (the queue takes a new reference).
#[test]
fn loom_g_wake_by_ref_during_poll() {
    wake_during_poll(WakeBy::Ref);
}

/// A waker cloned by the future outlives it: the G completes at its first poll while another
/// thread wakes it and the JoinHandle is dropped. A wake during the poll marks it notified but
/// completion wins; a wake after completion does nothing. The G never runs again, and the last
/// of the three references (M, waker, JoinHandle) frees it, wherever it is dropped.
fn wake_vs_completion(by: WakeBy) {
    model(move || {
        let sh = shared();
        let counts = Counts::new();
        let jh = spawn(&sh, STASH_AND_READY, &counts);
        let m = spawn_m(&sh);
        let waker = {
            let counts = counts.clone();
            thread::spawn(move || wake(take_stashed(&counts), by))
        };
        drop(jh);
        let runs = m.join().unwrap();
        waker.join().unwrap();
        let (more, cancelled) = settle(&sh);
        assert_eq!((runs + more, cancelled), (1, 0), "a wake after completion re-queued the G");
        assert_eq!(counts.polls(), 1);
        counts.assert_dropped_once(true);
        assert_freed(sh);
    });
}

/// [`wake_vs_completion`] with `Waker::wake`.
#[test]
fn loom_g_wake_vs_completion() {
    wake_vs_completion(WakeBy::Val);
}

/// [`wake_vs_completion`] with `Waker::wake_by_ref`, then the waker's drop.
#[test]
fn loom_g_wake_by_ref_vs_completion() {
    wake_vs_completion(WakeBy::Ref);
}

/// Two wakers of one G fire concurrently, during or after its first poll: `NOTIFIED` lets only
/// one of them queue it, so the G runs exactly twice (no double enqueue, no lost wake-up).
#[test]
fn loom_g_two_wakes_one_enqueue() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let jh = spawn(&sh, STASH_TWO_THEN_READY, &counts);
        let m = spawn_m(&sh);
        let wakers: Vec<_> = [WakeBy::Val, WakeBy::Ref]
            .into_iter()
            .map(|by| {
                let counts = counts.clone();
                thread::spawn(move || wake(take_stashed(&counts), by))
            })
            .collect();
        let runs = m.join().unwrap();
        for w in wakers {
            w.join().unwrap();
        }
        let (more, cancelled) = settle(&sh);
        assert_eq!((runs + more, cancelled), (2, 0));
        assert_eq!(counts.polls(), 2);
        drop(poll_complete(&mut { jh }).expect("the G returned"));
        counts.assert_dropped_once(true);
        assert_freed(sh);
    });
}

/// Shutdown against a wake from a thread outside the runtime: a waiting G is claimed by the
/// runtime's shutdown sequence (`close_and_drain` of all Gs, then the global queue's drain,
/// as `Runtime::shutdown` does them) while a waker it handed out fires. The future is dropped
/// once, the G is never polled again, the JoinHandle sees `Cancelled`, and the G is freed.
///
/// With `drain_before_join`, the global queue is drained while the waker may still be running,
/// exactly as `Runtime::shutdown` does it; otherwise only after the waker thread is done.
fn shutdown_vs_wake(drain_before_join: bool) {
    model(move || {
        let sh = shared();
        let counts = Counts::new();
        let mut jh = spawn(&sh, STASH_FOREVER, &counts);
        // The first poll, on this thread: the G now waits, its waker in the stash.
        assert_eq!(run_queued(&sh), 1);
        let waker = {
            let counts = counts.clone();
            thread::spawn(move || wake(take_stashed(&counts), WakeBy::Val))
        };
        // Runtime::shutdown, minus the joining of Ms (there are none).
        sh.begin_shutdown();
        loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: no M runs, and each G comes with the list's (or the queue's) reference.
        sh.allgs.close_and_drain(|gp| unsafe { g::shutdown(gp) });
        // SAFETY: as above, for the Gs drained from the global queue.
        let release = |gp| unsafe { g::drop_ref(gp) };
        if drain_before_join {
            sh.global.drain(release);
            waker.join().unwrap();
        } else {
            waker.join().unwrap();
            sh.global.drain(release);
        }
        assert_eq!(counts.polls(), 1);
        assert!(poll_complete(&mut jh).unwrap_err().is_cancelled());
        drop(jh);
        counts.assert_dropped_once(false);
        assert_freed(sh);
    });
}

/// [`shutdown_vs_wake`], the queue drained after the waker is done: shutdown's claim of the
/// waiting G (`transition_to_shutdown`) against the wake's `NOTIFIED` transition.
#[test]
fn loom_g_shutdown_claim_vs_wake() {
    shutdown_vs_wake(false);
}

/// [`shutdown_vs_wake`] as `Runtime::shutdown` really orders it: the waker's
/// `transition_to_notified_by_val` returns `Submit`, shutdown claims and completes the G and
/// drains the global queue, and only then does the waker push the G. The queue reference must
/// not leak then (and with it the runtime's `Shared`): `runqput` drains the global queue itself
/// when it sees the shutdown flag after its push.
#[test]
fn loom_g_shutdown_vs_foreign_wake() {
    shutdown_vs_wake(true);
}

/// The first clone of the waker takes over the M's reference (`RunRef::Lent`), and the G is
/// aborted and woken by that clone while it may still be polled: the abort finds it queued
/// (it is cancelled at its pop, never polled), running
/// (the M takes a reference back to cancel it), queued, or waiting (the abort queues it with a
/// reference of its own); the clone's wake drops the reference it holds or hands it to the run
/// queue. The future is dropped once, the JoinHandle sees `Cancelled`, and the G is freed.
#[test]
fn loom_g_lent_reference_vs_abort_and_wake() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let mut jh = spawn(&sh, STASH_FOREVER, &counts);
        let m = spawn_m(&sh);
        let waker = {
            let counts = counts.clone();
            thread::spawn(move || take_stashed_or_none(&counts).map(|w| wake(w, WakeBy::Val)))
        };
        jh.abort();
        let runs = m.join().unwrap();
        // An abort before the poll cancels the G at its pop: nothing is ever stashed.
        counts.close_stash();
        waker.join().unwrap();
        let (more, cancelled) = settle(&sh);
        assert_eq!(cancelled, 0, "an aborted G finishes without shutdown's help");
        assert!(runs + more <= 2, "the G was queued twice");
        assert!(poll_complete(&mut jh).unwrap_err().is_cancelled());
        drop(jh);
        counts.assert_dropped_once(false);
        assert_freed(sh);
    });
}

/// A G wakes itself by reference during its first poll (as `yield_now` does: a note on the
/// polling thread, not a CAS) after the first clone of its waker took over the M's reference,
/// while another thread wakes it through that clone. The poll's end re-queues it with a
/// reference taken back in the same CAS; the clone's wake finds it running, queued or complete
/// and drops its own. The G runs exactly twice and is freed.
#[test]
fn loom_g_self_wake_with_lent_reference() {
    model(|| {
        let sh = shared();
        let counts = Counts::new();
        let jh = spawn(&sh, STASH_YIELD_THEN_READY, &counts);
        let m = spawn_m(&sh);
        let waker = {
            let counts = counts.clone();
            thread::spawn(move || wake(take_stashed(&counts), WakeBy::Val))
        };
        let runs = m.join().unwrap();
        waker.join().unwrap();
        let (more, cancelled) = settle(&sh);
        assert_eq!((runs + more, cancelled), (2, 0), "a wake was lost or doubled");
        assert_eq!(counts.polls(), 2);
        drop(poll_complete(&mut { jh }).expect("the G returned"));
        counts.assert_dropped_once(true);
        assert_freed(sh);
    });
}
