//! `hchan`: the channel object shared by every `Sender` and `Receiver`.
//!
//! One lock guards a FIFO buffer of at most `cap` values, the queues of blocked receivers and
//! senders, and the closed flags. The operations below are Go's `chansend`, `chanrecv` and
//! `closechan` minus the blocking part, which the futures in [`ops`](crate::ops) add by
//! queueing a [`Sudog`].
//!
//! Invariants (under the lock):
//! - `recvq` non-empty implies the buffer is empty; `sendq` non-empty implies the buffer is full
//!   (Go's; a blocked op only exists when it could not complete).
//! - The buffer holds at most `cap` values, plus at most the values given back by receive
//!   futures that were dropped after a sender had handed them a value ([`Inner::give_back`]).
//! - Once `closed`, no sudog is queued on `sendq`; once `rx_gone`, none on either queue.
//! - Once `closed`, a sudog stays queued on `recvq` only while a value is in flight: one that
//!   left the channel for a receive future may still come back (the future is dropped and
//!   gives it back), so the channel is not yet "closed and drained" and its receivers wait for
//!   that value's fate. The receive that settles the last such value ([`Chan::claim`])
//!   releases them.
//!
//! A value is in flight from the moment a sender (or a give-back) hands it to a queued receiver
//! until that receive returns it to its user or gives it back. Two counts tell how many are:
//! [`Inner::handed`] counts the hand-overs, under the lock, with plain arithmetic (the sender
//! holds the lock anyway); [`Chan::returned`] counts the values that came out again, raised by
//! the receiver without the lock, and its low bit ([`RETURNED_CLOSED`]) mirrors `closed`. The
//! values in flight are `handed - returned`. A hand-over thus costs the sender no atomic
//! read-modify-write, and the receiver one.
//!
//! The race between `close` and the last claim is a pair of read-modify-writes on `returned`:
//! `close` sets the bit and then compares the counts, a claim raises the count and sees the
//! bit, and whichever comes second in the word's order sees both, so one of them (or both,
//! harmlessly) releases the waiting receivers. A holder of the lock always sees every
//! hand-over whose value a claim could have returned (hand-overs happen under the lock it
//! holds), so it may find `returned` stale only too low, never a claim of a hand-over it does
//! not see; and a claim it missed that came after the close takes the lock afterwards and
//! releases the receiver that parked meanwhile.

use crate::error::{TryRecvError, TrySendError};
use crate::loom::{AtomicUsize, Ordering::*, RawLock, UnsafeCell};
use crate::waitq::{Sudog, WaitQueue, CLOSED, DONE};
use std::collections::VecDeque;
use std::task::Waker;

/// The bit of [`Chan::returned`] that says the channel is closed; the bits above count.
pub(crate) const RETURNED_CLOSED: usize = 1;
/// One value in [`Inner::handed`] and [`Chan::returned`]: the counts step over the closed bit
/// and wrap together, so their difference stays exact past any number of values.
const ONE: usize = 2;

pub(crate) struct Chan<T> {
    /// Where the compiler puts it: after the state it guards (offset 128 of 136 for a
    /// `Chan<u64>`), so with the `Arc`'s counts the channel spans at least three cache lines.
    /// Packing the lock and every field an operation writes into one line
    /// (`repr(C, align(64))`) was no faster on W7 in alternated runs
    /// (benches/results/2026-12-07-66bff7a-chan-returned.md).
    lock: RawLock,
    inner: UnsafeCell<Inner<T>>,
    pub(crate) cap: usize,
    /// Live `Sender` handles; the last one to go closes the channel.
    pub(crate) senders: AtomicUsize,
    /// Live `Receiver` handles; when the last one goes, sends fail and return their value.
    pub(crate) receivers: AtomicUsize,
    /// Values handed to receive futures that came out again (returned to the user, or given
    /// back into the buffer), in steps of two, and [`RETURNED_CLOSED`] once closed (module
    /// docs).
    pub(crate) returned: AtomicUsize,
    /// The synctest bubble the channel was made in (0: none), whose Gs alone may use it.
    pub(crate) bubble: u64,
    /// Under loom the lock order must not depend on where the allocator put the channels (a
    /// model has to replay identically), so channels are ordered by creation instead.
    #[cfg(loom)]
    id: usize,
}

// SAFETY: `inner` is only touched under `lock`; values of `T` move between threads.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

pub(crate) struct Inner<T> {
    buf: VecDeque<T>,
    cap: usize,
    /// Values handed to receive futures, in steps of two (module docs).
    handed: usize,
    pub(crate) closed: bool,
    pub(crate) rx_gone: bool,
    pub(crate) recvq: WaitQueue<T>,
    pub(crate) sendq: WaitQueue<T>,
}

