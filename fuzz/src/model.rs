//! A sequential model of Go's channels, against which the fuzz targets (fuzz/src/lib.rs) and
//! the channel property tests (tests/extra/tests/chan_prop.rs, which include this file) check
//! goro's channels. Plain Rust, std only.
//!
//! The model holds channels (a FIFO buffer of `cap` values, a closed flag, FIFO queues of
//! parked receivers and senders) and waiters: parked receive futures, send futures and selects,
//! by id. An operation either completes at once or parks a waiter; a later operation may settle
//! a waiter, which records what its next poll must return (`Waiter::done`) and that it must
//! have been woken (`Waiter::must_wake`). The semantics are Go's:
//!
//! - values are FIFO; a receive takes from the buffer first, and a freed slot takes the value
//!   of the first parked sender; an unbuffered send completes only when a receiver takes it;
//! - a send on a closed channel returns its value; close settles every waiter, receivers first
//!   (they drain the buffer, then get `None`), then blocked senders (they get their value
//!   back), as Go's `closechan` releases readers before writers;
//! - a select parks on every channel of its cases, once per channel and direction; the first
//!   peer that takes one of them wins the select, and its other entries are unlinked.
//!
//! Cancellation, which Go has not, follows goro: a dropped parked future leaves its queues; a
//! receive that was handed a value and is then dropped gives the value back, to the next
//! parked receiver or to the front of the buffer, so a closed channel reads as drained only
//! when no such value is in flight. The unsent values of dropped send futures, and of select
//! cases that did not fire, are recorded in `Model::dropped`.

use std::collections::{BTreeMap, VecDeque};

/// One case of a select: the channel index (`None`: nil channel), and a send case's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Case {
    Recv(Option<usize>),
    Send(Option<usize>, u32),
}

/// What a select case produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SelOut {
    Recv(Option<u32>),
    Send(Result<(), u32>),
    Default,
}

/// One channel: its buffer, closed flag and queues of parked waiters.
#[derive(Debug)]
pub struct MChan {
    pub cap: usize,
    /// The buffered values, FIFO.
    pub buf: VecDeque<u32>,
    pub closed: bool,
    /// Waiter ids, FIFO.
    pub recvq: VecDeque<usize>,
    pub sendq: VecDeque<usize>,
}

/// What a waiter waits for: a receive, a send of a value, or a select.
#[derive(Debug, Clone)]
pub enum WKind {
    Recv(usize),
    Send(usize, u32),
    Sel(Vec<Case>),
}

/// What a settled waiter must return when polled.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    Recv(Option<u32>),
    Send(Result<(), u32>),
    /// One of `cands` (cases on the same channel) fired with `out`.
    Sel(Vec<usize>, SelOut),
}

/// A parked future, as the model sees it.
#[derive(Debug)]
pub struct Waiter {
    pub kind: WKind,
    /// Settled: what its next poll must return.
    pub done: Option<Expect>,
    /// Settled since the caller last cleared it: its waker must have been woken.
    pub must_wake: bool,
}

/// The outcome of a send that does not wait.
pub enum SendRes {
    Ok,
    Closed,
    Full,
}

/// The outcome of a receive that does not wait.
pub enum RecvRes {
    Val(u32),
    Closed,
    Empty,
}

/// The channels and the parked waiters.
#[derive(Debug)]
pub struct Model {
    pub chans: Vec<MChan>,
    /// Parked (or settled but not yet polled) waiters by id.
    pub waiters: BTreeMap<usize, Waiter>,
    /// The id the next waiter gets.
    pub next_waiter: usize,
    /// Values dropped unsent since the caller last took them.
    pub dropped: Vec<u32>,
}

impl Model {
    /// Open, empty channels of capacities `caps`, and no waiter.
    pub fn new(caps: &[usize]) -> Model {
        let chans = caps
            .iter()
            .map(|&cap| MChan {
                cap,
                buf: VecDeque::new(),
                closed: false,
                recvq: VecDeque::new(),
                sendq: VecDeque::new(),
            })
            .collect();
        Model { chans, waiters: BTreeMap::new(), next_waiter: 0, dropped: Vec::new() }
    }

    /// Settled waiter `w` returned its outcome (and is gone): what it no longer holds in
    /// flight may release the receivers of a closed channel.
    pub fn complete(&mut self, w: usize) -> Waiter {
        let wt = self.waiters.remove(&w).expect("a live waiter");
        self.release_all_drained();
        wt
    }

