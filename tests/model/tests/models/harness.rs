//! What the tests share: running a model that must fail, and reading its failure.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `check` (a `goro::model`) and returns its panic message; panics if it passed.
pub fn failure(check: impl FnOnce()) -> String {
    match catch_unwind(AssertUnwindSafe(check)) {
        Ok(()) => panic!("the model passed, but it has a bug loom should find"),
        Err(p) => match p.downcast::<String>() {
            Ok(s) => *s,
            Err(p) => match p.downcast::<&str>() {
                Ok(s) => (*s).to_owned(),
                Err(_) => "<non-string panic>".to_owned(),
            },
        },
    }
}
