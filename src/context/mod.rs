//! Go's `context` package: cancellation, deadlines and request-scoped values that flow down a
//! tree of [`Context`]s.
//!
//! ```
//! use goro::context::{self, Context, ContextError};
//! use std::time::Duration;
//!
//! // func worker(ctx context.Context, jobs <-chan int) error {
//! //     for {
//! //         select {
//! //         case j := <-jobs: ...
//! //         case <-ctx.Done(): return ctx.Err()
//! //         }
//! //     }
//! // }
//! async fn worker(ctx: Context, jobs: goro::chan::Receiver<u32>) -> ContextError {
//!     loop {
//!         goro::select! {
//!             recv(jobs) -> j => { let _ = j; },
//!             recv(ctx.done()) -> _ => return ctx.err().unwrap(),
//!         }
//!     }
//! }
//!
//! goro::run(async {
//!     let (ctx, cancel) = context::with_timeout(&Context::background(), Duration::from_millis(10));
//!     let (_tx, jobs) = goro::chan(0);
//!     let h = goro::go(worker(ctx, jobs));
//!     assert_eq!(h.await.unwrap(), ContextError::DeadlineExceeded);
//!     cancel(); // Go's `defer cancel()`: harmless after the deadline, frees the context early
//! });
//! ```
//!
//! Import the module and the type, as above, and write `context::with_cancel(..)` as Go writes
//! `context.WithCancel`: `use goro::context::*` would bring this [`Context`] over
//! `std::task::Context`, the argument of a hand-written `Future::poll` (where both are needed,
//! name std's `std::task::Context`).
//!
//! # The tree
//!
//! Every context but the roots ([`Context::background`], [`Context::todo`]) has a parent, and
//! is made by one of the `with_*` functions:
//!
//! - [`with_cancel`] (and [`with_cancel_cause`]) adds a *cancelable* node and returns it with
//!   its [`CancelFunc`];
//! - [`with_deadline`] / [`with_timeout`] (and the `_cause` forms) add a cancelable node that
//!   also cancels itself, with [`ContextError::DeadlineExceeded`], when its deadline passes;
//! - [`with_value`] adds a node carrying one key/value pair. It is not cancelable itself: its
//!   `done`, `err` and deadline are those of its nearest cancelable ancestor.
//! - [`without_cancel`] adds a node that keeps its parent's values but not its cancellation
//!   or deadline: a new root for cancellation.
//!
//! A cancelable node registers in its nearest cancelable ancestor's set of children. Cancelling
//! a node cancels all its descendants, with the same error and cause, and clears its set of
//! children; a node cancelled on its own (its `CancelFunc`, its deadline) leaves its parent's
//! set. So a long-lived parent does not accumulate children, as long as each child is
//! cancelled: **call the `CancelFunc` when you are done with a context**, as Go's `defer
//! cancel()` does. A context that is never cancelled stays in its parent's set until the
//! parent is cancelled, exactly as in Go (`go vet`'s `lostcancel` warning).
//!
//! Memory is reference counted: a node holds its parent (for values and cancellation), a
//! cancelable node holds its registered children, and a child's link back to that set is weak,
//! so an uncancelled tree is freed once nothing refers to it (as Go's garbage collector would
//! free it). Deep chains are freed iteratively, without recursion.
//!
//! # Invariants
//!
//! - Once `err()` is `Some`, it never changes; the first cancellation wins (a later
//!   `cancel()`, a deadline that passes afterwards, a parent cancelled afterwards: all no-ops).
//! - `err()` is set *before* `done()` closes: a G that sees `done()` closed sees `err()` as
//!   `Some`. When a `CancelFunc` returns, the context and all its descendants are cancelled.
//! - A child made from an already cancelled parent is born cancelled, with the parent's error.
//! - A context's deadline is never later than its parent's: [`with_deadline`] with a later
//!   deadline than the parent's simply returns a [`with_cancel`] child.
//! - `done()` returns a handle to one channel per cancelable node (a value node shares its
//!   ancestor's); the roots' channel never closes.
//! - A deadline is kept by one [`goro::time::after_func`](crate::time::after_func) timer, which
//!   is stopped when the context is cancelled earlier.
//!
//! # Thread-safety
//!
//! [`Context`] is `Clone + Send + Sync`; a clone is an `Arc` bump, so pass contexts by value to
//! Gs as freely as Go passes the interface. [`CancelFunc`] is an `Arc<dyn Fn() + Send + Sync>`:
//! clone it, and call it from any G or any plain thread, concurrently; every call after the
//! first does nothing. `done()` works in `select!` and with
//! [`recv_blocking`](crate::chan::Receiver::recv_blocking) on a plain thread.
//!
//! # Values and their keys
//!
//! [`with_value(&ctx, key, val)`](with_value) takes a key of any type `K: Any + PartialEq +
//! Send + Sync`; [`ctx.value::<V>(&key)`](Context::value) finds the nearest node whose key has
//! the same *type* and compares equal, and returns its value if it is a `V`. This is Go's rule
//! (an interface key matches on dynamic type and `==`), and it ports Go's idiom as is: a
//! private key type cannot collide with anybody else's key, even one with the same name or the
//! same underlying value.
//!
//! ```
//! use goro::context::{self, Context};
//!
//! #[derive(PartialEq)]
//! struct RequestId; // Go: type requestIDKey struct{}
//!
//! fn with_request_id(ctx: &Context, id: u64) -> Context {
//!     context::with_value(ctx, RequestId, id)
//! }
//! fn request_id(ctx: &Context) -> Option<u64> {
//!     ctx.value::<u64>(&RequestId).copied()
//! }
//!
//! let ctx = with_request_id(&Context::background(), 7);
//! assert_eq!(request_id(&ctx), Some(7));
//! ```
//!
//! A `Key<T>` type tying the value type to the key was considered; it needs a unique identity
//! per key (the address of a `static`, which a `const` would silently duplicate, or an id
//! allocated at run time, which a `static` cannot hold without lazy initialization), and it
//! would not port Go code whose keys are plain values. With Go's rule, the type of the value is
//! the reader's to state, and a reader asking for the wrong type gets `None`, like Go's failed
//! type assertion; hide both sides behind two small typed functions, as above, and a mismatch
//! cannot happen. `&'static str` keys work too, but, as in Go, they can collide across crates.
//!
//! # Differences from Go
//!
//! - `Context` is a concrete type, not an interface: there are no user-defined contexts.
//! - `err()` returns `Option<ContextError>` (Go: a nil or non-nil `error`); causes are
//!   [`Cause`], an `Arc<dyn Error + Send + Sync>`.
//! - A `CancelFunc` is not called when dropped; call it (Go's `defer cancel()`).
//! - [`with_deadline`] and [`with_timeout`] with a deadline still ahead arm a goro timer, so
//!   they must be called from a G (inside [`goro::run`](crate::run)); a deadline already passed
//!   needs no timer and works anywhere. [`with_cancel`] and [`with_value`] work anywhere.
//! - Deadlines are monotonic [`Instant`]s, not wall-clock times.
//! - If a cancelable context is dropped entirely (every `Context` handle and its `CancelFunc`,
//!   with no live cancelable ancestor or pending timer referring to it) without being
//!   cancelled, nobody can cancel it any more; receivers of its `done()` still alive then wait
//!   forever, as in Go. Its channel is leaked to keep that true rather than close spuriously.
//! - Cancellation walks the subtree recursively, as Go's does: a chain of tens of thousands of
//!   nested *cancelable* contexts could exhaust the stack of the canceller (value nodes do not
//!   count).
//! - Not ported: `AfterFunc`, `WithDeadlineCause`'s nil cause.

