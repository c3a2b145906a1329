//! Go by Example's "Worker Pools" (gobyexample.com/worker-pools), line by line, with
//! 10_000 jobs for 100 workers instead of 5 jobs for 3, and the `sync.WaitGroup` that the
//! page suggests for waiting on the workers. The Go original:
//!
//! ```go
//! func worker(id int, jobs <-chan int, results chan<- int) {
//!     for j := range jobs {
//!         fmt.Println("worker", id, "started  job", j)
//!         time.Sleep(time.Second)
//!         fmt.Println("worker", id, "finished job", j)
//!         results <- j * 2
//!     }
//! }
//!
//! func main() {
//!     const numJobs = 5
//!     jobs := make(chan int, numJobs)
//!     results := make(chan int, numJobs)
//!
//!     for w := 1; w <= 3; w++ {
//!         go worker(w, jobs, results)
//!     }
//!
//!     for j := 1; j <= numJobs; j++ {
//!         jobs <- j
//!     }
//!     close(jobs)
//!
//!     for a := 1; a <= numJobs; a++ {
//!         <-results
//!     }
//! }
//! ```
//!
//! Each job "works" by sleeping 1 ms (Go's example sleeps a second): a sleeping G holds a
//! timer, not a thread, so 100 workers sleep at once on a couple of threads and the whole run
//! takes about `10_000 / 100 × 1 ms`. Only the first jobs' lines are printed, as in Go's
//! output; then the run checks that every job's result arrived exactly once, with the right
//! value, and prints how the jobs spread over the workers.
//!
//! ```text
//! cargo run --release --example worker_pool
//! ```

use goro::chan::{Receiver, Sender};
use goro::sync::WaitGroup;
use std::time::{Duration, Instant};

/// How many jobs (Go's example: 5).
const NUM_JOBS: u64 = 10_000;
/// How many workers (Go's example: 3).
const NUM_WORKERS: usize = 100;
/// What one job costs (Go's example: a second).
const JOB_TIME: Duration = Duration::from_millis(1);
/// Jobs up to this number print their "started"/"finished" lines, as Go's example prints all 5.
const PRINTED_JOBS: u64 = 5;

/// A result: which worker did which job, and the job's answer (`j * 2`).
#[derive(Debug)]
struct Done {
    /// The worker's id, 1-based as in Go.
    worker: usize,
    /// The job's number.
    job: u64,
    /// The job's result.
    result: u64,
}

/// Takes jobs until `jobs` is closed and drained, "works" on each, and sends its result
/// (Go's `worker`).
async fn worker(id: usize, jobs: Receiver<u64>, results: Sender<Done>) {
    while let Some(j) = jobs.recv().await {
        if j <= PRINTED_JOBS {
            println!("worker {id} started  job {j}");
        }
        goro::time::sleep(JOB_TIME).await;
        if j <= PRINTED_JOBS {
            println!("worker {id} finished job {j}");
        }
        results.send(Done { worker: id, job: j, result: j * 2 }).await.expect("main reads every result");
    }
}

/// Starts the pool, hands it the jobs, and collects and checks the results (Go's `main`).
#[goro::main]
async fn main() {
    let start = Instant::now();
    let (jobs_tx, jobs) = goro::chan::<u64>(NUM_JOBS as usize);
    let (results_tx, results) = goro::chan::<Done>(NUM_JOBS as usize);

    // Go's `for w := 1; w <= 3; w++ { go worker(w, jobs, results) }`, each G counted by the
    // WaitGroup (Go 1.25's `wg.Go`).
    let wg = WaitGroup::new();
    for w in 1..=NUM_WORKERS {
        wg.go(worker(w, jobs.clone(), results_tx.clone()));
    }
    drop(jobs);

    for j in 1..=NUM_JOBS {
        jobs_tx.send(j).await.expect("the workers are reading");
    }
    jobs_tx.close(); // Go's close(jobs): each worker's loop ends once the channel is drained.

    // Go's `go func() { wg.Wait(); close(results) }()`, done inline: `results` has room for
    // every result, so no worker can block on it while main waits.
    wg.wait().await;
    drop(results_tx); // the last sender: `results` closes, and the loop below ends once drained
    let elapsed = start.elapsed();

    let mut seen = vec![0u32; NUM_JOBS as usize + 1];
    let mut per_worker = vec![0u32; NUM_WORKERS + 1];
    let mut received = 0;
    while let Some(Done { worker, job, result }) = results.recv().await {
        assert!((1..=NUM_JOBS).contains(&job), "a result for a job never sent: {job}");
        assert_eq!(result, job * 2, "job {job}'s result is wrong");
        seen[job as usize] += 1;
        per_worker[worker] += 1;
        received += 1;
    }
    println!("...");
    println!(
        "{NUM_JOBS} jobs of {JOB_TIME:?} on {NUM_WORKERS} worker Gs ({} Ps) in {elapsed:.1?}: {received} results",
        goro::runtime::max_procs()
    );

    let missing: Vec<u64> = (1..=NUM_JOBS).filter(|&j| seen[j as usize] == 0).collect();
    let repeated: Vec<u64> = (1..=NUM_JOBS).filter(|&j| seen[j as usize] > 1).collect();
    assert!(missing.is_empty(), "{} jobs have no result, e.g. {:?}", missing.len(), &missing[..missing.len().min(10)]);
    assert!(
        repeated.is_empty(),
        "{} jobs have several results, e.g. {:?}",
        repeated.len(),
        &repeated[..repeated.len().min(10)]
    );
    assert_eq!(received, NUM_JOBS);
    println!("every job's result arrived exactly once, and each is job * 2");

    // Every worker slept JOB_TIME per job, so the busiest slept at least the average share.
    let floor = JOB_TIME * (NUM_JOBS as u32).div_ceil(NUM_WORKERS as u32);
    assert!(
        elapsed >= floor,
        "{NUM_JOBS} sleeps of {JOB_TIME:?} on {NUM_WORKERS} workers took {elapsed:?} < {floor:?}"
    );
    let busy = &per_worker[1..];
    println!(
        "jobs per worker: min {}, max {} (the ideal is {}); all {NUM_WORKERS} workers took part: {}",
        busy.iter().min().unwrap(),
        busy.iter().max().unwrap(),
        NUM_JOBS / NUM_WORKERS as u64,
        busy.iter().all(|&n| n > 0)
    );
}
