//! `JoinError`: why a G produced no value (it panicked, or it was cancelled), as its
//! `JoinHandle` reports it and as the G's stage stores it (see `raw`).

use super::origin::{take_kept, Origin};
use std::any::Any;
use std::fmt;
use std::panic::Location;

/// Why a G produced no value: it panicked, or it was cancelled (by [`JoinHandle::abort`](super::JoinHandle::abort), or
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
    origin: Option<Origin>,
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
        let origin = take_kept();
        JoinError { goid, location, repr: Repr::Panic(Box::new(Panicked { payload: SyncPanic(payload), origin })) }
    }

    /// What goro's panic hook kept of the panic.
    pub(crate) fn origin(&self) -> Option<&Origin> {
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
