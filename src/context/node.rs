//! The context tree's nodes: what a [`Context`] points at, the state of a cancelable node
//! (Go's `cancelCtx` and `timerCtx`), and how a node is created under its parent. See the
//! [module docs](super) for the invariants.

use super::{Cause, Context, ContextError};
use crate::chan::{Receiver, Sender};
use crate::time::Timer;
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
#[cfg(not(loom))]
use std::sync::PoisonError;
use std::sync::{Arc, Weak};
use std::time::Instant;

// The tree's locks: std's, and loom's under `--cfg loom`, where `goro::model` may switch Gs
// while one is held (cancelling closes `done`, a channel operation), which a std lock would
// turn into a hang of the model's one OS thread.
#[cfg(loom)]
pub(super) use goro_runtime::__private::shim::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(super) use std::sync::{Mutex, MutexGuard};

pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) parent: Option<Context>,
    /// The nearest cancelable node, this one or an ancestor; `None` under a root only.
    pub(super) cancel: Option<Arc<CancelCtx>>,
    /// This node's deadline: its own or its nearest ancestor's.
    pub(super) deadline: Option<Instant>,
}

pub(super) enum Kind {
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
pub(super) struct CancelCtx {
    /// The nearest cancelable ancestor, whose set of children holds this node until it is
    /// cancelled. Weak: the parent holds the child, and a strong link back would make every
    /// uncancelled pair a cycle that outlives all its handles. The parent stays alive while
    /// this node's `Context` does anyway (through `Node::parent`); when nothing can cancel the
    /// parent any more, there is nothing to leave.
    pub(super) parent: Weak<CancelCtx>,
    /// `0` while live, else a [`ContextError::code`]; written once, under `state`, before
    /// `done` closes, so the `Acquire` load in `err()` after seeing `done` closed sees it.
    pub(super) err: AtomicU8,
    pub(super) done: DoneChan,
    pub(super) state: Mutex<CancelState>,
}

#[derive(Default)]
pub(super) struct CancelState {
    /// Set with `err`.
    pub(super) cause: Option<Cause>,
    /// The cancelable nodes that have this one as nearest cancelable ancestor, keyed by address
    /// (an entry keeps its node alive, so the address is unique while the entry exists).
    pub(super) children: HashMap<usize, Arc<CancelCtx>>,
    /// The deadline's timer, until it fires or the node is cancelled.
    pub(super) timer: Option<DeadlineTimer>,
}

/// A deadline's `after_func` timer and the link through which it reaches its node.
///
/// The timer's function holds the node only through `link`, which the cancellation empties: a
/// stopped timer's function may linger in the runtime's timer heap for a while (stale entries
/// are swept in bulk), and it must not keep the node, its values and its subtree alive.
pub(super) struct DeadlineTimer {
    pub(super) timer: Timer,
    pub(super) link: Arc<Mutex<Option<Arc<CancelCtx>>>>,
}

impl DeadlineTimer {
    pub(super) fn stop(self) {
        self.timer.stop();
        let node = lock(&self.link).take();
        drop(node);
    }
}

impl Drop for DeadlineTimer {
    fn drop(&mut self) {
        // An `after_func` timer keeps running when its handle is dropped; a deadline whose node
        // is gone must not (a no-op after `stop`).
        self.timer.stop();
    }
}

/// The `done` channel of a cancelable node: unbuffered, never sent on, closed on cancel.
pub(super) struct DoneChan {
    /// Both are `Some` until `drop`.
    pub(super) tx: Option<Sender<()>>,
    pub(super) rx: Option<Receiver<()>>,
}

impl DoneChan {
    pub(super) fn new() -> DoneChan {
        let (tx, rx) = crate::chan(0);
        DoneChan { tx: Some(tx), rx: Some(rx) }
    }

    pub(super) fn receiver(&self) -> Receiver<()> {
        self.rx.as_ref().expect("the done channel lives as long as its node").clone()
    }

    pub(super) fn close(&self) {
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
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(not(loom))]
    return m.lock().unwrap_or_else(PoisonError::into_inner);
    #[cfg(loom)]
    return m.lock();
}

/// `&mut` access to a lock's data (no locking needed).
fn get_mut<T>(m: &mut Mutex<T>) -> &mut T {
    #[cfg(not(loom))]
    return m.get_mut().unwrap_or_else(PoisonError::into_inner);
    #[cfg(loom)]
    return m.get_mut();
}

impl CancelCtx {
    pub(super) fn new(parent: Weak<CancelCtx>) -> Arc<CancelCtx> {
        Arc::new(CancelCtx { parent, err: AtomicU8::new(0), done: DoneChan::new(), state: Mutex::default() })
    }

    pub(super) fn err(&self) -> Option<ContextError> {
        ContextError::from_code(self.err.load(Ordering::Acquire))
    }

    pub(super) fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// Go's `cancelCtx.cancel`: sets the error and cause, closes `done`, stops the timer,
    /// cancels the children (with this node's lock held, so that when this returns the whole
    /// subtree is cancelled), then leaves the parent's set if asked to.
    ///
    /// Locks are only ever nested parent-then-child, so the tree cannot deadlock.
    pub(super) fn cancel(self: &Arc<Self>, remove_from_parent: bool, err: ContextError, cause: Option<Cause>) {
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
    pub(super) fn adopt(&self, child: &Arc<CancelCtx>) {
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
        let st = get_mut(&mut self.state);
        let mut orphans: Vec<Arc<CancelCtx>> = std::mem::take(&mut st.children).into_values().collect();
        while let Some(child) = orphans.pop() {
            if let Ok(mut child) = Arc::try_unwrap(child) {
                let st = get_mut(&mut child.state);
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

/// A cancelable child of `parent`, registered with `parent`'s nearest cancelable node.
pub(super) fn cancelable_child(parent: &Context, kind: Kind, deadline: Option<Instant>) -> (Context, Arc<CancelCtx>) {
    let cc = CancelCtx::new(parent.node.cancel.as_ref().map_or_else(Weak::new, Arc::downgrade));
    if let Some(p) = &parent.node.cancel {
        p.adopt(&cc);
    }
    let node = Node { kind, parent: Some(parent.clone()), cancel: Some(cc.clone()), deadline };
    (Context { node: Arc::new(node) }, cc)
}