mod node;
mod with;

pub use with::{
    cause, with_cancel, with_cancel_cause, with_deadline, with_deadline_cause, with_timeout, with_timeout_cause,
    with_value, without_cancel,
};

use crate::chan::Receiver;
use node::{lock, Kind, Node};
use std::any::Any;
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Instant;

/// Cancels its context (Go's `context.CancelFunc`): call it as `cancel()`.
///
/// Idempotent: the first call cancels the context and its descendants with
/// [`ContextError::Canceled`] and removes it from its parent; later calls, and calls after the
/// deadline, do nothing. Cheap to clone (an `Arc`), and callable from any G or thread,
/// concurrently.
///
/// ```
/// use goro::context::{self, CancelFunc, Context, ContextError};
///
/// let (ctx, cancel) = context::with_cancel(&Context::background());
/// let cancel2: CancelFunc = cancel.clone();
/// std::thread::spawn(move || cancel2()).join().unwrap();
/// cancel(); // a no-op now
/// assert_eq!(ctx.err(), Some(ContextError::Canceled));
/// ```
pub type CancelFunc = Arc<dyn Fn() + Send + Sync>;

/// Why a context was cancelled (Go's `error` passed to a `CancelCauseFunc`): any error,
/// shareable between the contexts of a subtree.
///
/// ```
/// use goro::context::Cause;
/// let cause: Cause = std::sync::Arc::new(std::io::Error::other("shutting down"));
/// assert_eq!(cause.to_string(), "shutting down");
/// ```
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Cancels its context, recording a cause (Go's `context.CancelCauseFunc`): call it as
/// `cancel(Some(cause))`, or `cancel(None)` for a cause of [`ContextError::Canceled`].
///
/// Only the first call (of this function, or of any cancellation of the context) counts.
///
/// ```
/// use goro::context::{self, CancelCauseFunc, Context};
/// use std::sync::Arc;
///
/// let (ctx, cancel): (Context, CancelCauseFunc) = context::with_cancel_cause(&Context::background());
/// cancel(Some(Arc::new(std::io::Error::other("client went away"))));
/// assert_eq!(context::cause(&ctx).unwrap().to_string(), "client went away");
/// ```
pub type CancelCauseFunc = Arc<dyn Fn(Option<Cause>) + Send + Sync>;

/// Why a context is done: Go's `context.Canceled` and `context.DeadlineExceeded`.
///
/// Displays as Go's texts, so logs and error chains read the same.
///
/// ```
/// use goro::context::ContextError;
/// assert_eq!(ContextError::Canceled.to_string(), "context canceled");
/// assert_eq!(ContextError::DeadlineExceeded.to_string(), "context deadline exceeded");
/// let e: Box<dyn std::error::Error> = Box::new(ContextError::Canceled);
/// assert_eq!(e.to_string(), "context canceled");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContextError {
    /// The context was cancelled: its [`CancelFunc`] (or an ancestor's) was called.
    Canceled,
    /// The context's deadline (or an ancestor's) passed.
    DeadlineExceeded,
}

