//! The one place this crate gets its synchronization primitives from: loom's under
//! `--cfg loom`, std's and parking_lot's otherwise (see goro-runtime's shim for the pattern).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `UnsafeCell` with loom's closure API (`with`, `with_mut`), so loom can track accesses.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(data: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(data))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A lock with explicit `lock`/`unlock` (no guard), so `select` can hold the locks of several
/// channels at once, taken in address order.
///
/// parking_lot's raw mutex outside loom (spins briefly, then parks). Under loom a flag plus a
/// loom mutex and condvar to sleep on while the flag is taken (a spin lock would make loom
/// explore every spin), and the holder's model-thread id, so misuse is reported as such.
#[cfg(not(loom))]
pub(crate) struct RawLock(parking_lot::RawMutex);

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
        return RawLock(<parking_lot::RawMutex as parking_lot::lock_api::RawMutex>::INIT);
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
        parking_lot::lock_api::RawMutex::lock(&self.0);
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
        // SAFETY: caller contract.
        unsafe {
            parking_lot::lock_api::RawMutex::unlock(&self.0)
        };
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
