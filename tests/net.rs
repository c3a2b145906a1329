//! `goro::net`: TCP and UDP for Gs on the netpoller.
//!
//! Every test runs on its own runtime with `max_procs(2)` under a watchdog. Nothing sleeps to
//! synchronize: Gs meet through the sockets themselves, join handles and the helpers of
//! `common`; time only bounds the waits.

mod common;

use common::{poll_noop, watchdog, yield_until, HANG};
use futures_io::{AsyncRead, AsyncWrite};
use goro::net::{TcpListener, TcpStream, UdpSocket};
use std::future::{poll_fn, Future};
use std::io::{self, ErrorKind};
use std::net::{Shutdown, SocketAddr};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::Poll;

/// How many clients may be connected but not yet accepted at once. A listener's backlog is
/// 128 (mio's and std's), and Linux drops the connections of a burst beyond it after the
/// client has seen its `connect` succeed, so tests with many clients keep fewer in flight.
const DIALING: usize = 64;

fn dial_limit() -> Arc<goro::sync::semaphore::Semaphore> {
    Arc::new(goro::sync::semaphore::Semaphore::new(DIALING))
}

fn run<F: Future>(f: F) -> F::Output {
    goro::runtime::Builder::new().max_procs(2).build().expect("runtime").block_on(f)
}

/// The byte at `offset` of a test stream `seed`: position-dependent, so a lost, duplicated or
/// reordered byte shows.
fn pattern(seed: u64, offset: u64) -> u8 {
    let x = (offset ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x >> 56) as u8
}

/// A checksum of `data` as it sits at `offset` of a stream (order-sensitive).
fn checksum(acc: u64, offset: u64, data: &[u8]) -> u64 {
    data.iter()
        .enumerate()
        .fold(acc, |a, (i, &b)| a.wrapping_mul(0x100_0000_01B3).wrapping_add(u64::from(b) ^ (offset + i as u64)))
}

/// Accepts forever, echoing every connection until its peer shuts down its writing side, then
/// closing it. Returns the listener's address; the accept loop ends with the runtime.
async fn echo_server() -> io::Result<SocketAddr> {
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    goro::go(async move {
        loop {
            let (conn, _) = ln.accept().await.expect("accept");
            goro::go(echo(conn));
        }
    });
    Ok(addr)
}

