//! `goro::net::pipe` (Go's `net.Pipe`): Go's `TestPipe` and x/net/nettest's `TestConn`
//! conformance tests, ported, then what a synchronous pipe promises beyond them (writes
//! matched by reads, cancel safety, deadlines changed while an operation waits) and its life
//! in a `goro::synctest` bubble.
//!
//! Nothing here sleeps to synchronize: in a bubble, `synctest::wait` says when the other Gs
//! are blocked; elsewhere the tests only rely on what must eventually happen, and time bounds
//! waits as a failure detector ([`HANG`]).

mod common;

use common::{poll_noop, within, HANG};
use futures_io::{AsyncRead, AsyncWrite};
use goro::net::{pipe, Pipe};
use goro::synctest;
use std::future::{poll_fn, Future};
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

/// Go's `aLongTimeAgo` for a deadline: any instant already past.
fn long_ago() -> Instant {
    goro::time::now()
}

fn arc_pipe() -> (Arc<Pipe>, Arc<Pipe>) {
    let (a, b) = pipe();
    (Arc::new(a), Arc::new(b))
}

/// Deterministic bytes (xorshift), Go's `rand.New(rand.NewSource(0))` for the tests.
struct Rand(u64);

impl Rand {
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *b = self.0 as u8;
        }
    }
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    Rand(0x9E37_79B9_7F4A_7C15).fill(&mut v);
    v
}

/// Go's `chunkedCopy(w, r)`: copies from `src` to `dst` in reads of 1024 bytes until `src`
/// ends or either fails (the error is the result, as Go's `io.Copy`'s).
async fn chunked_copy(dst: &Pipe, src: &Pipe) -> std::io::Result<()> {
    let mut buf = [0; 1024];
    loop {
        match src.read(&mut buf).await? {
            0 => return Ok(()),
            n => dst.write_all(&buf[..n]).await?,
        }
    }
}

/// An echo G on `c` (Go's `go chunkedCopy(c2, c2)`), which ends once `c` fails or ends.
fn echo(c: &Arc<Pipe>) -> goro::runtime::JoinHandle<std::io::Result<()>> {
    let c = c.clone();
    goro::go(async move { chunked_copy(&c, &c).await })
}

/// Go's `testRoundtrip`: writes into `c` and reads it back (an echo is on the other end).
async fn roundtrip(c: &Arc<Pipe>) {
    c.set_deadline(None).unwrap();
    const S: &[u8] = b"Hello, world!";
    let w = {
        let c = c.clone();
        goro::go(async move { c.write_all(S).await })
    };
    let mut buf = [0; S.len()];
    within("the roundtrip read", c.read_exact(&mut buf)).await.unwrap();
    assert_eq!(&buf, S);
    w.await.unwrap().unwrap();
}

/// Go's `resyncConn`: reads until the 0xff it wrote comes back, past whatever was in flight
/// (0xff is on the wire nowhere else).
async fn resync(c: &Arc<Pipe>) {
    c.set_deadline(None).unwrap();
    let w = {
        let c = c.clone();
        goro::go(async move { c.write_all(&[0xff]).await })
    };
    let mut buf = [0; 1024];
    loop {
        let n = within("the resync read", c.read(&mut buf)).await.unwrap();
        if n > 0 && buf[..n].iter().position(|&b| b == 0xff) == Some(n - 1) {
            break;
        }
    }
    w.await.unwrap().unwrap();
}

fn assert_timeout<T: std::fmt::Debug>(r: std::io::Result<T>) {
    let err = r.expect_err("a timeout");
    assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
    assert_eq!(err.to_string(), "i/o timeout");
}

/// A G writing 1 KiB blocks into `c` until a write fails (Go's `for err == nil { _, err = c.Write(..) }`).
fn write_until_error(c: &Arc<Pipe>) -> goro::runtime::JoinHandle<std::io::Result<()>> {
    let c = c.clone();
    goro::go(async move {
        loop {
            c.write(&[0; 1024]).await?;
        }
    })
}

fn assert_closed<T: std::fmt::Debug>(r: std::io::Result<T>) {
    let err = r.expect_err("a closed pipe");
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
    assert_eq!(err.to_string(), "io: read/write on closed pipe");
}

#[test]
fn pipe_is_send_and_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<Pipe>();
    fn send<F: Future + Send>(_: F) {}
    let (a, _b) = pipe();
    let mut buf = [0; 1];
    send(a.read(&mut buf));
    send(a.write(b""));
    send(a.write_all(b""));
    send(a.read_exact(&mut buf));
}

// ---- Go's src/net/pipe_test.go ----

/// Go's `TestPipe`: a simple write, read, close sequence.
#[goro::test]
async fn go_test_pipe() {
    let (cli, srv) = arc_pipe();
    for (w, r, data) in
        [(&cli, &srv, &b"hello, world"[..]), (&srv, &cli, &b"line 2"[..]), (&cli, &srv, &b"a third line"[..])]
    {
        let writer = {
            let w = w.clone();
            goro::go(async move { w.write(data).await })
        };
        let mut buf = vec![0; data.len() + 10];
        let n = r.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], data);
        assert_eq!(writer.await.unwrap().unwrap(), data.len(), "a short write");
    }
    let closer = {
        let srv = srv.clone();
        goro::go(async move { srv.close() })
    };
    assert_eq!(cli.read(&mut [0; 10]).await.unwrap(), 0, "EOF once the server closed");
    closer.await.unwrap();
    cli.close();
}

