//! `goro::synctest`: Go's synctest tests and examples, ported, and the bubble's seeds.

use goro::synctest;
use std::time::Duration;

#[test]
fn an_hour_passes_in_no_time() {
    let real = std::time::Instant::now();
    synctest::test(async {
        let start = goro::time::now();
        let (tx, rx) = goro::chan::<&str>(0);
        goro::go!(async move {
            goro::time::sleep(Duration::from_secs(3600)).await;
            tx.send("an hour later").await.unwrap();
        });
        assert_eq!(rx.recv().await, Some("an hour later"));
        assert_eq!(goro::time::now() - start, Duration::from_secs(3600));
    });
    assert!(real.elapsed() < Duration::from_secs(30));
}

/// The order in which 80 values reach a `select!` over two channels fed by 8 Gs, in a bubble
/// with `seed`.
fn select_order(seed: u64) -> Vec<u32> {
    synctest::test_seed(seed, async {
        let (a_tx, a_rx) = goro::chan::<u32>(0);
        let (b_tx, b_rx) = goro::chan::<u32>(0);
        for g in 0..8u32 {
            let tx = if g % 2 == 0 { a_tx.clone() } else { b_tx.clone() };
            goro::go!(async move {
                for i in 0..10 {
                    tx.send(g * 100 + i).await.unwrap();
                }
            });
        }
        drop((a_tx, b_tx));
        let mut got = Vec::new();
        while got.len() < 80 {
            goro::select! {
                recv(a_rx) -> v => got.extend(v),
                recv(b_rx) -> v => got.extend(v),
            }
        }
        got
    })
}

/// The same, as a test of its own in a bubble: under `GORO_SYNCTEST_CHECK_DETERMINISM=1` (CI)
/// it runs twice and the two runs' steps are compared.
#[goro::test(synctest)]
async fn many_gs_through_a_select_replay_step_by_step() {
    let (a_tx, a_rx) = goro::chan::<u32>(0);
    let (b_tx, b_rx) = goro::chan::<u32>(4);
    let wg = goro::sync::WaitGroup::new();
    for g in 0..8u32 {
        let tx = if g % 2 == 0 { a_tx.clone() } else { b_tx.clone() };
        let wg = wg.clone();
        wg.add(1);
        goro::go!(async move {
            for i in 0..10 {
                goro::time::sleep(Duration::from_millis(u64::from(i % 3))).await;
                tx.send(g * 100 + i).await.unwrap();
            }
            wg.done();
        });
    }
    drop((a_tx, b_tx));
    let mut n = 0;
    while n < 80 {
        goro::select! {
            recv(a_rx) -> v => n += usize::from(v.is_some()),
            recv(b_rx) -> v => n += usize::from(v.is_some()),
        }
    }
    wg.wait().await;
}

#[test]
fn a_seed_replays_the_same_schedule() {
    let first = select_order(7);
    for _ in 0..5 {
        assert_eq!(select_order(7), first);
    }
    // And the seed matters: some other seed orders them differently.
    assert!((0..20).any(|s| select_order(s) != first), "every seed gave the same order");
}

#[test]
fn wait_returns_once_the_others_are_durably_blocked() {
    synctest::test(async {
        let (tx, rx) = goro::chan::<u32>(0);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        goro::go!(async move {
            let v = rx.recv().await;
            d.store(true, std::sync::atomic::Ordering::SeqCst);
            assert_eq!(v, Some(1));
        });
        synctest::wait().await;
        assert!(!done.load(std::sync::atomic::Ordering::SeqCst));
        tx.send(1).await.unwrap();
        synctest::wait().await;
        assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    });
}

#[test]
#[should_panic(expected = "deadlock: all goroutines in bubble are blocked")]
fn a_deadlocked_bubble_fails_with_gos_message() {
    synctest::test(async {
        let (_tx, rx) = goro::chan::<u32>(0);
        rx.recv().await;
    });
}

#[test]
#[should_panic(expected = "deadlock: main bubble goroutine has exited but blocked goroutines remain")]
fn a_root_that_leaves_blocked_gs_fails() {
    synctest::test(async {
        let (tx, rx) = goro::chan::<u32>(0);
        goro::go!(async move {
            rx.recv().await;
        });
        std::mem::forget(tx);
    });
}

