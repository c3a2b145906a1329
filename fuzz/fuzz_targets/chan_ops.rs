//! Channel operations of several actors, driven by hand on one thread and checked against a
//! sequential model of Go's channels: see `goro_fuzz` (fuzz/src/lib.rs, the model in
//! fuzz/src/model.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| goro_fuzz::run(data, goro_fuzz::Profile::ChanOps));