async fn echo(conn: TcpStream) {
    let mut buf = vec![0; 64 * 1024];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// One client: sends `len` bytes of stream `seed` from a writer G in chunks of varying size,
/// reads the echo in this G, and checks it byte for byte. Returns the checksum of what came
/// back. Holds a `dial` permit from before its connect until its first echoed byte.
async fn echo_client(addr: SocketAddr, seed: u64, len: u64, dial: Arc<goro::sync::semaphore::Semaphore>) -> u64 {
    dial.acquire(1).await;
    let mut dialing = true;
    let conn = TcpStream::connect(addr).await.expect("connect");
    let (mut r, mut w) = conn.into_split();
    let writer = goro::go(async move {
        let mut off = 0;
        let mut chunk = Vec::new();
        while off < len {
            let n = (1 + (off * 7 + seed) % 3000).min(len - off);
            chunk.clear();
            chunk.extend((off..off + n).map(|o| pattern(seed, o)));
            w.write_all(&chunk).await.expect("write_all");
            off += n;
        }
        w.shutdown().expect("shutdown");
    });
    let mut buf = vec![0; 1 + (seed as usize % 4096)];
    let (mut got, mut sum) = (0u64, 0u64);
    loop {
        let n = r.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        if std::mem::take(&mut dialing) {
            dial.release(1);
        }
        for (i, &b) in buf[..n].iter().enumerate() {
            assert_eq!(b, pattern(seed, got + i as u64), "client {seed}: byte {} wrong", got + i as u64);
        }
        sum = checksum(sum, got, &buf[..n]);
        got += n as u64;
    }
    writer.await.expect("writer G");
    assert_eq!(got, len, "client {seed}: echo length");
    sum
}

#[test]
fn echo_server_200_concurrent_clients() {
    let _w = watchdog("echo_server_200_concurrent_clients", HANG * 4);
    run(async {
        let addr = echo_server().await.unwrap();
        const CLIENTS: u64 = 200;
        const LEN: u64 = 20_000;
        let dial = dial_limit();
        let clients: Vec<_> = (0..CLIENTS).map(|seed| goro::go(echo_client(addr, seed, LEN, dial.clone()))).collect();
        let mut sums = Vec::new();
        for c in clients {
            sums.push(c.await.expect("client G"));
        }
        for (seed, sum) in sums.into_iter().enumerate() {
            let data: Vec<u8> = (0..LEN).map(|o| pattern(seed as u64, o)).collect();
            assert_eq!(sum, checksum(0, 0, &data), "client {seed}: checksum");
        }
    });
}

#[test]
fn idle_connections_cost_no_thread() {
    let _w = watchdog("idle_connections_cost_no_thread", HANG * 2);
    run(async {
        const CONNS: usize = 1_000;
        let ln = Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
        let addr = ln.local_addr().unwrap();
        let (accepted, ended) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let server = goro::go({
            let (accepted, ended) = (accepted.clone(), ended.clone());
            async move {
                for _ in 0..CONNS {
                    let (conn, _) = ln.accept().await.expect("accept");
                    accepted.fetch_add(1, SeqCst);
                    let ended = ended.clone();
                    goro::go(async move {
                        // Parks in the netpoller until the client closes.
                        let n = conn.read(&mut [0; 8]).await.expect("read");
                        assert_eq!(n, 0, "nothing is sent");
                        ended.fetch_add(1, SeqCst);
                    });
                }
            }
        });
        let mut clients = Vec::with_capacity(CONNS);
        for i in 0..CONNS {
            if i >= DIALING {
                yield_until("the server to accept", || accepted.load(SeqCst) > i - DIALING).await;
            }
            clients.push(TcpStream::connect(addr).await.expect("connect"));
        }
        server.await.unwrap();
        yield_until("every server G parked on its socket", || goro::runtime::metrics().io_waiters >= CONNS).await;
        let m = goro::runtime::metrics();
        assert!(m.io_waiters >= CONNS && m.io_waiters <= CONNS + 2, "io_waiters = {}", m.io_waiters);
        assert!(m.goroutines > CONNS, "goroutines = {}", m.goroutines);
        assert!(m.threads <= 16, "{CONNS} Gs waiting on sockets took {} threads", m.threads);
        drop(clients);
        yield_until("every server G saw its peer close", || ended.load(SeqCst) == CONNS).await;
        yield_until("io_waiters back to 0", || goro::runtime::metrics().io_waiters == 0).await;
    });
}

#[test]
fn reader_g_and_writer_g_share_one_connection() {
    let _w = watchdog("reader_g_and_writer_g_share_one_connection", HANG);
    run(async {
        let addr = echo_server().await.unwrap();
        let conn = Arc::new(TcpStream::connect(addr).await.unwrap());
        const LEN: u64 = 4 << 20;
        let writer = goro::go({
            let conn = conn.clone();
            async move {
                let chunk: Vec<u8> = (0..LEN).map(|o| pattern(9, o)).collect();
                for part in chunk.chunks(100_000) {
                    conn.write_all(part).await.expect("write_all");
                }
                conn.shutdown(Shutdown::Write).expect("shutdown");
            }
        });
        let reader = goro::go({
            let conn = conn.clone();
            async move {
                let mut buf = vec![0; 10_000];
                let mut got = 0u64;
                loop {
                    let n = conn.read(&mut buf).await.expect("read");
                    if n == 0 {
                        return got;
                    }
                    for &b in &buf[..n] {
                        assert_eq!(b, pattern(9, got));
                        got += 1;
                    }
                }
            }
        });
        writer.await.unwrap();
        assert_eq!(reader.await.unwrap(), LEN);
    });
}

#[test]
fn concurrent_readers_and_writers_take_turns() {
    let _w = watchdog("concurrent_readers_and_writers_take_turns", HANG);
    run(async {
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = Arc::new(TcpStream::connect(ln.local_addr().unwrap()).await.unwrap());
        let (server, _) = ln.accept().await.unwrap();
        const GS: usize = 8;
        const PER_G: usize = 500;
        // 8 readers wait on one socket at once: each must be woken in its turn.
        let total = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..GS)
            .map(|_| {
                let (client, total) = (client.clone(), total.clone());
                goro::go(async move {
                    let mut buf = [0; 3];
                    loop {
                        let n = client.read(&mut buf).await.expect("read");
                        if n == 0 {
                            return;
                        }
                        total.fetch_add(n, SeqCst);
                    }
                })
            })
            .collect();
        // 8 writers write whole 4-byte records at once: write_all holds the turn, so records
        // never interleave.
        let server = Arc::new(server);
        let writers: Vec<_> = (0..GS)
            .map(|g| {
                let server = server.clone();
                goro::go(async move {
                    for i in 0..PER_G {
                        server.write_all(&[g as u8; 4]).await.expect("write_all");
                        if i % 50 == 0 {
                            goro::runtime::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for w in writers {
            w.await.unwrap();
        }
        server.shutdown(Shutdown::Write).unwrap();
        for r in readers {
            r.await.unwrap();
        }
        assert_eq!(total.load(SeqCst), GS * PER_G * 4);
    });
    // Records from several writers: check they arrive whole.
    run(async {
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(ln.local_addr().unwrap()).await.unwrap();
        let (server, _) = ln.accept().await.unwrap();
        let server = Arc::new(server);
        let record: Vec<Vec<u8>> = (0..4u8).map(|g| vec![g; 50_000]).collect();
        let writers: Vec<_> = record
            .iter()
            .cloned()
            .map(|rec| {
                let server = server.clone();
                goro::go(async move { server.write_all(&rec).await.expect("write_all") })
            })
            .collect();
        let mut buf = vec![0; 50_000];
        let mut seen = Vec::new();
        for _ in 0..4 {
            client.read_exact(&mut buf).await.unwrap();
            assert!(buf.iter().all(|&b| b == buf[0]), "records interleaved");
            seen.push(buf[0]);
        }
        for w in writers {
            w.await.unwrap();
        }
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3]);
    });
}

#[test]
fn peer_close_reads_zero() {
    let _w = watchdog("peer_close_reads_zero", HANG);
    run(async {
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(ln.local_addr().unwrap()).await.unwrap();
        let (server, peer) = ln.accept().await.unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        // A reader already parked when the peer closes is woken with 0.
        let reader = goro::go(async move {
            let mut buf = [0; 16];
            let first = server.read(&mut buf).await.expect("read");
            let second = server.read(&mut buf).await.expect("read after EOF");
            (first, second)
        });
        yield_until("the reader parked", || goro::runtime::metrics().io_waiters >= 1).await;
        drop(client);
        assert_eq!(reader.await.unwrap(), (0, 0));
    });
}

#[test]
fn connect_refused_is_an_error() {
    let _w = watchdog("connect_refused_is_an_error", HANG);
    run(async {
        let addr = {
            let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
            ln.local_addr().unwrap()
        }; // closed: nothing listens there now
        let err = TcpStream::connect(addr).await.expect_err("connect to a closed port");
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
        // An unparsable address (no port).
        assert_eq!(TcpStream::connect("not an address").await.unwrap_err().kind(), ErrorKind::InvalidInput);
    });
}

#[test]
fn accept_loop_with_many_clients() {
    let _w = watchdog("accept_loop_with_many_clients", HANG * 2);
    run(async {
        const CLIENTS: usize = 1_000;
        // Two Gs accept on one listener: every connection goes to exactly one.
        let ln = Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
        let addr = ln.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let (ln, accepted) = (ln.clone(), accepted.clone());
            goro::go(async move {
                loop {
                    let (conn, peer) = ln.accept().await.expect("accept");
                    accepted.fetch_add(1, SeqCst);
                    goro::go(async move {
                        // Tell each client the port it connected from.
                        let _ = conn.write_all(&peer.port().to_be_bytes()).await;
                    });
                }
            });
        }
        let dial = dial_limit();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let dial = dial.clone();
                goro::go(async move {
                    dial.acquire(1).await;
                    let conn = TcpStream::connect(addr).await.expect("connect");
                    let mut port = [0; 2];
                    conn.read_exact(&mut port).await.expect("read_exact");
                    dial.release(1);
                    assert_eq!(u16::from_be_bytes(port), conn.local_addr().unwrap().port());
                    assert_eq!(conn.read(&mut port).await.expect("read"), 0, "the server closed");
                })
            })
            .collect();
        for c in clients {
            c.await.unwrap();
        }
        assert_eq!(accepted.load(SeqCst), CLIENTS);
    });
}

#[test]
fn udp_round_trip() {
    let _w = watchdog("udp_round_trip", HANG);
    run(async {
        let server = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let saddr = server.local_addr().unwrap();
        const MSGS: u32 = 200;
        let echo = goro::go({
            let server = server.clone();
            async move {
                let mut buf = [0; 64];
                for _ in 0..MSGS {
                    let (n, from) = server.recv_from(&mut buf).await.expect("recv_from");
                    server.send_to(&buf[..n], from).await.expect("send_to");
                }
            }
        });
        // One client by address, one connected; lock-step, so no datagram is dropped.
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        b.connect(saddr).await.unwrap();
        assert_eq!(b.peer_addr().unwrap(), saddr);
        let mut buf = [0; 64];
        for i in 0..MSGS / 2 {
            let msg = i.to_le_bytes();
            assert_eq!(a.send_to(&msg, saddr).await.unwrap(), 4);
            let (n, from) = a.recv_from(&mut buf).await.unwrap();
            assert_eq!((&buf[..n], from), (&msg[..], saddr));
            assert_eq!(b.send(&msg).await.unwrap(), 4);
            let n = b.recv(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &msg[..]);
        }
        echo.await.unwrap();
    });
}

#[test]
fn dropped_read_loses_no_readiness() {
    let _w = watchdog("dropped_read_loses_no_readiness", HANG);
    run(async {
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = Arc::new(TcpStream::connect(ln.local_addr().unwrap()).await.unwrap());
        let (server, _) = ln.accept().await.unwrap();
        let mut buf = [0; 16];

        // 1. A read polled until it parks, then dropped; the data comes after: the next read
        //    (same G) gets it.
        {
            let mut read = pin!(client.read(&mut buf));
            assert!(poll_noop(read.as_mut()).is_pending(), "nothing to read yet");
            assert!(goro::runtime::metrics().io_waiters >= 1, "the dropped read was parked");
        }
        server.write_all(b"one").await.unwrap();
        assert_eq!(client.read(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"one");

        // 2. A read dropped while parked, then another G reads: its waker replaces the stale
        //    one and it is woken by the data.
        {
            let mut read = pin!(client.read(&mut buf));
            assert!(poll_noop(read.as_mut()).is_pending());
        }
        let other = goro::go({
            let client = client.clone();
            async move {
                let mut buf = [0; 16];
                let n = client.read(&mut buf).await.expect("read");
                buf[..n].to_vec()
            }
        });
        // Give it a chance to park first (the test holds either way).
        for _ in 0..50 {
            goro::runtime::yield_now().await;
        }
        assert!(!other.is_finished(), "nothing was sent yet");
        server.write_all(b"two").await.unwrap();
        assert_eq!(other.await.unwrap(), b"two");

        // 3. Two sends after a dropped read: the next reads see everything, in order.
        {
            let mut read = pin!(client.read(&mut buf));
            assert!(poll_noop(read.as_mut()).is_pending());
        }
        server.write_all(b"three").await.unwrap();
        server.write_all(b"four").await.unwrap();
        let mut all = [0; 9];
        client.read_exact(&mut all).await.unwrap();
        assert_eq!(&all, b"threefour");

        // 4. Through the trait, on a split half.
        let mut owned = Arc::into_inner(client).expect("the other G is done");
        let (mut r, _w) = owned.split();
        {
            let mut read = pin!(poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)));
            assert!(poll_noop(read.as_mut()).is_pending());
        }
        server.write_all(b"five").await.unwrap();
        assert_eq!(r.read(&mut buf).await.unwrap(), 4);
        assert_eq!(&buf[..4], b"five");
    });
}

