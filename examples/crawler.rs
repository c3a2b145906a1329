//! A web crawler with a bounded worker pool and errgroup cancellation, as a Go programmer
//! writes one with `golang.org/x/sync/errgroup`:
//!
//! ```go
//! g, ctx := errgroup.WithContext(ctx)
//! g.SetLimit(4)
//! var visit func(url string)
//! visit = func(url string) {
//!     if _, loaded := seen.LoadOrStore(url, true); loaded { return }
//!     g.Go(func() error {
//!         links, err := fetch(ctx, url)
//!         if err != nil { return err }
//!         for _, l := range links { visit(l) }
//!         return nil
//!     })
//! }
//! visit(root)
//! return g.Wait()
//! ```
//!
//! The "web" is a small server on 127.0.0.1 (one line per request, `GET /page/N`, answered
//! with `OK` and the page's links, or an error): page N links to 2N+1 and 2N+2, up to page 62.
//! The first crawl visits all 63 pages, never more than four fetches at once; the second meets
//! a broken page, and its error cancels the fetches still running. Every fetch has a deadline.
//!
//! `cargo run --example crawler`

use goro::context::Context;
use goro::net::{TcpListener, TcpStream};
use goro::sync::errgroup::Group;
use std::collections::BTreeSet;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAGES: u32 = 63;
const WORKERS: usize = 4;

/// The test web: serves `GET /page/N` until the listener is dropped. Page `broken` answers with
/// an error; every answer takes `delay` (a slow server).
async fn serve(ln: TcpListener, broken: Option<u32>, delay: Duration) {
    while let Ok((conn, _)) = ln.accept().await {
        goro::go(async move {
            let mut req = Vec::new();
            let mut buf = [0; 64];
            while !req.ends_with(b"\n") {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let req = String::from_utf8_lossy(&req);
            let page: Option<u32> = req.trim().strip_prefix("GET /page/").and_then(|n| n.parse().ok());
            goro::time::sleep(delay).await;
            let reply = match page {
                Some(n) if Some(n) == broken => "ERR 500 internal server error\n".to_string(),
                Some(n) if n < PAGES => {
                    let links: Vec<String> =
                        [2 * n + 1, 2 * n + 2].iter().filter(|&&l| l < PAGES).map(|l| format!("/page/{l}")).collect();
                    format!("OK {}\n", links.join(" "))
                }
                _ => "ERR 404 not found\n".to_string(),
            };
            let _ = conn.write_all(reply.as_bytes()).await;
        });
    }
}

/// One request (Go's `http.Get` with a context and a deadline): the links of `path`.
async fn fetch(ctx: &Context, addr: SocketAddr, path: &str) -> Result<Vec<String>, String> {
    let get = async {
        let conn = TcpStream::connect(addr).await?;
        conn.set_deadline(Some(Instant::now() + Duration::from_secs(5)))?; // conn.SetDeadline
        conn.write_all(format!("GET {path}\n").as_bytes()).await?;
        let mut reply = Vec::new();
        let mut buf = [0; 256];
        while !reply.ends_with(b"\n") {
            match conn.read(&mut buf).await? {
                0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short reply")),
                n => reply.extend_from_slice(&buf[..n]),
            }
        }
        Ok::<_, io::Error>(String::from_utf8_lossy(&reply).trim().to_string())
    };
    // Give up as soon as the group is cancelled (another fetch failed).
    let reply = match ctx.or_done(get).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(format!("fetch {path}: {e}")),
        Err(e) => return Err(format!("fetch {path}: {e}")),
    };
    match reply.strip_prefix("OK") {
        Some(links) => Ok(links.split_whitespace().map(str::to_string).collect()),
        None => Err(format!("fetch {path}: {reply}")),
    }
}

struct Crawl {
    visited: BTreeSet<String>,
    max_running: usize,
}

/// Crawls from `root` with at most `WORKERS` fetches at once; the first error stops it.
async fn crawl(addr: SocketAddr, root: &str) -> Result<Crawl, String> {
    let (g, ctx) = Group::<String>::with_context(&Context::background());
    g.set_limit(WORKERS as isize);
    let seen = Arc::new(goro::sync::Map::<String, ()>::new());
    let running = Arc::new(AtomicUsize::new(0));
    let max_running = Arc::new(AtomicUsize::new(0));

    struct Shared {
        g: Group<String>,
        ctx: Context,
        seen: Arc<goro::sync::Map<String, ()>>,
        running: Arc<AtomicUsize>,
        max_running: Arc<AtomicUsize>,
        addr: SocketAddr,
    }
    fn visit(s: &Arc<Shared>, url: String) {
        if s.seen.load_or_store(url.clone(), ()).1 {
            return; // seen already
        }
        let s2 = s.clone();
        // `go` never blocks: called from inside a task, it must not wait for a slot held by
        // that very task. The new G waits for its slot instead.
        s.g.go(async move {
            let now = s2.running.fetch_add(1, SeqCst) + 1;
            s2.max_running.fetch_max(now, SeqCst);
            let links = fetch(&s2.ctx, s2.addr, &url).await;
            s2.running.fetch_sub(1, SeqCst);
            for l in links? {
                visit(&s2, l);
            }
            Ok(())
        });
    }
    let shared =
        Arc::new(Shared { g: g.clone(), ctx, seen: seen.clone(), running, max_running: max_running.clone(), addr });
    visit(&shared, root.to_string());
    drop(shared);
    g.wait().await?;
    let mut visited = BTreeSet::new();
    seen.range(|k, _| {
        visited.insert(k.clone());
        true
    });
    Ok(Crawl { visited, max_running: max_running.load(SeqCst) })
}

#[goro::main]
async fn main() -> io::Result<()> {
    // A healthy site: every page is visited once, with at most WORKERS fetches at a time.
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    let server = goro::go(serve(ln, None, Duration::from_millis(2)));
    let start = Instant::now();
    let c = crawl(addr, "/page/0").await.expect("the healthy site crawls without error");
    assert_eq!(c.visited.len(), PAGES as usize, "every page once");
    assert!(c.max_running <= WORKERS, "{} fetches at once", c.max_running);
    println!(
        "crawled {} pages in {:?}, at most {} fetches at once (limit {WORKERS})",
        c.visited.len(),
        start.elapsed(),
        c.max_running
    );
    server.abort();

    // A broken page: its error is the crawl's, and it cancels the rest.
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    let server = goro::go(serve(ln, Some(5), Duration::from_millis(2)));
    let err = crawl(addr, "/page/0").await.err().expect("the broken page fails the crawl");
    assert!(err.starts_with("fetch /page/5: ERR 500"), "{err}");
    println!("second crawl stopped at the first error: {err}");
    server.abort();
    Ok(())
}
