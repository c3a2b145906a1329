//! `goro::hyper`: hyper served from Gs, as a Go server's tests would check it. Round trips in
//! HTTP/1.1 and HTTP/2 over TCP, Go's header and idle timeouts (in a `synctest` bubble over a
//! `Pipe`, on the fake clock, and once over TCP), the graceful shutdown of
//! `serve_with_context` under load, and abuse: a slowloris client, malformed requests,
//! clients that vanish mid-request, none of which may leave a G behind.
//!
//! Nothing here sleeps to synchronize: the bubble's `synctest::wait` says when the other Gs are
//! blocked; over TCP, time only bounds waits, as a failure detector ([`HANG`]).

#[path = "../../common/mod.rs"]
mod common;

use common::{within, HANG};
use goro::chan::{Receiver, Sender};
use goro::context::{self, Context};
use goro::hyper::{Executor, Io, Server, Timer};
use goro::net::{pipe, Pipe, TcpListener, TcpStream};
use goro::synctest;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEC: Duration = Duration::from_secs(1);

type Body = Full<Bytes>;

/// What the handlers of these tests can be told.
#[derive(Clone)]
struct Env {
    /// `/wait` answers once it receives from here.
    release: Receiver<()>,
    /// `/wait` sends here when it has begun.
    begun: Sender<()>,
    /// Requests answered.
    answered: Arc<AtomicUsize>,
}

/// The test server's handler (Go's `http.HandlerFunc` with a `switch r.URL.Path`).
async fn handle(env: Env, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let body = match req.uri().path() {
        "/" => Bytes::from_static(b"Hello, World!"),
        "/echo" => match req.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
        },
        "/wait" => {
            let _ = env.begun.send(()).await;
            env.release.recv().await;
            Bytes::from_static(b"released")
        }
        "/panic" => panic!("the handler panics"),
        "/sleep" => {
            goro::time::sleep(60 * SEC).await;
            Bytes::from_static(b"slept")
        }
        _ => return Ok(status(StatusCode::NOT_FOUND)),
    };
    env.answered.fetch_add(1, SeqCst);
    Ok(Response::new(Full::new(body)))
}

fn status(code: StatusCode) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

/// The environment, and the ends that drive `/wait`: close `release` to answer them all.
fn env() -> (Env, Sender<()>, Receiver<()>) {
    let (release_tx, release) = goro::chan::<()>(0);
    let (begun, begun_rx) = goro::chan::<()>(1024);
    (Env { release, begun, answered: Arc::new(AtomicUsize::new(0)) }, release_tx, begun_rx)
}

macro_rules! service {
    ($env:expr) => {{
        let env = $env.clone();
        service_fn(move |req| handle(env.clone(), req))
    }};
}

/// An HTTP/1.1 client connection on `io`, its connection driven by a G.
async fn h1<T>(io: T) -> hyper::client::conn::http1::SendRequest<Body>
where
    Io<T>: hyper::rt::Read + hyper::rt::Write + Send + Unpin + 'static,
    T: Send + 'static,
{
    let (send, conn) = synctest::durable(hyper::client::conn::http1::handshake(Io::new(io))).await.expect("handshake");
    goro::go(synctest::durable(conn));
    send
}

/// Sends `req` on `client` once the connection can take it (the previous response read:
/// hyper's `send_request` fails otherwise). hyper's client waits on its connection's G
/// through a channel of its own, which in a bubble only the bubble wakes.
async fn send(
    client: &mut hyper::client::conn::http1::SendRequest<Body>,
    req: Request<Body>,
) -> hyper::Result<Response<Incoming>> {
    synctest::durable(async {
        client.ready().await?;
        client.send_request(req).await
    })
    .await
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).header("host", "test").body(Full::default()).unwrap()
}

