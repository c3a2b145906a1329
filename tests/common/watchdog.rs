//! The watchdog: a guard that aborts a hung test process.

use std::sync::mpsc;
use std::time::Duration;

/// Kills the whole test process if the guard is still alive after `limit`: a hung runtime
/// otherwise hangs `cargo test` forever instead of failing.
pub struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn watchdog_for(name: &'static str, limit: Duration) -> Watchdog {
    let (tx, rx) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(format!("watchdog-{name}"))
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("test {name} hung for more than {limit:?}: aborting the test process");
                std::process::abort();
            }
        })
        .expect("spawn watchdog");
    Watchdog { stop: Some(tx), thread: Some(thread) }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
