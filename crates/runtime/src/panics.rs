//! A G's panic that nothing will observe is not lost: it is printed in Go's shape, and, if the
//! runtime was built to (`Builder::unhandled_panic`), it ends the run as in Go.
//!
//! Rust's panic hook prints a panic where it happens (`thread 'goro-m-1' panicked at ...`),
//! before anyone knows whether the G's `JoinHandle` will look at it. goro installs a hook of its
//! own around the previous one: a panic inside a G's poll is not printed then, but kept (its
//! message, where it happened, and the backtrace if `RUST_BACKTRACE` asks for one) with the
//! `JoinError` the panic becomes. If the handle receives the error, the program decides what to
//! print. If the handle was dropped, or is dropped without looking, goro prints
//!
//! ```text
//! panic: boom
//!     at src/main.rs:20:9
//!
//! goroutine 5 [running]:
//! created by goroutine 1 at src/main.rs:14:9
//! ```
//!
//! (Go's `panic: ` line, then the G's block of the dump). A panic caught inside the G
//! (`catch_unwind`) is printed when the poll ends, as Rust's hook would have printed it. Panics
//! outside goro's Gs go to the previous hook unchanged.

use crate::g::origin::{keep, take_kept, Origin};
use crate::g::JoinError;
use std::backtrace::{Backtrace, BacktraceStatus};
use std::fmt::Write as _;
use std::panic::PanicHookInfo;
use std::sync::Once;

pub use crate::config::UnhandledPanic;

/// Whether this thread is polling a G (or dropping its future): its panics are the G's. Only
/// the hook asks, so the poll itself pays nothing.
#[cfg(not(loom))]
fn in_g() -> bool {
    crate::m::current(|ctx| ctx.is_some_and(|c| c.curg.get().is_some()))
}

/// Under loom the hook also sees panics raised outside a model's execution (the generator
/// crate ends each of loom's threads with one, after loom has let go of its state), where
/// goro's thread-locals, loom's, cannot be read: a read there panics inside the hook, which
/// aborts the process. The Go-shaped printing is left to the normal build.
#[cfg(loom)]
fn in_g() -> bool {
    false
}

/// Installs goro's hook around the current one, once per process (at the first runtime built).
pub(crate) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            let kept = in_g()
                && keep(Origin {
                    message: payload_message(info.payload()),
                    location: info.location().map(|l| l.to_string()),
                    backtrace: Backtrace::capture(),
                });
            if kept {
                // If the G catches it itself, it is printed when the poll ends.
                crate::coop::at_poll_end_runtime(print_caught);
            } else {
                prev(info);
            }
        }));
    });
}

/// At the end of a poll in which a G panicked: if the G caught the panic itself (it did not
/// become the G's output, which takes it), print it the way Rust's hook would have.
fn print_caught() {
    if let Some(o) = take_kept() {
        let name = std::thread::current().name().unwrap_or("<unnamed>").to_owned();
        let at = o.location.as_deref().unwrap_or("<unknown>");
        let mut s = format!("thread '{name}' panicked at {at}:\n{}\n", o.message);
        push_backtrace(&mut s, &o.backtrace);
        eprint!("{s}");
    }
}

/// The main G of `#[goro::main]`/`#[goro::test]` panicked, and its panic goes on in the calling
/// thread (`resume_unwind`, which calls no hook): print it there first, as Rust's hook would
/// have where it happened, so that the test harness shows it under the failed test (it
/// captures the test thread's output) and a program's stderr has it.
pub(crate) fn print_resumed(err: &JoinError) {
    let name = std::thread::current().name().unwrap_or("<unnamed>").to_owned();
    let (at, bt) = match err.origin() {
        Some(o) => (o.location.clone().unwrap_or_else(|| "<unknown>".to_owned()), Some(&o.backtrace)),
        None => ("<unknown>".to_owned(), None),
    };
    let mut s = format!("thread '{name}' panicked at {at}:\n{}\n", err.panic_message());
    if let Some(bt) = bt {
        push_backtrace(&mut s, bt);
    }
    eprint!("{s}");
}

/// The message of a panic's payload (a `&str` or `String`; anything else is named by type).
pub fn payload_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "Box<dyn Any>".to_owned()
    }
}

fn push_backtrace(s: &mut String, bt: &Backtrace) {
    if bt.status() == BacktraceStatus::Captured {
        let _ = writeln!(s, "stack backtrace:\n{bt}");
    }
}

/// A G's panic that nothing will observe (`err` is its `JoinError`, dropped unread): prints it
/// in Go's shape. (Whether the run then ends is the runtime's policy: see
/// `Schedule::unobserved`.)
pub(crate) fn report_unobserved(parent: u64, err: &JoinError) {
    let mut s = format!("panic: {}", err.panic_message());
    match err.origin() {
        Some(o) => {
            if let Some(at) = &o.location {
                let _ = write!(s, "\n\tat {at}");
            }
            s.push('\n');
            let g = crate::traceback::Goroutine::panicking(err.id(), err.location(), parent);
            let _ = write!(s, "\n{g}");
            push_backtrace(&mut s, &o.backtrace);
        }
        None => {
            let g = crate::traceback::Goroutine::panicking(err.id(), err.location(), parent);
            let _ = write!(s, "\n\n{g}");
        }
    }
    eprint!("{s}");
}
