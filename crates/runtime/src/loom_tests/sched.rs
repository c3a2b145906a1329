//! The whole scheduler under loom: real runtimes (`Builder::build`), `block_on` on the model's
//! main thread (M0), Gs spawned with `go` or `Runtime::spawn`, wakes from inside and outside
//! the runtime, and the runtime dropped at the end.
//!
//! These check, end to end, that no wake-up is lost in `findrunnable` / `stopm` / `wakep` /
//! `startm` / `handoffp` (a lost one is a loom deadlock: every thread parked with work left),
//! that each G runs as often as it should and its output reaches its JoinHandle, that shutdown
//! wakes and joins every M it started, and that every G is freed (loom's leak check of the
//! `loom::sync::Arc` held by each future and output).

use super::g::{take_stashed, Counts, TestFuture, READY, STASH_THEN_READY};
use super::model;
use crate::runtime::{go, Builder, Runtime};
use crate::yield_now;
use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;

fn runtime(procs: usize) -> Runtime {
    Builder::new().max_procs(procs).build().unwrap()
}

/// `block_on(async { go(...).await })` on a two-P runtime, then drop it. The spawn goes to
/// M0's `runnext` and starts a spinning M1 on the other P (`wakep` → `startm` → `newm`); either
/// M may run the G (M1 by stealing `runnext` in its last pass); M1 ends up in `stopm` and
/// shutdown must wake it.
#[test]
fn loom_sched_block_on_go() {
    model(|| {
        let rt = runtime(2);
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let v = rt.block_on(async move {
            let h = go(async move {
                r.fetch_add(1, SeqCst);
                7
            });
            h.await.unwrap()
        });
        assert_eq!(v, 7);
        drop(rt);
        assert_eq!(runs.load(SeqCst), 1);
    });
}

/// No `block_on` at all: a G spawned from a plain thread goes to the global queue and wakes an
/// M (`newm` → `mstart` → `globrunqget`), while the thread blocks in `JoinHandle::join`. Then
/// the runtime is dropped with its M asleep (or about to be) in `stopm`.
#[test]
fn loom_sched_spawn_from_outside_and_join() {
    model(|| {
        let rt = runtime(2);
        let h = rt.spawn(async { 5 });
        assert_eq!(h.join().unwrap(), 5);
        drop(rt);
    });
}

/// A G that yields once (`yield_now`: it wakes itself while running, so `g::run` hands it back
/// and the M puts it at the tail of its ring, where the other M may steal it) before it
/// returns; the main G awaits it.
#[test]
fn loom_sched_yield_now() {
    model(|| {
        let rt = runtime(2);
        let v = rt.block_on(async {
            go(async {
                yield_now().await;
                3
            })
            .await
            .unwrap()
        });
        assert_eq!(v, 3);
    });
}

/// The lost-wake-up case of Go's scheduler: a G waits (first poll Pending) with its waker handed
/// to a thread outside the runtime, and the main G waits for that G. The Ms run out of work,
/// give their Ps up and sleep in `stopm` (or are on the way there) when the outside thread wakes
/// the G: it goes to the global queue and `wakep` must get an M to run it (handing a P to a
/// sleeping M, or starting one), which completes it and wakes M0's main G.
#[test]
fn loom_sched_foreign_wake_of_waiting_g() {
    model(|| main_awaits_a_g_woken_from_outside(runtime(2)));
}

/// The main G spawns a G that waits for a wake from a thread outside the runtime, and awaits
/// it; the runtime is dropped once the main G has its output.
fn main_awaits_a_g_woken_from_outside(rt: Runtime) {
    let counts = Counts::new();
    let waker = {
        let counts = counts.clone();
        thread::spawn(move || take_stashed(&counts).wake())
    };
    let c = counts.clone();
    let out = rt.block_on(async move { go(TestFuture::new(&c, STASH_THEN_READY)).await });
    drop(out.expect("the G returned"));
    waker.join().unwrap();
    drop(rt);
    assert_eq!(counts.polls(), 2);
    counts.assert_dropped_once(true);
}