impl ContextError {
    /// Whether this is a timeout: `true` for [`DeadlineExceeded`](ContextError::DeadlineExceeded)
    /// (Go's `DeadlineExceeded` implements `Timeout() bool` the same way).
    ///
    /// ```
    /// use goro::context::ContextError;
    /// assert!(ContextError::DeadlineExceeded.is_timeout());
    /// assert!(!ContextError::Canceled.is_timeout());
    /// ```
    pub fn is_timeout(self) -> bool {
        self == ContextError::DeadlineExceeded
    }

    fn code(self) -> u8 {
        match self {
            ContextError::Canceled => 1,
            ContextError::DeadlineExceeded => 2,
        }
    }

    fn from_code(code: u8) -> Option<ContextError> {
        match code {
            1 => Some(ContextError::Canceled),
            2 => Some(ContextError::DeadlineExceeded),
            _ => None,
        }
    }
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContextError::Canceled => "context canceled",
            ContextError::DeadlineExceeded => "context deadline exceeded",
        })
    }
}

impl std::error::Error for ContextError {}

/// A node of the context tree (Go's `context.Context`): a cancellation signal, an optional
/// deadline, and values, inherited from its ancestors.
///
/// `Clone + Send + Sync`; a clone is an `Arc` bump and denotes the same context. See the
/// [module docs](crate::context) for the tree and its invariants.
///
/// ```
/// use goro::context::{self, Context};
///
/// goro::run(async {
///     let (ctx, cancel) = context::with_cancel(&Context::background());
///     let waiter = {
///         let ctx = ctx.clone();
///         goro::go(async move {
///             ctx.done().recv().await; // None: closed
///             ctx.err()
///         })
///     };
///     cancel();
///     assert_eq!(waiter.await.unwrap(), Some(context::ContextError::Canceled));
/// });
/// ```
#[derive(Clone)]
pub struct Context {
    node: Arc<Node>,
}

