//! `select`: wait on several channel operations, run exactly one (Go's `selectgo`).
//!
//! The algorithm is Go's:
//! 1. Lock every case's channel, in address order (so two selects over the same channels
//!    cannot deadlock; a channel named by several cases is locked once).
//! 2. Visit the cases in a random order (Go's `pollorder`); the first that can complete now
//!    does, and the select returns it. So among the cases ready at once, each is chosen with
//!    equal probability.
//! 3. Nothing ready: with a `default`, return it. Otherwise queue one sudog per case, all
//!    pointing at one shared `SelectShared`, unlock, and wait.
//! 4. A peer that finds one of those sudogs must win the shared state's CAS before it completes
//!    the operation, so exactly one case fires; peers that lose the CAS skip the sudog.
//! 5. Woken, the select locks all its channels again, unlinks the sudogs of the cases that did
//!    not fire (a send that did not fire did not send), and returns the winner.
//!
//! Dropping a waiting select (cancellation) does step 5 too; if a receive case had already been
//! handed a value, the value goes back to its channel.

mod cases;
mod dynamic;
mod macros;

pub use cases::{Case, RecvCase, SendCase};
pub use dynamic::{RecvToken, Select, SendToken, Wait};

use crate::waitq::SelectShared;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Lock-order and poll-order scratch space: inline for up to this many cases.
const INLINE: usize = 64;

/// The select future over a fixed set of pinned cases. The `select!` macro builds one; the
/// output is the index of the case that fired, or `None` for `default`.
#[doc(hidden)]
pub struct SelectFuture<'a, const N: usize> {
    cases: [&'a dyn Case; N],
    has_default: bool,
    core: Core,
    _pin: PhantomPinned,
}

impl<'a, const N: usize> SelectFuture<'a, N> {
    /// A select over `cases` (each pinned by the caller for the future's whole life).
    #[inline]
    pub fn new(cases: [&'a dyn Case; N], has_default: bool) -> SelectFuture<'a, N> {
        SelectFuture { cases, has_default, core: Core::new(), _pin: PhantomPinned }
    }
}

impl<const N: usize> Future for SelectFuture<'_, N> {
    type Output = Option<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<usize>> {
        // SAFETY: nothing is moved out; the shared state stays where it was pinned.
        let this = unsafe { self.get_unchecked_mut() };
        this.core.poll(&this.cases, this.has_default, cx)
    }
}

impl<const N: usize> Drop for SelectFuture<'_, N> {
    #[inline]
    fn drop(&mut self) {
        let _ = self.core.cancel(&self.cases);
    }
}

impl<const N: usize> fmt::Debug for SelectFuture<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectFuture").field("cases", &N).field("armed", &self.core.armed.get()).finish()
    }
}

/// Why a select that waits waits, in Go's words: `select (no cases)` for Go's `select {}`, a
/// nil channel's `chan receive (nil chan)` or `chan send (nil chan)` for a lone case on `None`
/// (Go's `<-ch` on a nil channel), else `select`.
fn park_reason(cases: &[&dyn Case]) -> goro_runtime::WaitReason {
    use goro_runtime::WaitReason;
    match cases {
        [] => WaitReason::SelectNoCases,
        [c] if c.key().is_none() && c.is_send() => WaitReason::ChanSendNilChan,
        [c] if c.key().is_none() => WaitReason::ChanReceiveNilChan,
        _ => WaitReason::Select,
    }
}

/// The synctest bubble a select waits in, for the census of durably blocked Gs: its channels'
/// common bubble; one that matches no bubble if they differ; any bubble (the caller's) if it
/// has no channel but nil ones and those of every bubble (Go's `select {}` in a bubble is
/// durably blocked).
fn bubble_of(cases: &[&dyn Case]) -> u64 {
    use goro_runtime::__private::synctest::{ANY, NONE_OF_THEM};
    let mut owner = ANY;
    for b in cases.iter().filter_map(|c| c.bubble()).filter(|&b| b != ANY) {
        if owner == ANY {
            owner = b;
        } else if owner != b {
            return NONE_OF_THEM;
        }
    }
    owner
}

/// The state of one select, shared by the static and the dynamic form.
pub(crate) struct Core {
    shared: SelectShared,
    armed: Cell<bool>,
    /// When the select started to wait, for the block profile (0: not measured).
    t0: Cell<u64>,
}