// ---- x/net/nettest's TestConn ----

/// `testBasicIO`: 1 MiB copied in 1 KiB chunks from one end to the other arrives intact.
#[goro::test]
async fn basic_io() {
    let want = random_bytes(1 << 20);
    let (c1, c2) = pipe();
    let w = want.clone();
    let writer = goro::go(async move {
        for chunk in w.chunks(1024) {
            c1.write_all(chunk).await.unwrap();
        }
        c1.close();
    });
    let reader = goro::go(async move {
        let mut got = Vec::new();
        let mut buf = [0; 1024];
        loop {
            match c2.read(&mut buf).await.unwrap() {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
        }
        c2.close();
        got
    });
    let got = within("the copy", reader).await.unwrap();
    writer.await.unwrap();
    assert!(got == want, "transmitted data differs");
}

/// `testPingPong`: the two ends answer each other, a counter going back and forth to 1000.
#[goro::test]
async fn ping_pong() {
    let (c1, c2) = arc_pipe();
    fn ping_ponger(c: Arc<Pipe>) -> goro::runtime::JoinHandle<()> {
        goro::go(async move {
            let mut buf = [0; 8];
            let mut prev = 0;
            loop {
                match c.read_exact(&mut buf).await {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::UnexpectedEof => break,
                    Err(e) => panic!("unexpected read error: {e}"),
                }
                let v = u64::from_le_bytes(buf);
                buf = (v + 1).to_le_bytes();
                if prev != 0 {
                    assert_eq!(v, prev + 2, "mismatching value");
                }
                prev = v;
                if v == 1000 {
                    break;
                }
                if let Err(e) = c.write(&buf).await {
                    panic!("unexpected write error: {e}");
                }
            }
            c.close();
        })
    }
    let p1 = ping_ponger(c1.clone());
    let p2 = ping_ponger(c2.clone());
    // Start off the chain reaction.
    c1.write(&[0; 8]).await.unwrap();
    within("ping-ponger 1", p1).await.unwrap();
    within("ping-ponger 2", p2).await.unwrap();
}

/// `testRacyRead`: reads from ten Gs at once, with deadlines that keep expiring, while the
/// other end writes: each read returns data or a timeout, and the reader may reuse its buffer
/// at once.
#[goro::test]
async fn racy_read() {
    let (c1, c2) = arc_pipe();
    let writer = goro::go({
        let c2 = c2.clone();
        async move {
            let mut r = Rand(1);
            let mut buf = [0; 1024];
            loop {
                r.fill(&mut buf);
                if c2.write_all(&buf).await.is_err() {
                    return; // c1 closed
                }
            }
        }
    });
    c1.set_read_deadline(Some(goro::time::now() + MS)).unwrap();
    let readers: Vec<_> = (0..10)
        .map(|_| {
            let c1 = c1.clone();
            goro::go(async move {
                let mut b1 = [0; 1024];
                let b2 = [0; 1024];
                for _ in 0..100 {
                    let r = c1.read(&mut b1).await;
                    b1.copy_from_slice(&b2); // mutate b1 right after the read
                    if let Err(e) = r {
                        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
                        c1.set_read_deadline(Some(goro::time::now() + MS)).unwrap();
                    }
                }
            })
        })
        .collect();
    for r in readers {
        within("a racy reader", r).await.unwrap();
    }
    c1.close();
    within("the writer", writer).await.unwrap();
}

/// `testRacyWrite`: writes from ten Gs at once, with deadlines that keep expiring, while the
/// other end reads.
#[goro::test]
async fn racy_write() {
    let (c1, c2) = arc_pipe();
    let reader = goro::go({
        let c2 = c2.clone();
        async move {
            let mut buf = [0; 1024];
            while let Ok(n) = c2.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        }
    });
    c1.set_write_deadline(Some(goro::time::now() + MS)).unwrap();
    let writers: Vec<_> = (0..10)
        .map(|_| {
            let c1 = c1.clone();
            goro::go(async move {
                let mut b1 = [0; 1024];
                let b2 = [1; 1024];
                for _ in 0..100 {
                    let r = c1.write(&b1).await;
                    b1.copy_from_slice(&b2); // mutate b1 right after the write
                    if let Err(e) = r {
                        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
                        c1.set_write_deadline(Some(goro::time::now() + MS)).unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        within("a racy writer", w).await.unwrap();
    }
    c1.close();
    within("the reader", reader).await.unwrap();
}

/// `testReadTimeout`: a read timeout does not affect writes.
#[goro::test]
async fn read_timeout_does_not_affect_write() {
    let (c1, c2) = arc_pipe();
    let sink = goro::go({
        let c2 = c2.clone();
        async move {
            let mut buf = [0; 1024];
            while matches!(c2.read(&mut buf).await, Ok(n) if n > 0) {}
        }
    });
    c1.set_read_deadline(Some(long_ago())).unwrap();
    assert_timeout(c1.read(&mut [0; 1024]).await);
    assert_eq!(within("the write", c1.write(&[0; 1024])).await.unwrap(), 1024);
    c1.close();
    sink.await.unwrap();
}

/// `testWriteTimeout`: a write timeout does not affect reads.
#[goro::test]
async fn write_timeout_does_not_affect_read() {
    let (c1, c2) = arc_pipe();
    let source = goro::go({
        let c2 = c2.clone();
        async move { while c2.write_all(&[7; 1024]).await.is_ok() {} }
    });
    c1.set_write_deadline(Some(long_ago())).unwrap();
    assert_timeout(c1.write(&[0; 1024]).await);
    let n = within("the read", c1.read(&mut [0; 1024])).await.unwrap();
    assert!(n > 0);
    c1.close();
    source.await.unwrap();
}

/// `testPastTimeout`: a deadline in the past fails reads and writes at once, having moved no
/// byte; cleared, the pipe works again.
#[goro::test]
async fn past_timeout() {
    let (c1, c2) = arc_pipe();
    let e = echo(&c2);
    roundtrip(&c1).await;
    c1.set_deadline(Some(long_ago())).unwrap();
    assert_timeout(c1.write(&[0; 1024]).await);
    assert_timeout(c1.read(&mut [0; 1024]).await);
    roundtrip(&c1).await;
    c1.close();
    // The echo ends at end of stream, or on `BrokenPipe` if it was writing back.
    let _ = within("the echo", e).await.unwrap();
}

/// `testPresentTimeout`: a deadline set in the past while a read and a write wait fails them
/// at once, and not before it is set. In a bubble, so that "waiting" is certain and "at once"
/// exact.
#[test]
fn present_timeout() {
    synctest::test(async {
        let (c1, _c2) = arc_pipe();
        let start = goro::time::now();
        let reader = goro::go({
            let c1 = c1.clone();
            async move { c1.read(&mut [0; 1024]).await }
        });
        let writer = write_until_error(&c1);
        synctest::wait().await;
        assert!(!reader.is_finished() && !writer.is_finished(), "timed out before the deadline was set");
        c1.set_read_deadline(Some(long_ago())).unwrap();
        c1.set_write_deadline(Some(long_ago())).unwrap();
        assert_timeout(reader.await.unwrap());
        assert_timeout(writer.await.unwrap());
        assert_eq!(goro::time::now(), start, "at once");
    });
}

/// `testFutureTimeout`: a deadline in the future times reads and writes out once it passes;
/// cleared, the pipe works again.
#[goro::test]
async fn future_timeout() {
    let (c1, c2) = arc_pipe();
    let deadline = goro::time::now() + 100 * MS;
    c1.set_deadline(Some(deadline)).unwrap();
    let reader = goro::go({
        let c1 = c1.clone();
        async move { c1.read(&mut [0; 1024]).await }
    });
    let writer = write_until_error(&c1);
    assert_timeout(within("the reader", reader).await.unwrap());
    assert_timeout(within("the writer", writer).await.unwrap());
    assert!(goro::time::now() >= deadline, "timed out early");
    let e = echo(&c2);
    resync(&c1).await;
    roundtrip(&c1).await;
    c1.close();
    // The echo ends at end of stream, or on `BrokenPipe` if it was writing back.
    let _ = within("the echo", e).await.unwrap();
}

/// `testCloseTimeout`: closing the pipe ends the reads and writes waiting on it (with a
/// deadline set to "never").
#[goro::test]
async fn close_timeout() {
    let (c1, c2) = arc_pipe();
    let e = echo(&c2);
    c1.set_deadline(None).unwrap();
    let reader = goro::go({
        let c1 = c1.clone();
        async move {
            let mut buf = [0; 1024];
            loop {
                if let Err(e) = c1.read(&mut buf).await {
                    return e;
                }
            }
        }
    });
    let writer = goro::go({
        let c1 = c1.clone();
        async move {
            loop {
                if let Err(e) = c1.write(&[0; 1024]).await {
                    return e;
                }
            }
        }
    });
    // Let them run a while, then close: whatever they were doing ends.
    for _ in 0..100 {
        goro::runtime::yield_now().await;
    }
    c1.close();
    let (r, w) = (within("the reader", reader).await.unwrap(), within("the writer", writer).await.unwrap());
    assert_eq!(r.kind(), ErrorKind::BrokenPipe, "{r}");
    assert_eq!(w.kind(), ErrorKind::BrokenPipe, "{w}");
    // The echo ends at end of stream, or on `BrokenPipe` if it was writing back.
    let _ = within("the echo", e).await.unwrap();
}

/// `testConcurrentMethods`: every method called from many Gs at once; afterwards the pipe
/// still works.
#[goro::test]
async fn concurrent_methods() {
    let (c1, c2) = arc_pipe();
    let e = echo(&c2);
    let mut gs = Vec::new();
    for _ in 0..100 {
        let c = c1.clone();
        gs.push(goro::go(async move {
            let _ = c.read(&mut [0; 1024]).await;
        }));
        let c = c1.clone();
        gs.push(goro::go(async move {
            let _ = c.write(&[0; 1024]).await;
        }));
        let c = c1.clone();
        gs.push(goro::go(async move { c.set_deadline(Some(goro::time::now() + 10 * MS)).unwrap() }));
        let c = c1.clone();
        gs.push(goro::go(async move { c.set_read_deadline(Some(long_ago())).unwrap() }));
        let c = c1.clone();
        gs.push(goro::go(async move { c.set_write_deadline(Some(long_ago())).unwrap() }));
        let c = c1.clone();
        gs.push(goro::go(async move { drop(format!("{c:?}")) }));
    }
    // At worst the last deadline set is 10 ms away.
    for g in gs {
        within("a concurrent call", g).await.unwrap();
    }
    resync(&c1).await;
    roundtrip(&c1).await;
    c1.close();
    // The echo ends at end of stream, or on `BrokenPipe` if it was writing back.
    let _ = within("the echo", e).await.unwrap();
}

// ---- close ----

/// After `close`, this end's reads, writes and deadline changes fail with `BrokenPipe`; the
/// other end reads end of stream and its writes and deadline changes fail with `BrokenPipe`.
#[goro::test]
async fn close_read_write() {
    let (a, b) = pipe();
    a.close();
    a.close(); // again: nothing
    assert_closed(a.read(&mut [0; 4]).await);
    assert_closed(a.write(b"x").await);
    assert_closed(a.write_all(b"x").await);
    assert_closed(a.write(b"").await);
    assert_closed(a.set_deadline(None));
    assert_closed(a.set_read_deadline(Some(goro::time::now() + SEC)));
    assert_eq!(b.read(&mut [0; 4]).await.unwrap(), 0);
    assert_eq!(b.read(&mut [0; 4]).await.unwrap(), 0, "EOF again");
    assert_closed(b.write(b"x").await);
    assert_closed(b.write_all(b"x").await);
    assert_closed(b.set_write_deadline(None));
    // Dropping a closed end, and the other, is fine.
    drop(a);
    drop(b);
}

/// Dropping an end closes it.
#[goro::test]
async fn drop_closes() {
    let (a, b) = pipe();
    drop(a);
    assert_eq!(b.read(&mut [0; 4]).await.unwrap(), 0);
    assert_closed(b.write(b"x").await);
}

/// A read waiting when the other end closes returns end of stream; one waiting when its own
/// end closes fails.
#[goro::test]
async fn eof_after_remote_close() {
    let (a, b) = arc_pipe();
    let reader = goro::go({
        let a = a.clone();
        async move { a.read(&mut [0; 4]).await }
    });
    let own = goro::go({
        let b = b.clone();
        async move { b.read(&mut [0; 4]).await }
    });
    // Whether they wait yet or not, they end as the closes say.
    for _ in 0..10 {
        goro::runtime::yield_now().await;
    }
    b.close();
    assert_eq!(within("the read", reader).await.unwrap().unwrap(), 0);
    assert_closed(within("the own read", own).await.unwrap());
}

/// Bytes a write handed over before its end closed are read before end of stream (a trait
/// write returns once it handed them to a waiting read; it closes before that read ran).
#[test]
fn eof_comes_after_the_bytes_handed_over() {
    synctest::test(async {
        let (a, b) = pipe();
        let mut buf = [0; 8];
        let mut r = Box::pin(a.read(&mut buf));
        assert!(poll_noop(r.as_mut()).is_pending(), "nothing to read yet");
        let mut w: &Pipe = &b;
        let n = poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"last")).await.unwrap();
        assert_eq!(n, 4);
        poll_fn(|cx| Pin::new(&mut w).poll_close(cx)).await.unwrap();
        assert!(matches!(poll_noop(r.as_mut()), Poll::Ready(Ok(4))));
        drop(r);
        assert_eq!(&buf[..4], b"last");
        assert_eq!(a.read(&mut buf).await.unwrap(), 0);
    });
}

/// A write waiting when the other end closes fails with `BrokenPipe`, and so do later ones;
/// a write that reads had partly taken returns the short count, `write_all` the error.
#[test]
fn broken_pipe_after_remote_close() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        let writer = goro::go({
            let a = a.clone();
            async move { a.write(b"nobody reads this").await }
        });
        synctest::wait().await;
        b.close();
        assert_closed(writer.await.unwrap());
        assert_closed(a.write(b"x").await);

        let (a, b) = arc_pipe();
        let w = goro::go({
            let a = a.clone();
            async move { a.write(b"0123456789").await }
        });
        let wa = goro::go({
            let b = b.clone();
            async move { b.write_all(b"0123456789").await }
        });
        let mut buf = [0; 4];
        assert_eq!(b.read(&mut buf).await.unwrap(), 4);
        assert_eq!(a.read(&mut buf).await.unwrap(), 4);
        synctest::wait().await;
        b.close();
        assert_eq!(w.await.unwrap().unwrap(), 4, "write: the count reads took");
        assert_closed(wa.await.unwrap());
    });
}

/// `close_write`: this end writes no more (a waiting write fails), the other end reads end
/// of stream, and the other direction still works.
#[test]
fn close_write_is_a_half_close() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        let writer = goro::go({
            let a = a.clone();
            async move { a.write_all(b"unread").await }
        });
        synctest::wait().await;
        a.close_write();
        assert_closed(writer.await.unwrap());
        assert_closed(a.write(b"x").await);
        assert_eq!(b.read(&mut [0; 8]).await.unwrap(), 0);
        let back = goro::go({
            let b = b.clone();
            async move { b.write_all(b"still works").await }
        });
        let mut buf = [0; 11];
        a.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"still works");
        back.await.unwrap().unwrap();
        a.set_deadline(None).unwrap();
    });
}

