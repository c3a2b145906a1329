//! hyper's runtime traits on goro: [`Executor`] spawns a G, [`Timer`] arms goro's timers.

use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// hyper's [`Executor`](hyper::rt::Executor) on goro: every future hyper hands it (an HTTP/2
/// stream, a client connection's driver) becomes a G, as `go f()` would.
///
/// Must be used from a G (inside [`goro::run`](crate::run)), like [`goro::go`](crate::go()).
///
/// ```
/// use hyper::rt::Executor as _;
/// goro::run(async {
///     let (tx, rx) = goro::chan::<u32>(1);
///     goro::hyper::Executor.execute(async move { tx.send(7).await.unwrap() });
///     assert_eq!(rx.recv().await, Some(7));
/// });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Executor;

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// The G is [`durable`](crate::synctest::durable) in a bubble: hyper's tasks are woken
    /// by one another, by their connection and by goro's timers. A panic in it (an HTTP/2
    /// handler's) ends that task alone, reported as Go's `net/http` reports a handler's.
    fn execute(&self, fut: F) {
        drop(crate::go(crate::synctest::durable(recover("an HTTP/2 stream", fut))));
    }
}

/// hyper's [`Timer`](hyper::rt::Timer) on goro's timers (the runtime's per-P heaps, Go's
/// design). Its clock is [`goro::time::now`](crate::time::now): inside a
/// [`synctest`](crate::synctest) bubble a server's timeouts run on the bubble's fake clock.
///
/// ```
/// use hyper::rt::Timer as _;
/// use std::time::Duration;
/// goro::synctest::test(async {
///     let start = goro::time::now();
///     goro::hyper::Timer.sleep(Duration::from_secs(3600)).await; // fake time: no wait
///     assert_eq!(goro::time::now() - start, Duration::from_secs(3600));
/// });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer;

impl hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Sleep(crate::time::sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Sleep(crate::time::sleep_until(deadline)))
    }

    fn now(&self) -> Instant {
        crate::time::now()
    }

    /// Moves the sleep hyper already has (no new allocation) when it is one of ours.
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<Sleep>() {
            Some(ours) => Pin::new(&mut ours.get_mut().0).reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// [`goro::time::Sleep`](crate::time::Sleep) as hyper's `Sleep`.
struct Sleep(crate::time::Sleep);

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().0).poll(cx)
    }
}

impl hyper::rt::Sleep for Sleep {}

/// Runs `fut` to its end, catching a panic in it as Go's `net/http` recovers a handler's: the
/// panic ends this connection (or HTTP/2 stream), which is closed, not the program nor the
/// server, and is reported as Go reports it, `http: panic serving <peer>: <message>` (after
/// the panic itself, printed where it happened). `None` if it panicked.
pub(super) async fn recover<F: Future>(serving: impl std::fmt::Display, fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let caught = poll_fn(|cx| match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
        Err(payload) => Poll::Ready(Err(payload)),
    })
    .await;
    match caught {
        Ok(v) => Some(v),
        Err(payload) => {
            let message = goro_runtime::__private::synctest::panic_message(&*payload);
            eprintln!("http: panic serving {serving}: {message}");
            None
        }
    }
}
