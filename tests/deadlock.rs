//! Deadlock detection: when every G is parked and nothing can wake them, goro says so as Go
//! does (`all goroutines are asleep - deadlock!` and a dump), and it never cries wolf: a G that
//! sleeps, is in a syscall, waits on I/O, or waits on a channel that a plain thread, a tokio
//! task or another runtime's G will use, is no deadlock (the tokio case is in
//! `tests/extra/tests/tokio_interop.rs`, in the member that may depend on tokio).
//!
//! Every case runs in a child process (this binary, re-run with one test selected): a process
//! has one census of threads, and a test's watchdog or another test's thread would count as a
//! thread that could wake a G (keeping the report from being made). The parent bounds each
//! child with the hang limit. The child builds its runtime as `#[goro::test]` does
//! (`in_test_harness`: the harness's main thread holds no channel), except where a case says.

mod common;

use common::child::{is_child, run_child, run_child_status, run_command};
use goro::runtime::Builder;
use std::process::Command;
use std::time::Duration;

const DEADLOCK: &str = "all goroutines are asleep - deadlock!";

fn rt(procs: usize) -> goro::runtime::Runtime {
    Builder::new().max_procs(procs).in_test_harness().build().unwrap()
}

/// Runs `case` (a child test that must panic with the deadlock report) and returns the report.
fn expect_report(case: &str) -> String {
    let (status, out) = run_child_status(case, &[]);
    assert!(!status.success(), "child {case} did not fail:\n{}\n{}", out.stdout, out.stderr);
    let start = out.stderr.find(DEADLOCK).unwrap_or_else(|| panic!("no deadlock report from {case}:\n{}", out.stderr));
    out.stderr[start..].to_owned()
}

/// The simplest case: main waits on a channel whose sender is held by a G that waits on
/// another channel. `block_on` panics with the report; the dump names both waits.
fn main_and_a_g_wait_on_each_other(procs: usize) {
    let _ = rt(procs).block_on(async {
        let (tx, rx) = goro::chan::<u32>(0);
        let (_other_tx, other_rx) = goro::chan::<u32>(0);
        goro::go(async move {
            other_rx.recv().await;
            tx.send(1).await.unwrap();
        });
        rx.recv().await
    });
}

#[test]
fn case_channels_1p() {
    if is_child("case_channels_1p") {
        main_and_a_g_wait_on_each_other(1);
    }
}

#[test]
fn case_channels_2p() {
    if is_child("case_channels_2p") {
        main_and_a_g_wait_on_each_other(2);
    }
}

#[test]
fn channels_deadlock_is_reported() {
    for case in ["case_channels_1p", "case_channels_2p"] {
        let report = expect_report(case);
        assert!(report.contains("goroutine 0 [chan receive]:\nmain future of block_on"), "{report}");
        assert!(report.contains("[chan receive]:\ncreated by the main future at tests/deadlock.rs:"), "{report}");
    }
}

#[test]
fn case_waitgroup() {
    if is_child("case_waitgroup") {
        rt(2).block_on(async {
            let wg = goro::sync::WaitGroup::new();
            wg.add(2);
            let w = wg.clone();
            goro::go(async move { w.done() });
            wg.wait().await; // one done() short forever
        });
    }
}

#[test]
fn case_mutex_locked_twice() {
    if is_child("case_mutex_locked_twice") {
        rt(2).block_on(async {
            let m = goro::sync::Mutex::new(0);
            let h = goro::go(async move {
                let _a = m.lock().await;
                let _b = m.lock().await; // Go: fatal error, all goroutines are asleep
            });
            let _ = h.await;
        });
    }
}

#[test]
fn waitgroup_and_mutex_deadlocks_are_reported() {
    let report = expect_report("case_waitgroup");
    assert!(report.contains("goroutine 0 [sync.WaitGroup.Wait]:"), "{report}");
    let report = expect_report("case_mutex_locked_twice");
    assert!(report.contains("[sync.Mutex.Lock]:"), "{report}");
    assert!(report.contains("goroutine 0 [goroutine join]:"), "{report}");
}

/// `#[goro::main]`'s way: main is a G, and a deadlock prints Go's `fatal error` line and the
/// dump on stderr and exits with status 2 (what the macro expands to, called directly).
#[test]
fn case_goro_main() {
    if is_child("case_goro_main") {
        use goro::__private::{Main, RunAsG as _};
        let main = Main::new(Builder::new().max_procs(2).in_test_harness(), async {
            let (_tx, rx) = goro::chan::<u32>(0);
            rx.recv().await;
        });
        main.run();
    }
}