#[test]
fn test_waits_for_every_g_to_exit() {
    let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let m = n.clone();
    synctest::test(async move {
        let (tx, rx) = goro::chan::<()>(0);
        for _ in 0..10 {
            let (m, rx) = (m.clone(), rx.clone());
            goro::go!(async move {
                rx.recv().await;
                goro::runtime::yield_now().await;
                m.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        // The root returns with every G still to run its last steps.
        tx.close();
    });
    assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 10);
}

#[test]
fn the_wall_clock_starts_in_2000() {
    synctest::test(async {
        let t = goro::time::system_now();
        assert_eq!(t.duration_since(std::time::UNIX_EPOCH).unwrap(), Duration::from_secs(946_684_800));
        goro::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(goro::time::system_now().duration_since(t).unwrap(), Duration::from_millis(1500));
    });
}

#[test]
fn a_bubbles_channel_used_outside_panics_naming_it() {
    let (tx, rx) = synctest::test(async { goro::chan::<u32>(1) });
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tx.try_send(1))).unwrap_err();
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("a channel of synctest bubble") && msg.contains("used from outside any bubble"), "{msg}");
    drop((tx, rx)); // dropping outside is no use: no panic
}

#[test]
fn a_channel_from_outside_is_not_durable() {
    // A G in the bubble waits on a channel made outside: the bubble waits for the outside
    // world instead of reporting a deadlock or moving its clock.
    let (tx, rx) = goro::chan::<u32>(0);
    let feeder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        tx.send_blocking(5).unwrap();
    });
    let got = synctest::test(async move {
        let start = goro::time::now();
        let v = rx.recv().await;
        assert_eq!(goro::time::now(), start, "the clock moved while a G waited on the outside");
        v
    });
    assert_eq!(got, Some(5));
    feeder.join().unwrap();
}

#[test]
fn a_gs_panic_fails_the_bubble() {
    let err = std::panic::catch_unwind(|| {
        synctest::test(async {
            drop(goro::go!(async { panic!("boom in a G") }));
            goro::time::sleep(Duration::from_secs(1)).await;
        })
    })
    .unwrap_err();
    let msg = err.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| err.downcast_ref::<String>().cloned());
    assert_eq!(msg.as_deref(), Some("boom in a G"));
}

#[test]
fn explore_finds_a_lost_update_and_its_seed_replays_it() {
    async fn program() {
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let wg = goro::sync::WaitGroup::new();
        for _ in 0..10 {
            let (n, wg) = (n.clone(), wg.clone());
            wg.add(1);
            goro::go!(async move {
                let v = n.load(std::sync::atomic::Ordering::SeqCst);
                goro::runtime::yield_now().await;
                n.store(v + 1, std::sync::atomic::Ordering::SeqCst);
                wg.done();
            });
        }
        wg.wait().await;
        assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 10, "lost update");
    }
    let err = std::panic::catch_unwind(|| synctest::explore(1000, program)).unwrap_err();
    let msg = err.downcast_ref::<String>().cloned().unwrap();
    assert!(msg.contains("lost update"), "{msg}");
    let seed: u64 = msg.split("GORO_SEED=").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    for _ in 0..3 {
        let replay = std::panic::catch_unwind(|| synctest::test_seed(seed, program()));
        assert!(replay.is_err(), "GORO_SEED={seed} did not replay the failure");
    }
}

#[goro::test(synctest)]
async fn the_test_attribute_runs_a_bubble() {
    let start = goro::time::now();
    let r = goro::time::timeout(Duration::from_secs(5), goro::chan::<u32>(0).1.recv()).await;
    assert!(r.is_err());
    assert_eq!(goro::time::now() - start, Duration::from_secs(5));
}

/// A G whose receive is polled again while it still waits (woken for something else, here by
/// itself) is still durably blocked on the channel: the second poll records its wait reason
/// again (the runtime clears it at every poll), so `wait` returns. Without it the G reads as
/// waiting on something outside the bubble, and `wait` never returns.
#[test]
fn a_receive_polled_again_while_waiting_stays_durably_blocked() {
    use std::future::Future;
    use std::pin::pin;
    synctest::test(async {
        let (tx, rx) = goro::chan::<u32>(0);
        let polls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = polls.clone();
        goro::go!(async move {
            let mut recv = pin!(rx.recv());
            let v = std::future::poll_fn(|cx| {
                let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let r = recv.as_mut().poll(cx);
                if n == 0 {
                    // A wake that is not the channel's: the G is polled once more, still waiting.
                    cx.waker().wake_by_ref();
                }
                r
            })
            .await;
            assert_eq!(v, Some(7));
        });
        synctest::wait().await;
        assert_eq!(polls.load(std::sync::atomic::Ordering::SeqCst), 2, "polled twice, then blocked");
        tx.send(7).await.unwrap();
    });
}
