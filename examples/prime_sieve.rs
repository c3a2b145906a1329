//! Go's concurrent prime sieve (go.dev/doc/play/sieve.go), line by line: a `generate` G sends
//! 2, 3, 4, ... down an unbuffered channel, and every prime found adds a `filter` G to the
//! chain that drops the multiples of that prime. Each number travels through one G per prime
//! below its smallest factor, so the run is a few million unbuffered hand-offs between 1000
//! Gs. The Go original:
//!
//! ```go
//! // A concurrent prime sieve
//!
//! package main
//!
//! import "fmt"
//!
//! // Send the sequence 2, 3, 4, ... to channel 'ch'.
//! func Generate(ch chan<- int) {
//!     for i := 2; ; i++ {
//!         ch <- i // Send 'i' to channel 'ch'.
//!     }
//! }
//!
//! // Copy the values from channel 'in' to channel 'out',
//! // removing those divisible by 'prime'.
//! func Filter(in <-chan int, out chan<- int, prime int) {
//!     for {
//!         i := <-in // Receive value from 'in'.
//!         if i%prime != 0 {
//!             out <- i // Send 'i' to 'out'.
//!         }
//!     }
//! }
//!
//! // The prime sieve: Daisy-chain Filter processes.
//! func main() {
//!     ch := make(chan int) // Create a new channel.
//!     go Generate(ch)      // Launch Generate goroutine.
//!     for i := 0; i < 10; i++ {
//!         prime := <-ch
//!         fmt.Println(prime)
//!         ch1 := make(chan int)
//!         go Filter(ch, ch1, prime)
//!         ch = ch1
//!     }
//! }
//! ```
//!
//! The port finds the first 1000 primes instead of 10, prints the last few, and checks all of
//! them against a sequential sieve of Eratosthenes. One thing differs from Go, on purpose: in
//! Go the chain of goroutines stays blocked forever once `main` stops reading (a leak the
//! process exit hides). In goro a send fails once every receiver of its channel is gone, so
//! when `main` drops the last channel the chain unwinds from its tail, each `filter` returning
//! and dropping its input in turn, down to `generate`; the run checks that every G ended.
//!
//! ```text
//! cargo run --release --example prime_sieve
//! ```

use goro::chan::{Receiver, Sender};
use std::time::{Duration, Instant};

/// How many primes to find (Go's example stops at 10).
const PRIMES: usize = 1000;

/// Sends the sequence 2, 3, 4, ... to `ch` (Go's `Generate`), until nobody can receive it.
async fn generate(ch: Sender<u64>) {
    for i in 2.. {
        // Send 'i' to channel 'ch'. Go's send blocks forever once the reader is gone; here it
        // comes back as an error, and the G returns.
        if ch.send(i).await.is_err() {
            return;
        }
    }
}

/// Copies the values from `input` to `out`, removing those divisible by `prime` (Go's
/// `Filter`), until `input` closes or nobody can receive from `out`.
async fn filter(input: Receiver<u64>, out: Sender<u64>, prime: u64) {
    // Receive value from 'in'.
    while let Some(i) = input.recv().await {
        if i % prime != 0 {
            // Send 'i' to 'out'.
            if out.send(i).await.is_err() {
                return;
            }
        }
    }
}

/// The first `n` primes, by a plain sequential sieve of Eratosthenes: the reference answer.
fn sequential_primes(n: usize) -> Vec<u64> {
    let mut limit = 16;
    loop {
        let mut composite = vec![false; limit];
        let mut primes = Vec::new();
        for i in 2..limit {
            if !composite[i] {
                primes.push(i as u64);
                for m in (i * i..limit).step_by(i) {
                    composite[m] = true;
                }
            }
        }
        if primes.len() >= n {
            primes.truncate(n);
            return primes;
        }
        limit *= 2;
    }
}

/// The prime sieve: daisy-chains `filter` Gs (Go's `main`).
#[goro::main]
async fn main() {
    let before = goro::runtime::num_goroutine();
    let start = Instant::now();

    let (tx, mut ch) = goro::chan::<u64>(0); // Create a new channel.
    goro::go(generate(tx)); // Launch Generate goroutine.
    let mut primes = Vec::with_capacity(PRIMES);
    for _ in 0..PRIMES {
        let prime = ch.recv().await.expect("the chain never closes while main reads it");
        primes.push(prime);
        let (tx1, ch1) = goro::chan::<u64>(0);
        goro::go(filter(ch, tx1, prime));
        ch = ch1;
    }
    let elapsed = start.elapsed();
    println!(
        "prime sieve: {} primes through a chain of {} filter Gs in {elapsed:.1?} ({} goroutines running)",
        primes.len(),
        PRIMES,
        goro::runtime::num_goroutine()
    );
    println!("  the last ten: {:?}", &primes[PRIMES - 10..]);

    let want = sequential_primes(PRIMES);
    assert_eq!(primes, want, "the concurrent sieve disagrees with the sequential one");
    println!("  all {PRIMES} agree with a sequential sieve of Eratosthenes (the 1000th prime is {})", want[999]);

    // Drop the last channel: its filter's send fails, it returns and drops its input, and so
    // on down the chain to `generate`. Wait (bounded) for every G to end.
    drop(ch);
    let deadline = Instant::now() + Duration::from_secs(10);
    while goro::runtime::num_goroutine() > before {
        assert!(Instant::now() < deadline, "leaked goroutines: {} > {before}", goro::runtime::num_goroutine());
        goro::runtime::yield_now().await;
    }
    println!(
        "  the chain unwound once main dropped its end: {} goroutine(s) left; total {:.1?}",
        goro::runtime::num_goroutine(),
        start.elapsed()
    );
}
