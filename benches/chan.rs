//! Channel benchmarks W4–W8 of benches/README.md: goro's channels and `select!` against tokio's
//! mpsc, flume, kanal, async-channel and crossbeam-channel.
//!
//! Each workload is written once, generic over an executor ([`Exec`]: spawn, and run a main) and
//! a channel ([`Channel`]: make, send, receive), so every row runs the exact same code: the same
//! tasks, the same values, the same completion mechanism ([`Tally`], a countdown plus the sum and
//! count of what was received, checked by main after every run so a broken row cannot look
//! fast). W8 adds one primitive per system, [`Select2`]: wait on two receivers at once.
//!
//! Rows and where they run (benches/README.md: 2 workers everywhere, main a task on its runtime):
//! - `goro`: goro channels on a goro runtime with `max_procs(2)`; the workload's Gs are spawned
//!   with `goro::go`, main is the `block_on` future (the main G) and waits for them.
//! - `tokio_mpsc`, `flume`, `kanal`, `async_channel`: each channel on one tokio multi-thread
//!   runtime with 2 workers; the tasks are `tokio::spawn`ed, main is a spawned task too.
//!   - `tokio_mpsc` has no rendezvous channel: its cap-0 rows (W4, W7) use cap 1. It is also
//!     single-consumer: for W6/W7 the receiver is shared by the 4 consumers behind an
//!     `Arc<tokio::sync::Mutex<_>>` (lock, then `recv`), the usual way to do MPMC with it.
//!   - `async_channel` has no rendezvous channel either (`bounded(0)` panics): cap 0 is cap 1.
//!   - `flume` (`bounded(0)`) and `kanal` (`bounded_async(0)`) are true rendezvous channels.
//! - `crossbeam`: crossbeam-channel (cap 0 is a true rendezvous) with every task on its own
//!   plain OS thread (2 to 8 threads per run; the spawns are a negligible part of a run) and
//!   main on the benchmark thread; its blocking calls sit inside the same async workload code,
//!   which a one-future-per-thread executor ([`block_on_thread`]) drives.
//! - W8 only: `goro` uses `goro::select!`, `tokio_select` uses `tokio::select!` over two
//!   `tokio::sync::mpsc` channels (cap 16), `crossbeam` uses `crossbeam_channel::select!`.
//!
//! Criterion reports the time of one whole run and the throughput in elements (= units) per
//! second; ns per unit = 1e9 / thrpt, or `median` of `target/criterion/<group>/<row>/new/
//! estimates.json` divided by the unit count. Runs are long (tens to hundreds of ms), so the
//! groups use flat sampling: 10 samples of the same number of runs.
//!
//! `cargo bench -p goro-benches --bench chan -- kanal` runs only the kanal rows, `-- W5` only
//! W5.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

/// W4: round trips per run.
const PINGPONGS: u64 = 200_000;
/// W5: messages per run, and the channel's capacity (W5, W6).
const SPSC_MSGS: u64 = 2_000_000;
const BUFFERED_CAP: usize = 128;
/// W6 and W7: producers and consumers, and messages per run (in total).
const MPMC_TASKS: u64 = 4;
const MPMC_BUFFERED_MSGS: u64 = 2_000_000;
const MPMC_UNBUFFERED_MSGS: u64 = 400_000;
/// W8: messages per run (in total, half from each producer), and each channel's capacity.
const FANIN_MSGS: u64 = 1_000_000;
const FANIN_CAP: usize = 16;

#[path = "common/mod.rs"]
mod common;
use common::exec::{group, row, Exec, Goro, Runtimes, Tokio};
use common::signal::Signal;

/// How one run ends: every task reports once (a consumer with the sum and count of the values
/// it received, a producer with zeros); the last report wakes main, which checks the totals.
struct Tally {
    left: AtomicUsize,
    sum: AtomicU64,
    count: AtomicU64,
    done: Signal,
}

impl Tally {
    fn new(tasks: usize) -> Arc<Tally> {
        Arc::new(Tally {
            left: AtomicUsize::new(tasks),
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
            done: Signal::default(),
        })
    }