#[test]
fn large_transfer_with_partial_reads_and_writes() {
    let _w = watchdog("large_transfer_with_partial_reads_and_writes", HANG * 4);
    run(async {
        const LEN: u64 = 64 << 20;
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(ln.local_addr().unwrap()).await.unwrap();
        let (server, _) = ln.accept().await.unwrap();
        // The sender uses plain `write` and handles short writes itself.
        let sender = goro::go(async move {
            let data: Vec<u8> = (0..LEN).map(|o| pattern(64, o)).collect();
            let (mut off, mut writes, mut short) = (0, 0u64, 0u64);
            while off < data.len() {
                let want = (1 << 20).min(data.len() - off);
                let n = client.write(&data[off..off + want]).await.expect("write");
                assert!(n > 0 && n <= want);
                short += u64::from(n < want);
                writes += 1;
                off += n;
            }
            drop(client);
            (writes, short)
        });
        let mut buf = vec![0; 1 << 16];
        let (mut got, mut reads) = (0u64, 0u64);
        loop {
            // Read sizes vary from 1 byte to 64 KiB.
            let want = 1 + (reads as usize * 7919) % buf.len();
            let n = server.read(&mut buf[..want]).await.unwrap();
            if n == 0 {
                break;
            }
            for &b in &buf[..n] {
                assert_eq!(b, pattern(64, got), "byte {got}");
                got += 1;
            }
            reads += 1;
        }
        assert_eq!(got, LEN);
        let (writes, short) = sender.await.unwrap();
        // 1 MiB writes against a loopback socket buffer: the kernel takes less than asked.
        assert!(short > 0, "{writes} writes, none short: the test did not exercise partial writes");
    });
}

