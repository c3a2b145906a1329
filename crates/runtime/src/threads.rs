//! The process's threads as goro sees them: the calling thread's kernel id, whether a thread is
//! asleep in the kernel and for how long (sysmon's test for a blocked poll), and which threads
//! are goro's own (the deadlock census of `checkdead`); and the threads a runtime started
//! ([`Threads`]).

use crate::loom::{thread, AtomicUsize, Mutex, Ordering::Relaxed};
use std::collections::HashMap;
use std::sync::Mutex as StdMutex;
use std::time::{Duration, Instant};

/// What one look at a thread of this process found (sysmon's test for a blocked poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Running, or waiting for a CPU (Linux's state `R`), or it ran during the look.
    Awake,
    /// Asleep in the kernel (state `S` or `D`: in a blocking call, waiting for a lock, for I/O,
    /// for a page) all through the look. `busy` is the thread's time on a CPU plus its time
    /// waiting for one, since it started, as of `at`; `None` where Linux does not keep that
    /// account.
    Asleep { busy: Option<Duration>, at: Instant },
}

/// Looks at thread `tid` of this process; `None` where `/proc/self/task/<tid>/stat` cannot be
/// read.
///
/// The state is what tells a blocked poll from a computing one. `schedstat`'s run and run-queue
/// times alone cannot: on a loaded machine they take computing threads for blocked ones, since
/// the kernel adds a runnable thread's queue wait to `schedstat` only when the thread gets a
/// CPU again, so a thread that waits for one looks asleep meanwhile. A
/// sleeping thread's accounts are settled, though: its last wait for a CPU was added when it
/// got one, and its CPU time stops. So the look reads the thread's CPU clock (exact even while
/// it runs, unlike `schedstat`'s run time, which moves at scheduler ticks) and `schedstat`,
/// then the state, then both again: a sleeping state between equal readings is a settled
/// look. Equal CPU clocks also rule out a thread that shows a sleeping state while it is still
/// on its CPU (about to sleep, or spinning in a kernel lock such as `brk`'s). Between two
/// settled looks, the time the thread spent asleep is the time passed minus what `busy` grew
/// by: sysmon measures a poll's sleep that way (see `sysmon::Naps`) rather than assume that a
/// thread asleep at two looks slept all along.
pub(crate) fn look_at(tid: u32) -> Option<Look> {
    if tid == 0 {
        return None;
    }
    let before = accounts(tid);
    // Between the readings: a settled look's accounts hold all through them, so this instant
    // is exact for them, where the caller's clock may be off by however long the caller was
    // descheduled before it looked (sysmon is, on a loaded machine).
    let at = Instant::now();
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
    let state = stat[stat.rfind(')')? + 1..].trim_start().chars().next()?;
    if !matches!(state, 'S' | 'D') {
        return Some(Look::Awake);
    }
    Some(match (before, accounts(tid)) {
        (Some(b), Some(a)) if a == b => Look::Asleep { busy: Some(b.busy()), at },
        // It ran between the readings: awake for this look.
        (Some(_), Some(_)) => Look::Awake,
        _ => Look::Asleep { busy: None, at },
    })
}

/// What Linux has accounted of a thread: nanoseconds on a CPU, nanoseconds waiting for one, and
/// the number of times it got one.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Accounts {
    cpu: u64,
    run_delay: u64,
    pcount: u64,
}

impl Accounts {
    fn busy(self) -> Duration {
        Duration::from_nanos(self.cpu.saturating_add(self.run_delay))
    }
}

/// Thread `tid`'s accounts: its CPU clock, and `schedstat`'s wait for a CPU and count of runs.
/// `None` where Linux keeps no such accounts (no `schedstat`, or one that reads all zeros,
/// as kernels without schedstats and delay accounting print).
fn accounts(tid: u32) -> Option<Accounts> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut fields = s.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    let (run, run_delay, pcount) = (fields.next()??, fields.next()??, fields.next()??);
    if pcount == 0 {
        return None;
    }
    Some(Accounts { cpu: thread_cpu_ns(tid).unwrap_or(run), run_delay, pcount })
}

