//! The process's threads as goro sees them: the calling thread's kernel id, whether a thread is
//! asleep in the kernel (sysmon's test for a blocked poll), and which threads are goro's own
//! (the deadlock census of `checkdead`).

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;

/// Whether thread `tid` of this process is asleep in the kernel (Linux's state `S` or `D`:
/// waiting in a blocking call, for a lock, for I/O), as opposed to running or waiting for a CPU
/// (`R`); `None` where `/proc/self/task/<tid>/stat` cannot be read.
///
/// This is what tells a blocked poll from a computing one. goro used to infer it from
/// `schedstat`'s run and run-queue times, and took computing threads for blocked ones on a
/// loaded machine: the kernel adds a runnable thread's queue wait to `schedstat` only when the
/// thread gets a CPU again, so a thread that waited for one looked asleep meanwhile.
pub(crate) fn thread_asleep(tid: u32) -> Option<bool> {
    if tid == 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
    let state = stat[stat.rfind(')')? + 1..].trim_start().chars().next()?;
    Some(matches!(state, 'S' | 'D'))
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
