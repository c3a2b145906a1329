//! How the scheduler serves its Gs: the [`Schedule`] implementation of [`Shared`], which the G
//! layer calls through each G's vtable (see `g`). Kept out of `sched` and `m` so that the G
//! layer below them names neither.

use crate::g::allgs::DeadBatch;
use crate::g::gfree::Block;
use crate::g::{self, GPtr, JoinError, Schedule, Unlink};
use crate::p;
use crate::sched::Shared;
use crate::UnhandledPanic;

impl Schedule for Shared {
    fn bubble_tag(&self) -> u64 {
        self.config.bubble.as_ref().map_or(0, |b| b.id)
    }

    #[inline]
    fn ready(&self, g: GPtr) {
        Shared::ready(self, g);
    }

    #[inline]
    fn coarse_ms(&self) -> u32 {
        Shared::coarse_ms(self)
    }

    /// Into the current P's batch of finished Gs when this thread holds a P of this runtime
    /// (unlinked together when the batch fills, with one lock per shard run), else unlinked now.
    fn unlink(&self, g: GPtr) -> Unlink {
        let batched = crate::m::current(|ctx| {
            let ctx = ctx?;
            let p = ctx.p_of(self)?;
            let full = ctx.with_core(|c| c.dead.push(g).then(|| c.dead.take()))?;
            p::bump(&self.ps[p].stats.dead_pending, 1);
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
        p::bump(&self.ps[p].stats.dead_pending, (n as u64).wrapping_neg());
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