/// Thread `tid`'s CPU clock (Linux's per-thread `CLOCK_SCHED` clock, what
/// `pthread_getcpuclockid` gives for a `pthread_t`), in nanoseconds.
#[cfg(all(target_os = "linux", not(loom)))]
fn thread_cpu_ns(tid: u32) -> Option<u64> {
    // The kernel's clock id for "thread `tid`'s scheduler CPU time" (`MAKE_THREAD_CPUCLOCK(tid,
    // CPUCLOCK_SCHED)` in include/linux/posix-timers.h): the id inverted, shifted past 3 bits
    // that say per-thread (4) and which clock (2).
    let clock = (!(tid as libc::clockid_t) << 3) | 6;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable `timespec`; an unknown clock id (a thread that exited)
    // makes the call fail with EINVAL, and writes nothing.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    u64::try_from(ts.tv_sec).ok()?.checked_mul(1_000_000_000)?.checked_add(u64::try_from(ts.tv_nsec).ok()?)
}

#[cfg(not(all(target_os = "linux", not(loom))))]
fn thread_cpu_ns(_tid: u32) -> Option<u64> {
    None
}

/// The calling thread's kernel id on Linux (0 elsewhere), cached per thread: Ms publish it in
/// their P for sysmon.
pub(crate) fn current_tid() -> u32 {
    #[cfg(not(loom))]
    {
        thread_local! {
            static TID: std::cell::Cell<u32> = const { std::cell::Cell::new(u32::MAX) };
        }
        TID.with(|c| {
            if c.get() == u32::MAX {
                // "/proc/thread-self" links to "<pid>/task/<tid>".
                let tid = std::fs::read_link("/proc/thread-self")
                    .ok()
                    .and_then(|p| p.file_name()?.to_str()?.parse().ok())
                    .unwrap_or(0);
                c.set(tid);
            }
            c.get()
        })
    }
    #[cfg(loom)]
    0
}

/// Threads that are goro's (Ms, sysmon) or blocked in a goro blocking call right now, by kernel
/// thread id, with a count (a thread may be both, nested).
static OWN_THREADS: StdMutex<Option<HashMap<u32, usize>>> = StdMutex::new(None);

/// While alive, the calling thread counts as goro's own for the census.
pub(crate) struct OwnThread(u32);

impl OwnThread {
    pub(crate) fn enter() -> OwnThread {
        let tid = current_tid();
        if tid != 0 {
            let mut own = OWN_THREADS.lock().unwrap_or_else(|e| e.into_inner());
            *own.get_or_insert_with(HashMap::new).entry(tid).or_insert(0) += 1;
        }
        OwnThread(tid)
    }
}

impl Drop for OwnThread {
    fn drop(&mut self) {
        if self.0 == 0 {
            return;
        }
        let mut own = OWN_THREADS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = own.as_mut() {
            if let Some(n) = map.get_mut(&self.0) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&self.0);
                }
            }
        }
    }
}

/// The kernel ids of the threads that are goro's own right now.
pub(crate) fn own_threads() -> Vec<u32> {
    let own = OWN_THREADS.lock().unwrap_or_else(|e| e.into_inner());
    own.as_ref().map_or_else(Vec::new, |m| m.keys().copied().collect())
}

/// The threads a runtime started as Ms (Go's `newm`): their join handles, the ids handed out,
/// and how many are alive. Closed at shutdown, after which no thread starts.
pub(crate) struct Threads {
    /// The handles of the threads started and not yet joined; `None` once closed.
    handles: Mutex<Option<Vec<thread::JoinHandle<()>>>>,
    /// Ids handed out (Go's `mcount`): the next thread is named with the next one.
    started: AtomicUsize,
    /// Threads that have not ended yet.
    alive: AtomicUsize,
}

/// Why [`Threads::start`] started no thread.
pub(crate) enum Refused {
    /// The runtime shuts down.
    Closed,
    /// The limit, or the OS refused: what to warn about.
    Failed(String),
}

/// How a runtime names and sizes its Ms (`Builder::{thread_name, thread_stack_size,
/// max_threads}`).
pub(crate) struct Spec<'a> {
    pub(crate) name: &'a str,
    pub(crate) stack_size: Option<usize>,
    pub(crate) max_threads: usize,
}

