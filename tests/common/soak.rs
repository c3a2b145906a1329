//! Helpers of the soak tests (`soak_chan.rs`, `soak_sched.rs`, `soak_mixed.rs`): one soak at a
//! time, the knobs and seed from the environment, a small PRNG, this process's RSS, two ways to
//! cancel a future, and a paced ping-pong.

use goro::time::sleep;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The soak tests of a binary run one at a time (and cargo runs the binaries one after
/// another): RSS is a per-process figure, and two of them at once would also skew each other's
/// throughput.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds [`SERIAL`] for the rest of a test.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The number in the environment variable `name`, else `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => s.trim().parse().unwrap_or_else(|_| panic!("{name}={s:?} is not a number")),
        Err(_) => default,
    }
}

/// The seed of this run: `GORO_SOAK_SEED`, else the clock. Printed, so a failure can be re-run.
pub fn seed(test: &str) -> u64 {
    let s = env_u64(
        "GORO_SOAK_SEED",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
    );
    println!("{test}: GORO_SOAK_SEED={s}");
    s
}

/// xorshift64*: small, fast, and good enough to pick operations.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, never zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
    pub fn micros(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_micros(lo + self.below(hi - lo))
    }
}

/// This process's resident set size (`VmRSS` of `/proc/self/status`), in bytes.
pub fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS value");
    kib * 1024
}

/// Bytes per MiB, for the figures the soaks print.
pub const MIB: f64 = 1024.0 * 1024.0;

/// The first of two futures to complete; the other is dropped (cancelled) when this returns.
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

pub async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

/// Polls `fut` once with a waker that does nothing, then drops it (unless it was ready).
pub fn poll_once_then_drop<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// How long the busy Gs of the soaks pause (in `sleep`) after each batch of work. The
/// pauses leave the Ps idle now and then. (A G back from `goro::syscall` while the other Gs
/// keep every P busy is tested in `tests/sysmon.rs`,
/// `a_g_back_from_syscall_gets_a_p_while_others_stay_busy`.)
pub const PACE: Duration = Duration::from_millis(1);

/// Ping-pong over a pair of channels of capacity `cap` until `stop`; returns (round trips seen
/// by the pinger, by the ponger).
pub async fn ping_pong(cap: usize, stop: Arc<AtomicBool>) -> (u64, u64) {
    let (a_tx, a_rx) = goro::chan::<u64>(cap);
    let (b_tx, b_rx) = goro::chan::<u64>(cap);
    let ponger = goro::go(async move {
        let mut n = 0u64;
        while let Some(v) = a_rx.recv().await {
            b_tx.send(v + 1).await.expect("the pinger waits for the reply");
            n += 1;
        }
        n
    });
    let mut n = 0u64;
    while !stop.load(SeqCst) {
        a_tx.send(n).await.expect("the ponger is alive");
        assert_eq!(b_rx.recv().await, Some(n + 1));
        n += 1;
        if n % 64 == 0 {
            sleep(PACE).await;
        }
    }
    drop(a_tx);
    (n, ponger.await.expect("ponger"))
}
