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
//! A registration may outlive its runtime (a socket returned from `block_on`). Nothing polls a
//! dead runtime's poller, so a G, thread or executor waiting on such a socket would wait
//! forever. [`Netpoll::shutdown`], called by the runtime's shutdown once no M can poll any more,
//! sets the [`SHUTDOWN`] bit of every live registration and wakes its waiters; from then on
//! [`Netpoll::poll_ready`] fails and no new registration is taken (tokio's `is_shutdown`).
//!
//! Under loom there is no mio: the poller is a parker that only timers would block on, and no
//! model arms one (timers are modelled on their own in `loom_tests::timer`).

use crate::loom::{fence, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering::*};
use std::io;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;

/// Readiness bits of a [`ScheduledIo`].
pub(crate) const READABLE: usize = 1;
pub(crate) const WRITABLE: usize = 2;
pub(crate) const READ_CLOSED: usize = 4;
pub(crate) const WRITE_CLOSED: usize = 8;
pub(crate) const ERROR: usize = 16;
/// Not readiness: the runtime shut down, and no event will ever come (final, never cleared).
pub(crate) const SHUTDOWN: usize = 32;
const READINESS_MASK: usize = 63;
/// Above the readiness bits: a count of the events delivered, so that clearing the readiness a
/// G observed never clears readiness that a newer event set (tokio's `tick`).
const TICK_SHIFT: u32 = 6;

/// [`Netpoll::poll_ready`]'s refusal: the source's runtime has shut down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gone;

