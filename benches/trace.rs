//! What the execution trace costs (`goro::trace`), per event and on a workload:
//!
//! - `event/off` and `event/on`: one `goro::trace::log` while no trace runs (the check every
//!   event site pays) and while a trace writes to `io::sink()` (the full cost of an event: its
//!   record in the thread's buffer, plus its share of the `goro-trace` thread's JSON, which
//!   runs on the other core of these 2-core machines);
//! - `pingpong/off` and `pingpong/on`: two Gs bounce a value over two unbuffered channels,
//!   20_000 round trips (each round trip: two polls that block, two wake-ups, so about ten
//!   events).
//!
//! Throughput is in events (`event`) and round trips (`pingpong`): ns per unit = 1e9 / thrpt.
//! README's overhead table comes from this and from `GORO_BENCH_TRACE=1` runs of
//! `benches/compare.sh` (see `common/exec.rs`).
//!
//! `cargo bench -p goro-benches --bench trace`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const ROUND_TRIPS: usize = 20_000;
const EVENTS: usize = 10_000;

async fn pingpong() {
    let (a_tx, a_rx) = goro::chan::<u64>(0);
    let (b_tx, b_rx) = goro::chan::<u64>(0);
    let echo = goro::go(async move {
        while let Some(v) = a_rx.recv().await {
            b_tx.send(v).await.unwrap();
        }
    });
    for i in 0..ROUND_TRIPS as u64 {
        a_tx.send(i).await.unwrap();
        assert_eq!(b_rx.recv().await, Some(i));
    }
    drop(a_tx);
    echo.await.unwrap();
}

fn with_trace<R>(on: bool, f: impl FnOnce() -> R) -> R {
    if on {
        goro::trace::start(std::io::sink()).expect("trace");
    }
    let r = f();
    if on {
        goro::trace::stop().expect("trace");
    }
    r
}

fn benches(c: &mut Criterion) {
    let rt = goro::runtime::Builder::new().max_procs(2).build().expect("runtime");
    let mut g = c.benchmark_group("event");
    g.throughput(Throughput::Elements(EVENTS as u64));
    for on in [false, true] {
        g.bench_function(if on { "on" } else { "off" }, |b| {
            with_trace(on, || {
                b.iter(|| {
                    rt.block_on(async {
                        for i in 0..EVENTS {
                            goro::trace::log("bench", if i % 2 == 0 { "even" } else { "odd" });
                        }
                    })
                })
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("pingpong");
    g.throughput(Throughput::Elements(ROUND_TRIPS as u64));
    for on in [false, true] {
        g.bench_function(if on { "on" } else { "off" }, |b| with_trace(on, || b.iter(|| rt.block_on(pingpong()))));
    }
    g.finish();
}

criterion_group!(trace, benches);
criterion_main!(trace);
