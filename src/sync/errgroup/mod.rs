//! Go's `golang.org/x/sync/errgroup`: a [`Group`] of Gs working on subtasks of one task, with
//! the first error returned to the waiter and, with [`Group::with_context`], cancelling the
//! others.
//!
//! ```
//! use goro::context::Context;
//! use goro::sync::errgroup::Group;
//!
//! async fn fetch(ctx: Context, url: &'static str) -> Result<usize, String> {
//!     // A slow fetch that gives up when the group's context is cancelled.
//!     if url.ends_with("/bad") {
//!         return Err(format!("fetch {url}: 404"));
//!     }
//!     ctx.done().recv().await; // waits for the cancel
//!     Err(format!("fetch {url}: cancelled"))
//! }
//!
//! goro::run(async {
//!     // g, ctx := errgroup.WithContext(ctx)
//!     let (g, ctx) = Group::with_context(&Context::background());
//!     for url in ["http://a/", "http://b/bad", "http://c/"] {
//!         let ctx = ctx.clone();
//!         g.go(async move { fetch(ctx, url).await.map(drop) });
//!     }
//!     // The first error wins; it also cancelled the context, so the other two returned.
//!     assert_eq!(g.wait().await, Err("fetch http://b/bad: 404".to_string()));
//!     assert!(ctx.err().is_some());
//! });
//! ```

mod limit;

use crate::context::{self, CancelCauseFunc, Cause, Context};
use crate::sync::WaitGroup;
use limit::{Limit, Slot};
use std::any::Any;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{ready, Context as TaskContext, Poll};

/// A collection of Gs working on subtasks of a common task (x/sync's `errgroup.Group`).
///
/// [`go`](Group::go) runs a fallible future in a new G; [`wait`](Group::wait) waits for all of
/// them and returns the first error. A group made by [`with_context`](Group::with_context) also
/// cancels its context at the first error (and when `wait` returns), so the other subtasks can
/// stop early. [`set_limit`](Group::set_limit) bounds how many run at once.
///
/// `Group` is a handle: clones share one group, so a subtask may add more subtasks (a crawler
/// adding the links it found). `Group::new()` (also `Default`) is Go's zero `Group`: no limit,
/// and nothing to cancel.
///
/// A subtask that panics counts as done and as a failure: it cancels the context, and `wait`
/// panics with its payload once every subtask has finished (as newer x/sync does; a panic is
/// never turned into an `E`).
///
/// # The error type
///
/// As Go's `Wait`, every [`wait`](Group::wait) returns the group's first error, for the group's
/// whole life, so `wait` needs `E: Clone`; a group [`with_context`](Group::with_context) also
/// cancels its context with that error as the cause (Go's `context.Cause`), so `E` must become
/// a [`Cause`] too (`E: Into<Box<dyn Error + Send + Sync>>`: any error type, `String`, `&str`).
/// A Go `error` is a shared, immutable value, which any goroutine may hold: its Rust
/// counterparts are `Clone + Send + Sync` types (your own error types, `String`, `&'static
/// str`), or [`Cause`] (`Arc<dyn Error + Send + Sync>`) for errors that are not `Clone`, such as
/// `std::io::Error` (`Arc::new(e)`).
pub struct Group<E> {
    inner: Arc<Inner<E>>,
}

struct Inner<E> {
    wg: WaitGroup,
    /// Subtasks started and not finished (the waiting ones included): `set_limit`'s check.
    active: AtomicUsize,
    /// The first error and the first panic.
    failure: StdMutex<Failure<E>>,
    /// With `with_context`: cancels the group's context.
    cancel: Option<Cancel<E>>,
    /// With `set_limit(n)`, `n >= 0`: the slots.
    limit: StdMutex<Option<Arc<Limit>>>,
}

/// The group's context's cancel function, and how an error of the group becomes its cause.
struct Cancel<E> {
    cancel: CancelCauseFunc,
    cause: fn(&E) -> Cause,
}

struct Failure<E> {
    /// The first error, kept for every `wait` (Go's `errOnce`); in an `Arc` so that it is
    /// cloned (user code) outside the lock.
    err: Option<Arc<E>>,
    /// The first panic's payload, until a `wait` resumes it.
    panic: Option<Box<dyn Any + Send>>,
    /// Whether a subtask panicked (a `wait` after the one that resumed the payload panics too).
    panicked: bool,
}

impl<E> Group<E> {
    /// A group with no limit and no context (Go's zero `Group`).
    ///
    /// ```
    /// goro::run(async {
    ///     let g = goro::sync::errgroup::Group::<String>::new();
    ///     g.go(async { Ok(()) });
    ///     assert_eq!(g.wait().await, Ok(()));
    /// });
    /// ```
    pub fn new() -> Group<E> {
        Group::with_cancel(None)
    }

