//! The thread-local "which M am I, and which P do I hold" (Go's `getg().m` and `m.p`).
//!
//! Each M (a worker thread, or a thread inside `block_on`) publishes a pointer to its [`MCtx`]
//! while it runs the scheduler; `go`, wakers and G deallocation read it to find the current P.
//! The `MCtx` lives on that thread's stack for as long as the pointer is published ([`enter`]
//! returns a guard that restores the previous value, so `block_on` may nest).

use crate::g::gfree::Block;
use crate::m::MCtx;
use crate::sched::Shared;
use std::cell::Cell;
use std::ptr;

#[cfg(not(loom))]
thread_local! {
    static CURRENT: Cell<*const MCtx> = const { Cell::new(ptr::null()) };
}
#[cfg(loom)]
loom::thread_local! {
    static CURRENT: Cell<*const MCtx> = Cell::new(ptr::null());
}

/// Restores the previously published context on drop.
pub(crate) struct EnterGuard {
    prev: *const MCtx,
}

/// Publishes `ctx` as the current thread's M until the guard drops.
pub(crate) fn enter(ctx: &MCtx) -> EnterGuard {
    let prev = CURRENT.with(|c| c.replace(ctx as *const MCtx));
    EnterGuard { prev }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let prev = self.prev;
        // `try_with`: the thread may be tearing down its TLS.
        let _ = CURRENT.try_with(|c| c.set(prev));
    }
}

/// Runs `f` with the current M, if this thread is one.
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(Option<&MCtx>) -> R) -> R {
    let p = CURRENT.try_with(|c| c.get()).unwrap_or(ptr::null());
    // SAFETY: a published pointer refers to an `MCtx` on this thread's stack that outlives its
    // `EnterGuard`, which unpublishes it.
    f(unsafe { p.as_ref() })
}

/// The current M, if it belongs to `shared` and holds a P: the P's index.
#[inline]
pub(crate) fn current_p_of(ctx: Option<&MCtx>, shared: &Shared) -> Option<usize> {
    let ctx = ctx?;
    if !ptr::eq(&*ctx.shared, shared) {
        return None;
    }
    ctx.p.get()
}

/// The goid of the G this thread is polling for `shared`: the G's, [`MAIN_FUTURE`] while it
/// polls the main future of `block_on`, [`NO_PARENT`] elsewhere (a plain thread, another
/// runtime, an M between polls).
///
/// [`MAIN_FUTURE`]: crate::g::raw::MAIN_FUTURE
/// [`NO_PARENT`]: crate::g::raw::NO_PARENT
pub(crate) fn current_goid(ctx: Option<&MCtx>, shared: &Shared) -> u64 {
    use crate::g::raw::{MAIN_FUTURE, NO_PARENT};
    match ctx {
        Some(ctx) if ptr::eq(&*ctx.shared, shared) => match ctx.curg.get() {
            // SAFETY: the M polling `g` holds a reference to it for the whole poll.
            Some(g) => unsafe { g.as_ref() }.goid,
            None if ctx.polling_main() => MAIN_FUTURE,
            None => NO_PARENT,
        },
        _ => NO_PARENT,
    }
}

/// `gfput`: recycles a dead G's block on the current P when this thread holds a P of `shared`,
/// else gives it back to the allocator.
pub(crate) fn gfput(shared: &Shared, class: u8, block: Block) {
    with(|ctx| match current_p_of(ctx, shared) {
        // SAFETY: this thread owns the P, and `put` does not poll or drop Gs.
        Some(p) => unsafe { shared.ps[p].with_local(|l| l.gfree.put(class, block, &shared.gfree)) },
        None => drop(crate::g::gfree::FreeOnDrop(class, block)),
    })
}
