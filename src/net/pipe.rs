//! `Pipe`: Go's `net.Pipe`, a synchronous, in-memory, full-duplex connection.
//!
//! # Design
//!
//! Go's pipe hands the writer's slice to a reader over an unbuffered channel and gets back
//! how much was copied. A Rust future cannot lend its slice to another G, and the
//! `futures_io` traits on `&Pipe` have nowhere to keep a channel operation between polls, so
//! the rendezvous is inverted and kept in one small state under a lock, per direction (a
//! [`Link`]):
//!
//! - a read that finds nothing to take *asks*: it records how much room it has (`want`) and
//!   parks;
//! - a write waits until a read asks, then *hands* it up to `want` bytes (a copy, in the
//!   link's `slot`), and wakes the reads;
//! - a read takes bytes from the slot only in a poll that returns them, so a read that is
//!   dropped never took anything: what was handed to it stays for the next read;
//! - an async [`write`](Pipe::write) then waits until reads have taken all it handed before it
//!   hands more or returns (Go's `Write` returns once reads copied everything); dropped or
//!   failed midway, it takes back what no read took. So a write returns only after reads
//!   have taken all of its bytes, and the pipe holds no byte that no write waits on (but
//!   for those a trait write handed to a read that then gave up: the traits' `Pending` must
//!   mean "nothing written", so a trait write returns as soon as it handed its bytes over).
//!
//! Waiting is goro's: a parked read or write records its wait reason with the pipe's bubble
//! (as goro's channels and locks do, through `set_wait_reason_of`), so inside a
//! `goro::synctest` bubble a G blocked on a pipe made there is durably blocked; deadlines are
//! goro timers on goro's clock (the bubble's, in a bubble).

use goro_runtime::__private::time::RawTimer;
use goro_runtime::WaitReason;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex, MutexGuard as StdMutexGuard, Weak};
use std::task::{ready, Context, Poll, Waker};
use std::time::Instant;

/// Index of the read deadline in [`End::deadlines`] (and of the timer slots).
const READ: usize = 0;
/// Index of the write deadline.
const WRITE: usize = 1;

/// The largest slot allocation kept between writes.
const SLOT_KEEP: usize = 64 * 1024;

/// Makes a synchronous, in-memory, full-duplex connection (Go's `net.Pipe`): what is written
/// on one end is read on the other. Reads on one end are matched with writes on the other,
/// copying the data across; there is no internal buffering: a write waits until reads have
/// taken all of its bytes, and one write may be taken by several reads (of smaller buffers),
/// but a read never returns bytes of two writes.
///
/// Both ends are [`Pipe`]s, for testing code that talks over a connection without a network.
/// They work from any G of any goro runtime; made in a `goro::synctest` bubble, they belong
/// to it (see [`Pipe`]).
///
/// ```
/// use goro::net::pipe;
/// goro::run(async {
///     // client, server := net.Pipe()
///     let (client, server) = pipe();
///     // go func() { io.Copy(server, server) }(): an echo server
///     let echo = goro::go(async move {
///         let mut buf = [0; 64];
///         loop {
///             match server.read(&mut buf).await {
///                 Ok(0) | Err(_) => break, // the client closed
///                 Ok(n) => server.write_all(&buf[..n]).await?,
///             }
///         }
///         Ok::<_, std::io::Error>(())
///     });
///     client.write_all(b"hello, pipe").await?; // returns once the server has read it all
///     let mut buf = [0; 11];
///     client.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"hello, pipe");
///     client.close();
///     echo.await.unwrap()
/// })
/// .unwrap();
/// ```
pub fn pipe() -> (Pipe, Pipe) {
    let shared = Arc::new(Shared { state: StdMutex::new(State::default()), timers: StdMutex::new(Timers::default()) });
    let bubble = goro_runtime::__private::synctest::tag();
    (Pipe { shared: shared.clone(), end: 0, bubble }, Pipe { shared, end: 1, bubble })
}

