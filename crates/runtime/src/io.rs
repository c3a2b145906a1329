//! I/O sources on the runtime's netpoller: the primitive under `goro::net`. Not part of the
//! stable API.
//!
//! A [`Registration`] ties a mio source (a non-blocking socket) to the netpoller of the runtime
//! it was made on. A G that finds the socket not ready parks in [`Registration::poll_ready`]
//! (costing no thread) and is woken when the poller sees the readiness; [`Registration::poll_io`]
//! is the usual loop around it: try the operation, and on `WouldBlock` forget the readiness
//! that proved stale and wait again (edge-triggered, as Go's netpoller and tokio are).

use crate::netpoll::{Gone, ScheduledIo, ERROR, READABLE, READ_CLOSED, WRITABLE, WRITE_CLOSED};
use crate::sched::Shared;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Which half of a source a G waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Readable (or read-closed, or in error).
    Read,
    /// Writable (or write-closed, or in error).
    Write,
}

impl Direction {
    fn index(self) -> usize {
        self as usize
    }

    fn mask(self) -> usize {
        match self {
            Direction::Read => READABLE | READ_CLOSED | ERROR,
            Direction::Write => WRITABLE | WRITE_CLOSED | ERROR,
        }
    }
}

/// Readiness that [`Registration::poll_ready`] observed; give it back to
/// [`Registration::clear_readiness`] when the operation then says `WouldBlock`.
#[derive(Clone, Copy, Debug)]
pub struct ReadyEvent {
    tick: usize,
    bits: usize,
}

impl ReadyEvent {
    /// Whether the peer closed this direction (or the source is in error): the operation will
    /// not block any more.
    pub fn is_closed(&self) -> bool {
        self.bits & (READ_CLOSED | WRITE_CLOSED | ERROR) != 0
    }
}

/// A mio source registered with the calling thread's runtime. Deregister it
/// ([`deregister`](Registration::deregister)) before closing the source; dropping the
/// registration wakes any G still waiting on it. It may outlive its runtime: from the
/// runtime's shutdown on, [`poll_ready`](Registration::poll_ready) (and so
/// [`poll_io`](Registration::poll_io)) fails instead of waiting for an event that would never
/// come.
///
/// A UDP receive that parks its G until a datagram arrives (what `goro::net::UdpSocket` does):
///
/// ```
/// use goro_runtime::__private::io::{Direction, Registration};
/// use std::future::poll_fn;
///
/// let rt = goro_runtime::Builder::new().build().unwrap();
/// rt.block_on(async {
///     let mut rx = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
///     let mut reg = Registration::new(&mut rx, mio::Interest::READABLE)?;
///     let addr = rx.local_addr()?;
///     goro_runtime::go(async move {
///         let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///         tx.send_to(b"ping", addr).unwrap();
///     });
///     let mut buf = [0u8; 16];
///     // Try `recv`; on WouldBlock, park until the netpoller reports the socket readable.
///     let n = poll_fn(|cx| reg.poll_io(cx, Direction::Read, || rx.recv(&mut buf))).await?;
///     assert_eq!(&buf[..n], b"ping");
///     reg.deregister(&mut rx) // before `rx` closes
/// })
/// .unwrap();
/// ```
pub struct Registration {
    io: Arc<ScheduledIo>,
    shared: std::sync::Arc<Shared>,
    /// Its key in the poller's set of live registrations.
    key: usize,
    /// Still registered with the poller (cleared by `deregister`).
    registered: bool,
}

impl Registration {
    /// Registers `source` for `interest` with the netpoller of the calling thread's runtime.
    ///
    /// # Errors
    /// Outside a goro runtime (`Other`, naming `goro::run`); while the runtime shuts down
    /// (`Other`, the error of [`poll_ready`](Registration::poll_ready)); or if the poller
    /// refuses it.
    pub fn new(source: &mut impl mio::event::Source, interest: mio::Interest) -> io::Result<Registration> {
        // A loom build has no netpoller; `goro::net` compiles there (a crate with a server
        // binary must build under `--cfg loom` for its model tests), but does nothing.
        #[cfg(loom)]
        {
            let _ = (source, interest);
            crate::refuse_io_in_model("goro::net");
            Err(io::Error::other("goro::net is not available in a build with --cfg loom (no netpoller)"))
        }
        #[cfg(not(loom))]
        Registration::register(source, interest)
    }

    #[cfg(not(loom))]
    fn register(source: &mut impl mio::event::Source, interest: mio::Interest) -> io::Result<Registration> {
        let shared = crate::m::current(|ctx| ctx.map(|c| c.shared.clone()))
            .ok_or_else(|| io::Error::other("goro::net needs a goro runtime: use it from a G (inside goro::run)"))?;
        let io = Arc::new(ScheduledIo::new());
        let key = shared.netpoll.register(source, &io, interest)?;
        Ok(Registration { io, shared, key, registered: true })
    }