    fn with_cancel(cancel: Option<Cancel<E>>) -> Group<E> {
        Group {
            inner: Arc::new(Inner {
                wg: WaitGroup::new(),
                active: AtomicUsize::new(0),
                failure: StdMutex::new(Failure { err: None, panic: None, panicked: false }),
                cancel,
                limit: StdMutex::new(None),
            }),
        }
    }

    /// Limits the number of subtasks running at once to `n` (Go's `SetLimit`); a negative `n`
    /// removes the limit. With a limit of 0, no subtask can start: [`try_go`](Group::try_go)
    /// returns `false` and a subtask of [`go`](Group::go) waits until the limit is changed (as
    /// in Go, where `Go` then blocks forever).
    ///
    /// # Panics
    /// If subtasks of the group are still running or waiting to run (Go's `errgroup: modify
    /// limit while 2 goroutines in the group are still active`).
    ///
    /// ```
    /// goro::run(async {
    ///     let g = goro::sync::errgroup::Group::<()>::new();
    ///     g.set_limit(1);
    ///     let (tx, rx) = goro::chan::<()>(0);
    ///     assert!(g.try_go(async move { rx.recv().await; Ok(()) }));
    ///     assert!(!g.try_go(async { Ok(()) }), "the one slot is taken");
    ///     drop(tx); // lets the first one finish
    ///     g.wait().await.unwrap();
    ///     assert!(g.try_go(async { Ok(()) }));
    ///     g.wait().await.unwrap();
    /// });
    /// ```
    pub fn set_limit(&self, n: isize) {
        let active = self.inner.active.load(Acquire);
        if active != 0 {
            panic!("errgroup: modify limit while {active} goroutines in the group are still active");
        }
        *self.inner.limit.lock().unwrap_or_else(|e| e.into_inner()) =
            usize::try_from(n).ok().map(|n| Arc::new(Limit::new(n)));
    }

    fn limit(&self) -> Option<Arc<Limit>> {
        self.inner.limit.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl<E> Group<E>
where
    E: Clone + Into<Box<dyn Error + Send + Sync>>,
{
    /// A group and a context derived from `parent` (Go's `errgroup.WithContext`). The context is
    /// cancelled the first time a subtask fails (returns `Err` or panics), or when
    /// [`wait`](Group::wait) returns, whichever comes first. Its error is then
    /// [`ContextError::Canceled`](crate::context::ContextError::Canceled), and its
    /// [`cause`](crate::context::cause) the group's first error (as a [`Cause`]: an error type
    /// `E` itself, which `downcast_ref::<E>()` gets back), or `Canceled` if there was none.
    ///
    /// ```
    /// use goro::context::{self, Context};
    /// use goro::sync::errgroup::Group;
    /// goro::run(async {
    ///     let (g, ctx) = Group::<&str>::with_context(&Context::background());
    ///     g.go(async { Err("boom") });
    ///     ctx.done().recv().await; // cancelled by the error
    ///     assert_eq!(g.wait().await, Err("boom"));
    ///     assert_eq!(context::cause(&ctx).unwrap().to_string(), "boom");
    /// });
    /// ```
    pub fn with_context(parent: &Context) -> (Group<E>, Context) {
        let (ctx, cancel) = context::with_cancel_cause(parent);
        let cause = |e: &E| Cause::from(e.clone().into());
        (Group::with_cancel(Some(Cancel { cancel, cause })), ctx)
    }
}

impl<E: Clone> Group<E> {
    /// Waits for every subtask of the group (those started while it waits too), then returns the
    /// first error, if any (Go's `Wait`), and cancels the group's context.
    ///
    /// As in Go, the first error is the group's for its whole life: every `wait` returns it
    /// (after more subtasks, say), so a group whose subtask failed never waits to `Ok`.
    ///
    /// # Panics
    /// With the payload of the first subtask that panicked, once every subtask has finished; a
    /// later `wait` (the payload is gone) with a message saying so.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future gives up waiting and changes nothing.
    ///
    /// ```
    /// goro::run(async {
    ///     let g = goro::sync::errgroup::Group::new();
    ///     for i in 0..3 {
    ///         g.go(async move { if i == 1 { Err(i) } else { Ok(()) } });
    ///     }
    ///     assert_eq!(g.wait().await, Err(1));
    /// });
    /// ```
    pub fn wait(&self) -> Wait<'_, E> {
        Wait { group: self, wait: self.inner.wg.wait() }
    }

    /// [`wait`](Group::wait) for plain threads: parks the thread instead of a G.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().build().unwrap();
    /// let g = goro::sync::errgroup::Group::<()>::new();
    /// rt.block_on(async { g.go(async { Ok(()) }) });
    /// assert_eq!(g.wait_blocking(), Ok(()));
    /// ```
    #[track_caller]
    pub fn wait_blocking(&self) -> Result<(), E> {
        goro_runtime::__private::block_on_thread_for("`group.wait().await`", self.wait())
    }
}

impl<E: Send + Sync + 'static> Group<E> {
    /// Runs `fut` in a new G (Go's `Go`). The first subtask to return `Err` (or panic) decides
    /// what [`wait`](Group::wait) returns and cancels the group's context.
    ///
    /// With a [limit](Group::set_limit), Go's `Go` blocks the caller until a slot is free;
    /// `go` never blocks: it takes a free slot, or its place in line for one, before it returns
    /// (so slots go to subtasks in the order of the `go` and `try_go` calls, as in Go: after
    /// `go(a)` takes the last slot, `try_go(b)` fails), and the G waits for its slot before it
    /// polls `fut`. The caller therefore gets no back pressure: a loop over a million items
    /// starts a million (small, parked) Gs. For Go's back pressure, use
    /// [`go_wait`](Group::go_wait), or [`try_go`](Group::try_go).
    ///
    /// # Panics
    /// Outside a goro runtime (as [`goro::go`](fn@crate::go)).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// goro::run(async {
    ///     let g = goro::sync::errgroup::Group::<()>::new();
    ///     let sum = Arc::new(AtomicUsize::new(0));
    ///     for i in 1..=4 {
    ///         let sum = sum.clone();
    ///         g.go(async move {
    ///             sum.fetch_add(i, Ordering::Relaxed);
    ///             Ok(())
    ///         });
    ///     }
    ///     g.wait().await.unwrap();
    ///     assert_eq!(sum.load(Ordering::Relaxed), 10);
    /// });
    /// ```
    #[track_caller]
    pub fn go<F>(&self, fut: F)
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
    {
        // The slot, or the place in line, is taken now: the order of the calls.
        let slot = self.limit().map(|limit| limit.take_or_queue());
        self.start(async move {
            let _slot = match slot {
                Some(Ok(slot)) => Some(slot),
                Some(Err(queued)) => Some(queued.await),
                None => None,
            };
            fut.await
        });
    }

