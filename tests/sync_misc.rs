//! `goro::sync::{Once, Pool, semaphore::Semaphore}` through the facade: Go's `src/sync/once_test.go`
//! (TestOnce, TestOncePanic), `src/sync/pool_test.go` (TestPool: put/get, the victim cache
//! across two cleanups, TestPoolNew, TestPoolStress), and x/sync's `semaphore_test.go`
//! (TestWeighted, TestWeightedPanic, TestWeightedTryAcquire, TestLargeAcquireDoesntStarve,
//! TestAllocCancelDoesntStarve), on Gs, plain threads, and both.
//!
//! Nothing sleeps to synchronize: futures that must be queued are polled by hand, and waits are
//! bounded by the watchdog.

mod common;

use common::*;
use goro::sync::{semaphore::Semaphore, Once, Pool, WaitGroup};
use std::collections::HashSet;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn panic_of(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    panic_message(&*err)
}

// =============================================================================================
// Once
// =============================================================================================

/// Go's TestOnce: many callers, one call, and every caller returns after it.
#[test]
fn once_many_gs_and_threads() {
    let _w = watchdog("once_many_gs_and_threads", LIMIT);
    let once = Arc::new(Once::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let rt = rt(4);
    let gs: Vec<_> = (0..10)
        .map(|_| {
            let (once, calls) = (once.clone(), calls.clone());
            rt.spawn(async move {
                once.call_once(|| {
                    calls.fetch_add(1, SeqCst);
                });
                assert_eq!(calls.load(SeqCst), 1, "returned before the call");
            })
        })
        .collect();
    let ts: Vec<_> = (0..10)
        .map(|_| {
            let (once, calls) = (once.clone(), calls.clone());
            std::thread::spawn(move || {
                once.call_once(|| {
                    calls.fetch_add(1, SeqCst);
                });
                assert_eq!(calls.load(SeqCst), 1, "returned before the call");
            })
        })
        .collect();
    for g in gs {
        g.join().unwrap();
    }
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(calls.load(SeqCst), 1);
    assert!(once.is_done());
}

/// A caller that arrives while `f` runs does not return before `f` has finished.
#[test]
fn once_concurrent_caller_waits_for_f() {
    let _w = watchdog("once_concurrent_caller_waits_for_f", LIMIT);
    let once = Arc::new(Once::new());
    let finished = Arc::new(AtomicBool::new(false));
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (go_on_tx, go_on_rx) = mpsc::channel::<()>();
    let (o, f) = (once.clone(), finished.clone());
    let first = std::thread::spawn(move || {
        o.call_once(|| {
            entered_tx.send(()).unwrap();
            go_on_rx.recv().unwrap();
            f.store(true, SeqCst);
        })
    });
    entered_rx.recv().unwrap();
    assert!(!once.is_done());
    let (o, f) = (once.clone(), finished.clone());
    let second = std::thread::spawn(move || {
        o.call_once(|| panic!("f ran twice"));
        assert!(f.load(SeqCst), "call_once returned while f was still running");
    });
    go_on_tx.send(()).unwrap();
    first.join().unwrap();
    second.join().unwrap();
}

/// A G that arrives while another thread runs the action (a slow initialisation) waits as in
/// `goro::syscall`: the G queued behind it on its P runs meanwhile, and the wait is not taken
/// for a plain blocking call. Before, the thread slept on the once's lock holding the P, until
/// sysmon took the P away a time slice later, counted a blocked poll and told the user to wrap
/// "a blocking call" in `goro::syscall`; this test then failed on `blocked_polls`.
#[test]
fn once_waiter_lets_the_gs_behind_it_run() {
    let _w = watchdog("once_waiter_lets_the_gs_behind_it_run", LIMIT);
    let once = Arc::new(Once::new());
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (go_on_tx, go_on_rx) = mpsc::channel::<()>();
    let first = {
        let once = once.clone();
        std::thread::spawn(move || {
            once.call_once(|| {
                entered_tx.send(()).unwrap();
                go_on_rx.recv().unwrap();
            })
        })
    };
    entered_rx.recv().unwrap();
    let rt = rt(1);
    let body = rt.spawn(async move {
        let waiting = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (once, waiting) = (once.clone(), waiting.clone());
            goro::go(async move {
                waiting.store(true, SeqCst);
                once.call_once(|| panic!("f ran twice"));
            })
        };
        // One P: once the waiter has started, this G runs again only if the waiter's wait let
        // the P go.
        while !waiting.load(SeqCst) {
            goro::runtime::yield_now().await;
        }
        go_on_tx.send(()).unwrap();
        waiter.await.unwrap();
        assert!(once.is_done());
    });
    body.join().unwrap();
    first.join().unwrap();
    assert_eq!(rt.metrics().blocked_polls, 0, "a wait in call_once was taken for a blocked poll");
}