    fn report(&self, sum: u64, count: u64) {
        self.sum.fetch_add(sum, Ordering::Relaxed);
        self.count.fetch_add(count, Ordering::Relaxed);
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.set();
        }
    }

    /// Waits for every task, then checks that exactly the values `0..n` were received once
    /// each (by count and sum: a lost, duplicated or corrupted value shows).
    async fn wait_and_check(&self, workload: &str, n: u64) {
        self.done.wait().await;
        let (sum, count) = (self.sum.load(Ordering::Relaxed), self.count.load(Ordering::Relaxed));
        assert_eq!((count, sum), (n, n * (n - 1) / 2), "{workload}: wrong values received");
    }
}

/// Plain OS threads: each task gets its own thread, main runs on the calling thread; a yield or
/// a sleep blocks the thread, as the channel calls do.
struct Threads;
impl Exec for Threads {
    fn spawn<F: Future<Output = ()> + Send + 'static>(fut: F) {
        drop(std::thread::spawn(move || block_on_thread(fut))); // detached
    }
    async fn yield_now() {
        std::thread::yield_now();
    }
    async fn sleep(d: Duration) {
        std::thread::sleep(d);
    }
    fn main<F: Future<Output = Duration> + Send + 'static>(_: &Runtimes, fut: F) -> Duration {
        block_on_thread(fut)
    }
}

/// Drives one future on the calling thread, parking it while the future is pending. For the
/// `crossbeam` rows, whose channel calls block the thread inside `poll` and so are ready at
/// once; only [`Signal::wait`] ever returns `Pending` here.
fn block_on_thread<F: Future>(fut: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park(); // a spurious wake-up just polls again
    }
}

/// A channel of `u64`, as the workloads use it. Send and receive panic on the errors that
/// cannot happen in a correct run (a send on a closed channel); `recv` returns `None` once the
/// channel is closed (every sender gone) and drained.
trait Channel: 'static {
    type Tx: Clone + Send + Sync + 'static;
    type Rx: Send + Sync + 'static;
    /// A receiver that several consumers share (a clone each); the same as `Rx` except for
    /// single-consumer channels.
    type SharedRx: Clone + Send + Sync + 'static;
    fn new(cap: usize) -> (Self::Tx, Self::Rx);
    fn share(rx: Self::Rx) -> Self::SharedRx;
    fn send(tx: &Self::Tx, v: u64) -> impl Future<Output = ()> + Send + '_;
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<u64>> + Send + '_;
    fn recv_shared(rx: &mut Self::SharedRx) -> impl Future<Output = Option<u64>> + Send + '_;
}

struct GoroChan;
impl Channel for GoroChan {
    type Tx = goro::chan::Sender<u64>;
    type Rx = goro::chan::Receiver<u64>;
    type SharedRx = goro::chan::Receiver<u64>;
    fn new(cap: usize) -> (Self::Tx, Self::Rx) {
        goro::chan(cap)
    }
    fn share(rx: Self::Rx) -> Self::SharedRx {
        rx
    }
    async fn send(tx: &Self::Tx, v: u64) {
        tx.send(v).await.expect("goro: send on a closed channel");
    }
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv().await
    }
    async fn recv_shared(rx: &mut Self::SharedRx) -> Option<u64> {
        rx.recv().await
    }
}

/// `tokio::sync::mpsc`: cap 0 is cap 1 (no rendezvous channel); several consumers share the
/// receiver behind a tokio `Mutex`.
struct TokioMpsc;
impl Channel for TokioMpsc {
    type Tx = tokio::sync::mpsc::Sender<u64>;
    type Rx = tokio::sync::mpsc::Receiver<u64>;
    type SharedRx = Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<u64>>>;
    fn new(cap: usize) -> (Self::Tx, Self::Rx) {
        tokio::sync::mpsc::channel(cap.max(1))
    }
    fn share(rx: Self::Rx) -> Self::SharedRx {
        Arc::new(tokio::sync::Mutex::new(rx))
    }
    async fn send(tx: &Self::Tx, v: u64) {
        tx.send(v).await.expect("tokio: send on a closed channel");
    }
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv().await
    }
    async fn recv_shared(rx: &mut Self::SharedRx) -> Option<u64> {
        rx.lock().await.recv().await
    }
}

/// flume, async API; `bounded(0)` is a rendezvous channel.
struct Flume;
impl Channel for Flume {
    type Tx = flume::Sender<u64>;
    type Rx = flume::Receiver<u64>;
    type SharedRx = flume::Receiver<u64>;
    fn new(cap: usize) -> (Self::Tx, Self::Rx) {
        flume::bounded(cap)
    }
    fn share(rx: Self::Rx) -> Self::SharedRx {
        rx
    }
    async fn send(tx: &Self::Tx, v: u64) {
        tx.send_async(v).await.expect("flume: send on a closed channel");
    }
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv_async().await.ok()
    }
    async fn recv_shared(rx: &mut Self::SharedRx) -> Option<u64> {
        rx.recv_async().await.ok()
    }
}

