//! `goro::sync::RwMutex` through the facade: Go's `src/sync/rwmutex_test.go` ported in spirit
//! (TestParallelReaders, HammerRWMutex's writer exclusion, TestRLocker's hand-offs between Gs),
//! writer preference and the order of hand-offs, cancellation of dropped lock futures, no
//! poisoning, and the three worlds: Gs on goro, plain threads, and both at once.
//!
//! Nothing sleeps to synchronize: a future that must be queued is polled by hand (it is queued
//! once `poll` returns `Pending`), and waits are bounded by the watchdog.

mod common;

use common::*;
use goro::sync::{RwMutex, RwMutexReadGuard, RwMutexWriteGuard, WaitGroup};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// TestParallelReaders: readers hold the lock at the same time
// ---------------------------------------------------------------------------------------------

/// Go's `doTestParallelReaders`: each reader takes the read lock, reports it, and keeps it until
/// the main G has seen *all* of them holding it at once.
fn parallel_readers(readers: usize, procs: usize) {
    rt(procs).block_on(async move {
        let m = Arc::new(RwMutex::new(()));
        let (locked_tx, locked_rx) = goro::chan::<()>(0);
        let (unlock_tx, unlock_rx) = goro::chan::<()>(0);
        let hs: Vec<_> = (0..readers)
            .map(|_| {
                let (m, locked, unlock) = (m.clone(), locked_tx.clone(), unlock_rx.clone());
                goro::go(async move {
                    let _r = m.read().await;
                    locked.send(()).await.unwrap();
                    unlock.recv().await.unwrap();
                })
            })
            .collect();
        for _ in 0..readers {
            locked_rx.recv().await.unwrap();
        }
        assert!(m.try_write().is_none(), "readers hold it");
        for _ in 0..readers {
            unlock_tx.send(()).await.unwrap();
        }
        for h in hs {
            h.await.unwrap();
        }
        assert!(m.try_write().is_some());
    });
}

#[test]
fn parallel_readers_gs() {
    let _w = watchdog("parallel_readers_gs", LIMIT);
    parallel_readers(1, 4);
    parallel_readers(3, 4);
    parallel_readers(4, 2);
    parallel_readers(8, 1);
}

/// The same on plain threads with `read_blocking`.
#[test]
fn parallel_readers_threads() {
    let _w = watchdog("parallel_readers_threads", LIMIT);
    let m = Arc::new(RwMutex::new(7));
    let readers = 4;
    let all_in = Arc::new(std::sync::Barrier::new(readers));
    let ts: Vec<_> = (0..readers)
        .map(|_| {
            let (m, all_in) = (m.clone(), all_in.clone());
            std::thread::spawn(move || {
                let r = m.read_blocking();
                all_in.wait(); // every reader holds it here at once
                *r
            })
        })
        .collect();
    for t in ts {
        assert_eq!(t.join().unwrap(), 7);
    }
}

// ---------------------------------------------------------------------------------------------
// HammerRWMutex: writers exclude everybody
// ---------------------------------------------------------------------------------------------

/// Go's `reader`/`writer` helpers: `activity` counts readers in units of 1 and writers in units
/// of 10_000; a reader must never see a writer, a writer must be alone.
async fn reader(m: &RwMutex<()>, activity: &AtomicI64, iters: usize) {
    for _ in 0..iters {
        let _r = m.read().await;
        let n = activity.fetch_add(1, SeqCst) + 1;
        assert!((1..10_000).contains(&n), "reader saw activity {n}");
        goro::runtime::yield_now().await;
        activity.fetch_sub(1, SeqCst);
    }
}

async fn writer(m: &RwMutex<()>, activity: &AtomicI64, iters: usize) {
    for _ in 0..iters {
        let _w = m.write().await;
        let n = activity.fetch_add(10_000, SeqCst) + 10_000;
        assert_eq!(n, 10_000, "writer saw activity {n}");
        goro::runtime::yield_now().await;
        activity.fetch_sub(10_000, SeqCst);
    }
}

fn hammer(procs: usize, gs: usize, iters: usize) {
    rt(procs).block_on(async move {
        let m = Arc::new(RwMutex::new(()));
        let activity = Arc::new(AtomicI64::new(0));
        let wg = WaitGroup::new();
        for i in 0..gs {
            let (m, a) = (m.clone(), activity.clone());
            if i % 4 == 0 {
                wg.go(async move { writer(&m, &a, iters).await });
            } else {
                wg.go(async move { reader(&m, &a, iters).await });
            }
        }
        wg.wait().await;
        assert_eq!(activity.load(SeqCst), 0);
    });
}

