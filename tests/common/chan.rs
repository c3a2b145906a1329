//! Helpers of the channel tests (`chan*.rs`, `select*.rs`, and `chan_prop.rs` of the member
//! goro-extra-tests in `tests/extra`): counting wakers, polling by hand, a signal when a G
//! parks, values that count their drops.

use super::watchdog::{watchdog_for, Watchdog};
use super::HANG;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};

/// Aborts the test process if the guard is still alive after [`HANG`]: a hung channel would
/// otherwise hang `cargo test` forever instead of failing.
pub fn watchdog(name: &'static str) -> Watchdog {
    watchdog_for(name, HANG)
}

/// A waker that counts its wake-ups.
#[derive(Default)]
pub struct CountWake(pub AtomicUsize);

impl Wake for CountWake {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A counting waker and its counter.
pub fn counting_waker() -> (Waker, Arc<CountWake>) {
    let c = Arc::new(CountWake::default());
    (Waker::from(c.clone()), c)
}

impl CountWake {
    pub fn count(&self) -> usize {
        self.0.load(SeqCst)
    }
}

/// Polls `fut` once with `waker`.
pub fn poll_with<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(waker))
}

/// Polls a future expected to be pending.
#[track_caller]
pub fn assert_pending<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) {
    assert!(poll_with(fut, waker).is_pending(), "the future completed but should wait");
}

/// Polls a future expected to be ready, returning its output.
#[track_caller]
pub fn expect_ready<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> F::Output {
    match poll_with(fut, waker) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future is still pending but should be ready"),
    }
}

/// Wraps a future; the first time the inner future returns `Pending` (so it is queued on its
/// channel), sends a signal on a std channel. This tells a test that a G is *really* parked in a
/// channel operation, without sleeping.
pub struct SignalOnPending<F> {
    inner: Pin<Box<F>>,
    signal: Option<mpsc::Sender<()>>,
}

pub fn signal_on_pending<F: Future>(inner: F, signal: mpsc::Sender<()>) -> SignalOnPending<F> {
    SignalOnPending { inner: Box::pin(inner), signal: Some(signal) }
}

impl<F: Future> Future for SignalOnPending<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let out = self.inner.as_mut().poll(cx);
        if out.is_pending() {
            if let Some(s) = self.signal.take() {
                let _ = s.send(());
            }
        }
        out
    }
}

/// Waits on a std receiver with the hang timeout.
#[track_caller]
pub fn wait_signal(rx: &mpsc::Receiver<()>, what: &str) {
    rx.recv_timeout(HANG).unwrap_or_else(|e| panic!("timed out waiting for {what}: {e}"));
}

/// A value that counts its drops in a shared counter: proves values are neither lost (leaked)
/// nor dropped twice.
#[derive(Debug)]
pub struct Tracked {
    pub v: u64,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
    pub fn new(v: u64, drops: &Arc<AtomicUsize>) -> Tracked {
        Tracked { v, drops: drops.clone() }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

/// Checks that the values received are exactly `0..n`, each once: sum, count and bitmap.
#[track_caller]
pub fn assert_exactly_once(got: impl IntoIterator<Item = u64>, n: u64) {
    let mut seen = vec![false; n as usize];
    let mut count = 0u64;
    let mut sum = 0u64;
    for v in got {
        assert!(v < n, "received {v}, which was never sent (n = {n})");
        assert!(!seen[v as usize], "received {v} twice");
        seen[v as usize] = true;
        count += 1;
        sum += v;
    }
    let missing: Vec<usize> = seen.iter().enumerate().filter(|(_, s)| !**s).map(|(i, _)| i).take(10).collect();
    assert_eq!(count, n, "received {count} values of {n}; first missing: {missing:?}");
    assert_eq!(sum, n * (n - 1) / 2);
}

// ---- the ping-pong of tests/chan_mpmc.rs and tests/extra's tokio_interop.rs: goro channels between
// two sides, whatever runs each (Gs, plain threads, tokio tasks) ----

/// Round trips of a ping-pong.
pub const ROUNDS: u64 = 20_000;

/// The pinger: sends i, expects i + 1 back, for every round; returns the sum of the replies.
pub async fn ping(ping_tx: goro::chan::Sender<u64>, pong_rx: goro::chan::Receiver<u64>) -> u64 {
    let mut sum = 0;
    for i in 0..ROUNDS {
        ping_tx.send(i).await.unwrap();
        let r = pong_rx.recv().await.unwrap();
        assert_eq!(r, i + 1);
        sum += r;
    }
    sum
}

/// The ponger: echoes +1 until the pinger hangs up.
pub async fn pong(ping_rx: goro::chan::Receiver<u64>, pong_tx: goro::chan::Sender<u64>) -> u64 {
    let mut n = 0;
    while let Some(v) = ping_rx.recv().await {
        pong_tx.send(v + 1).await.unwrap();
        n += 1;
    }
    n
}

pub const PING_SUM: u64 = ROUNDS * (ROUNDS + 1) / 2;