/// Generic over the traits, as a library written for any `AsyncRead`/`AsyncWrite` would be.
async fn copy<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(mut r: R, mut w: W) -> io::Result<u64> {
    let mut buf = [0; 1000];
    let mut total = 0;
    loop {
        let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await?;
        if n == 0 {
            poll_fn(|cx| Pin::new(&mut w).poll_flush(cx)).await?;
            poll_fn(|cx| Pin::new(&mut w).poll_close(cx)).await?;
            return Ok(total);
        }
        let mut done = 0;
        while done < n {
            done += poll_fn(|cx| Pin::new(&mut w).poll_write(cx, &buf[done..n])).await?;
        }
        total += n as u64;
    }
}

#[test]
fn futures_io_traits_through_a_generic_function() {
    let _w = watchdog("futures_io_traits_through_a_generic_function", HANG);
    run(async {
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = ln.local_addr().unwrap();
        // Server: `copy` from the owned read half to the owned write half (an echo).
        let server = goro::go(async move {
            let (conn, _) = ln.accept().await.expect("accept");
            let (r, w) = conn.into_split();
            copy(r, w).await.expect("echo copy")
        });
        // Client: a whole `TcpStream` as the writer (by `&mut`), and a borrowed half.
        let mut client = TcpStream::connect(addr).await.unwrap();
        const LEN: usize = 300_000;
        let data: Vec<u8> = (0..LEN as u64).map(|o| pattern(3, o)).collect();
        let (mut r, mut w) = client.split();
        let mut echoed = Vec::new();
        let mut rbuf = [0; 4096];
        // Write a chunk, read its echo back, in one G, through the traits.
        let mut sent = 0;
        while sent < LEN {
            let end = (sent + 10_000).min(LEN);
            sent += poll_fn(|cx| Pin::new(&mut w).poll_write(cx, &data[sent..end])).await.unwrap();
            while echoed.len() < sent {
                let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut rbuf)).await.unwrap();
                assert!(n > 0, "early end of stream");
                echoed.extend_from_slice(&rbuf[..n]);
            }
        }
        poll_fn(|cx| Pin::new(&mut w).poll_close(cx)).await.unwrap();
        assert!(echoed == data, "echo differs");
        assert_eq!(server.await.unwrap(), LEN as u64);
        // The whole stream by value through `copy`, too: peer closed, so it copies nothing.
        let sink = TcpStream::connect(echo_server().await.unwrap()).await.unwrap();
        assert_eq!(copy(&mut client, sink).await.unwrap(), 0);
    });
}

