//! sysmon: the runtime's monitor thread, which runs with no P (Go's `sysmon`).
//!
//! For now it prints the `GORO_DEBUG=schedtrace=N` line every N ms; retaking Ps from blocked
//! Ms, preemption requests and the netpoll fallback join it with the hand-off work.

use crate::loom::{thread, AtomicBool, Ordering::*};
use crate::metrics::schedtrace_line;
use crate::park::Parker;
use crate::sched::Shared;
use std::io;
use std::sync::Arc as StdArc;
use std::time::{Duration, Instant};

pub(crate) struct Sysmon {
    stop: StdArc<Stop>,
    thread: thread::JoinHandle<()>,
}

struct Stop {
    flag: AtomicBool,
    parker: Parker,
}

impl Sysmon {
    pub(crate) fn start(shared: StdArc<Shared>, schedtrace: Duration) -> io::Result<Sysmon> {
        let stop = StdArc::new(Stop { flag: AtomicBool::new(false), parker: Parker::new() });
        let s = stop.clone();
        let thread = thread::Builder::new().name(format!("{}-sysmon", shared.config.thread_name)).spawn(move || {
            let mut next = Instant::now() + schedtrace;
            while !s.flag.load(Acquire) {
                let now = Instant::now();
                if now >= next {
                    eprintln!("{}", schedtrace_line(&shared));
                    next += schedtrace;
                    continue;
                }
                s.parker.park_timeout(next - now);
            }
        })?;
        Ok(Sysmon { stop, thread })
    }

    pub(crate) fn stop(self) {
        self.stop.flag.store(true, Release);
        self.stop.parker.unpark();
        let _ = self.thread.join();
    }
}
