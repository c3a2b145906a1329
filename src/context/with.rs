//! The constructors of the tree (Go's `context.With*` functions), re-exported from
//! [`goro::context`](super).

use super::node::{cancelable_child, lock, DeadlineTimer, Kind, Mutex, Node};
use super::{CancelCauseFunc, CancelFunc, Cause, Context, ContextError};
use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    match crate::time::now().checked_add(timeout) {
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
    let now = crate::time::now();
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
