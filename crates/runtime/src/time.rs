//! Sleeping and timers on the runtime's per-P timer heaps (re-exported as `goro::time`, which
//! adds Go's channel-based `Timer`, `Ticker`, `after`, `tick` and `after_func` on top of
//! [`RawTimer`]).
//!
//! A sleeping G costs no thread: its timer sits in a P's heap, and the runtime's idle M sleeps
//! in the netpoller until the earliest deadline.

use crate::sched::Shared;
use crate::timer::{Action, Nanos, TimerCore};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The runtime of the calling thread, for APIs that need one.
fn current(what: &str) -> StdArc<Shared> {
    crate::m::current(|ctx| ctx.map(|c| c.shared.clone()))
        .unwrap_or_else(|| panic!("goro: {what} needs a goro runtime: call it from a G (inside goro::run)"))
}

/// The current time (Go's `time.Now` for deadlines): the real clock, the bubble's inside a
/// `goro::synctest` bubble, or the virtual one of `goro::model`. goro's timers, deadlines and
/// timeouts all read it, so an `Instant` from here and one they compute agree.
///
/// ```
/// let t = goro::time::now();
/// assert!(t <= std::time::Instant::now());
/// ```
#[inline]
pub fn now() -> Instant {
    #[cfg(loom)]
    if let Some(t) = crate::model::now() {
        return t;
    }
    if let Some(t) = crate::synctest::now_in_bubble() {
        return t;
    }
    Instant::now()
}

pub use crate::synctest::system_now;

/// Go's rule: a timer made in a synctest bubble may not be used from outside it.
#[inline]
#[track_caller]
fn check_bubble(sh: &Shared) {
    if let Some(b) = &sh.config.bubble {
        crate::synctest::check_tag(b.id, "a timer");
    }
}

/// `deadline` on `sh`'s clock, far in the future for an instant that cannot be represented.
fn nanos(sh: &Shared, deadline: Option<Instant>) -> Nanos {
    match deadline {
        Some(t) => sh.nanos_at(t),
        None => u64::MAX / 2,
    }
}

/// Waits until `duration` has passed (Go's `time.Sleep`). A zero duration returns at once
/// without yielding, as in Go; any other gives up the P at least once, even if it has passed
/// by the time the sleep is first polled (Go's `Sleep(1ns)` parks), so a loop on a tiny sleep
/// lets the other Gs run.
///
/// Must be awaited in a G (inside [`goro::run`](crate::run)): the timer lives on the runtime.
///
/// ```
/// use std::time::{Duration, Instant};
/// goro::run(async {
///     let t = Instant::now();
///     goro::time::sleep(Duration::from_millis(5)).await;
///     assert!(t.elapsed() >= Duration::from_millis(5));
/// });
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    let on_elapsed = if duration.is_zero() { OnElapsed::Return } else { OnElapsed::YieldOnce };
    sleep_at(now().checked_add(duration), on_elapsed)
}

fn sleep_at(deadline: Option<Instant>, on_elapsed: OnElapsed) -> Sleep {
    Sleep {
        deadline,
        on_elapsed,
        timer: None,
        #[cfg(loom)]
        model: None,
    }
}

/// Waits until `deadline` (a deadline in the past returns at once).
///
/// ```
/// use std::time::{Duration, Instant};
/// goro::run(async {
///     let deadline = Instant::now() + Duration::from_millis(2);
///     goro::time::sleep_until(deadline).await;
///     assert!(Instant::now() >= deadline);
/// });
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    sleep_at(Some(deadline), OnElapsed::Return)
}

/// The future of [`sleep`] and [`sleep_until`].
///
/// Cancel-safe: dropping it stops its timer. It can be moved to a new deadline with
/// [`reset`](Sleep::reset) (useful in a `select!` loop).
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = goro_runtime::Builder::new().build().unwrap();
/// rt.block_on(async {
///     let start = Instant::now();
///     let mut nap = std::pin::pin!(goro::time::sleep(Duration::from_secs(3600)));
///     nap.as_mut().reset(Instant::now() + Duration::from_millis(2)); // move the deadline
///     nap.await;
///     assert!(start.elapsed() >= Duration::from_millis(2));
/// });
/// ```
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Sleep {
    /// `None`: further than the clock can represent (never fires).
    deadline: Option<Instant>,
    /// What it does if the deadline has passed when it is polled, before it armed a timer.
    on_elapsed: OnElapsed,
    /// Made on the first poll that has to wait, with the runtime whose heap it is armed on
    /// (the future may be dropped or reset on another runtime's thread).
    timer: Option<(StdArc<TimerCore>, StdArc<Shared>)>,
    /// In `goro::model`: the timer on the model's clock, once armed.
    #[cfg(loom)]
    model: Option<crate::model::time::Timer>,
}

