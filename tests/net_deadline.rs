//! Deadlines on sockets (Go's `SetDeadline`, `SetReadDeadline`, `SetWriteDeadline`), and
//! `futures_io` on `&TcpStream` with several tasks waiting at once.

mod common;

use common::{within, HANG};
use futures_io::AsyncRead;
use goro::net::{TcpListener, TcpStream, UdpSocket};
use std::future::poll_fn;
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

async fn pair() -> (TcpStream, TcpStream) {
    let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c = TcpStream::connect(ln.local_addr().unwrap()).await.unwrap();
    let (s, _) = ln.accept().await.unwrap();
    (c, s)
}

/// A read waiting on a silent peer fails with `TimedOut` once the deadline passes (the timer
/// wakes it), not before.
#[test]
fn read_deadline_fires() {
    goro::run(async {
        let (c, _s) = pair().await;
        let deadline = Instant::now() + 20 * MS;
        c.set_read_deadline(Some(deadline)).unwrap();
        let err = within("the read", c.read(&mut [0; 4])).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert_eq!(err.to_string(), "i/o timeout");
        assert!(Instant::now() >= deadline, "timed out early");
    });
}

/// Past the deadline a read fails even with data waiting (Go checks the deadline first); a new
/// deadline (or none) makes the socket usable again, and the data is still there.
#[test]
fn past_deadline_fails_even_when_ready_and_can_be_lifted() {
    goro::run(async {
        let (c, s) = pair().await;
        s.write_all(b"data").await.unwrap();
        c.set_deadline(Some(Instant::now() - MS)).unwrap();
        assert_eq!(c.read(&mut [0; 4]).await.unwrap_err().kind(), ErrorKind::TimedOut);
        assert_eq!(c.write(b"x").await.unwrap_err().kind(), ErrorKind::TimedOut);
        c.set_deadline(Some(Instant::now() + HANG)).unwrap();
        let mut buf = [0; 4];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"data");
        c.set_deadline(None).unwrap();
        c.write_all(b"ok").await.unwrap();
    });
}

/// Go's way to unblock a reader from another goroutine: a deadline in the past, set while the
/// read waits, wakes it.
#[test]
fn deadline_set_while_waiting_wakes_the_read() {
    goro::run(async {
        let (c, s) = pair().await;
        let c = Arc::new(c);
        let (started_tx, started_rx) = goro::chan::<()>(0);
        let c2 = c.clone();
        let reader = goro::go(async move {
            started_tx.send(()).await.unwrap();
            c2.read(&mut [0; 4]).await
        });
        started_rx.recv().await.unwrap();
        goro::runtime::yield_now().await; // usually parked by now; the outcome is the same if not
        c.set_read_deadline(Some(Instant::now())).unwrap();
        let err = within("the woken read", reader).await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        // Moving a deadline further while a read waits lets it complete.
        c.set_read_deadline(Some(Instant::now() + HANG)).unwrap();
        let c3 = c.clone();
        let reader = goro::go(async move {
            let mut b = [0; 2];
            c3.read_exact(&mut b).await.map(|_| b)
        });
        goro::runtime::yield_now().await;
        c.set_read_deadline(Some(Instant::now() + 2 * HANG)).unwrap(); // woken, waits again
        s.write_all(b"hi").await.unwrap();
        assert_eq!(&within("the read", reader).await.unwrap().unwrap(), b"hi");
    });
}

/// A write blocked on a full socket buffer times out.
#[test]
fn write_deadline_fires_on_a_full_buffer() {
    goro::run(async {
        let (c, _s) = pair().await;
        let chunk = vec![0u8; 64 * 1024];
        c.set_write_deadline(Some(Instant::now() + 50 * MS)).unwrap();
        let start = Instant::now();
        let err = within("the writes", async {
            loop {
                if let Err(e) = c.write(&chunk).await {
                    return e;
                }
            }
        })
        .await;
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(start.elapsed() >= 40 * MS);
    });
}

/// UDP receive and TCP accept honour deadlines too.
#[test]
fn udp_and_listener_deadlines() {
    goro::run(async {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.set_read_deadline(Some(Instant::now() + 10 * MS)).unwrap();
        let err = within("recv_from", sock.recv_from(&mut [0; 8])).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        sock.set_read_deadline(None).unwrap();
        let me = sock.local_addr().unwrap();
        sock.send_to(b"ping", me).await.unwrap();
        let (n, _) = within("recv_from", sock.recv_from(&mut [0; 8])).await.unwrap();
        assert_eq!(n, 4);

        let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
        ln.set_deadline(Some(Instant::now() + 10 * MS)).unwrap();
        assert_eq!(within("accept", ln.accept()).await.unwrap_err().kind(), ErrorKind::TimedOut);
        ln.set_deadline(None).unwrap();
        let addr = ln.local_addr().unwrap();
        goro::go(async move { TcpStream::connect(addr).await.map(drop) });
        within("accept", ln.accept()).await.unwrap();
    });
}

/// Several tasks reading through `&TcpStream` at once (which cannot take turns), and one in the
/// turn-taking `read`: each byte the peer sends wakes every waiter, so all of them get a byte
/// and none waits forever because another polled after it.
#[test]
fn every_waiter_through_shared_refs_is_woken() {
    goro::run(async {
        let (c, s) = pair().await;
        let c = Arc::new(c);
        const READERS: usize = 4;
        let (got_tx, got_rx) = goro::chan::<usize>(READERS);
        for i in 0..READERS {
            let (c, got_tx) = (c.clone(), got_tx.clone());
            goro::go(async move {
                let mut b = [0; 1];
                let n = if i == 0 {
                    c.read(&mut b).await.unwrap() // the async method, holding its turn
                } else {
                    let mut r: &TcpStream = &c;
                    poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut b)).await.unwrap()
                };
                assert_eq!(n, 1);
                got_tx.send(i).await.unwrap();
            });
        }
        let mut seen = [false; READERS];
        for _ in 0..READERS {
            goro::runtime::yield_now().await;
            s.write_all(b"x").await.unwrap(); // one byte: exactly one reader gets it
            let i = within("a woken reader", got_rx.recv()).await.unwrap();
            assert!(!seen[i]);
            seen[i] = true;
        }
    });
}
