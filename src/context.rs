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
//! - Not ported (yet): `AfterFunc`, `WithDeadlineCause`'s nil cause.

use crate::chan::{Receiver, Sender};
use crate::time::Timer;
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

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

struct Node {
    kind: Kind,
    parent: Option<Context>,
    /// The nearest cancelable node, this one or an ancestor; `None` under a root only.
    cancel: Option<Arc<CancelCtx>>,
    /// This node's deadline: its own or its nearest ancestor's.
    deadline: Option<Instant>,
}

enum Kind {
    Background,
    Todo,
    WithCancel,
    WithDeadline(Instant),
    WithoutCancel,
    WithValue {
        key: Box<dyn Any + Send + Sync>,
        key_type: &'static str,
        val: Box<dyn Any + Send + Sync>,
        val_type: &'static str,
    },
}

/// The state of a cancelable node (Go's `cancelCtx`, and `timerCtx`'s timer).
struct CancelCtx {
    /// The nearest cancelable ancestor, whose set of children holds this node until it is
    /// cancelled. Weak: the parent holds the child, and a strong link back would make every
    /// uncancelled pair a cycle that outlives all its handles. The parent stays alive while
    /// this node's `Context` does anyway (through `Node::parent`); when nothing can cancel the
    /// parent any more, there is nothing to leave.
    parent: Weak<CancelCtx>,
    /// `0` while live, else a [`ContextError::code`]; written once, under `state`, before
    /// `done` closes, so the `Acquire` load in `err()` after seeing `done` closed sees it.
    err: AtomicU8,
    done: DoneChan,
    state: Mutex<CancelState>,
}

#[derive(Default)]
struct CancelState {
    /// Set with `err`.
    cause: Option<Cause>,
    /// The cancelable nodes that have this one as nearest cancelable ancestor, keyed by address
    /// (an entry keeps its node alive, so the address is unique while the entry exists).
    children: HashMap<usize, Arc<CancelCtx>>,
    /// The deadline's timer, until it fires or the node is cancelled.
    timer: Option<DeadlineTimer>,
}

/// A deadline's `after_func` timer and the link through which it reaches its node.
///
/// The timer's function holds the node only through `link`, which the cancellation empties: a
/// stopped timer's function may linger in the runtime's timer heap for a while (stale entries
/// are swept in bulk), and it must not keep the node, its values and its subtree alive.
struct DeadlineTimer {
    timer: Timer,
    link: Arc<Mutex<Option<Arc<CancelCtx>>>>,
}

impl DeadlineTimer {
    fn stop(self) {
        self.timer.stop();
        let node = lock(&self.link).take();
        drop(node);
    }
}

/// The `done` channel of a cancelable node: unbuffered, never sent on, closed on cancel.
struct DoneChan {
    /// Both are `Some` until `drop`.
    tx: Option<Sender<()>>,
    rx: Option<Receiver<()>>,
}

impl DoneChan {
    fn new() -> DoneChan {
        let (tx, rx) = crate::chan(0);
        DoneChan { tx: Some(tx), rx: Some(rx) }
    }

    fn receiver(&self) -> Receiver<()> {
        self.rx.as_ref().expect("the done channel lives as long as its node").clone()
    }

    fn close(&self) {
        self.tx.as_ref().expect("the done channel lives as long as its node").close();
    }
}

impl Drop for DoneChan {
    fn drop(&mut self) {
        drop(self.rx.take());
        if let Some(tx) = self.tx.take() {
            if !tx.is_closed() {
                // Not cancelled, and somebody still holds a receiver: nobody can cancel this
                // node any more, so its channel must never close (dropping the last sender
                // would close it and report a cancellation that never happened). Leak it.
                std::mem::forget(tx);
            }
        }
    }
}