#[test]
fn hammer_rwmutex_gs() {
    let _w = watchdog("hammer_rwmutex_gs", LIMIT);
    hammer(1, 4, 500);
    hammer(4, 4, 500);
    hammer(4, 16, 300);
}

/// Writers and readers on plain threads and Gs at once, on shared data: every increment by a
/// writer survives, and readers never see a torn pair.
#[test]
fn hammer_rwmutex_mixed() {
    let _w = watchdog("hammer_rwmutex_mixed", LIMIT);
    const ITERS: u64 = 2_000;
    let m = Arc::new(RwMutex::new((0u64, 0u64)));
    let rt = rt(2);
    let mut gs = Vec::new();
    let mut threads = Vec::new();
    for i in 0..4 {
        let m1 = m.clone();
        gs.push(rt.spawn(async move {
            for _ in 0..ITERS {
                if i % 2 == 0 {
                    let mut w = m1.write().await;
                    w.0 += 1;
                    w.1 += 1;
                } else {
                    let r = m1.read().await;
                    assert_eq!(r.0, r.1, "torn read");
                }
            }
        }));
        let m2 = m.clone();
        threads.push(std::thread::spawn(move || {
            for _ in 0..ITERS {
                if i % 2 == 0 {
                    let mut w = m2.write_blocking();
                    w.0 += 1;
                    w.1 += 1;
                } else {
                    let r = m2.read_blocking();
                    assert_eq!(r.0, r.1, "torn read");
                }
            }
        }));
    }
    for g in gs {
        g.join().unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*m.read_blocking(), (4 * ITERS, 4 * ITERS));
}

// ---------------------------------------------------------------------------------------------
// TestRLocker: guards handed between Gs
// ---------------------------------------------------------------------------------------------

