//! Go's `time` package on goro's timers: [`sleep`], [`after`], [`tick`], [`Timer`], [`Ticker`],
//! [`after_func`], and [`timeout`] (Go's `context.WithTimeout` around one call).
//!
//! Timers live on the runtime's per-P timer heaps (Go's design): a sleeping G or a pending timer
//! costs no thread, and the runtime's idle M sleeps in the netpoller until the earliest
//! deadline. Every function here must be called from a G (inside [`goro::run`](crate::run)),
//! where the runtime is.
//!
//! Channel semantics are Go 1.23's: a `Timer` or `Ticker` channel never delivers a value that
//! was due before the last [`Timer::stop`]/[`Timer::reset`] (or the ticker's) returned. The
//! channels have room for one value, as in Go before 1.23, so a ticker whose receiver falls
//! behind drops ticks rather than queueing them.
//!
//! ```
//! use std::time::Duration;
//! goro::run(async {
//!     let (tx, rx) = goro::chan::<u32>(0);
//!     goro::go(async move {
//!         goro::time::sleep(Duration::from_millis(20)).await;
//!         let _ = tx.send(1).await;
//!     });
//!     let got = goro::select! {
//!         recv(rx) -> v => v,
//!         recv(goro::time::after(Duration::from_millis(1))) -> _ => None,
//!     };
//!     assert_eq!(got, None, "the timeout fires first");
//! });
//! ```

use crate::chan::{Receiver, Sender};
use goro_runtime::__private::time::RawTimer;
pub use goro_runtime::__private::time::{now, system_now};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

pub use goro_runtime::__private::time::{sleep, sleep_until, Sleep};

/// Runs `fut` for at most `d`: its output, or [`Elapsed`] if `d` passed first (Go's
/// `ctx, cancel := context.WithTimeout(ctx, d)` around one call, or a `select` of the call
/// against `time.After(d)`). On timeout `fut` is dropped, so use it with cancel-safe futures
/// (goro's channel operations, locks and socket reads are; see each method's docs).
///
/// `fut` is polled first: one that is ready at once wins even with a zero `d`. Waiting needs a
/// goro runtime (the timer lives there): await it in a G.
///
/// # Cancel safety
/// As cancel-safe as `fut`: dropping the timeout drops `fut` and stops the timer.
///
/// ```
/// use goro::time::{timeout, Elapsed};
/// use std::time::Duration;
/// goro::run(async {
///     let (tx, rx) = goro::chan::<u32>(1);
///     assert_eq!(timeout(Duration::from_millis(5), rx.recv()).await, Err(Elapsed));
///     tx.send(7).await.unwrap();
///     assert_eq!(timeout(Duration::from_secs(5), rx.recv()).await, Ok(Some(7)));
/// });
/// ```
pub fn timeout<F: Future>(d: Duration, fut: F) -> Timeout<F> {
    Timeout { fut, sleep: sleep(d) }
}

/// [`timeout`] with a deadline instead of a duration (Go's `context.WithDeadline` around one
/// call).
///
/// ```
/// use std::time::{Duration, Instant};
/// goro::run(async {
///     let deadline = Instant::now() + Duration::from_millis(2);
///     let never = std::future::pending::<()>();
///     assert!(goro::time::timeout_at(deadline, never).await.is_err());
///     assert!(Instant::now() >= deadline);
/// });
/// ```
pub fn timeout_at<F: Future>(deadline: Instant, fut: F) -> Timeout<F> {
    Timeout { fut, sleep: sleep_until(deadline) }
}

/// The future of [`timeout`] and [`timeout_at`].
///
/// Cancel-safe as far as the inner future is: dropping it drops the inner future and stops
/// the timer.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Timeout<F> {
    fut: F,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    /// The inner future, given up without waiting for it.
    ///
    /// ```
    /// let t = goro::time::timeout(std::time::Duration::from_secs(1), async { 5 });
    /// let inner = t.into_inner();
    /// assert_eq!(goro::run(inner), 5);
    /// ```
    pub fn into_inner(self) -> F {
        self.fut
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of both fields; neither is moved out while pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `fut` is pinned with `self`.
        if let Poll::Ready(v) = unsafe { Pin::new_unchecked(&mut this.fut) }.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        // SAFETY: as above, for `sleep`.
        match unsafe { Pin::new_unchecked(&mut this.sleep) }.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout").field("deadline", &self.sleep.deadline()).finish_non_exhaustive()
    }
}

