//! A guided tour of goro: `cargo run --release --example tour`.
//!
//! Each step prints a heading and what it shows:
//!
//! 1. goroutines are cheap: 100_000 of them, counted by a `WaitGroup`;
//! 2. channels: an unbuffered ping-pong (the receiver runs next on the same P), and a pipeline
//!    that ends with `close` and `range`;
//! 3. `select!`: a timeout with `time::after`, and `default` for a non-blocking try;
//! 4. work stealing: CPU-busy Gs spawned on one P spread over every P's thread;
//! 5. a panicking G is caught and reported as a `JoinError`; the program goes on;
//! 6. `sync`: a `Mutex` counter under contention, and a `sync::Map` filled by several Gs;
//! 7. `context`: one cancel stops a tree of workers; a timeout;
//! 8. blocking calls: `goro::syscall` keeps the other Gs running, and a G spinning on ready
//!    channel operations is preempted after its 10 ms time slice;
//! 9. `net`: a TCP echo server on 127.0.0.1 and a few client Gs;
//! 10. `GORO_DEBUG=schedtrace=N` and `goro::runtime::metrics()`.

use goro::chan::{Receiver, Sender};
use goro::context::{self, Context};
use goro::sync::{Map, Mutex, WaitGroup};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `#[goro::main]` turns `async fn main` into `fn main() { goro::run(async { .. }) }`: this
/// thread becomes M0 and runs the body as the main G, like Go's `func main`.
#[goro::main]
async fn main() {
    println!("goro tour: {} Ps (GORO_MAXPROCS overrides the CPU count)\n", goro::runtime::max_procs());
    goroutines().await;
    channels().await;
    select_with_timeouts().await;
    work_stealing().await;
    panics_are_caught().await;
    sync_types().await;
    contexts().await;
    blocking_calls().await;
    net_echo().await;
    schedtrace();
}

/// Prints a step's heading.
fn heading(title: &str) {
    println!("== {title}");
}

/// 1. Spawning is cheap: a G is a heap-allocated future with an 88-byte header.
async fn goroutines() {
    heading("1. goroutines: 100_000 Gs and a WaitGroup");
    let start = Instant::now();
    let wg = WaitGroup::new();
    let sum = Arc::new(AtomicU64::new(0));
    for i in 0..100_000u64 {
        let sum = sum.clone();
        // Go 1.25's wg.Go: add(1), spawn, done() when the G ends.
        wg.go(async move {
            sum.fetch_add(i, Ordering::Relaxed);
        });
    }
    wg.wait().await;
    println!(
        "   sum = {} in {:.1?} ({:.0} ns per G, spawn to done)\n",
        sum.load(Ordering::Relaxed),
        start.elapsed(),
        start.elapsed().as_nanos() as f64 / 100_000.0
    );
}

/// 2. Channels with Go's semantics.
async fn channels() {
    heading("2. channels: ping-pong on unbuffered channels, then a pipeline");
    let (ping_tx, ping_rx) = goro::chan::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::<u64>(0);
    goro::go(async move {
        // `for v := range ping`: ends when the channel is closed.
        while let Some(v) = ping_rx.recv().await {
            pong_tx.send(v + 1).await.unwrap();
        }
    });
    let n = 100_000;
    let start = Instant::now();
    for i in 0..n {
        ping_tx.send(i).await.unwrap();
        assert_eq!(pong_rx.recv().await, Some(i + 1));
    }
    drop(ping_tx); // closes `ping`: the ponger's loop ends
    println!(
        "   {n} round trips: {:.0} ns each (a send hands the value straight to the waiting receiver \
         and wakes it into this P's runnext slot)",
        start.elapsed().as_nanos() as f64 / n as f64
    );

    // gen -> sq -> sum, each stage a G, each channel closed by its only sender.
    fn gen(nums: Vec<u64>) -> Receiver<u64> {
        let (tx, rx) = goro::chan(0);
        goro::go(async move {
            for n in nums {
                tx.send(n).await.unwrap();
            }
        }); // `tx` dropped: the channel closes, as `defer close(out)` would
        rx
    }
    fn sq(input: Receiver<u64>) -> Receiver<u64> {
        let (tx, rx) = goro::chan(0);
        goro::go(async move {
            while let Some(n) = input.recv().await {
                tx.send(n * n).await.unwrap();
            }
        });
        rx
    }
    let total: u64 = {
        let out = sq(sq(gen((1..=10).collect())));
        let mut t = 0;
        while let Some(v) = out.recv().await {
            t += v;
        }
        t
    };
    println!("   pipeline gen -> sq -> sq: the sum of n^4 for n in 1..=10 is {total}\n");
}