/// Go's TestRLocker: a G takes two read locks and hands them to the main G, then asks for the
/// write lock; the main G checks the writer is kept out until both read locks are gone, and that
/// the write lock keeps readers out. The guards are unlocked by a G other than their taker.
#[test]
fn rlocker_handoffs_between_gs() {
    let _w = watchdog("rlocker_handoffs_between_gs", LIMIT);
    let m: &'static RwMutex<u32> = Box::leak(Box::new(RwMutex::new(0)));
    rt(2).block_on(async move {
        const N: usize = 10;
        let (rlocked_tx, rlocked_rx) =
            goro::chan::<(RwMutexReadGuard<'static, u32>, RwMutexReadGuard<'static, u32>)>(1);
        let (wlocked_tx, wlocked_rx) = goro::chan::<RwMutexWriteGuard<'static, u32>>(1);
        let locker = goro::go(async move {
            for _ in 0..N {
                let a = m.read().await;
                let b = m.read().await; // a second read lock: fine while no writer waits
                rlocked_tx.send((a, b)).await.unwrap();
                let w = m.write().await;
                wlocked_tx.send(w).await.unwrap();
            }
        });
        for i in 0..N {
            let (a, b) = rlocked_rx.recv().await.unwrap();
            drop(a);
            // The writer cannot be in yet: `b` still holds a read lock. Let it run and try.
            for _ in 0..10 {
                goro::runtime::yield_now().await;
            }
            assert!(wlocked_rx.try_recv().is_err(), "a read lock did not keep the writer out");
            drop(b);
            let mut w = wlocked_rx.recv().await.unwrap();
            assert!(m.try_read().is_none(), "the write lock did not keep readers out");
            assert!(rlocked_rx.try_recv().is_err());
            *w += 1;
            assert_eq!(*w, i as u32 + 1);
            drop(w);
        }
        locker.await.unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// Writer preference and hand-off order
// ---------------------------------------------------------------------------------------------

/// A waiting writer keeps new readers out (Go: `readerCount` negative), and gets the lock once
/// the readers inside leave.
#[test]
fn pending_writer_blocks_new_readers() {
    let m = RwMutex::new(1);
    let r1 = m.try_read().unwrap();
    let mut w = pin!(m.write());
    assert!(poll_noop(w.as_mut()).is_pending());
    assert!(m.try_read().is_none(), "a new reader barged past the waiting writer");
    let mut r2 = pin!(m.read());
    assert!(poll_noop(r2.as_mut()).is_pending(), "a new reader barged past the waiting writer");
    drop(r1);
    let Poll::Ready(mut g) = poll_noop(w.as_mut()) else { panic!("the writer did not get the lock") };
    *g = 2;
    assert!(poll_noop(r2.as_mut()).is_pending());
    drop(g);
    let Poll::Ready(r) = poll_noop(r2.as_mut()) else { panic!("the reader did not get in") };
    assert_eq!(*r, 2);
}

/// Readers that queued while a writer held the lock all get in together when it unlocks, up to
/// the next waiting writer, which then waits for them. (FIFO: a reader that queued *after* that
/// second writer waits for it too; Go would let it in with the first batch, see the RwMutex
/// module docs.)
#[test]
fn readers_queued_behind_writer_enter_together() {
    let m = RwMutex::new(0);
    let held = m.try_write().unwrap();
    let mut r1 = pin!(m.read());
    let mut r2 = pin!(m.read());
    let mut w2 = pin!(m.write());
    let mut r3 = pin!(m.read());
    for p in [poll_noop(r1.as_mut()).is_pending(), poll_noop(r2.as_mut()).is_pending()] {
        assert!(p);
    }
    assert!(poll_noop(w2.as_mut()).is_pending());
    assert!(poll_noop(r3.as_mut()).is_pending());
    drop(held);
    let Poll::Ready(g1) = poll_noop(r1.as_mut()) else { panic!("r1 not let in") };
    let Poll::Ready(g2) = poll_noop(r2.as_mut()) else { panic!("r2 not let in") };
    assert!(poll_noop(w2.as_mut()).is_pending(), "the next writer must wait for the readers");
    assert!(poll_noop(r3.as_mut()).is_pending());
    drop((g1, g2));
    let Poll::Ready(gw) = poll_noop(w2.as_mut()) else { panic!("w2 not let in") };
    drop(gw);
    assert!(poll_noop(r3.as_mut()).is_ready());
}

/// A stream of readers cannot starve a writer: once it waits, the readers that come later wait
/// behind it, so it gets in as soon as the readers already inside are done.
#[test]
fn writer_not_starved_by_readers() {
    let _w = watchdog("writer_not_starved_by_readers", LIMIT);
    rt(4).block_on(async {
        let m = Arc::new(RwMutex::new(false));
        let wg = WaitGroup::new();
        for _ in 0..8 {
            let m = m.clone();
            wg.go(async move {
                // Readers keep coming until they see the writer's mark.
                loop {
                    let r = m.read().await;
                    if *r {
                        break;
                    }
                    drop(r);
                    goro::runtime::yield_now().await;
                }
            });
        }
        *m.write().await = true;
        wg.wait().await;
    });
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

/// A writer that gives up (its future dropped) while readers wait behind it lets them in, even
/// though a reader still holds the lock.
#[test]
fn dropped_writer_lets_readers_in() {
    let m = RwMutex::new(5);
    let held = m.try_read().unwrap();
    let mut r = pin!(m.read());
    {
        let mut w = pin!(m.write());
        assert!(poll_noop(w.as_mut()).is_pending());
        assert!(poll_noop(r.as_mut()).is_pending(), "queued behind the writer");
    }
    let Poll::Ready(g) = poll_noop(r.as_mut()) else { panic!("the reader was stranded") };
    assert_eq!((*held, *g), (5, 5));
    drop((held, g));
    assert!(m.try_write().is_some());
}

/// A lock future that was granted but dropped before it was polled again unlocks: the lock is
/// not left held.
#[test]
fn dropped_granted_lock_unlocks() {
    let m = RwMutex::new(0);
    let held = m.try_write().unwrap();
    {
        let mut w = pin!(m.write());
        let mut r = pin!(m.read());
        assert!(poll_noop(w.as_mut()).is_pending());
        assert!(poll_noop(r.as_mut()).is_pending());
        drop(held); // grants `w`, which is never polled again
    }
    assert!(m.try_write().is_some(), "a dropped granted future left the lock held");
}

/// A read future dropped by `select!`-style racing in a G, many times over, against a writer
/// that comes and goes: the lock always ends free.
#[test]
fn dropped_lock_futures_in_gs() {
    let _w = watchdog("dropped_lock_futures_in_gs", LIMIT);
    rt(4).block_on(async {
        let m = Arc::new(RwMutex::new(0u64));
        let wg = WaitGroup::new();
        for i in 0..8 {
            let m = m.clone();
            wg.go(async move {
                for _ in 0..500 {
                    // Poll the lock future once, then give up if it is not ready.
                    if i % 2 == 0 {
                        let mut f = pin!(m.write());
                        let got = std::future::poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx))).await;
                        if let Poll::Ready(mut g) = got {
                            *g += 1;
                        }
                    } else {
                        let mut f = pin!(m.read());
                        let _ = std::future::poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx))).await;
                    }
                    goro::runtime::yield_now().await;
                }
            });
        }
        wg.wait().await;
        assert!(m.try_write().is_some());
    });
}

