//! goro's model tests live in `tests/models/`; they are built only with `--cfg loom` (see
//! `Cargo.toml`). This library is empty.
