//! The slots of [`Group::set_limit`](super::Group::set_limit), handed out in the order of the
//! calls that ask for them.
//!
//! Go's `Go` sends on the group's semaphore channel before it returns: the caller takes its
//! slot, or waits for it, right there, so `Go(A)` then `TryGo(B)` with one slot always gives the
//! slot to A. goro's `go` never blocks its caller, so it cannot wait there; instead it takes its
//! slot or its place in line before it returns ([`Limit::take_or_queue`]), and its G waits for
//! the slot ([`Queued`]). [`Limit::try_take`] takes a slot only if one is free and nobody is in
//! line (x/sync's `TryAcquire` rule), and a freed slot goes to the front of the line.
//!
//! One `std` mutex guards the free count and the line; each ticket has its own small state,
//! locked after the line's lock where both are taken. Wakers are called after both are
//! released.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// The slots of a group with a limit.
pub(super) struct Limit {
    line: StdMutex<Line>,
}

struct Line {
    free: usize,
    queue: VecDeque<Arc<Ticket>>,
}

/// A place in line.
struct Ticket {
    state: StdMutex<TicketState>,
}

enum TicketState {
    /// In line; the waker of the G waiting for the slot, once it has polled.
    Waiting(Option<Waker>),
    /// Handed a slot, not yet taken by its G.
    Granted,
    /// Its G is gone (dropped before its turn): skipped when its turn comes.
    Gone,
}

/// A slot, given back to the line when dropped.
pub(super) struct Slot(Arc<Limit>);

impl Limit {
    pub(super) fn new(n: usize) -> Limit {
        Limit { line: StdMutex::new(Line { free: n, queue: VecDeque::new() }) }
    }

    fn lock(&self) -> MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot if one is free and nobody waits for one (Go's `TryGo`).
    pub(super) fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let mut line = self.lock();
        if line.free == 0 || !line.queue.is_empty() {
            return None;
        }
        line.free -= 1;
        Some(Slot(self.clone()))
    }

    /// A slot now, or a place in line now (Go's `Go`, which waits for the slot in the call).
    pub(super) fn take_or_queue(self: &Arc<Self>) -> Result<Slot, Queued> {
        let mut line = self.lock();
        if line.free > 0 && line.queue.is_empty() {
            line.free -= 1;
            return Ok(Slot(self.clone()));
        }
        let ticket = Arc::new(Ticket { state: StdMutex::new(TicketState::Waiting(None)) });
        line.queue.push_back(ticket.clone());
        Err(Queued { limit: self.clone(), ticket, taken: false })
    }

    /// A slot came back: to the first ticket still waiting, else to the free count.
    fn give_back(&self) {
        let waker = {
            let mut line = self.lock();
            loop {
                let Some(ticket) = line.queue.pop_front() else {
                    line.free += 1;
                    break None;
                };
                let mut state = ticket.lock();
                match std::mem::replace(&mut *state, TicketState::Granted) {
                    TicketState::Waiting(waker) => break waker,
                    TicketState::Gone => *state = TicketState::Gone,
                    TicketState::Granted => unreachable!("errgroup: a ticket granted twice"),
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl Ticket {
    fn lock(&self) -> MutexGuard<'_, TicketState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

/// A place in line; completes with the slot once it is this ticket's turn.
///
/// Cancel-safe: dropped before that, it leaves the line; dropped after its turn came, it passes
/// the slot on.
pub(super) struct Queued {
    limit: Arc<Limit>,
    ticket: Arc<Ticket>,
    /// Whether the slot was handed to the caller (nothing to undo on drop).
    taken: bool,
}

impl Future for Queued {
    type Output = Slot;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Slot> {
        let mut state = self.ticket.lock();
        match &mut *state {
            TicketState::Granted => {
                drop(state);
                self.taken = true;
                Poll::Ready(Slot(self.limit.clone()))
            }
            TicketState::Waiting(waker) => {
                match waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                drop(state);
                crate::runtime::set_wait_reason(crate::runtime::WaitReason::SemAcquire);
                Poll::Pending
            }
            TicketState::Gone => unreachable!("errgroup: a ticket polled after it was dropped"),
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        // Under the line's lock, so that `give_back` cannot grant the ticket meanwhile. The old
        // state (a waker) is dropped after both locks.
        let line = self.limit.lock();
        let old = std::mem::replace(&mut *self.ticket.lock(), TicketState::Gone);
        drop(line);
        if matches!(old, TicketState::Granted) {
            // Our turn came and nobody took the slot: the next one in line gets it.
            self.limit.give_back();
        }
    }
}
