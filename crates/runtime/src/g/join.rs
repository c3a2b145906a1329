//! `JoinHandle` and `JoinError`: the result of a G, as a future, a blocking call, or not at all.

use super::raw::Header;
use super::state::Snapshot;
use crate::loom::UnsafeCell;
use std::any::Any;
use std::fmt;

use std::marker::PhantomData;
use std::panic::Location;
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
    model: Option<std::sync::Arc<crate::model::Join<T>>>,
    _output: PhantomData<T>,
}

// SAFETY: the handle gives access to a `T` produced on another thread; that is sound for `T: Send`.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads atomic state (`is_finished`, `abort`).
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

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
    pub(crate) fn from_model(join: std::sync::Arc<crate::model::Join<T>>) -> JoinHandle<T> {
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
    ///         goro::yield_now().await;
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
        assert!(!h.state.load().is_join_waker_set(), "goro: the join waker written while the G may read it");
        // SAFETY: exclusive, as above: the bit is clear and only this handle could set it.
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

/// Why a G produced no value: it panicked, or it was cancelled (by [`JoinHandle::abort`], or
/// because the runtime shut down first).
///
/// ```
/// goro::run(async {
///     let err = goro::go(async { panic!("boom") }).await.unwrap_err();
///     assert!(err.is_panic());
///     assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "boom");
/// });
/// ```
pub struct JoinError {
    goid: u64,
    location: &'static Location<'static>,
    repr: Repr,
}

enum Repr {
    Cancelled,
    /// Boxed: a panic is rare, and a `JoinError` is part of every G's stage (its size counts in
    /// every G's memory block).
    Panic(Box<Panicked>),
}

/// A panic: its payload, and where it happened as goro's panic hook kept it (see `origin`).
struct Panicked {
    payload: SyncPanic,
    origin: Option<super::origin::Origin>,
}

/// A panic payload made `Sync` by never handing out a shared reference to it.
struct SyncPanic(Box<dyn Any + Send + 'static>);

// SAFETY: through a shared reference the payload is only ever inspected by `JoinError::message`,
// which calls `type_id` (a pure function of the vtable) and then reads the payload only if it is
// a `&'static str` or a `String`, both `Sync`. Any other payload is reached only by value
// (`into_panic`), so no `!Sync` value is ever shared between threads.
unsafe impl Sync for SyncPanic {}

impl JoinError {
    pub(crate) fn cancelled(goid: u64, location: &'static Location<'static>) -> JoinError {
        JoinError { goid, location, repr: Repr::Cancelled }
    }

    /// The G's panic with `payload`, just caught on this thread (which takes what goro's panic
    /// hook kept of it).
    pub(crate) fn panic(goid: u64, location: &'static Location<'static>, payload: Box<dyn Any + Send>) -> JoinError {
        let origin = super::origin::take_kept();
        JoinError { goid, location, repr: Repr::Panic(Box::new(Panicked { payload: SyncPanic(payload), origin })) }
    }

    /// What goro's panic hook kept of the panic.
    pub(crate) fn origin(&self) -> Option<&super::origin::Origin> {
        match &self.repr {
            Repr::Panic(p) => p.origin.as_ref(),
            Repr::Cancelled => None,
        }
    }

    /// The panic's message, for a report (the payload's text, or the hook's).
    pub(crate) fn panic_message(&self) -> String {
        match (self.message(), self.origin()) {
            (Some(m), _) => m.to_owned(),
            (None, Some(o)) => o.message().to_owned(),
            (None, None) => "Box<dyn Any>".to_owned(),
        }
    }

    /// Whether the G panicked.
    ///
    /// ```
    /// goro::run(async {
    ///     assert!(goro::go(async { panic!() }).await.unwrap_err().is_panic());
    /// });
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// Whether the G was cancelled (aborted, or dropped at shutdown).
    ///
    /// ```
    /// goro::run(async {
    ///     let h = goro::go(std::future::pending::<()>());
    ///     h.abort();
    ///     assert!(h.await.unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// The panic payload, to re-raise with `std::panic::resume_unwind`.
    ///
    /// # Panics
    /// If the G was cancelled rather than panicking; see [`try_into_panic`](Self::try_into_panic).
    ///
    /// ```
    /// goro::run(async {
    ///     let err = goro::go(async { panic!("{}", 7) }).await.unwrap_err();
    ///     assert_eq!(*err.into_panic().downcast::<String>().unwrap(), "7");
    /// });
    /// ```
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic().expect("goro: JoinError::into_panic on a cancelled G")
    }

    /// The panic payload, or the error back if the G was cancelled.
    ///
    /// ```
    /// goro::run(async {
    ///     let h = goro::go(std::future::pending::<()>());
    ///     h.abort();
    ///     assert!(h.await.unwrap_err().try_into_panic().is_err());
    /// });
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(p) => Ok(p.payload.0),
            Repr::Cancelled => Err(self),
        }
    }

    /// The id of the G that failed.
    ///
    /// ```
    /// goro::run(async {
    ///     let h = goro::go(async { panic!() });
    ///     let id = h.id();
    ///     assert_eq!(h.await.unwrap_err().id(), id);
    /// });
    /// ```
    pub fn id(&self) -> u64 {
        self.goid
    }

    /// Where the failed G was spawned.
    ///
    /// ```
    /// goro::run(async {
    ///     let err = goro::go(async { panic!() }).await.unwrap_err();
    ///     assert!(err.location().file().ends_with(".rs"));
    /// });
    /// ```
    pub fn location(&self) -> &'static Location<'static> {
        self.location
    }

    fn message(&self) -> Option<&str> {
        match &self.repr {
            // Only `Sync` payload types are read through `&self` (see `SyncPanic`).
            Repr::Panic(panicked) => {
                let p = &panicked.payload.0;
                if let Some(s) = p.downcast_ref::<&'static str>() {
                    Some(s)
                } else {
                    p.downcast_ref::<String>().map(|s| s.as_str())
                }
            }
            Repr::Cancelled => None,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "G {} (spawned at {}) was cancelled", self.goid, self.location),
            Repr::Panic(_) => match self.message() {
                Some(m) => write!(f, "G {} (spawned at {}) panicked: {m}", self.goid, self.location),
                None => write!(f, "G {} (spawned at {}) panicked", self.goid, self.location),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JoinError({self})")
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> std::io::Error {
        std::io::Error::other(e.to_string())
    }
}