// ---- synchronous: writes are matched by reads ----

/// A 10 000-byte write is taken by 7-byte reads: each returns 7 bytes (the last 4), in order.
#[goro::test]
async fn writes_are_matched_by_reads() {
    let want = random_bytes(10_000);
    let (a, b) = pipe();
    let w = want.clone();
    let writer = goro::go(async move { a.write(&w).await });
    let mut got = Vec::new();
    let mut buf = [0; 7];
    while got.len() < want.len() {
        let n = within("a read", b.read(&mut buf)).await.unwrap();
        assert_eq!(n, 7.min(want.len() - got.len()), "a read of 7 takes 7 bytes of the write");
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got == want, "the bytes differ");
    assert_eq!(writer.await.unwrap().unwrap(), 10_000);
}

/// A read returns the bytes of one write, never of two, however large its buffer.
#[goro::test]
async fn a_read_never_spans_two_writes() {
    let (a, b) = pipe();
    let writer = goro::go(async move {
        a.write_all(b"one").await?;
        a.write_all(b"two").await
    });
    let mut buf = [0; 64];
    assert_eq!(b.read(&mut buf).await.unwrap(), 3);
    assert_eq!(&buf[..3], b"one");
    assert_eq!(b.read(&mut buf).await.unwrap(), 3);
    assert_eq!(&buf[..3], b"two");
    writer.await.unwrap().unwrap();
}

