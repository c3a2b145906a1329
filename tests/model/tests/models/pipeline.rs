//! Go's pipeline ("Go Concurrency Patterns: Pipelines and cancellation"): three goroutines
//! over unbuffered channels. `gen` sends the numbers, `sq` squares them, and main sums the
//! squares; each stage's close ends the next one's range loop.
//!
//! ```go
//! func gen(nums ...int) <-chan int { out := make(chan int); go func() { for _, n := range nums { out <- n }; close(out) }(); return out }
//! func sq(in <-chan int) <-chan int { out := make(chan int); go func() { for n := range in { out <- n * n }; close(out) }(); return out }
//! func main() { sum := 0; for s := range sq(gen(1, 2)) { sum += s }; ... }
//! ```
//!
//! Every value goes through every stage exactly once, whatever the interleaving.

use goro::chan::Receiver;

fn gen(nums: Vec<u32>) -> Receiver<u32> {
    let (out, rx) = goro::chan(0);
    goro::go(async move {
        for n in nums {
            out.send(n).await.unwrap();
        }
        // Dropping the last sender closes the channel (Go's `close(out)`).
    });
    rx
}

fn sq(input: Receiver<u32>) -> Receiver<u32> {
    let (out, rx) = goro::chan(0);
    goro::go(async move {
        while let Some(n) = input.recv().await {
            out.send(n * n).await.unwrap();
        }
    });
    rx
}

#[test]
fn gen_sq_sum() {
    goro::model(|| async {
        let squares = sq(gen(vec![1, 2]));
        let mut sum = 0;
        while let Some(s) = squares.recv().await {
            sum += s;
        }
        assert_eq!(sum, 5);
    });
}