#[test]
fn outside_a_runtime_constructors_name_goro_run() {
    let bind = pin!(TcpListener::bind("127.0.0.1:0"));
    let Poll::Ready(Err(e)) = poll_noop(bind) else { panic!("bind outside a runtime must fail at once") };
    assert!(e.to_string().contains("goro::run"), "{e}");
    let bind = pin!(UdpSocket::bind("127.0.0.1:0"));
    let Poll::Ready(Err(e)) = poll_noop(bind) else { panic!("udp bind outside a runtime must fail at once") };
    assert!(e.to_string().contains("goro::run"), "{e}");
    // A listener made inside a runtime, to connect to from outside.
    let ln = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let connect = pin!(TcpStream::connect(ln.local_addr().unwrap()));
    let Poll::Ready(Err(e)) = poll_noop(connect) else { panic!("connect outside a runtime must fail at once") };
    assert!(e.to_string().contains("goro::run"), "{e}");
    let e = TcpStream::from_std(std::net::TcpStream::connect(ln.local_addr().unwrap()).unwrap()).unwrap_err();
    assert!(e.to_string().contains("goro::run"), "{e}");
}

#[test]
fn gs_parked_on_sockets_are_dropped_cleanly() {
    let _w = watchdog("gs_parked_on_sockets_are_dropped_cleanly", HANG);
    // A G parked in `accept` or `read` holds a turn borrowed from the socket its own future
    // owns. Aborting it, or dropping the runtime under it, must drop that future in place (it
    // once was moved first, and the turn's release then read garbage).
    for _ in 0..20 {
        let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
        let client = rt.block_on(async {
            let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = ln.local_addr().unwrap();
            let client = TcpStream::connect(addr).await.unwrap();
            let (server, _) = ln.accept().await.unwrap();
            let reader = goro::go(async move { server.read(&mut [0; 8]).await });
            let acceptor = goro::go(async move { ln.accept().await.map(|_| ()) });
            yield_until("both Gs parked", || goro::runtime::metrics().io_waiters >= 2).await;
            reader.abort();
            acceptor.abort();
            assert!(reader.await.unwrap_err().is_cancelled());
            assert!(acceptor.await.unwrap_err().is_cancelled());
            // And left parked for the runtime's shutdown.
            let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let other = TcpStream::connect(ln.local_addr().unwrap()).await.unwrap();
            let (server, _) = ln.accept().await.unwrap();
            goro::go(async move { server.read(&mut [0; 8]).await });
            goro::go(async move { ln.accept().await.map(|_| ()) });
            yield_until("both Gs parked", || goro::runtime::metrics().io_waiters >= 2).await;
            (client, other)
        });
        drop(rt);
        drop(client);
    }
}

