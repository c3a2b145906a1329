//! `yield_now`: Go's `runtime.Gosched`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Yields the processor, letting other Gs run (Go's `runtime.Gosched()`).
///
/// The G is put at the back of its P's run queue and resumes later. It is a plain future: on
/// another executor it yields to that executor the same way.
///
/// ```
/// goro::run(async {
///     for _ in 0..3 {
///         goro::runtime::yield_now().await;
///     }
/// });
/// ```
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future returned by [`yield_now`].
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` them"]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        // A G that wakes itself while running is re-queued at the tail after this poll.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