/// Go's TestOncePanic: a panicking `f` counts as done; the panic reaches the caller; later calls
/// do nothing.
#[test]
fn once_panic_counts_as_done() {
    let once = Once::new();
    assert_eq!(panic_of(|| once.call_once(|| panic!("failed"))), "failed");
    assert!(once.is_done());
    once.call_once(|| panic!("Once.Do called twice"));
}

#[test]
fn once_static_default_debug() {
    static ONCE: Once = Once::new();
    assert_eq!(format!("{ONCE:?}"), "Once { done: false }");
    let mut n = 0;
    ONCE.call_once(|| n += 1);
    ONCE.call_once(|| n += 1);
    assert_eq!(n, 1);
    assert_eq!(format!("{ONCE:?}"), "Once { done: true }");
    assert!(!Once::default().is_done());
}

// =============================================================================================
// Pool
// =============================================================================================

/// Go's TestPool on one (plain) thread: LIFO-ish reuse, then the victim cache keeps values alive
/// across one cleanup and the second drops them.
#[test]
fn pool_put_get_and_victim() {
    let p = Pool::new(|| "new");
    assert_eq!(p.get(), "new");
    p.put("a");
    p.put("b");
    assert_eq!(p.get(), "a"); // the private slot first, as in Go
    assert_eq!(p.get(), "b");
    assert_eq!(p.get(), "new");
    for _ in 0..100 {
        p.put("c");
    }
    p.clear(); // Go's first GC: the values move to the victim cache
    assert_eq!(p.get(), "c");
    p.clear(); // the second GC drops the victim cache
    assert_eq!(p.get(), "new");
}

/// Go's TestPoolNew: `new` is called exactly when nothing is cached.
#[test]
fn pool_new_called_when_empty() {
    let made = Arc::new(AtomicUsize::new(0));
    let m = made.clone();
    let p = Pool::new(move || m.fetch_add(1, SeqCst) + 1);
    assert_eq!(p.get(), 1);
    assert_eq!(p.get(), 2);
    p.put(42);
    assert_eq!(p.get(), 42);
    assert_eq!(p.get(), 3);
    assert_eq!(made.load(SeqCst), 3);
}

/// Values are never lost without being dropped: every value put is dropped exactly once, by a
/// second `clear`, or with the pool.
#[test]
fn pool_drops_every_value_exactly_once() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    let p = Pool::new(move || DropCount(d.clone()));
    for _ in 0..10 {
        p.put(DropCount(dropped.clone()));
    }
    p.clear();
    assert_eq!(dropped.load(SeqCst), 0, "the victim cache keeps them");
    p.clear();
    assert_eq!(dropped.load(SeqCst), 10);
    for _ in 0..5 {
        p.put(DropCount(dropped.clone()));
    }
    p.clear(); // 5 in the victim cache
    p.put(DropCount(dropped.clone())); // 1 in a primary cache
    drop(p);
    assert_eq!(dropped.load(SeqCst), 16);
}