impl Core {
    #[inline]
    pub(crate) fn new() -> Core {
        Core { shared: SelectShared::new(), armed: Cell::new(false), t0: Cell::new(0) }
    }

    /// One poll of the select. `self` must be pinned (sudogs point at `self.shared`).
    pub(crate) fn poll(&self, cases: &[&dyn Case], has_default: bool, cx: &mut Context<'_>) -> Poll<Option<usize>> {
        let polled = self.poll_select(cases, has_default, cx);
        if polled.is_pending() {
            // Every time it returns `Pending`: the runtime clears the reason at each poll.
            goro_runtime::__private::synctest::set_wait_reason_of(park_reason(cases), bubble_of(cases));
        }
        polled
    }

    /// [`poll`](Self::poll) but for the wait reason.
    fn poll_select(&self, cases: &[&dyn Case], has_default: bool, cx: &mut Context<'_>) -> Poll<Option<usize>> {
        if self.armed.get() {
            if self.shared.winner().is_none() {
                self.shared.set_waker(cx.waker());
                if self.shared.winner().is_none() {
                    return Poll::Pending;
                }
            }
            let won = self.finish(cases, false);
            goro_runtime::__private::profile::block_event(self.t0.get());
            return Poll::Ready(Some(won));
        }
        // A yield point, before any case is touched.
        std::task::ready!(goro_runtime::coop::poll_proceed(cx));
        let mut wake = None;
        let out = with_orders(cases, true, |pollorder, orders| {
            // Fast path: try each case alone, in poll order, under its own channel's lock. The
            // first that completes is a case that was ready when tried, chosen in random order,
            // as Go's pass 1 would; it costs one lock instead of all of them. Finding nothing
            // ready this way proves nothing (a case tried early may have become ready since),
            // so `default` and blocking need the pass under all the locks below.
            if cases.len() > 1 {
                for &i in pollorder.iter() {
                    if cases[i as usize].try_alone(&mut wake) {
                        return Poll::Ready(Some(i as usize));
                    }
                }
            }
            let lockorder = orders.lock();
            lock_all(cases, lockorder);
            for &i in pollorder.iter() {
                // SAFETY: all the cases' channels are locked.
                if unsafe { cases[i as usize].try_complete(&mut wake) } {
                    unlock_all(cases, lockorder);
                    return Poll::Ready(Some(i as usize));
                }
            }
            if has_default {
                unlock_all(cases, lockorder);
                return Poll::Ready(None);
            }
            self.shared.reset();
            self.shared.set_waker(cx.waker());
            for &i in lockorder.iter() {
                // SAFETY: locked; `self.shared` is pinned with the select and outlives the
                // armed state (every exit path runs `finish`/`cancel`, which disarm all).
                unsafe { cases[i as usize].arm(&self.shared, i as usize) };
            }
            self.armed.set(true);
            self.t0.set(goro_runtime::__private::profile::wait_start());
            unlock_all(cases, lockorder);
            Poll::Pending
        });
        if let Some(w) = wake {
            w.wake();
        }
        out
    }

    /// Pass 3: unlink the losers, settle the winner. With `abandon`, the winner's outcome is
    /// given back instead of returned (the select is being dropped).
    fn finish(&self, cases: &[&dyn Case], abandon: bool) -> usize {
        let mut wake = None;
        let winner = with_orders(cases, false, |_, orders| {
            let lockorder = orders.lock();
            lock_all(cases, lockorder);
            // Under all the locks: a peer that won has settled its sudog.
            let winner = self.shared.winner();
            for &i in lockorder.iter() {
                // SAFETY: locked.
                unsafe { cases[i as usize].disarm() };
            }
            if let Some(w) = winner {
                // SAFETY: locked; the winner's sudog was settled by the peer that won.
                unsafe {
                    cases[w].settle();
                    if abandon {
                        cases[w].abandon(&mut wake);
                    }
                }
            }
            self.armed.set(false);
            unlock_all(cases, lockorder);
            winner
        });
        if let Some(w) = wake {
            w.wake();
        }
        winner.unwrap_or(usize::MAX)
    }

    /// Dropped while waiting: disarm everything, give back what a winner received. Returns the
    /// winner, if a case had fired.
    #[inline]
    pub(crate) fn cancel(&self, cases: &[&dyn Case]) -> Option<usize> {
        if !self.armed.get() {
            return None;
        }
        let w = self.finish(cases, true);
        (w != usize::MAX).then_some(w)
    }
}

