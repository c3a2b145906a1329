//! The netpoller (Go's `netpoll`): one mio `Poll` per runtime, which is also how an idle
//! runtime sleeps until its next timer.
//!
//! - `findrunnable` polls it without blocking when Gs wait on I/O and the queues are empty.
//! - The last M to go idle while timers or I/O waiters exist blocks in it, with the earliest
//!   timer as the timeout (Go's `sched.lastpoll == 0` while it sleeps, `sched.pollUntil` its
//!   deadline); the others sleep in `stopm`.
//! - [`Netpoll::wake`] (Go's `netpollBreak`) interrupts that sleep: an earlier timer was added,
//!   or the blocked M is M0 and its main future was woken.
//! - A poll returns the wakers of the Gs whose I/O became ready; the caller wakes them once it
//!   holds a P, so they land on its run queue (Go's `injectglist`).
//!
//! Registrations ([`ScheduledIo`]) are named to mio by their address; one that is dropped while
//! a poll may still return its token is kept alive until the next poll has finished (tokio's
//! `pending_release`), so an event can never name freed memory.
//!
//! Under loom there is no mio: the poller is a parker that only timers would block on, and no
//! model arms one (timers are modelled on their own in `loom_tests::timer`).

use crate::loom::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering::*};
use std::io;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

/// Readiness bits of a [`ScheduledIo`].
pub(crate) const READABLE: usize = 1;
pub(crate) const WRITABLE: usize = 2;
pub(crate) const READ_CLOSED: usize = 4;
pub(crate) const WRITE_CLOSED: usize = 8;
pub(crate) const ERROR: usize = 16;
const READINESS_MASK: usize = 31;
/// Above the readiness bits: a count of the events delivered, so that clearing the readiness a
/// G observed never clears readiness that a newer event set (tokio's `tick`).
const TICK_SHIFT: u32 = 5;

/// The readiness state and waiting Gs of one registered I/O source (Go's `pollDesc`).
pub(crate) struct ScheduledIo {
    readiness: AtomicUsize,
    /// The G waiting to read and the one waiting to write.
    waiters: Mutex<[Option<Waker>; 2]>,
}

impl ScheduledIo {
    pub(crate) fn new() -> ScheduledIo {
        ScheduledIo { readiness: AtomicUsize::new(0), waiters: Mutex::new([None, None]) }
    }

    /// The current readiness bits and the tick they were observed at.
    pub(crate) fn readiness(&self) -> (usize, usize) {
        let r = self.readiness.load(Acquire);
        (r & READINESS_MASK, r >> TICK_SHIFT)
    }

    /// Clears `bits` if no event arrived since `tick` (the caller saw them and got `WouldBlock`).
    pub(crate) fn clear(&self, tick: usize, bits: usize) {
        let _ = self.readiness.fetch_update(AcqRel, Acquire, |r| {
            // Closed and error bits are final: never cleared.
            let clearable = bits & (READABLE | WRITABLE);
            ((r >> TICK_SHIFT) == tick).then_some(r & !clearable)
        });
    }

    /// Registers `w` to be woken when direction `dir` (0 read, 1 write) becomes ready; returns
    /// whether the slot was empty (a new waiter). The caller re-checks the readiness after.
    pub(crate) fn set_waker(&self, dir: usize, w: &Waker) -> bool {
        let mut ws = self.waiters.lock();
        match &ws[dir] {
            Some(old) if old.will_wake(w) => false,
            Some(_) => {
                ws[dir] = Some(w.clone());
                false
            }
            None => {
                ws[dir] = Some(w.clone());
                true
            }
        }
    }

    /// Takes every registered waker (the source is going away); returns how many there were.
    pub(crate) fn take_wakers(&self, out: &mut Vec<Waker>) -> usize {
        let mut ws = self.waiters.lock();
        let before = out.len();
        out.extend(ws.iter_mut().filter_map(Option::take));
        out.len() - before
    }

    /// An event arrived: sets `bits`, bumps the tick, and moves the wakers of the directions
    /// that became ready to `out`; returns how many wakers it moved.
    fn deliver(&self, bits: usize, out: &mut Vec<Waker>) -> usize {
        let _ = self.readiness.fetch_update(AcqRel, Acquire, |r| {
            let tick = (r >> TICK_SHIFT).wrapping_add(1) & (usize::MAX >> TICK_SHIFT);
            Some((tick << TICK_SHIFT) | (r & READINESS_MASK) | bits)
        });
        let mut ws = self.waiters.lock();
        let before = out.len();
        if bits & (READABLE | READ_CLOSED | ERROR) != 0 {
            out.extend(ws[0].take());
        }
        if bits & (WRITABLE | WRITE_CLOSED | ERROR) != 0 {
            out.extend(ws[1].take());
        }
        out.len() - before
    }
}

/// The poller of one runtime.
pub(crate) struct Netpoll {
    #[cfg(not(loom))]
    poller: std::sync::Mutex<(mio::Poll, mio::Events)>,
    #[cfg(not(loom))]
    registry: mio::Registry,
    #[cfg(not(loom))]
    waker: mio::Waker,
    #[cfg(loom)]
    parker: crate::park::Parker,
    #[cfg(loom)]
    polling: AtomicBool,
    /// Go's `sched.lastpoll`: 0 while an M is blocked in the poller.
    pub(crate) lastpoll: AtomicU64,
    /// Go's `sched.pollUntil`: the deadline the blocked M sleeps until (0: no deadline).
    pub(crate) poll_until: AtomicU64,
    /// Go's `netpollWakeSig`: a wake-up is already pending.
    wake_sig: AtomicBool,
    /// Gs waiting for readiness (Go's `netpollWaiters`).
    waiters: AtomicUsize,
    /// Registrations dropped since the last poll began (freed after the next poll).
    released: Mutex<Vec<Arc<ScheduledIo>>>,
}