/// One end of a [`pipe`] (Go's `net.Conn` that `net.Pipe` returns).
///
/// Every method takes `&self`: as in Go, one G may read while another writes, and several
/// may read (or write) at once; share the end behind an `Arc`. Writes through
/// [`write`](Pipe::write) and [`write_all`](Pipe::write_all) take turns (Go's `wrMu`), so the
/// bytes of two writes never interleave; reads at once each take what the next write hands
/// over.
///
/// # Errors
///
/// | what happened | `read` | `write`, `write_all` | `set_*deadline` |
/// |---------------|--------|----------------------|-----------------|
/// | this end was [`close`](Pipe::close)d (or dropped) | `BrokenPipe` | `BrokenPipe` | `BrokenPipe` |
/// | the other end was closed | `Ok(0)` (end of stream) | `BrokenPipe` | `BrokenPipe` |
/// | this end's [`close_write`](Pipe::close_write) | reads on | `BrokenPipe` | as before |
/// | the deadline passed | `TimedOut` | `TimedOut` | |
///
/// The `BrokenPipe` errors say `io: read/write on closed pipe` (Go's `io.ErrClosedPipe`, which
/// Go returns for both of the closed cases); `TimedOut` says `i/o timeout` (Go's
/// `os.ErrDeadlineExceeded`), as the sockets of [`goro::net`](crate::net) do.
///
/// # Deadlines
///
/// [`set_deadline`](Pipe::set_deadline) and its read and write halves take an instant of
/// [`goro::time::now`](crate::time::now)'s clock (in a `goro::synctest` bubble, the bubble's:
/// compute deadlines from `goro::time::now()`, not `Instant::now()`). Past it, a read or write
/// fails with `TimedOut`, one already waiting included; a new deadline applies at once to the
/// operations already waiting (moved later, they wait on; in the past, they fail); `None`
/// clears it.
///
/// # Cancellation
///
/// A read takes bytes only in the poll that returns them: a read future dropped before it
/// completed took nothing, and bytes a write handed to it stay in the pipe for the next read.
/// A write future dropped before it completed may have had a prefix of its buffer taken by
/// reads (Go's `Write` returns that count with its error); the rest it takes back, so no read
/// will see it.
///
/// # In a `goro::synctest` bubble
///
/// A pipe made in a bubble belongs to it, as its channels do: a G of the bubble blocked on
/// it is durably blocked (the bubble's clock moves on to the next deadline, and a bubble whose
/// Gs all wait on pipes nobody writes is reported as deadlocked), and using it from outside
/// the bubble panics, naming the bubble (dropping it does not).
///
/// # `futures_io`
///
/// [`AsyncRead`](futures_io::AsyncRead) and [`AsyncWrite`](futures_io::AsyncWrite) are
/// implemented for `Pipe` and `&Pipe`. `poll_read` is [`read`](Pipe::read). `poll_write` hands
/// bytes to a read that is waiting, and returns how many at once (at most that read's
/// buffer): `Pending` means nothing was written, so a caller may give up or change its buffer
/// between polls, as the traits allow; a trait write thus returns before the read that takes
/// its bytes has run (a read that then gives up leaves them for the next read). A trait read
/// that is not polled again cannot take back its request for bytes: the next write may hand
/// bytes to it, which the next read gets. `poll_close` is [`close_write`](Pipe::close_write).
/// Trait writes wait while an async `write` holds the turn, but do not take it; trait polls
/// through `&Pipe` from several tasks at once are all woken when they may go on.
pub struct Pipe {
    shared: Arc<Shared>,
    /// 0 or 1: this end's index in [`State::ends`]; it writes `links[end]`, reads
    /// `links[1 - end]`.
    end: usize,
    /// The bubble the pipe was made in (0: none), for goro's bubble rules.
    bubble: u64,
}

/// What both ends share.
///
/// Lock order: `timers`, then `state`. A deadline timer's function runs with the timer's own
/// lock held and takes `state`, so a timer is armed, stopped and dropped only with `state`
/// unlocked; `timers` is not taken by the function, and serialises deadline changes so a
/// timer and the deadline it is for are installed together.
///
/// A timer's function holds the `Shared` weakly and never drops a timer: both ends take
/// their timers out when they close (dropping them stops them), so a `Shared` whose last
/// strong reference a timer's function dropped holds no timer.
struct Shared {
    state: StdMutex<State>,
    timers: StdMutex<Timers>,
}

/// The deadline timers, `[end * 2 + dir]`.
#[derive(Default)]
struct Timers([Option<RawTimer>; 4]);

#[derive(Default)]
struct State {
    /// `links[e]`: the bytes from end `e` to the other end.
    links: [Link; 2],
    ends: [End; 2],
}

