//! goro-chan: Go's channels and `select` for Rust.
//!
//! A channel is Go's `hchan`: one lock, a ring buffer of `cap` slots, and FIFO queues of
//! blocked receivers and senders. A blocked operation is a *sudog* that lives inside the
//! pinned future (or the blocked thread's stack), so waiting allocates nothing. A sender that
//! finds a waiting receiver hands the value straight to it and wakes it; on goro that wake puts
//! the receiver in the current P's `runnext`, so a ping-pong pair stays on one P.
//!
//! Everything works in three worlds: Gs on goro, tasks on any other executor (plain `Waker`s),
//! and plain OS threads (the `*_blocking` calls and `select_blocking!`).
//!
//! ```
//! goro::run(async {
//!     let (tx, rx) = goro::chan::<u32>(0);
//!     goro::go(async move {
//!         for i in 0..3 {
//!             tx.send(i).await.unwrap();
//!         }
//!     });
//!     let mut got = Vec::new();
//!     while let Some(v) = rx.recv().await {
//!         got.push(v);
//!     }
//!     assert_eq!(got, [0, 1, 2]);
//! });
//! ```
//!
//! Differences from Go, each so that nothing is lost and nothing panics:
//! - a send on a closed channel returns `Err(SendError(value))` (Go panics);
//! - closing twice returns `false` (Go panics);
//! - when every `Sender` is dropped the channel closes; when every `Receiver` is dropped,
//!   sends fail with their value back;
//! - dropping a receive future that was already handed a value gives the value back to the
//!   channel.

#![warn(missing_docs)]

mod both;
mod chan;
mod error;
mod handles;
mod loom;
mod ops;
#[doc(hidden)]
pub mod select;
mod waitq;

#[cfg(all(test, loom))]
mod loom_tests;

pub use both::Chan;
pub use error::{SendError, TryRecvError, TrySendError};
pub use handles::{chan, chan_of_every_bubble, Iter, Receiver, Sender};
pub use select::{RecvToken, Select, SendToken};

/// The futures the async methods return, named for code that stores them (a struct field, a
/// `Pin<Box<..>>`). They live here rather than beside the handles so that `use goro::chan::*`
/// does not bring a type named `Send` into scope, where it would shadow the marker trait
/// `std::marker::Send`.
pub mod futures {
    pub use crate::ops::{Recv, Send};
    pub use crate::select::Wait;
}