/// The error of [`timeout`]: the time ran out before the future completed. Its message is
/// Go's `context deadline exceeded`; as an [`io::Error`](std::io::Error) it is
/// [`TimedOut`](std::io::ErrorKind::TimedOut).
///
/// ```
/// let e: std::io::Error = goro::time::Elapsed.into();
/// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
/// assert_eq!(goro::time::Elapsed.to_string(), "context deadline exceeded");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("context deadline exceeded")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// A channel that receives the time once, after `d` (Go's `time.After`).
///
/// ```
/// use std::time::{Duration, Instant};
/// goro::run(async {
///     let start = Instant::now();
///     let fired = goro::time::after(Duration::from_millis(5)).recv().await.unwrap();
///     assert!(fired >= start + Duration::from_millis(5));
/// });
/// ```
pub fn after(d: Duration) -> Receiver<Instant> {
    Timer::new(d).into_channel()
}

/// A channel that receives the time every `d` (Go's `time.Tick`); the ticker runs for as long
/// as the channel's receiver lives.
///
/// # Panics
/// If `d` is zero (Go's `NewTicker` panics on a non-positive period; `Tick` returns nil).
///
/// ```
/// use std::time::Duration;
/// goro::run(async {
///     let ticks = goro::time::tick(Duration::from_millis(1));
///     for _ in 0..3 {
///         ticks.recv().await.unwrap();
///     }
/// });
/// ```
pub fn tick(d: Duration) -> Receiver<Instant> {
    let Ticker { c, raw } = Ticker::new(d);
    // No handle can stop it: it stops itself once its channel has no receiver left.
    raw.detach();
    c
}

/// A timer's channel: room for one value, and never closed (Go's timer channels are not:
/// a receive after the timer is gone waits, it does not return `None`).
fn timer_channel() -> (Sender<Instant>, Receiver<Instant>) {
    let (tx, rx) = crate::chan(1);
    tx.keep_open();
    (tx, rx)
}

/// The callback of a channel timer: a non-blocking send of the time (Go's `sendTime`); `false`
/// once no receiver is left (a detached ticker then stops).
fn send_time(tx: Sender<Instant>) -> impl FnMut() -> bool + Send + 'static {
    move || !matches!(tx.try_send(now()), Err(crate::chan::TrySendError::Closed(_)))
}

/// A single event: after the duration, the time is sent on [`c`](Timer::c) (Go's `time.Timer`).
///
/// Dropping the timer stops it, except an [`after_func`] timer, which runs its function
/// whether or not the `Timer` is kept (stop it to cancel).
///
/// ```
/// use std::time::Duration;
/// goro::run(async {
///     let t = goro::time::Timer::new(Duration::from_secs(3600));
///     assert!(t.stop(), "stopped before it fired");
///     assert!(!t.reset(Duration::from_millis(1)), "it was stopped, so reset re-arms it");
///     t.c.recv().await.unwrap();
/// });
/// ```
#[must_use = "a Timer stops when dropped (an after_func timer runs anyway): keep it to receive from `c`, stop or reset it; `let _ = after_func(..)` for a callback that is never stopped"]
pub struct Timer {
    /// Receives the time when the timer fires (never, for an [`after_func`] timer).
    pub c: Receiver<Instant>,
    raw: Handle,
    /// An [`after_func`] timer's sender, kept so that `c` blocks forever (Go's nil `C`) rather
    /// than reporting a closed channel.
    _never: Option<Sender<Instant>>,
}

impl Timer {
    /// A timer that sends the time on `c` after `d` (Go's `time.NewTimer`).
    ///
    /// # Panics
    /// Outside a goro runtime.
    ///
    /// ```
    /// use goro::time::Timer;
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let start = Instant::now();
    ///     let t = Timer::new(Duration::from_millis(5)); // t := time.NewTimer(5 * time.Millisecond)
    ///     let fired = t.c.recv().await.unwrap(); // <-t.C
    ///     assert!(fired >= start + Duration::from_millis(5));
    /// });
    /// ```
    pub fn new(d: Duration) -> Timer {
        let (tx, c) = timer_channel();
        let mut send = send_time(tx);
        let raw = if d.is_zero() {
            // Due already: its value is in `c` at once, as Go 1.23 makes a receive from a due
            // timer's channel run the timer first (`maybeRunChan`), so a `select` with a
            // `default` right after `NewTimer(0)` takes the timer's case.
            send();
            RawTimer::new(send)
        } else {
            let raw = RawTimer::new(send);
            raw.reset(now().checked_add(d), None);
            raw
        };
        Timer { c, raw: Handle { raw: Some(raw), detach_on_drop: false }, _never: None }
    }