/// One direction of the pipe: the meeting point of the writes of one end and the reads of
/// the other.
#[derive(Default)]
struct Link {
    /// Bytes a write handed over, from `pos` on; empty when none wait to be taken. Kept
    /// allocated between writes.
    slot: Vec<u8>,
    pos: usize,
    /// The largest buffer of a read waiting for bytes (0: none asked). A write hands over at
    /// most this much, and only into an empty slot: a read never returns bytes of two writes.
    want: usize,
    /// An async write holds the turn (Go's `wrMu`): it alone hands bytes over.
    writing: bool,
    /// Reads waiting for bytes.
    readers: Vec<Waker>,
    /// Writes waiting for a read to ask, or for reads to take what they handed.
    writers: Vec<Waker>,
    /// Writes waiting for the turn.
    turn: Vec<Waker>,
}

impl Link {
    fn handed(&self) -> usize {
        self.slot.len() - self.pos
    }

    /// Hands the head of `buf` (up to what the waiting reads asked for) to them.
    fn hand(&mut self, buf: &[u8], wake: &mut Wakes) -> usize {
        debug_assert!(self.slot.is_empty() && self.want > 0);
        let n = buf.len().min(self.want);
        self.slot.extend_from_slice(&buf[..n]);
        self.pos = 0;
        self.want = 0;
        wake.take(&mut self.readers);
        n
    }

    /// Empties the slot, keeping its allocation for the next write unless a large write
    /// made it large.
    fn clear_slot(&mut self) {
        if self.slot.capacity() > SLOT_KEEP {
            self.slot = Vec::new();
        } else {
            self.slot.clear();
        }
        self.pos = 0;
    }

    /// Drops what is left of a handed write (its writer takes it back).
    fn take_back(&mut self, wake: &mut Wakes) {
        self.clear_slot();
        // A trait write waiting for an empty slot may go on once a read asks again.
        wake.take(&mut self.writers);
    }
}

/// One end's state.
#[derive(Default)]
struct End {
    /// [`Pipe::close`] (or drop): Go's `localDone`, the other end's `remoteDone`.
    closed: bool,
    /// [`Pipe::close_write`]: this end writes no more; the other end reads end of stream.
    write_closed: bool,
    /// `[READ]`, `[WRITE]`.
    deadlines: [Deadline; 2],
}

/// A read or write deadline (Go's `pipeDeadline`).
#[derive(Default)]
struct Deadline {
    at: Option<Instant>,
    /// The timer fired, or the deadline was set in the past.
    expired: bool,
    /// Bumped by every change: a timer armed for an older deadline does nothing.
    gen: u64,
}

impl Deadline {
    fn past(&self) -> bool {
        self.expired || self.at.is_some_and(|at| crate::time::now() >= at)
    }
}

impl State {
    /// Why a write of end `me` must fail now (Go's order: this end closed, the other end
    /// closed, the deadline).
    fn write_error(&self, me: usize) -> Option<io::Error> {
        let (end, peer) = (&self.ends[me], &self.ends[1 - me]);
        if end.closed || end.write_closed || peer.closed {
            Some(closed_pipe())
        } else if end.deadlines[WRITE].past() {
            Some(super::deadline_exceeded())
        } else {
            None
        }
    }

    fn closed(&self) -> bool {
        self.ends[0].closed || self.ends[1].closed
    }

    /// Wakes what waits under deadline `dir` of end `me`.
    fn wake_dir(&mut self, me: usize, dir: usize, wake: &mut Wakes) {
        if dir == READ {
            wake.take(&mut self.links[1 - me].readers);
        } else {
            let link = &mut self.links[me];
            wake.take(&mut link.writers);
            wake.take(&mut link.turn);
        }
    }
}

/// Wakers collected under the lock, woken when this is dropped. Declared before the lock's
/// guard, so it drops after it: nobody is woken with the lock held.
#[derive(Default)]
struct Wakes(Vec<Waker>);

impl Wakes {
    fn take(&mut self, list: &mut Vec<Waker>) {
        self.0.append(list);
    }
}

impl Drop for Wakes {
    fn drop(&mut self) {
        for w in self.0.drain(..) {
            w.wake();
        }
    }
}

fn add_waker(list: &mut Vec<Waker>, w: &Waker) {
    if !list.iter().any(|x| x.will_wake(w)) {
        list.push(w.clone());
    }
}

fn lock<T>(m: &StdMutex<T>) -> StdMutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Go's `io.ErrClosedPipe`.
fn closed_pipe() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "io: read/write on closed pipe")
}

