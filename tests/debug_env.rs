//! The environment knobs: `GORO_DEBUG=schedtrace=N` prints Go's `SCHED` line every N ms, and
//! `GORO_MAXPROCS` sets the default number of Ps; a value that cannot be parsed is reported in
//! one line on stderr and the default is used.
//!
//! The runtime reads the environment when a runtime is built, and setting variables in a
//! multi-threaded test process is racy, so each case runs in a child process: the test binary
//! re-runs itself with a filter selecting that one test, and an environment variable that tells
//! the test it is the child.

mod common;

use common::child::{is_child, run_child};
use common::*;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A parsed `SCHED` line.
#[derive(Debug)]
struct Sched {
    ms: u64,
    gomaxprocs: usize,
    idleprocs: usize,
    threads: usize,
    spinningthreads: usize,
    idlethreads: usize,
    runqueue: usize,
    local: Vec<usize>,
}

/// Parses `SCHED <n>ms: gomaxprocs=<n> idleprocs=<n> threads=<n> spinningthreads=<n>
/// idlethreads=<n> runqueue=<n> [<n> <n> ..]`, exactly that shape.
fn parse_sched(line: &str) -> Result<Sched, String> {
    let bad = |why: &str| format!("{why}: {line:?}");
    let rest = line.strip_prefix("SCHED ").ok_or_else(|| bad("no SCHED prefix"))?;
    let (ms, rest) = rest.split_once("ms: ").ok_or_else(|| bad("no `<n>ms: `"))?;
    let ms = ms.parse().map_err(|_| bad("time is not a number"))?;
    let (fields, locals) = rest.split_once(" [").ok_or_else(|| bad("no ` [`"))?;
    let locals = locals.strip_suffix(']').ok_or_else(|| bad("no closing `]`"))?;
    let local = locals
        .split(' ')
        .map(|n| n.parse::<usize>().map_err(|_| bad("local run queue length is not a number")))
        .collect::<Result<Vec<_>, _>>()?;
    let names = ["gomaxprocs", "idleprocs", "threads", "spinningthreads", "idlethreads", "runqueue"];
    let fields: Vec<&str> = fields.split(' ').collect();
    if fields.len() != names.len() {
        return Err(bad("wrong number of fields"));
    }
    let mut values = [0usize; 6];
    for ((field, name), value) in fields.iter().zip(names).zip(values.iter_mut()) {
        let v = field.strip_prefix(name).and_then(|v| v.strip_prefix('=')).ok_or_else(|| bad(name))?;
        *value = v.parse().map_err(|_| bad(name))?;
    }
    let [gomaxprocs, idleprocs, threads, spinningthreads, idlethreads, runqueue] = values;
    Ok(Sched { ms, gomaxprocs, idleprocs, threads, spinningthreads, idlethreads, runqueue, local })
}

#[test]
fn sched_line_parser() {
    let s =
        parse_sched("SCHED 100ms: gomaxprocs=2 idleprocs=0 threads=4 spinningthreads=1 idlethreads=1 runqueue=3 [5 0]")
            .unwrap();
    assert_eq!((s.ms, s.gomaxprocs, s.idleprocs, s.threads), (100, 2, 0, 4));
    assert_eq!((s.spinningthreads, s.idlethreads, s.runqueue, s.local), (1, 1, 3, vec![5, 0]));
    assert!(parse_sched("SCHED 1ms: gomaxprocs=2 idleprocs=0 threads=4 runqueue=3 [5 0]").is_err());
    assert!(parse_sched("SCHED 1ms: gomaxprocs=2 idleprocs=0 threads=4 spinningthreads=1 idlethreads=1 runqueue=3")
        .is_err());
    assert!(parse_sched(
        "SCHED xms: gomaxprocs=2 idleprocs=0 threads=4 spinningthreads=1 idlethreads=1 runqueue=3 [5]"
    )
    .is_err());
}

/// About `d` of scheduler work: Gs that spin a little and yield, on every P.
fn busy_workload(d: Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    goro::run(async move {
        let start = Instant::now();
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let stop = stop.clone();
                goro::go(async move {
                    while !stop.load(SeqCst) {
                        spin_for(Duration::from_micros(50));
                        goro::runtime::yield_now().await;
                    }
                })
            })
            .collect();
        while start.elapsed() < d {
            // Spawning keeps the queues and the idle lists moving.
            goro::go(async { spin_for(Duration::from_micros(20)) }).await.unwrap();
        }
        stop.store(true, SeqCst);
        for h in hs {
            h.await.unwrap();
        }
    });
}