    /// Ready when the source is ready in direction `dir` (or closed, or in error); otherwise
    /// parks the calling task until the poller sees it ready.
    ///
    /// # Errors
    /// Once the runtime the source was registered with has shut down (it was dropped), no
    /// poller will ever report the source ready, so from then on this fails, whatever the
    /// readiness, with an `Other` error whose message says so (tokio's behaviour too). A task
    /// already waiting at the shutdown is woken to get it. The source itself is still open:
    /// drop it, or take it back out of the poller and register it anew.
    pub fn poll_ready(&self, cx: &mut Context<'_>, dir: Direction) -> Poll<io::Result<ReadyEvent>> {
        match self.shared.netpoll.poll_ready(&self.io, dir.index(), dir.mask(), cx.waker()) {
            Poll::Ready(Ok((bits, tick))) => Poll::Ready(Ok(ReadyEvent { tick, bits })),
            Poll::Ready(Err(Gone)) => Poll::Ready(Err(Gone::error())),
            Poll::Pending => {
                crate::set_wait_reason(crate::WaitReason::IoWait);
                Poll::Pending
            }
        }
    }

    /// Forgets the readiness `ev` reported (the operation said `WouldBlock`), unless an event
    /// arrived since.
    pub fn clear_readiness(&self, ev: ReadyEvent) {
        self.io.clear(ev.tick, ev.bits);
    }

    /// Runs the non-blocking operation `op` once the source is ready in direction `dir`,
    /// waiting again each time it reports `WouldBlock`.
    pub fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            let ev = match self.poll_ready(cx, dir) {
                Poll::Ready(Ok(ev)) => ev,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            match op() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.clear_readiness(ev),
                r => return Poll::Ready(r),
            }
        }
    }

    /// A stopped timer on the runtime this source is registered with, usable from any thread
    /// (the timers of socket deadlines: they must fire where the socket's waiters are woken).
    /// `f` runs as [`RawTimer::new`](crate::time::RawTimer::new)'s does.
    pub fn timer(&self, f: impl FnMut() -> bool + Send + 'static) -> crate::time::RawTimer {
        crate::time::RawTimer::on(self.shared.clone(), f)
    }

    /// Removes `source` from the poller (call it before the source is closed).
    pub fn deregister(&mut self, source: &mut impl mio::event::Source) -> io::Result<()> {
        if !std::mem::take(&mut self.registered) {
            return Ok(());
        }
        #[cfg(loom)]
        unreachable!("goro: a registration under loom ({source:p}, {})", self.key);
        #[cfg(not(loom))]
        self.shared.netpoll.deregister(source, self.key, self.io.clone())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut wakers = Vec::new();
        let n = self.io.take_wakers(&mut wakers);
        self.shared.netpoll.sub_waiters(n);
        if self.registered {
            // Not deregistered: its events may still name it until the next poll ends.
            self.shared.netpoll.release(self.key, self.io.clone());
        }
        wakers.into_iter().for_each(std::task::Waker::wake);
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (bits, _) = self.io.readiness();
        f.debug_struct("Registration").field("readiness", &bits).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::task::Waker;

    /// A registration kept past its runtime: polling it fails at once (no task is left
    /// waiting), it deregisters without error, and once it is dropped nothing of the runtime
    /// is left behind (the registration held the last reference to the scheduler's state).
    #[test]
    fn registration_outliving_its_runtime_fails_then_lets_the_runtime_go() {
        let rt = crate::Builder::new().max_procs(1).build().unwrap();
        let (mut sock, mut reg) = rt
            .block_on(async {
                let mut sock = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
                let reg = Registration::new(&mut sock, mio::Interest::READABLE)?;
                io::Result::Ok((sock, reg))
            })
            .unwrap();
        let state = std::sync::Arc::downgrade(&reg.shared);
        drop(rt);
        let mut cx = Context::from_waker(Waker::noop());
        for dir in [Direction::Read, Direction::Write] {
            let Poll::Ready(Err(e)) = reg.poll_ready(&mut cx, dir) else { panic!("{dir:?} must fail at once") };
            assert_eq!(e.kind(), io::ErrorKind::Other);
            assert_eq!(e.to_string(), "goro: the runtime this socket was registered with has shut down");
        }
        assert_eq!(reg.shared.netpoll.waiters(), 0);
        reg.deregister(&mut sock).unwrap();
        drop(reg);
        assert!(state.upgrade().is_none(), "the runtime's state outlived its last registration");
    }
}
