//! The harness shared by the channel targets (`chan_ops`, `select`).
//!
//! A byte string is decoded into operations on a few channels: `try_send`, `try_recv`,
//! `close`, send and receive futures, and selects (the dynamic `Select` and the `select!`
//! macro, with and without `default`, nil cases, the same channel in several cases). Futures
//! are driven by hand on this one thread: each is polled once when it is made, then kept as a
//! pending "actor" that a later operation polls again or drops. Every waker is a flag, so the
//! run is reproducible (except for the select's random choice among ready cases, which the
//! model accepts whichever it is) and the harness can check who was woken.
//!
//! After every operation the real channels are compared with the sequential model of Go's
//! channel semantics in [`model`] (shared with the channel property tests): the outcome of
//! every operation and poll, who was woken, lengths and closed flags. Values are `Val`s whose
//! `Drop` is recorded, so the harness also checks that exactly the values the model says are
//! dropped (unsent values of dropped send futures and of select cases that did not fire) are
//! dropped, and at the end that every value made is accounted for exactly once.

mod model;

use goro::chan::{Receiver, RecvToken, Select, SendToken, Sender, TryRecvError, TrySendError};
use model::{Case, Expect, Model, RecvRes, SelOut, SendRes, WKind};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

thread_local! {
    static DROPPED: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// A channel element whose drop is recorded.
#[derive(Debug)]
pub struct Val(u32);

impl Val {
    /// The value's id, without recording a drop (the harness took it).
    fn into_id(self) -> u32 {
        let id = self.0;
        std::mem::forget(self);
        id
    }
}

impl Drop for Val {
    fn drop(&mut self) {
        DROPPED.with(|d| d.borrow_mut().push(self.0));
    }
}

fn take_dropped() -> Vec<u32> {
    DROPPED.with(|d| std::mem::take(&mut *d.borrow_mut()))
}

/// A waker that records that it was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, SeqCst);
    }
}

/// The output of a pending future.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Out {
    Recv(Option<u32>),
    Send(Result<(), u32>),
    Sel(Option<usize>, SelOut),
}

// ---------------------------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------------------------

/// How the targets weigh the operations.
#[derive(Clone, Copy, PartialEq)]
pub enum Profile {
    /// Everything, selects of up to 3 cases.
    ChanOps,
    /// Mostly selects, up to 6 cases, duplicates and nil channels.
    Select,
}

#[derive(Debug)]
enum Op {
    TrySend(usize),
    TryRecv(usize),
    Close(usize),
    Send(usize),
    Recv(usize),
    /// A receive through `Stream::poll_next` of a fresh `Receiver` clone; dropping the pending
    /// future drops the clone, whose `Drop` cancels the stream's parked receive.
    StreamRecv(usize),
    Select {
        cases: Vec<Case>,
        default: bool,
        macro_form: bool,
    },
    Poll(usize),
    Drop(usize),
    /// Drop the `Wait` of a pending dynamic select and wait again on the same `Select`.
    Rewait(usize),
    PollAll,
}

struct Bytes<'d>(&'d [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn byte(&mut self) -> u8 {
        self.next().unwrap_or(0)
    }
}

/// Pending futures at most (more would only make the inputs longer).
const MAX_PENDING: usize = 8;

struct Pending<'a> {
    w: usize,
    fut: Pin<Box<dyn Future<Output = Out> + 'a>>,
    /// For a dynamic select: set it and poll to drop the `Wait` and wait on the same `Select`
    /// again.
    rewait: Option<Rc<Cell<bool>>>,
    flag: Arc<Flag>,
    waker: Waker,
}

impl Pending<'_> {
    fn poll(&mut self) -> Poll<Out> {
        self.flag.0.store(false, SeqCst);
        self.fut.as_mut().poll(&mut Context::from_waker(&self.waker))
    }
}

struct Harness<'a> {
    txs: &'a [Sender<Val>],
    rxs: &'a [Receiver<Val>],
    model: Model,
    pending: Vec<Pending<'a>>,
    next_val: u32,
    /// Values the harness got back (received, or returned by a failed send).
    taken: Vec<u32>,
    /// The re-wait switch of the dynamic select `select_future` just made.
    rewait: Option<Rc<Cell<bool>>>,
    /// Values dropped unsent, as checked so far.
    dropped_all: Vec<u32>,
    trace: Vec<String>,
}