/// Locks `m`, ignoring poisoning: no user code runs under these locks, and every critical
/// section leaves its data consistent at each step.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CancelCtx {
    fn new(parent: Weak<CancelCtx>) -> Arc<CancelCtx> {
        Arc::new(CancelCtx { parent, err: AtomicU8::new(0), done: DoneChan::new(), state: Mutex::default() })
    }

    fn err(&self) -> Option<ContextError> {
        ContextError::from_code(self.err.load(Ordering::Acquire))
    }

    fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// Go's `cancelCtx.cancel`: sets the error and cause, closes `done`, stops the timer,
    /// cancels the children (with this node's lock held, so that when this returns the whole
    /// subtree is cancelled), then leaves the parent's set if asked to.
    ///
    /// Locks are only ever nested parent-then-child, so the tree cannot deadlock.
    fn cancel(self: &Arc<Self>, remove_from_parent: bool, err: ContextError, cause: Option<Cause>) {
        let mut st = lock(&self.state);
        if self.err.load(Ordering::Relaxed) != 0 {
            return; // already cancelled: the first cancellation wins
        }
        let cause = cause.unwrap_or_else(|| Arc::new(err));
        self.err.store(err.code(), Ordering::Release);
        st.cause = Some(cause.clone());
        self.done.close();
        if let Some(timer) = st.timer.take() {
            timer.stop();
        }
        for child in std::mem::take(&mut st.children).into_values() {
            child.cancel(false, err, Some(cause.clone()));
        }
        drop(st);
        if remove_from_parent {
            if let Some(parent) = self.parent.upgrade() {
                let removed = lock(&parent.state).children.remove(&self.key());
                drop(removed);
            }
        }
    }

    /// Go's `propagateCancel`: registers `child` with this node, or cancels it at once if this
    /// node is already cancelled.
    fn adopt(&self, child: &Arc<CancelCtx>) {
        let mut st = lock(&self.state);
        match self.err() {
            Some(err) => {
                let cause = st.cause.clone();
                drop(st);
                child.cancel(false, err, cause);
            }
            None => {
                st.children.insert(child.key(), child.clone());
            }
        }
    }
}

/// Frees a subtree of uncancelled nodes iteratively: the default drop would recurse once per
/// level of nesting, and a deep chain would overflow the stack.
impl Drop for CancelCtx {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let mut orphans: Vec<Arc<CancelCtx>> = std::mem::take(&mut st.children).into_values().collect();
        while let Some(child) = orphans.pop() {
            if let Ok(mut child) = Arc::try_unwrap(child) {
                let st = child.state.get_mut().unwrap_or_else(PoisonError::into_inner);
                orphans.extend(std::mem::take(&mut st.children).into_values());
            }
        }
    }
}

/// Frees a chain of ancestors iteratively, for the same reason.
impl Drop for Node {
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(ctx) = next {
            next = Arc::try_unwrap(ctx.node).ok().and_then(|mut node| node.parent.take());
        }
    }
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
            None => never().clone(),
        }
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
                let now = Instant::now();
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
/// closes.
fn never() -> &'static Receiver<()> {
    static NEVER: OnceLock<(Sender<()>, Receiver<()>)> = OnceLock::new();
    &NEVER.get_or_init(|| crate::chan(0)).1
}

/// A cancelable child of `parent`, registered with `parent`'s nearest cancelable node.
fn cancelable_child(parent: &Context, kind: Kind, deadline: Option<Instant>) -> (Context, Arc<CancelCtx>) {
    let cc = CancelCtx::new(parent.node.cancel.as_ref().map_or_else(Weak::new, Arc::downgrade));
    if let Some(p) = &parent.node.cancel {
        p.adopt(&cc);
    }
    let node = Node { kind, parent: Some(parent.clone()), cancel: Some(cc.clone()), deadline };
    (Context { node: Arc::new(node) }, cc)
}

/// A cancelable child of `parent` and the function that cancels it (Go's
/// `context.WithCancel`).
///
/// The child is done when `cancel()` is called or when `parent` is done, whichever happens
/// first; if `parent` is already done, so is the child, with the parent's error. Call
/// `cancel()` when the work is finished, so the parent forgets the child.
///
/// ```
/// use goro::context::{self, Context, ContextError};
/// goro::run(async {
///     let (parent, cancel_parent) = context::with_cancel(&Context::background());
///     let (child, cancel_child) = context::with_cancel(&parent);
///     cancel_parent();
///     child.done().recv().await;
///     assert_eq!(child.err(), Some(ContextError::Canceled));
///     cancel_child(); // a no-op, as in Go's `defer cancel()`
/// });
/// ```
pub fn with_cancel(parent: &Context) -> (Context, CancelFunc) {
    let (ctx, cc) = cancelable_child(parent, Kind::WithCancel, parent.deadline());
    (ctx, Arc::new(move || cc.cancel(true, ContextError::Canceled, None)))
}

/// Like [`with_cancel`], with a cancel function that records why (Go's
/// `context.WithCancelCause`); read it back with [`cause`].
///
/// ```
/// use goro::context::{self, Context, ContextError};
/// use std::sync::Arc;
///
/// let (ctx, cancel) = context::with_cancel_cause(&Context::background());
/// let (child, _cancel_child) = context::with_cancel(&ctx);
/// cancel(Some(Arc::new(std::io::Error::other("quota exceeded"))));
/// assert_eq!(child.err(), Some(ContextError::Canceled));
/// assert_eq!(context::cause(&child).unwrap().to_string(), "quota exceeded");
/// ```
pub fn with_cancel_cause(parent: &Context) -> (Context, CancelCauseFunc) {
    let (ctx, cc) = cancelable_child(parent, Kind::WithCancel, parent.deadline());
    (ctx, Arc::new(move |cause| cc.cancel(true, ContextError::Canceled, cause)))
}

