//! The goroutine dump: `goro::runtime::goroutines()` and `dump()` name what every G waits on,
//! in Go's words, and where it came from.

mod common;

use common::{rt, watchdog, yield_until};
use goro::runtime::WaitReason;
use goro::runtime::{goroutines, Goroutine, GoroutineStatus};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// The row of G `id`, once it is parked with some reason (yields until then).
async fn parked(id: u64) -> Goroutine {
    let mut row = None;
    yield_until(&format!("G {id} to park"), || {
        row = goroutines().into_iter().find(|g| g.id == id && g.status == GoroutineStatus::Waiting);
        row.is_some()
    })
    .await;
    row.unwrap()
}

/// A future of "another crate" that never completes and says nothing about why.
struct Foreign;
impl Future for Foreign {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

/// Every goro primitive that parks a G says why, in Go's words; a G on a foreign future shows
/// `future`; the rows say where each G was spawned and by whom.
fn every_wait_reason(procs: usize) {
    let _w = watchdog("every_wait_reason", LIMIT);
    rt(procs).block_on(async {
        let (tx0, rx0) = goro::chan::<u8>(0);
        let (tx1, _rx1) = goro::chan::<u8>(0);
        let wg = goro::sync::WaitGroup::new();
        wg.add(1);
        let m = Arc::new(goro::sync::Mutex::new(()));
        let rw = Arc::new(goro::sync::RwMutex::new(()));
        let sem = Arc::new(goro::sync::semaphore::Semaphore::new(1));
        let held_m = m.lock().await;
        let mut expect: Vec<(u64, WaitReason)> = Vec::new();
        let mut handles = Vec::new();
        macro_rules! g {
            ($reason:expr, $body:expr) => {{
                let h = goro::go($body);
                expect.push((h.id(), $reason));
                handles.push(h);
            }};
        }
        {
            let rx0 = rx0.clone();
            g!(WaitReason::ChanReceive, async move {
                rx0.recv().await;
            });
        }
        {
            let tx1 = tx1.clone();
            g!(WaitReason::ChanSend, async move {
                let _ = tx1.send(1).await;
            });
        }
        // Channels of their own: the other Gs' values must not reach the select.
        let (_tx2, rx2) = goro::chan::<u8>(0);
        let (_tx3, rx3) = goro::chan::<u8>(0);
        g!(WaitReason::Select, async move {
            goro::select! {
                recv(rx2) -> _ => {},
                recv(rx3) -> _ => {},
            }
        });
        g!(WaitReason::SelectNoCases, async move {
            goro::select! {}
        });
        g!(WaitReason::ChanReceiveNilChan, async move {
            let nil: Option<&goro::chan::Receiver<u8>> = None;
            goro::select! { recv(nil) -> _ => {} }
        });
        {
            let wg = wg.clone();
            g!(WaitReason::SyncWaitGroupWait, async move { wg.wait().await });
        }
        {
            let m = m.clone();
            g!(WaitReason::SyncMutexLock, async move {
                drop(m.lock().await);
            });
        }
        g!(WaitReason::Sleep, async move { goro::time::sleep(Duration::from_secs(3600)).await });
        g!(WaitReason::Future, Foreign);
        for (id, reason) in &expect {
            let row = parked(*id).await;
            assert_eq!(row.wait_reason, Some(*reason), "G {id}: {row:?}");
            assert_eq!(row.parent, Some(0), "spawned by the main future: {row:?}");
            assert!(row.location.file().ends_with("diagnostics.rs"), "{row:?}");
        }
        // RwMutex and Semaphore waits, behind holders.
        let w = rw.write().await;
        let reader = {
            let rw = rw.clone();
            goro::go(async move {
                drop(rw.read().await);
            })
        };
        assert_eq!(parked(reader.id()).await.wait_reason, Some(WaitReason::SyncRwMutexRLock));
        drop(w);
        reader.await.unwrap();
        let r = rw.read().await;
        let writer = {
            let rw = rw.clone();
            goro::go(async move {
                drop(rw.write().await);
            })
        };
        assert_eq!(parked(writer.id()).await.wait_reason, Some(WaitReason::SyncRwMutexLock));
        drop(r);
        writer.await.unwrap();
        sem.acquire(1).await;
        let acq = {
            let sem = sem.clone();
            goro::go(async move { sem.acquire(1).await })
        };
        assert_eq!(parked(acq.id()).await.wait_reason, Some(WaitReason::SemAcquire));
        sem.release(1);
        acq.await.unwrap();
        // A join, and a nested spawn's parent.
        let outer = goro::go(async move {
            let inner = goro::go(Foreign);
            let inner_id = inner.id();
            let _ = inner.await;
            inner_id
        });
        let outer_row = parked(outer.id()).await;
        assert_eq!(outer_row.wait_reason, Some(WaitReason::Join));
        let inner_row = goroutines().into_iter().find(|g| g.parent == Some(outer.id())).expect("the inner G");
        assert_eq!(inner_row.wait_reason.unwrap_or(WaitReason::Future), WaitReason::Future);
        // The main future itself: running, as id 0.
        let me = goroutines().into_iter().find(|g| g.id == 0).expect("the main future");
        assert_eq!(me.status, GoroutineStatus::Running);
        assert_eq!(me.parent, None);
        outer.abort();
        for h in handles {
            h.abort();
        }
        drop(held_m);
        drop((tx0, tx1));
    });
}

#[test]
fn every_wait_reason_1p() {
    every_wait_reason(1);
}

#[test]
fn every_wait_reason_2p() {
    every_wait_reason(2);
}

/// A G in `goro::syscall` shows `[syscall]`. Main is a G of its own here (`rt.spawn(..).join()`,
/// as `#[goro::main]` runs it): the main future of `block_on` is polled only by its thread,
/// which also runs Gs, and the G blocked in its syscall (until main releases it) could be
/// sitting on that very thread.
#[test]
fn a_g_in_a_syscall_shows_syscall() {
    let _w = watchdog("a_g_in_a_syscall_shows_syscall", LIMIT);
    let rt = rt(2);
    rt.spawn(async {
        let barrier = Arc::new(Barrier::new(2));
        let entered = Arc::new(AtomicBool::new(false));
        let h = {
            let (barrier, entered) = (barrier.clone(), entered.clone());
            goro::go(async move {
                goro::syscall(|| {
                    entered.store(true, SeqCst);
                    barrier.wait();
                })
            })
        };
        yield_until("the G to enter its syscall", || entered.load(SeqCst)).await;
        let row = goroutines().into_iter().find(|g| g.id == h.id()).unwrap();
        assert_eq!(row.status, GoroutineStatus::Syscall, "{row:?}");
        assert_eq!(row.wait_reason, Some(WaitReason::Syscall));
        let dump = goro::runtime::dump();
        assert!(dump.contains(&format!("goroutine {} [syscall]:", h.id())), "{dump}");
        goro::syscall(|| {
            barrier.wait();
        });
        h.await.unwrap();
    })
    .join()
    .unwrap();
}

/// The dump's shape: one block per G, Go's header line, then where it was created.
#[test]
fn dump_is_in_gos_shape() {
    let _w = watchdog("dump_is_in_gos_shape", LIMIT);
    rt(2).block_on(async {
        let (_tx, rx) = goro::chan::<u8>(0);
        let parent = goro::go(async move {
            let child = goro::go(async move { rx.recv().await });
            let id = child.id();
            let _ = child.await;
            id
        });
        parked(parent.id()).await;
        yield_until("the child to park", || {
            goroutines().iter().any(|g| g.parent == Some(parent.id()) && g.status == GoroutineStatus::Waiting)
        })
        .await;
        let dump = goro::runtime::dump();
        let blocks: Vec<&str> = dump.split("\n\n").collect();
        assert!(
            blocks[0].starts_with("goroutine 0 [running]:\nmain future of block_on, called at tests/diagnostics.rs:"),
            "{dump}"
        );
        let parent_block =
            format!("goroutine {} [goroutine join]:\ncreated by the main future at tests/diagnostics.rs:", parent.id());
        assert!(blocks.iter().any(|b| b.starts_with(&parent_block)), "{dump}");
        assert!(
            blocks.iter().any(|b| b.contains("[chan receive]:\ncreated by goroutine ")
                && b.contains(&format!("goroutine {} at", parent.id()))),
            "{dump}"
        );
        parent.abort();
    });
}

/// A G woken for nothing (a spurious wake) and parked again still says why it waits: the
/// reason is set at every `Pending`, not only the first.
#[test]
fn a_repolled_g_keeps_its_reason() {
    let _w = watchdog("a_repolled_g_keeps_its_reason", LIMIT);
    rt(1).block_on(async {
        let (tx, rx) = goro::chan::<u8>(0);
        let (poke_tx, poke_rx) = goro::chan::<()>(1);
        // The G waits on a select whose other case is poked (and re-armed) repeatedly.
        let h = goro::go(async move {
            loop {
                goro::select! {
                    recv(rx) -> v => return v,
                    recv(poke_rx) -> _ => continue,
                }
            }
        });
        for _ in 0..3 {
            assert_eq!(parked(h.id()).await.wait_reason, Some(WaitReason::Select));
            poke_tx.send(()).await.unwrap();
        }
        assert_eq!(parked(h.id()).await.wait_reason, Some(WaitReason::Select));
        tx.send(9).await.unwrap();
        assert_eq!(h.await.unwrap(), Some(9));
    });
}

/// Outside a runtime, `Runtime::goroutines` sees the Gs; the wait is measured.
#[test]
fn runtime_goroutines_from_a_plain_thread() {
    let _w = watchdog("runtime_goroutines_from_a_plain_thread", LIMIT);
    let rt = rt(2);
    let (tx, rx) = goro::chan::<u8>(0);
    let h = rt.spawn(async move { rx.recv().await });
    common::wait_until("the G to park", || {
        rt.goroutines().iter().any(|g| g.id == h.id() && g.wait_reason == Some(WaitReason::ChanReceive))
    });
    let row = rt.goroutines().into_iter().find(|g| g.id == h.id()).unwrap();
    assert_eq!(row.parent, None, "spawned from a plain thread: {row:?}");
    assert!(rt.dump().contains("created outside any goroutine at tests/diagnostics.rs:"));
    tx.send_blocking(3).unwrap();
    assert_eq!(h.join().unwrap(), Some(3));
}

/// The child of [`sigquit_dumps_every_g_and_exits_2`]: `#[goro::main]`'s way (what the macro
/// expands to), parked until the parent sends SIGQUIT.
#[test]
fn case_sigquit() {
    if common::child::is_child("case_sigquit") {
        use goro::__private::{Main, RunAsG as _};
        let ready = std::env::var("GORO_TEST_READY_FILE").unwrap();
        let main = Main::new(goro::runtime::Builder::new().max_procs(2).deadlock_detection(false), async move {
            let (_tx, rx) = goro::chan::<u32>(0);
            let h = goro::go(async move { rx.recv().await });
            while goroutines().iter().all(|g| g.id != h.id() || g.status != GoroutineStatus::Waiting) {
                goro::runtime::yield_now().await;
            }
            std::fs::write(&ready, "ready").unwrap();
            std::future::pending::<()>().await;
        });
        main.run();
    }
}

/// Go's Ctrl-\: a `#[goro::main]` program prints `SIGQUIT: quit` and every G, and exits 2.
#[cfg(unix)]
#[test]
fn sigquit_dumps_every_g_and_exits_2() {
    let ready = std::env::temp_dir().join(format!("goro-sigquit-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["case_sigquit", "--exact", "--nocapture", "--test-threads=1"])
        .env("GORO_TEST_CHILD", "case_sigquit")
        .env("GORO_TEST_READY_FILE", &ready)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + common::HANG;
    while !ready.exists() {
        assert!(std::time::Instant::now() < deadline, "the child never got ready");
        std::thread::sleep(Duration::from_millis(10)); // polling a file, not synchronizing Gs
    }
    let kill = std::process::Command::new("kill").args(["-QUIT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&ready);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("SIGQUIT: quit\n\ngoroutine 1 ["), "{err}");
    assert!(err.contains("main goroutine, started at tests/diagnostics.rs:"), "{err}");
    assert!(err.contains("[chan receive]:\ncreated by goroutine 1 at tests/diagnostics.rs:"), "{err}");
}

/// A hung program that idles (every P idle, so sysmon sleeps until woken) is exactly the one a
/// user dumps with SIGQUIT: how long its Gs have waited must still count. The wait time came
/// from a clock only sysmon's rounds moved, and it stopped with them. (A G asleep for an hour
/// keeps the runtime from looking deadlocked, which would keep sysmon looking every second.)
#[test]
fn an_idle_runtime_still_counts_how_long_gs_wait() {
    let rt = rt(2);
    let (tx, rx) = goro::chan::<u32>(0);
    let h = rt.spawn(async move { rx.recv().await });
    let sleeper = rt.spawn(goro::time::sleep(Duration::from_secs(3600)));
    let waiting = || rt.goroutines().into_iter().find(|g| g.wait_reason == Some(WaitReason::ChanReceive));
    let deadline = std::time::Instant::now() + common::HANG;
    while waiting().is_none() {
        assert!(std::time::Instant::now() < deadline, "the G never parked");
        std::thread::yield_now();
    }
    // The time measured, not a synchronization: long enough for sysmon to back off and sleep.
    std::thread::sleep(Duration::from_millis(2500));
    let g = waiting().expect("the G waits on the channel");
    let waited = g.waited.expect("a waiting G has a wait time");
    assert!(waited >= Duration::from_secs(2), "a G waiting for 2.5 s in an idle runtime shows {waited:?}");
    drop(tx);
    assert_eq!(h.join().unwrap(), None);
    sleeper.abort();
}