macro_rules! check {
    ($h:expr, $cond:expr, $($msg:tt)*) => {
        if !$cond {
            $h.fail(format!($($msg)*));
        }
    };
}

impl<'a> Harness<'a> {
    fn fail(&self, msg: String) -> ! {
        let start = self.trace.len().saturating_sub(40);
        panic!("{msg}\n--- last ops:\n{}\n--- model: {:#?}", self.trace[start..].join("\n"), self.model.chans);
    }

    fn val(&mut self) -> u32 {
        self.next_val += 1;
        self.next_val
    }

    fn push_pending(&mut self, w: usize, fut: Pin<Box<dyn Future<Output = Out> + 'a>>) -> Poll<Out> {
        let rewait = self.rewait.take();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut p = Pending { w, fut, rewait, flag, waker };
        let r = p.poll();
        if r.is_pending() {
            self.pending.push(p);
        }
        r
    }

    fn took(&mut self, out: Out) {
        match out {
            Out::Recv(Some(v)) | Out::Send(Err(v)) => self.taken.push(v),
            Out::Sel(_, SelOut::Recv(Some(v)) | SelOut::Send(Err(v))) => self.taken.push(v),
            _ => {}
        }
    }

    fn select_future(
        &mut self,
        cases: &[Case],
        default: bool,
        macro_form: bool,
    ) -> Pin<Box<dyn Future<Output = Out> + 'a>> {
        let (txs, rxs) = (self.txs, self.rxs);
        if macro_form {
            // Four fixed slots: recv, send, recv, send.
            let Case::Recv(r0) = cases[0] else { unreachable!() };
            let Case::Send(s1, v1) = cases[1] else { unreachable!() };
            let Case::Recv(r2) = cases[2] else { unreachable!() };
            let Case::Send(s3, v3) = cases[3] else { unreachable!() };
            let (r0, r2) = (r0.map(|i| &rxs[i]), r2.map(|i| &rxs[i]));
            let (s1, s3) = (s1.map(|i| &txs[i]), s3.map(|i| &txs[i]));
            let (v1, v3) = (Val(v1), Val(v3));
            if default {
                Box::pin(async move {
                    goro::select! {
                        recv(r0) -> v => Out::Sel(Some(0), SelOut::Recv(v.map(Val::into_id))),
                        send(s1, v1) -> r => Out::Sel(Some(1), SelOut::Send(r.map_err(|e| e.0.into_id()))),
                        recv(r2) -> v => Out::Sel(Some(2), SelOut::Recv(v.map(Val::into_id))),
                        send(s3, v3) -> r => Out::Sel(Some(3), SelOut::Send(r.map_err(|e| e.0.into_id()))),
                        default => Out::Sel(None, SelOut::Default),
                    }
                })
            } else {
                Box::pin(async move {
                    goro::select! {
                        recv(r0) -> v => Out::Sel(Some(0), SelOut::Recv(v.map(Val::into_id))),
                        send(s1, v1) -> r => Out::Sel(Some(1), SelOut::Send(r.map_err(|e| e.0.into_id()))),
                        recv(r2) -> v => Out::Sel(Some(2), SelOut::Recv(v.map(Val::into_id))),
                        send(s3, v3) -> r => Out::Sel(Some(3), SelOut::Send(r.map_err(|e| e.0.into_id()))),
                    }
                })
            }
        } else {
            let cases = cases.to_vec();
            let rewait = Rc::new(Cell::new(false));
            self.rewait = Some(rewait.clone());
            Box::pin(async move {
                enum Tok {
                    R(RecvToken<Val>),
                    S(SendToken<Val>),
                }
                let mut sel = Select::new();
                let toks: Vec<Tok> = cases
                    .iter()
                    .map(|c| match *c {
                        Case::Recv(ch) => Tok::R(sel.recv(ch.map(|i| &rxs[i]))),
                        Case::Send(ch, v) => Tok::S(sel.send(ch.map(|i| &txs[i]), Val(v))),
                    })
                    .collect();
                if default {
                    sel.default();
                }
                let fired = loop {
                    // Dropping a `Wait` cancels it; the `Select` may then be waited on again.
                    let mut wait = std::pin::pin!(sel.wait());
                    let r = std::future::poll_fn(|cx| {
                        if rewait.replace(false) {
                            return Poll::Ready(None);
                        }
                        wait.as_mut().poll(cx).map(Some)
                    })
                    .await;
                    if let Some(f) = r {
                        break f;
                    }
                };
                match fired {
                    None => Out::Sel(None, SelOut::Default),
                    Some(i) => match toks[i] {
                        Tok::R(t) => Out::Sel(Some(i), SelOut::Recv(sel.recv_result(t).map(Val::into_id))),
                        Tok::S(t) => Out::Sel(Some(i), SelOut::Send(sel.send_result(t).map_err(|e| e.0.into_id()))),
                    },
                }
            })
        }
    }

    /// A select fired case `i` with `out` right away: it must have been ready, with that outcome.
    fn check_fired(&mut self, cases: &[Case], i: usize, out: SelOut) {
        check!(self, i < cases.len(), "select fired case {i} of {}", cases.len());
        check!(self, self.model.case_ready(cases[i]), "select fired case {i} {:?}, which was not ready", cases[i]);
        let want = match cases[i] {
            Case::Recv(Some(ch)) => match self.model.recv(ch) {
                RecvRes::Val(v) => SelOut::Recv(Some(v)),
                RecvRes::Closed => SelOut::Recv(None),
                RecvRes::Empty => unreachable!(),
            },
            Case::Send(Some(ch), v) => match self.model.send(ch, v) {
                SendRes::Ok => SelOut::Send(Ok(())),
                SendRes::Closed => SelOut::Send(Err(v)),
                SendRes::Full => unreachable!(),
            },
            _ => unreachable!(),
        };
        check!(self, out == want, "select case {i} {:?}: got {out:?}, want {want:?}", cases[i]);
        let except = match out {
            SelOut::Send(Ok(())) | SelOut::Send(Err(_)) => Some(i),
            _ => None,
        };
        self.model.drop_send_values(cases, except);
    }

    /// Pending future `idx` was polled with result `r`; checks it against the model.
    fn check_poll(&mut self, idx: usize, r: Poll<Out>) {
        let w = self.pending[idx].w;
        let done = self.model.waiters[&w].done.clone();
        match (r, done) {
            (Poll::Pending, None) => {}
            (Poll::Pending, Some(e)) => self.fail(format!("waiter {w} is pending, model says it is done: {e:?}")),
            (Poll::Ready(out), None) => self.fail(format!("waiter {w} is ready with {out:?}, model says pending")),
            (Poll::Ready(out), Some(e)) => {
                let ok = match (&e, out) {
                    (Expect::Recv(a), Out::Recv(b)) => *a == b,
                    (Expect::Send(a), Out::Send(b)) => *a == b,
                    (Expect::Sel(cands, a), Out::Sel(Some(i), b)) => cands.contains(&i) && *a == b,
                    _ => false,
                };
                check!(self, ok, "waiter {w}: got {out:?}, model expects {e:?}");
                let wt = self.model.complete(w);
                if let (WKind::Sel(cases), Out::Sel(Some(i), b)) = (&wt.kind, out) {
                    let except = matches!(b, SelOut::Send(_)).then_some(i);
                    self.model.drop_send_values(cases, except);
                }
                self.pending.remove(idx);
                self.took(out);
            }
        }
    }

    fn step(&mut self, op: Op) {
        self.trace.push(format!("{op:?}"));
        match op {
            Op::TrySend(ch) => {
                let v = self.val();
                let got = self.txs[ch].try_send(Val(v));
                let want = self.model.send(ch, v);
                match (got, want) {
                    (Ok(()), SendRes::Ok) => {}
                    (Err(TrySendError::Full(x)), SendRes::Full) if x.0 == v => self.model.dropped.push(v),
                    (Err(TrySendError::Closed(x)), SendRes::Closed) if x.0 == v => self.taken.push(x.into_id()),
                    (got, _) => self.fail(format!("try_send({ch}, {v}) = {got:?}, model disagrees")),
                }
            }
            Op::TryRecv(ch) => {
                let got = self.rxs[ch].try_recv().map(Val::into_id);
                let want = match self.model.recv(ch) {
                    RecvRes::Val(v) => Ok(v),
                    RecvRes::Closed => Err(TryRecvError::Closed),
                    RecvRes::Empty => Err(TryRecvError::Empty),
                };
                check!(self, got == want, "try_recv({ch}) = {got:?}, model {want:?}");
                if let Ok(v) = got {
                    self.taken.push(v);
                }
            }
            Op::Close(ch) => {
                let got = self.txs[ch].close();
                let want = self.model.close(ch);
                check!(self, got == want, "close({ch}) = {got}, model {want}");
            }
            Op::Send(ch) => {
                if self.pending.len() >= MAX_PENDING {
                    return;
                }
                let v = self.val();
                let tx = &self.txs[ch];
                let fut = Box::pin(async move { Out::Send(tx.send(Val(v)).await.map_err(|e| e.0.into_id())) });
                let w = self.model.next_waiter;
                let r = self.push_pending(w, fut);
                let want = match self.model.send(ch, v) {
                    SendRes::Ok => Some(Out::Send(Ok(()))),
                    SendRes::Closed => Some(Out::Send(Err(v))),
                    SendRes::Full => None,
                };
                match (r, want) {
                    (Poll::Pending, None) => {
                        self.model.new_waiter(WKind::Send(ch, v));
                    }
                    (Poll::Ready(a), Some(b)) if a == b => self.took(a),
                    (r, want) => self.fail(format!("send({ch}, {v}) first poll = {r:?}, model {want:?}")),
                }
            }
            Op::Recv(ch) | Op::StreamRecv(ch) => {
                if self.pending.len() >= MAX_PENDING {
                    return;
                }
                let rx = &self.rxs[ch];
                let fut: Pin<Box<dyn Future<Output = Out> + 'a>> = if matches!(op, Op::Recv(_)) {
                    Box::pin(async move { Out::Recv(rx.recv().await.map(Val::into_id)) })
                } else {
                    let mut clone = rx.clone();
                    Box::pin(async move {
                        let v =
                            std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut clone), cx)).await;
                        Out::Recv(v.map(Val::into_id))
                    })
                };
                let w = self.model.next_waiter;
                let r = self.push_pending(w, fut);
                let want = match self.model.recv(ch) {
                    RecvRes::Val(v) => Some(Out::Recv(Some(v))),
                    RecvRes::Closed => Some(Out::Recv(None)),
                    RecvRes::Empty => None,
                };
                match (r, want) {
                    (Poll::Pending, None) => {
                        self.model.new_waiter(WKind::Recv(ch));
                    }
                    (Poll::Ready(a), Some(b)) if a == b => self.took(a),
                    (r, want) => self.fail(format!("recv({ch}) first poll = {r:?}, model {want:?}")),
                }
            }
            Op::Select { mut cases, default, macro_form } => {
                if self.pending.len() >= MAX_PENDING && !default {
                    return;
                }
                for c in &mut cases {
                    if let Case::Send(_, v) = c {
                        *v = self.val();
                    }
                }
                // A parked select is modelled with at most one send case per channel (which of
                // two would fire is not observable when it fires): without `default`, a
                // second send case on a channel becomes a nil case.
                if !default {
                    let mut seen = Vec::new();
                    for c in &mut cases {
                        if let Case::Send(Some(ch), v) = *c {
                            if seen.contains(&ch) {
                                *c = Case::Send(None, v);
                            } else {
                                seen.push(ch);
                            }
                        }
                    }
                }
                self.trace.push(format!("  cases {cases:?} default {default}"));
                let any_ready = cases.iter().any(|&c| self.model.case_ready(c));
                let fut = self.select_future(&cases, default, macro_form);
                let w = self.model.next_waiter;
                match self.push_pending(w, fut) {
                    Poll::Ready(Out::Sel(Some(i), out)) => {
                        self.check_fired(&cases, i, out);
                        self.took(Out::Sel(Some(i), out));
                    }
                    Poll::Ready(Out::Sel(None, SelOut::Default)) => {
                        check!(self, default, "select without default returned default");
                        check!(self, !any_ready, "select took default with a ready case");
                        self.model.drop_send_values(&cases, None);
                    }
                    Poll::Ready(out) => self.fail(format!("select returned {out:?}")),
                    Poll::Pending => {
                        check!(self, !default, "select with default is pending");
                        check!(self, !any_ready, "select parked with a ready case");
                        self.model.new_waiter(WKind::Sel(cases));
                    }
                }
            }
            Op::Poll(i) => {
                if self.pending.is_empty() {
                    return;
                }
                let idx = i % self.pending.len();
                let r = self.pending[idx].poll();
                self.check_poll(idx, r);
            }
            Op::PollAll => {
                let mut idx = 0;
                while idx < self.pending.len() {
                    let n = self.pending.len();
                    let r = self.pending[idx].poll();
                    self.check_poll(idx, r);
                    if self.pending.len() == n {
                        idx += 1;
                    }
                }
            }
            Op::Rewait(i) => {
                let n = self.pending.len();
                let Some(idx) = (0..n).map(|k| (k + i) % n).find(|&k| self.pending[k].rewait.is_some()) else {
                    return;
                };
                let w = self.pending[idx].w;
                let WKind::Sel(cases) = self.model.waiters[&w].kind.clone() else { unreachable!() };
                self.pending[idx].rewait.as_ref().unwrap().set(true);
                let r = self.pending[idx].poll();
                // Wait::drop: a case that fired by sending stays fired (the next wait returns
                // it); a received value goes back to its channel; then a fresh select.
                let wt = self.model.waiters.get_mut(&w).unwrap();
                match wt.done.take() {
                    Some(e @ Expect::Sel(_, SelOut::Send(_))) => {
                        wt.done = Some(e);
                        self.check_poll(idx, r);
                        self.check_state();
                        return;
                    }
                    Some(Expect::Sel(cands, SelOut::Recv(Some(v)))) => {
                        let Case::Recv(Some(ch)) = cases[cands[0]] else { unreachable!() };
                        self.model.give_back(ch, v);
                    }
                    Some(Expect::Sel(_, SelOut::Recv(None))) => {}
                    None => self.model.unlink(w),
                    Some(e) => unreachable!("{e:?}"),
                }
                let any_ready = cases.iter().any(|&c| self.model.case_ready(c));
                match r {
                    Poll::Ready(Out::Sel(Some(k), out)) => {
                        self.check_fired(&cases, k, out);
                        self.model.complete(w);
                        self.pending.remove(idx);
                        self.took(Out::Sel(Some(k), out));
                    }
                    Poll::Pending => {
                        check!(self, !any_ready, "re-waited select parked with a ready case");
                        self.model.rearm(w);
                    }
                    r => self.fail(format!("re-waited select returned {r:?}")),
                }
            }
            Op::Drop(i) => {
                if self.pending.is_empty() {
                    return;
                }
                let idx = i % self.pending.len();
                let p = self.pending.remove(idx);
                let w = p.w;
                drop(p);
                self.model.drop_waiter(w);
            }
        }
        self.check_state();
    }

    /// After every operation: wakes, drops, lengths and closed flags.
    fn check_state(&mut self) {
        let woken: Vec<usize> = self.model.waiters.iter().filter(|(_, w)| w.must_wake).map(|(&id, _)| id).collect();
        for id in woken {
            self.model.waiters.get_mut(&id).unwrap().must_wake = false;
            // (A waiter settled and then polled to completion by the same op was checked there.)
            let Some(p) = self.pending.iter().find(|p| p.w == id) else { continue };
            check!(self, p.flag.0.load(SeqCst), "waiter {id} was settled but not woken");
        }
        let mut got = take_dropped();
        let mut want = std::mem::take(&mut self.model.dropped);
        got.sort_unstable();
        want.sort_unstable();
        check!(self, got == want, "dropped values {got:?}, model says {want:?}");
        self.dropped_all.extend(want);
        for (ch, c) in self.model.chans.iter().enumerate() {
            let (len, closed) = (self.rxs[ch].len(), self.txs[ch].is_closed());
            check!(self, len == c.buf.len(), "chan {ch}: len {len}, model {}", c.buf.len());
            check!(self, closed == c.closed, "chan {ch}: closed {closed}, model {}", c.closed);
        }
    }
}