/// The channel locked; unlocks on drop.
pub(crate) struct Guard<'a, T> {
    chan: &'a Chan<T>,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Chan<T> {
        Chan {
            lock: RawLock::new(),
            inner: UnsafeCell::new(Inner {
                // The ring never grows past `cap` (Go allocates `cap` slots up front).
                buf: VecDeque::with_capacity(cap),
                cap,
                handed: 0,
                closed: false,
                rx_gone: false,
                recvq: WaitQueue::new(),
                sendq: WaitQueue::new(),
            }),
            cap,
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            returned: AtomicUsize::new(0),
            bubble: goro_runtime::__private::synctest::tag(),
            #[cfg(loom)]
            id: {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    /// Go's rule for a channel made in a synctest bubble: only the bubble's Gs may send, receive
    /// or close. One branch on a field next to the lock outside bubbles.
    #[inline]
    #[track_caller]
    pub(crate) fn check_bubble(&self) {
        if self.bubble != 0 {
            goro_runtime::__private::synctest::check_tag(self.bubble, "a channel");
        }
    }

    /// Records why the G waits on this channel (see `goro_runtime::__private::synctest::set_wait_reason_of`).
    #[inline]
    pub(crate) fn park_reason(&self, reason: goro_runtime::WaitReason) {
        goro_runtime::__private::synctest::set_wait_reason_of(reason, self.bubble);
    }

    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_, T> {
        self.lock.lock();
        Guard { chan: self }
    }

    /// Locks without a guard (select holds several channels' locks at once).
    pub(crate) fn raw_lock(&self) {
        self.lock.lock();
    }

    /// # Safety
    /// The calling thread holds this channel's lock (from [`raw_lock`](Self::raw_lock)).
    pub(crate) unsafe fn raw_unlock(&self) {
        // SAFETY: caller contract.
        unsafe { self.lock.unlock() }
    }

    /// The state behind the lock.
    ///
    /// # Safety
    /// The calling thread holds this channel's lock, and no other `&mut Inner` is live.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn inner_locked(&self) -> &mut Inner<T> {
        #[cfg(loom)]
        assert!(self.lock.is_locked(), "inner_locked without the lock");
        // SAFETY: caller contract.
        self.inner.with_mut(|i| unsafe { &mut *i })
    }

    /// A receive returned to its user a value that was in flight (handed to it by a sender,
    /// or given back to it). A claim after the close takes the lock to see whether its value
    /// was the last in flight; the last one releases the receivers that were waiting for its
    /// fate (module docs).
    #[inline]
    pub(crate) fn claim(&self) {
        if self.returned.fetch_add(ONE, AcqRel) & RETURNED_CLOSED != 0 {
            self.release_waiting_receivers();
        }
    }

    #[cold]
    fn release_waiting_receivers(&self) {
        let mut wake = Vec::new();
        self.lock().release_recv_if_drained(&self.returned, &mut wake);
        wake_all(wake);
    }

    /// An address that orders channels for locking (Go's `lockorder` sorts by `hchan` address).
    pub(crate) fn addr(&self) -> usize {
        #[cfg(loom)]
        return self.id;
        #[cfg(not(loom))]
        return self as *const Chan<T> as usize;
    }
}

impl<'a, T> Guard<'a, T> {
    /// The locked channel.
    #[inline]
    pub(crate) fn chan(&self) -> &'a Chan<T> {
        self.chan
    }
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = Inner<T>;
    #[inline]
    fn deref(&self) -> &Inner<T> {
        // SAFETY: we hold the lock; `&self` prevents a `&mut` through this guard meanwhile.
        self.chan.inner.with(|i| unsafe { &*i })
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Inner<T> {
        #[cfg(loom)]
        assert!(self.chan.lock.is_locked(), "guard without the lock");
        // SAFETY: we hold the lock and `&mut self` makes this the only reference.
        self.chan.inner.with_mut(|i| unsafe { &mut *i })
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a guard exists only while its thread holds the lock.
        unsafe { self.chan.lock.unlock() }
    }
}

impl<T> Inner<T> {
    /// Buffered values.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether a value handed to a receive future may still come back (module docs).
    /// `returned` is the channel's.
    #[inline]
    fn in_flight(&self, returned: &AtomicUsize) -> bool {
        self.handed != returned.load(Acquire) & !RETURNED_CLOSED
    }

