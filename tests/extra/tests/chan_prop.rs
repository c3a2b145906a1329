//! Property tests of the channels.
//!
//! 1. Random sequences of non-blocking operations (`try_send`, `try_recv`, `close`, a
//!    non-blocking `select!`) and of hand-polled `send`/`recv` futures (parked, polled again,
//!    dropped: cancellation) on 1-3 channels with capacities 0..4, against the sequential
//!    model of Go's channels the fuzz targets use (fuzz/src/model.rs): a FIFO buffer per
//!    channel, FIFO queues of waiting receivers and senders, a closed flag.
//!    After each step `len`/`is_closed` must agree, and every future the model says was
//!    completed must have been woken.
//! 2. Random interleavings of blocking operations from several threads (3 senders, 2
//!    receivers, random capacity and counts, each operation randomly blocking, try-and-spin or
//!    a select) preserve the multiset of values.

#[path = "../../common/mod.rs"]
mod common;
// The model the fuzz targets check the channels against (their select waiters and record of
// dropped values are not used here).
#[path = "../../../fuzz/src/model.rs"]
#[allow(dead_code)]
mod model;

use common::chan::*;
use goro::chan::futures::{Recv, Send};
use goro::chan::{Receiver, SendError, Sender, TryRecvError, TrySendError};
use model::{Expect, Model, RecvRes, SendRes, WKind};
use proptest::prelude::*;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, Waker};

// ---------------------------------------------------------------------------------------------
// 1. Against the sequential model
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    TrySend(usize),
    TryRecv(usize),
    Close(usize),
    /// Polls a new `recv()` future once; if it waits, it is kept.
    ParkRecv(usize),
    /// Polls a new `send()` future once; if it waits, it is kept.
    ParkSend(usize),
    /// Polls the kept future number `i % len` again.
    PollParked(usize),
    /// Drops the kept future number `i % len` (cancellation).
    DropParked(usize),
    /// `select! { recv(a), send(b, v), default }`.
    Select(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize).prop_map(Op::TrySend),
        4 => (0..3usize).prop_map(Op::TryRecv),
        1 => (0..3usize).prop_map(Op::Close),
        3 => (0..3usize).prop_map(Op::ParkRecv),
        3 => (0..3usize).prop_map(Op::ParkSend),
        3 => (0..8usize).prop_map(Op::PollParked),
        2 => (0..8usize).prop_map(Op::DropParked),
        2 => (0..3usize, 0..3usize).prop_map(|(a, b)| Op::Select(a, b)),
    ]
}

enum RealFut<'a> {
    Recv(Pin<Box<Recv<'a, u32>>>),
    Send(Pin<Box<Send<'a, u32>>>),
}

enum Out {
    Recv(Option<u32>),
    Send(Result<(), SendError<u32>>),
}

impl RealFut<'_> {
    fn poll(&mut self, w: &Waker) -> Poll<Out> {
        match self {
            RealFut::Recv(f) => poll_with(f.as_mut(), w).map(Out::Recv),
            RealFut::Send(f) => poll_with(f.as_mut(), w).map(Out::Send),
        }
    }
}

/// What a completed future returned, in the model's terms.
fn outcome(out: Out) -> Expect {
    match out {
        Out::Recv(v) => Expect::Recv(v),
        Out::Send(r) => Expect::Send(r.map_err(|e| e.0)),
    }
}

/// `Model::send` as `try_send` reports it.
fn try_send(m: &mut Model, c: usize, v: u32) -> Result<(), TrySendError<u32>> {
    match m.send(c, v) {
        SendRes::Ok => Ok(()),
        SendRes::Closed => Err(TrySendError::Closed(v)),
        SendRes::Full => Err(TrySendError::Full(v)),
    }
}

/// `Model::recv` as `try_recv` reports it.
fn try_recv(m: &mut Model, c: usize) -> Result<u32, TryRecvError> {
    match m.recv(c) {
        RecvRes::Val(v) => Ok(v),
        RecvRes::Closed => Err(TryRecvError::Closed),
        RecvRes::Empty => Err(TryRecvError::Empty),
    }
}

