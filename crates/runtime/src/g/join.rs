//! `JoinHandle`: the owned permission to take a G's result, and the join protocol over the
//! G's `JOIN_WAKER` slot. Awaiting it (a yield point with a wait reason) is `runtime`'s,
//! the blocking `join` is `block_on_thread`'s, and `JoinError` is in `error`.

use super::error::JoinError;
use super::raw::Header;
use super::state::Snapshot;
use crate::loom::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

/// An owned permission to wait for a G and take its result.
///
/// Await it (`handle.await`) inside async code, or call [`join`](JoinHandle::join) from a plain
/// thread. Dropping it *detaches* the G, as every `go` statement in Go does: the G keeps
/// running and its result is dropped when it ends.
///
/// ```
/// goro::run(async {
///     let h = goro::go(async { 6 * 7 });
///     assert_eq!(h.await.unwrap(), 42);
/// });
/// ```
pub struct JoinHandle<T> {
    raw: NonNull<Header>,
    /// A G of `goro::model` (a loom thread, no G object): `raw` is dangling then.
    #[cfg(loom)]
    model: Option<std::sync::Arc<dyn ModelJoin<T>>>,
    _output: PhantomData<T>,
}

// SAFETY: the handle gives access to a `T` produced on another thread; that is sound for `T: Send`.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads atomic state (`is_finished`, `abort`).
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

/// What a handle asks of a G of `goro::model` (`model::Join` implements it), so that this
/// layer names nothing of the model.
#[cfg(loom)]
pub(crate) trait ModelJoin<T>: Send + Sync {
    fn id(&self) -> u64;
    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>>;
    fn is_finished(&self) -> bool;
    fn abort(&self);
}

impl<T> JoinHandle<T> {
    /// # Safety
    /// `raw` is a G whose output is `T`, and the caller hands over the G's join reference.
    pub(crate) unsafe fn from_raw(raw: NonNull<Header>) -> JoinHandle<T> {
        JoinHandle {
            raw,
            #[cfg(loom)]
            model: None,
            _output: PhantomData,
        }
    }

    /// The handle of a G of `goro::model`.
    #[cfg(loom)]
    pub(crate) fn from_model(join: std::sync::Arc<dyn ModelJoin<T>>) -> JoinHandle<T> {
        JoinHandle { raw: NonNull::dangling(), model: Some(join), _output: PhantomData }
    }

    /// The synctest bubble of the G's runtime (0: none), for the wait reason of a join.
    pub(crate) fn bubble_tag(&self) -> u64 {
        #[cfg(loom)]
        if self.model.is_some() {
            // A G of `goro::model`: no runtime, no bubble.
            return 0;
        }
        self.header().scheduler().bubble_tag()
    }

    fn header(&self) -> &Header {
        // SAFETY: the handle owns a reference.
        unsafe { self.raw.as_ref() }
    }