/// Runs `f` with the poll order (random with `shuffle`, else the case order: unlinking the
/// losers needs no randomness) and the lock order (case indices sorted by channel address, nil
/// cases last), made on first use; both on the stack for up to [`INLINE`] cases.
fn with_orders<R>(cases: &[&dyn Case], shuffle: bool, f: impl FnOnce(&[u16], &mut Orders<'_>) -> R) -> R {
    let n = cases.len();
    assert!(n <= u16::MAX as usize, "goro: a select has at most 65535 cases");
    // Not zeroed: `poll` is written below before use and `lock` is only read after
    // `Orders::lock` copies `poll` into it (most selects complete without ever sorting).
    let mut inline = [[MaybeUninit::<u16>::uninit(); INLINE]; 2];
    let mut heap;
    let (lock, poll): (&mut [MaybeUninit<u16>], &mut [MaybeUninit<u16>]) = if n <= INLINE {
        let [a, b] = &mut inline;
        (&mut a[..n], &mut b[..n])
    } else {
        heap = (vec![MaybeUninit::uninit(); n], vec![MaybeUninit::uninit(); n]);
        (&mut heap.0[..], &mut heap.1[..])
    };
    for (i, p) in poll.iter_mut().enumerate() {
        p.write(i as u16);
    }
    // SAFETY: every element was written just above; `MaybeUninit<u16>` has `u16`'s layout.
    let poll = unsafe { &mut *(poll as *mut [MaybeUninit<u16>] as *mut [u16]) };
    // Fisher-Yates with a per-thread generator (Go's `cheaprandn`). Loom needs every run of a
    // model to be reproducible, so there the poll order is the case order.
    #[cfg(not(loom))]
    if shuffle {
        for i in (1..n).rev() {
            let j = fastrand(i as u32 + 1) as usize;
            poll.swap(i, j);
        }
    }
    #[cfg(loom)]
    let _ = shuffle;
    let poll = &*poll;
    f(poll, &mut Orders { cases, poll, lock, sorted: false })
}

/// The lock order, made on first use (a select that completes on its fast path never sorts).
struct Orders<'a> {
    cases: &'a [&'a dyn Case],
    poll: &'a [u16],
    /// Uninitialised until `sorted`.
    lock: &'a mut [MaybeUninit<u16>],
    sorted: bool,
}

impl Orders<'_> {
    /// The poll order stably sorted by channel: cases on one channel are then armed (queued) in
    /// random order too, so a peer picks among them at random (Go's `lockorder` is built from
    /// `pollorder` the same way).
    fn lock(&mut self) -> &[u16] {
        if !self.sorted {
            for (l, &p) in self.lock.iter_mut().zip(self.poll) {
                l.write(p);
            }
            self.sorted = true;
            let cases = self.cases;
            self.sorted_mut().sort_by_key(|&i| cases[i as usize].key().unwrap_or(usize::MAX));
        }
        self.sorted_mut()
    }

    fn sorted_mut(&mut self) -> &mut [u16] {
        debug_assert!(self.sorted);
        // SAFETY: `lock` was fully written (a copy of `poll`, same length) when `sorted` was set.
        unsafe { &mut *(self.lock as *mut [MaybeUninit<u16>] as *mut [u16]) }
    }
}

/// Locks each distinct channel once, in `lockorder`.
fn lock_all(cases: &[&dyn Case], lockorder: &[u16]) {
    let mut last = None;
    for &i in lockorder {
        let c = cases[i as usize];
        let Some(k) = c.key() else { break };
        if last != Some(k) {
            c.lock();
            last = Some(k);
        }
    }
}