/// A write returns only once reads have taken all of its bytes: with 10 of 100 unread, the
/// writer is still blocked (in a bubble, `wait` makes that certain).
#[test]
fn a_write_returns_only_after_all_its_bytes_were_read() {
    synctest::test(async {
        let (a, b) = pipe();
        let writer = goro::go(async move { a.write_all(&[7; 100]).await });
        let mut got = 0;
        let mut buf = [0; 10];
        while got < 90 {
            got += b.read(&mut buf).await.unwrap();
        }
        synctest::wait().await;
        assert!(!writer.is_finished(), "the write returned with 10 bytes unread");
        assert_eq!(b.read(&mut buf).await.unwrap(), 10);
        writer.await.unwrap().unwrap();
        // No read asks, so no write gets through: nothing is buffered.
        let (a, b) = pipe();
        let w = goro::go(async move { a.write_all(b"x").await });
        synctest::wait().await;
        assert!(!w.is_finished(), "a write with no reader returned");
        drop(b);
        assert_closed(w.await.unwrap());
    });
}

/// Writes take turns: the bytes of two writes do not interleave, however the reads split them.
#[goro::test]
async fn writes_take_turns() {
    let (a, b) = arc_pipe();
    let ws: Vec<_> = [1u8, 2]
        .into_iter()
        .map(|v| {
            let a = a.clone();
            goro::go(async move { a.write_all(&[v; 1000]).await })
        })
        .collect();
    let mut got = vec![0; 2000];
    for chunk in got.chunks_mut(7) {
        within("a read", b.read_exact(chunk)).await.unwrap();
    }
    for w in ws {
        w.await.unwrap().unwrap();
    }
    let first = got[0];
    assert!(got[..1000].iter().all(|&v| v == first) && got[1000..].iter().all(|&v| v != first), "interleaved");
}