    /// Waits until the [limit](Group::set_limit) lets a new subtask run, then runs `fut` in a
    /// new G: Go's `Go`, whose caller blocks while the group is full (back pressure for a
    /// producer loop). Without a limit it starts `fut` at once.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropped before it is ready, it started nothing and took no slot (`fut` is
    /// dropped unstarted).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// goro::run(async {
    ///     let g = goro::sync::errgroup::Group::<()>::new();
    ///     g.set_limit(2);
    ///     let running = Arc::new(AtomicUsize::new(0));
    ///     for _ in 0..10 {
    ///         let running = running.clone();
    ///         g.go_wait(async move {
    ///             assert!(running.fetch_add(1, Ordering::SeqCst) < 2);
    ///             goro::runtime::yield_now().await;
    ///             running.fetch_sub(1, Ordering::SeqCst);
    ///             Ok(())
    ///         })
    ///         .await;
    ///     }
    ///     g.wait().await.unwrap();
    /// });
    /// ```
    pub async fn go_wait<F>(&self, fut: F)
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
    {
        let slot = match self.limit().map(|limit| limit.take_or_queue()) {
            Some(Ok(slot)) => Some(slot),
            Some(Err(queued)) => Some(queued.await),
            None => None,
        };
        // (Its spawn location, in dumps, is this line: a poll cannot name its caller.)
        self.start(with_slot(slot, fut));
    }

    /// Runs `fut` in a new G only if the [limit](Group::set_limit) lets a new subtask run now
    /// (Go's `TryGo`); returns whether it did.
    ///
    /// # Panics
    /// Outside a goro runtime (as [`goro::go`](fn@crate::go)), when it would start the G.
    ///
    /// ```
    /// goro::run(async {
    ///     let g = goro::sync::errgroup::Group::<()>::new();
    ///     g.set_limit(0);
    ///     assert!(!g.try_go(async { Ok(()) }));
    ///     g.set_limit(-1); // no limit
    ///     assert!(g.try_go(async { Ok(()) }));
    ///     g.wait().await.unwrap();
    /// });
    /// ```
    #[track_caller]
    pub fn try_go<F>(&self, fut: F) -> bool
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
    {
        let slot = match self.limit() {
            Some(limit) => match limit.try_take() {
                Some(slot) => Some(slot),
                None => return false,
            },
            None => None,
        };
        self.start(with_slot(slot, fut));
        true
    }