impl Sleep {
    /// When the sleep ends (`None` if it never does: the duration overflowed the clock).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let d = Instant::now() + Duration::from_secs(1);
    /// assert_eq!(goro::time::sleep_until(d).deadline(), Some(d));
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Moves the deadline; a sleep that already ended waits again.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let mut s = Box::pin(goro::time::sleep(Duration::from_secs(3600)));
    ///     s.as_mut().reset(Instant::now() + Duration::from_millis(1));
    ///     s.await;
    /// });
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.deadline = Some(deadline);
        if let Some((t, sh)) = this.timer.take() {
            t.stop(Some(&*sh));
        }
        #[cfg(loom)]
        if let Some(t) = this.model.take() {
            t.stop();
        }
    }

    /// `poll` in `goro::model`: the timer is armed on the model's clock, which fires it.
    #[cfg(loom)]
    fn poll_model(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        use crate::model::time::{Action, Timer};
        if let Some(t) = &self.model {
            if t.poll_fired(cx.waker()) {
                return Poll::Ready(());
            }
        } else if self.deadline.is_some_and(|d| d <= now()) {
            return Poll::Ready(());
        } else {
            let t = Timer::new(Action::Wake(Some(cx.waker().clone())));
            t.arm(self.deadline, Duration::ZERO);
            self.model = Some(t);
        }
        crate::set_wait_reason(crate::WaitReason::Sleep);
        Poll::Pending
    }
}

/// What a [`Sleep`] whose deadline passed before it armed a timer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnElapsed {
    /// Returns (`sleep(0)`, `sleep_until` an instant past): a yield point all the same, once
    /// sysmon asked the G to yield (`coop::poll_proceed`).
    Return,
    /// Gives up the P once first (`sleep(d)`, `d > 0`): Go's `Sleep` parks however short, and a
    /// loop on `sleep(1ns)` whose deadline has always passed by the first poll would otherwise
    /// never let the Gs queued behind it run on its P.
    YieldOnce,
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        #[cfg(loom)]
        if crate::model::active() {
            return this.poll_model(cx);
        }
        if let Some((t, _)) = &this.timer {
            // Armed on an earlier poll: still armed means not fired yet.
            return if t.set_waker(cx.waker()) { Poll::Pending } else { Poll::Ready(()) };
        }
        if this.deadline.is_some_and(|d| d <= now()) {
            if this.on_elapsed == OnElapsed::YieldOnce {
                this.on_elapsed = OnElapsed::Return;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            std::task::ready!(crate::coop::poll_proceed(cx));
            return Poll::Ready(());
        }
        let sh = current("goro::time::sleep");
        let t = StdArc::new(TimerCore::new(Action::Wake(Some(cx.waker().clone()))));
        t.arm(&*sh, nanos(&sh, this.deadline), 0);
        this.timer = Some((t, sh));
        crate::set_wait_reason(crate::WaitReason::Sleep);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some((t, sh)) = self.timer.take() {
            t.stop(Some(&*sh));
        }
        #[cfg(loom)]
        if let Some(t) = self.model.take() {
            t.stop();
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep").field("deadline", &self.deadline).finish_non_exhaustive()
    }
}

/// A timer on the runtime that calls a function when it fires: the primitive under
/// `goro::time`'s `Timer`, `Ticker` and `after_func`. Not part of the stable API.
///
/// The function runs on one of the runtime's Ms, with the timer's lock held: it must be short
/// and must not block (a `try_send`, waking a waker, or spawning a G). Once
/// [`stop`](RawTimer::stop) or [`reset`](RawTimer::reset) returns, an earlier arming can no
/// longer call it. Dropping the timer stops it.
#[doc(hidden)]
pub struct RawTimer {
    on: On,
    /// Cleared by [`detach`](RawTimer::detach).
    stop_on_drop: bool,
}