/// kanal, async API; `bounded_async(0)` is a rendezvous channel.
struct Kanal;
impl Channel for Kanal {
    type Tx = kanal::AsyncSender<u64>;
    type Rx = kanal::AsyncReceiver<u64>;
    type SharedRx = kanal::AsyncReceiver<u64>;
    fn new(cap: usize) -> (Self::Tx, Self::Rx) {
        kanal::bounded_async(cap)
    }
    fn share(rx: Self::Rx) -> Self::SharedRx {
        rx
    }
    async fn send(tx: &Self::Tx, v: u64) {
        tx.send(v).await.expect("kanal: send on a closed channel");
    }
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv().await.ok()
    }
    async fn recv_shared(rx: &mut Self::SharedRx) -> Option<u64> {
        rx.recv().await.ok()
    }
}

/// async-channel: cap 0 is cap 1 (`bounded(0)` panics: no rendezvous channel).
struct AsyncChannel;
impl Channel for AsyncChannel {
    type Tx = async_channel::Sender<u64>;
    type Rx = async_channel::Receiver<u64>;
    type SharedRx = async_channel::Receiver<u64>;
    fn new(cap: usize) -> (Self::Tx, Self::Rx) {
        async_channel::bounded(cap.max(1))
    }
    fn share(rx: Self::Rx) -> Self::SharedRx {
        rx
    }
    async fn send(tx: &Self::Tx, v: u64) {
        tx.send(v).await.expect("async-channel: send on a closed channel");
    }
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv().await.ok()
    }
    async fn recv_shared(rx: &mut Self::SharedRx) -> Option<u64> {
        rx.recv().await.ok()
    }
}

/// crossbeam-channel's blocking calls (for [`Threads`] only); `bounded(0)` is a rendezvous
/// channel.
struct Crossbeam;
impl Channel for Crossbeam {
    type Tx = crossbeam_channel::Sender<u64>;
    type Rx = crossbeam_channel::Receiver<u64>;
    type SharedRx = crossbeam_channel::Receiver<u64>;
    fn new(cap: usize) -> (Self::Tx, Self::Rx) {
        crossbeam_channel::bounded(cap)
    }
    fn share(rx: Self::Rx) -> Self::SharedRx {
        rx
    }
    async fn send(tx: &Self::Tx, v: u64) {
        tx.send(v).expect("crossbeam: send on a closed channel");
    }
    async fn recv(rx: &mut Self::Rx) -> Option<u64> {
        rx.recv().ok()
    }
    async fn recv_shared(rx: &mut Self::SharedRx) -> Option<u64> {
        rx.recv().ok()
    }
}

/// W8's primitive: wait for a value on either of two receivers; a receiver that is not `open`
/// is ignored (Go's nil channel). Returns which one fired (0 or 1) and what it gave (`None`:
/// that channel is closed and drained).
trait Select2: Channel {
    fn select2<'a>(
        a: &'a mut Self::Rx,
        a_open: bool,
        b: &'a mut Self::Rx,
        b_open: bool,
    ) -> impl Future<Output = (usize, Option<u64>)> + Send + 'a;
}

impl Select2 for GoroChan {
    async fn select2(a: &mut Self::Rx, a_open: bool, b: &mut Self::Rx, b_open: bool) -> (usize, Option<u64>) {
        // A `None` case is a nil channel: never ready.
        goro::select! {
            recv(a_open.then_some(&*a)) -> v => (0, v),
            recv(b_open.then_some(&*b)) -> v => (1, v),
        }
    }
}

impl Select2 for TokioMpsc {
    async fn select2(a: &mut Self::Rx, a_open: bool, b: &mut Self::Rx, b_open: bool) -> (usize, Option<u64>) {
        // tokio::select! picks among ready branches at random, as Go does.
        tokio::select! {
            v = a.recv(), if a_open => (0, v),
            v = b.recv(), if b_open => (1, v),
        }
    }
}