/// A value put by a G on a P is found by a plain thread once it sits in that P's shared queue
/// (the steal step), and the victim cache is shared by everybody.
#[test]
fn pool_steal_from_another_slot() {
    let _w = watchdog("pool_steal_from_another_slot", LIMIT);
    let p = Arc::new(Pool::new(|| 0));
    let p2 = p.clone();
    rt(2).block_on(async move {
        // One synchronous stretch: both puts land on this G's P (private, then shared).
        p2.put(1);
        p2.put(2);
    });
    assert_eq!(p.get(), 2, "steals the shared value of the G's P");
    p.clear();
    assert_eq!(p.get(), 1, "the private value went to the victim cache");
    assert_eq!(p.get(), 0);
}

/// Go's TestPoolStress in spirit: many Gs (and threads) get and put at once. A value is never
/// handed to two users at a time, and none is lost (all are accounted for at the end).
#[test]
fn pool_stress_exclusive_values() {
    let _w = watchdog("pool_stress_exclusive_values", LIMIT);
    const USERS: usize = 8;
    const ITERS: usize = 2_000;
    let made = Arc::new(AtomicUsize::new(0));
    let in_use = Arc::new(Mutex::new(HashSet::new()));
    let m = made.clone();
    let pool = Arc::new(Pool::new(move || m.fetch_add(1, SeqCst)));
    let use_one = {
        let (pool, in_use) = (pool.clone(), in_use.clone());
        move || {
            let v = pool.get();
            assert!(in_use.lock().unwrap().insert(v), "value {v} handed out twice");
            in_use.lock().unwrap().remove(&v);
            pool.put(v);
        }
    };
    let rt = rt(4);
    let gs: Vec<_> = (0..USERS)
        .map(|_| {
            let use_one = use_one.clone();
            rt.spawn(async move {
                for i in 0..ITERS {
                    use_one();
                    if i % 16 == 0 {
                        goro::runtime::yield_now().await;
                    }
                }
            })
        })
        .collect();
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let use_one = use_one.clone();
            std::thread::spawn(move || {
                for _ in 0..ITERS {
                    use_one();
                }
            })
        })
        .collect();
    for g in gs {
        g.join().unwrap();
    }
    for t in ts {
        t.join().unwrap();
    }
    // Every value ever made is still in the pool: take them all back (from this thread: the
    // per-P private slots are not stealable, so clear moves everything to the victim cache).
    pool.clear();
    let n = made.load(SeqCst);
    let mut back: Vec<usize> = (0..n).map(|_| pool.get()).collect();
    back.sort_unstable();
    assert_eq!(back, (0..n).collect::<Vec<_>>(), "a value was lost or duplicated");
}

#[test]
fn pool_send_sync_debug() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Pool<Vec<u8>>>();
    assert_send_sync::<Pool<std::cell::Cell<u8>>>(); // values move between threads, never shared
    let p = Pool::new(|| 0u8);
    assert!(format!("{p:?}").starts_with("Pool"));
}

// =============================================================================================
// Semaphore
// =============================================================================================

/// x/sync's TestWeighted: many Gs acquire random weights up to the size and release them; the
/// sum held never exceeds the size.
#[test]
fn semaphore_weighted_hammer() {
    let _w = watchdog("semaphore_weighted_hammer", LIMIT);
    const SIZE: usize = 8;
    rt(4).block_on(async {
        let sem = Arc::new(Semaphore::new(SIZE));
        let held = Arc::new(AtomicUsize::new(0));
        let wg = WaitGroup::new();
        for g in 0..16 {
            let (sem, held) = (sem.clone(), held.clone());
            wg.go(async move {
                for i in 0..300 {
                    let k = 1 + (g * 7 + i * 3) % SIZE;
                    sem.acquire(k).await;
                    let now = held.fetch_add(k, SeqCst) + k;
                    assert!(now <= SIZE, "{now} permits held of {SIZE}");
                    goro::runtime::yield_now().await;
                    held.fetch_sub(k, SeqCst);
                    sem.release(k);
                }
            });
        }
        wg.wait().await;
        assert_eq!(sem.available(), SIZE);
    });
}

