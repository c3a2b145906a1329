//! A TCP echo server in Go's shape: accept in a loop, one G per connection, and a context
//! that shuts it down. The Go original:
//!
//! ```go
//! func handle(conn net.Conn) {
//!     defer conn.Close()
//!     io.Copy(conn, conn) // echo until the client closes
//! }
//!
//! func serve(ctx context.Context, ln net.Listener) error {
//!     go func() { <-ctx.Done(); ln.Close() }() // shut down: Accept fails
//!     for {
//!         conn, err := ln.Accept()
//!         if err != nil {
//!             if ctx.Err() != nil {
//!                 return nil
//!             }
//!             return err
//!         }
//!         go handle(conn)
//!     }
//! }
//! ```
//!
//! In the same program, 16 client Gs connect to it (`127.0.0.1`, a port the system picks),
//! each send 100 messages of 1 B to 8 KiB (bigger than the server's 4 KiB buffer, so an echo
//! may come back in pieces), and check every echo byte for byte. Then `main` cancels the
//! server's context; the server returns, each handler has seen its client's EOF and returned,
//! and no G is left. The run prints the connections served and the bytes echoed, and checks
//! both against what the clients sent. The whole run is also under a 10 s timeout: a hang
//! fails with a message instead of blocking forever.
//!
//! One difference from Go: a goro `TcpListener` has no `Close` callable while another G is in
//! `accept` (dropping it is closing it, and the accepting G owns it). Its `accept` is
//! cancel-safe, though, so the server races it against the context
//! ([`Context::or_done`]) and returns when the context wins, which is what Go's `ln.Close()`
//! from a watcher goroutine achieves.
//!
//! ```text
//! cargo run --release --example echo_server
//! ```

use goro::context::{self, Context, ContextError};
use goro::net::{TcpListener, TcpStream};
use goro::sync::WaitGroup;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many client Gs.
const CLIENTS: usize = 16;
/// How many messages each client sends.
const MESSAGES: usize = 100;
/// The largest message, in bytes.
const MAX_MESSAGE: usize = 8 << 10;
/// The server's read buffer, in bytes (Go's `io.Copy` uses 32 KiB).
const BUFFER: usize = 4 << 10;
/// How long the whole run may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the server counts.
#[derive(Default)]
struct Stats {
    /// Connections accepted.
    connections: AtomicU64,
    /// Bytes read and written back.
    bytes: AtomicU64,
}