// ---- Sockets whose runtime is gone ----
//
// A socket belongs to the runtime it was made on: that runtime's netpoller is what wakes a
// waiting operation. Once the runtime is dropped nothing ever will, so every operation that
// goes through the netpoller must fail with the "has shut down" error instead of waiting
// forever: from a G of another runtime, from a plain thread, through the futures_io traits,
// and when it was already waiting at the moment of the shutdown.

/// The sockets a user might keep out of a runtime: a listener, both ends of a connection, and
/// a UDP socket.
struct Sockets {
    ln: TcpListener,
    client: TcpStream,
    server: TcpStream,
    udp: UdpSocket,
}

fn sockets_on(rt: &goro::runtime::Runtime) -> Sockets {
    rt.block_on(async {
        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(ln.local_addr().unwrap()).await.unwrap();
        let (server, _) = ln.accept().await.unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        Sockets { ln, client, server, udp }
    })
}

fn runtime() -> goro::runtime::Runtime {
    goro::runtime::Builder::new().max_procs(2).build().expect("runtime")
}

/// More than any loopback socket buffers: a `write_all` of it must wait for the peer to read.
fn too_big() -> Vec<u8> {
    vec![7; 64 << 20]
}

/// `r` is the error of an operation on a socket whose runtime has shut down.
#[track_caller]
fn assert_gone<T: std::fmt::Debug>(what: &str, r: io::Result<T>) {
    let e = r.expect_err(what);
    assert_eq!(e.kind(), ErrorKind::Other, "{what}: {e}");
    assert!(e.to_string().contains("has shut down"), "{what}: {e}");
}

