//! Compile-fail tests (trybuild): the mistakes a Go programmer makes with `select!`, timers and
//! futures must be compile errors that say what to write instead. The expected messages are
//! the `.stderr` files beside each case in `tests/ui/` (here, in the goro-extra-tests member:
//! trybuild is a dependency the facade's own tests do without); `TRYBUILD=overwrite cargo test
//! -p goro-extra-tests --test compile_fail` rewrites them after a deliberate change (review the
//! diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