async fn text(resp: Response<Incoming>) -> String {
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Waits until the runtime has no more Gs than `baseline` (each connection's G has ended).
async fn settles_to(baseline: usize) {
    let start = Instant::now();
    while goro::runtime::num_goroutine() > baseline {
        assert!(
            start.elapsed() < HANG,
            "{} Gs left, {baseline} expected:\n{}",
            goro::runtime::num_goroutine(),
            goro::runtime::dump()
        );
        goro::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Reads until the peer closes, returning what came.
async fn read_to_end(conn: &TcpStream) -> io::Result<Vec<u8>> {
    let mut all = Vec::new();
    let mut buf = [0; 4096];
    loop {
        match conn.read(&mut buf).await? {
            0 => return Ok(all),
            n => all.extend_from_slice(&buf[..n]),
        }
    }
}

/// A listener and the server serving it on a G of its own, shut down with the returned cancel.
async fn start(
    server: Server,
    env: &Env,
) -> (std::net::SocketAddr, context::CancelFunc, goro::runtime::JoinHandle<io::Result<()>>) {
    let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = ln.local_addr().unwrap();
    let (ctx, cancel) = context::with_cancel(&Context::background());
    let served = goro::go(server.serve_with_context(&ctx, ln, service!(env)));
    (addr, cancel, served)
}

#[test]
fn http1_keep_alive_round_trips() {
    goro::run(async {
        let (env, _release, _begun) = env();
        let (addr, cancel, served) = start(Server::new(), &env).await;
        let mut client = h1(TcpStream::connect(addr).await.unwrap()).await;
        for i in 0..20 {
            let resp = send(&mut client, get("/")).await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(text(resp).await, "Hello, World!");
            let body = format!("request {i}");
            let req = Request::post("/echo").header("host", "test").body(Full::new(Bytes::from(body.clone()))).unwrap();
            assert_eq!(text(send(&mut client, req).await.unwrap()).await, body);
        }
        let resp = send(&mut client, get("/nowhere")).await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(env.answered.load(SeqCst), 40);
        cancel();
        within("serve_with_context", served).await.unwrap().unwrap();
    });
}

#[test]
fn http2_streams_run_at_once() {
    goro::run(async {
        let (env, release, begun) = env();
        let (addr, cancel, served) = start(Server::new(), &env).await;
        let io = Io::new(TcpStream::connect(addr).await.unwrap());
        let (client, conn) = hyper::client::conn::http2::Builder::new(Executor)
            .timer(Timer)
            .handshake::<_, Body>(io)
            .await
            .expect("h2 handshake");
        goro::go(async move {
            let _ = conn.await;
        });
        // Ten `/wait` streams on one connection, all begun before any is answered: each
        // stream's handler runs on a G of its own.
        let waits: Vec<_> = (0..10)
            .map(|_| {
                let mut client = client.clone();
                goro::go(async move {
                    let resp = client.send_request(get("http://test/wait")).await.unwrap();
                    assert_eq!(resp.version(), hyper::Version::HTTP_2);
                    text(resp).await
                })
            })
            .collect();
        for _ in 0..10 {
            within("a /wait stream to begin", begun.recv()).await.unwrap();
        }
        release.close();
        for w in waits {
            assert_eq!(within("a /wait stream", w).await.unwrap(), "released");
        }
        cancel();
        within("serve_with_context", served).await.unwrap().unwrap();
    });
}

/// Go's `Shutdown` under load: it stops accepting, answers every request it had begun, closes
/// the idle connections, and returns with no connection's G left.
#[test]
fn shutdown_under_load_finishes_what_it_began() {
    goro::run(async {
        let baseline = goro::runtime::num_goroutine();
        let (env, release, begun) = env();
        let (addr, cancel, served) = start(Server::new(), &env).await;
        // Busy clients: each sends requests back to back until its connection is closed.
        let sent = Arc::new(AtomicUsize::new(0));
        let busy: Vec<_> = (0..8)
            .map(|_| {
                let sent = sent.clone();
                goro::go(async move {
                    let mut client = h1(TcpStream::connect(addr).await.unwrap()).await;
                    let mut ok = 0;
                    while let Ok(resp) = send(&mut client, get("/")).await {
                        assert_eq!(text(resp).await, "Hello, World!");
                        ok += 1;
                        sent.fetch_add(1, SeqCst);
                    }
                    ok
                })
            })
            .collect();
        // Idle keep-alive connections, and requests in flight.
        let mut idle = Vec::new();
        for _ in 0..4 {
            let mut c = h1(TcpStream::connect(addr).await.unwrap()).await;
            assert_eq!(text(send(&mut c, get("/")).await.unwrap()).await, "Hello, World!");
            idle.push(c);
        }
        let waits: Vec<_> = (0..4)
            .map(|_| {
                goro::go(async move {
                    let mut c = h1(TcpStream::connect(addr).await.unwrap()).await;
                    text(send(&mut c, get("/wait")).await.unwrap()).await
                })
            })
            .collect();
        for _ in 0..4 {
            within("a /wait request to begin", begun.recv()).await.unwrap();
        }
        while sent.load(SeqCst) < 100 {
            goro::runtime::yield_now().await;
        }

        cancel();
        // The listener is closed: a new connection is refused (or, if the kernel had queued
        // it before the close, reset unanswered).
        let refused = async {
            loop {
                match TcpStream::connect(addr).await {
                    Err(_) => return,
                    Ok(c) => {
                        let _ = c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await;
                        if read_to_end(&c).await.map_or(true, |v| v.is_empty()) {
                            return;
                        }
                        // Accepted before the shutdown: it was served; try again.
                    }
                }
            }
        };
        within("the listener to close", refused).await;
        // The idle connections are closed by the server.
        for c in idle {
            within("an idle connection to close", async {
                while !c.is_closed() {
                    goro::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .await;
        }
        // The requests in flight are answered, then their connections close.
        release.close();
        for w in waits {
            assert_eq!(within("a /wait request", w).await.unwrap(), "released");
        }
        for b in busy {
            assert!(within("a busy client", b).await.unwrap() > 0);
        }
        within("serve_with_context", served).await.unwrap().unwrap();
        settles_to(baseline).await;
    });
}

#[test]
fn malformed_requests_get_400_and_leave_no_g() {
    goro::run(async {
        let baseline = goro::runtime::num_goroutine();
        let (env, _release, _begun) = env();
        let (addr, cancel, served) = start(Server::new(), &env).await;
        let garbage: [&[u8]; 4] = [
            b"GARBAGE\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Header Line\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ];
        for req in garbage {
            let conn = TcpStream::connect(addr).await.unwrap();
            conn.write_all(req).await.unwrap();
            let resp = within("a 400", read_to_end(&conn)).await.unwrap();
            let resp = String::from_utf8_lossy(&resp);
            assert!(resp.starts_with("HTTP/1.1 400 Bad Request"), "{:?} got {resp:?}", String::from_utf8_lossy(req));
        }
        cancel();
        within("serve_with_context", served).await.unwrap().unwrap();
        settles_to(baseline).await;
    });
}

#[test]
fn clients_that_vanish_leave_no_g() {
    goro::run(async {
        let (env, release, begun) = env();
        let (addr, cancel, served) = start(Server::new(), &env).await;
        let baseline = goro::runtime::num_goroutine();
        // Mid-header, mid-body, and while the handler is at work.
        let partial: [&[u8]; 3] = [
            b"GET / HTTP/1.1\r\nHost: x\r\nX-Half",
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly this",
            b"GET /wait HTTP/1.1\r\nHost: x\r\n\r\n",
        ];
        for (i, req) in partial.into_iter().enumerate() {
            let conn = TcpStream::connect(addr).await.unwrap();
            conn.write_all(req).await.unwrap();
            if i == 2 {
                within("the /wait request to begin", begun.recv()).await.unwrap();
            }
            drop(conn);
        }
        // The handler at work goes on (Go does not stop a handler whose client left either);
        // once it returns, its answer finds no one and its connection's G ends too.
        release.close();
        settles_to(baseline).await;
        cancel();
        within("serve_with_context", served).await.unwrap().unwrap();
    });
}

/// Go's `ReadHeaderTimeout` against a slowloris client over real TCP: the connection is closed
/// once the header has taken too long, however steadily the bytes trickle in.
#[test]
fn slowloris_is_cut_off_over_tcp() {
    goro::run(async {
        let baseline = goro::runtime::num_goroutine();
        let (env, _release, _begun) = env();
        let server = Server::new().read_header_timeout(Duration::from_millis(200));
        let (addr, cancel, served) = start(server, &env).await;
        let conn = TcpStream::connect(addr).await.unwrap();
        let start = Instant::now();
        let trickle = async {
            for b in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ".iter().cycle() {
                if conn.write_all(&[*b]).await.is_err() {
                    return;
                }
                goro::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let closed = async {
            let mut buf = [0; 64];
            // The server answers nothing and closes (a reset may come instead of an EOF).
            matches!(conn.read(&mut buf).await, Ok(0) | Err(_))
        };
        let (_, closed) = within("the slowloris connection to be closed", futures_join(trickle, closed)).await;
        assert!(closed);
        assert!(start.elapsed() >= Duration::from_millis(200));
        cancel();
        within("serve_with_context", served).await.unwrap().unwrap();
        settles_to(baseline).await;
    });
}

/// Polls both futures to their ends.
async fn futures_join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none() {
            if let std::task::Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let std::task::Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        if ra.is_some() && rb.is_some() {
            std::task::Poll::Ready((ra.take().unwrap(), rb.take().unwrap()))
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

/// A server in a bubble: one connection over a `Pipe`, served by `server`.
fn serve_pipe(server: Server, env: &Env) -> (Pipe, goro::runtime::JoinHandle<Result<(), goro::hyper::Error>>) {
    let (client, conn) = pipe();
    let served = goro::go(server.serve_connection(conn, service!(env)));
    (client, served)
}

/// `ReadHeaderTimeout` on the bubble's clock: a header that has not come in full 5 s after the
/// connection began closes it, at 5 s exactly.
#[test]
fn read_header_timeout_in_a_bubble() {
    synctest::test(async {
        let (env, _release, _begun) = env();
        let server = Server::new().read_header_timeout(5 * SEC);
        let (client_end, served) = serve_pipe(server, &env);
        let start = goro::time::now();
        client_end.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        synctest::sleep(4 * SEC).await;
        assert!(!served.is_finished());
        let err = served.await.unwrap().unwrap_err();
        assert_eq!(goro::time::now() - start, 5 * SEC, "{err}");
        let mut buf = [0; 16];
        assert_eq!(client_end.read(&mut buf).await.unwrap_or(0), 0);
    });
}

/// The header timeout does not run while a request is being answered, however long that takes.
#[test]
fn a_slow_handler_is_not_a_slow_header() {
    synctest::test(async {
        let (env, _release, _begun) = env();
        let server = Server::new().read_header_timeout(5 * SEC);
        let (client_end, served) = serve_pipe(server, &env);
        let mut client = h1(client_end).await;
        let start = goro::time::now();
        let resp = send(&mut client, get("/sleep")).await.unwrap();
        assert_eq!(text(resp).await, "slept");
        assert_eq!(goro::time::now() - start, 60 * SEC);
        // The next request has its own 5 s: a keep-alive connection idles without a limit
        // (no IdleTimeout), and a header that begins is timed from its first byte.
        synctest::sleep(3600 * SEC).await;
        assert!(!served.is_finished());
        assert_eq!(text(send(&mut client, get("/")).await.unwrap()).await, "Hello, World!");
        drop(client);
        // The client hangs up: the server ends, cleanly or with the broken pipe of a frame it
        // was writing as the client left.
        if let Err(e) = served.await.unwrap() {
            let io = e.source().and_then(|e| e.downcast_ref::<io::Error>()).map(io::Error::kind);
            assert_eq!(io, Some(io::ErrorKind::BrokenPipe), "{e}");
        }
    });
}

/// Go's `IdleTimeout`: a keep-alive connection is closed once it has waited that long for its
/// next request after a response, and not before.
#[test]
fn idle_timeout_in_a_bubble() {
    synctest::test(async {
        let (env, _release, _begun) = env();
        let server = Server::new().read_header_timeout(5 * SEC).idle_timeout(30 * SEC);
        let (client_end, served) = serve_pipe(server, &env);
        let mut client = h1(client_end).await;
        for _ in 0..3 {
            // 29 s idle between requests: under the limit (and far over the header's 5 s).
            assert_eq!(text(send(&mut client, get("/")).await.unwrap()).await, "Hello, World!");
            synctest::sleep(29 * SEC).await;
            assert!(!served.is_finished());
        }
        let idle_from = goro::time::now();
        assert_eq!(text(send(&mut client, get("/")).await.unwrap()).await, "Hello, World!");
        served.await.unwrap().unwrap();
        assert_eq!(goro::time::now() - idle_from, 30 * SEC);
        // The client's connection sees the close once it runs.
        synctest::wait().await;
        assert!(client.is_closed());
    });
}

/// HTTP/2 in a bubble: the streams' Gs (spawned by `goro::hyper::Executor`) and the
/// connection's G wait on hyper's own channels, which only the bubble wakes, so the bubble's
/// clock advances under a slow handler as it would for Go's goroutines.
#[test]
fn http2_in_a_bubble() {
    synctest::test(async {
        let (env, _release, _begun) = env();
        let (client_end, served) = serve_pipe(Server::new().read_header_timeout(5 * SEC), &env);
        let (client, conn) = synctest::durable(
            hyper::client::conn::http2::Builder::new(Executor).timer(Timer).handshake::<_, Body>(Io::new(client_end)),
        )
        .await
        .expect("h2 handshake");
        goro::go(synctest::durable(conn));
        let start = goro::time::now();
        let slow: Vec<_> = (0..3)
            .map(|_| {
                let mut client = client.clone();
                goro::go(async move {
                    let resp = synctest::durable(client.send_request(get("http://test/sleep"))).await.unwrap();
                    synctest::durable(text(resp)).await
                })
            })
            .collect();
        for s in slow {
            assert_eq!(s.await.unwrap(), "slept");
        }
        // Three streams at once, each a minute: a minute in all.
        assert_eq!(goro::time::now() - start, 60 * SEC);
        drop(client);
        // The client hangs up: the server ends, cleanly or with the broken pipe of a frame it
        // was writing as the client left.
        if let Err(e) = served.await.unwrap() {
            let io = e.source().and_then(|e| e.downcast_ref::<io::Error>()).map(io::Error::kind);
            assert_eq!(io, Some(io::ErrorKind::BrokenPipe), "{e}");
        }
    });
}

/// A handler that panics ends its connection (HTTP/1) or its stream (HTTP/2), as Go's
/// `net/http` recovers it: the server goes on serving, and a shutdown still returns with no G
/// left.
#[test]
fn a_panicking_handler_ends_its_connection_not_the_server() {
    goro::run(async {
        let baseline = goro::runtime::num_goroutine();
        let (env, _release, _begun) = env();
        let (addr, cancel, served) = start(Server::new(), &env).await;
        let mut client = h1(TcpStream::connect(addr).await.unwrap()).await;
        send(&mut client, get("/panic")).await.unwrap_err();
        let mut client = h1(TcpStream::connect(addr).await.unwrap()).await;
        assert_eq!(text(send(&mut client, get("/")).await.unwrap()).await, "Hello, World!");

        let io = Io::new(TcpStream::connect(addr).await.unwrap());
        let (h2, conn) = hyper::client::conn::http2::Builder::new(Executor)
            .timer(Timer)
            .handshake::<_, Body>(io)
            .await
            .expect("h2 handshake");
        goro::go(conn);
        h2.clone().send_request(get("http://test/panic")).await.unwrap_err();
        let resp = h2.clone().send_request(get("http://test/")).await.unwrap();
        assert_eq!(text(resp).await, "Hello, World!");
        drop((client, h2));

        cancel();
        within("serve_with_context", served).await.unwrap().unwrap();
        settles_to(baseline).await;
    });
}