/// Reads and writes with empty buffers return 0 at once (after the error checks).
#[goro::test]
async fn empty_buffers() {
    let (a, _b) = pipe();
    assert_eq!(a.read(&mut []).await.unwrap(), 0);
    assert_eq!(a.write(b"").await.unwrap(), 0);
    a.write_all(b"").await.unwrap();
    a.set_deadline(Some(long_ago())).unwrap();
    assert_timeout(a.read(&mut []).await);
    assert_timeout(a.write(b"").await);
}

// ---- deadlines ----

/// A read deadline of 5 s fires after exactly 5 s of bubble time.
#[test]
fn a_read_deadline_of_5s_fires_after_exactly_5s_in_a_bubble() {
    let real = Instant::now();
    synctest::test(async {
        let (a, _b) = pipe();
        let start = goro::time::now();
        a.set_read_deadline(Some(start + 5 * SEC)).unwrap();
        assert_timeout(a.read(&mut [0; 8]).await);
        assert_eq!(goro::time::now() - start, 5 * SEC);
    });
    assert!(real.elapsed() < HANG, "5 s of bubble time took {:?}", real.elapsed());
}

/// A deadline changed while a read or a write waits applies to it: moved earlier, later,
/// into the past, or cleared.
#[test]
fn deadline_change_while_blocked() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        let start = goro::time::now();
        let at = |d: Duration| Some(start + d);

        // Moved earlier: 10 s, then 3 s.
        a.set_read_deadline(at(10 * SEC)).unwrap();
        let r = goro::go({
            let a = a.clone();
            async move { a.read(&mut [0; 8]).await }
        });
        goro::time::sleep(SEC).await;
        assert!(!r.is_finished());
        a.set_read_deadline(at(3 * SEC)).unwrap();
        assert_timeout(r.await.unwrap());
        assert_eq!(goro::time::now() - start, 3 * SEC);

        // Moved later: 4 s, then 8 s.
        a.set_write_deadline(at(4 * SEC)).unwrap();
        let w = goro::go({
            let a = a.clone();
            async move { a.write(b"nobody reads").await }
        });
        synctest::wait().await;
        a.set_write_deadline(at(8 * SEC)).unwrap();
        assert_timeout(w.await.unwrap());
        assert_eq!(goro::time::now() - start, 8 * SEC);

        // Cleared: a read with a deadline at 9 s goes on past it, and gets the bytes written
        // at 100 s.
        a.set_read_deadline(at(9 * SEC)).unwrap();
        let r = goro::go({
            let a = a.clone();
            async move {
                let mut buf = [0; 8];
                let n = a.read(&mut buf).await?;
                Ok::<_, std::io::Error>(buf[..n].to_vec())
            }
        });
        synctest::wait().await;
        a.set_read_deadline(None).unwrap();
        goro::time::sleep_until(start + 100 * SEC).await;
        assert!(!r.is_finished());
        b.write_all(b"late").await.unwrap();
        assert_eq!(r.await.unwrap().unwrap(), b"late");
        assert_eq!(goro::time::now() - start, 100 * SEC);

        // Into the past: the waiting read fails at once.
        let r = goro::go({
            let a = a.clone();
            async move { a.read(&mut [0; 8]).await }
        });
        synctest::wait().await;
        a.set_deadline(Some(goro::time::now())).unwrap();
        assert_timeout(r.await.unwrap());
        assert_eq!(goro::time::now() - start, 100 * SEC);

        // A deadline in the past, then one in the future: usable until then.
        a.set_deadline(at(200 * SEC)).unwrap();
        let w = goro::go({
            let b = b.clone();
            async move { b.write_all(b"ok").await }
        });
        let mut buf = [0; 2];
        a.read_exact(&mut buf).await.unwrap();
        w.await.unwrap().unwrap();
    });
}

