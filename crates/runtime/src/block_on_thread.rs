//! Running a future to completion on the calling thread, for the `*_blocking` methods of goro's
//! channels and locks (`send_blocking`, `recv_blocking`, `select_blocking!`, `lock_blocking`,
//! `wait_blocking`): the future is pinned on this thread's stack, and its waker unparks the
//! thread. The waker is made once per thread and reused, so blocking allocates nothing.

use crate::loom::{thread, AtomicBool, Ordering::*};
use std::future::Future;
use std::panic::Location;
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
/// Called from inside a G (or from the main future of `block_on`) it blocks the G's thread,
/// which is a misuse: the async form of the call parks only the G. goro survives it as Go
/// survives a blocking system call: the call runs as a [`syscall`](crate::syscall()), so the
/// thread's P is handed to another M while the thread sleeps, and the Gs the call makes
/// runnable (a sender freed by a blocking receive) go where a running P finds them. The first
/// such call at each call site prints one line on stderr naming it.
///
/// ```
/// assert_eq!(goro_runtime::__private::block_on_thread(async { 7 }), 7);
/// ```
#[track_caller]
pub fn block_on_thread<F: Future>(fut: F) -> F::Output {
    block_on_thread_for("the async form of this call", fut)
}

/// [`block_on_thread`] for a `*_blocking` method whose async form is `async_form` (what the
/// report of a call inside a G suggests instead, e.g. "`rx.recv().await`"). Not part of the
/// stable API.
#[doc(hidden)]
#[track_caller]
pub fn block_on_thread_for<F: Future>(async_form: &'static str, fut: F) -> F::Output {
    if crate::m::current(|ctx| ctx.is_some()) {
        let at = Location::caller();
        crate::config::warn_once_at("blocking call", at, || {
            format!(
                "goro: a blocking call at {at} runs inside a G and blocks its thread (the runtime hands its P to \
                 another thread meanwhile); use {async_form} instead"
            )
        });
        return crate::syscall(|| park_until_done(fut));
    }
    park_until_done(fut)
}

fn park_until_done<F: Future>(fut: F) -> F::Output {
    // Parked in a goro call, the thread can only be woken by a G: it does not keep a deadlock
    // from being reported (see `checkdead`).
    let _own = crate::threads::OwnThread::enter();
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

/// `JoinHandle::join`: the blocking call is this module's.
impl<T> crate::g::JoinHandle<T> {
    /// Blocks the calling thread until the G finishes, and returns its result.
    ///
    /// For plain threads. Inside a G, `.await` the handle instead: `join` blocks the G's
    /// thread (the runtime survives it as a blocking system call, handing the thread's P to
    /// another M meanwhile, and reports the call site once on stderr).
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    /// let h = rt.spawn(async { "done" });
    /// assert_eq!(h.join().unwrap(), "done");
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, crate::g::JoinError> {
        block_on_thread_for("`handle.await`", self)
    }
}
