//! Tests that run in a child process: the test binary re-runs itself with a filter selecting
//! one test, and an environment variable that tells the test it is the child. For what a
//! process prints on stderr, or reads from its environment (setting variables in a
//! multi-threaded test process is racy).

use super::HANG;
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "GORO_TEST_CHILD";

/// Whether this process is the child spawned for `test`.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == test)
}

pub struct ChildOutput {
    pub stdout: String,
    pub stderr: String,
}

/// Runs this test binary again with only `test` selected, with the goro variables cleared and
/// then set to `env`. Fails if the child fails or runs past the hang limit.
pub fn run_child(test: &str, env: &[(&str, &str)]) -> ChildOutput {
    let (status, output) = run_child_status(test, env);
    assert!(
        status.success(),
        "child {test} with {env:?} failed ({status}):\n--- stdout\n{}\n--- stderr\n{}",
        output.stdout,
        output.stderr
    );
    assert!(output.stdout.contains("1 passed"), "the child did not run its test:\n{}", output.stdout);
    output
}

/// [`run_child`] that lets the child fail: its exit status and output. Fails only if the child
/// runs past the hang limit.
pub fn run_child_status(test: &str, env: &[(&str, &str)]) -> (ExitStatus, ChildOutput) {
    let mut cmd = Command::new(std::env::current_exe().expect("current_exe"));
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, test);
    run_command(cmd, env, test)
}

/// Runs `cmd` (its goro variables cleared, then set to `env`), collecting its output; fails if
/// it runs past the hang limit. `what` names it in that failure.
pub fn run_command(mut cmd: Command, env: &[(&str, &str)], what: &str) -> (ExitStatus, ChildOutput) {
    cmd.env_remove("GORO_DEBUG")
        .env_remove("GORO_MAXPROCS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn the child");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + HANG;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("child {what} with {env:?} hung; stderr:\n{}", err.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(10)); // polling a process, not synchronizing Gs
    };
    (status, ChildOutput { stdout: out.join().unwrap(), stderr: err.join().unwrap() })
}
