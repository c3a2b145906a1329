//! W7 (4 producers and 4 consumers on one rendezvous channel, 400_000 messages) for goro's
//! `chan(0)` with 2 Ps and with 1, and for kanal's `bounded_async(0)` on a tokio runtime with 2
//! workers and with 1, alternated in one process. Before each set of runs it samples what a
//! cache line costs to move between the two CPUs (two threads taking turns on one atomic, as
//! `benches/floor/handoff_modes.rs`), since that cost is bimodal on the project's VM; for each
//! run it reads, from `/proc`, the CPU time and the context switches of the runtime's threads.
//! It prints a line per set, then per mode (hand-over under or over 100 ns) the medians.
//!
//! What it showed (benches/README.md, "Reading the rows"): both systems' one-thread cost is
//! the row's floor, and which of the two a runtime with two threads gets close to depends on
//! whether it keeps the channel's lines on one CPU.
//!
//! ```sh
//! cargo run --release -p goro-benches --example w7_probe -- 30          # sets of runs
//! W7_PROFILE=goro1 perf record -g target/release/examples/w7_probe 200  # one system alone
//! ```
use std::time::Instant;
// Its `main` is the program run by hand.
#[allow(dead_code)]
#[path = "../floor/handoff_modes.rs"]
mod handoff_modes;
#[path = "../common/w7.rs"]
mod w7;
use w7::{goro_run, kanal_run, MSGS};

/// ns per hand-over of one cache line between two threads (`floor/handoff_modes.rs`).
fn handoff_ns() -> f64 {
    handoff_modes::sample(100_000)
}

/// CPU ns, voluntary and involuntary context switches of this process's threads whose name
/// starts with one of `prefixes`.
fn threads(prefixes: &[&str]) -> (u64, u64, u64) {
    let (mut cpu, mut vol, mut invol) = (0, 0, 0);
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let p = t.path();
        let name = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if !prefixes.iter().any(|x| name.starts_with(x)) {
            continue;
        }
        let sched = std::fs::read_to_string(p.join("schedstat")).unwrap_or_default();
        cpu += sched.split_whitespace().next().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let status = std::fs::read_to_string(p.join("status")).unwrap_or_default();
        for l in status.lines() {
            let n = || l.split_whitespace().nth(1).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            if l.starts_with("voluntary_ctxt_switches") {
                vol += n();
            } else if l.starts_with("nonvoluntary_ctxt_switches") {
                invol += n();
            }
        }
    }
    (cpu, vol, invol)
}

/// ns per message, CPU ns per message, voluntary and involuntary context switches in the run.
type Sample = (f64, f64, f64, f64);

fn measure(prefixes: &[&str], run: impl FnOnce()) -> Sample {
    let (c0, v0, i0) = threads(prefixes);
    let t0 = Instant::now();
    run();
    let ns = t0.elapsed().as_nanos() as f64;
    let (c1, v1, i1) = threads(prefixes);
    let m = MSGS as f64;
    (ns / m, (c1 - c0) as f64 / m, (v1 - v0) as f64, (i1 - i0) as f64)
}

fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(20);
    // A name of its own for the thread that runs goro's `block_on`, whose CPU time and switches
    // count as goro's (it is an M while in `block_on`).
    std::thread::Builder::new().name("probe-main".into()).spawn(move || probe(n)).unwrap().join().unwrap();
}

fn probe(n: usize) {
    let g = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    let g1 = goro::runtime::Builder::new().max_procs(1).thread_name("one-m").build().unwrap();
    let t = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let t1 = tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("one-w").build().unwrap();
    let goro2 = || g.block_on(goro_run());
    let goro1 = || g1.block_on(goro_run());
    let kanal2 = || t.block_on(t.spawn(kanal_run())).unwrap();
    let kanal1 = || t1.block_on(t1.spawn(kanal_run())).unwrap();
    if let Ok(what) = std::env::var("W7_PROFILE") {
        // One system only, for a profiler: W7_PROFILE=goro|goro1|kanal|kanal1.
        for _ in 0..n {
            match what.as_str() {
                "goro" => goro2(),
                "goro1" => goro1(),
                "kanal" => kanal2(),
                _ => kanal1(),
            }
        }
        return;
    }
    for _ in 0..3 {
        goro2();
        goro1();
        kanal2();
        kanal1();
    }
    // The goro runtimes' Ms and the thread in their `block_on`; tokio's workers.
    let (goro_threads, goro1_threads) = (["goro-", "probe-main"], ["one-m", "probe-main"]);
    let (tokio_threads, tokio1_threads) = (["tokio-"], ["one-w"]);
    println!("ns/msg, CPU ns/msg, voluntary+involuntary context switches per run of {MSGS} messages");
    let mut rows: Vec<(f64, [Sample; 4])> = Vec::new();
    for i in 0..n {
        let mode = handoff_ns();
        let mut s = [(0.0, 0.0, 0.0, 0.0); 4];
        // Alternate who goes first.
        let order: [usize; 4] = if i % 2 == 0 { [0, 1, 2, 3] } else { [2, 3, 0, 1] };
        for k in order {
            s[k] = match k {
                0 => measure(&goro_threads, goro2),
                1 => measure(&goro1_threads, goro1),
                2 => measure(&tokio_threads, kanal2),
                _ => measure(&tokio1_threads, kanal1),
            };
        }
        let show = |x: Sample| format!("{:5.1} {:5.1} {:3}+{:<3}", x.0, x.1, x.2, x.3);
        println!(
            "hand-over {mode:5.1} ns | goro 2P {} | goro 1P {} | kanal 2w {} | kanal 1w {} | goro/kanal {:.2}",
            show(s[0]),
            show(s[1]),
            show(s[2]),
            show(s[3]),
            s[0].0 / s[2].0
        );
        rows.push((mode, s));
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    for (label, near) in [("near (hand-over < 100 ns)", true), ("far (hand-over >= 100 ns)", false)] {
        let sel: Vec<_> = rows.iter().filter(|r| (r.0 < 100.0) == near).collect();
        if sel.is_empty() {
            continue;
        }
        let col = |k: usize, f: fn(&Sample) -> f64| med(sel.iter().map(|r| f(&r.1[k])).collect());
        let show = |k: usize| format!("{:5.1} {:5.1} {:5.0}", col(k, |x| x.0), col(k, |x| x.1), col(k, |x| x.2 + x.3));
        println!(
            "{label}, {} pairs, medians | goro 2P {} | goro 1P {} | kanal 2w {} | kanal 1w {} | goro/kanal {:.2}",
            sel.len(),
            show(0),
            show(1),
            show(2),
            show(3),
            med(sel.iter().map(|r| r.1[0].0 / r.1[2].0).collect())
        );
    }
}