    pub fn unlink(&mut self, w: usize) {
        for c in &mut self.chans {
            c.recvq.retain(|&x| x != w);
            c.sendq.retain(|&x| x != w);
        }
    }

    fn settle(&mut self, w: usize, e: Expect) {
        self.unlink(w);
        let wt = self.waiters.get_mut(&w).unwrap();
        assert!(wt.done.is_none());
        wt.done = Some(e);
        wt.must_wake = true;
    }

    /// Hands `v` to the first receiver waiting on `ch`, if any.
    fn give_to_receiver(&mut self, ch: usize, v: u32) -> bool {
        let Some(w) = self.chans[ch].recvq.pop_front() else { return false };
        let e = match &self.waiters[&w].kind {
            WKind::Recv(_) => Expect::Recv(Some(v)),
            WKind::Sel(cases) => Expect::Sel(recv_cases_on(cases, ch), SelOut::Recv(Some(v))),
            WKind::Send(..) => unreachable!(),
        };
        self.settle(w, e);
        true
    }

    /// Takes the value of the first sender waiting on `ch`, if any.
    fn take_from_sender(&mut self, ch: usize) -> Option<u32> {
        let w = self.chans[ch].sendq.pop_front()?;
        let (v, e) = match &self.waiters[&w].kind {
            WKind::Send(_, v) => (*v, Expect::Send(Ok(()))),
            WKind::Sel(cases) => {
                let idx = send_cases_on(cases, ch);
                assert_eq!(idx.len(), 1, "harness: a parked select has one send case per channel");
                let Case::Send(_, v) = cases[idx[0]] else { unreachable!() };
                (v, Expect::Sel(idx, SelOut::Send(Ok(()))))
            }
            WKind::Recv(_) => unreachable!(),
        };
        self.settle(w, e);
        Some(v)
    }

    pub fn send(&mut self, ch: usize, v: u32) -> SendRes {
        if self.chans[ch].closed {
            return SendRes::Closed;
        }
        if self.give_to_receiver(ch, v) {
            return SendRes::Ok;
        }
        let c = &mut self.chans[ch];
        if c.buf.len() < c.cap {
            c.buf.push_back(v);
            return SendRes::Ok;
        }
        SendRes::Full
    }

    pub fn recv(&mut self, ch: usize) -> RecvRes {
        if let Some(v) = self.chans[ch].buf.pop_front() {
            if self.chans[ch].buf.len() < self.chans[ch].cap {
                if let Some(sv) = self.take_from_sender(ch) {
                    self.chans[ch].buf.push_back(sv);
                }
            }
            return RecvRes::Val(v);
        }
        if let Some(v) = self.take_from_sender(ch) {
            return RecvRes::Val(v);
        }
        // Closed and drained only when no value handed to a receive can still come back.
        if self.chans[ch].closed && self.inflight(ch) == 0 {
            return RecvRes::Closed;
        }
        RecvRes::Empty
    }

    /// Values handed to receives on `ch` (a receive future or a select's case) that have not
    /// returned them yet: a dropped one gives its value back.
    fn inflight(&self, ch: usize) -> usize {
        self.waiters
            .values()
            .filter(|wt| match (&wt.kind, &wt.done) {
                (WKind::Recv(c), Some(Expect::Recv(Some(_)))) => *c == ch,
                (WKind::Sel(cases), Some(Expect::Sel(cands, SelOut::Recv(Some(_))))) => {
                    cases[cands[0]] == Case::Recv(Some(ch))
                }
                _ => false,
            })
            .count()
    }

    /// Closed, empty and nothing in flight: the receivers still waiting get `None`.
    fn release_if_drained(&mut self, ch: usize) {
        if !self.chans[ch].closed || !self.chans[ch].buf.is_empty() || self.inflight(ch) != 0 {
            return;
        }
        while let Some(w) = self.chans[ch].recvq.pop_front() {
            let e = match &self.waiters[&w].kind {
                WKind::Recv(_) => Expect::Recv(None),
                WKind::Sel(cases) => Expect::Sel(recv_cases_on(cases, ch), SelOut::Recv(None)),
                WKind::Send(..) => unreachable!(),
            };
            self.settle(w, e);
        }
    }

    /// After a waiter returned or was dropped: release what its value kept waiting.
    pub fn release_all_drained(&mut self) {
        for ch in 0..self.chans.len() {
            self.release_if_drained(ch);
        }
    }