/// The same with plain threads and Gs at once.
#[test]
fn semaphore_mixed_threads_and_gs() {
    let _w = watchdog("semaphore_mixed_threads_and_gs", LIMIT);
    let sem = Arc::new(Semaphore::new(2));
    let inside = Arc::new(AtomicUsize::new(0));
    let rt = rt(2);
    let gs: Vec<_> = (0..4)
        .map(|_| {
            let (sem, inside) = (sem.clone(), inside.clone());
            rt.spawn(async move {
                for _ in 0..500 {
                    sem.acquire(1).await;
                    assert!(inside.fetch_add(1, SeqCst) < 2);
                    inside.fetch_sub(1, SeqCst);
                    sem.release(1);
                }
            })
        })
        .collect();
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let (sem, inside) = (sem.clone(), inside.clone());
            std::thread::spawn(move || {
                for _ in 0..500 {
                    sem.acquire_blocking(2);
                    assert_eq!(inside.fetch_add(2, SeqCst), 0);
                    inside.fetch_sub(2, SeqCst);
                    sem.release(2);
                }
            })
        })
        .collect();
    for g in gs {
        g.join().unwrap();
    }
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(sem.available(), 2);
}

/// x/sync's TestWeightedPanic: releasing more than held panics with x/sync's message, and the
/// semaphore is unchanged.
#[test]
fn semaphore_release_more_than_held() {
    let sem = Semaphore::new(1);
    assert_eq!(panic_of(|| sem.release(1)), "semaphore: released more than held");
    assert!(sem.try_acquire(1));
    // With a waiter queued (the slow path) too.
    let mut waiter = pin!(sem.acquire(1));
    assert!(poll_noop(waiter.as_mut()).is_pending());
    assert_eq!(panic_of(|| sem.release(2)), "semaphore: released more than held");
    sem.release(1);
    assert!(poll_noop(waiter.as_mut()).is_ready());
    sem.release(1);
    assert_eq!(sem.available(), 1);
}

/// An acquire heavier than the whole semaphore can never succeed: x/sync blocks until the
/// context is done; without a context that is a silent deadlock, so goro panics instead.
#[test]
fn semaphore_acquire_more_than_size_panics() {
    let sem = Semaphore::new(2);
    let msg = panic_of(|| drop(sem.acquire(3)));
    assert_eq!(msg, "semaphore: acquire of 3 permits exceeds the semaphore's size 2");
    assert!(!sem.try_acquire(3)); // x/sync's TryAcquire: false
    assert_eq!(sem.available(), 2);
}

/// x/sync's TestWeightedTryAcquire.
#[test]
fn semaphore_try_acquire() {
    let sem = Semaphore::new(2);
    let mut tries = Vec::new();
    sem.acquire_blocking(1);
    tries.push(sem.try_acquire(1));
    tries.push(sem.try_acquire(1));
    sem.release(2);
    tries.push(sem.try_acquire(1));
    sem.acquire_blocking(1);
    tries.push(sem.try_acquire(1));
    assert_eq!(tries, [true, false, true, false]);
}

/// FIFO: a light acquire does not barge past a queued heavy one, even though it would fit.
#[test]
fn semaphore_fifo_no_barging() {
    let sem = Semaphore::new(3);
    assert!(sem.try_acquire(2));
    let mut heavy = pin!(sem.acquire(3));
    assert!(poll_noop(heavy.as_mut()).is_pending());
    assert!(!sem.try_acquire(1), "barged past the queued acquire(3)");
    let mut light = pin!(sem.acquire(1));
    assert!(poll_noop(light.as_mut()).is_pending());
    sem.release(2);
    assert!(poll_noop(heavy.as_mut()).is_ready());
    assert!(poll_noop(light.as_mut()).is_pending());
    sem.release(3);
    assert!(poll_noop(light.as_mut()).is_ready());
    sem.release(1);
    assert_eq!(format!("{sem:?}"), "Semaphore { size: 3, available: 3, queued: false }");
}

