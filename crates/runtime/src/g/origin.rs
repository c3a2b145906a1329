//! What goro's panic hook (see `panics`) keeps of a panic inside a G's poll, until the poll's
//! `catch_unwind` hands it to the `JoinError` the panic becomes (or, if the G caught it itself,
//! until the poll ends and it is printed).

use std::backtrace::Backtrace;
use std::cell::RefCell;

/// A panic that happened inside a G's poll, as the hook saw it.
pub(crate) struct Origin {
    /// The payload's text.
    pub(crate) message: String,
    /// Where it happened.
    pub(crate) location: Option<String>,
    /// Captured if `RUST_BACKTRACE` asks for one.
    pub(crate) backtrace: Backtrace,
}

impl Origin {
    /// The panic's message.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

thread_local! {
    /// The panic the hook kept for the G being polled.
    static KEPT: RefCell<Option<Origin>> = const { RefCell::new(None) };
}

/// Keeps `o` for the G this thread polls; `false` if a panic is kept already (a second one, in a
/// destructor: the hook prints it at once).
pub(crate) fn keep(o: Origin) -> bool {
    KEPT.try_with(|k| {
        let mut k = k.borrow_mut();
        if k.is_some() {
            return false;
        }
        *k = Some(o);
        true
    })
    .unwrap_or(false)
}

/// The panic kept for the G this thread polls, taken (the poll's `catch_unwind` caught it).
pub(crate) fn take_kept() -> Option<Origin> {
    KEPT.try_with(|k| k.borrow_mut().take()).ok().flatten()
}