/// A deadline on one end does not touch the other end.
#[test]
fn deadlines_are_per_end() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        a.set_deadline(Some(goro::time::now())).unwrap();
        let w = goro::go({
            let b = b.clone();
            async move { b.write_all(b"hi").await }
        });
        synctest::wait().await;
        assert!(!w.is_finished());
        assert_timeout(a.read(&mut [0; 2]).await);
        a.set_deadline(None).unwrap();
        let mut buf = [0; 2];
        a.read_exact(&mut buf).await.unwrap();
        w.await.unwrap().unwrap();
    });
}

// ---- cancel safety ----

fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

/// A read that asked for bytes and was dropped takes its request back: no write hands bytes
/// to it. While it waits, a write hands them over at once.
#[test]
fn a_dropped_read_takes_nothing() {
    synctest::test(async {
        let (a, b) = pipe();
        let mut buf = [0; 8];
        let mut r = Box::pin(a.read(&mut buf));
        assert!(poll_noop(r.as_mut()).is_pending());
        drop(r);
        let mut w: &Pipe = &b;
        assert!(Pin::new(&mut w).poll_write(&mut noop_cx(), b"xy").is_pending(), "a write got through to no read");

        let mut r = Box::pin(a.read(&mut buf));
        assert!(poll_noop(r.as_mut()).is_pending());
        assert!(matches!(Pin::new(&mut w).poll_write(&mut noop_cx(), b"xy"), Poll::Ready(Ok(2))));
        assert!(matches!(poll_noop(r.as_mut()), Poll::Ready(Ok(2))));
        drop(r);
        assert_eq!(&buf[..2], b"xy");
    });
}

/// Bytes a write handed to a read that was then dropped go to the next read; the write
/// completes once they are taken.
#[test]
fn bytes_handed_to_a_dropped_read_go_to_the_next() {
    synctest::test(async {
        let (a, b) = pipe();
        let mut big = [0; 16];
        let mut r = Box::pin(a.read(&mut big));
        assert!(poll_noop(r.as_mut()).is_pending(), "asks for 16 bytes");
        let mut w = Box::pin(b.write(b"hello"));
        assert!(poll_noop(w.as_mut()).is_pending(), "hands 5 bytes over, waits for them to be taken");
        drop(r);
        assert!(poll_noop(w.as_mut()).is_pending(), "nobody took them");
        let mut small = [0; 3];
        assert_eq!(a.read(&mut small).await.unwrap(), 3);
        assert_eq!(&small, b"hel");
        assert_eq!(a.read(&mut small).await.unwrap(), 2);
        assert_eq!(&small[..2], b"lo");
        assert!(matches!(poll_noop(w.as_mut()), Poll::Ready(Ok(5))));
    });
}