impl Gone {
    /// The error every operation on a source of a shut-down runtime returns (`Other`, as tokio
    /// does in the same case; the message names the cause).
    pub(crate) fn error() -> io::Error {
        io::Error::other("goro: the runtime this socket was registered with has shut down")
    }
}

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

    /// The readiness in `mask` and the tick, or `Gone` once the runtime has shut down (whatever
    /// the readiness); `Ok(None)` if none of `mask` is set.
    fn ready_in(&self, mask: usize) -> Result<Option<(usize, usize)>, Gone> {
        let (bits, tick) = self.readiness();
        if bits & SHUTDOWN != 0 {
            return Err(Gone);
        }
        Ok((bits & mask != 0).then_some((bits & mask, tick)))
    }

    /// Registers `w` to be woken when direction `dir` (0 read, 1 write) becomes ready; returns
    /// whether the slot was empty (a new waiter). The caller re-checks the readiness after.
    fn set_waker(&self, dir: usize, w: &Waker) -> bool {
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

    /// Takes `w` back out of direction `dir`'s slot if the slot still holds it (an event may
    /// have taken it already, and counted it then).
    fn withdraw_waker(&self, dir: usize, w: &Waker) -> Option<Waker> {
        let mut ws = self.waiters.lock();
        match &ws[dir] {
            Some(old) if old.will_wake(w) => ws[dir].take(),
            _ => None,
        }
    }

    /// Takes every registered waker (the source is going away); returns how many there were.
    pub(crate) fn take_wakers(&self, out: &mut Vec<Waker>) -> usize {
        let mut ws = self.waiters.lock();
        let before = out.len();
        out.extend(ws.iter_mut().filter_map(Option::take));
        out.len() - before
    }

    /// The runtime shut down: sets [`SHUTDOWN`] for good and moves every waker to `out`;
    /// returns how many it moved.
    fn shutdown(&self, out: &mut Vec<Waker>) -> usize {
        self.readiness.fetch_or(SHUTDOWN, AcqRel);
        self.take_wakers(out)
    }

    /// An event arrived: sets `bits`, bumps the tick, and moves the wakers of the directions
    /// that became ready to `out`; returns how many wakers it moved.
    pub(crate) fn deliver(&self, bits: usize, out: &mut Vec<Waker>) -> usize {
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
    /// What interrupts a blocked poll; shared with the main futures' wakers.
    breaker: Arc<Breaker>,
    #[cfg(loom)]
    polling: AtomicBool,
    /// Go's `sched.lastpoll`: 0 while an M is blocked in the poller, else when it was last
    /// polled (see "The blocking poll" on [`Netpoll::claim_block`]).
    lastpoll: AtomicU64,
    /// Go's `sched.pollUntil`: the deadline the blocked M sleeps until (0: no deadline).
    poll_until: AtomicU64,
    /// Gs waiting for readiness (Go's `netpollWaiters`).
    waiters: AtomicUsize,
    /// The registrations, live and released.
    sources: Mutex<Sources>,
}

/// What interrupts a blocked poll (Go's `netpollBreak`), in an allocation of its own: the
/// wakers of `block_on`'s main futures hold it weakly (see `mains`), since a waker may outlive
/// the runtime.
pub(crate) struct Breaker {
    /// Go's `netpollWakeSig`: a wake-up is already pending.
    wake_sig: AtomicBool,
    #[cfg(not(loom))]
    waker: mio::Waker,
    #[cfg(loom)]
    parker: crate::park::Parker,
}

impl Breaker {
    /// Interrupts a blocked poll, or makes the next one return at once; several calls before
    /// the poll wakes cost one wake-up.
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
}

/// Every registration of a [`Netpoll`]: the live ones, so [`Netpoll::shutdown`] can reach them,
/// and those released since the last poll began.
#[derive(Default)]
struct Sources {
    /// Set by [`Netpoll::shutdown`]: no registration is taken any more.
    shut_down: bool,
    /// The live registrations, by key; a free slot is `None`, its key in `free`.
    live: Vec<Option<Arc<ScheduledIo>>>,
    free: Vec<usize>,
    /// Registrations dropped since the last poll began (freed after the next poll).
    released: Vec<Arc<ScheduledIo>>,
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
            breaker: Arc::new(Breaker {
                wake_sig: AtomicBool::new(false),
                #[cfg(not(loom))]
                waker,
                #[cfg(loom)]
                parker: crate::park::Parker::new(),
            }),
            #[cfg(loom)]
            polling: AtomicBool::new(false),
            lastpoll: AtomicU64::new(1),
            poll_until: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            sources: Mutex::new(Sources::default()),
        })
    }

    /// The blocking poll, step 1: the idle M that would sleep in the poller until `until` (0:
    /// no deadline) claims it (Go's `sched.lastpoll` swapped to 0). Only one M sleeps there:
    /// if another does, the claim fails with the deadline that one sleeps until, so that the
    /// caller can wake it if its own timer is earlier.
    ///
    /// The handshake with whoever adds an earlier timer ([`wake_sleeper_before`]): the claimer
    /// publishes the claim, fences (`SeqCst`) and looks at the timers again before it sleeps;
    /// the adder pushes its timer, fences and looks for a claim. One of the two sees the other.
    ///
    /// [`wake_sleeper_before`]: Netpoll::wake_sleeper_before
    pub(crate) fn claim_block(&self, until: u64) -> Result<(), u64> {
        if self.lastpoll.swap(0, SeqCst) == 0 {
            return Err(self.poll_until.load(SeqCst));
        }
        self.poll_until.store(until, SeqCst);
        Ok(())
    }

    /// The blocking poll, step 2: the claimer is awake again at `now`.
    pub(crate) fn end_block(&self, now: u64) {
        self.poll_until.store(0, SeqCst);
        self.lastpoll.store(now, SeqCst);
    }

    /// Go's `wakeNetPoller`'s look: a timer due at `when` became the earliest of its heap. If an
    /// M sleeps in the poller past `when`, wake it (it will sleep again with the new deadline).
    /// Returns whether an M sleeps in the poller: if none does, the caller makes sure an M looks
    /// for work (it will see the timer before it sleeps).
    pub(crate) fn wake_sleeper_before(&self, when: u64) -> bool {
        // Pairs with the claimer's fence between its claim and its last look at the timers.
        fence(SeqCst);
        if self.lastpoll.load(SeqCst) != 0 {
            return false;
        }
        let until = self.poll_until.load(SeqCst);
        if until == 0 || until > when {
            self.wake();
        }
        true
    }

    /// Whether `findrunnable` should poll without blocking: some G waits for I/O and no M
    /// sleeps in the poller (which would deliver it).
    pub(crate) fn nonblocking_poll_due(&self) -> bool {
        self.any_waiters() && self.lastpoll.load(Relaxed) != 0
    }

    /// sysmon's poll: if Gs wait on I/O and nobody has polled for `age` nanos (every M busy),
    /// poll without blocking into `out`; `now` is the runtime's clock. Returns whether it polled.
    pub(crate) fn poll_if_stale(&self, age: u64, now: impl Fn() -> u64, out: &mut Vec<Waker>) -> bool {
        if !self.any_waiters() {
            return false;
        }
        let last = self.lastpoll.load(SeqCst);
        if last == 0 || last + age > now() {
            return false;
        }
        // Go's sysmon: a compare-and-swap, not a store, so that an M which claimed the poller
        // since our look (`lastpoll` 0) keeps its claim, and no second M claims it beside it.
        if self.lastpoll.compare_exchange(last, now(), SeqCst, SeqCst).is_err() {
            return false;
        }
        self.poll(Some(Duration::ZERO), out)
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
        self.breaker.wake();
    }

    /// A weak handle on what [`wake`](Self::wake) does, for a waker that may outlive the
    /// runtime.
    pub(crate) fn breaker(&self) -> std::sync::Weak<Breaker> {
        Arc::downgrade(&self.breaker)
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
            let released = std::mem::take(&mut self.sources.lock().released);
            let (poll, events) = &mut *guard;
            if let Err(e) = poll.poll(events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    crate::config::warn_once(&format!("goro: netpoll failed: {e}"));
                }
            }
            let mut woken = 0;
            for ev in events.iter() {
                if ev.token() == WAKE_TOKEN {
                    self.breaker.wake_sig.store(false, Release);
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
                self.breaker.parker.park();
            }
            self.breaker.wake_sig.store(false, Release);
            self.polling.store(false, Release);
            true
        }
    }

    /// The readiness protocol of one direction of `io` (`dir`: 0 read, 1 write; `mask`: the
    /// bits that end a wait in it): `Ready(Ok((bits, tick)))` if some of `mask` is set,
    /// `Ready(Err(Gone))` once the runtime has shut down (whatever the readiness), else `w` is
    /// registered (and counted as a waiter) and `Pending` returned; an event in `mask` or the
    /// shutdown will then wake `w`.
    ///
    /// No wake-up is lost: [`deliver`](ScheduledIo::deliver) and
    /// [`shutdown`](ScheduledIo::shutdown) set their bit, then take the wakers under the
    /// `waiters` lock; this registers `w` under that lock, then looks at the bits again. If the
    /// other side's lock came first, its bit was set before, and our later lock makes it visible
    /// to the second look; if ours came first, the other side finds `w`. (Modelled by
    /// `loom_tests::netpoll`.)
    pub(crate) fn poll_ready(
        &self,
        io: &ScheduledIo,
        dir: usize,
        mask: usize,
        w: &Waker,
    ) -> Poll<Result<(usize, usize), Gone>> {
        match io.ready_in(mask) {
            Ok(None) => {}
            r => return Poll::Ready(r.map(|r| r.expect("matched above"))),
        }
        if io.set_waker(dir, w) {
            self.add_waiters(1);
        }
        match io.ready_in(mask) {
            Ok(None) => Poll::Pending,
            Ok(Some(r)) => {
                // Ready after all: the G does not wait. Take its waker back, or the count
                // (Go's `netpollWaiters`, which counts parked Gs) says it waits until the next
                // event in this direction, and the slot keeps a reference on a G that moved on.
                if let Some(ours) = io.withdraw_waker(dir, w) {
                    self.sub_waiters(1);
                    drop(ours); // outside the lock, as below
                }
                Poll::Ready(Ok(r))
            }
            Err(Gone) => {
                // Nothing will take the waker out of the slot now: empty it rather than keep
                // it (and what it holds) until the source is dropped. The shutdown may have
                // taken it already (and counted it).
                let w = io.waiters.lock()[dir].take();
                if w.is_some() {
                    self.sub_waiters(1);
                }
                drop(w); // outside the lock: dropping a waker may run its executor's code
                Poll::Ready(Err(Gone))
            }
        }
    }

    /// Adds `io` to the live registrations and returns its key, unless the runtime has shut
    /// down. A registration added before [`shutdown`](Self::shutdown) took the set is shut
    /// down with the others; one after it is refused: none escapes.
    pub(crate) fn add(&self, io: &Arc<ScheduledIo>) -> Result<usize, Gone> {
        let mut s = self.sources.lock();
        if s.shut_down {
            return Err(Gone);
        }
        Ok(match s.free.pop() {
            Some(key) => {
                s.live[key] = Some(io.clone());
                key
            }
            None => {
                s.live.push(Some(io.clone()));
                s.live.len() - 1
            }
        })
    }

    /// Registers `source` with the poller for `interest`; `io` is what its events will update.
    /// Returns its key for [`deregister`](Self::deregister) and [`release`](Self::release).
    ///
    /// # Errors
    /// [`Gone::error`] once the runtime has shut down; the poller's own error.
    #[cfg(not(loom))]
    pub(crate) fn register(
        &self,
        source: &mut impl mio::event::Source,
        io: &Arc<ScheduledIo>,
        interest: mio::Interest,
    ) -> io::Result<usize> {
        let key = self.add(io).map_err(|Gone| Gone::error())?;
        let token = mio::Token(Arc::as_ptr(io) as usize);
        if let Err(e) = self.registry.register(source, token, interest) {
            // Never in the poller: no event can name it, so it need not wait for a poll.
            self.remove(key);
            return Err(e);
        }
        Ok(key)
    }

    /// Deregisters `source` (registered as `key`); its `io` stays alive until the next poll has
    /// finished.
    #[cfg(not(loom))]
    pub(crate) fn deregister(
        &self,
        source: &mut impl mio::event::Source,
        key: usize,
        io: Arc<ScheduledIo>,
    ) -> io::Result<()> {
        let r = self.registry.deregister(source);
        self.release(key, io);
        r
    }

    /// Drops registration `key` (its `io`) from the live ones, and keeps `io` alive until the
    /// next poll has finished (a poll in progress may return its token).
    pub(crate) fn release(&self, key: usize, io: Arc<ScheduledIo>) {
        let mut s = self.sources.lock();
        Self::remove_locked(&mut s, key);
        s.released.push(io);
    }

    fn remove(&self, key: usize) {
        Self::remove_locked(&mut self.sources.lock(), key);
    }

    fn remove_locked(s: &mut Sources, key: usize) {
        // After a shutdown the set is empty (and takes no new key): nothing to remove.
        if let Some(slot @ Some(_)) = s.live.get_mut(key) {
            *slot = None;
            s.free.push(key);
        }
    }

    /// The runtime shut down (no M polls any more): every live registration gets
    /// [`SHUTDOWN`], its waiters are woken (to find it and fail), and no new one is taken.
    /// Idempotent.
    pub(crate) fn shutdown(&self) {
        let live = {
            let mut s = self.sources.lock();
            s.shut_down = true;
            s.free = Vec::new();
            std::mem::take(&mut s.live)
        };
        let mut wakers = Vec::new();
        let mut n = 0;
        for io in live.iter().flatten() {
            n += io.shutdown(&mut wakers);
        }
        self.sub_waiters(n);
        drop(live);
        // No lock held: a waker is the waiting executor's code.
        wakers.into_iter().for_each(Waker::wake);
    }
}