/// A child of `parent` that is cancelled with [`ContextError::DeadlineExceeded`] at `deadline`
/// (Go's `context.WithDeadline`), or earlier by `cancel()` or its parent.
///
/// If `parent`'s deadline is earlier, this is [`with_cancel`]: the child keeps the parent's
/// deadline. A deadline already passed gives a child born done with `DeadlineExceeded`.
/// Call `cancel()` when the work finishes early: it stops the timer and frees the child.
///
/// # Panics
/// If `deadline` is still ahead and this is called outside a goro runtime (the deadline needs
/// a runtime timer).
///
/// ```
/// use goro::context::{self, Context, ContextError};
/// use std::time::{Duration, Instant};
/// goro::run(async {
///     let start = Instant::now();
///     let (ctx, cancel) = context::with_deadline(&Context::background(), start + Duration::from_millis(5));
///     ctx.done().recv().await;
///     assert!(start.elapsed() >= Duration::from_millis(5));
///     assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
///     cancel();
/// });
/// ```
pub fn with_deadline(parent: &Context, deadline: Instant) -> (Context, CancelFunc) {
    deadline_child(parent, deadline, None)
}

/// Like [`with_deadline`], and when the deadline passes, [`cause`] returns `cause` (Go's
/// `context.WithDeadlineCause`); an explicit `cancel()` still records
/// [`ContextError::Canceled`].
///
/// # Panics
/// As [`with_deadline`].
///
/// ```
/// use goro::context::{self, Context};
/// use std::sync::Arc;
/// use std::time::Instant;
///
/// let cause = Arc::new(std::io::Error::other("the batch took too long"));
/// let (ctx, _cancel) = context::with_deadline_cause(&Context::background(), Instant::now(), cause);
/// assert!(ctx.is_done());
/// assert_eq!(context::cause(&ctx).unwrap().to_string(), "the batch took too long");
/// ```
pub fn with_deadline_cause(parent: &Context, deadline: Instant, cause: Cause) -> (Context, CancelFunc) {
    deadline_child(parent, deadline, Some(cause))
}

/// [`with_deadline`]`(parent, Instant::now() + timeout)` (Go's `context.WithTimeout`).
///
/// # Panics
/// If `timeout` is not zero and this is called outside a goro runtime.
///
/// ```
/// use goro::context::{self, Context, ContextError};
/// use std::time::Duration;
/// goro::run(async {
///     let (ctx, cancel) = context::with_timeout(&Context::background(), Duration::from_millis(5));
///     let outcome = goro::select! {
///         recv(goro::time::after(Duration::from_secs(60))) -> _ => "slow work finished",
///         recv(ctx.done()) -> _ => "gave up",
///     };
///     assert_eq!(outcome, "gave up");
///     assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
///     cancel();
/// });
/// ```
pub fn with_timeout(parent: &Context, timeout: Duration) -> (Context, CancelFunc) {
    timeout_child(parent, timeout, None)
}

/// [`with_deadline_cause`]`(parent, Instant::now() + timeout, cause)` (Go's
/// `context.WithTimeoutCause`).
///
/// # Panics
/// As [`with_timeout`].
///
/// ```
/// use goro::context::{self, Context};
/// use std::{sync::Arc, time::Duration};
/// goro::run(async {
///     let cause = Arc::new(std::io::Error::other("backend slow"));
///     let (ctx, cancel) = context::with_timeout_cause(&Context::background(), Duration::from_millis(1), cause);
///     ctx.done().recv().await;
///     assert_eq!(context::cause(&ctx).unwrap().to_string(), "backend slow");
///     cancel();
/// });
/// ```
pub fn with_timeout_cause(parent: &Context, timeout: Duration, cause: Cause) -> (Context, CancelFunc) {
    timeout_child(parent, timeout, Some(cause))
}

fn timeout_child(parent: &Context, timeout: Duration, cause: Option<Cause>) -> (Context, CancelFunc) {
    match Instant::now().checked_add(timeout) {
        Some(deadline) => deadline_child(parent, deadline, cause),
        None => with_cancel(parent), // beyond what an Instant can hold: never
    }
}