/// What stays usable: the calls that do not go through the netpoller, and dropping.
fn check_the_rest(s: Sockets) {
    let addr = s.ln.local_addr().unwrap();
    assert_eq!(s.client.peer_addr().unwrap(), addr);
    assert_eq!(s.server.local_addr().unwrap(), addr);
    s.client.set_nodelay(true).unwrap();
    s.client.shutdown(Shutdown::Write).unwrap();
    assert!(s.udp.local_addr().unwrap().port() != 0);
    drop(s); // leaves a dead runtime's poller: no panic
}

#[test]
fn socket_of_a_dropped_runtime_fails_in_a_g_of_another_runtime() {
    let _w = watchdog("socket_of_a_dropped_runtime_fails_in_a_g_of_another_runtime", HANG);
    let a = runtime();
    let s = sockets_on(&a);
    drop(a);
    let s = runtime().block_on(async move {
        let mut buf = [0; 16];
        // Would wait: no data, a full buffer, no connection, no datagram.
        assert_gone("read", s.client.read(&mut buf).await);
        assert_gone("read_exact", s.client.read_exact(&mut buf).await);
        assert_gone("write_all", s.server.write_all(&too_big()).await);
        assert_gone("accept", s.ln.accept().await);
        assert_gone("recv_from", s.udp.recv_from(&mut buf).await);
        assert_gone("recv", s.udp.recv(&mut buf).await);
        // Would not wait, and fails all the same: the rule does not depend on the buffers.
        assert_gone("write", s.client.write(b"x").await);
        assert_gone("send_to", s.udp.send_to(b"x", s.udp.local_addr().unwrap()).await);
        // A connect registers with the calling G's runtime: a live one, so it works.
        let conn = TcpStream::connect(s.ln.local_addr().unwrap()).await.expect("connect to a dead runtime's listener");
        drop(conn);
        s
    });
    check_the_rest(s);
}

#[test]
fn split_halves_of_a_dropped_runtimes_stream_fail() {
    let _w = watchdog("split_halves_of_a_dropped_runtimes_stream_fail", HANG);
    let a = runtime();
    let mut s = sockets_on(&a);
    drop(a);
    runtime().block_on(async move {
        let mut buf = [0; 16];
        {
            // Borrowed halves, through the futures_io traits.
            let (mut r, mut w) = s.server.split();
            assert_gone("ReadHalf::poll_read", poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await);
            assert_gone("WriteHalf::write_all", w.write_all(&too_big()).await);
            assert_gone("WriteHalf::poll_write", poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"x")).await);
        }
        // Owned halves.
        let (mut r, mut w) = s.client.into_split();
        assert_gone("OwnedReadHalf::read", r.read(&mut buf).await);
        assert_gone("OwnedReadHalf::read_exact", r.read_exact(&mut buf).await);
        assert_gone("OwnedWriteHalf::write_all", w.write_all(&too_big()).await);
        // The whole stream through the traits.
        let mut whole = r.reunite(w).unwrap();
        assert_gone("TcpStream::poll_read", poll_fn(|cx| Pin::new(&mut whole).poll_read(cx, &mut buf)).await);
        assert_gone("TcpStream::poll_write", poll_fn(|cx| Pin::new(&mut whole).poll_write(cx, b"x")).await);
    });
}

#[test]
fn socket_of_a_dropped_runtime_fails_on_a_plain_thread() {
    let _w = watchdog("socket_of_a_dropped_runtime_fails_on_a_plain_thread", HANG);
    let a = runtime();
    let mut s = sockets_on(&a);
    drop(a);
    let mut buf = [0; 16];
    assert_gone("read", common::block_on_plain("read", s.client.read(&mut buf)));
    assert_gone("write_all", common::block_on_plain("write_all", s.server.write_all(&too_big())));
    assert_gone("accept", common::block_on_plain("accept", s.ln.accept()));
    assert_gone("recv_from", common::block_on_plain("recv_from", s.udp.recv_from(&mut buf)));
    let poll_read = poll_fn(|cx| Pin::new(&mut s.client).poll_read(cx, &mut buf));
    assert_gone("AsyncRead::poll_read", common::block_on_plain("poll_read", poll_read));
    check_the_rest(s);
}

