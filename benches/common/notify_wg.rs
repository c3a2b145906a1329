//! The wait group a tokio user writes (tokio has none), shared by W9's `tokio_notify` row
//! (`benches/sync.rs`) and `benches/examples/w9_timeline.rs`, which include this file.

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A counter and a `Notify` that the `done()` bringing the counter to zero fires for every
/// waiter.
pub struct NotifyWaitGroup {
    count: AtomicUsize,
    zero: tokio::sync::Notify,
}

impl NotifyWaitGroup {
    pub fn new() -> Self {
        NotifyWaitGroup { count: AtomicUsize::new(0), zero: tokio::sync::Notify::new() }
    }

    pub fn add(&self, n: usize) {
        self.count.fetch_add(n, Ordering::AcqRel);
    }

    pub fn done(&self) {
        match self.count.fetch_sub(1, Ordering::AcqRel) {
            0 => panic!("negative wait group counter"),
            1 => self.zero.notify_waiters(),
            _ => {}
        }
    }

    pub async fn wait(&self) {
        loop {
            // Register before checking: a `notify_waiters` after the check wakes this waiter.
            let mut notified = pin!(self.zero.notified());
            notified.as_mut().enable();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}