impl fmt::Debug for Harness<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness").field("model", &self.model).finish()
    }
}

fn decode_select(b: &mut Bytes<'_>, nchans: usize, profile: Profile) -> Op {
    let head = b.byte();
    let default = head & 1 != 0;
    let macro_form = head & 2 != 0;
    let max = if profile == Profile::Select { 6 } else { 3 };
    let n = 1 + usize::from(head >> 2) % max;
    let case = |b: &mut Bytes<'_>| {
        let x = b.byte();
        // 1 in 8 cases is a nil channel.
        let ch = (x & 7 != 7).then_some(usize::from(x >> 4) % nchans);
        (x & 8 != 0, ch)
    };
    let cases = if macro_form {
        let mut c = Vec::new();
        for slot in 0..4 {
            let (_, ch) = case(b);
            let ch = if slot < n + 1 { ch } else { None };
            c.push(if slot % 2 == 0 { Case::Recv(ch) } else { Case::Send(ch, 0) });
        }
        c
    } else {
        (0..n)
            .map(|_| match case(b) {
                (false, ch) => Case::Recv(ch),
                (true, ch) => Case::Send(ch, 0),
            })
            .collect()
    };
    Op::Select { cases, default, macro_form }
}

fn decode(b: &mut Bytes<'_>, nchans: usize, profile: Profile) -> Option<Op> {
    let x = b.next()?;
    let ch = usize::from(x >> 4) % nchans;
    let kind = x & 15;
    Some(match (profile, kind) {
        (_, 0 | 1) => Op::TrySend(ch),
        (_, 2) => Op::TryRecv(ch),
        (Profile::ChanOps, 3) => Op::TryRecv(ch),
        (_, 3) => decode_select(b, nchans, profile),
        (_, 4) => Op::Send(ch),
        (_, 5) => Op::Recv(ch),
        (_, 6) => Op::Poll(usize::from(x >> 4)),
        (_, 7) => Op::Drop(usize::from(x >> 4)),
        (_, 8) if x >> 7 == 1 => Op::Rewait(usize::from(x >> 4 & 7)),
        (_, 8) => Op::PollAll,
        // Close is rare: it ends most of the interesting states of a channel.
        (_, 9) if x >> 6 == 3 => Op::Close(usize::from(x >> 4 & 3) % nchans),
        (_, 9) => Op::PollAll,
        (Profile::ChanOps, 10) => Op::Send(ch),
        (Profile::ChanOps, 11) => Op::StreamRecv(ch),
        (Profile::Select, 10 | 11) => decode_select(b, nchans, profile),
        (_, _) => decode_select(b, nchans, profile),
    })
}