fn deadline_child(parent: &Context, deadline: Instant, cause: Option<Cause>) -> (Context, CancelFunc) {
    if parent.deadline().is_some_and(|cur| cur < deadline) {
        return with_cancel(parent); // the parent's deadline comes first: no timer of our own
    }
    let (ctx, cc) = cancelable_child(parent, Kind::WithDeadline(deadline), Some(deadline));
    let cancel: CancelFunc = {
        let cc = cc.clone();
        Arc::new(move || cc.cancel(true, ContextError::Canceled, None))
    };
    let now = Instant::now();
    if deadline <= now {
        cc.cancel(true, ContextError::DeadlineExceeded, cause);
        return (ctx, cancel);
    }
    if cc.err().is_some() {
        return (ctx, cancel); // born cancelled under a cancelled parent: no timer needed
    }
    let link = Arc::new(Mutex::new(Some(cc.clone())));
    let timer = {
        let link = link.clone();
        crate::time::after_func(deadline - now, move || {
            let node = lock(&link).take();
            if let Some(node) = node {
                // `link` is emptied by the first firing: this runs once.
                node.cancel(true, ContextError::DeadlineExceeded, cause.clone());
            }
        })
    };
    let timer = DeadlineTimer { timer, link };
    let mut st = lock(&cc.state);
    if cc.err().is_none() {
        st.timer = Some(timer);
    } else {
        drop(st); // cancelled meanwhile (its parent, from another thread)
        timer.stop();
    }
    (ctx, cancel)
}

/// A child of `parent` that carries `val` under `key` (Go's `context.WithValue`); it is done
/// when `parent` is.
///
/// `key` may be of any type that is `PartialEq`; [`Context::value`] matches on the key's type
/// and then `==`. Use a private key type (a unit struct) so nobody else's key can collide with
/// yours; see the [module docs](crate::context#values-and-their-keys). Values are for request-scoped
/// data that crosses API boundaries, not for optional parameters (Go's advice holds).
///
/// ```
/// use goro::context::{self, Context};
///
/// #[derive(PartialEq)]
/// struct Key(u8);
///
/// let a = context::with_value(&Context::background(), Key(1), "one");
/// let b = context::with_value(&a, Key(2), "two");
/// let c = context::with_value(&b, Key(1), "uno"); // shadows Key(1) below it
/// assert_eq!(c.value::<&str>(&Key(1)), Some(&"uno"));
/// assert_eq!(c.value::<&str>(&Key(2)), Some(&"two"));
/// assert_eq!(a.value::<&str>(&Key(2)), None);
/// ```
pub fn with_value<K, V>(parent: &Context, key: K, val: V) -> Context
where
    K: Any + PartialEq + Send + Sync,
    V: Any + Send + Sync,
{
    let kind = Kind::WithValue {
        key: Box::new(key),
        key_type: std::any::type_name::<K>(),
        val: Box::new(val),
        val_type: std::any::type_name::<V>(),
    };
    let node =
        Node { kind, parent: Some(parent.clone()), cancel: parent.node.cancel.clone(), deadline: parent.deadline() };
    Context { node: Arc::new(node) }
}

/// A child of `parent` that keeps its values but is never cancelled with it (Go 1.21's
/// `context.WithoutCancel`): no deadline, `err()` always `None`, `done()` never closes. Its own
/// cancelable children start a new tree.
///
/// For work that must outlive the request that started it (an audit write, a cache fill),
/// still carrying the request's values.
///
/// ```
/// use goro::context::{self, Context};
///
/// #[derive(PartialEq)]
/// struct TraceId;
///
/// let (req, cancel) = context::with_cancel(&context::with_value(&Context::background(), TraceId, 42u64));
/// let background_job = context::without_cancel(&req);
/// cancel();
/// assert!(req.is_done());
/// assert!(!background_job.is_done());
/// assert_eq!(background_job.value::<u64>(&TraceId), Some(&42));
/// ```
pub fn without_cancel(parent: &Context) -> Context {
    let node = Node { kind: Kind::WithoutCancel, parent: Some(parent.clone()), cancel: None, deadline: None };
    Context { node: Arc::new(node) }
}

/// Why `ctx` is done (Go's `context.Cause`): `None` while it is not; the cause given to a
/// [`CancelCauseFunc`] or a `_cause` deadline, inherited by the whole subtree; else the
/// [`ContextError`] itself, as an error.
///
/// ```
/// use goro::context::{self, Context, ContextError};
/// let (ctx, cancel) = context::with_cancel(&Context::background());
/// assert!(context::cause(&ctx).is_none());
/// cancel();
/// let cause = context::cause(&ctx).unwrap();
/// assert_eq!(cause.downcast_ref::<ContextError>(), Some(&ContextError::Canceled));
/// ```
pub fn cause(ctx: &Context) -> Option<Cause> {
    let cc = ctx.node.cancel.as_ref()?;
    cc.err()?;
    lock(&cc.state).cause.clone()
}
