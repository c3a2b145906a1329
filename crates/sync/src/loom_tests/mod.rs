//! Loom models of the sync types' races (`RUSTFLAGS="--cfg loom" cargo test -p goro-sync --lib
//! --release loom_`). Threads block with the `*_blocking` calls (`goro_runtime::__private::block_on_thread`,
//! whose waker unparks a loom thread), and cancellation is modelled by polling a future once by
//! hand and dropping it while other threads act, so every hand-off, wake-up and cancellation
//! path runs under the model checker. Data that a lock or a wait must order is a loom
//! `UnsafeCell`: loom reports any access that the primitive failed to order.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

mod cond;
mod map;
mod mutex;
mod rwmutex;
mod semaphore;
mod waitgroup;

/// Polls `fut` once with a waker that does nothing, then drops it: a future given up at its
/// first await point. Returns whether that one poll completed it.
fn poll_once_then_drop<F: Future>(fut: F) -> bool {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    matches!(fut.as_mut().poll(&mut cx), Poll::Ready(_))
}