impl Pipe {
    fn lock(&self) -> StdMutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Go's rule for a bubble's primitives: only the bubble's Gs may use them.
    #[inline]
    #[track_caller]
    fn check_bubble(&self) {
        if self.bubble != 0 {
            goro_runtime::__private::synctest::check_tag(self.bubble, "a net.Pipe");
        }
    }

    /// Records why the calling G is about to park on this pipe.
    fn park(&self, reason: WaitReason) {
        goro_runtime::__private::synctest::set_wait_reason_of(reason, self.bubble);
    }

    /// Reads into `buf`, waiting until a write on the other end hands over at least one byte;
    /// returns how many it read: at most `buf.len()`, from a single write (the rest of that
    /// write goes to the next reads). Go's `conn.Read`.
    ///
    /// Returns `Ok(0)` once the other end is closed (after the bytes already handed over), and
    /// at once for an empty `buf` (Go's waits for a write).
    ///
    /// # Errors
    /// `BrokenPipe` once this end is closed, `TimedOut` past the read deadline.
    ///
    /// # Cancel safety
    /// Cancel-safe: a read dropped before it completed took nothing (bytes a write had handed
    /// to it stay for the next read).
    ///
    /// ```
    /// use goro::net::pipe;
    /// goro::run(async {
    ///     let (a, b) = pipe();
    ///     goro::go(async move { b.write_all(b"hello").await });
    ///     let mut buf = [0; 3];
    ///     assert_eq!(a.read(&mut buf).await?, 3); // "hel"
    ///     assert_eq!(a.read(&mut buf).await?, 2); // "lo": the rest of the same write
    ///     assert_eq!(&buf[..2], b"lo");
    ///     assert_eq!(a.read(&mut buf).await?, 0); // the writer is gone: end of stream
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut ask = Ask { pipe: self, asked: false };
        poll_fn(|cx| self.poll_read_inner(cx, buf, &mut ask.asked)).await
    }

    /// Reads exactly `buf.len()` bytes (Go's `io.ReadFull`), over as many writes as it takes;
    /// `UnexpectedEof` if the other end closes first.
    ///
    /// # Cancel safety
    /// Not cancel-safe: dropped midway, the bytes it had read are lost.
    ///
    /// ```
    /// use goro::net::pipe;
    /// goro::run(async {
    ///     let (a, b) = pipe();
    ///     goro::go(async move {
    ///         b.write_all(b"12").await?;
    ///         b.write_all(b"345").await
    ///     });
    ///     let mut buf = [0; 5];
    ///     a.read_exact(&mut buf).await?;
    ///     assert_eq!(&buf, b"12345");
    ///     let err = a.read_exact(&mut buf).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn read_exact(&self, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read(buf).await? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    /// Writes `buf` to the other end (Go's `conn.Write`): waits until reads there have taken
    /// all of it, however many reads that takes, and returns `buf.len()`. Writes take turns:
    /// the bytes of another write never come in between.
    ///
    /// An error midway (a close, a deadline) ends it: with `Ok(n)`, `n < buf.len()`, if reads
    /// had taken `n > 0` bytes (the next call reports the error), else with the error.
    /// [`write_all`](Pipe::write_all) reports the error either way. An empty `buf` returns
    /// `Ok(0)` at once, unless an error is due.
    ///
    /// # Errors
    /// `BrokenPipe` once either end is closed (or this end's [`close_write`](Pipe::close_write)),
    /// `TimedOut` past the write deadline.
    ///
    /// # Cancel safety
    /// Dropped before it completed, reads may have taken a prefix of `buf`; no read sees the
    /// rest. Dropped before any read took a byte, it wrote nothing.
    ///
    /// ```
    /// use goro::net::pipe;
    /// goro::run(async {
    ///     let (a, b) = pipe();
    ///     let reader = goro::go(async move {
    ///         let mut got = Vec::new();
    ///         let mut buf = [0; 7];
    ///         loop {
    ///             match b.read(&mut buf).await? {
    ///                 0 => return Ok::<_, std::io::Error>(got),
    ///                 n => got.extend_from_slice(&buf[..n]),
    ///             }
    ///         }
    ///     });
    ///     // One write, taken by seven reads of 7 bytes.
    ///     assert_eq!(a.write(&[1; 49]).await?, 49);
    ///     a.close();
    ///     assert_eq!(reader.await.unwrap()?, vec![1; 49]);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match self.write_turn(buf).await {
            (0, Some(e)) => Err(e),
            (n, _) => Ok(n),
        }
    }

    /// Writes all of `buf`: [`write`](Pipe::write), with an error midway reported as the
    /// error. Go's `conn.Write`, whose count is then `buf.len()`.
    ///
    /// # Cancel safety
    /// As `write`'s.
    ///
    /// ```
    /// use goro::net::pipe;
    /// goro::run(async {
    ///     let (a, b) = pipe();
    ///     drop(b);
    ///     let err = a.write_all(b"anyone?").await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    ///     assert_eq!(err.to_string(), "io: read/write on closed pipe");
    /// });
    /// ```
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        match self.write_turn(buf).await {
            (_, Some(e)) => Err(e),
            (_, None) => Ok(()),
        }
    }

    /// Go's `write`: how many bytes reads took, and the error that stopped it early.
    async fn write_turn(&self, buf: &[u8]) -> (usize, Option<io::Error>) {
        if buf.is_empty() {
            self.check_bubble();
            return (0, self.lock().write_error(self.end));
        }
        let mut turn = Turn { pipe: self, held: false, handed: 0 };
        if let Err(e) = poll_fn(|cx| self.poll_turn(cx, &mut turn)).await {
            return (0, Some(e));
        }
        let mut done = 0;
        let err = poll_fn(|cx| self.poll_write_turn(cx, buf, &mut done, &mut turn)).await;
        (done, err)
    }

    /// Waits for the write turn (Go's `wrMu.Lock`), failing at once on an error.
    fn poll_turn(&self, cx: &mut Context<'_>, turn: &mut Turn<'_>) -> Poll<io::Result<()>> {
        self.check_bubble();
        let mut st = self.lock();
        if let Some(e) = st.write_error(self.end) {
            return Poll::Ready(Err(e));
        }
        let link = &mut st.links[self.end];
        if link.writing {
            add_waker(&mut link.turn, cx.waker());
            self.park(WaitReason::SyncMutexLock);
            return Poll::Pending;
        }
        link.writing = true;
        turn.held = true;
        Poll::Ready(Ok(()))
    }

    /// The write of `buf` by the holder of the turn: hands bytes to the reads that ask, and
    /// counts in `done` what they took. Ready once they took all of `buf`, or with the error
    /// that stopped it (having taken back what no read took).
    fn poll_write_turn(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        done: &mut usize,
        turn: &mut Turn<'_>,
    ) -> Poll<Option<io::Error>> {
        self.check_bubble();
        ready!(goro_runtime::coop::poll_proceed(cx));
        let mut wake = Wakes::default();
        let mut st = self.lock();
        let link = &mut st.links[self.end];
        if turn.handed > 0 {
            // While the turn is held only its holder hands bytes over: what is left in the
            // slot is what it handed and no read took yet.
            let left = link.handed();
            *done += turn.handed - left;
            turn.handed = left;
        }
        // All taken: done, even if an error came meanwhile (as Go's loop ends).
        if turn.handed == 0 && *done == buf.len() {
            return Poll::Ready(None);
        }
        if let Some(e) = st.write_error(self.end) {
            if turn.handed > 0 {
                st.links[self.end].take_back(&mut wake);
                turn.handed = 0;
            }
            return Poll::Ready(Some(e));
        }
        let link = &mut st.links[self.end];
        if turn.handed == 0 && link.want > 0 && link.slot.is_empty() {
            turn.handed = link.hand(&buf[*done..], &mut wake);
        }
        // Wait for a read to ask, or for the reads to take what was handed.
        add_waker(&mut link.writers, cx.waker());
        self.park(WaitReason::Select);
        Poll::Pending
    }

    /// The read of `buf`; `asked` says whether a wait of this read asked for bytes (for
    /// [`Ask`]).
    fn poll_read_inner(&self, cx: &mut Context<'_>, buf: &mut [u8], asked: &mut bool) -> Poll<io::Result<usize>> {
        self.check_bubble();
        ready!(goro_runtime::coop::poll_proceed(cx));
        let (me, peer) = (self.end, 1 - self.end);
        let mut wake = Wakes::default();
        let mut st = self.lock();
        let st = &mut *st;
        let r = 'r: {
            if st.ends[me].closed {
                break 'r Err(closed_pipe());
            }
            let past = st.ends[me].deadlines[READ].past();
            let link = &mut st.links[peer];
            // Bytes handed over are taken first, even once the writer has closed: it was told
            // they were read.
            if !past && link.handed() > 0 {
                let n = buf.len().min(link.handed());
                buf[..n].copy_from_slice(&link.slot[link.pos..link.pos + n]);
                link.pos += n;
                if link.handed() == 0 {
                    link.clear_slot();
                    wake.take(&mut link.writers);
                }
                break 'r Ok(n);
            }
            let other = &st.ends[peer];
            if other.closed || other.write_closed {
                break 'r Ok(0);
            }
            if past {
                break 'r Err(super::deadline_exceeded());
            }
            if buf.is_empty() {
                break 'r Ok(0);
            }
            let link = &mut st.links[peer];
            if link.want < buf.len() {
                link.want = buf.len();
                wake.take(&mut link.writers);
            }
            *asked = true;
            add_waker(&mut link.readers, cx.waker());
            self.park(WaitReason::Select);
            return Poll::Pending;
        };
        *asked = false;
        Poll::Ready(r)
    }

    /// One hand-over for the `AsyncWrite` impls: ready once a waiting read was handed bytes.
    fn poll_write_once(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.check_bubble();
        ready!(goro_runtime::coop::poll_proceed(cx));
        let mut wake = Wakes::default();
        let mut st = self.lock();
        if let Some(e) = st.write_error(self.end) {
            return Poll::Ready(Err(e));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let link = &mut st.links[self.end];
        if link.writing {
            add_waker(&mut link.turn, cx.waker());
            self.park(WaitReason::SyncMutexLock);
            return Poll::Pending;
        }
        if link.want == 0 || !link.slot.is_empty() {
            add_waker(&mut link.writers, cx.waker());
            self.park(WaitReason::Select);
            return Poll::Pending;
        }
        Poll::Ready(Ok(link.hand(buf, &mut wake)))
    }

    /// A read that asked for bytes is given up before any were handed to it: nobody may want
    /// them any more. The other waiting reads (woken) ask again.
    fn unask(&self) {
        let mut wake = Wakes::default();
        let mut st = self.lock();
        let link = &mut st.links[1 - self.end];
        if link.want > 0 && link.slot.is_empty() {
            link.want = 0;
            wake.take(&mut link.readers);
        }
    }

    /// Sets the read and write deadlines (Go's `conn.SetDeadline`): past `deadline`, every
    /// read and write fails with [`io::ErrorKind::TimedOut`], the ones already waiting
    /// included (a deadline in the past fails them at once). A new deadline applies to the
    /// operations already waiting; `None` clears it. Take the instant from
    /// [`goro::time::now`](crate::time::now), whose clock is the bubble's in a
    /// `goro::synctest` bubble.
    ///
    /// # Errors
    /// `BrokenPipe` once either end is closed (Go's `io.ErrClosedPipe`).
    ///
    /// # Panics
    /// For a deadline in the future, outside a goro runtime (its timer lives on the runtime
    /// of the calling G).
    ///
    /// ```
    /// use goro::net::pipe;
    /// use std::time::Duration;
    /// goro::run(async {
    ///     let (a, _b) = pipe(); // nobody writes
    ///     a.set_deadline(Some(goro::time::now() + Duration::from_millis(10)))?;
    ///     let err = a.read(&mut [0; 8]).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     a.set_deadline(None) // usable again
    /// })
    /// .unwrap();
    /// ```
    pub fn set_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.set_deadlines(&[READ, WRITE], deadline)
    }

    /// Sets the read deadline only (Go's `SetReadDeadline`); see
    /// [`set_deadline`](Pipe::set_deadline). A read already waiting sees the change:
    ///
    /// ```
    /// use goro::net::pipe;
    /// use std::sync::Arc;
    /// goro::run(async {
    ///     let (a, _b) = pipe();
    ///     let a = Arc::new(a);
    ///     let reader = goro::go({
    ///         let a = a.clone();
    ///         async move { a.read(&mut [0; 8]).await }
    ///     });
    ///     a.set_read_deadline(Some(goro::time::now()))?; // now: the waiting read fails
    ///     let err = reader.await.unwrap().unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_read_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.set_deadlines(&[READ], deadline)
    }

    /// Sets the write deadline only (Go's `SetWriteDeadline`); see
    /// [`set_deadline`](Pipe::set_deadline).
    ///
    /// ```
    /// use goro::net::pipe;
    /// goro::run(async {
    ///     let (a, _b) = pipe();
    ///     a.set_write_deadline(Some(goro::time::now()))?;
    ///     let err = a.write(b"late").await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    ///     Ok::<_, std::io::Error>(())
    /// })
    /// .unwrap();
    /// ```
    pub fn set_write_deadline(&self, deadline: Option<Instant>) -> io::Result<()> {
        self.set_deadlines(&[WRITE], deadline)
    }

    fn set_deadlines(&self, dirs: &[usize], at: Option<Instant>) -> io::Result<()> {
        self.check_bubble();
        let me = self.end;
        let mut wake = Wakes::default();
        // Held throughout: deadline changes of this pipe happen one at a time, so `gen` moves
        // only here and a timer is installed with the deadline it is for.
        let mut timers = lock(&self.shared.timers);
        let now = crate::time::now();
        let future = at.filter(|&at| at > now);
        let gens = {
            let st = self.lock();
            if st.closed() {
                return Err(closed_pipe());
            }
            dirs.iter().map(|&dir| st.ends[me].deadlines[dir].gen + 1).collect::<Vec<_>>()
        };
        // The timers before anything changes (`RawTimer::new` panics outside a runtime), and
        // out of `state`'s lock (their functions take it).
        let new: Vec<Option<RawTimer>> = dirs
            .iter()
            .zip(&gens)
            .map(|(&dir, &gen)| future.map(|_| RawTimer::new(expire(Arc::downgrade(&self.shared), me, dir, gen))))
            .collect();
        {
            let mut st = self.lock();
            if st.closed() {
                return Err(closed_pipe());
            }
            for (&dir, &gen) in dirs.iter().zip(&gens) {
                let d = &mut st.ends[me].deadlines[dir];
                d.gen = gen;
                d.at = at;
                d.expired = at.is_some() && future.is_none();
                st.wake_dir(me, dir, &mut wake);
            }
        }
        for (&dir, t) in dirs.iter().zip(new) {
            if let Some(t) = &t {
                t.reset(future, None);
            }
            // Dropping the timer it replaces stops it.
            timers.0[me * 2 + dir] = t;
        }
        Ok(())
    }

    /// Closes this end (Go's `conn.Close`): reads, writes and deadline changes on it fail with
    /// `BrokenPipe` (`io: read/write on closed pipe`), the ones waiting included; on the other
    /// end reads return `Ok(0)` (end of stream) once they took what was handed to them, and
    /// writes fail with `BrokenPipe`. Closing again does nothing; dropping the `Pipe` closes
    /// it.
    ///
    /// ```
    /// use goro::net::pipe;
    /// use std::io::ErrorKind;
    /// goro::run(async {
    ///     let (a, b) = pipe();
    ///     a.close();
    ///     assert_eq!(a.read(&mut [0; 4]).await.unwrap_err().kind(), ErrorKind::BrokenPipe);
    ///     assert_eq!(b.read(&mut [0; 4]).await.unwrap(), 0);
    ///     assert_eq!(b.write(b"x").await.unwrap_err().kind(), ErrorKind::BrokenPipe);
    /// });
    /// ```
    pub fn close(&self) {
        self.check_bubble();
        self.close_inner();
    }

    fn close_inner(&self) {
        let me = self.end;
        let mut wake = Wakes::default();
        let mut timers = lock(&self.shared.timers);
        {
            let mut st = self.lock();
            if st.ends[me].closed {
                return;
            }
            st.ends[me].closed = true;
            for link in &mut st.links {
                wake.take(&mut link.readers);
                wake.take(&mut link.writers);
                wake.take(&mut link.turn);
            }
        }
        // Out of `state`'s lock: dropping a timer stops it, which waits for its function.
        let old = [timers.0[me * 2].take(), timers.0[me * 2 + 1].take()];
        drop(timers);
        drop(old);
    }

    /// Closes this end for writing only (as Go's `TCPConn.CloseWrite`; Go's pipe has no such
    /// method): writes on this end fail with `BrokenPipe`, a waiting one included, and reads on
    /// the other end return `Ok(0)` once they took what was handed to them; this end still
    /// reads, and the other end still writes. The `AsyncWrite` impls' `poll_close`.
    ///
    /// ```
    /// use goro::net::pipe;
    /// goro::run(async {
    ///     let (client, server) = pipe();
    ///     let server = goro::go(async move {
    ///         let mut req = Vec::new();
    ///         let mut buf = [0; 16];
    ///         loop {
    ///             match server.read(&mut buf).await? {
    ///                 0 => break, // the request is complete
    ///                 n => req.extend_from_slice(&buf[..n]),
    ///             }
    ///         }
    ///         server.write_all(&req.len().to_le_bytes()).await
    ///     });
    ///     client.write_all(b"request").await?;
    ///     client.close_write();
    ///     let mut len = [0; 8];
    ///     client.read_exact(&mut len).await?;
    ///     assert_eq!(usize::from_le_bytes(len), 7);
    ///     server.await.unwrap()
    /// })
    /// .unwrap();
    /// ```
    pub fn close_write(&self) {
        self.check_bubble();
        let mut wake = Wakes::default();
        let mut st = self.lock();
        st.ends[self.end].write_closed = true;
        let link = &mut st.links[self.end];
        wake.take(&mut link.readers);
        wake.take(&mut link.writers);
        wake.take(&mut link.turn);
    }
}

