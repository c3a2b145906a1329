//! The process's threads as goro sees them: the calling thread's kernel id, whether a thread is
//! asleep in the kernel and for how long (sysmon's test for a blocked poll), and which threads
//! are goro's own (the deadlock census of `checkdead`).

use crate::loom::AtomicU64;
use std::collections::HashMap;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

/// What one look at a thread of this process found (sysmon's test for a blocked poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Running, or waiting for a CPU (Linux's state `R`), or it ran during the look.
    Awake,
    /// Asleep in the kernel (state `S` or `D`: in a blocking call, waiting for a lock, for I/O,
    /// for a page) all through the look. `busy` is the thread's time on a CPU plus its time
    /// waiting for one, since it started; `None` where Linux does not keep that account.
    Asleep { busy: Option<Duration> },
}

/// Looks at thread `tid` of this process; `None` where `/proc/self/task/<tid>/stat` cannot be
/// read.
///
/// The state is what tells a blocked poll from a computing one. goro once judged by
/// `schedstat`'s run and run-queue times alone, and took computing threads for blocked ones on
/// a loaded machine: the kernel adds a runnable thread's queue wait to `schedstat` only when
/// the thread gets a CPU again, so a thread that waited for one looked asleep meanwhile. Read
/// around a sleeping state, though, `schedstat` is exact: a thread asleep has had its last run
/// and its last wait accounted (it got a CPU, then gave it up), and if the account is the same
/// before and after the state was read, the thread did not run in between. Between two such
/// looks, the time it spent asleep is the time passed minus what `busy` grew by: sysmon
/// measures a poll's sleep that way (see `sysmon::Naps`) rather than assume that a thread
/// asleep at two looks slept all along.
pub(crate) fn look_at(tid: u32) -> Option<Look> {
    if tid == 0 {
        return None;
    }
    let before = schedstat(tid);
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
    let state = stat[stat.rfind(')')? + 1..].trim_start().chars().next()?;
    if !matches!(state, 'S' | 'D') {
        return Some(Look::Awake);
    }
    Some(match (before, schedstat(tid)) {
        (Some(b), Some(a)) if a == b => Look::Asleep { busy: Some(Duration::from_nanos(b[0].saturating_add(b[1]))) },
        // It got a CPU between the reads: awake for this look.
        (Some(_), Some(_)) => Look::Awake,
        _ => Look::Asleep { busy: None },
    })
}

/// Thread `tid`'s `schedstat`: nanoseconds on a CPU, nanoseconds waiting for one, and the number
/// of times it got one.
fn schedstat(tid: u32) -> Option<[u64; 3]> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut fields = s.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// Waits for a lock of goro's own: the contended path of the runtime's mutexes (the `shim`
/// that every goro crate locks with) and of the channels' lock. While `wait` runs, the P this
/// thread holds says so in its `lock_waits` (odd while waiting, one more when done), for
/// sysmon: the thread may sleep there for as long as the lock's holder is descheduled, which on
/// a loaded machine is milliseconds, and that is no blocking call of the user's (see
/// `sysmon::Naps`). Two stores to the P's counters, and only once the lock was found taken.
#[inline]
pub fn lock_wait<R>(wait: impl FnOnce() -> R) -> R {
    #[cfg(not(loom))]
    {
        let waits = LOCK_WAITS.try_with(std::cell::Cell::get).unwrap_or(std::ptr::null());
        if !waits.is_null() {
            // SAFETY: published by `set_lock_waits` for the P this thread holds, valid until this
            // thread lets the P go, which it cannot do while it waits here.
            let waits = unsafe { &*waits };
            crate::p::bump(waits, 1);
            let r = wait();
            crate::p::bump(waits, 1);
            return r;
        }
    }
    wait()
}

#[cfg(not(loom))]
thread_local! {
    /// The `lock_waits` counter of the P this thread holds, or null.
    static LOCK_WAITS: std::cell::Cell<*const AtomicU64> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Publishes `waits` as the `lock_waits` counter of the P this thread holds (null: none).
///
/// # Safety
/// `waits` stays valid until it is replaced by another call on this thread (the `Shared` that
/// owns the P outlives the M holding it), and only this thread writes it meanwhile (it holds
/// the P).
pub(crate) unsafe fn set_lock_waits(waits: *const AtomicU64) {
    #[cfg(not(loom))]
    let _ = LOCK_WAITS.try_with(|c| c.set(waits));
    #[cfg(loom)]
    let _ = waits;
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
