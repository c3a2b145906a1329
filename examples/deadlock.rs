//! A Go program's classic mistake, ported: main waits for a result that a worker will only
//! send after it receives a job, which main never sends. Go prints
//!
//! ```text
//! fatal error: all goroutines are asleep - deadlock!
//!
//! goroutine 1 [chan receive]:
//! main.main()
//! ...
//! ```
//!
//! and exits with status 2. goro does the same, and says what each G waits on and where it was
//! spawned (`cargo run --example deadlock`; its exit status is 2):
//!
//! ```text
//! fatal error: all goroutines are asleep - deadlock!
//!
//! goroutine 1 [chan receive]:
//! main goroutine, started at examples/deadlock.rs:25:1
//!
//! goroutine 2 [chan receive]:
//! created by goroutine 1 at examples/deadlock.rs:29:5
//! ```

#[goro::main]
async fn main() {
    let (jobs_tx, jobs_rx) = goro::chan::<u32>(0);
    let (results_tx, results_rx) = goro::chan::<u32>(0);
    goro::go(async move {
        while let Some(job) = jobs_rx.recv().await {
            results_tx.send(job * 2).await.unwrap();
        }
    });
    // The bug: main waits for a result before it sends the job.
    let result = results_rx.recv().await;
    jobs_tx.send(21).await.unwrap();
    println!("{result:?}");
}