/// A write dropped midway takes back what no read took: the next read sees the next write.
#[test]
fn a_dropped_write_takes_back_what_no_read_took() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        let mut w = Box::pin(b.write(b"0123456789"));
        assert!(poll_noop(w.as_mut()).is_pending(), "no read asks yet");
        let mut big = [0; 16];
        let mut r = Box::pin(a.read(&mut big));
        assert!(poll_noop(r.as_mut()).is_pending());
        assert!(poll_noop(w.as_mut()).is_pending(), "hands all 10 over");
        drop(r);
        let mut small = [0; 4];
        assert_eq!(a.read(&mut small).await.unwrap(), 4);
        assert_eq!(&small, b"0123");
        drop(w); // "456789" was never read: taken back
        let next = goro::go({
            let b = b.clone();
            async move { b.write_all(b"xyz").await }
        });
        let n = a.read(&mut big).await.unwrap();
        assert_eq!(&big[..n], b"xyz");
        next.await.unwrap().unwrap();
        // The turn was passed on: writes still work.
        let again = goro::go({
            let b = b.clone();
            async move { b.write_all(b"!").await }
        });
        assert_eq!(a.read(&mut big).await.unwrap(), 1);
        again.await.unwrap().unwrap();
    });
}

/// A read given up on a timeout (Go's `select` against `time.After`) took nothing and asks
/// no more: the next write waits for the next read, which gets all of it.
#[test]
fn a_read_given_up_on_a_timeout() {
    synctest::test(async {
        let (a, b) = pipe();
        let mut buf = [0; 8];
        assert!(goro::time::timeout(SEC, a.read(&mut buf)).await.is_err());
        let w = goro::go(async move { b.write_all(b"abc").await });
        synctest::wait().await;
        assert!(!w.is_finished(), "the write went to the read that gave up");
        assert_eq!(a.read(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"abc");
        w.await.unwrap().unwrap();
    });
}

/// A write given up on a timeout before any read asked wrote nothing, and passed the turn on.
#[test]
fn a_write_given_up_on_a_timeout() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        assert!(goro::time::timeout(SEC, b.write_all(b"never")).await.is_err());
        let w = goro::go({
            let b = b.clone();
            async move { b.write_all(b"abc").await }
        });
        let mut buf = [0; 8];
        assert_eq!(a.read(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"abc");
        w.await.unwrap().unwrap();
    });
}

// ---- futures_io ----

/// An echo through `AsyncRead`/`AsyncWrite` on `&Pipe` (one G reading, another writing, on
/// each end), then `poll_close`: the other end reads end of stream, this end still reads.
#[goro::test]
async fn futures_io_on_shared_references() {
    let (a, b) = arc_pipe();
    let echo = goro::go({
        let b = b.clone();
        async move {
            let mut r: &Pipe = &b;
            let mut w: &Pipe = &b;
            let mut buf = [0; 5];
            loop {
                let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await?;
                if n == 0 {
                    break;
                }
                let mut off = 0;
                while off < n {
                    off += poll_fn(|cx| Pin::new(&mut w).poll_write(cx, &buf[off..n])).await?;
                }
            }
            poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"bye")).await
        }
    });
    let reader = goro::go({
        let a = a.clone();
        async move {
            let mut r: &Pipe = &a;
            let mut got = Vec::new();
            let mut buf = [0; 3];
            while got.len() < 26 + 3 {
                let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await?;
                assert!(n > 0, "EOF too soon");
                got.extend_from_slice(&buf[..n]);
            }
            Ok::<_, std::io::Error>(got)
        }
    });
    let mut w: &Pipe = &a;
    let msg = b"abcdefghijklmnopqrstuvwxyz";
    let mut off = 0;
    while off < msg.len() {
        off += poll_fn(|cx| Pin::new(&mut w).poll_write(cx, &msg[off..])).await.unwrap();
    }
    poll_fn(|cx| Pin::new(&mut w).poll_flush(cx)).await.unwrap();
    poll_fn(|cx| Pin::new(&mut w).poll_close(cx)).await.unwrap();
    assert_eq!(within("the echo", echo).await.unwrap().unwrap(), 3);
    let got = within("the reader", reader).await.unwrap().unwrap();
    assert_eq!(&got[..26], msg);
    assert_eq!(&got[26..], b"bye");
    assert_closed(poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"x")).await);
}

/// The impls on `Pipe` itself (through `&mut`).
#[goro::test]
async fn futures_io_on_owned_pipes() {
    let (mut a, mut b) = pipe();
    let writer = goro::go(async move {
        let n = poll_fn(|cx| Pin::new(&mut b).poll_write(cx, b"owned")).await?;
        poll_fn(|cx| Pin::new(&mut b).poll_close(cx)).await?;
        Ok::<_, std::io::Error>(n)
    });
    let mut buf = [0; 8];
    let n = poll_fn(|cx| Pin::new(&mut a).poll_read(cx, &mut buf)).await.unwrap();
    assert_eq!(&buf[..n], b"owned");
    assert_eq!(writer.await.unwrap().unwrap(), 5);
    assert_eq!(poll_fn(|cx| Pin::new(&mut a).poll_read(cx, &mut buf)).await.unwrap(), 0);
}

