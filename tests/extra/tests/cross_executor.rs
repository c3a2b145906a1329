//! A G and a tokio task exchanging messages over goro channels (benches/README.md, "Across
//! executors", has the figures).
//!
//! Every message from the task makes the G runnable from a thread that holds no P of the goro
//! runtime (a tokio worker). Go's rule for that case (`injectglist` with no P) is to hand the G
//! to an idle P and start one non-spinning M on it, which runs it from the global queue.
//! `wakep` in its place would wake a *spinning* M: that M finds the G, stops spinning and, as
//! the last spinner, wakes another spinning M for the P still idle, and so on; most of them
//! find nothing and go back to sleep. That wakes about 1.25 threads per message here, every one
//! a spinning M; Go's rule wakes 0.5-1, none spinning (an M still awake when the next message
//! comes takes it without a wake-up).
//!
//! The assertions count wake-ups (`Metrics::thread_wakeups`, `spinning_wakeups`), never time,
//! with wide margins: a loaded machine changes how often the sides race, not what the rule
//! does per message.

use std::time::Duration;

const ROUND_TRIPS: u64 = 2_000;
const WARM_UP: u64 = 200;

/// The G's side: `n` round trips.
async fn exchange(n: u64, tx: &goro::chan::Sender<u64>, rx: &goro::chan::Receiver<u64>) {
    for i in 0..n {
        tx.send(i).await.unwrap();
        assert_eq!(rx.recv().await, Some(i + 1));
    }
}

/// What one ping-pong of `ROUND_TRIPS` cost the goro runtime: `(thread_wakeups,
/// spinning_wakeups)`.
fn ping_pong_with_tokio(tokio_workers: usize) -> (u64, u64) {
    let tokio_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(tokio_workers).build().unwrap();
    let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let (to_task, from_g) = goro::chan::<u64>(1);
    let (to_g, from_task) = goro::chan::<u64>(1);
    let task = tokio_rt.spawn(async move {
        while let Some(i) = from_g.recv().await {
            if to_g.send(i + 1).await.is_err() {
                break;
            }
        }
    });
    let (before, after) = rt.block_on(async move {
        goro::go(async move {
            // Every M this runs on exists (and sysmon has started) before counting.
            exchange(WARM_UP, &to_task, &from_task).await;
            let before = goro::runtime::metrics();
            exchange(ROUND_TRIPS, &to_task, &from_task).await;
            (before, goro::runtime::metrics())
        })
        .await
        .unwrap()
    });
    tokio_rt.block_on(task).unwrap();
    tokio_rt.shutdown_timeout(Duration::from_secs(10));
    (after.thread_wakeups - before.thread_wakeups, after.spinning_wakeups - before.spinning_wakeups)
}

#[test]
fn a_g_woken_by_a_tokio_task_wakes_one_thread_not_a_spinning_one() {
    for workers in [1, 2] {
        let (wakeups, spinning) = ping_pong_with_tokio(workers);
        eprintln!(
            "tokio workers {workers}: {ROUND_TRIPS} round trips, {wakeups} thread wake-ups ({spinning} spinning) in the goro runtime"
        );
        // Go's rule: a non-spinning M per foreign wake. A spinning one is woken only when an M
        // that was still looking for work takes the G before the waker has handed it a P (rare).
        // With `wakep` in its place: 1.2-1.3 per message.
        assert!(
            spinning <= ROUND_TRIPS / 4,
            "{spinning} spinning Ms woken for {ROUND_TRIPS} messages from tokio (tokio workers: {workers})"
        );
        // At most one thread per message woken from outside (plus slack for sysmon hand-offs of
        // Ms descheduled mid-poll on a loaded machine).
        assert!(
            wakeups <= ROUND_TRIPS + ROUND_TRIPS / 4,
            "{wakeups} thread wake-ups for {ROUND_TRIPS} messages from tokio (tokio workers: {workers})"
        );
    }
}