impl Select2 for Crossbeam {
    async fn select2(a: &mut Self::Rx, a_open: bool, b: &mut Self::Rx, b_open: bool) -> (usize, Option<u64>) {
        let never = crossbeam_channel::never();
        crossbeam_channel::select! {
            recv(if a_open { &*a } else { &never }) -> v => (0, v.ok()),
            recv(if b_open { &*b } else { &never }) -> v => (1, v.ok()),
        }
    }
}

/// Spawns `producers` tasks on `E` that together send the values `0..n` on `tx`, producer `p`
/// sending its own contiguous slice, each reporting to `tally` when it is done.
fn spawn_producers<E: Exec, C: Channel>(tx: C::Tx, producers: u64, n: u64, tally: &Arc<Tally>) {
    let per = n / producers;
    for p in 0..producers {
        let (tx, tally) = (tx.clone(), tally.clone());
        E::spawn(async move {
            for v in p * per..(p + 1) * per {
                C::send(&tx, v).await;
            }
            drop(tx); // the last sender gone closes the channel
            tally.report(0, 0);
        });
    }
}

/// One workload of benches/README.md, written once for every [`Exec`] and [`Channel`].
trait Workload: 'static {
    /// The criterion group, e.g. `W4_pingpong_unbuffered`.
    const NAME: &'static str;
    /// Units of work in one run (the `Throughput` unit).
    const UNITS: u64;
    /// One run, on the runtime behind `E`, from inside its main task.
    fn run<E: Exec, C: Channel>() -> impl Future<Output = ()> + Send;
}

/// W4 pingpong_unbuffered: two tasks bounce a u64 over two unbuffered channels, 200_000 round
/// trips; the pinger checks every answer. Unit: one round trip.
struct PingPong;
impl Workload for PingPong {
    const NAME: &'static str = "W4_pingpong_unbuffered";
    const UNITS: u64 = PINGPONGS;
    async fn run<E: Exec, C: Channel>() {
        let tally = Tally::new(2);
        let (ping_tx, mut ping_rx) = C::new(0);
        let (pong_tx, mut pong_rx) = C::new(0);
        let t = tally.clone();
        E::spawn(async move {
            let mut sum = 0;
            for i in 0..PINGPONGS {
                C::send(&ping_tx, i).await;
                let v = C::recv(&mut pong_rx).await.expect("W4: pong channel closed");
                assert_eq!(v, i + 1, "W4: wrong answer");
                sum += i;
            }
            drop(ping_tx); // ends the ponger
            t.report(sum, PINGPONGS);
        });
        let t = tally.clone();
        E::spawn(async move {
            while let Some(v) = C::recv(&mut ping_rx).await {
                C::send(&pong_tx, v + 1).await;
            }
            t.report(0, 0);
        });
        tally.wait_and_check(Self::NAME, PINGPONGS).await;
    }
}

/// W5 spsc_buffered: one producer, one consumer, cap 128, 2_000_000 messages. Unit: one message.
struct SpscBuffered;
impl Workload for SpscBuffered {
    const NAME: &'static str = "W5_spsc_buffered";
    const UNITS: u64 = SPSC_MSGS;
    async fn run<E: Exec, C: Channel>() {
        let tally = Tally::new(2);
        let (tx, mut rx) = C::new(BUFFERED_CAP);
        let t = tally.clone();
        E::spawn(async move {
            let (mut sum, mut count) = (0, 0);
            while let Some(v) = C::recv(&mut rx).await {
                sum += v;
                count += 1;
            }
            t.report(sum, count);
        });
        spawn_producers::<E, C>(tx, 1, SPSC_MSGS, &tally);
        tally.wait_and_check(Self::NAME, SPSC_MSGS).await;
    }
}

/// W6/W7: 4 producers and 4 consumers on one channel of capacity `cap`, `n` messages in total.
async fn mpmc<E: Exec, C: Channel>(name: &'static str, cap: usize, n: u64) {
    let tally = Tally::new(2 * MPMC_TASKS as usize);
    let (tx, rx) = C::new(cap);
    let rx = C::share(rx);
    for _ in 0..MPMC_TASKS {
        let (mut rx, t) = (rx.clone(), tally.clone());
        E::spawn(async move {
            let (mut sum, mut count) = (0, 0);
            while let Some(v) = C::recv_shared(&mut rx).await {
                sum += v;
                count += 1;
            }
            t.report(sum, count);
        });
    }
    drop(rx);
    spawn_producers::<E, C>(tx, MPMC_TASKS, n, &tally);
    tally.wait_and_check(name, n).await;
}