    /// The common case of a send, inlined into the send future's poll: nobody is waiting to
    /// receive, the channel is open and the buffer has room. `Err(v)` means "take the full
    /// path" ([`try_send`](Self::try_send)), not that the send failed.
    #[inline]
    pub(crate) fn try_send_fast(&mut self, v: T) -> Result<(), T> {
        if self.recvq.is_empty() && self.buf.len() < self.cap && !self.closed && !self.rx_gone {
            self.buf.push_back(v);
            Ok(())
        } else {
            Err(v)
        }
    }

    /// The common case of a receive: a buffered value and no blocked sender to refill the
    /// buffer from. `None` means "take the full path" ([`try_recv`](Self::try_recv)).
    #[inline]
    pub(crate) fn try_recv_fast(&mut self) -> Option<T> {
        if self.sendq.is_empty() {
            self.buf.pop_front()
        } else {
            None
        }
    }

    /// Go's `chansend` without blocking: hand `v` to a waiting receiver, else buffer it. On
    /// success returns the waker of the receiver to wake once the lock is released.
    #[inline]
    pub(crate) fn try_send(&mut self, v: T) -> Result<Option<Waker>, TrySendError<T>> {
        if self.closed || self.rx_gone {
            return Err(TrySendError::Closed(v));
        }
        // SAFETY: we hold the lock (we have `&mut Inner` only through a guard or
        // `inner_locked`).
        if let Some((rg, waker)) = unsafe { self.recvq.dequeue() } {
            // Straight into the receiver's slot: no trip through the buffer.
            // SAFETY: the dequeued sudog is ours until we publish its state.
            unsafe { rg.put_elem(v) };
            // In flight until the receiver claims it (module docs).
            self.handed = self.handed.wrapping_add(ONE);
            rg.state.store(DONE, Release);
            return Ok(waker);
        }
        if self.buf.len() < self.cap {
            self.buf.push_back(v);
            return Ok(None);
        }
        Err(TrySendError::Full(v))
    }

    /// Go's `chanrecv` without blocking. With a full buffer and a waiting sender, takes the
    /// head and moves the sender's value into the freed tail slot (FIFO kept); with no buffer,
    /// takes the sender's value directly. A closed channel with values still in flight is
    /// `Empty`, not `Closed`: one of them may come back (module docs). `returned` is the
    /// channel's.
    #[inline]
    pub(crate) fn try_recv(&mut self, returned: &AtomicUsize) -> Result<(T, Option<Waker>), TryRecvError> {
        if let Some(v) = self.buf.pop_front() {
            let mut waker = None;
            if self.buf.len() < self.cap {
                // SAFETY: we hold the lock.
                if let Some((sg, w)) = unsafe { self.sendq.dequeue() } {
                    // SAFETY: the dequeued sudog is ours until we publish its state; a queued
                    // sender always has its value in the slot.
                    let sv = unsafe { sg.take_elem() }.expect("a blocked sender holds its value");
                    sg.state.store(DONE, Release);
                    self.buf.push_back(sv);
                    waker = w;
                }
            }
            return Ok((v, waker));
        }
        // SAFETY: we hold the lock.
        if let Some((sg, w)) = unsafe { self.sendq.dequeue() } {
            // SAFETY: as above.
            let v = unsafe { sg.take_elem() }.expect("a blocked sender holds its value");
            sg.state.store(DONE, Release);
            return Ok((v, w));
        }
        if self.closed && !self.in_flight(returned) {
            return Err(TryRecvError::Closed);
        }
        Err(TryRecvError::Empty)
    }

    /// Go's `closechan`: `false` if already closed. Every blocked sender is woken with its
    /// value back, every blocked receiver with `None` unless values are still in flight (then
    /// the last claim releases them); their wakers go to `wake`. `returned` is the channel's
    /// (module docs).
    pub(crate) fn close(&mut self, wake: &mut Vec<Waker>, returned: &AtomicUsize) -> bool {
        if self.closed {
            return false;
        }
        self.closed = true;
        // Receivers first, as Go's `closechan` (a select waiting to both send and receive on
        // this channel then fires its receive).
        // A read-modify-write, not a store: it must not lose a claim's raise, and it orders
        // this close against every claim (module docs).
        returned.fetch_or(RETURNED_CLOSED, AcqRel);
        self.release_recv_if_drained(returned, wake);
        // SAFETY: we hold the lock; each drained sudog is ours until its state is set.
        unsafe {
            self.sendq.drain(|sg, w| {
                sg.state.store(CLOSED, Release);
                wake.extend(w);
            });
        }
        true
    }

