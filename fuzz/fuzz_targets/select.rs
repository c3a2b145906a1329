//! Selects (dynamic `Select` and `select!`, with and without `default`) over channels with
//! pre-filled buffers, closed and nil channels, the same channel in several cases, send and
//! receive cases mixed; every select is checked to fire exactly one case, a ready one if any
//! was ready, and to leave the channels as the model says: see `goro_fuzz` (fuzz/src/lib.rs,
//! the model in fuzz/src/model.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| goro_fuzz::run(data, goro_fuzz::Profile::Select));
