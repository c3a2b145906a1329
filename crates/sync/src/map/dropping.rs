//! Running the user's destructors (`K::drop`, `V::drop`) when the map drops many things at once.
//!
//! Where the map drops keys and values *on behalf of a caller* (`clear` dropping what only the
//! dirty map held, `Drop for Map`, the last `Arc` of a table going in `range`), it does so after
//! its lock is released, one object at a time: a panicking destructor does not stop the others
//! from running (a plain `HashMap` drop would leak them), two panics never meet (which would
//! abort the process), and the first panic is resumed in the caller once everything is dropped,
//! with the map consistent. Objects retired to the epoch collector are dropped by it instead,
//! where a panic is contained (`reclaim/epoch.rs`).

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Drops things one by one and keeps the first panic for [`finish`](DropAll::finish).
pub(super) struct DropAll {
    first: Option<Box<dyn Any + Send>>,
}

impl DropAll {
    pub(super) fn new() -> DropAll {
        DropAll { first: None }
    }

    /// Keeps `payload` if it is the first panic, discards it otherwise.
    fn keep(&mut self, payload: Box<dyn Any + Send>) {
        match self.first {
            None => self.first = Some(payload),
            Some(_) => discard(payload),
        }
    }

    /// Runs `f` (which drops something), keeping its panic if it is the first.
    pub(super) fn run(&mut self, f: impl FnOnce()) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
            self.keep(payload);
        }
    }

    /// Runs `each` on every item of `items`, going on after a panic (each item's drop, which
    /// `each` performs, must leave nothing else of it to drop if it panics). One `catch_unwind`
    /// for the whole run, not one per item: this is how tables are dropped.
    pub(super) fn run_each<I: Iterator>(&mut self, mut items: I, mut each: impl FnMut(I::Item)) {
        loop {
            let run = catch_unwind(AssertUnwindSafe(|| {
                // A `for` loop calls `next` item by item (no internal iteration that a panic
                // could cut short), so the iterator stays consistent and no item is lost.
                for item in items.by_ref() {
                    each(item);
                }
            }));
            match run {
                Ok(()) => return,
                Err(payload) => self.keep(payload),
            }
        }
    }

    /// Drops every pair of `pairs`, both halves on their own: a panic of the first half's
    /// destructor does not leave the second half to be dropped during the unwinding (two
    /// panics at once abort).
    pub(super) fn drop_pairs<A, B>(&mut self, pairs: impl Iterator<Item = (A, B)>) {
        // The second half waits here, outside the unwinding stack, while the first is dropped.
        let mut second: Option<B> = None;
        let mut pairs = pairs.fuse();
        loop {
            let run = catch_unwind(AssertUnwindSafe(|| {
                drop(second.take()); // left by a panic of the previous pair's first half
                for (a, b) in pairs.by_ref() {
                    second = Some(b);
                    drop(a);
                    drop(second.take());
                }
            }));
            match run {
                Ok(()) => return,
                Err(payload) => self.keep(payload),
            }
        }
    }

    /// Drops `value`, keeping its destructor's panic if it is the first.
    pub(super) fn drop<T>(&mut self, value: T) {
        self.run(move || drop(value));
    }

    /// Resumes the first panic in the caller. If the thread is already unwinding (this drop is
    /// part of the cleanup of another panic), a second panic would abort: it is discarded.
    pub(super) fn finish(self) {
        if let Some(payload) = self.first {
            if std::thread::panicking() {
                discard(payload);
            } else {
                resume_unwind(payload);
            }
        }
    }
}

/// Drops a panic payload that nobody will see (the panic hook reported the panic when it
/// happened). A payload whose own destructor panics is leaked rather than let that escape.
pub(crate) fn discard(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}