/// Two Gs woken from a thread outside the runtime (what a tokio worker answering them does)
/// while the Ms run out of work and give their Ps up. The model's thread is that outside
/// thread: it spawns both Gs (each goes to the global queue and starts an M on an idle P),
/// waits until each has stashed its waker (first poll, Pending), wakes them one after the
/// other, and joins them. Each wake pushes its G to the global queue, and `start_idle` starts
/// a non-spinning M on an idle P if it sees one (Go's `injectglist` → `startIdle`); the second
/// wake may find the first one's M still holding its P, an M still looking for work, or no P
/// idle. Both Gs must run: a G left in the global queue while every M sleeps is a loom
/// deadlock.
fn foreign_wakes_of_two_gs(rt: Runtime) {
    let (a, b) = (Counts::new(), Counts::new());
    let ha = rt.spawn(TestFuture::new(&a, STASH_THEN_READY));
    let hb = rt.spawn(TestFuture::new(&b, STASH_THEN_READY));
    take_stashed(&a).wake();
    take_stashed(&b).wake();
    drop(ha.join().expect("G a returned"));
    drop(hb.join().expect("G b returned"));
    drop(rt);
    for c in [&a, &b] {
        assert_eq!(c.polls(), 2);
        c.assert_dropped_once(true);
    }
}

/// [`foreign_wakes_of_two_gs`] on one P: the M that runs the first G (handed the P by the
/// first wake) may be anywhere between taking it and sleeping again when the second wake
/// looks for an idle P; the G it pushed must not be left behind.
#[test]
fn loom_sched_foreign_wakes_of_two_gs() {
    model(|| foreign_wakes_of_two_gs(runtime(1)));
}

/// [`foreign_wakes_of_two_gs`] with two Ps, an M for each: the two Ms race for the Gs (one
/// may take both from the global queue) and for the Ps, and a wake may start an M while the
/// other spins. Bounded at one preemption: at two, the two Ms' steal passes make the search
/// run for more than 20 minutes. (A waker preempted between reading `npidle` and pushing,
/// the lost wake-up this guards against, takes two preemptions here, one on one P: the model
/// above finds it when the read is moved before the push.)
#[test]
fn loom_sched_foreign_wakes_of_two_gs_two_ps() {
    super::model_with(|b| b.preemption_bound = Some(1), || foreign_wakes_of_two_gs(runtime(2)));
}

/// The main future itself waits on a wake from outside the runtime (the `MainState` waker): M0
/// has nothing to run, gives its P up and parks in `stopm`; the wake must get it out
/// (`main_pending` is checked under the scheduler lock before M0 sleeps, and the wake unparks
/// it), on a one-P runtime so M0 is the only M.
#[test]
fn loom_sched_foreign_wake_of_main() {
    model(|| {
        let rt = runtime(1);
        let counts = Counts::new();
        let waker = {
            let counts = counts.clone();
            thread::spawn(move || take_stashed(&counts).wake())
        };
        drop(rt.block_on(TestFuture::new(&counts, STASH_THEN_READY)));
        waker.join().unwrap();
        drop(rt);
        assert_eq!(counts.polls(), 2);
        counts.assert_dropped_once(true);
    });
}

