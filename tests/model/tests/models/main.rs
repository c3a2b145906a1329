//! goro's model tests: Go programs run under `goro::model`, which makes every G a loom thread
//! and explores their interleavings, with time virtual. Each classic bug comes as the buggy
//! program, which the model must catch, and its fix, which must pass. Built only with
//! `--cfg loom` (see `Cargo.toml` for the command).

#![cfg(loom)]

mod goro_model;
mod harness;
mod lock_order;
mod pipeline;
mod select_timeout;
mod sync_map;
mod waitgroup;
