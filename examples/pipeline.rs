//! Go's "Pipelines and cancellation" (go.dev/blog/pipelines) on goro, with a `Context` as the
//! `done` channel: `gen` → `sq` fanned out to several workers → `merge` fanned back in. `main`
//! takes a few results, then cancels; every stage notices `ctx.done()` in its `select!`, stops
//! sending, and returns, so no G is left blocked on a channel nobody reads (a goroutine leak).
//!
//! ```text
//! cargo run --example pipeline
//! ```

use goro::chan::Receiver;
use goro::context::{self, Context};
use goro::sync::WaitGroup;
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const WANT: usize = 5;

/// Emits `nums` (the blog's `gen`), until they run out or `ctx` is done.
fn gen(ctx: Context, wg: &WaitGroup, nums: impl Iterator<Item = u64> + Send + 'static) -> Receiver<u64> {
    let (tx, rx) = goro::chan(0);
    wg.go(async move {
        for n in nums {
            goro::select! {
                send(tx, n) -> r => if r.is_err() { return },
                recv(ctx.done()) -> _ => return,
            }
        }
        // `tx` drops here: the channel closes, as Go's `defer close(out)`.
    });
    rx
}

/// Squares what arrives on `input` (the blog's `sq`), until `input` closes or `ctx` is done.
fn sq(ctx: Context, wg: &WaitGroup, input: Receiver<u64>) -> Receiver<u64> {
    let (tx, rx) = goro::chan(0);
    wg.go(async move {
        while let Some(n) = input.recv().await {
            goro::select! {
                send(tx, n * n) -> r => if r.is_err() { return },
                recv(ctx.done()) -> _ => return,
            }
        }
    });
    rx
}

/// Fans `inputs` into one channel (the blog's `merge`), closed once every input is drained or
/// `ctx` is done.
fn merge(ctx: Context, wg: &WaitGroup, inputs: Vec<Receiver<u64>>) -> Receiver<u64> {
    let (tx, rx) = goro::chan(0);
    let outputs = WaitGroup::new();
    outputs.add(inputs.len() as isize);
    for input in inputs {
        let (ctx, tx) = (ctx.clone(), tx.clone());
        let output = outputs.clone();
        wg.go(async move {
            while let Some(n) = input.recv().await {
                goro::select! {
                    send(tx, n) -> r => if r.is_err() { break },
                    recv(ctx.done()) -> _ => break,
                }
            }
            output.done();
        });
    }
    // Go's `go func() { wg.Wait(); close(out) }()`.
    wg.go(async move {
        outputs.wait().await;
        tx.close();
    });
    rx
}

#[goro::main]
async fn main() {
    let before = goro::runtime::num_goroutine();
    let start = Instant::now();

    // A deadline for the whole job, and under it the cancel that says "we have enough".
    let (job, cancel_job) = context::with_timeout(&Context::background(), Duration::from_secs(10));
    let (ctx, cancel) = context::with_cancel(&job);

    let stages = WaitGroup::new();
    let nums = gen(ctx.clone(), &stages, 1..);
    let workers: Vec<_> = (0..WORKERS).map(|_| sq(ctx.clone(), &stages, nums.clone())).collect();
    drop(nums);
    let out = merge(ctx.clone(), &stages, workers);
    println!("pipeline: gen -> {WORKERS} x sq -> merge; {} goroutines running", goro::runtime::num_goroutine());

    for _ in 0..WANT {
        let n = out.recv().await.expect("the pipeline is endless until cancelled");
        println!("  got {n}");
    }

    // The blog's `close(done)`: every stage is blocked on a send nobody will receive, and
    // each of them returns when it sees the context done.
    cancel();
    println!("cancelled after {WANT} results: ctx.err() = {}", ctx.err().unwrap());
    stages.wait().await;
    drop(out);

    // The stages have returned; their Gs finish right after. Wait (bounded) for the count.
    let deadline = Instant::now() + Duration::from_secs(10);
    while goro::runtime::num_goroutine() > before {
        assert!(Instant::now() < deadline, "leaked goroutines: {} > {before}", goro::runtime::num_goroutine());
        goro::runtime::yield_now().await;
    }
    println!("all stages returned: {} goroutine(s) left, as before the pipeline", goro::runtime::num_goroutine());
    println!("the job itself is still live (err = {:?}); done in {:?}", job.err(), start.elapsed());
    cancel_job();
}