#[test]
fn goro_main_exits_2_on_deadlock() {
    let (status, out) = run_child_status("case_goro_main", &[]);
    assert_eq!(status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains(&format!("fatal error: {DEADLOCK}\n\ngoroutine 1 [chan receive]:")), "{}", out.stderr);
}

/// `#[goro::test]` fails a test that deadlocks, with the report as its panic.
#[goro::test(max_procs = 2)]
#[should_panic(expected = "all goroutines are asleep - deadlock!")]
async fn case_goro_test_deadlocks() {
    if !is_child("case_goro_test_deadlocks") {
        // Run in the parent, it would share the census with the other tests' threads: pass
        // there (should_panic needs the panic), the child is the real case.
        panic!("{DEADLOCK} (not the child)");
    }
    let (_tx, rx) = goro::chan::<u32>(0);
    rx.recv().await;
}

#[test]
fn goro_test_fails_on_deadlock() {
    let out = run_child("case_goro_test_deadlocks", &[]);
    assert!(out.stderr.contains(DEADLOCK) && out.stderr.contains("[chan receive]"), "{}", out.stderr);
}

/// The example shows the report as a program prints it.
#[test]
fn the_deadlock_example_exits_2() {
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples").join("deadlock");
    if !example.exists() {
        // `cargo test` builds the examples; a lone `--test deadlock` run may not have.
        eprintln!("skipped: {} not built", example.display());
        return;
    }
    let (status, out) = run_command(Command::new(example), &[], "examples/deadlock");
    assert_eq!(status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.starts_with(&format!("fatal error: {DEADLOCK}")), "{}", out.stderr);
}

// ---- No false reports ---------------------------------------------------------------------

/// Waits `quiet` for the runtime to (wrongly) report, with every G parked on what the case
/// sets up; the case passes if it ends normally.
fn no_report_for(case: &str) {
    run_child(case, &[]);
}

const QUIET: Duration = Duration::from_millis(1500);

#[test]
fn case_sleep() {
    if is_child("case_sleep") {
        rt(2).block_on(async {
            let h = goro::go(async { goro::time::sleep(QUIET).await });
            h.await.unwrap();
        });
    }
}

#[test]
fn case_syscall() {
    if is_child("case_syscall") {
        rt(1).block_on(async {
            let h = goro::go(async { goro::syscall(|| std::thread::sleep(QUIET)) });
            h.await.unwrap();
        });
    }
}

/// A plain thread holds the sender and sends after 300 ms (and one that sends after longer
/// than the grace period: a thread that could wake a G keeps the report from being made).
#[test]
fn case_plain_thread() {
    if is_child("case_plain_thread") {
        rt(2).block_on(async {
            let (tx, rx) = goro::chan::<u32>(0);
            let (tx2, rx2) = goro::chan::<u32>(0);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                tx.send_blocking(1).unwrap();
                std::thread::sleep(QUIET);
                tx2.send_blocking(2).unwrap();
            });
            assert_eq!(rx.recv().await, Some(1));
            assert_eq!(rx2.recv().await, Some(2));
        });
    }
}

/// Two runtimes: a G of one waits on a channel that a G of the other (sleeping meanwhile) will
/// send on.
#[test]
fn case_two_runtimes() {
    if is_child("case_two_runtimes") {
        let a = rt(1);
        let b = rt(1);
        let (tx, rx) = goro::chan::<u32>(0);
        let sender = b.spawn(async move {
            goro::time::sleep(QUIET).await;
            tx.send(3).await.unwrap();
        });
        assert_eq!(a.block_on(async move { rx.recv().await }), Some(3));
        sender.join().unwrap();
    }
}

/// A G waits for a datagram that the parent process sends after the grace period: a G waiting
/// on I/O can be woken by the network.
#[test]
fn case_io_wait() {
    if is_child("case_io_wait") {
        rt(2).block_on(async {
            let sock = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let port = sock.local_addr().unwrap().port();
            std::fs::write(std::env::var("GORO_TEST_PORT_FILE").unwrap(), port.to_string()).unwrap();
            let mut buf = [0u8; 8];
            let (n, _) = sock.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"wake");
        });
    }
}