    fn raw(&self) -> &RawTimer {
        self.raw.raw.as_ref().expect("a live Timer has its timer")
    }

    /// Stops the timer (Go's `Stop`), with Go 1.23's channel semantics: returns `true` if this
    /// call kept a value from being received, either because the timer had not fired yet or
    /// because the value it sent is still unreceived in `c` (which is then drained: `c`
    /// delivers nothing stale afterwards); `false` if it had been stopped, or its value was
    /// received. So after `false` nothing is lost: whoever received the value has it, and a
    /// `Stop`-then-drain written for older Go (`if !t.Stop() { <-t.C }`) only blocks if the
    /// value was already received by that same code.
    ///
    /// ```
    /// use std::time::Duration;
    /// goro::run(async {
    ///     let t = goro::time::Timer::new(Duration::ZERO);
    ///     goro::time::sleep(Duration::from_millis(5)).await; // it fires meanwhile
    ///     assert!(t.stop(), "its value was not received: stop kept it from being");
    ///     assert!(t.c.try_recv().is_err(), "the unreceived value is gone");
    ///     assert!(!t.stop(), "already stopped");
    /// });
    /// ```
    pub fn stop(&self) -> bool {
        let armed = self.raw().stop();
        // After `stop` returns the arming cannot fire any more (its send is done or never
        // happens), so a value still in `c` is the last one.
        let unreceived = self.c.try_recv().is_ok();
        armed || unreceived
    }

    /// Re-arms the timer to fire after `d` (Go's `Reset`): returns `true` if the earlier arming
    /// was pending (not fired, or fired with its value still unreceived, which is discarded),
    /// `false` if it had been stopped or its value received; as [`stop`](Timer::stop).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let t = goro::time::Timer::new(Duration::from_secs(3600));
    ///     let start = Instant::now();
    ///     assert!(t.reset(Duration::from_millis(2)));
    ///     t.c.recv().await.unwrap();
    ///     assert!(start.elapsed() >= Duration::from_millis(2));
    /// });
    /// ```
    pub fn reset(&self, d: Duration) -> bool {
        let raw = self.raw();
        let armed = raw.stop();
        let unreceived = self.c.try_recv().is_ok();
        raw.reset(now().checked_add(d), None);
        armed || unreceived
    }

    /// The channel, for a timer nobody will stop (what [`after`] returns). The timer runs on
    /// until it fires.
    fn into_channel(self) -> Receiver<Instant> {
        // The armed core stays in its heap until it fires; only the handle goes.
        let Timer { c, mut raw, .. } = self;
        raw.detach_on_drop = true;
        c
    }
}

/// A [`Timer`]'s timer: stopped when dropped, or left armed to fire (an [`after_func`] timer
/// runs its function whether or not its handle is kept: Go programs drop it).
struct Handle {
    /// `None` only while dropping.
    raw: Option<RawTimer>,
    detach_on_drop: bool,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            if self.detach_on_drop {
                raw.detach();
            }
            // else: dropping the RawTimer stops it.
        }
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer").field("active", &self.raw().is_active()).finish()
    }
}

