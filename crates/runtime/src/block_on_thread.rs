//! Running a future to completion on the calling thread, for the `*_blocking` methods of goro's
//! channels and locks (`send_blocking`, `recv_blocking`, `select_blocking!`, `lock_blocking`,
//! `wait_blocking`): the future is pinned on this thread's stack, and its waker unparks the
//! thread. The waker is made once per thread and reused, so blocking allocates nothing.

use crate::loom::{thread, AtomicBool, Ordering::*};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

struct ThreadWake {
    thread: thread::Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.notified.swap(true, Release) {
            self.thread.unpark();
        }
    }
}

fn new_thread_wake() -> (Arc<ThreadWake>, Waker) {
    let tw = Arc::new(ThreadWake { thread: thread::current(), notified: AtomicBool::new(false) });
    let waker = Waker::from(tw.clone());
    (tw, waker)
}

#[cfg(not(loom))]
thread_local! {
    static WAKE: (Arc<ThreadWake>, Waker) = new_thread_wake();
}
#[cfg(loom)]
loom::thread_local! {
    static WAKE: (Arc<ThreadWake>, Waker) = new_thread_wake();
}

/// Blocks the calling thread until `fut` completes, parking it (not spinning) while `fut` is
/// pending. Needs no runtime.
///
/// Called from inside a G this blocks the whole M; the docs of every `*_blocking` method that
/// uses it say so.
///
/// ```
/// assert_eq!(goro_runtime::block_on_thread(async { 7 }), 7);
/// ```
pub fn block_on_thread<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    WAKE.with(|(tw, waker)| {
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
            while !tw.notified.swap(false, Acquire) {
                thread::park();
            }
        }
    })
}