impl Threads {
    pub(crate) fn new() -> Threads {
        Threads { handles: Mutex::new(Some(Vec::new())), started: AtomicUsize::new(0), alive: AtomicUsize::new(0) }
    }

    /// Starts a thread running `body`, named `<name>-<id>`. `body` calls [`exited`](Self::exited)
    /// as its last step.
    pub(crate) fn start(&self, spec: Spec<'_>, body: impl FnOnce() + Send + 'static) -> Result<(), Refused> {
        let mut handles = self.handles.lock();
        let Some(list) = handles.as_mut() else {
            return Err(Refused::Closed);
        };
        if self.alive.load(Relaxed) >= spec.max_threads {
            return Err(Refused::Failed(format!(
                "goro: runtime exceeded {} threads (Builder::max_threads)",
                spec.max_threads
            )));
        }
        let id = self.started.fetch_add(1, Relaxed) + 1;
        let mut b = thread::Builder::new().name(format!("{}-{id}", spec.name));
        if let Some(size) = spec.stack_size {
            b = b.stack_size(size);
        }
        self.alive.fetch_add(1, Relaxed);
        match b.spawn(body) {
            Ok(h) => {
                list.push(h);
                Ok(())
            }
            Err(e) => {
                self.alive.fetch_sub(1, Relaxed);
                Err(Refused::Failed(format!("goro: failed to start an M thread: {e}")))
            }
        }
    }

    /// The calling thread, started by [`start`](Self::start), ends.
    pub(crate) fn exited(&self) {
        self.alive.fetch_sub(1, Relaxed);
    }

    /// Threads started and not yet ended.
    pub(crate) fn alive(&self) -> usize {
        self.alive.load(Relaxed)
    }

    /// Closes the list (no thread starts from now on) and takes the handles of the threads
    /// started, to join them.
    pub(crate) fn close(&self) -> Vec<thread::JoinHandle<()>> {
        self.handles.lock().take().unwrap_or_default()
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::{mpsc, Arc};

    /// A thread parked in the kernel is a settled look whose accounts do not move while it
    /// sleeps; a thread that computes is never found asleep, and its CPU clock moves.
    #[test]
    fn a_sleeping_thread_is_settled_and_a_computing_one_awake() {
        let stop = Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = mpsc::channel();
        let threads: Vec<_> = [false, true]
            .into_iter()
            .map(|computes| {
                let (stop, tid_tx) = (stop.clone(), tid_tx.clone());
                std::thread::spawn(move || {
                    tid_tx.send((computes, current_tid())).unwrap();
                    while !stop.load(SeqCst) {
                        if computes {
                            std::hint::spin_loop();
                        } else {
                            std::thread::park();
                        }
                    }
                })
            })
            .collect();
        let (mut sleeper, mut spinner) = (0, 0);
        for _ in 0..2 {
            match tid_rx.recv().unwrap() {
                (false, tid) => sleeper = tid,
                (true, tid) => spinner = tid,
            }
        }
        // Until the sleeper has parked (a look during its start-up finds it running).
        let deadline = Instant::now() + Duration::from_secs(30);
        let first = loop {
            match look_at(sleeper).expect("Linux has /proc") {
                Look::Asleep { busy: Some(b), .. } => break b,
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
                other => panic!("the parked thread never looked asleep: {other:?}"),
            }
        };
        std::thread::sleep(Duration::from_millis(20));
        let again = look_at(sleeper);
        assert!(
            matches!(again, Some(Look::Asleep { busy: Some(b), .. }) if b == first),
            "its accounts moved while it slept: {again:?}"
        );
        let cpu = thread_cpu_ns(spinner).expect("a thread's CPU clock");
        for _ in 0..100 {
            assert_eq!(look_at(spinner), Some(Look::Awake), "a computing thread looked asleep");
        }
        // It moves whenever the thread gets a CPU (on a loaded machine, not at every look).
        let deadline = Instant::now() + Duration::from_secs(30);
        while thread_cpu_ns(spinner).unwrap() == cpu {
            assert!(Instant::now() < deadline, "the computing thread's CPU clock stood still");
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, SeqCst);
        for t in threads {
            t.thread().unpark();
            t.join().unwrap();
        }
    }
}
