//! Reproductions of goro bugs that are not fixed yet, each `#[ignore]`d so that `cargo test`
//! stays green; each fails (never hangs) until its bug is fixed, then passes:
//!
//! ```sh
//! cargo test --release --test known_bugs -- --ignored --nocapture
//! ```

mod common;

use common::watchdog;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// **Bug (open): a G returning from `goro::syscall` is starved while no P ever goes idle.**
/// Found by `tests/soak.rs`'s mixed soak, whose busy Gs now pause (`PACE`) to dodge it.
///
/// One P, one unbuffered ping-pong pair (two Gs that park and wake each other forever, which Go
/// schedules fairly), and a G that calls `goro::syscall(|| thread::sleep(500 µs))` 100 times.
/// The first call that outlasts a sysmon tick has its P retaken and handed to the ping-pong;
/// on return, `exitsyscall_slow` (crates/runtime/src/syscall.rs) finds no idle P and parks
/// its M in `syscall_waiters` until `pidleput` frees one, which never happens: the pair
/// always has work, and nothing (sysmon, the scheduler) ever takes the P away for the waiter.
/// Observed: `syscalls=0`, `preemptions=0`, `global_runq=0`, `local_runq=0` for as long as it
/// runs. With 2 Ps and 2 pairs the same happens after the first call. Busy Gs that
/// `yield_now` (a `sync::Map` churn loop) starve it just the same; Gs that sleep do not. In the
/// soak, the main G's `sleep(50 ms)` never returned either (the waiting M was, it seems, the
/// `block_on` thread, which the main G needs). Go queues the returning G on the global run queue instead (`exitsyscall0`),
/// which the P polls every 61 ticks and after sysmon's 10 ms preemption.
///
/// The test fails (rather than hangs) after 20 s; it passes once the bug is fixed.
#[test]
#[ignore = "goro bug: a G returning from syscall() waits forever for a P while others stay busy"]
fn syscall_return_starved_by_busy_gs() {
    let _w = watchdog("syscall_return_starved_by_busy_gs", Duration::from_secs(120));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    std::thread::spawn(move || {
        let rt = goro::Builder::new().max_procs(1).build().expect("build runtime");
        rt.block_on(async move {
            let stop = Arc::new(AtomicBool::new(false));
            let (a_tx, a_rx) = goro::chan::<u64>(0);
            let (b_tx, b_rx) = goro::chan::<u64>(0);
            let ponger = goro::go(async move {
                while let Some(v) = a_rx.recv().await {
                    let _ = b_tx.send(v).await;
                }
            });
            let s = stop.clone();
            let pinger = goro::go(async move {
                let mut n = 0;
                while !s.load(SeqCst) {
                    a_tx.send(n).await.unwrap();
                    b_rx.recv().await.unwrap();
                    n += 1;
                }
            });
            goro::go(async move {
                for _ in 0..100 {
                    goro::syscall(|| std::thread::sleep(Duration::from_micros(500)));
                    c.fetch_add(1, SeqCst);
                }
            })
            .await
            .unwrap();
            stop.store(true, SeqCst);
            pinger.await.unwrap();
            ponger.await.unwrap();
        });
        let _ = done_tx.send(());
    });
    if done_rx.recv_timeout(Duration::from_secs(20)).is_err() {
        panic!(
            "after 20 s, {} of 100 syscalls returned: the G returning from goro::syscall never got a P back",
            calls.load(SeqCst)
        );
    }
}

/// **Bug (open): a value can reappear in a channel after its receivers were told it is closed
/// and drained.** Found by `tests/soak.rs`'s MPMC soak (rounds closed early, with consumer Gs
/// aborted at random), which now counts such "stranded" values instead of failing.
///
/// A receive future is handed a value by a sender (whose `send` returns `Ok`), the channel is
/// closed, another receiver sees `Closed` (closed and drained: a `while let Some(v) =
/// rx.recv().await` loop ends there), and then the first receive future is dropped: it gives
/// the value back to the channel (as documented), where nobody is left to receive it. A value
/// whose send succeeded is then lost to every consumer that trusted `None`. Go has no such
/// state (a receive cannot be cancelled once matched). Plain threads and hand-polled futures
/// make it deterministic; no runtime is needed.
#[test]
#[ignore = "goro bug: a cancelled receive gives its value back to a channel already reported drained"]
fn stranded_value_after_close() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let (tx, rx) = goro::chan::<u32>(0);
    let other = rx.clone();
    let mut recv = Box::pin(rx.recv());
    assert!(recv.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    tx.try_send(7).expect("handed to the parked receive");
    assert!(tx.close());
    assert!(matches!(other.try_recv(), Err(goro::chan::TryRecvError::Closed)), "closed and drained");
    drop(recv); // the handed value goes back to the channel
    let again = other.try_recv();
    assert!(
        matches!(again, Err(goro::chan::TryRecvError::Closed)),
        "a channel reported closed and drained holds a value again: {again:?}"
    );
}