#[test]
fn operations_waiting_when_their_runtime_shuts_down_fail() {
    let _w = watchdog("operations_waiting_when_their_runtime_shuts_down_fail", HANG);
    let a = runtime();
    let b = runtime();
    let s = Arc::new(sockets_on(&a));
    // A second connection, neither end of which ever writes.
    let quiet = Arc::new(a.block_on(async {
        let client = TcpStream::connect(s.ln.local_addr().unwrap()).await.unwrap();
        let (server, _) = s.ln.accept().await.unwrap();
        (client, server)
    }));
    // Six operations parked on the sockets of runtime A, each in its own slot (no two of them
    // can complete each other): two on plain threads, three in Gs of runtime B, one in a G of
    // A itself. Both `write_all`s fill a peer that never reads.
    let threads = [
        std::thread::spawn({
            let quiet = quiet.clone();
            move || common::block_on_plain("read", quiet.0.read(&mut [0; 16])).map(drop)
        }),
        std::thread::spawn({
            let s = s.clone();
            move || common::block_on_plain("write_all", s.server.write_all(&too_big()))
        }),
    ];
    let gs = [
        b.spawn({
            let s = s.clone();
            async move { s.ln.accept().await.map(drop) }
        }),
        b.spawn({
            let s = s.clone();
            async move { s.udp.recv_from(&mut [0; 16]).await.map(drop) }
        }),
        b.spawn({
            let s = s.clone();
            async move { s.client.write_all(&too_big()).await }
        }),
    ];
    let own = a.spawn({
        let quiet = quiet.clone();
        async move { quiet.1.read(&mut [0; 16]).await.map(drop) }
    });
    // Every waiter is counted by A's netpoller, whoever it is.
    common::wait_until("six operations parked on A's sockets", || a.metrics().io_waiters == 6);
    drop(a);
    for t in threads {
        assert_gone("a plain thread's operation", t.join().unwrap());
    }
    for g in gs {
        assert_gone("a G of runtime B's operation", g.join().unwrap());
    }
    // A's own G went with A (as every G of a dropped runtime does).
    assert!(own.join().unwrap_err().is_cancelled());
    drop(b);
    drop(quiet);
    check_the_rest(Arc::into_inner(s).expect("every user of the sockets is done"));
}

#[test]
fn a_socket_made_while_its_runtime_shuts_down_is_refused() {
    let _w = watchdog("a_socket_made_while_its_runtime_shuts_down_is_refused", HANG);
    // A G still parked at shutdown is dropped there; its destructor runs inside the dying
    // runtime and tries to bind a socket on it.
    struct BindOnDrop(Arc<std::sync::Mutex<Option<io::Result<UdpSocket>>>>);
    impl Drop for BindOnDrop {
        fn drop(&mut self) {
            let Poll::Ready(r) = poll_noop(pin!(UdpSocket::bind("127.0.0.1:0"))) else { panic!("bind never waits") };
            *self.0.lock().unwrap() = Some(r);
        }
    }
    let got = Arc::new(std::sync::Mutex::new(None));
    let a = runtime();
    let guard = BindOnDrop(got.clone());
    a.spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await
    });
    drop(a);
    let r = got.lock().unwrap().take().expect("the G's destructor ran at shutdown");
    assert_gone("bind during shutdown", r);
}

#[test]
fn a_runtime_dropped_on_its_own_thread_fails_its_sockets() {
    let _w = watchdog("a_runtime_dropped_on_its_own_thread_fails_its_sockets", HANG);
    let a = runtime();
    let s = Arc::new(sockets_on(&a));
    let reader = std::thread::spawn({
        let s = s.clone();
        move || common::block_on_plain("read", s.client.read(&mut [0; 16]))
    });
    common::wait_until("the reader parked on A's socket", || a.metrics().io_waiters == 1);
    // A G of A drops A (the runtime cannot join its own threads then, and says so on stderr).
    let handed = common::Event::new();
    let slot = Arc::new(std::sync::Mutex::new(None));
    a.spawn({
        let (handed, slot) = (handed.clone(), slot.clone());
        async move {
            handed.wait().await;
            let rt: Option<goro::runtime::Runtime> = slot.lock().unwrap().take();
            drop(rt);
        }
    });
    *slot.lock().unwrap() = Some(a);
    handed.set();
    assert_gone("a read parked when its runtime was dropped on its own thread", reader.join().unwrap());
}