/// x/sync's TestLargeAcquireDoesntStarve: Gs keep taking and giving back one permit each; an
/// acquire of all of them still gets through (FIFO: once it waits, the others queue behind it).
#[test]
fn semaphore_large_acquire_doesnt_starve() {
    let _w = watchdog("semaphore_large_acquire_doesnt_starve", LIMIT);
    const N: usize = 4;
    rt(4).block_on(async {
        let sem = Arc::new(Semaphore::new(N));
        let running = Arc::new(AtomicBool::new(true));
        let wg = WaitGroup::new();
        for _ in 0..N {
            let (sem, running) = (sem.clone(), running.clone());
            sem.acquire(1).await;
            wg.go(async move {
                while running.load(SeqCst) {
                    sem.release(1);
                    goro::runtime::yield_now().await;
                    sem.acquire(1).await;
                }
                sem.release(1);
            });
        }
        sem.acquire(N).await;
        running.store(false, SeqCst);
        sem.release(N);
        wg.wait().await;
        assert_eq!(sem.available(), N);
    });
}

/// x/sync's TestAllocCancelDoesntStarve: a large acquire at the front gives up (its future is
/// dropped) and the smaller acquire behind it, which fits, must then be let through.
#[test]
fn semaphore_cancelled_front_lets_next_through() {
    let sem = Semaphore::new(10);
    sem.acquire_blocking(1);
    let mut small = pin!(sem.acquire(1));
    {
        let mut big = pin!(sem.acquire(10));
        assert!(poll_noop(big.as_mut()).is_pending());
        assert!(poll_noop(small.as_mut()).is_pending(), "queued behind the big one");
    }
    assert!(poll_noop(small.as_mut()).is_ready(), "the cancelled front waiter stranded the next one");
    sem.release(2);
    assert_eq!(sem.available(), 10);
}

/// An acquire that was granted but dropped before it returned gives the permits back (and to
/// the next waiter, if any).
#[test]
fn semaphore_dropped_granted_acquire_gives_back() {
    let sem = Semaphore::new(1);
    assert!(sem.try_acquire(1));
    let mut next = pin!(sem.acquire(1));
    {
        let mut granted = pin!(sem.acquire(1));
        assert!(poll_noop(granted.as_mut()).is_pending());
        assert!(poll_noop(next.as_mut()).is_pending());
        sem.release(1); // grants `granted`, which is dropped before it is polled again
    }
    assert!(poll_noop(next.as_mut()).is_ready(), "the permit was lost");
    sem.release(1);
    assert_eq!(sem.available(), 1);
}

/// Cancellation in real Gs: acquires raced against a closing channel by hand and dropped, many
/// times over; the permits are all there at the end.
#[test]
fn semaphore_dropped_acquires_in_gs() {
    let _w = watchdog("semaphore_dropped_acquires_in_gs", LIMIT);
    rt(4).block_on(async {
        let sem = Arc::new(Semaphore::new(3));
        let wg = WaitGroup::new();
        for g in 0..8 {
            let sem = sem.clone();
            wg.go(async move {
                for i in 0..500 {
                    let k = 1 + (g + i) % 3;
                    let mut f = pin!(sem.acquire(k));
                    // One poll, then give up if not ready: the future is dropped at the end of
                    // the iteration, queued or granted.
                    let got = std::future::poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx).is_ready())).await;
                    if got {
                        sem.release(k);
                    }
                    goro::runtime::yield_now().await;
                }
            });
        }
        wg.wait().await;
        assert_eq!(sem.available(), 3);
    });
}