#[test]
fn no_report_for_sleep_syscall_threads_runtimes() {
    for case in ["case_sleep", "case_syscall", "case_plain_thread", "case_two_runtimes"] {
        no_report_for(case);
    }
}

#[test]
fn no_report_for_io_wait() {
    let file = std::env::temp_dir().join(format!("goro-deadlock-io-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["case_io_wait", "--exact", "--nocapture", "--test-threads=1"])
        .env("GORO_TEST_CHILD", "case_io_wait")
        .env("GORO_TEST_PORT_FILE", &file);
    let file2 = file.clone();
    let sender = std::thread::spawn(move || {
        let port = loop {
            if let Ok(p) = std::fs::read_to_string(&file2) {
                if let Ok(p) = p.trim().parse::<u16>() {
                    break p;
                }
            }
            std::thread::sleep(Duration::from_millis(10)); // polling a file, not synchronizing Gs
        };
        std::thread::sleep(QUIET);
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.send_to(b"wake", ("127.0.0.1", port)).unwrap();
    });
    let (status, out) = run_command(cmd, &[], "case_io_wait");
    sender.join().unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(status.success(), "{}\n{}", out.stdout, out.stderr);
}

/// A deadlock while a flight recorder runs (Go 1.25's `trace.FlightRecorder`).
#[test]
fn case_flight_recorder() {
    if is_child("case_flight_recorder") {
        let mut fr = goro::trace::FlightRecorder::new(goro::trace::FlightRecorderConfig::default());
        fr.start().unwrap();
        main_and_a_g_wait_on_each_other(2);
    }
}

/// The report names a file with the recorder's window, and the window shows the two waits.
#[test]
fn a_running_flight_recorder_writes_its_window_with_the_deadlock_report() {
    let report = expect_report("case_flight_recorder");
    const SAYS: &str = "the flight recorder's trace of the last seconds: ";
    let at = report.find(SAYS).unwrap_or_else(|| panic!("no trace named in the report:\n{report}"));
    let path = report[at + SAYS.len()..].lines().next().unwrap().trim().to_owned();
    let json = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let _ = std::fs::remove_file(&path);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{path}: not JSON: {e}"));
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let blocked: Vec<&str> =
        events.iter().filter(|e| e["cat"] == "block").filter_map(|e| e["args"]["reason"].as_str()).collect();
    assert!(blocked.iter().filter(|r| **r == "chan receive").count() >= 2, "the two receives: {blocked:?}");
}

/// A deadlock across two runtimes: a G of each waits on the other.
#[test]
fn case_cross_runtime_deadlock() {
    if is_child("case_cross_runtime_deadlock") {
        let a = rt(1);
        let b = rt(1);
        let (tx_a, rx_a) = goro::chan::<u32>(0);
        let (tx_b, rx_b) = goro::chan::<u32>(0);
        let _hb = b.spawn(async move {
            rx_b.recv().await;
            tx_a.send(1).await.unwrap();
        });
        a.block_on(async move {
            rx_a.recv().await;
            drop(tx_b);
        });
    }
}

#[test]
fn cross_runtime_deadlock_is_reported() {
    let report = expect_report("case_cross_runtime_deadlock");
    assert!(report.contains("goroutine 0 [chan receive]:"), "{report}");
}

/// `deadlock_detection(false)` turns the report off: the child deadlocks for good, and the
/// parent, having seen no report for three times the grace period, kills it.
#[test]
fn case_detection_off() {
    if is_child("case_detection_off") {
        let rt = Builder::new().max_procs(1).in_test_harness().deadlock_detection(false).build().unwrap();
        let (_tx, rx) = goro::chan::<u32>(0);
        eprintln!("parked");
        rt.block_on(async move { rx.recv().await });
        eprintln!("unreachable: the main future returned");
    }
}

#[test]
fn detection_off_reports_nothing() {
    use std::io::Read;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["case_detection_off", "--exact", "--nocapture", "--test-threads=1"])
        .env("GORO_TEST_CHILD", "case_detection_off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3)); // the observation window, not a synchronization
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(still_running && err.contains("parked") && !err.contains(DEADLOCK), "{err}");
}

// ---- A G inside `goro::syscall` is never asleep ---------------------------------------------
//
// Go never reports a deadlock while a goroutine is in a system call: the call may return. Each
// case below parks every other G on that G, and holds the call (or a wait that runs as one)
// for longer than the grace period, so that sysmon has long retaken the P of the M inside it.

/// How long the calls below block: well past the grace period (1 s) and sysmon's retake.
const IN_SYSCALL: Duration = Duration::from_millis(2500);

/// A `#[goro::test]`'s G sleeps in `goro::syscall` while the test waits for it.
#[goro::test(max_procs = 2)]
async fn case_syscall_in_goro_test() {
    if is_child("case_syscall_in_goro_test") {
        goro::go(async { goro::syscall(|| std::thread::sleep(IN_SYSCALL)) }).await.unwrap();
    }
}

/// The same in a `#[goro::main]` program (what the macro expands to, called directly): it
/// must end normally, not print `fatal error` and exit 2.
#[test]
fn case_syscall_in_goro_main() {
    if is_child("case_syscall_in_goro_main") {
        use goro::__private::{Main, RunAsG as _};
        let main = Main::new(Builder::new().max_procs(2).in_test_harness(), async {
            goro::go(async { goro::syscall(|| std::thread::sleep(IN_SYSCALL)) }).await.unwrap();
        });
        main.run();
    }
}

/// A G reads its process's stdin, a pipe, inside `goro::syscall`; the parent process writes to
/// it only after `IN_SYSCALL`.
#[goro::test(max_procs = 2)]
async fn case_syscall_pipe_read() {
    if is_child("case_syscall_pipe_read") {
        let line = goro::go(async {
            goro::syscall(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(line, "wake\n");
    }
}

/// A `Once` whose action makes a long call in `goro::syscall`, and a second G waiting for that
/// action (its wait runs as a syscall too).
#[goro::test(max_procs = 2)]
async fn case_once_held_in_syscall() {
    if is_child("case_once_held_in_syscall") {
        let once = std::sync::Arc::new(goro::sync::Once::new());
        let (started_tx, started_rx) = goro::chan::<()>(0);
        let first = {
            let once = once.clone();
            goro::go(async move {
                once.call_once(|| {
                    started_tx.send_blocking(()).unwrap();
                    goro::syscall(|| std::thread::sleep(IN_SYSCALL));
                })
            })
        };
        started_rx.recv().await.unwrap();
        let second = goro::go(async move { once.call_once(|| unreachable!("the first action ran")) });
        first.await.unwrap();
        second.await.unwrap();
    }
}

/// A key whose `Eq` makes a long call (in `goro::syscall`) while the map's shard lock is held
/// for it; another G's store into that shard waits for the lock as a syscall.
#[goro::test(max_procs = 2)]
async fn case_map_shard_wait_held() {
    if is_child("case_map_shard_wait_held") {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        static SLOW: AtomicBool = AtomicBool::new(false);
        #[derive(Clone)]
        struct Key(u32);
        impl std::hash::Hash for Key {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                self.0.hash(h);
            }
        }
        impl PartialEq for Key {
            fn eq(&self, other: &Key) -> bool {
                if SLOW.swap(false, SeqCst) {
                    goro::syscall(|| std::thread::sleep(IN_SYSCALL));
                }
                self.0 == other.0
            }
        }
        impl Eq for Key {}
        let map = std::sync::Arc::new(goro::sync::Map::<Key, u32>::new());
        map.store(Key(1), 1); // in the dirty table: the next store of the key compares under the lock
        SLOW.store(true, SeqCst);
        let (m1, m2) = (map.clone(), map.clone());
        let slow = goro::go(async move { m1.store(Key(1), 2) });
        let waiter = goro::go(async move { m2.store(Key(1), 3) });
        slow.await.unwrap();
        waiter.await.unwrap();
        assert!(matches!(map.load(&Key(1)), Some(2 | 3)));
    }
}

#[test]
fn no_report_while_a_g_is_in_a_syscall() {
    for case in ["case_syscall_in_goro_test", "case_once_held_in_syscall", "case_map_shard_wait_held"] {
        no_report_for(case);
    }
    let (status, out) = run_child_status("case_syscall_in_goro_main", &[]);
    assert!(status.success(), "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn no_report_while_a_g_reads_a_pipe_in_a_syscall() {
    use std::io::Write;
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["case_syscall_pipe_read", "--exact", "--nocapture", "--test-threads=1"])
        .env("GORO_TEST_CHILD", "case_syscall_pipe_read")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(IN_SYSCALL); // the time the child's read stays blocked, not a synchronization
    stdin.write_all(b"wake\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}\n{stderr}");
}
