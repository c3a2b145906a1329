//! How the scheduler serves its Gs and timers: the [`Schedule`] implementation of [`Shared`],
//! which the G layer calls through each G's vtable (see `g`), and its [`Heaps`] implementation,
//! which the timers call (see `timer`). Both ask for the current M (a G readied, a timer armed
//! and a G freed go to the P of the thread doing it), so they sit above `m` and `sched`: the G
//! and timer layers below name neither, and `sched` does not name `m`.

use crate::g::gfree::Block;
use crate::g::raw::DeadBatch;
use crate::g::{self, GPtr, JoinError, Schedule, Unlink};
use crate::loom::Ordering::Relaxed;
use crate::p;
use crate::sched::{Put, Shared};
use crate::timer::{Heaps, Nanos, TimerHeap};
use crate::UnhandledPanic;

impl Schedule for Shared {
    fn bubble_tag(&self) -> u64 {
        self.config.bubble.as_ref().map_or(0, |b| b.id)
    }

    /// `goready`: a waker found `g` waiting and made it runnable; the queue reference is ours.
    ///
    /// Woken on an M of this runtime, it goes to that P's `runnext`
    /// ([`MCtx::runqput`](crate::m::MCtx::runqput)), so a channel send wakes its receiver straight
    /// into the next slot and a ping-pong pair stays on one P; anywhere else, to the global
    /// queue ([`globrunqput`](Shared::globrunqput)).
    ///
    /// Go's `ready` then always calls `wakep`, so that a woken G never waits for its waker to
    /// finish computing while a P idles: the spinning M steals `runnext` from a P that is
    /// still running after ~3 µs. goro keeps that guarantee, but wakes the P later, and only
    /// when it is needed: at once if the G displaced another into the stealable ring, else
    /// when sysmon finds the waker's poll still running a round later with the G still in
    /// `runnext` (`sysmon::wake_for_runnext`). Nearly every waker parks or yields right after
    /// its wake (a channel ping-pong, a producer filling a buffer), and its M then runs the G
    /// itself; waking a P for each of them cost W4 (ping-pong) +55% and W5 (SPSC) +82% on the
    /// 2-core machines here, a futex wake of an idle M for most messages. What it costs
    /// instead: a G woken by a waker that goes on computing waits up to one sysmon round
    /// (20 µs, backing off to 10 ms while nothing else happens) rather than Go's few µs.
    /// Waking a P only on displacement, as tokio does for its LIFO slot, would leave such a G
    /// waiting for the whole computation.
    #[inline]
    fn ready(&self, g: GPtr) {
        if crate::trace::is_enabled() {
            // SAFETY: the caller hands us the queue's reference: the G is alive.
            let h = unsafe { g.as_ref() };
            crate::trace::go_unblock(h.goid, h.trace_unblocked());
        }
        crate::m::current(|ctx| match ctx.filter(|c| std::ptr::eq(&*c.shared, self)) {
            Some(ctx) => ctx.runqput(g, Put::Next),
            None => self.globrunqput(g),
        })
    }

    /// Into the current P's batch of finished Gs when this thread holds a P of this runtime
    /// (unlinked together when the batch fills, with one lock per shard run), else unlinked now.
    fn unlink(&self, g: GPtr) -> Unlink {
        let batched = crate::m::current(|ctx| {
            let ctx = ctx?;
            let p = ctx.p_of(self)?;
            let full = ctx.with_core(|c| c.dead.push(g).then(|| c.dead.take()))?;
            p::bump(&self.allp[p].stats.dead_pending, 1);
            Some(match full {
                Some(batch) => Unlink::Flush(p, batch),
                None => Unlink::Batched,
            })
        });
        batched.unwrap_or_else(|| {
            self.allgs.remove(g);
            Unlink::Done
        })
    }

    fn unlink_batch(&self, p: usize, (mut gs, n): DeadBatch) {
        if n == 0 {
            return;
        }
        let batch = &mut gs[..n];
        // SAFETY: each G was pushed once (by `unlink`), with the list's reference, and is still
        // in the list: only the unlinking of its batch removes a batched G.
        unsafe { self.allgs.remove_batch(batch) };
        p::bump(&self.allp[p].stats.dead_pending, (n as u64).wrapping_neg());
        g::drop_list_refs(batch);
    }

    /// Onto the current P's free list when this thread holds a P of this runtime, else back to
    /// the allocator.
    fn gfput(&self, class: u8, block: Block) {
        let mut block = Some(block);
        crate::m::current(|ctx| {
            if let Some(ctx) = ctx.filter(|c| c.p_of(self).is_some()) {
                ctx.with_core(|c| c.gfree.put(class, block.take().expect("one block"), &self.gfree));
            }
        });
        if let Some(b) = block {
            g::gfree::free_block(class, b);
        }
    }

    /// Printed in Go's shape; the run ends with it if the runtime was built to
    /// (`Builder::unhandled_panic`).
    fn unobserved(&self, parent: u64, err: JoinError) {
        crate::panics::report_unobserved(parent, &err);
        if self.config.unhandled_panic == UnhandledPanic::ShutdownRuntime {
            self.end_run(crate::fatal::Ending::Panic(err.into_panic()));
        }
    }
}

/// The timers' view of the runtime (see `timer`): one heap per P slot.
impl Heaps for Shared {
    #[inline]
    fn heap(&self, p: usize) -> &TimerHeap {
        &self.allp[p].timers
    }

    #[inline]
    fn heaps_used(&self) -> usize {
        self.allp.slots_used()
    }

    #[inline]
    fn slot_in_use(&self, p: usize) -> bool {
        p::in_use(self.allp[p].status.load(Relaxed))
    }

    fn timer_home(&self) -> usize {
        self.allp.timer_home()
    }

    #[inline]
    fn current_p(&self) -> Option<usize> {
        crate::m::current(|ctx| ctx.and_then(|c| c.p_of(self)))
    }

    fn wake_netpoller(&self, when: Nanos) {
        Shared::wake_netpoller(self, when)
    }
}