/// Two tasks reading through `&Pipe` at once, and one writing: every byte reaches one of them
/// (none waits forever because the other polled after it).
#[goro::test]
async fn futures_io_two_readers_at_once() {
    let (a, b) = arc_pipe();
    let total = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (a, total) = (a.clone(), total.clone());
            goro::go(async move {
                let mut r: &Pipe = &a;
                let mut buf = [0; 10];
                loop {
                    match poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await.unwrap() {
                        0 => break,
                        n => total.fetch_add(n, SeqCst),
                    };
                }
            })
        })
        .collect();
    for _ in 0..50 {
        b.write_all(&[1; 33]).await.unwrap();
    }
    b.close();
    for r in readers {
        within("a reader", r).await.unwrap();
    }
    assert_eq!(total.load(SeqCst), 50 * 33);
}

// ---- goro::synctest ----

/// A G blocked on a pipe made in the bubble (reading, writing, or waiting for the write turn)
/// is durably blocked: `wait` returns.
#[test]
fn a_g_blocked_on_a_pipe_is_durably_blocked() {
    synctest::test(async {
        let (a, b) = arc_pipe();
        let reader = goro::go({
            let a = a.clone();
            async move { a.read(&mut [0; 4]).await }
        });
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                goro::go(async move { b.write_all(b"0123456789").await })
            })
            .collect();
        synctest::wait().await;
        // The reader took 4 bytes of one write and returned; that write waits for a read, the
        // other for its turn.
        assert_eq!(reader.await.unwrap().unwrap(), 4);
        synctest::wait().await;
        assert!(writers.iter().all(|w| !w.is_finished()));
        let dump = goro::runtime::dump();
        assert!(dump.contains("[select") && dump.contains("[sync.Mutex.Lock"), "{dump}");
        a.close();
        for w in writers {
            assert_closed(w.await.unwrap());
        }
    });
}

#[test]
#[should_panic(expected = "deadlock: all goroutines in bubble are blocked")]
fn a_bubble_waiting_on_a_pipe_nobody_writes_is_deadlocked() {
    synctest::test(async {
        let (a, _b) = pipe();
        let _ = a.read(&mut [0; 1]).await;
    });
}

#[test]
#[should_panic(expected = "a net.Pipe of synctest bubble")]
fn a_bubbles_pipe_used_outside_it_panics() {
    let (a, _b) = synctest::test(async { pipe() });
    let _ = a.set_deadline(None);
}

/// Dropping a bubble's pipe outside the bubble does not panic (it outlived its test).
#[test]
fn a_bubbles_pipe_may_be_dropped_outside_it() {
    let (a, b) = synctest::test(async {
        let (a, b) = pipe();
        a.set_deadline(Some(goro::time::now() + SEC)).unwrap();
        (a, b)
    });
    drop(a);
    drop(b);
}

/// A pipe made outside any bubble works inside one.
#[test]
fn a_pipe_made_outside_works_in_a_bubble() {
    let (a, b) = pipe();
    let (a, b) = (Arc::new(a), Arc::new(b));
    let aa = a.clone();
    let w = std::thread::spawn(move || goro::run(async move { aa.write_all(b"from outside").await }));
    let got = synctest::test(async move {
        let mut buf = [0; 12];
        b.read_exact(&mut buf).await.unwrap();
        buf
    });
    assert_eq!(&got, b"from outside");
    w.join().unwrap().unwrap();
    drop(a);
}

/// Under many schedules (PCT), two writers and a reader that keeps giving up its reads on a
/// timeout: every byte arrives once, and every read returns bytes of a single write.
#[test]
fn explored_schedules_lose_no_bytes() {
    synctest::explore(64, || async {
        let (a, b) = arc_pipe();
        let writers: Vec<_> = [1u8, 2]
            .into_iter()
            .map(|v| {
                let a = a.clone();
                goro::go(async move {
                    for i in 0..5 {
                        a.write_all(&[v; 7]).await.unwrap();
                        goro::time::sleep(MS * (i % 3)).await;
                    }
                })
            })
            .collect();
        let reader = goro::go({
            let b = b.clone();
            async move {
                let mut counts = [0usize; 3];
                let mut buf = [0; 5];
                loop {
                    match goro::time::timeout(2 * MS, b.read(&mut buf)).await {
                        Err(_) => continue, // gave up: took nothing
                        Ok(Ok(0)) => return counts,
                        Ok(Ok(n)) => {
                            assert!(buf[..n].iter().all(|&v| v == buf[0]), "a read spans two writes");
                            counts[buf[0] as usize] += n;
                        }
                        Ok(Err(e)) => panic!("{e}"),
                    }
                }
            }
        });
        for w in writers {
            w.await.unwrap();
        }
        a.close();
        assert_eq!(reader.await.unwrap(), [0, 35, 35]);
    });
}
