//! The completion flag shared by the criterion benches (`runtime.rs`, `chan.rs`, `sync.rs`).

use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::task::{Poll, Waker};

/// A one-shot completion flag that any executor can await: an atomic flag plus the waker of the
/// single waiter, so both systems are measured with the same wait-for-all mechanism.
#[derive(Default)]
pub struct Signal {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Signal {
    pub fn set(&self) {
        self.set.store(true, Ordering::Release);
        // Taking the lock after the store pairs with the check under the lock in `wait`: the
        // waiter either sees the flag or has left a waker here for us to wake.
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }

    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(|cx| {
            if self.set.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            let mut slot = self.waker.lock().unwrap();
            if self.set.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            *slot = Some(cx.waker().clone());
            Poll::Pending
        })
    }
}