/// Where a [`RawTimer`] lives: a runtime's heaps.
#[cfg(not(loom))]
struct On {
    core: StdArc<TimerCore>,
    shared: StdArc<Shared>,
}

/// Where a [`RawTimer`] lives: a runtime's heaps, or the clock of `goro::model`.
#[cfg(loom)]
enum On {
    Runtime { core: StdArc<TimerCore>, shared: StdArc<Shared> },
    Model(crate::model::time::Timer),
}

/// The parts of a runtime's timer, or (under loom) `return $model` for a model's timer `$t`.
macro_rules! on_runtime {
    ($on:expr, $t:ident => $model:expr) => {{
        #[cfg(not(loom))]
        let On { core, shared } = $on;
        #[cfg(loom)]
        let (core, shared) = match $on {
            On::Runtime { core, shared } => (core, shared),
            On::Model($t) => return $model,
        };
        (core, shared)
    }};
}

impl RawTimer {
    /// A stopped timer on the calling thread's runtime. For a periodic arming, `f` returning
    /// `false` stops the timer (nobody wants its ticks any more).
    ///
    /// # Panics
    /// Outside a goro runtime.
    pub fn new(f: impl FnMut() -> bool + Send + 'static) -> RawTimer {
        #[cfg(loom)]
        if crate::model::active() {
            let t = crate::model::time::Timer::new(crate::model::time::Action::Call(Box::new(f)));
            return RawTimer { on: On::Model(t), stop_on_drop: true };
        }
        RawTimer::on(current("a goro timer"), f)
    }

    /// A stopped timer on the runtime `shared` (from any thread).
    pub(crate) fn on(shared: StdArc<Shared>, f: impl FnMut() -> bool + Send + 'static) -> RawTimer {
        let core = StdArc::new(TimerCore::new(Action::Call(Box::new(f))));
        #[cfg(not(loom))]
        let on = On { core, shared };
        #[cfg(loom)]
        let on = On::Runtime { core, shared };
        RawTimer { on, stop_on_drop: true }
    }

    /// Drops the handle but leaves the timer armed: it fires (and keeps ticking, until its
    /// function returns `false`), then is freed with its last heap entry.
    pub fn detach(mut self) {
        self.stop_on_drop = false;
    }

    /// Arms the timer for `deadline` (then every `period`, if given and not zero), replacing any
    /// earlier arming; returns whether it was armed (Go's `Reset` result). `None` never fires.
    ///
    /// # Panics
    /// For a timer made in a synctest bubble, when called from outside it (Go's rule).
    #[track_caller]
    pub fn reset(&self, deadline: Option<Instant>, period: Option<Duration>) -> bool {
        let (core, shared) = on_runtime!(&self.on, t => t.arm(deadline, period.unwrap_or_default()));
        check_bubble(shared);
        let period = period.map_or(0, |p| u64::try_from(p.as_nanos()).unwrap_or(u64::MAX / 4)).min(u64::MAX / 4);
        core.arm(&**shared, nanos(shared, deadline), period)
    }

    /// Disarms the timer; returns whether it was armed (Go's `Stop` result).
    ///
    /// # Panics
    /// As [`reset`](RawTimer::reset).
    #[track_caller]
    pub fn stop(&self) -> bool {
        let (_, shared) = on_runtime!(&self.on, t => t.stop());
        check_bubble(shared);
        self.disarm()
    }

    fn disarm(&self) -> bool {
        let (core, shared) = on_runtime!(&self.on, t => t.stop());
        core.stop(Some(&**shared))
    }

    /// Whether the timer is armed.
    pub fn is_active(&self) -> bool {
        let (core, _) = on_runtime!(&self.on, t => t.is_armed());
        core.is_armed()
    }
}

impl Drop for RawTimer {
    fn drop(&mut self) {
        if self.stop_on_drop {
            // Not `stop`: a bubble's timer dropped outside it (a value that outlived the test)
            // must not panic in a destructor.
            self.disarm();
        }
    }
}

impl fmt::Debug for RawTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawTimer").field("active", &self.is_active()).finish()
    }
}