impl Context {
    /// The root of every context tree (Go's `context.Background()`): never cancelled, no
    /// deadline, no values. Its `done()` never closes.
    ///
    /// ```
    /// use goro::context::Context;
    /// let bg = Context::background();
    /// assert_eq!(bg.err(), None);
    /// assert_eq!(bg.deadline(), None);
    /// assert!(bg.done().try_recv().is_err());
    /// assert!(!bg.done().is_closed());
    /// ```
    pub fn background() -> Context {
        static BACKGROUND: OnceLock<Context> = OnceLock::new();
        BACKGROUND.get_or_init(|| Context::root(Kind::Background)).clone()
    }

    /// A root context for code not yet wired to receive one (Go's `context.TODO()`): behaves
    /// exactly like [`background`](Context::background), and says so in its `Debug` output.
    ///
    /// ```
    /// use goro::context::Context;
    /// let ctx = Context::todo();
    /// assert_eq!(ctx.err(), None);
    /// assert_eq!(format!("{ctx:?}"), "context.TODO");
    /// ```
    pub fn todo() -> Context {
        static TODO: OnceLock<Context> = OnceLock::new();
        TODO.get_or_init(|| Context::root(Kind::Todo)).clone()
    }

    fn root(kind: Kind) -> Context {
        Context { node: Arc::new(Node { kind, parent: None, cancel: None, deadline: None }) }
    }

    /// A channel closed when the context is cancelled or its deadline passes (Go's
    /// `ctx.Done()`). Nothing is ever sent on it: a receive returns `None` once it is closed,
    /// so `recv(ctx.done()) -> _ => ..` is the `select!` case for `case <-ctx.Done():`.
    ///
    /// Every call returns a handle to the same channel (a value context shares its cancelable
    /// ancestor's); the roots' channel never closes.
    ///
    /// ```
    /// use goro::context::{self, Context};
    /// goro::run(async {
    ///     let (ctx, cancel) = context::with_cancel(&Context::background());
    ///     let (tx, rx) = goro::chan::<u32>(1);
    ///     tx.send(1).await.unwrap();
    ///     cancel();
    ///     let mut got = Vec::new();
    ///     loop {
    ///         goro::select! {
    ///             recv(rx) -> v => got.push(v.unwrap()),
    ///             recv(ctx.done()) -> _ => if rx.is_empty() { break },
    ///         }
    ///     }
    ///     assert_eq!(got, [1]);
    ///     assert!(ctx.done().same_channel(&ctx.done()));
    /// });
    /// ```
    pub fn done(&self) -> Receiver<()> {
        match &self.node.cancel {
            Some(cc) => cc.done.receiver(),
            None => never(),
        }
    }