// ---------------------------------------------------------------------------------------------
// The rest of the API
// ---------------------------------------------------------------------------------------------

/// No poisoning: a panic with the write guard held unlocks, and the data is as it was left.
#[test]
fn no_poisoning() {
    let m = RwMutex::new(vec![1]);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut w = m.write_blocking();
        w.push(2);
        panic!("while writing");
    }));
    assert!(r.is_err());
    assert_eq!(*m.read_blocking(), [1, 2]);
    assert!(m.try_write().is_some());
}

#[test]
fn try_lock_get_mut_into_inner_default_debug() {
    let mut m: RwMutex<Vec<u8>> = RwMutex::default();
    m.get_mut().push(1);
    {
        let w = m.try_write().unwrap();
        assert!(m.try_write().is_none());
        assert!(m.try_read().is_none());
        assert_eq!(format!("{m:?}"), "RwMutex { data: <locked> }");
        assert_eq!(format!("{w:?}"), "[1]");
    }
    {
        let r = m.try_read().unwrap();
        let r2 = m.try_read().unwrap();
        assert!(m.try_write().is_none());
        assert_eq!(format!("{m:?}"), "RwMutex { data: [1] }");
        assert_eq!(*r, *r2);
    }
    assert_eq!(m.into_inner(), [1]);
    let s = RwMutex::from(String::from("x"));
    assert_eq!(format!("{}", s.read_blocking()), "x");
}

/// Unsized data, as with std's locks.
#[test]
fn unsized_data() {
    let m: Box<RwMutex<[u32]>> = Box::new(RwMutex::new([1, 2, 3]));
    m.write_blocking()[0] = 9;
    assert_eq!(&*m.read_blocking(), &[9, 2, 3]);
}

#[test]
fn send_sync() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<RwMutex<u32>>();
    sync::<RwMutex<u32>>();
    send::<RwMutexReadGuard<'static, u32>>();
    sync::<RwMutexReadGuard<'static, u32>>();
    send::<RwMutexWriteGuard<'static, u32>>();
    sync::<RwMutexWriteGuard<'static, u32>>();
    // A write guard only needs `T: Send` to move (it is exclusive), like a `MutexGuard`.
    send::<RwMutexWriteGuard<'static, std::cell::Cell<u32>>>();
    // The lock futures can be held across awaits in a G.
    send::<goro::sync::futures::ReadLock<'static, u32>>();
    send::<goro::sync::futures::WriteLock<'static, u32>>();
}

/// From a plain thread while Gs hold the lock: the blocking calls wait for the Gs.
#[test]
fn blocking_calls_wait_for_gs() {
    let _w = watchdog("blocking_calls_wait_for_gs", LIMIT);
    let m: &'static RwMutex<u32> = Box::leak(Box::new(RwMutex::new(0)));
    let rt = rt(2);
    let (locked_tx, locked_rx) = goro::chan::<()>(0);
    let (release_tx, release_rx) = goro::chan::<()>(0);
    let g = rt.spawn(async move {
        let mut w = m.write().await;
        locked_tx.send(()).await.unwrap();
        release_rx.recv().await;
        *w = 42;
    });
    locked_rx.recv_blocking().unwrap();
    assert!(m.try_read().is_none());
    let t = std::thread::spawn(move || *m.read_blocking());
    drop(release_tx);
    assert_eq!(t.join().unwrap(), 42);
    g.join().unwrap();
}

#[test]
fn lock_futures_debug() {
    let m = RwMutex::new(());
    let r = m.read();
    assert!(format!("{r:?}").starts_with("ReadLock"));
    let w = m.write();
    assert!(format!("{w:?}").starts_with("WriteLock"));
    block_on_plain("read", async { drop(m.read().await) });
}
