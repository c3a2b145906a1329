//! Compile-fail tests (trybuild): the mistakes a Go programmer makes with `select!`, timers and
//! futures must be compile errors that say what to write instead. The expected messages are
//! the `.stderr` files beside each case in `tests/ui/`; `TRYBUILD=overwrite cargo test --test
//! compile_fail` rewrites them after a deliberate change (review the diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
