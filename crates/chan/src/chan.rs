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

use crate::error::{TryRecvError, TrySendError};
use crate::loom::{AtomicUsize, Ordering::*, RawLock, UnsafeCell};
use crate::waitq::{Sudog, WaitQueue, CLOSED, DONE};
use std::collections::VecDeque;
use std::task::Waker;

pub(crate) struct Chan<T> {
    /// Not padded: everything it guards is read right after taking it, so lock word and state
    /// sharing a cache line saves a miss per operation.
    lock: RawLock,
    inner: UnsafeCell<Inner<T>>,
    pub(crate) cap: usize,
    /// Live `Sender` handles; the last one to go closes the channel.
    pub(crate) senders: AtomicUsize,
    /// Live `Receiver` handles; when the last one goes, sends fail and return their value.
    pub(crate) receivers: AtomicUsize,
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
                closed: false,
                rx_gone: false,
                recvq: WaitQueue::new(),
                sendq: WaitQueue::new(),
            }),
            cap,
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            #[cfg(loom)]
            id: {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
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

    /// An address that orders channels for locking (Go's `lockorder` sorts by `hchan` address).
    pub(crate) fn addr(&self) -> usize {
        #[cfg(loom)]
        return self.id;
        #[cfg(not(loom))]
        return self as *const Chan<T> as usize;
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
    /// takes the sender's value directly.
    pub(crate) fn try_recv(&mut self) -> Result<(T, Option<Waker>), TryRecvError> {
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
        if self.closed {
            return Err(TryRecvError::Closed);
        }
        Err(TryRecvError::Empty)
    }

    /// Go's `closechan`: `false` if already closed. Every blocked receiver is woken with
    /// `None`, every blocked sender with its value back; their wakers go to `wake`.
    pub(crate) fn close(&mut self, wake: &mut Vec<Waker>) -> bool {
        if self.closed {
            return false;
        }
        self.closed = true;
        self.release_all(wake);
        true
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

    /// A receive future was handed `v` by a sender but was dropped before returning it: the
    /// value goes back into the channel, to the next waiting receiver or the front of the
    /// buffer (it was the oldest value), so nothing is lost.
    pub(crate) fn give_back(&mut self, v: T) -> Option<Waker> {
        if self.rx_gone {
            // Nobody can receive it: it is dropped (by the caller, outside the lock).
            self.buf.push_front(v);
            return None;
        }
        // SAFETY: we hold the lock.
        if let Some((rg, w)) = unsafe { self.recvq.dequeue() } {
            // SAFETY: the dequeued sudog is ours until we publish its state.
            unsafe { rg.put_elem(v) };
            rg.state.store(DONE, Release);
            return w;
        }
        self.buf.push_front(v);
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
