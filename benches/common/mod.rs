//! What the criterion benches share, included by each with `#[path = "common/mod.rs"]` (a bench
//! is a crate of its own): the executors a workload runs on and their runtimes ([`exec`]), the
//! groups and rows of the chan and sync benches, the completion flag ([`signal`]), and W9's
//! tokio wait group ([`notify_wg`]).

// Each bench uses a part of this module (runtime.rs its executors' `yield_now` and `sleep`,
// chan.rs and sync.rs their `main` and the rows, net.rs only `spawn`): what one of them leaves
// unused is not dead.
#![allow(dead_code)]

pub mod exec;
pub mod notify_wg;
pub mod signal;