#[test]
fn schedtrace_prints_sched_lines() {
    const ME: &str = "schedtrace_prints_sched_lines";
    if is_child(ME) {
        assert_eq!(goro::run(async { goro::runtime::max_procs() }), 2);
        busy_workload(Duration::from_millis(500));
        return;
    }
    let out = run_child(ME, &[("GORO_DEBUG", "schedtrace=50"), ("GORO_MAXPROCS", "2")]);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("SCHED")).collect();
    assert!(!lines.is_empty(), "no SCHED line in the child's stderr:\n{}", out.stderr);
    let mut last_ms = 0;
    for line in &lines {
        let s = parse_sched(line).unwrap();
        assert_eq!(s.gomaxprocs, 2, "{line}");
        assert_eq!(s.local.len(), 2, "one run queue length per P: {line}");
        assert!(s.idleprocs <= 2, "{line}");
        assert!(s.spinningthreads <= s.threads && s.idlethreads <= s.threads, "{line}");
        assert!(s.ms >= last_ms, "time goes forward: {lines:?}");
        last_ms = s.ms;
        let _ = s.runqueue;
    }
    // Nothing else on stderr: no warning about the variables, which are valid.
    let other: Vec<&str> = out.stderr.lines().filter(|l| !l.starts_with("SCHED")).collect();
    assert!(other.iter().all(|l| !l.contains("GORO_")), "{other:?}");
}

/// No `GORO_DEBUG`: no SCHED line.
#[test]
fn no_schedtrace_by_default() {
    const ME: &str = "no_schedtrace_by_default";
    if is_child(ME) {
        busy_workload(Duration::from_millis(100));
        return;
    }
    let out = run_child(ME, &[]);
    assert!(!out.stderr.contains("SCHED"), "{}", out.stderr);
}

#[test]
fn bad_goro_maxprocs_warns_once_and_uses_the_default() {
    const ME: &str = "bad_goro_maxprocs_warns_once_and_uses_the_default";
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if is_child(ME) {
        // Asked several times, in several ways: still one warning.
        assert_eq!(goro::runtime::max_procs(), cpus);
        assert_eq!(goro::run(async { goro::runtime::max_procs() }), cpus);
        assert_eq!(goro::runtime::Builder::new().build().unwrap().metrics().procs, cpus);
        assert_eq!(goro::run(async { goro::go(async { 7 }).await.unwrap() }), 7);
        // An explicit max_procs does not look at the variable.
        assert_eq!(
            goro::runtime::Builder::new().max_procs(1).build().unwrap().block_on(async { goro::runtime::max_procs() }),
            1
        );
        return;
    }
    for bad in ["abc", "0", "-1", ""] {
        let out = run_child(ME, &[("GORO_MAXPROCS", bad)]);
        let warnings: Vec<&str> = out.stderr.lines().filter(|l| l.contains("GORO_MAXPROCS")).collect();
        assert_eq!(warnings.len(), 1, "GORO_MAXPROCS={bad:?}: {:?}", out.stderr);
        assert!(warnings[0].contains(&format!("{bad:?}")), "the warning quotes the value: {}", warnings[0]);
    }
}

#[test]
fn goro_maxprocs_sets_the_default() {
    const ME: &str = "goro_maxprocs_sets_the_default";
    if is_child(ME) {
        assert_eq!(goro::runtime::max_procs(), 3);
        assert_eq!(goro::run(async { goro::runtime::max_procs() }), 3);
        assert_eq!(goro::runtime::Builder::new().build().unwrap().metrics().procs, 3);
        assert_eq!(goro::runtime::Builder::new().max_procs(5).build().unwrap().metrics().procs, 5);
        return;
    }
    for v in ["3", " 3 "] {
        let out = run_child(ME, &[("GORO_MAXPROCS", v)]);
        assert!(!out.stderr.contains("GORO_MAXPROCS"), "{}", out.stderr);
    }
}

#[test]
fn bad_goro_debug_warns_and_runs() {
    const ME: &str = "bad_goro_debug_warns_and_runs";
    if is_child(ME) {
        assert_eq!(goro::run(async { goro::go(async { 7 }).await.unwrap() }), 7);
        assert_eq!(goro::run(async { 8 }), 8);
        return;
    }
    for bad in ["bogus", "schedtrace=soon", "nosuchknob=1"] {
        let out = run_child(ME, &[("GORO_DEBUG", bad)]);
        let warnings: Vec<&str> = out.stderr.lines().filter(|l| l.contains("GORO_DEBUG")).collect();
        assert_eq!(warnings.len(), 1, "GORO_DEBUG={bad:?}: {:?}", out.stderr);
        assert!(!out.stderr.contains("SCHED"), "{}", out.stderr);
    }
}
