//! The one place this crate gets its synchronization primitives from: loom's under
//! `--cfg loom`, std's otherwise (see goro-runtime's shim for the pattern).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`): goro-runtime's shim.
pub(crate) use goro_runtime::__private::shim::UnsafeCell;

/// A lock with explicit `lock`/`unlock` (no guard), so `select` can hold the locks of several
/// channels at once, taken in address order.
///
/// Outside loom a spin lock with exponential backoff: one `swap` to lock and a plain `Release`
/// store to unlock, so an uncontended lock/unlock pair costs one atomic read-modify-write, not
/// parking_lot's two (see `lock_contended` for the contended path). Under loom a flag plus a
/// loom mutex and condvar to sleep on while the flag is taken (a spin lock would make loom
/// explore every spin), and the holder's model-thread id, so misuse is reported as such.
#[cfg(not(loom))]
pub(crate) struct RawLock(std::sync::atomic::AtomicBool);

/// See the non-loom definition.
#[cfg(loom)]
pub(crate) struct RawLock {
    locked: loom::sync::atomic::AtomicBool,
    sleep: loom::sync::Mutex<()>,
    wake: loom::sync::Condvar,
    owner: std::sync::atomic::AtomicUsize,
}

#[cfg(loom)]
fn me() -> usize {
    // loom's thread ids print as `ThreadId(n)`; n is unique among a model's threads.
    let id = format!("{:?}", loom::thread::current().id());
    id.trim_start_matches("ThreadId(").trim_end_matches(')').parse::<usize>().expect("thread id") + 1
}

impl RawLock {
    pub(crate) fn new() -> RawLock {
        #[cfg(not(loom))]
        return RawLock(std::sync::atomic::AtomicBool::new(false));
        #[cfg(loom)]
        return RawLock {
            locked: loom::sync::atomic::AtomicBool::new(false),
            sleep: loom::sync::Mutex::new(()),
            wake: loom::sync::Condvar::new(),
            owner: std::sync::atomic::AtomicUsize::new(0),
        };
    }

    #[inline]
    pub(crate) fn lock(&self) {
        #[cfg(not(loom))]
        if self.0.swap(true, Ordering::Acquire) {
            self.lock_contended();
        }
        #[cfg(loom)]
        loop {
            if self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                self.owner.store(me(), Ordering::Relaxed);
                return;
            }
            let g = self.sleep.lock().unwrap();
            if self.locked.load(Ordering::Relaxed) {
                drop(self.wake.wait(g).unwrap());
            }
        }
    }

    /// The contended path: two rounds of backoff (32, then 64 `PAUSE`s), then short sleeps
    /// until the lock is free.
    ///
    /// Critical sections are a few dozen instructions and never run user code, so a lock that
    /// stays taken through both rounds is not held long: it is *fought over*, by Ms hammering
    /// one channel from both cores. Every attempt then steals the lock's cache line from the
    /// holder, and the pair pays a line transfer per operation. Sleeping takes this M out of
    /// the fight (Linux rounds the 10 µs up to its timer slack, about 60 µs), and the other M
    /// runs a burst of operations on a line it keeps. Measured on W6 (4+4 Gs, cap 128, 2 Ps):
    /// parking_lot's mutex 97 ns/msg; a lock that spins on read 130; backoff then
    /// `yield_now` 16–20; backoff then sleep (this) 15. On W7 (cap 0): `yield_now` 76, sleep
    /// 67. kanal's lock makes the same choice
    /// (it sleeps 1 ms). The cost is latency for the sleeping M's other Gs, bounded by one
    /// sleep per contended acquisition, and only when the lock is really fought over.
    #[cfg(not(loom))]
    #[cold]
    fn lock_contended(&self) {
        // A wait in goro's own lock, not a blocking call of the user's, to sysmon (the sleeps
        // below last as long as the holder is descheduled).
        goro_runtime::__private::shim::lock_wait(|| self.spin_then_sleep());
    }

    #[cfg(not(loom))]
    fn spin_then_sleep(&self) {
        const FIRST_SPIN: u32 = 32;
        const SPIN_ROUNDS: u32 = 2;
        const SLEEP: std::time::Duration = std::time::Duration::from_micros(10);
        let mut round = 0u32;
        loop {
            if round < SPIN_ROUNDS {
                for _ in 0..FIRST_SPIN << round {
                    std::hint::spin_loop();
                }
                round += 1;
            } else {
                std::thread::sleep(SLEEP);
            }
            if !self.0.load(Ordering::Relaxed) && !self.0.swap(true, Ordering::Acquire) {
                return;
            }
        }
    }

    /// Whether the calling model thread holds the lock.
    #[cfg(loom)]
    pub(crate) fn is_locked(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == me()
    }

    /// # Safety
    /// The calling thread holds the lock.
    #[inline]
    pub(crate) unsafe fn unlock(&self) {
        #[cfg(not(loom))]
        self.0.store(false, Ordering::Release);
        #[cfg(loom)]
        {
            assert!(self.is_locked(), "unlock of a lock this thread does not hold");
            self.owner.store(0, Ordering::Relaxed);
            self.locked.store(false, Ordering::Release);
            let _g = self.sleep.lock().unwrap();
            self.wake.notify_one();
        }
    }
}
