//! Go by Example's "Rate Limiting" (gobyexample.com/rate-limiting), line by line: first a
//! steady limiter, `time.Tick`, that lets one request through every 200 ms; then a bursty one,
//! a buffered channel of capacity 3 that starts full and is refilled by a ticker, so that 3
//! requests go through at once and the rest at the steady rate. The Go original:
//!
//! ```go
//! func main() {
//!     requests := make(chan int, 5)
//!     for i := 1; i <= 5; i++ {
//!         requests <- i
//!     }
//!     close(requests)
//!
//!     limiter := time.Tick(200 * time.Millisecond)
//!
//!     for req := range requests {
//!         <-limiter
//!         fmt.Println("request", req, time.Now())
//!     }
//!
//!     burstyLimiter := make(chan time.Time, 3)
//!
//!     for i := 0; i < 3; i++ {
//!         burstyLimiter <- time.Now()
//!     }
//!
//!     go func() {
//!         for t := range time.Tick(200 * time.Millisecond) {
//!             burstyLimiter <- t
//!         }
//!     }()
//!
//!     burstyRequests := make(chan int, 5)
//!     for i := 1; i <= 5; i++ {
//!         burstyRequests <- i
//!     }
//!     close(burstyRequests)
//!     for req := range burstyRequests {
//!         <-burstyLimiter
//!         fmt.Println("request", req, time.Now())
//!     }
//! }
//! ```
//!
//! Go prints wall-clock times; the port prints each request's time since its phase began, and
//! checks the shape of the output: the steady requests at least 0.8 × 200 ms apart (a ticker
//! never fires early; the slack is for a tick that fired late and the next one on time), the
//! first 3 bursty ones at once (within 50 ms), and the last 2 bursty ones each a period later.
//! It takes about 1.4 s.
//!
//! ```text
//! cargo run --release --example rate_limit
//! ```

use std::time::{Duration, Instant};

/// The limiters' period (Go's example: 200 ms).
const PERIOD: Duration = Duration::from_millis(200);
/// How many requests in each phase.
const REQUESTS: usize = 5;
/// The bursty limiter's capacity: how many requests may go through at once.
const BURST: usize = 3;
/// What "at once" means for the burst: well under a period, generous for a loaded machine.
const AT_ONCE: Duration = Duration::from_millis(50);

/// Prints a request's line, with its time since `start` where Go prints `time.Now()`, and
/// returns that time.
fn stamp(req: usize, at: Instant, start: Instant) -> Duration {
    let since = at - start;
    println!("request {req} +{:>6.1} ms", since.as_secs_f64() * 1e3);
    since
}

/// Both limiters, in Go's order, each followed by its checks.
#[goro::main]
async fn main() {
    let min_gap = PERIOD.mul_f64(0.8);

    // The steady limiter: one request per tick.
    let (requests_tx, requests) = goro::chan::<usize>(REQUESTS);
    for i in 1..=REQUESTS {
        requests_tx.send(i).await.unwrap();
    }
    requests_tx.close();

    println!("steady: one request per {PERIOD:?} (time.Tick)");
    let start = Instant::now();
    let limiter = goro::time::tick(PERIOD);
    let mut steady = Vec::new();
    while let Some(req) = requests.recv().await {
        limiter.recv().await.unwrap();
        steady.push(stamp(req, Instant::now(), start));
    }
    drop(limiter); // Go's Tick leaks its ticker; goro's stops once its receiver is gone.

    assert_eq!(steady.len(), REQUESTS);
    assert!(steady[0] >= min_gap, "the first steady request went through before a tick: {:?}", steady[0]);
    for (i, w) in steady.windows(2).enumerate() {
        let gap = w[1] - w[0];
        assert!(gap >= min_gap, "steady requests {} and {} only {gap:?} apart (want >= {min_gap:?})", i + 1, i + 2);
    }

    // The bursty limiter: room for BURST, filled up front, then one more per tick.
    let (bursty_tx, bursty_limiter) = goro::chan::<Instant>(BURST);
    for _ in 0..BURST {
        bursty_tx.send(Instant::now()).await.unwrap();
    }

    let start = Instant::now();
    goro::go! {
        let ticks = goro::time::tick(PERIOD);
        while let Some(t) = ticks.recv().await {
            // Fails once main is done with the limiter: this G then returns, where Go's would
            // block forever on the full channel.
            if bursty_tx.send(t).await.is_err() {
                return;
            }
        }
    };

    let (bursty_requests_tx, bursty_requests) = goro::chan::<usize>(REQUESTS);
    for i in 1..=REQUESTS {
        bursty_requests_tx.send(i).await.unwrap();
    }
    bursty_requests_tx.close();

    println!("bursty: {BURST} at once, then one per {PERIOD:?} (a buffered channel refilled by a ticker)");
    let mut bursty = Vec::new();
    while let Some(req) = bursty_requests.recv().await {
        bursty_limiter.recv().await.unwrap();
        bursty.push(stamp(req, Instant::now(), start));
    }

    assert_eq!(bursty.len(), REQUESTS);
    for (i, &at) in bursty[..BURST].iter().enumerate() {
        assert!(at < AT_ONCE, "bursty request {} waited {at:?}: the first {BURST} should go through at once", i + 1);
    }
    for (i, &at) in bursty.iter().enumerate().skip(BURST) {
        // Request BURST + k waits for the k-th tick of the refill ticker, started at `start`.
        let tick = PERIOD * (i + 1 - BURST) as u32;
        assert!(at >= tick.mul_f64(0.8), "bursty request {} went through at {at:?}, before tick {tick:?}", i + 1);
        assert!(at - bursty[i - 1] >= min_gap, "bursty requests {} and {} too close", i, i + 1);
    }
    println!(
        "ok: steady gaps >= {min_gap:?}, the first {BURST} bursty requests within {AT_ONCE:?}, the rest a tick apart"
    );
}