/// Runs one input. The first byte picks the channels' capacities (0 to 3).
pub fn run(data: &[u8], profile: Profile) {
    let mut b = Bytes(data);
    let conf = b.byte();
    let nchans = if profile == Profile::Select { 4 } else { 3 };
    let caps: Vec<usize> = (0..nchans).map(|i| usize::from(conf >> (2 * i)) & 3).collect();
    let (txs, rxs): (Vec<Sender<Val>>, Vec<Receiver<Val>>) = caps.iter().map(|&c| goro::chan::<Val>(c)).unzip();
    take_dropped();
    let model = Model::new(&caps);
    let mut h = Harness {
        txs: &txs,
        rxs: &rxs,
        model,
        pending: Vec::new(),
        next_val: 0,
        taken: Vec::new(),
        rewait: None,
        dropped_all: Vec::new(),
        trace: Vec::new(),
    };
    let mut steps = 0;
    while let Some(op) = decode(&mut b, nchans, profile) {
        h.step(op);
        steps += 1;
        if steps > 400 {
            break;
        }
    }
    // Drop every pending future, oldest first.
    h.trace.push("-- end: drop all pending".into());
    while !h.pending.is_empty() {
        h.step(Op::Drop(0));
    }
    // Close and drain: the channels hold exactly what the model says, FIFO.
    let mut drained = Vec::new();
    for ch in 0..nchans {
        h.txs[ch].close();
        h.model.close(ch);
        let mut got = Vec::new();
        loop {
            match h.rxs[ch].try_recv() {
                Ok(v) => got.push(v.into_id()),
                Err(TryRecvError::Closed) => break,
                Err(TryRecvError::Empty) => h.fail(format!("chan {ch}: closed, yet try_recv says Empty")),
            }
        }
        let want: Vec<u32> = h.model.chans[ch].buf.drain(..).collect();
        check!(h, got == want, "chan {ch} drained {got:?}, model {want:?}");
        drained.extend(got);
    }
    // Conservation: every value made was received, returned, dropped unsent or drained, once.
    h.check_state();
    let mut all: Vec<u32> = h.taken.iter().chain(&drained).copied().collect();
    all.extend(&h.dropped_all);
    all.sort_unstable();
    let want: Vec<u32> = (1..=h.next_val).collect();
    check!(h, all == want, "values not conserved: accounted {all:?}, made 1..={}", h.next_val);
}
