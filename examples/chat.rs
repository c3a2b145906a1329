//! A TCP chat server with idle deadlines and a graceful shutdown on a signal, as a Go
//! programmer writes one: `signal.NotifyContext` for the shutdown, a hub goroutine that owns
//! the clients, one reader and one writer goroutine per connection, `SetReadDeadline` to drop
//! idle clients and `SetWriteDeadline` so a stuck client cannot hold up the hub.
//!
//! The program plays its own clients on 127.0.0.1: carol says nothing and is dropped by a
//! server with a short idle limit; alice and bob chat on a second server (a long idle limit, so
//! a slow machine cannot drop them); then the program sends itself SIGINT (as Ctrl-C would),
//! and both servers say goodbye to everyone still connected, close, and return. It checks what
//! every client saw.
//!
//! `cargo run --example chat`

use goro::context::Context;
use goro::net::{TcpListener, TcpStream};
use goro::Chan;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads `\n`-terminated lines (Go's `bufio.Scanner`).
struct Lines {
    conn: Arc<TcpStream>,
    buf: Vec<u8>,
}

impl Lines {
    /// The next line, `None` at end of stream.
    async fn next(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Ok(Some(String::from_utf8_lossy(&line[..i]).into_owned()));
            }
            let mut chunk = [0; 512];
            match self.conn.read(&mut chunk).await? {
                0 => return Ok(None),
                n => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

enum Event {
    Join(u64, String, goro::chan::Sender<String>, Arc<TcpStream>),
    Leave(u64),
    Say(u64, String),
}

/// The hub (Go's `for { select { case ev := <-events: ...; case <-ctx.Done(): ... } }`): owns
/// the clients and relays each message to the others.
async fn hub(ctx: Context, events: Chan<Event>) {
    let mut clients: HashMap<u64, (String, goro::chan::Sender<String>)> = HashMap::new();
    let mut conns: HashMap<u64, Arc<TcpStream>> = HashMap::new();
    let done = ctx.done();
    loop {
        goro::select! {
            recv(events) -> ev => match ev {
                Some(Event::Join(id, name, out, conn)) => {
                    for (other, o) in clients.values() {
                        let _ = o.try_send(format!("* {name} joined"));
                        let _ = out.try_send(format!("* {other} is here"));
                    }
                    clients.insert(id, (name, out));
                    conns.insert(id, conn);
                }
                Some(Event::Leave(id)) => {
                    conns.remove(&id);
                    if let Some((name, _)) = clients.remove(&id) {
                        for (_, o) in clients.values() {
                            let _ = o.try_send(format!("* {name} left"));
                        }
                    }
                }
                Some(Event::Say(id, text)) => {
                    let from = clients.get(&id).map(|c| c.0.clone()).unwrap_or_default();
                    for (other, (_, o)) in &clients {
                        if *other != id {
                            // A full outbox is a client that does not keep up: drop the line, as
                            // Go's `select { case out <- msg: default: }` does.
                            let _ = o.try_send(format!("{from}: {text}"));
                        }
                    }
                }
                None => return,
            },
            recv(done) -> _ => {
                for (_, o) in clients.values() {
                    let _ = o.try_send("* server shutting down".to_string());
                }
                // Go's idiom to unblock a reader from outside: a deadline in the past wakes the
                // read waiting on each connection.
                for conn in conns.values() {
                    let _ = conn.set_read_deadline(Some(Instant::now()));
                }
                return; // the outboxes go: every writer says goodbye and closes its connection
            }
        }
    }
}

/// One connection: the first line is the name, then every line is a message. Idle for longer
/// than `idle`, the client is dropped (a read deadline pushed forward before each read).
async fn client(ctx: Context, conn: TcpStream, id: u64, events: Chan<Event>, idle: Duration) {
    let conn = Arc::new(conn);
    let (out_tx, out_rx) = goro::chan::<String>(16);
    let c = conn.clone();
    let writer = goro::go(async move {
        while let Some(line) = out_rx.recv().await {
            c.set_write_deadline(Some(Instant::now() + WRITE_TIMEOUT))?;
            c.write_all(format!("{line}\n").as_bytes()).await?;
        }
        c.shutdown(std::net::Shutdown::Write) // the hub let go of us: close
    });
    let mut lines = Lines { conn: conn.clone(), buf: Vec::new() };
    let mut joined = false;
    loop {
        conn.set_read_deadline(Some(Instant::now() + idle)).ok();
        // Checked after pushing the deadline: if the hub's shutdown deadline came first, this
        // sees the cancellation (which happened before it) and does not wait out `idle`.
        if ctx.is_done() {
            break;
        }
        match lines.next().await {
            Ok(Some(line)) if !joined => {
                joined = true;
                if events.send(Event::Join(id, line, out_tx.clone(), conn.clone())).await.is_err() {
                    break;
                }
            }
            Ok(Some(line)) => {
                if events.send(Event::Say(id, line)).await.is_err() {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                if !ctx.is_done() {
                    let _ = out_tx.try_send("* idle timeout, bye".to_string());
                } // else: the hub woke us to shut down
                break;
            }
            Err(_) => break,
        }
    }
    let _ = events.send(Event::Leave(id)).await;
    drop(out_tx); // the writer drains what is queued, then closes
    let _ = writer.await;
}

/// The server: accepts until `ctx` is cancelled, then waits for the hub.
async fn serve(ctx: Context, ln: TcpListener, idle: Duration) {
    let events = Chan::<Event>::new(64);
    let hub = goro::go(hub(ctx.clone(), events.clone()));
    let mut next_id = 0;
    while let Ok(Ok((conn, _))) = ctx.or_done(ln.accept()).await {
        next_id += 1;
        goro::go(client(ctx.clone(), conn, next_id, events.clone(), idle));
    }
    drop(ln); // stop listening
    hub.await.unwrap();
}

enum Step {
    /// Wait for a line that contains this.
    Expect(&'static str),
    Say(&'static str),
}

/// A scripted client: joins as `name`, plays `script`, tells `played` it is through, then reads
/// until the server closes. Returns every line it received.
async fn chatter(
    addr: std::net::SocketAddr,
    name: &str,
    script: &[Step],
    played: goro::chan::Sender<()>,
) -> io::Result<Vec<String>> {
    let conn = Arc::new(TcpStream::connect(addr).await?);
    let mut lines = Lines { conn: conn.clone(), buf: Vec::new() };
    conn.write_all(format!("{name}\n").as_bytes()).await?;
    let mut got = Vec::new();
    for step in script {
        match step {
            Step::Say(s) => conn.write_all(format!("{s}\n").as_bytes()).await?,
            Step::Expect(e) => loop {
                let line = within(lines.next()).await?.expect("the server closed early");
                got.push(line.clone());
                if line.contains(e) {
                    break;
                }
            },
        }
    }
    drop(played);
    while let Some(line) = within(lines.next()).await? {
        got.push(line);
    }
    Ok(got)
}

/// A failure detector: no step of the example may take this long.
async fn within<F: std::future::Future>(f: F) -> F::Output {
    goro::time::timeout(Duration::from_secs(20), f).await.expect("the chat got stuck")
}

#[goro::main]
async fn main() -> io::Result<()> {
    // ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
    #[cfg(unix)]
    let (ctx, stop) =
        goro::signal::notify_context(&Context::background(), [goro::signal::SIGINT, goro::signal::SIGTERM]);
    #[cfg(not(unix))]
    let (ctx, stop) = goro::context::with_cancel(&Context::background());

    // A server that drops clients idle for 200 ms: carol connects and says nothing.
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let strict_addr = ln.local_addr()?;
    let strict = goro::go(serve(ctx.clone(), ln, Duration::from_millis(200)));
    let (played, _) = goro::chan::<()>(0);
    let carol_saw = within(chatter(strict_addr, "carol", &[], played)).await?;
    assert_eq!(carol_saw.last().map(String::as_str), Some("* idle timeout, bye"), "{carol_saw:?}");

    // A patient server: alice and bob chat. Each first waits to hear of the other (whoever
    // joins second is told the first is there; the first is told the second joined).
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    let patient = goro::go(serve(ctx.clone(), ln, Duration::from_secs(60)));
    let (played, all_played) = goro::chan::<()>(0);
    use Step::*;
    let alice =
        goro::go(chatter(addr, "alice", &[Expect("bob"), Say("hi bob"), Expect("bob: hello alice")], played.clone()));
    let bob = goro::go(chatter(addr, "bob", &[Expect("alice"), Expect("alice: hi bob"), Say("hello alice")], played));
    // Both scripts played (every sender of `played` gone): time to shut down, as Ctrl-C would.
    assert_eq!(within(all_played.recv()).await, None);
    #[cfg(unix)]
    goro::signal::raise(goro::signal::SIGINT)?;
    #[cfg(not(unix))]
    stop();

    let alice_saw = within(alice).await.unwrap()?;
    let bob_saw = within(bob).await.unwrap()?;
    within(patient).await.unwrap();
    within(strict).await.unwrap();
    stop(); // signal.NotifyContext's `defer stop()`: Ctrl-C ends the program again
    println!("carol: {carol_saw:?}\nalice: {alice_saw:?}\nbob:   {bob_saw:?}");
    for saw in [&alice_saw, &bob_saw] {
        assert_eq!(saw.last().map(String::as_str), Some("* server shutting down"), "{saw:?}");
    }
    assert!(ctx.err().is_some());
    println!("both servers shut down cleanly on SIGINT");
    Ok(())
}