/// The token the poller's own waker uses (no registration has address 0).
#[cfg(not(loom))]
const WAKE_TOKEN: mio::Token = mio::Token(0);

impl Netpoll {
    pub(crate) fn new() -> io::Result<Netpoll> {
        #[cfg(not(loom))]
        let (poll, waker) = {
            let poll = mio::Poll::new()?;
            let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)?;
            (poll, waker)
        };
        Ok(Netpoll {
            #[cfg(not(loom))]
            registry: poll.registry().try_clone()?,
            #[cfg(not(loom))]
            poller: std::sync::Mutex::new((poll, mio::Events::with_capacity(256))),
            #[cfg(not(loom))]
            waker,
            #[cfg(loom)]
            parker: crate::park::Parker::new(),
            #[cfg(loom)]
            polling: AtomicBool::new(false),
            lastpoll: AtomicU64::new(1),
            poll_until: AtomicU64::new(0),
            wake_sig: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            released: Mutex::new(Vec::new()),
        })
    }

    /// Whether some G waits for I/O readiness (Go's `netpollAnyWaiters`).
    pub(crate) fn any_waiters(&self) -> bool {
        self.waiters.load(Acquire) > 0
    }

    /// Gs waiting for readiness now.
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.load(Relaxed)
    }

    pub(crate) fn add_waiters(&self, n: usize) {
        self.waiters.fetch_add(n, AcqRel);
    }

    pub(crate) fn sub_waiters(&self, n: usize) {
        if n > 0 {
            self.waiters.fetch_sub(n, AcqRel);
        }
    }

    /// Interrupts a blocked poll, or makes the next one return at once (Go's `netpollBreak`);
    /// several calls before the poll wakes cost one wake-up.
    pub(crate) fn wake(&self) {
        if self.wake_sig.swap(true, AcqRel) {
            return;
        }
        #[cfg(not(loom))]
        if let Err(e) = self.waker.wake() {
            crate::config::warn_once(&format!("goro: cannot wake the netpoller: {e}"));
        }
        #[cfg(loom)]
        self.parker.unpark();
    }

    /// Polls for readiness, waiting up to `timeout` (`None`: until [`wake`](Self::wake)d or an
    /// event arrives; `Some(ZERO)`: not at all). The wakers of the Gs whose I/O became ready go
    /// to `out`. Returns `false` without polling if another M is polling.
    pub(crate) fn poll(&self, timeout: Option<Duration>, out: &mut Vec<Waker>) -> bool {
        #[cfg(not(loom))]
        {
            let mut guard = match self.poller.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::WouldBlock) => return false,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            };
            // Registrations released before this poll began cannot appear in its events.
            let released = std::mem::take(&mut *self.released.lock());
            let (poll, events) = &mut *guard;
            if let Err(e) = poll.poll(events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    crate::config::warn_once(&format!("goro: netpoll failed: {e}"));
                }
            }
            let mut woken = 0;
            for ev in events.iter() {
                if ev.token() == WAKE_TOKEN {
                    self.wake_sig.store(false, Release);
                    continue;
                }
                let mut bits = 0;
                if ev.is_readable() {
                    bits |= READABLE;
                }
                if ev.is_writable() {
                    bits |= WRITABLE;
                }
                if ev.is_read_closed() {
                    bits |= READ_CLOSED;
                }
                if ev.is_write_closed() {
                    bits |= WRITE_CLOSED;
                }
                if ev.is_error() {
                    bits |= ERROR;
                }
                // SAFETY: a token is the address of a `ScheduledIo` kept alive by its
                // registration, or by `released` until a poll that began after its release has
                // finished (this one began with `released` taken, so every token it returns
                // is alive until we drop `released` below).
                let io = unsafe { &*(ev.token().0 as *const ScheduledIo) };
                woken += io.deliver(bits, out);
            }
            self.sub_waiters(woken);
            drop(guard);
            drop(released);
            true
        }
        #[cfg(loom)]
        {
            let _ = out;
            if self.polling.swap(true, AcqRel) {
                return false;
            }
            if timeout != Some(Duration::ZERO) {
                self.parker.park();
            }
            self.wake_sig.store(false, Release);
            self.polling.store(false, Release);
            true
        }
    }

    /// Registers `source` with the poller for `interest`; `io` is what its events will update.
    #[cfg(not(loom))]
    pub(crate) fn register(
        &self,
        source: &mut impl mio::event::Source,
        io: &Arc<ScheduledIo>,
        interest: mio::Interest,
    ) -> io::Result<()> {
        let token = mio::Token(Arc::as_ptr(io) as usize);
        self.registry.register(source, token, interest)
    }

    /// Deregisters `source`; its `io` stays alive until the next poll has finished.
    #[cfg(not(loom))]
    pub(crate) fn deregister(&self, source: &mut impl mio::event::Source, io: Arc<ScheduledIo>) -> io::Result<()> {
        let r = self.registry.deregister(source);
        self.release(io);
        r
    }

    /// Keeps `io` alive until the next poll has finished (a poll in progress may return its
    /// token).
    pub(crate) fn release(&self, io: Arc<ScheduledIo>) {
        self.released.lock().push(io);
    }
}