/// The function of the timer of deadline `dir` of end `end`, armed for the deadline of
/// generation `gen`.
fn expire(shared: Weak<Shared>, end: usize, dir: usize, gen: u64) -> impl FnMut() -> bool + Send + 'static {
    move || {
        if let Some(shared) = shared.upgrade() {
            let mut wake = Wakes::default();
            let mut st = lock(&shared.state);
            let d = &mut st.ends[end].deadlines[dir];
            if d.gen == gen {
                d.expired = true;
                st.wake_dir(end, dir, &mut wake);
            }
        }
        true
    }
}

/// A waiting [`Pipe::read`]: dropped after asking for bytes and before any were handed over,
/// it takes the request back, so no write hands bytes to a read that is gone.
struct Ask<'a> {
    pipe: &'a Pipe,
    asked: bool,
}

impl Drop for Ask<'_> {
    fn drop(&mut self) {
        if self.asked {
            self.pipe.unask();
        }
    }
}

/// The write turn of a [`Pipe::write`], and what it handed over that no read took yet.
/// Dropped (the write completed, failed or was given up), it takes that back and passes the
/// turn on.
struct Turn<'a> {
    pipe: &'a Pipe,
    held: bool,
    handed: usize,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let mut wake = Wakes::default();
        let mut st = self.pipe.lock();
        let link = &mut st.links[self.pipe.end];
        if self.handed > 0 {
            link.take_back(&mut wake);
        }
        link.writing = false;
        wake.take(&mut link.turn);
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // No bubble check: a pipe that outlived its bubble may still be dropped.
        self.close_inner();
    }
}