fn run_model(caps: Vec<usize>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let chans: Vec<(Sender<u32>, Receiver<u32>)> = caps.iter().map(|&c| goro::chan(c)).collect();
    let n = chans.len();
    let mut m = Model::new(&caps);
    // Kept futures: (model id, future, waker, wake counter).
    let mut kept: Vec<(usize, RealFut<'_>, Waker, Arc<CountWake>)> = Vec::new();
    let mut next_value = 0u32;
    let mut fresh = || {
        next_value += 1;
        next_value
    };

    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::TrySend(c) => {
                let c = c % n;
                let v = fresh();
                let got = chans[c].0.try_send(v);
                let want = try_send(&mut m, c, v);
                prop_assert_eq!(got, want, "step {}: try_send on {}", step, c);
            }
            Op::TryRecv(c) => {
                let c = c % n;
                prop_assert_eq!(chans[c].1.try_recv(), try_recv(&mut m, c), "step {}: try_recv on {}", step, c);
            }
            Op::Close(c) => {
                let c = c % n;
                prop_assert_eq!(chans[c].0.close(), m.close(c), "step {}: close {}", step, c);
            }
            Op::ParkRecv(c) => {
                let c = c % n;
                let (w, count) = counting_waker();
                let mut f = RealFut::Recv(Box::pin(chans[c].1.recv()));
                let got = f.poll(&w);
                match try_recv(&mut m, c) {
                    Ok(v) => prop_assert!(matches!(got, Poll::Ready(Out::Recv(Some(x))) if x == v), "step {}", step),
                    Err(TryRecvError::Closed) => {
                        prop_assert!(matches!(got, Poll::Ready(Out::Recv(None))), "step {}", step)
                    }
                    Err(TryRecvError::Empty) => {
                        prop_assert!(got.is_pending(), "step {}: recv on {} should wait", step, c);
                        let id = m.new_waiter(WKind::Recv(c));
                        kept.push((id, f, w, count));
                    }
                }
            }
            Op::ParkSend(c) => {
                let c = c % n;
                let v = fresh();
                let (w, count) = counting_waker();
                let mut f = RealFut::Send(Box::pin(chans[c].0.send(v)));
                let got = f.poll(&w);
                match try_send(&mut m, c, v) {
                    Ok(()) => prop_assert!(matches!(got, Poll::Ready(Out::Send(Ok(())))), "step {}", step),
                    Err(TrySendError::Closed(v)) => {
                        prop_assert!(
                            matches!(got, Poll::Ready(Out::Send(Err(SendError(x)))) if x == v),
                            "step {}",
                            step
                        )
                    }
                    Err(TrySendError::Full(v)) => {
                        prop_assert!(got.is_pending(), "step {}: send on {} should wait", step, c);
                        let id = m.new_waiter(WKind::Send(c, v));
                        kept.push((id, f, w, count));
                    }
                }
            }
            Op::PollParked(i) => {
                if kept.is_empty() {
                    continue;
                }
                let i = i % kept.len();
                let (id, f, w, _) = &mut kept[i];
                match (f.poll(w), m.waiters[id].done.clone()) {
                    (Poll::Pending, None) => {}
                    (Poll::Ready(out), Some(want)) => {
                        prop_assert_eq!(outcome(out), want, "step {}: future {}", step, id);
                        m.complete(*id);
                        kept.remove(i);
                    }
                    (got, want) => {
                        prop_assert!(
                            false,
                            "step {}: future {}: pending {} but model says {:?}",
                            step,
                            id,
                            got.is_pending(),
                            want
                        )
                    }
                }
            }
            Op::DropParked(i) => {
                if kept.is_empty() {
                    continue;
                }
                let i = i % kept.len();
                let (id, f, _, _) = kept.remove(i);
                drop(f);
                m.drop_waiter(id);
            }
            Op::Select(a, b) => {
                let (a, b) = (a % n, b % n);
                let v = fresh();
                let (ra, sb) = (m.recv_ready(a), m.send_ready(b));
                let fired = goro::select_blocking! {
                    recv(chans[a].1) -> got => Some(Ok(got)),
                    send(chans[b].0, v) -> r => Some(Err(r)),
                    default => None,
                };
                match fired {
                    None => prop_assert!(!ra && !sb, "step {}: default taken but recv {} send {} ready", step, ra, sb),
                    Some(Ok(got)) => {
                        prop_assert!(ra, "step {}: the recv case fired but was not ready", step);
                        let want = match try_recv(&mut m, a) {
                            Ok(v) => Some(v),
                            Err(TryRecvError::Closed) => None,
                            Err(TryRecvError::Empty) => unreachable!(),
                        };
                        prop_assert_eq!(got, want, "step {}", step);
                    }
                    Some(Err(r)) => {
                        prop_assert!(sb, "step {}: the send case fired but was not ready", step);
                        let want = match try_send(&mut m, b, v) {
                            Ok(()) => Ok(()),
                            Err(TrySendError::Closed(v)) => Err(SendError(v)),
                            Err(TrySendError::Full(_)) => unreachable!(),
                        };
                        prop_assert_eq!(r, want, "step {}", step);
                    }
                }
            }
        }
        // After every step: the observable state agrees, and every future the model says was
        // completed has been woken.
        for (c, (tx, rx)) in chans.iter().enumerate() {
            prop_assert_eq!(tx.len(), m.chans[c].buf.len(), "step {}: len of {}", step, c);
            prop_assert_eq!(rx.is_closed(), m.chans[c].closed, "step {}: is_closed of {}", step, c);
            prop_assert_eq!(tx.is_closed(), m.chans[c].closed, "step {}: tx.is_closed of {}", step, c);
            prop_assert_eq!(tx.capacity(), m.chans[c].cap);
        }
        for (id, _, _, count) in &kept {
            if let Some(done) = &m.waiters[id].done {
                prop_assert!(
                    count.count() > 0,
                    "step {}: future {} is done ({:?}) but was never woken",
                    step,
                    id,
                    done
                );
            }
        }
    }

    // Drop the kept futures in order, then close and drain everything: the model agrees to the
    // end.
    while !kept.is_empty() {
        let (id, f, _, _) = kept.remove(0);
        drop(f);
        m.drop_waiter(id);
    }
    for (c, (tx, rx)) in chans.iter().enumerate() {
        prop_assert_eq!(tx.close(), m.close(c));
        loop {
            let want = try_recv(&mut m, c);
            prop_assert_eq!(rx.try_recv(), want, "final drain of {}", c);
            if want.is_err() {
                break;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn ops_match_the_sequential_model(
        caps in prop::collection::vec(0..4usize, 1..=3),
        ops in prop::collection::vec(op(), 1..80),
    ) {
        run_model(caps, ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Concurrent blocking operations preserve the multiset
// ---------------------------------------------------------------------------------------------

/// How one operation is done.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Blocking,
    /// try_* in a loop, yielding the thread between attempts, then blocking (two spinning
    /// sides of an unbuffered channel never meet: a rendezvous needs one side to wait).
    Spin,
    /// select_blocking! with a second, nil or never-ready case.
    Select,
}

const SPINS: usize = 50;

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Blocking), Just(Mode::Spin), Just(Mode::Select)]
}

fn send_one(tx: &Sender<u64>, never: &Receiver<u64>, v: u64, mode: Mode) {
    match mode {
        Mode::Blocking => tx.send_blocking(v).unwrap(),
        Mode::Spin => {
            let mut v = v;
            for _ in 0..SPINS {
                match tx.try_send(v) {
                    Ok(()) => return,
                    Err(TrySendError::Full(back)) => {
                        v = back;
                        std::thread::yield_now();
                    }
                    Err(TrySendError::Closed(_)) => panic!("closed while sending"),
                }
            }
            tx.send_blocking(v).unwrap()
        }
        Mode::Select => goro::select_blocking! {
            send(tx, v) -> r => r.unwrap(),
            recv(never) -> _ => panic!("the never channel fired"),
        },
    }
}

/// One receive; `None` once the channel is closed and drained.
fn recv_one(rx: &Receiver<u64>, mode: Mode) -> Option<u64> {
    match mode {
        Mode::Blocking => rx.recv_blocking(),
        Mode::Spin => {
            for _ in 0..SPINS {
                match rx.try_recv() {
                    Ok(v) => return Some(v),
                    Err(TryRecvError::Closed) => return None,
                    Err(TryRecvError::Empty) => std::thread::yield_now(),
                }
            }
            rx.recv_blocking()
        }
        Mode::Select => goro::select_blocking! {
            recv(None::<&Receiver<u64>>) -> _ => panic!("a nil channel fired"),
            recv(rx) -> v => v,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn concurrent_blocking_ops_preserve_the_multiset(
        cap in 0..4usize,
        counts in prop::collection::vec(0..2000u64, 3),
        send_modes in prop::collection::vec(mode(), 1..16),
        recv_modes in prop::collection::vec(mode(), 1..16),
    ) {
        let _w = watchdog("concurrent_blocking_ops_preserve_the_multiset");
        let (tx, rx) = goro::chan::<u64>(cap);
        let (_never_tx, never_rx) = goro::chan::<u64>(0);
        let total: u64 = counts.iter().sum();
        let got: Vec<u64> = std::thread::scope(|s| {
            let mut base = 0;
            for &count in &counts {
                let (tx, never, modes) = (tx.clone(), &never_rx, &send_modes);
                s.spawn(move || {
                    for (k, v) in (base..base + count).enumerate() {
                        send_one(&tx, never, v, modes[k % modes.len()]);
                    }
                });
                base += count;
            }
            drop(tx);
            let receivers: Vec<_> = (0..2)
                .map(|r| {
                    let (rx, modes) = (rx.clone(), &recv_modes);
                    s.spawn(move || {
                        let mut got = Vec::new();
                        let mut k = r;
                        while let Some(v) = recv_one(&rx, modes[k % modes.len()]) {
                            got.push(v);
                            k += 1;
                        }
                        got
                    })
                })
                .collect();
            receivers.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        if total > 0 {
            assert_exactly_once(got, total);
        } else {
            prop_assert!(got.is_empty());
        }
    }
}