/// 3. `select!`: Go's select, with timeouts from `goro::time`.
async fn select_with_timeouts() {
    heading("3. select!: a timeout, and default");
    let (tx, rx) = goro::chan::<&str>(0);
    goro::go(async move {
        goro::time::sleep(Duration::from_millis(50)).await;
        let _ = tx.send("slow answer").await; // fails: nobody is listening any more
    });
    let start = Instant::now();
    let got = goro::select! {
        recv(rx) -> v => format!("got {v:?}"),
        recv(goro::time::after(Duration::from_millis(10))) -> _ => "timed out".to_owned(),
    };
    println!("   waited {:.1?}: {got}", start.elapsed());

    let (tx, _rx) = goro::chan::<u32>(1);
    let mut outcomes = Vec::new();
    for v in [1, 2] {
        outcomes.push(goro::select! {
            send(&tx, v) -> _ => "sent",
            default => "full, did not block",
        });
    }
    println!("   select with default on a channel of capacity 1: {}, then {}\n", outcomes[0], outcomes[1]);
}

/// 4. Work stealing: Gs spawned on one P are stolen by the other Ps' idle Ms.
async fn work_stealing() {
    heading("4. work stealing: 64 CPU-busy Gs spawned from one G");
    let start = Instant::now();
    let handles: Vec<_> = (0..64)
        .map(|_| {
            goro::go(async {
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(2) {
                    std::hint::spin_loop();
                }
                std::thread::current().id()
            })
        })
        .collect();
    let mut threads = HashSet::new();
    for h in handles {
        threads.insert(h.await.unwrap());
    }
    let m = goro::runtime::metrics();
    println!(
        "   they ran on {} threads; {} steals moved {} Gs; 64 x 2 ms of work took {:.1?} of wall time\n",
        threads.len(),
        m.steals,
        m.stolen_gs,
        start.elapsed()
    );
}

/// 5. A panic in a G is caught: it does not take the program down.
async fn panics_are_caught() {
    heading("5. a panicking G");
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {})); // keep the demo's output quiet
    let err = goro::go(async { panic!("boom") }).await.unwrap_err();
    std::panic::set_hook(prev);
    println!("   is_panic() = {}: {err}", err.is_panic());
    let answer = goro::go(async { 6 * 7 }).await.unwrap();
    println!("   main goes on; the next G returned {answer}\n");
}

/// 6. Go's sync package.
async fn sync_types() {
    heading("6. sync: Mutex and sync::Map");
    let counter = Arc::new(Mutex::new(0u64));
    let wg = WaitGroup::new();
    for _ in 0..4 {
        let c = counter.clone();
        wg.go(async move {
            for _ in 0..100_000 {
                *c.lock().await += 1; // unlocked when the guard drops
            }
        });
    }
    wg.wait().await;
    println!("   4 Gs x 100_000 increments under one Mutex: {}", *counter.lock().await);

    let words = Arc::new(Map::<String, usize>::new());
    let text = "the quick brown fox jumps over the lazy dog the end";
    for chunk in text.split(' ').collect::<Vec<_>>().chunks(3) {
        let (words, chunk): (_, Vec<String>) = (words.clone(), chunk.iter().map(|s| s.to_string()).collect());
        wg.go(async move {
            for w in chunk {
                // Go's LoadOrStore: the first G to see a word records its length.
                let len = w.len();
                words.load_or_store(w, len);
            }
        });
    }
    wg.wait().await;
    let mut seen = Vec::new();
    words.range(|k, v| {
        seen.push(format!("{k}:{v}"));
        true
    });
    seen.sort();
    println!("   sync::Map of distinct words: {} entries [{}]\n", seen.len(), seen.join(" "));
}

/// 7. Go's context package: cancellation that reaches a whole tree.
async fn contexts() {
    heading("7. context: one cancel stops a tree of workers; a timeout");
    let (ctx, cancel) = context::with_cancel(&Context::background());
    let wg = WaitGroup::new();
    let ticks = Arc::new(AtomicU64::new(0));
    for _ in 0..8 {
        let (child, _cancel_child) = context::with_cancel(&ctx);
        let ticks = ticks.clone();
        wg.go(async move {
            let tick = goro::time::Ticker::new(Duration::from_millis(1));
            loop {
                goro::select! {
                    recv(child.done()) -> _ => return,
                    recv(&tick.c) -> _ => { ticks.fetch_add(1, Ordering::Relaxed); }
                }
            }
        });
    }
    goro::time::sleep(Duration::from_millis(20)).await;
    cancel();
    wg.wait().await;
    println!("   8 workers ticked {} times, then all stopped at one cancel()", ticks.load(Ordering::Relaxed));

    let (ctx, _cancel) = context::with_timeout(&Context::background(), Duration::from_millis(5));
    ctx.done().recv().await;
    println!("   with_timeout(5 ms): err() = {}\n", ctx.err().expect("done"));
}