impl fmt::Debug for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Pipe")
            .field("end", &self.end)
            .field("closed", &st.ends[self.end].closed)
            .field("peer_closed", &st.ends[1 - self.end].closed)
            .finish_non_exhaustive()
    }
}

/// Reads as [`Pipe::read`] does, through `&mut self`.
impl futures_io::AsyncRead for Pipe {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.poll_read_inner(cx, buf, &mut false)
    }
}

/// Hands bytes to a waiting read of the other end (see [`Pipe`]'s `futures_io` section);
/// `poll_close` is [`Pipe::close_write`].
impl futures_io::AsyncWrite for Pipe {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_once(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close_write();
        Poll::Ready(Ok(()))
    }
}

/// Reads as [`Pipe::read`] does, through a shared reference, so one G can read through the
/// trait while another writes.
///
/// ```
/// use futures_io::{AsyncRead, AsyncWrite};
/// use goro::net::{pipe, Pipe};
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// use std::sync::Arc;
/// goro::run(async {
///     let (a, b) = pipe();
///     let b = Arc::new(b);
///     let writer = goro::go({
///         let b = b.clone();
///         async move {
///             let mut w: &Pipe = &b;
///             poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"hi")).await
///         }
///     });
///     let mut r: &Pipe = &a;
///     let mut buf = [0; 2];
///     let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await?;
///     assert_eq!(&buf[..n], b"hi");
///     assert_eq!(writer.await.unwrap()?, 2);
///     Ok::<_, std::io::Error>(())
/// })
/// .unwrap();
/// ```
impl futures_io::AsyncRead for &Pipe {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.poll_read_inner(cx, buf, &mut false)
    }
}

/// Writes as the `AsyncWrite` impl of `Pipe` does, through a shared reference.
impl futures_io::AsyncWrite for &Pipe {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_once(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.close_write();
        Poll::Ready(Ok(()))
    }
}