    /// Closed, nothing buffered, nothing in flight: every waiting receiver gets `None`.
    pub(crate) fn release_recv_if_drained(&mut self, returned: &AtomicUsize, wake: &mut Vec<Waker>) {
        if !self.closed || !self.buf.is_empty() || self.in_flight(returned) {
            return;
        }
        // SAFETY: we hold the lock; each drained sudog is ours until its state is set.
        unsafe {
            self.recvq.drain(|sg, w| {
                sg.state.store(CLOSED, Release);
                wake.extend(w);
            });
        }
    }

    /// Settles every queued waiter as `CLOSED` (receivers get `None`, senders keep their
    /// value, to be returned to them).
    pub(crate) fn release_all(&mut self, wake: &mut Vec<Waker>) {
        // SAFETY (both): we hold the lock; each drained sudog is ours until its state is set.
        unsafe {
            self.recvq.drain(|sg, w| {
                sg.state.store(CLOSED, Release);
                wake.extend(w);
            });
            self.sendq.drain(|sg, w| {
                sg.state.store(CLOSED, Release);
                wake.extend(w);
            });
        }
    }

    /// The last receiver is gone: no value can be received any more. Blocked senders get their
    /// values back, later sends fail; the buffered values are returned to be dropped outside
    /// the lock.
    pub(crate) fn receivers_gone(&mut self, wake: &mut Vec<Waker>) -> VecDeque<T> {
        self.rx_gone = true;
        self.release_all(wake);
        std::mem::take(&mut self.buf)
    }

    /// A receive future got `v` out of the channel but was dropped before returning it: the
    /// value goes back into the channel, to the next waiting receiver or the front of the
    /// buffer (it was the oldest value), so nothing is lost. `counted`: `v` was in flight (it
    /// was handed to the receive, see the module docs), and stops being so unless it is handed
    /// on.
    pub(crate) fn give_back(&mut self, v: T, counted: bool) -> Option<Waker> {
        if !self.rx_gone {
            // SAFETY: we hold the lock.
            if let Some((rg, w)) = unsafe { self.recvq.dequeue() } {
                // SAFETY: the dequeued sudog is ours until we publish its state.
                unsafe { rg.put_elem(v) };
                if !counted {
                    self.handed = self.handed.wrapping_add(ONE);
                }
                rg.state.store(DONE, Release);
                return w;
            }
        }
        // Into the buffer (after `rx_gone`, to be dropped with it). Receivers waiting on a
        // closed channel were all dequeued above, so nothing is left to release.
        self.buf.push_front(v);
        if counted {
            // Out of flight without a claim: the hand-over is undone where it was counted.
            self.handed = self.handed.wrapping_sub(ONE);
        }
        None
    }

    /// Queues a receiver that could not complete.
    ///
    /// # Safety
    /// As for [`WaitQueue::push_back`].
    pub(crate) unsafe fn park_recv(&mut self, sg: &Sudog<T>) {
        // SAFETY: caller contract.
        unsafe { self.recvq.push_back(sg) }
    }

    /// Queues a sender that could not complete; its value is already in `sg`'s slot.
    ///
    /// # Safety
    /// As for [`WaitQueue::push_back`].
    pub(crate) unsafe fn park_send(&mut self, sg: &Sudog<T>) {
        // SAFETY: caller contract.
        unsafe { self.sendq.push_back(sg) }
    }
}

/// Wakes each waker in the list (after the lock is released).
pub(crate) fn wake_all(list: Vec<Waker>) {
    for w in list {
        w.wake();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Chan, ONE};
    use crate::error::TryRecvError;
    use std::sync::atomic::Ordering::Relaxed;

    /// The two counts of values in flight wrap past `usize::MAX` together: a hand-over and its
    /// claim across the wrap leave nothing in flight, and the closed channel then reports
    /// itself drained.
    #[test]
    fn in_flight_counts_wrap_together() {
        let c = Chan::<u32>::new(0);
        let start = usize::MAX - 1; // the last even count: the closed bit clear
        c.returned.store(start, Relaxed);
        c.lock().handed = start;
        // A hand-over, counted as `try_send` counts it: across the wrap.
        c.lock().handed = start.wrapping_add(ONE);
        assert!(c.lock().in_flight(&c.returned));
        let mut wake = Vec::new();
        assert!(c.lock().close(&mut wake, &c.returned));
        assert_eq!(c.lock().try_recv(&c.returned).err(), Some(TryRecvError::Empty), "a value is still in flight");
        c.claim();
        assert!(!c.lock().in_flight(&c.returned));
        assert_eq!(c.lock().try_recv(&c.returned).err(), Some(TryRecvError::Closed));
    }
}