    pub fn close(&mut self, ch: usize) -> bool {
        if self.chans[ch].closed {
            return false;
        }
        self.chans[ch].closed = true;
        // Receivers first (goro releases recvq, unless a value is in flight, then sendq; a
        // select on both wins as a receiver).
        self.release_if_drained(ch);
        while let Some(w) = self.chans[ch].sendq.pop_front() {
            let e = match &self.waiters[&w].kind {
                WKind::Send(_, v) => Expect::Send(Err(*v)),
                WKind::Sel(cases) => {
                    let idx = send_cases_on(cases, ch);
                    let Case::Send(_, v) = cases[idx[0]] else { unreachable!() };
                    Expect::Sel(idx, SelOut::Send(Err(v)))
                }
                WKind::Recv(_) => unreachable!(),
            };
            self.settle(w, e);
        }
        true
    }

    /// A receive that was handed `v` is dropped: `v` goes to the next receiver or the front.
    pub fn give_back(&mut self, ch: usize, v: u32) {
        if !self.give_to_receiver(ch, v) {
            self.chans[ch].buf.push_front(v);
        }
    }

    pub fn recv_ready(&self, ch: usize) -> bool {
        let c = &self.chans[ch];
        !c.buf.is_empty() || !c.sendq.is_empty() || (c.closed && self.inflight(ch) == 0)
    }

    pub fn send_ready(&self, ch: usize) -> bool {
        let c = &self.chans[ch];
        c.closed || !c.recvq.is_empty() || c.buf.len() < c.cap
    }

    pub fn case_ready(&self, c: Case) -> bool {
        match c {
            Case::Recv(Some(ch)) => self.recv_ready(ch),
            Case::Send(Some(ch), _) => self.send_ready(ch),
            _ => false,
        }
    }

    pub fn new_waiter(&mut self, kind: WKind) -> usize {
        let w = self.next_waiter;
        self.next_waiter += 1;
        self.waiters.insert(w, Waiter { kind, done: None, must_wake: false });
        self.rearm(w);
        w
    }

    /// Queues waiter `w` on its channels (at the back).
    pub fn rearm(&mut self, w: usize) {
        let kind = self.waiters[&w].kind.clone();
        match &kind {
            WKind::Recv(ch) => self.chans[*ch].recvq.push_back(w),
            WKind::Send(ch, _) => self.chans[*ch].sendq.push_back(w),
            WKind::Sel(cases) => {
                for c in cases {
                    // One entry per channel and direction: a peer that takes one of the
                    // select's sudogs wins the select, and the others are skipped.
                    match *c {
                        Case::Recv(Some(ch)) if !self.chans[ch].recvq.contains(&w) => self.chans[ch].recvq.push_back(w),
                        Case::Send(Some(ch), _) if !self.chans[ch].sendq.contains(&w) => {
                            self.chans[ch].sendq.push_back(w)
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// The values of the send cases of `cases` other than `except`: dropped with the select.
    pub fn drop_send_values(&mut self, cases: &[Case], except: Option<usize>) {
        for (i, c) in cases.iter().enumerate() {
            if let Case::Send(_, v) = c {
                if Some(i) != except {
                    self.dropped.push(*v);
                }
            }
        }
    }

    /// A pending future is dropped.
    pub fn drop_waiter(&mut self, w: usize) {
        let wt = self.waiters.remove(&w).unwrap();
        self.unlink(w);
        match (wt.kind, wt.done) {
            (WKind::Recv(ch), Some(Expect::Recv(Some(v)))) => self.give_back(ch, v),
            (WKind::Recv(_), _) => {}
            (WKind::Send(_, v), None | Some(Expect::Send(Err(_)))) => self.dropped.push(v),
            (WKind::Send(..), _) => {}
            (WKind::Sel(cases), None) => self.drop_send_values(&cases, None),
            (WKind::Sel(cases), Some(Expect::Sel(cands, out))) => match out {
                SelOut::Recv(Some(v)) => {
                    let Case::Recv(Some(ch)) = cases[cands[0]] else { unreachable!() };
                    self.drop_send_values(&cases, None);
                    self.give_back(ch, v);
                }
                SelOut::Send(Ok(())) => self.drop_send_values(&cases, Some(cands[0])),
                _ => self.drop_send_values(&cases, None),
            },
            (k, d) => unreachable!("{k:?} {d:?}"),
        }
    }
}

fn recv_cases_on(cases: &[Case], ch: usize) -> Vec<usize> {
    (0..cases.len()).filter(|&i| cases[i] == Case::Recv(Some(ch))).collect()
}

fn send_cases_on(cases: &[Case], ch: usize) -> Vec<usize> {
    (0..cases.len()).filter(|&i| matches!(cases[i], Case::Send(Some(c), _) if c == ch)).collect()
}