/// Calls `f` in its own G after `d` (Go's `time.AfterFunc`), whether or not the returned
/// [`Timer`] is kept: as in Go, dropping it does not cancel `f` (Go programs nearly always drop
/// it). The timer's [`stop`](Timer::stop) keeps `f` from running if it has not started, and
/// [`reset`](Timer::reset) schedules it again, even after it ran (so a debounce ports as is:
/// `f` is `Fn`, not `FnOnce`). Its `c` never receives (a receive on it waits forever, as on
/// Go's nil `C`).
///
/// `Timer` is `#[must_use]` (a dropped `Timer::new` is a bug); for a callback you will never
/// stop, say so with `let _ = after_func(d, f);`.
///
/// ```
/// use std::time::Duration;
/// goro::run(async {
///     let (tx, rx) = goro::chan(1);
///     // time.AfterFunc(time.Millisecond, func() { ch <- "ran" })
///     let _ = goro::time::after_func(Duration::from_millis(1), move || {
///         tx.try_send("ran").unwrap();
///     });
///     assert_eq!(rx.recv().await, Some("ran"));
///
///     // Keep the timer to cancel it.
///     let t = goro::time::after_func(Duration::from_secs(3600), || unreachable!());
///     assert!(t.stop());
/// });
/// ```
pub fn after_func<F>(d: Duration, f: F) -> Timer
where
    F: Fn() + Send + Sync + 'static,
{
    let f = std::sync::Arc::new(f);
    let (never, c) = crate::chan(0);
    let raw = RawTimer::new(move || {
        let f = f.clone();
        drop(crate::go(async move { f() }));
        true
    });
    raw.reset(now().checked_add(d), None);
    Timer { c, raw: Handle { raw: Some(raw), detach_on_drop: true }, _never: Some(never) }
}

/// Sends the time on [`c`](Ticker::c) every period (Go's `time.Ticker`). If the receiver falls
/// behind, ticks are dropped (the channel holds one), so it never builds a backlog.
///
/// Dropping the ticker stops it.
#[must_use = "a Ticker stops when dropped: keep it and receive from `c` (or use `goro::time::tick(d)`)"]
///
/// ```
/// use std::time::Duration;
/// goro::run(async {
///     let t = goro::time::Ticker::new(Duration::from_millis(1));
///     t.c.recv().await.unwrap();
///     t.reset(Duration::from_millis(2));
///     t.c.recv().await.unwrap();
///     t.stop();
/// });
/// ```
pub struct Ticker {
    /// Receives the time at every tick.
    pub c: Receiver<Instant>,
    raw: RawTimer,
}

impl Ticker {
    /// A ticker with period `d` (Go's `time.NewTicker`).
    ///
    /// # Panics
    /// If `d` is zero (`non-positive interval for NewTicker`, as Go says), or outside a goro
    /// runtime.
    ///
    /// ```
    /// use goro::time::Ticker;
    /// use std::time::Duration;
    /// goro::run(async {
    ///     let ticker = Ticker::new(Duration::from_millis(2));
    ///     for _ in 0..3 {
    ///         ticker.c.recv().await.unwrap(); // <-ticker.C
    ///     }
    ///     ticker.stop();
    /// });
    /// ```
    pub fn new(d: Duration) -> Ticker {
        assert!(!d.is_zero(), "goro: non-positive interval for Ticker::new");
        let (tx, c) = timer_channel();
        let raw = RawTimer::new(send_time(tx));
        raw.reset(now().checked_add(d), Some(d));
        Ticker { c, raw }
    }

    /// Stops the ticker; no tick is delivered afterwards, not even one sent before and not yet
    /// received (Go 1.23).
    ///
    /// ```
    /// use goro::time::Ticker;
    /// use std::time::Duration;
    /// goro::run(async {
    ///     let ticker = Ticker::new(Duration::from_millis(1));
    ///     goro::time::sleep(Duration::from_millis(5)).await; // a tick is waiting in `c`
    ///     ticker.stop();
    ///     assert!(ticker.c.try_recv().is_err()); // and is gone
    /// });
    /// ```
    pub fn stop(&self) {
        self.raw.stop();
        let _ = self.c.try_recv();
    }

    /// Stops the ticker and restarts it with period `d` (Go's `Ticker.Reset`).
    ///
    /// # Panics
    /// If `d` is zero.
    ///
    /// ```
    /// use goro::time::Ticker;
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let ticker = Ticker::new(Duration::from_secs(3600));
    ///     let start = Instant::now();
    ///     ticker.reset(Duration::from_millis(2)); // now every 2 ms
    ///     ticker.c.recv().await.unwrap();
    ///     assert!(start.elapsed() < Duration::from_secs(3600));
    /// });
    /// ```
    pub fn reset(&self, d: Duration) {
        assert!(!d.is_zero(), "goro: non-positive interval for Ticker::reset");
        self.raw.stop();
        let _ = self.c.try_recv();
        self.raw.reset(now().checked_add(d), Some(d));
    }
}

impl fmt::Debug for Ticker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticker").field("active", &self.raw.is_active()).finish()
    }
}
