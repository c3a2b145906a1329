//! Models of the netpoller's readiness protocol against its shutdown: a task waiting on a
//! registration of a runtime that shuts down is woken and then fails, whatever the order of
//! its registration, its readiness checks, its waker's registration and the shutdown. A lost
//! wake-up shows as a task that returned `Pending` and was never woken.
//!
//! [`Netpoll::poll_ready`] looks at the bits, registers the waker under the `waiters` lock,
//! and looks again; [`Netpoll::shutdown`] takes the set of registrations, sets each one's
//! `SHUTDOWN` bit, then takes its wakers under that lock. (Event delivery takes the same shape
//! and is modelled beside it.)

use super::g::Flag;
use super::model;
use crate::netpoll::{Gone, Netpoll, ScheduledIo, READABLE, READ_CLOSED};
use loom::sync::Arc;
use loom::thread;
use std::sync::Arc as StdArc;
use std::task::Poll;

const READ: usize = 0;
const READ_MASK: usize = READABLE | READ_CLOSED;

/// What one task saw: refused at registration, or the first poll's result and its waker flag.
enum Seen {
    Refused,
    Polled(Poll<Result<(usize, usize), Gone>>, StdArc<Flag>, StdArc<ScheduledIo>),
}

/// Registers a source and polls it for reading once, as `Registration::new` then
/// `Registration::poll_ready` do.
fn register_and_poll(np: &Netpoll) -> Seen {
    let io = StdArc::new(ScheduledIo::new());
    if np.add(&io).is_err() {
        return Seen::Refused;
    }
    let (flag, waker) = Flag::new();
    let r = np.poll_ready(&io, READ, READ_MASK, &waker);
    Seen::Polled(r, flag, io)
}

/// After the shutdown: the task that polled was woken if it waits, fails on its next poll, and
/// nothing is left counted or registered.
fn check_after_shutdown(np: &Netpoll, seen: Seen) {
    if let Seen::Polled(first, flag, io) = seen {
        match first {
            Poll::Pending => assert!(flag.woken(), "a waiting task was not woken by the shutdown"),
            Poll::Ready(Err(Gone)) => {}
            Poll::Ready(Ok(_)) => panic!("no event was delivered"),
        }
        let (_, w) = Flag::new();
        assert!(matches!(np.poll_ready(&io, READ, READ_MASK, &w), Poll::Ready(Err(Gone))));
        assert_eq!(io.take_wakers(&mut Vec::new()), 0, "a waker was left in a dead registration");
    }
    assert_eq!(np.waiters(), 0, "the waiter count leaked");
}

/// A thread that delivers a readable event to `io` as `Netpoll::poll` does: `deliver`, then
/// the count of the wakers it took, then their wakes.
fn deliver_readable(np: &Arc<Netpoll>, io: &StdArc<ScheduledIo>) -> thread::JoinHandle<()> {
    let (np, io) = (np.clone(), io.clone());
    thread::spawn(move || {
        let mut out = Vec::new();
        let n = io.deliver(READABLE, &mut out);
        np.sub_waiters(n);
        out.into_iter().for_each(std::task::Waker::wake);
    })
}

/// A task registering and polling a source, racing the shutdown: refused, failed at once, or
/// woken. Covers the shutdown between the task's first look and its waker's registration, and
/// between the registration and the second look.
#[test]
fn loom_netpoll_poll_ready_vs_shutdown() {
    model(|| {
        let np = Arc::new(Netpoll::new().unwrap());
        let t = {
            let np = np.clone();
            thread::spawn(move || np.shutdown())
        };
        let seen = register_and_poll(&np);
        t.join().unwrap();
        check_after_shutdown(&np, seen);
    });
}

/// A task that registered before the shutdown polls it, racing both an event and the
/// shutdown: it ends ready or failed, never waiting unwoken.
#[test]
fn loom_netpoll_poll_ready_vs_event_vs_shutdown() {
    model(|| {
        let np = Arc::new(Netpoll::new().unwrap());
        let io = StdArc::new(ScheduledIo::new());
        np.add(&io).unwrap();
        let events = deliver_readable(&np, &io);
        let shutdown = {
            let np = np.clone();
            thread::spawn(move || np.shutdown())
        };
        let (flag, waker) = Flag::new();
        let first = np.poll_ready(&io, READ, READ_MASK, &waker);
        events.join().unwrap();
        shutdown.join().unwrap();
        if first.is_pending() {
            assert!(flag.woken(), "a waiting task was not woken");
        }
        let (_, w) = Flag::new();
        assert!(matches!(np.poll_ready(&io, READ, READ_MASK, &w), Poll::Ready(Err(Gone))));
        assert_eq!(np.waiters(), 0, "the waiter count leaked");
    });
}

/// sysmon's poll of a stale poller (`poll_if_stale`) against an M claiming the poller to sleep
/// in it: while the claim holds, no second M may claim (only one M sleeps in the poller, and
/// only one sits in the seat `startm` hands Ps from). sysmon stored its clock in `lastpoll`
/// after its poll, over a claim made meanwhile, and a second M then claimed too: in a TCP
/// ping-pong the first M came back from the poller to find another in its seat, and no P
/// (`goro: taken from the netpoller without a P`).
#[test]
fn loom_netpoll_stale_poll_keeps_a_claim() {
    model(|| {
        let np = Arc::new(Netpoll::new().unwrap());
        // A G waits on I/O, so sysmon polls a stale poller.
        let seen = register_and_poll(&np);
        let sysmon = {
            let np = np.clone();
            thread::spawn(move || np.poll_if_stale(0, || 10, &mut Vec::new()))
        };
        if np.claim_block(0).is_ok() {
            assert!(np.claim_block(0).is_err(), "two Ms hold the poller");
            np.end_block(20);
        }
        sysmon.join().unwrap();
        drop(seen);
    });
}

/// A task polls a source for reading while the poller delivers a readable event to it (as
/// `Netpoll::poll` does: `deliver`, then the count of the wakers it took): whether the task
/// saw the event on its first look, on its second look after registering its waker, or
/// waits and is woken, no waiter is left counted and no waker left in the slot afterwards
/// (`io_waiters` counts Gs that wait, as Go's `netpollWaiters` does).
#[test]
fn loom_netpoll_poll_ready_vs_event() {
    model(|| {
        let np = Arc::new(Netpoll::new().unwrap());
        let io = StdArc::new(ScheduledIo::new());
        np.add(&io).unwrap();
        let poller = deliver_readable(&np, &io);
        let (flag, waker) = Flag::new();
        let first = np.poll_ready(&io, READ, READ_MASK, &waker);
        poller.join().unwrap();
        match first {
            Poll::Ready(Ok((bits, _))) => assert_eq!(bits, READABLE),
            Poll::Pending => assert!(flag.woken(), "a waiting task was not woken by the event"),
            Poll::Ready(Err(Gone)) => panic!("no shutdown happened"),
        }
        assert_eq!(np.waiters(), 0, "a task that does not wait is counted as waiting");
        assert_eq!(io.take_wakers(&mut Vec::new()), 0, "a waker was left in the slot");
    });
}
