//! A model G's result, behind the same [`JoinHandle`](crate::JoinHandle) type as a runtime G's.

use super::GSlot;
use crate::g::{JoinError, ModelJoin};
use crate::loom::Mutex;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The result of a model G and the waker of whoever awaits it. The lock is a loom mutex: taking
/// it orders the G's completion before the read of its output, as the G's state word does in a
/// runtime.
pub(crate) struct Join<T> {
    g: Arc<GSlot>,
    state: Mutex<State<T>>,
}

struct State<T> {
    output: Option<Result<T, JoinError>>,
    finished: bool,
    read: bool,
    waker: Option<Waker>,
}

impl<T> Join<T> {
    pub(crate) fn new(g: Arc<GSlot>) -> Join<T> {
        Join { g, state: Mutex::new(State { output: None, finished: false, read: false, waker: None }) }
    }

    /// The G's thread: its result.
    pub(crate) fn complete(&self, out: Result<T, JoinError>) {
        let waker = {
            let mut st = self.state.lock();
            st.output = Some(out);
            st.finished = true;
            st.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T: Send> ModelJoin<T> for Join<T> {
    fn id(&self) -> u64 {
        self.g.id()
    }

    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        let mut st = self.state.lock();
        if let Some(out) = st.output.take() {
            st.read = true;
            return Poll::Ready(out);
        }
        assert!(!st.read, "goro: JoinHandle polled after it returned Ready");
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn is_finished(&self) -> bool {
        self.state.lock().finished
    }

    fn abort(&self) {
        if !self.is_finished() {
            self.g.abort();
        }
    }
}