/// 8. A G that blocks, and a G that never waits.
async fn blocking_calls() {
    heading("8. blocking calls and preemption");
    // Two Gs (one per P) sleep in goro::syscall while a third pair exchanges messages. The
    // exchange runs in a G of its own: the main future is polled only on its own thread, which
    // also runs Gs, so a syscall there would hold the main future up (not the other Gs).
    let (n, took) = goro::go(async {
        let (tx, rx): (Sender<u64>, Receiver<u64>) = goro::chan(0);
        let blockers: Vec<_> = (0..goro::runtime::max_procs())
            .map(|_| goro::go(async { goro::syscall(|| std::thread::sleep(Duration::from_millis(100))) }))
            .collect();
        let start = Instant::now();
        goro::go(async move {
            for i in 0..1000 {
                tx.send(i).await.unwrap();
            }
        });
        let mut n = 0;
        while rx.recv().await.is_some() {
            n += 1;
        }
        let took = start.elapsed();
        for b in blockers {
            b.await.unwrap();
        }
        (n, took)
    })
    .await
    .unwrap();
    println!(
        "   while every P's G slept 100 ms in goro::syscall, {n} messages went through in {took:.1?} (hand-offs: {})",
        goro::runtime::metrics().handoffs
    );

    // A G looping on channel operations that are always ready never waits; sysmon asks it to
    // yield after a 10 ms time slice, and its next channel operation does. Shown on a runtime
    // of one P (run on a plain thread, which this G waits for inside goro::syscall).
    let (waited, ops, preemptions) = goro::syscall(|| {
        std::thread::spawn(|| {
            let rt = goro::runtime::Builder::new().max_procs(1).build().expect("runtime");
            rt.block_on(async {
                let stop = Arc::new(AtomicBool::new(false));
                let s = stop.clone();
                let spinner = goro::go(async move {
                    let (tx, rx) = goro::chan::<u64>(1);
                    let started = Instant::now();
                    // Queued behind us on the only P: it runs only when we yield.
                    let newcomer = goro::go(async move { s.store(true, Ordering::Relaxed) });
                    let mut ops = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        tx.send(1).await.unwrap();
                        ops += rx.recv().await.unwrap();
                    }
                    newcomer.await.unwrap();
                    (started.elapsed(), ops)
                });
                let (waited, ops) = spinner.await.unwrap();
                (waited, ops, goro::runtime::metrics().preemptions)
            })
        })
        .join()
        .expect("the preemption demo")
    });
    println!(
        "   on 1 P, a G queued behind one spinning on ready channel ops ran after {waited:.1?} \
         ({ops} spinner round trips; {preemptions} preemption request)\n"
    );
}

/// 9. Go's net package on the netpoller: a G waiting on a socket costs no thread.
async fn net_echo() {
    heading("9. net: a TCP echo server and 16 client Gs");
    let listener = goro::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().unwrap();
    goro::go(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else { return };
            goro::go(async move {
                let mut buf = [0u8; 1024];
                loop {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if conn.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    let wg = WaitGroup::new();
    let echoed = Arc::new(AtomicU64::new(0));
    for c in 0..16u8 {
        let echoed = echoed.clone();
        wg.go(async move {
            let conn = goro::net::TcpStream::connect(addr).await.expect("connect");
            for i in 0..100u8 {
                let msg = [c, i, c ^ i];
                conn.write_all(&msg).await.unwrap();
                let mut back = [0u8; 3];
                conn.read_exact(&mut back).await.unwrap();
                assert_eq!(back, msg);
                echoed.fetch_add(3, Ordering::Relaxed);
            }
        });
    }
    wg.wait().await;
    println!(
        "   {} bytes echoed; threads: {} for all those connections\n",
        echoed.load(Ordering::Relaxed),
        goro::runtime::metrics().threads
    );
}

/// 10. Go's schedtrace, and the metrics behind it.
fn schedtrace() {
    heading("10. watching the scheduler");
    println!("   to watch the scheduler, run: GORO_DEBUG=schedtrace=100 cargo run --release --example tour");
    println!("   goro::runtime::metrics() at the end of the tour:");
    println!("{:#?}", goro::runtime::metrics());
}