/// Many waiters (more than one wake batch) granted by one release.
#[test]
fn semaphore_one_release_grants_many() {
    let _w = watchdog("semaphore_one_release_grants_many", LIMIT);
    const WAITERS: usize = 100;
    let sem = Arc::new(Semaphore::new(WAITERS));
    assert!(sem.try_acquire(WAITERS));
    let rt = rt(4);
    let queued = Arc::new(Mutex::new(0usize));
    let hs: Vec<_> = (0..WAITERS)
        .map(|_| {
            let (sem, queued) = (sem.clone(), queued.clone());
            rt.spawn(async move {
                let mut f = pin!(sem.acquire(1));
                let mut first = true;
                std::future::poll_fn(|cx| {
                    let r = f.as_mut().poll(cx);
                    if first {
                        first = false;
                        *queued.lock().unwrap() += 1;
                    }
                    r
                })
                .await;
            })
        })
        .collect();
    wait_until("all acquires queued", || *queued.lock().unwrap() == WAITERS);
    sem.release(WAITERS);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(sem.available(), 0);
}

#[test]
fn semaphore_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Semaphore>();
    assert_send_sync::<goro::sync::futures::Acquire<'static>>();
    assert_send_sync::<goro::sync::futures::AcquirePermit<'static>>();
    assert_send_sync::<goro::sync::futures::AcquireOwned>();
    assert_send_sync::<goro::sync::semaphore::SemaphorePermit<'static>>();
    assert_send_sync::<goro::sync::semaphore::OwnedSemaphorePermit>();
    assert_eq!(Semaphore::new(0).size(), 0);
    assert!(Semaphore::new(0).try_acquire(0));
}

// ---- permits of aborted and cancelled Gs ----

const POOL: usize = 3;
const JOBS: usize = 12;
/// The job that never finishes, so that its G has to be aborted or cancelled.
const STUCK: usize = 4;

/// One worker of the pool: holds `permit` while it runs its job; job `STUCK` hangs (a peer that
/// never answers) after saying so.
async fn pool_worker<P>(job: usize, permit: P, stuck: Arc<Event>, done: Arc<AtomicUsize>) {
    let _permit = permit; // released when the worker ends, however it ends
    goro::runtime::yield_now().await;
    if job == STUCK {
        stuck.set();
        std::future::pending::<()>().await;
    }
    done.fetch_add(1, SeqCst);
}

/// x/sync's worker-pool example: a dispatcher takes a permit per job and hands it to the job's
/// G, and acquiring every permit at the end waits for the pool to drain. One job gets stuck and
/// the dispatcher aborts its G (`JoinHandle::abort`): its permit, held in a guard, comes back,
/// so the pool keeps its size and the final acquire returns. (With Go's pair, `release` at the
/// end of the worker never runs: see `semaphore_go_pair_loses_the_permits_of_an_aborted_g`.)
#[test]
fn semaphore_guard_returns_the_permit_of_an_aborted_worker() {
    let _w = watchdog("semaphore_guard_returns_the_permit_of_an_aborted_worker", LIMIT);
    rt(2).block_on(async {
        let sem = Arc::new(Semaphore::new(POOL));
        let (stuck, done) = (Event::new(), Arc::new(AtomicUsize::new(0)));
        let mut workers = Vec::new();
        for job in 0..JOBS {
            let permit = sem.clone().acquire_owned(1).await;
            workers.push(goro::go(pool_worker(job, permit, stuck.clone(), done.clone())));
        }
        stuck.wait().await;
        workers[STUCK].abort();
        // Drain the pool: every permit, the aborted worker's too.
        let all = sem.acquire_guard(POOL).await;
        assert_eq!(done.load(SeqCst), JOBS - 1);
        drop(all);
        for (job, w) in workers.into_iter().enumerate() {
            let r = w.await;
            assert_eq!(r.is_err(), job == STUCK, "job {job}: {r:?}");
        }
        assert_eq!(sem.available(), POOL);
    });
}

