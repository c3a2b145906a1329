//! What goro's primitives and the facade's `goro::synctest` call into a bubble (see `bubble`):
//! the tag a primitive takes when it is made and the checks made with it, the wait reasons
//! that the bubble's census reads, `wait`, and the bubble's clocks. Not part of the stable API.

use crate::bubble::{Bubble, Waiter};
use crate::g::raw::{WaitReason, EXTERNAL};
use crate::loom::Ordering::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};

pub use crate::bubble::{splitmix64, BubbleSpec, BubbleSummary, Policy, ANY, DEADLOCK, NONE_OF_THEM, ROOT_EXITED};
pub use crate::panics::payload_message as panic_message;

/// The bubble of the calling thread's runtime, if it is one.
fn current() -> Option<StdArc<Bubble>> {
    crate::m::current(|ctx| ctx.and_then(|c| c.shared.config.bubble.clone()))
}

/// The id of the bubble of the calling thread (0: none). goro's channels and sync types take it
/// when they are made. Not part of the stable API.
#[doc(hidden)]
#[inline]
pub fn tag() -> u64 {
    crate::m::current(|ctx| ctx.and_then(|c| c.shared.config.bubble.as_ref().map(|b| b.id)).unwrap_or(0))
}

/// The seed of the bubble the calling thread runs in, if it runs in one.
pub fn current_seed() -> Option<u64> {
    current().map(|b| b.seed)
}

/// Panics unless the calling thread runs in bubble `owner` (a primitive's [`tag`], not 0):
/// a bubble's channels, timers and pipes may not be used from outside it (Go's rule).
#[doc(hidden)]
#[cold]
#[track_caller]
pub fn check_tag(owner: u64, what: &str) {
    if owner == ANY {
        return;
    }
    let here = tag();
    if here != owner {
        let from = if here == 0 { "outside any bubble".to_owned() } else { format!("synctest bubble {here}") };
        panic!("goro: {what} of synctest bubble {owner} used from {from}");
    }
}

/// [`set_wait_reason`](crate::set_wait_reason) for a primitive made in bubble `owner` (its
/// [`tag`]): in a bubble, a wait on a primitive of another bubble, or of none, is marked as
/// not durable. Outside bubbles it is `set_wait_reason`. Not part of the stable API.
#[doc(hidden)]
#[inline]
pub fn set_wait_reason_of(reason: WaitReason, owner: u64) {
    #[cfg(loom)]
    if crate::model::set_wait_reason(reason) {
        return;
    }
    crate::m::current(|ctx| {
        if let Some(ctx) = ctx {
            let here = ctx.shared.config.bubble.as_ref().map_or(0, |b| b.id);
            let v = reason as u8 | if here == owner || owner == ANY { 0 } else { EXTERNAL };
            ctx.with_wait_reason(|slot| slot.store(v, Relaxed));
        }
    })
}

/// Called when a future that only the bubble wakes returned `Pending` (see
/// `goro::synctest::durable`): in a bubble, a G whose poll set no wait reason (it waits on a
/// foreign future) is marked as waiting on [`BubbleFuture`](WaitReason::BubbleFuture), which
/// is durable. Outside bubbles, and for a G that a goro primitive parked, it does nothing. Not
/// part of the stable API.
#[doc(hidden)]
pub fn mark_durable() {
    #[cfg(loom)]
    if crate::model::active() {
        return;
    }
    crate::m::current(|ctx| {
        if let Some(ctx) = ctx {
            if ctx.shared.config.bubble.is_some() {
                ctx.with_wait_reason(|slot| {
                    if slot.load(Relaxed) == WaitReason::Future as u8 {
                        slot.store(WaitReason::BubbleFuture as u8, Relaxed);
                    }
                });
            }
        }
    })
}

/// Waits until every other G of the bubble is durably blocked (Go's `synctest.Wait`).
///
/// # Panics
/// Outside a bubble, and when another G of the bubble is in `wait` already (Go's rules).
#[track_caller]
pub fn wait() -> Wait {
    let Some(bubble) = current() else {
        panic!("goro: synctest::wait called outside a synctest bubble");
    };
    Wait { bubble, registered: false, location: std::panic::Location::caller() }
}

/// The future of [`wait`]. Cancel-safe: dropping it gives up the wait.
#[must_use = "futures do nothing unless you `.await` them"]
#[derive(Debug)]
pub struct Wait {
    bubble: StdArc<Bubble>,
    registered: bool,
    location: &'static std::panic::Location<'static>,
}

impl Future for Wait {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        // Cloned before the lock: a waker may be another crate's (a combinator's), and its
        // clone runs under no lock of ours.
        let waker = cx.waker().clone();
        let mut w = this.bubble.waiter.lock();
        if this.registered {
            let slot = w.as_mut().expect("goro: the waiter slot is ours while registered");
            if slot.released {
                *w = None;
                this.registered = false;
                return Poll::Ready(());
            }
            // The old waker is dropped after the lock, as the new one was made before it.
            let old = std::mem::replace(&mut slot.waker, waker);
            drop(w);
            drop(old);
        } else {
            if w.is_some() {
                drop(w);
                panic!("goro: synctest::wait called by two goroutines of one bubble at once (at {})", this.location);
            }
            *w = Some(Waiter { waker, released: false });
            this.registered = true;
            drop(w);
        }
        set_wait_reason_of(WaitReason::SynctestWait, ANY);
        Poll::Pending
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        if self.registered {
            let waiter = self.bubble.waiter.lock().take();
            drop(waiter); // its waker, after the lock
        }
    }
}

/// The root returned: waits until every G of the bubble has exited (Go's `synctest.Test`
/// does), or fails with [`ROOT_EXITED`] if they stay blocked. Not part of the stable API.
#[doc(hidden)]
pub fn wait_exit() -> WaitExit {
    let bubble = current().expect("goro: wait_exit outside a bubble");
    bubble.root_done.store(true, Release);
    WaitExit(())
}

/// The future of [`wait_exit`].
#[doc(hidden)]
#[derive(Debug)]
pub struct WaitExit(());

impl Future for WaitExit {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let live = crate::m::current(|ctx| {
            let sh = &ctx.expect("in the bubble").shared;
            let mut live = 0;
            sh.allgs.for_each(|h| live += usize::from(!h.state.load().is_complete()));
            live
        });
        if live == 0 {
            return Poll::Ready(());
        }
        // The bubble's `findrunnable` wakes the main future once no G is left.
        set_wait_reason_of(WaitReason::SynctestWait, ANY);
        Poll::Pending
    }
}

/// [`goro::time::now`](crate::time::now) in a bubble: its clock.
pub(crate) fn now_in_bubble() -> Option<Instant> {
    crate::m::current(|ctx| {
        let c = ctx?;
        let b = c.shared.config.bubble.as_ref()?;
        Some(b.now(c.shared.start()))
    })
}

/// The wall clock: the bubble's inside one (from 2000-01-01T00:00:00Z), else the system's.
pub fn system_now() -> SystemTime {
    crate::m::current(|ctx| ctx.and_then(|c| c.shared.config.bubble.as_ref().map(|b| b.system_now())))
        .unwrap_or_else(SystemTime::now)
}
