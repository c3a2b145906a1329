//! Loom models of the scheduler's racy parts (run with `RUSTFLAGS="--cfg loom"`).