/// W6 mpmc_buffered: 4 producers, 4 consumers, cap 128, 2_000_000 messages in total.
/// Unit: one message.
struct MpmcBuffered;
impl Workload for MpmcBuffered {
    const NAME: &'static str = "W6_mpmc_buffered";
    const UNITS: u64 = MPMC_BUFFERED_MSGS;
    async fn run<E: Exec, C: Channel>() {
        mpmc::<E, C>(Self::NAME, BUFFERED_CAP, MPMC_BUFFERED_MSGS).await;
    }
}

/// W7 mpmc_unbuffered: as W6 with cap 0, 400_000 messages in total. Unit: one message.
struct MpmcUnbuffered;
impl Workload for MpmcUnbuffered {
    const NAME: &'static str = "W7_mpmc_unbuffered";
    const UNITS: u64 = MPMC_UNBUFFERED_MSGS;
    async fn run<E: Exec, C: Channel>() {
        mpmc::<E, C>(Self::NAME, 0, MPMC_UNBUFFERED_MSGS).await;
    }
}

/// W8 select_fanin: two producers, each on its own cap-16 channel, 500_000 messages each; one
/// consumer selects over both until both are closed. Unit: one message.
const W8: &str = "W8_select_fanin";
async fn select_fanin<E: Exec, C: Select2>() {
    let tally = Tally::new(3);
    let (tx_a, mut rx_a) = C::new(FANIN_CAP);
    let (tx_b, mut rx_b) = C::new(FANIN_CAP);
    let t = tally.clone();
    E::spawn(async move {
        let (mut a_open, mut b_open) = (true, true);
        let (mut sum, mut count) = (0, 0);
        while a_open || b_open {
            match C::select2(&mut rx_a, a_open, &mut rx_b, b_open).await {
                (_, Some(v)) => {
                    sum += v;
                    count += 1;
                }
                (0, None) => a_open = false,
                (_, None) => b_open = false,
            }
        }
        t.report(sum, count);
    });
    // Producer a sends 0..n/2, producer b sends n/2..n: together 0..n.
    let half = FANIN_MSGS / 2;
    for (tx, base) in [(tx_a, 0), (tx_b, half)] {
        let t = tally.clone();
        E::spawn(async move {
            for v in base..base + half {
                C::send(&tx, v).await;
            }
            drop(tx);
            t.report(0, 0);
        });
    }
    tally.wait_and_check(W8, FANIN_MSGS).await;
}

/// W4–W7: a row per channel.
fn channel_group<W: Workload>(c: &mut Criterion, rts: &Runtimes) {
    let mut g = group(c, W::NAME, W::UNITS);
    row::<Goro, _>(&mut g, "goro", rts, W::run::<Goro, GoroChan>);
    row::<Tokio, _>(&mut g, "tokio_mpsc", rts, W::run::<Tokio, TokioMpsc>);
    row::<Tokio, _>(&mut g, "flume", rts, W::run::<Tokio, Flume>);
    row::<Tokio, _>(&mut g, "kanal", rts, W::run::<Tokio, Kanal>);
    row::<Tokio, _>(&mut g, "async_channel", rts, W::run::<Tokio, AsyncChannel>);
    row::<Threads, _>(&mut g, "crossbeam", rts, W::run::<Threads, Crossbeam>);
    g.finish();
}

/// W8: a row per select implementation.
fn select_group(c: &mut Criterion, rts: &Runtimes) {
    let mut g = group(c, W8, FANIN_MSGS);
    row::<Goro, _>(&mut g, "goro", rts, select_fanin::<Goro, GoroChan>);
    row::<Tokio, _>(&mut g, "tokio_select", rts, select_fanin::<Tokio, TokioMpsc>);
    row::<Threads, _>(&mut g, "crossbeam", rts, select_fanin::<Threads, Crossbeam>);
    g.finish();
}

fn benches(c: &mut Criterion) {
    let rts = Runtimes::default();
    channel_group::<PingPong>(c, &rts);
    channel_group::<SpscBuffered>(c, &rts);
    channel_group::<MpmcBuffered>(c, &rts);
    channel_group::<MpmcUnbuffered>(c, &rts);
    select_group(c, &rts);
}

criterion_group!(chan, benches);
criterion_main!(chan);