    /// Asks the G to stop: its future is dropped at its next scheduling point (right away if it
    /// is waiting), and the handle then yields a [`JoinError`] with
    /// [`is_cancelled`](JoinError::is_cancelled). A G that already finished keeps its result.
    ///
    /// Go has no such thing; it is the Rust way to cancel a future.
    ///
    /// ```
    /// goro::run(async {
    ///     let h = goro::go(std::future::pending::<()>());
    ///     h.abort();
    ///     assert!(h.await.unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn abort(&self) {
        #[cfg(loom)]
        if let Some(m) = &self.model {
            return m.abort();
        }
        let h = self.header();
        if h.state.transition_to_notified_and_cancel() == super::state::ToNotified::Submit {
            // SAFETY: the transition took a reference for the run queue, handed over here.
            unsafe { Header::schedule(self.raw) };
        }
    }

    /// Whether the G has finished (returned, panicked or been cancelled).
    ///
    /// ```
    /// goro::run(async {
    ///     let h = goro::go(async {});
    ///     while !h.is_finished() {
    ///         goro::runtime::yield_now().await;
    ///     }
    /// });
    /// ```
    pub fn is_finished(&self) -> bool {
        #[cfg(loom)]
        if let Some(m) = &self.model {
            return m.is_finished();
        }
        self.header().state.load().is_complete()
    }

    /// The G's id (Go's `goid`).
    ///
    /// ```
    /// goro::run(async {
    ///     let a = goro::go(async {});
    ///     let b = goro::go(async {});
    ///     assert_ne!(a.id(), b.id());
    /// });
    /// ```
    pub fn id(&self) -> u64 {
        #[cfg(loom)]
        if let Some(m) = &self.model {
            return m.id();
        }
        self.header().goid
    }

    fn read_output(&mut self) -> Result<T, JoinError> {
        let mut out: Option<Result<T, JoinError>> = None;
        // SAFETY: COMPLETE was observed with our JOIN_INTEREST set, so the output is ours; `out`
        // has the type the vtable's `read_output::<F>` writes (F::Output = T).
        unsafe { (self.header().vtable.read_output)(self.raw, &mut out as *mut _ as *mut ()) };
        out.expect("output written")
    }

    fn slot(&self) -> &UnsafeCell<Option<Waker>> {
        &self.header().join_waker
    }

    /// Writes the join-waker slot, which is the handle's alone while `JOIN_WAKER` is clear (see
    /// `state`: the G reads it only while the bit is set, and only the handle sets it), and
    /// `&mut self` is the one handle.
    fn write_slot(&mut self, w: Option<Waker>) {
        let h = self.header();
        debug_assert!(!h.state.load().is_join_waker_set(), "goro: the join waker written while the G may read it");
        // SAFETY: exclusive, as above: each caller has seen the bit clear (a failed set, a
        // successful unset, or `unset_join_interest`), and only this handle could set it.
        h.join_waker.with_mut(|slot| unsafe { *slot = w });
    }
}

impl<T> JoinHandle<T> {
    /// The join's protocol (see `state`'s `JOIN_WAKER`): the `Future` impl (in `runtime`,
    /// which adds the yield point and the wait reason) but for the scheduler's part.
    pub(crate) fn poll_join(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        let this = &mut *self;
        #[cfg(loom)]
        if let Some(m) = &this.model {
            return m.poll(cx);
        }
        let state = &this.header().state;
        let snap = state.load();
        if snap.is_complete() {
            return Poll::Ready(this.read_output());
        }
        if snap.is_join_waker_set() {
            // Both sides may read the slot while JOIN_WAKER is set.
            // SAFETY: shared read under the protocol; nobody writes while the bit is set.
            let same = this.slot().with(|w| unsafe { (*w).as_ref() }.is_some_and(|w| w.will_wake(cx.waker())));
            if same {
                return Poll::Pending;
            }
            if state.unset_join_waker().is_err() {
                return Poll::Ready(this.read_output());
            }
        }
        // JOIN_WAKER is clear: the slot is ours alone.
        this.write_slot(Some(cx.waker().clone()));
        match this.header().state.set_join_waker() {
            Ok(()) => Poll::Pending,
            Err(_) => {
                // Completed meanwhile; the slot is still ours: empty it.
                this.write_slot(None);
                Poll::Ready(this.read_output())
            }
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        #[cfg(loom)]
        if self.model.is_some() {
            return; // the model's `Join` is freed with its last `Arc`
        }
        let header = self.header();
        let prev: Snapshot = header.state.unset_join_interest();
        if prev.is_complete() {
            // The output is ours; nobody will read it. (A second drop after `read_output` finds
            // `Consumed`, which drops nothing.)
            // SAFETY: complete with our interest set: we own the output.
            unsafe { (header.vtable.drop_output)(self.raw) };
        } else if prev.is_join_waker_set() {
            // We cleared JOIN_WAKER with JOIN_INTEREST: the slot is ours.
            self.write_slot(None);
        }
        let header = self.header();
        if header.state.ref_dec(1) {
            // SAFETY: that was the last reference.
            unsafe { (header.vtable.dealloc)(self.raw) };
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle").field("goid", &self.id()).field("finished", &self.is_finished()).finish()
    }
}