/// The submitter's half of "No lost wake-ups" (`sched`'s module docs): the main G spawns G1,
/// which starts M1 spinning on the other P, then G2, which displaces G1 from `runnext` into
/// P0's stealable ring and calls `wakep`; then the main G blocks its thread (plain code, no
/// yield point) until G1 has run. Only M1 can run G1 now, wherever it is when the push lands:
/// still spinning (then it steals G1), or giving P1 up (then either its last look at the
/// queues sees G1, or `wakep` sees P1 idle and starts an M for it). Without `wakep`'s fence
/// both can miss, and loom finds the deadlock: M0 blocked, M1 asleep. (Go's own guarantee: a
/// runnable G never waits for its spawner's computation while a P idles.)
#[test]
fn loom_sched_wakep_while_the_spawner_blocks() {
    model(|| {
        let rt = runtime(2);
        let ran = Arc::new((loom::sync::Mutex::new(false), loom::sync::Condvar::new()));
        let r = ran.clone();
        rt.block_on(async move {
            let h1 = go(async move {
                let (m, c) = &*r;
                *m.lock().unwrap() = true;
                c.notify_one();
            });
            let h2 = go(async {});
            {
                let (m, c) = &*ran;
                let mut done = m.lock().unwrap();
                while !*done {
                    done = c.wait(done).unwrap();
                }
            }
            h1.await.unwrap();
            h2.await.unwrap();
        });
    });
}

/// Two Gs on two Ps: G1 spawns G2 from its own M (G2 goes to that P's `runnext`, possibly
/// displacing nothing, and `wakep` may start or find an M), and returns G2's output; the main
/// G awaits G1. Exercises spawning from a G, a G's JoinHandle awaited by a G (its join waker is
/// a G waker), and `ready` into `runnext` from an M.
#[test]
fn loom_sched_nested_go() {
    model(|| {
        let rt = runtime(2);
        let v = rt.block_on(async { go(async { go(async { 11 }).await.unwrap() + 1 }).await.unwrap() });
        assert_eq!(v, 12);
    });
}

/// The main G returns while a detached G it spawned still sits in its P's `runnext`: leaving
/// `block_on` hands the P off (`handoffp` sees work and `startm`s an M for it), and the runtime
/// is dropped at once, maybe while an M is running the G. The G runs at most once; its future
/// is dropped exactly once (after its poll, or by shutdown), its output once if produced, and
/// shutdown joins every M.
#[test]
fn loom_sched_detached_g_at_shutdown() {
    model(|| {
        let rt = runtime(2);
        let counts = Counts::new();
        let c = counts.clone();
        rt.block_on(async move {
            drop(go(TestFuture::new(&c, READY)));
        });
        drop(rt);
        let polls = counts.polls();
        assert!(polls <= 1);
        counts.assert_dropped_once(polls == 1);
    });
}

/// `goro::syscall` in the main G races sysmon's retake of its P: exactly one of
/// `exitsyscall`'s CAS and the retake's CAS wins, so the P is neither owned twice (the second M
/// to take its `PCore` would find the slot empty and panic) nor lost (the G spawned after the
/// syscall would never run: loom reports the deadlock).
#[test]
fn loom_sched_syscall_vs_retake() {
    model(|| {
        let rt = runtime(1);
        let sh = rt.shared().clone();
        let s2 = sh.clone();
        let sysmon = thread::spawn(move || {
            // sysmon's round, against whatever the main G is doing.
            crate::sysmon::retake_syscall(&s2, 0)
        });
        let v = rt.block_on(async {
            let x = crate::syscall(|| 40);
            // After the syscall the G still runs Gs on whatever P it got back.
            x + go(async { 2 }).await.unwrap()
        });
        assert_eq!(v, 42);
        let _ = sysmon.join().unwrap();
        drop(rt);
        // Taken back or retaken, never left in the syscall state.
        assert_ne!(sh.allp[0].status.load(SeqCst), crate::p::P_SYSCALL);
    });
}

