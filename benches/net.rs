//! The TCP echo round trip on loopback: goro's netpoller against tokio's.
//!
//! One client and one server, one connection, 64-byte messages: the client writes a message
//! and waits for its echo, [`ROUND_TRIPS`] times per run (a latency benchmark: every round trip
//! parks both sides in their poller once). The same code runs on both systems:
//! - `goro`: a goro runtime with `max_procs(2)`; the server and the client are Gs, the main G
//!   (`block_on`'s future) waits for the client; `goro::net::TcpStream`'s
//!   `read_exact`/`write_all`.
//! - `goro_main_g`: the same, but the client is the main G itself. Only M0 (the thread in
//!   `block_on`) runs the main G, so each of its wake-ups that another M's netpoll delivers
//!   costs a thread hand-off; the row shows how much.
//! - `tokio`: a multi-thread runtime with 2 workers; the server and the client are spawned
//!   tasks, the `block_on` thread waits for the client; `tokio::net::TcpStream` with
//!   `AsyncReadExt::read_exact`/`AsyncWriteExt::write_all`.
//!
//! Both set `TCP_NODELAY` (Go's default). A run times only the round trips (the connection is
//! made before the clock starts) and the client checks every echoed message, so a broken row
//! cannot look fast.
//!
//! Criterion reports the time of one run and the throughput in round trips per second; ns per
//! round trip = 1e9 / thrpt. `cargo bench -p goro-benches --bench net -- tokio` runs only the
//! tokio row.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

#[path = "common/mod.rs"]
mod common;
use common::exec::{Exec, Goro, Tokio, WORKERS};

/// Round trips per run.
const ROUND_TRIPS: u64 = 50_000;
/// Bytes per message.
const MSG: usize = 64;

/// The message of round `i`: its index, then a pattern.
fn message(i: u64) -> [u8; MSG] {
    let mut m = [0u8; MSG];
    m[..8].copy_from_slice(&i.to_le_bytes());
    for (j, b) in m[8..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(j as u8);
    }
    m
}

/// What a row needs besides spawning a task: a listener, a connection, and the two halves of
/// the echo.
trait System: Exec {
    type Listener: Send + 'static;
    type Stream: Send + 'static;
    fn bind() -> impl Future<Output = (Self::Listener, SocketAddr)> + Send;
    fn accept(ln: Self::Listener) -> impl Future<Output = Self::Stream> + Send;
    fn connect(addr: SocketAddr) -> impl Future<Output = Self::Stream> + Send;
    /// Reads one message; `false` at end of stream.
    fn read_msg<'a>(s: &'a mut Self::Stream, buf: &'a mut [u8; MSG]) -> impl Future<Output = bool> + Send + 'a;
    fn write_msg<'a>(s: &'a mut Self::Stream, buf: &'a [u8; MSG]) -> impl Future<Output = ()> + Send + 'a;
}

impl System for Goro {
    type Listener = goro::net::TcpListener;
    type Stream = goro::net::TcpStream;
    async fn bind() -> (Self::Listener, SocketAddr) {
        let ln = goro::net::TcpListener::bind("127.0.0.1:0").await.expect("goro bind");
        let addr = ln.local_addr().unwrap();
        (ln, addr)
    }
    async fn accept(ln: Self::Listener) -> Self::Stream {
        let (s, _) = ln.accept().await.expect("goro accept");
        s.set_nodelay(true).unwrap();
        s
    }
    async fn connect(addr: SocketAddr) -> Self::Stream {
        let s = goro::net::TcpStream::connect(addr).await.expect("goro connect");
        s.set_nodelay(true).unwrap();
        s
    }
    async fn read_msg<'a>(s: &'a mut Self::Stream, buf: &'a mut [u8; MSG]) -> bool {
        match s.read_exact(buf).await {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => false,
            Err(e) => panic!("goro read: {e}"),
        }
    }
    async fn write_msg<'a>(s: &'a mut Self::Stream, buf: &'a [u8; MSG]) {
        s.write_all(buf).await.expect("goro write");
    }
}

impl System for Tokio {
    type Listener = tokio::net::TcpListener;
    type Stream = tokio::net::TcpStream;
    async fn bind() -> (Self::Listener, SocketAddr) {
        let ln = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("tokio bind");
        let addr = ln.local_addr().unwrap();
        (ln, addr)
    }
    async fn accept(ln: Self::Listener) -> Self::Stream {
        let (s, _) = ln.accept().await.expect("tokio accept");
        s.set_nodelay(true).unwrap();
        s
    }
    async fn connect(addr: SocketAddr) -> Self::Stream {
        let s = tokio::net::TcpStream::connect(addr).await.expect("tokio connect");
        s.set_nodelay(true).unwrap();
        s
    }
    async fn read_msg<'a>(s: &'a mut Self::Stream, buf: &'a mut [u8; MSG]) -> bool {
        use tokio::io::AsyncReadExt;
        match s.read_exact(buf).await {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => false,
            Err(e) => panic!("tokio read: {e}"),
        }
    }
    async fn write_msg<'a>(s: &'a mut Self::Stream, buf: &'a [u8; MSG]) {
        use tokio::io::AsyncWriteExt;
        s.write_all(buf).await.expect("tokio write");
    }
}

/// `iters` runs: per run, a fresh connection to a fresh echo server, then [`ROUND_TRIPS`]
/// timed round trips, each echo checked. Returns the total time of the round trips.
async fn runs<S: System>(iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let (ln, addr) = S::bind().await;
        S::spawn(async move {
            let mut conn = S::accept(ln).await;
            let mut buf = [0; MSG];
            while S::read_msg(&mut conn, &mut buf).await {
                S::write_msg(&mut conn, &buf).await;
            }
        });
        let mut conn = S::connect(addr).await;
        let mut buf = [0; MSG];
        let start = Instant::now();
        for i in 0..ROUND_TRIPS {
            let msg = message(i);
            S::write_msg(&mut conn, &msg).await;
            assert!(S::read_msg(&mut conn, &mut buf).await, "early end of stream");
            assert_eq!(buf, msg, "round trip {i}: wrong echo");
        }
        total += start.elapsed();
        // Dropping the client closes the connection: the server reads end-of-stream and ends.
    }
    total
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("net_tcp_echo_rtt_64B");
    g.throughput(Throughput::Elements(ROUND_TRIPS))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(20));

    let goro_rt = goro::runtime::Builder::new().max_procs(WORKERS).build().expect("goro runtime");
    // The client is a G, which any M may run; the main G waits for it.
    g.bench_function("goro", |b| {
        b.iter_custom(|iters| goro_rt.block_on(async move { goro::go(runs::<Goro>(iters)).await.unwrap() }))
    });
    // The client is the main G itself (block_on's future), which only M0 runs.
    g.bench_function("goro_main_g", |b| b.iter_custom(|iters| goro_rt.block_on(runs::<Goro>(iters))));
    drop(goro_rt);

    let tokio_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(WORKERS).enable_io().build().expect("tokio runtime");
    // The client is a spawned task: main as a task on the runtime, not the block_on thread.
    g.bench_function("tokio", |b| {
        b.iter_custom(|iters| tokio_rt.block_on(tokio_rt.spawn(runs::<Tokio>(iters))).unwrap())
    });
    g.finish();
}

criterion_group!(net, benches);
criterion_main!(net);