/// Unlocks what [`lock_all`] locked.
fn unlock_all(cases: &[&dyn Case], lockorder: &[u16]) {
    let mut last = None;
    for &i in lockorder {
        let c = cases[i as usize];
        let Some(k) = c.key() else { break };
        if last != Some(k) {
            // SAFETY: `lock_all` locked exactly these, once each.
            unsafe { c.unlock() };
            last = Some(k);
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    // `const`: no lazy-initialisation check per call; seeded on first use instead.
    static STATE: Cell<u64> = const { Cell::new(0) };
}

/// Sets the calling thread's generator of `select!`'s random case order to `state` and
/// returns the state it had: a `goro::synctest` bubble, which runs on one thread, seeds it from
/// its own seed so that every `select!` choice replays. Not part of the stable API.
#[doc(hidden)]
pub fn reseed(state: u64) -> u64 {
    #[cfg(not(loom))]
    return STATE.with(|s| s.replace(state));
    #[cfg(loom)]
    return state;
}

/// A uniform random number in `0..n` (Lemire's multiply-shift on a per-thread wyrand).
#[cfg(not(loom))]
fn fastrand(n: u32) -> u32 {
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = seed(s as *const Cell<u64> as u64);
        }
        let x = x.wrapping_add(0xA076_1D64_78BD_642F);
        s.set(x);
        let t = u128::from(x) * u128::from(x ^ 0xE703_7ED1_A0B4_28DB);
        let r = ((t >> 64) as u64 ^ t as u64) as u32;
        ((u64::from(r) * u64::from(n)) >> 32) as u32
    })
}

/// A non-zero seed for a thread's generator, from the clock and an address of the thread's.
#[cfg(not(loom))]
#[cold]
fn seed(addr: u64) -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    t ^ addr.rotate_left(32) | 1
}

/// Waits for `fut` on the calling thread (for `select_blocking!`).
#[doc(hidden)]
#[track_caller]
pub fn block_on<F: Future>(fut: F) -> F::Output {
    goro_runtime::__private::block_on_thread_for("`goro::select!`", fut)
}

/// Turns whatever a `select!` case names into an optional handle: a `Receiver`, a reference to
/// one, or an `Option` of either (`None` is Go's nil channel: never ready).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a channel that a `select!` case can receive from",
    label = "a `recv(..)` case takes a `Receiver<T>` or `Chan<T>` (or a reference to one, or an `Option` of one for a nil channel)",
    note = "a `select!` case waits on a channel, not on a future",
    note = "for a timeout, receive from a timer channel: `recv(goro::time::after(d)) -> _ => ..`",
    note = "to race any future against a deadline or a cancellation, use `goro::time::timeout(d, fut).await` or `ctx.or_done(fut).await`"
)]
pub trait AsRecv {
    /// The element type.
    type Item;
    /// The receiver, or `None` for a nil channel.
    fn as_recv(&self) -> Option<&crate::Receiver<Self::Item>>;
}

impl<T> AsRecv for crate::Receiver<T> {
    type Item = T;
    fn as_recv(&self) -> Option<&crate::Receiver<T>> {
        Some(self)
    }
}

impl<T> AsRecv for crate::Chan<T> {
    type Item = T;
    fn as_recv(&self) -> Option<&crate::Receiver<T>> {
        Some(self.receiver_ref())
    }
}

impl<R: AsRecv + ?Sized> AsRecv for &R {
    type Item = R::Item;
    fn as_recv(&self) -> Option<&crate::Receiver<R::Item>> {
        (**self).as_recv()
    }
}

impl<R: AsRecv> AsRecv for Option<R> {
    type Item = R::Item;
    fn as_recv(&self) -> Option<&crate::Receiver<R::Item>> {
        self.as_ref().and_then(|r| r.as_recv())
    }
}

/// As [`AsRecv`], for send cases.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a channel that a `select!` case can send on",
    label = "a `send(..)` case takes a `Sender<T>` or `Chan<T>` (or a reference to one, or an `Option` of one for a nil channel)",
    note = "a `select!` case sends on a channel; to race a future, use `goro::time::timeout(d, fut).await` or `ctx.or_done(fut).await`"
)]
pub trait AsSend {
    /// The element type.
    type Item;
    /// The sender, or `None` for a nil channel.
    fn as_send(&self) -> Option<&crate::Sender<Self::Item>>;
}

impl<T> AsSend for crate::Sender<T> {
    type Item = T;
    fn as_send(&self) -> Option<&crate::Sender<T>> {
        Some(self)
    }
}

impl<T> AsSend for crate::Chan<T> {
    type Item = T;
    fn as_send(&self) -> Option<&crate::Sender<T>> {
        Some(self.sender_ref())
    }
}

impl<S: AsSend + ?Sized> AsSend for &S {
    type Item = S::Item;
    fn as_send(&self) -> Option<&crate::Sender<S::Item>> {
        (**self).as_send()
    }
}

impl<S: AsSend> AsSend for Option<S> {
    type Item = S::Item;
    fn as_send(&self) -> Option<&crate::Sender<S::Item>> {
        self.as_ref().and_then(|s| s.as_send())
    }
}