/// At the thread limit (`Builder::max_threads`; here 0 new threads, so every `newm` is
/// refused), a P with queued work is handed off (sysmon retook it from a syscall) just as the
/// only other M, which found no work, gives its P up and goes to sleep: `startm` finds no idle
/// M yet and cannot start one. Go dies there ("thread exhaustion"); goro goes on, so the M
/// going to sleep must take the work instead. It slept for good, with the G queued on an idle
/// P and nobody left to run it (a loom deadlock).
#[test]
fn loom_sched_handoff_at_the_thread_limit_strands_nothing() {
    use crate::idle::M;
    use crate::m::{MCtx, Slice};
    use std::sync::Arc as StdArc;
    model(|| {
        let mut config = super::g::config(0);
        config.max_procs = 2;
        let sh = crate::sched::Shared::new(config, crate::m::mstart).expect("shared");
        let counts = Counts::new();
        // A G queued on P0, whose M has let it go (a syscall that sysmon retook).
        let h = {
            let ctx = MCtx::new(sh.clone(), StdArc::new(M::new()), None);
            crate::m::enter(&ctx, || {
                ctx.acquirep(sh.pidleget().expect("P0 idles"));
                // As if an M were spinning already: the spawn starts none.
                sh.idle.spinning_start();
                let h = ctx.spawn(TestFuture::new(&counts, READY), std::panic::Location::caller());
                sh.idle.spinning_stop();
                ctx.releasep().expect("held P0");
                sh.allp[0].status.store(crate::p::P_IDLE, SeqCst);
                h
            })
        };
        // The other M holds P1, has found nothing, and gives up (the end of `findrunnable`).
        let m = {
            let sh = sh.clone();
            thread::spawn(move || {
                let ctx = MCtx::new(sh.clone(), StdArc::new(M::new()), None);
                crate::m::enter(&ctx, || {
                    ctx.acquirep(sh.pidleget().expect("P1 idles"));
                    {
                        let mut idle = sh.idle.lock();
                        assert!(sh.global.is_empty());
                        let p = ctx.releasep().expect("held P1");
                        sh.pidleput_locked(&mut idle, p);
                    }
                    assert!(ctx.stopm().is_none(), "the M left stopm without a P");
                    // It holds a P: the G is in P0's queue (its own, or one to steal from).
                    let g = ctx
                        .with_core(|c| {
                            c.runq
                                .pop_runnext()
                                .or_else(|| sh.allp[0].runq.steal_into(&mut c.runq, true, || true).map(|(g, _)| g))
                        })
                        .flatten()
                        .expect("the queued G");
                    ctx.execute(g, Slice::Fresh);
                    let p = ctx.releasep().expect("held a P");
                    sh.pidleput(p);
                })
            })
        };
        // sysmon's hand-off of P0: no idle M yet, and no thread may be started.
        sh.handoffp(0);
        m.join().unwrap();
        assert_eq!(counts.polls(), 1, "the queued G did not run");
        drop(h);
        super::g::settle(&sh);
    });
}

/// `startm` hands a P to the M asleep in the netpoller before any M asleep in `stopm`
/// (`Locked::take_netpoller`). One P; a G waits on a registration, so M0, whose main G waits for
/// a second G, sleeps in the poller (not in `stopm`) once it has nothing to run; a thread
/// outside the runtime wakes the second G, which goes to the global queue and `startm`s an M
/// for the idle P: the seated M0, woken through the poller. Wherever M0 is when the wake lands
/// (still running, on its way into the poller, asleep there, or back out of it), the G must
/// run and wake the main G, and no P may be lost or handed twice (a second M taking P0's
/// `PCore` panics; a P handed to an M that never takes it is a loom deadlock).
#[test]
fn loom_sched_startm_hands_a_p_to_the_m_in_the_netpoller() {
    use crate::netpoll::{ScheduledIo, READABLE, READ_CLOSED};
    use std::sync::Arc as StdArc;
    model(|| {
        let rt = runtime(1);
        let sh = rt.shared().clone();
        let io = StdArc::new(ScheduledIo::new());
        sh.netpoll.add(&io).expect("the runtime runs");
        let (_flag, w) = super::g::Flag::new();
        assert!(sh.netpoll.poll_ready(&io, 0, READABLE | READ_CLOSED, &w).is_pending());
        main_awaits_a_g_woken_from_outside(rt);
    });
}