    /// Spawns the subtask; its spawn location is the caller's (`#[track_caller]` all the way).
    #[track_caller]
    fn start(&self, fut: impl Future<Output = Result<(), E>> + Send + 'static) {
        let inner = self.inner.clone();
        inner.active.fetch_add(1, AcqRel);
        inner.wg.add(1);
        // Done however the G ends: returned, panicked, or dropped by a runtime shutdown, even
        // before its first poll (the guard is made here, not in the G's first poll).
        let done = Done(inner);
        let task = async move {
            let done = done;
            let outcome = CatchUnwind(fut).await;
            done.0.fail(outcome);
        };
        drop(crate::go(task));
    }
}

/// `fut`, holding `slot` (if any) until it ends.
async fn with_slot<E>(slot: Option<Slot>, fut: impl Future<Output = Result<(), E>>) -> Result<(), E> {
    let _slot = slot;
    fut.await
}

impl<E> Inner<E> {
    /// Records a subtask's failure: the first error and the first panic are kept; the first
    /// failure of either kind cancels the context.
    fn fail(&self, outcome: Result<Result<(), E>, Box<dyn Any + Send>>) {
        // Nothing of the user's (a clone, a conversion, a drop) runs under the lock: the error
        // goes in as an `Arc`, and what is not kept is dropped after.
        let failure = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(e)) => Ok(Arc::new(e)),
            Err(p) => Err(p),
        };
        let (first, unkept) = {
            let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            let first = f.err.is_none() && !f.panicked;
            let unkept = match failure {
                Ok(e) if f.err.is_none() => {
                    f.err = Some(e.clone());
                    Some(Ok(e))
                }
                Ok(e) => Some(Ok(e)),
                Err(p) if !f.panicked => {
                    f.panicked = true;
                    f.panic = Some(p);
                    None
                }
                Err(p) => Some(Err(p)),
            };
            (first, unkept)
        };
        // The first failure cancels the context, with the error as its cause (a panic's cause
        // is `Canceled`). Outside the lock: cancelling runs the context's machinery.
        if let (true, Some(cancel)) = (first, &self.cancel) {
            let cause = match &unkept {
                Some(Ok(e)) => Some((cancel.cause)(e)),
                _ => None,
            };
            (cancel.cancel)(cause);
        }
        drop(unkept);
    }
}

/// Marks a subtask finished when dropped.
struct Done<E>(Arc<Inner<E>>);

impl<E> Drop for Done<E> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, AcqRel);
        self.0.wg.done();
    }
}

/// Polls a future, catching a panic of its poll.
struct CatchUnwind<F>(F);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        // SAFETY: a structural projection of the only field, never moved out.
        let fut = unsafe { self.map_unchecked_mut(|s| &mut s.0) };
        match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(p) => Poll::Ready(Err(p)),
        }
    }
}

/// The future of [`Group::wait`]: the first error, once every subtask has finished.
///
/// Cancel-safe: dropping it gives up waiting and changes nothing.
#[must_use = "futures do nothing unless you `.await` them"]
pub struct Wait<'a, E> {
    group: &'a Group<E>,
    wait: goro_sync::futures::Wait<'a>,
}

impl<E: Clone> Future for Wait<'_, E> {
    type Output = Result<(), E>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<(), E>> {
        // SAFETY: `wait` is pinned inside this pinned future and never moved out.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        ready!(unsafe { Pin::new_unchecked(&mut this.wait) }.poll(cx));
        let inner = &this.group.inner;
        // Go's `g.cancel(g.err)`: the first failure cancelled with its cause already, so this
        // one only counts when there was none (a cause of `Canceled`).
        if let Some(cancel) = &inner.cancel {
            (cancel.cancel)(None);
        }
        let (err, panic, panicked) = {
            let mut f = inner.failure.lock().unwrap_or_else(|e| e.into_inner());
            (f.err.clone(), f.panic.take(), f.panicked)
        };
        let err = err.map(|e| E::clone(&e));
        if let Some(p) = panic {
            resume_unwind(p);
        }
        if panicked {
            panic!("errgroup: a subtask panicked (its payload went to an earlier wait)");
        }
        Poll::Ready(err.map_or(Ok(()), Err))
    }
}

impl<E> Clone for Group<E> {
    fn clone(&self) -> Group<E> {
        Group { inner: self.inner.clone() }
    }
}

impl<E> Default for Group<E> {
    fn default() -> Group<E> {
        Group::new()
    }
}

impl<E> fmt::Debug for Group<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group")
            .field("active", &self.inner.active.load(Relaxed))
            .field("with_context", &self.inner.cancel.is_some())
            .finish_non_exhaustive()
    }
}

impl<E> fmt::Debug for Wait<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait").finish_non_exhaustive()
    }
}