/// The same pool shut down through a context: every worker runs its job under
/// `ctx.or_done(..)` and takes its permit inside it (with `acquire_guard`); once a job is stuck
/// the dispatcher cancels the context, which drops the jobs still running or waiting for a
/// permit. Every permit comes back, and an acquirer waiting for the whole pool proceeds.
#[test]
fn semaphore_guard_returns_the_permits_of_workers_cancelled_by_or_done() {
    let _w = watchdog("semaphore_guard_returns_the_permits_of_workers_cancelled_by_or_done", LIMIT);
    rt(2).block_on(async {
        let sem = Arc::new(Semaphore::new(POOL));
        let (ctx, cancel) = goro::context::with_cancel(&goro::context::Context::background());
        let (stuck, done) = (Event::new(), Arc::new(AtomicUsize::new(0)));
        let workers: Vec<_> = (0..JOBS)
            .map(|job| {
                let (sem, ctx, stuck, done) = (sem.clone(), ctx.clone(), stuck.clone(), done.clone());
                goro::go(async move {
                    ctx.or_done(async {
                        let permit = sem.acquire_guard(1).await;
                        pool_worker(job, permit, stuck, done).await
                    })
                    .await
                })
            })
            .collect();
        stuck.wait().await;
        cancel();
        let mut cancelled = 0;
        for w in workers {
            if w.await.unwrap().is_err() {
                cancelled += 1;
            }
        }
        assert!(cancelled >= 1, "the stuck job ends by cancellation");
        assert_eq!(done.load(SeqCst) + cancelled, JOBS);
        let all = sem.acquire_guard(POOL).await;
        assert_eq!(all.permits(), POOL);
    });
}

/// Guards on plain threads and through `try_acquire_guard`, and `forget`, which keeps the
/// permits held like Go's `acquire`.
#[test]
fn semaphore_guards_blocking_try_and_forget() {
    let _w = watchdog("semaphore_guards_blocking_try_and_forget", LIMIT);
    let sem = Arc::new(Semaphore::new(2));
    let a = sem.acquire_guard_blocking(1);
    let b = sem.clone().acquire_owned_blocking(1);
    assert!(sem.try_acquire_guard(1).is_none());
    assert!(sem.clone().try_acquire_owned(1).is_none());
    let t = std::thread::spawn(move || drop(b)); // an owned permit released on another thread
    t.join().unwrap();
    let c = sem.try_acquire_guard(1).expect("b's permit is back");
    assert_eq!((a.permits(), c.permits()), (1, 1));
    c.forget();
    drop(a);
    assert_eq!(sem.available(), 1, "a forgotten permit stays held");
    sem.release(1);
    // A panicking holder gives its permits back too.
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _p = sem.acquire_guard_blocking(2);
        panic!("holder panics");
    }));
    assert!(r.is_err());
    assert_eq!(sem.available(), 2);
}

/// Go's pair cannot give back what an aborted G held: the permits are lost for good (the reason
/// the guards exist; the docs say which to use when).
#[test]
fn semaphore_go_pair_loses_the_permits_of_an_aborted_g() {
    let _w = watchdog("semaphore_go_pair_loses_the_permits_of_an_aborted_g", LIMIT);
    rt(2).block_on(async {
        let sem = Arc::new(Semaphore::new(2));
        let holding = Event::new();
        let h = {
            let (sem, holding) = (sem.clone(), holding.clone());
            goro::go(async move {
                sem.acquire(2).await;
                holding.set();
                std::future::pending::<()>().await;
                sem.release(2); // never runs
            })
        };
        holding.wait().await;
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
        assert_eq!(sem.available(), 0, "the aborted G's permits are gone");
        assert!(!sem.try_acquire(1));
        sem.release(2); // only someone who knows can put them back
    });
}