/// Echoes what the client sends until it closes the connection (Go's `handle`: `io.Copy(conn,
/// conn)`); the connection is closed when `conn` drops, as by Go's `defer conn.Close()`.
async fn handle(conn: TcpStream, stats: Arc<Stats>) {
    // Request/response traffic: don't let Nagle's algorithm hold back an echo's tail (Go sets
    // TCP_NODELAY on every connection; goro leaves the system default).
    conn.set_nodelay(true).expect("set_nodelay");
    let mut buf = vec![0u8; BUFFER];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return, // EOF (Go's io.EOF ends io.Copy) or a broken connection
            Ok(n) => {
                if conn.write_all(&buf[..n]).await.is_err() {
                    return;
                }
                stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Accepts connections and starts a `handle` G for each, until `ctx` is done (Go's `serve`).
/// The handlers are counted by `handlers`, so that the caller can wait for them.
async fn serve(ctx: Context, ln: TcpListener, handlers: WaitGroup, stats: Arc<Stats>) -> io::Result<()> {
    loop {
        // Go's `conn, err := ln.Accept()`, which fails once the watcher closes `ln`.
        let Ok(accepted) = ctx.or_done(ln.accept()).await else {
            return Ok(()); // shut down: `ln` drops here, closing the listening socket
        };
        let (conn, _peer) = accepted?;
        stats.connections.fetch_add(1, Ordering::Relaxed);
        handlers.go(handle(conn, stats.clone())); // go handle(conn)
    }
}

/// Client `id`'s `i`-th message: its length and bytes are a function of `(id, i)`, and it
/// starts with a readable header, so that a misrouted or reordered echo cannot pass the check.
fn message(id: usize, i: usize) -> Vec<u8> {
    let len = 1 + (id * 7919 + i * 104_729) % MAX_MESSAGE;
    let mut msg = format!("client {id} message {i}|").into_bytes();
    msg.extend((0..).map(|k: usize| (k * 31 + id * 7 + i) as u8).take(len.saturating_sub(msg.len())));
    msg.truncate(len);
    msg
}

/// Connects, sends `MESSAGES` messages one at a time, and checks each echo; returns the bytes
/// sent. Dropping the connection at the end closes it: the server's handler reads EOF.
async fn client(id: usize, addr: SocketAddr) -> io::Result<u64> {
    let conn = TcpStream::connect(addr).await?;
    conn.set_nodelay(true)?;
    let mut sent = 0;
    let mut echo = vec![0u8; MAX_MESSAGE];
    for i in 0..MESSAGES {
        let msg = message(id, i);
        conn.write_all(&msg).await?;
        let echo = &mut echo[..msg.len()];
        conn.read_exact(echo).await?;
        if *echo != *msg {
            let at = echo.iter().zip(&msg).position(|(a, b)| a != b).unwrap();
            return Err(io::Error::other(format!("client {id}: message {i}'s echo differs at byte {at}")));
        }
        sent += msg.len() as u64;
    }
    Ok(sent)
}

/// Starts the server, runs the clients, shuts the server down, and checks the counts.
#[goro::main]
async fn main() {
    let before = goro::runtime::num_goroutine();
    let start = Instant::now();
    let (ctx, cancel) = context::with_timeout(&Context::background(), TIMEOUT);

    let ln = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = ln.local_addr().unwrap();
    let stats = Arc::new(Stats::default());
    let handlers = WaitGroup::new();
    let server = goro::go(serve(ctx.clone(), ln, handlers.clone(), stats.clone()));
    println!("echo server on {addr}: {CLIENTS} clients x {MESSAGES} messages of 1 B to {} KiB", MAX_MESSAGE >> 10);

    let (results_tx, results) = goro::chan::<io::Result<u64>>(CLIENTS);
    for id in 0..CLIENTS {
        let results_tx = results_tx.clone();
        goro::go! {
            results_tx.send(client(id, addr).await).await.unwrap();
        };
    }
    let mut sent = 0;
    for _ in 0..CLIENTS {
        goro::select! {
            recv(results) -> r => sent += r.unwrap().expect("a client failed"),
            recv(ctx.done()) -> _ => panic!("the clients are not done after {TIMEOUT:?}"),
        }
    }
    let clients_done = start.elapsed();

    // Shut down: the server sees ctx done, returns, and closes the listener.
    cancel();
    assert_eq!(ctx.err(), Some(ContextError::Canceled), "cancelled by main, not by the timeout");
    server.await.expect("the server panicked").expect("accept failed");
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is still open after the server returned");

    // Every client has closed its connection, so every handler returns; give them 5 s.
    let (grace, cancel_grace) = context::with_timeout(&Context::background(), Duration::from_secs(5));
    grace.or_done(handlers.wait()).await.expect("connection handlers still running 5 s after the clients left");
    cancel_grace();
    let deadline = Instant::now() + Duration::from_secs(5);
    while goro::runtime::num_goroutine() > before {
        assert!(Instant::now() < deadline, "leaked goroutines: {} > {before}", goro::runtime::num_goroutine());
        goro::runtime::yield_now().await;
    }

    let connections = stats.connections.load(Ordering::Relaxed);
    let echoed = stats.bytes.load(Ordering::Relaxed);
    println!(
        "served {connections} connections, echoed {echoed} bytes ({:.1} MiB) in {clients_done:.1?}",
        echoed as f64 / (1 << 20) as f64
    );
    assert_eq!(connections, CLIENTS as u64, "one connection per client");
    assert_eq!(echoed, sent, "the server echoed exactly what the clients sent");
    println!(
        "every echo matched; server shut down by its context ({}), {} goroutine(s) left; total {:.1?}",
        ctx.err().unwrap(),
        goro::runtime::num_goroutine(),
        start.elapsed()
    );
}