    /// Runs `fut` until it completes or the context is done, whichever comes first: Go's
    /// `select { case r := <-op: ...; case <-ctx.Done(): return ctx.Err() }` for an operation
    /// that is a future rather than a channel (`select!` takes channel cases only), such as a
    /// socket's `accept` or `read`, a lock, or a `sleep`.
    ///
    /// Returns `Ok(output)`, or `Err(ctx.err())` once the context is done; if it is done
    /// already, `fut` is not polled at all. When both are ready at once the context wins.
    ///
    /// # Cancel safety
    /// When the context wins, `fut` is dropped, so use it with operations that are cancel-safe
    /// (goro's channel operations, `accept`, `read`, `Mutex::lock`, `sleep` are): then nothing
    /// is lost. Dropping the `or_done` future drops `fut`.
    ///
    /// ```
    /// use goro::context::{self, Context, ContextError};
    /// use goro::net::TcpListener;
    /// use std::time::Duration;
    ///
    /// goro::run(async {
    ///     let ln = TcpListener::bind("127.0.0.1:0").await?;
    ///     let (ctx, cancel) = context::with_timeout(&Context::background(), Duration::from_millis(20));
    ///     // for { conn, err := ln.Accept(); ... }, shut down by the context (Go: a goroutine
    ///     // that closes `ln` on <-ctx.Done()).
    ///     let err = loop {
    ///         match ctx.or_done(ln.accept()).await {
    ///             Ok(accepted) => drop(accepted?),
    ///             Err(e) => break e,
    ///         }
    ///     };
    ///     assert_eq!(err, ContextError::DeadlineExceeded);
    ///     cancel();
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn or_done<F: Future>(&self, fut: F) -> Result<F::Output, ContextError> {
        let done = self.done();
        let mut done = pin!(done.recv());
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            if done.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(self.err().expect("goro: a context whose done channel closed has an error")));
            }
            fut.as_mut().poll(cx).map(Ok)
        })
        .await
    }

    /// Why the context is done (Go's `ctx.Err()`): `None` while it is not,
    /// `Some(`[`Canceled`](ContextError::Canceled)`)` after a cancel,
    /// `Some(`[`DeadlineExceeded`](ContextError::DeadlineExceeded)`)` after the deadline.
    ///
    /// Set before `done()` closes, and never changes once set.
    ///
    /// ```
    /// use goro::context::{self, Context, ContextError};
    /// let (ctx, cancel) = context::with_cancel(&Context::background());
    /// assert_eq!(ctx.err(), None);
    /// cancel();
    /// assert_eq!(ctx.err(), Some(ContextError::Canceled));
    /// ```
    pub fn err(&self) -> Option<ContextError> {
        self.node.cancel.as_ref().and_then(|cc| cc.err())
    }

    /// Whether the context is done: `err().is_some()`, without the error.
    ///
    /// ```
    /// use goro::context::{self, Context};
    /// let (ctx, cancel) = context::with_cancel(&Context::background());
    /// assert!(!ctx.is_done());
    /// cancel();
    /// assert!(ctx.is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.err().is_some()
    }

    /// When the context will be cancelled by a deadline, its own or an ancestor's (Go's
    /// `ctx.Deadline()`); `None` if no deadline applies.
    ///
    /// ```
    /// use goro::context::{self, Context};
    /// use std::time::{Duration, Instant};
    /// goro::run(async {
    ///     let at = Instant::now() + Duration::from_secs(60);
    ///     let (ctx, cancel) = context::with_deadline(&Context::background(), at);
    ///     let (child, cancel_child) = context::with_cancel(&ctx);
    ///     assert_eq!(child.deadline(), Some(at));
    ///     assert_eq!(Context::background().deadline(), None);
    ///     cancel_child();
    ///     cancel();
    /// });
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.node.deadline
    }

    /// The value stored under `key` by the nearest [`with_value`] ancestor (or this context)
    /// whose key has `key`'s type and compares equal (Go's `ctx.Value(key).(V)`); `None` if
    /// there is none, or if that value is not a `V`.
    ///
    /// The nearest match wins even when its value has another type, as Go's lookup stops at
    /// the first matching key. See the [module docs](crate::context#values-and-their-keys) for the key
    /// design.
    ///
    /// ```
    /// use goro::context::{self, Context};
    ///
    /// #[derive(PartialEq)]
    /// struct User;
    ///
    /// let ctx = context::with_value(&Context::background(), User, String::from("gopher"));
    /// let (ctx, _cancel) = context::with_cancel(&ctx); // values flow through every node
    /// assert_eq!(ctx.value::<String>(&User).map(String::as_str), Some("gopher"));
    /// assert_eq!(ctx.value::<u32>(&User), None, "wrong value type");
    /// assert_eq!(ctx.value::<String>(&"user"), None, "a &str key is another key");
    /// ```
    pub fn value<V: Any>(&self, key: &(impl Any + PartialEq)) -> Option<&V> {
        let mut ctx = self;
        loop {
            if let Kind::WithValue { key: k, val, .. } = &ctx.node.kind {
                if let Some(k) = k.downcast_ref() {
                    if key == k {
                        return val.downcast_ref();
                    }
                }
            }
            ctx = ctx.node.parent.as_ref()?;
        }
    }

    /// How many cancelable children are registered with this context's nearest cancelable
    /// node (Go's `len(cancelCtx.children)`), for tests of the tree's bookkeeping. Not part
    /// of the stable API.
    ///
    /// ```
    /// use goro::context::{self, Context};
    /// let (parent, cancel_parent) = context::with_cancel(&Context::background());
    /// let (_child, cancel) = context::with_cancel(&parent);
    /// assert_eq!(parent.num_children(), 1);
    /// cancel();
    /// assert_eq!(parent.num_children(), 0);
    /// cancel_parent();
    /// ```
    #[doc(hidden)]
    pub fn num_children(&self) -> usize {
        self.node.cancel.as_ref().map_or(0, |cc| lock(&cc.state).children.len())
    }
}

impl Default for Context {
    /// [`Context::background`].
    fn default() -> Context {
        Context::background()
    }
}

/// Go's `String()` of a context: the path from the root, e.g.
/// `context.Background.WithValue(type my::Key, val alloc::string::String).WithCancel`.
impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = &self.node.parent {
            write!(f, "{parent:?}.")?;
        }
        match &self.node.kind {
            Kind::Background => f.write_str("context.Background"),
            Kind::Todo => f.write_str("context.TODO"),
            Kind::WithCancel => f.write_str("WithCancel"),
            Kind::WithoutCancel => f.write_str("WithoutCancel"),
            Kind::WithDeadline(d) => {
                let now = crate::time::now();
                if *d > now {
                    write!(f, "WithDeadline(in {:?})", *d - now)
                } else {
                    write!(f, "WithDeadline({:?} ago)", now - *d)
                }
            }
            Kind::WithValue { key_type, val_type, .. } => write!(f, "WithValue(type {key_type}, val {val_type})"),
        }
    }
}

/// The channel of the roots' `done()`: a sender kept for the life of the process, so it never
/// closes. Of every synctest bubble (made in one or none, used in all), and a wait on it is
/// durable in each: nothing can ever wake it, as Go's nil `Done()` channel.
#[cfg(not(loom))]
fn never() -> Receiver<()> {
    static NEVER: OnceLock<(crate::chan::Sender<()>, Receiver<()>)> = OnceLock::new();
    NEVER.get_or_init(|| goro_chan::chan_of_every_bubble(0)).1.clone()
}

/// Under loom a channel belongs to one execution of a model, so a static one cannot be shared:
/// each root's `done()` is a channel of its own that never closes.
#[cfg(loom)]
fn never() -> Receiver<()> {
    let (tx, rx) = crate::chan(0);
    tx.keep_open();
    rx
}
