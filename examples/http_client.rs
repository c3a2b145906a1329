//! hyper's HTTP client on goroutines: 50 URLs fetched by an errgroup with `SetLimit(8)`, each
//! request under a timeout, from a server the program starts itself. The Go original:
//!
//! ```go
//! // get fetches url; its context bounds the whole request, the body included.
//! func get(ctx context.Context, url string) ([]byte, error) {
//!     req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
//!     if err != nil {
//!         return nil, err
//!     }
//!     resp, err := http.DefaultClient.Do(req)
//!     if err != nil {
//!         return nil, err
//!     }
//!     defer resp.Body.Close()
//!     if resp.StatusCode != http.StatusOK {
//!         return nil, fmt.Errorf("Get %q: %s", url, resp.Status) // as the client's own errors read
//!     }
//!     return io.ReadAll(resp.Body)
//! }
//!
//! // fetchAll fetches every URL, at most limit at once, each within perRequest; the first
//! // error cancels the fetches still running.
//! func fetchAll(ctx context.Context, urls []string, limit int, perRequest time.Duration) ([][]byte, error) {
//!     g, ctx := errgroup.WithContext(ctx)
//!     g.SetLimit(limit)
//!     bodies := make([][]byte, len(urls))
//!     for i, url := range urls {
//!         g.Go(func() error {
//!             ctx, cancel := context.WithTimeout(ctx, perRequest)
//!             defer cancel()
//!             body, err := get(ctx, url)
//!             bodies[i] = body
//!             return err
//!         })
//!     }
//!     return bodies, g.Wait()
//! }
//!
//! func main() {
//!     // ... serve /item/{n} and /slow on ln with a net/http server (see http_server.rs), then:
//!     urls := make([]string, 50)
//!     for i := range urls {
//!         urls[i] = fmt.Sprintf("http://%s/item/%d", ln.Addr(), i)
//!     }
//!     bodies, err := fetchAll(context.Background(), urls, 8, 2*time.Second)
//!     if err != nil {
//!         log.Fatal(err)
//!     }
//!     // ... check that bodies[i] is {"n":i,"square":i*i}
//!
//!     // A slow URL among fast ones, 100 ms each: the slow one's timeout is the group's error.
//!     _, err = fetchAll(context.Background(), append(urls[:5:5], slowURL), 8, 100*time.Millisecond)
//!     fmt.Println(err) // Get "http://127.0.0.1:.../slow": context deadline exceeded
//! }
//! ```
//!
//! goro has no `http.Client`: a request is hyper's own, on a connection of its own here (Go's
//! client would keep the connections in a pool). `get` dials with `goro::net::TcpStream`,
//! hands it to `hyper::client::conn::http1::handshake` through `goro::hyper::Io`, and drives
//! the connection in a G (`goro::go(conn)`); `goro::time::timeout` is the per-request
//! `context.WithTimeout`, and the group's context (`Context::or_done`) stops the fetches still
//! running once one has failed. The results come back on a channel instead of being written
//! into a shared slice.
//!
//! The server is in the same process: `/item/N` answers `{"n":N,"square":N²}` after 5 ms of
//! "work" and counts how many requests it serves at once, so the run can check that the limit
//! held; `/slow` takes 300 ms. The program checks all 50 answers, the limit and the timeout,
//! shuts the server down, checks that no G is left, and exits 0:
//!
//! ```text
//! cargo run --release --features hyper --example http_client
//! ```

use goro::context::{self, Context};
use goro::hyper::{Error, Io};
use goro::net::{TcpListener, TcpStream};
use goro::sync::errgroup::Group;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri};
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// How many URLs the group fetches.
const URLS: u64 = 50;
/// The group's limit (Go's `g.SetLimit(8)`).
const LIMIT: usize = 8;
/// Each request's timeout in the first run.
const PER_REQUEST: Duration = Duration::from_secs(2);
/// What `/item/N` takes to answer.
const WORK: Duration = Duration::from_millis(5);
/// What `/slow` takes to answer.
const SLOW: Duration = Duration::from_millis(300);
/// Each request's timeout in the second run, which `/slow` misses.
const SHORT: Duration = Duration::from_millis(100);

/// The answer of `/item/N`.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Item {
    n: u64,
    square: u64,
}

/// Requests the server is answering now, and the most it answered at once.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static MAX_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// The server's handler: `/item/N` and `/slow`, routed by path.
async fn route(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path();
    if path == "/slow" {
        goro::time::sleep(SLOW).await;
        return Ok(Response::new(Full::new(Bytes::from_static(b"finally\n"))));
    }
    let Some(n) = path.strip_prefix("/item/").and_then(|n| n.parse::<u64>().ok()) else {
        let mut resp = Response::new(Full::new(Bytes::from_static(b"404 page not found\n")));
        *resp.status_mut() = StatusCode::NOT_FOUND;
        return Ok(resp);
    };
    let now = IN_FLIGHT.fetch_add(1, SeqCst) + 1;
    MAX_IN_FLIGHT.fetch_max(now, SeqCst);
    goro::time::sleep(WORK).await; // the work
    IN_FLIGHT.fetch_sub(1, SeqCst);
    let mut resp = Response::new(Full::new(Bytes::from(serde_json::to_vec(&Item { n, square: n * n }).unwrap())));
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(resp)
}

/// One GET on a connection of its own: the body if the status is 200 OK, else the status as
/// the error.
async fn get(url: &str) -> Result<Bytes, Error> {
    let uri: Uri = url.parse()?;
    let host = uri.authority().ok_or("a URL without a host")?.as_str();
    let stream = TcpStream::connect(host).await?;
    stream.set_nodelay(true)?; // as Go's net.Dial does
    let (mut sender, conn) = hyper::client::conn::http1::handshake(Io::new(stream)).await?;
    // The connection's G reads and writes for `sender`; it ends once `sender` is dropped and
    // the response has been read (or at once, if this request is given up).
    goro::go(conn);
    let req = Request::get(uri.path()).header(header::HOST, host).body(Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    if resp.status() != StatusCode::OK {
        return Err(resp.status().to_string().into()); // fetch_all says which URL
    }
    Ok(resp.into_body().collect().await?.to_bytes())
}

/// Fetches every URL, at most `limit` at once, each within `per_request`; the first error
/// cancels the fetches still running and is returned. The bodies are in the order of `urls`.
async fn fetch_all(ctx: &Context, urls: &[String], limit: usize, per_request: Duration) -> Result<Vec<Bytes>, String> {
    // g, ctx := errgroup.WithContext(ctx); g.SetLimit(limit)
    let (g, ctx) = Group::<String>::with_context(ctx);
    g.set_limit(limit as isize);
    let (bodies_tx, bodies_rx) = goro::chan::<(usize, Bytes)>(urls.len());
    for (i, url) in urls.iter().cloned().enumerate() {
        let (ctx, bodies_tx) = (ctx.clone(), bodies_tx.clone());
        g.go(async move {
            // ctx, cancel := context.WithTimeout(ctx, perRequest): the group's cancel, or the
            // request's own timeout, whichever comes first.
            let got = match ctx.or_done(goro::time::timeout(per_request, get(&url))).await {
                Ok(Ok(got)) => got,
                Ok(Err(elapsed)) => Err(elapsed.into()),
                Err(cancelled) => Err(cancelled.into()),
            };
            // As Go's client reports a failed request (a `*url.Error`).
            let body = got.map_err(|e| format!("Get {url:?}: {e}"))?;
            bodies_tx.send((i, body)).await.expect("the channel has room for every body");
            Ok(())
        });
    }
    drop(bodies_tx);
    g.wait().await?;
    let mut bodies = vec![Bytes::new(); urls.len()];
    while let Some((i, body)) = bodies_rx.recv().await {
        bodies[i] = body;
    }
    Ok(bodies)
}

#[goro::main]
async fn main() -> Result<(), Error> {
    let start = Instant::now();
    let gs_before = goro::runtime::num_goroutine();
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    let (server_ctx, shutdown) = context::with_cancel(&Context::background());
    let server = goro::go(async move { goro::hyper::serve_with_context(&server_ctx, ln, service_fn(route)).await });

    // 50 URLs, at most 8 at once.
    let urls: Vec<String> = (0..URLS).map(|n| format!("http://{addr}/item/{n}")).collect();
    let t = Instant::now();
    let bodies = fetch_all(&Context::background(), &urls, LIMIT, PER_REQUEST).await?;
    let took = t.elapsed();
    for (n, body) in (0..URLS).zip(&bodies) {
        let item: Item = serde_json::from_slice(body)?;
        assert_eq!(item, Item { n, square: n * n }, "the answer for {}", urls[n as usize]);
    }
    let max = MAX_IN_FLIGHT.load(SeqCst);
    println!("fetched http://{addr}/item/{{0..{}}} in {took:.1?}: all {URLS} answers right", URLS - 1);
    println!(
        "  first {}, last {}",
        String::from_utf8_lossy(&bodies[0]),
        String::from_utf8_lossy(&bodies[bodies.len() - 1])
    );
    println!("  the server answered at most {max} requests at once (the group's limit: {LIMIT})");
    // The limit held, and the fetches did overlap (8 Gs ask at once, each answer takes 5 ms).
    assert!((2..=LIMIT).contains(&max), "set_limit({LIMIT}) lets up to {LIMIT} requests run at once, saw {max}");

    // A slow URL among fast ones, 100 ms each: its timeout is the group's error.
    let mut some = urls[..5].to_vec();
    some.push(format!("http://{addr}/slow"));
    let t = Instant::now();
    let err = fetch_all(&Context::background(), &some, LIMIT, SHORT).await.expect_err("/slow takes 300 ms");
    let took = t.elapsed();
    println!("{} URLs, /slow among them, {SHORT:?} each: failed after {took:.1?}: {err}", some.len());
    assert_eq!(err, format!("Get \"http://{addr}/slow\": context deadline exceeded"));
    assert!(took >= SHORT && took < SLOW, "the timeout ended the wait, not the slow answer: {took:?}");

    // And an error of the server's, as `get` reports it.
    let err = fetch_all(&Context::background(), &[format!("http://{addr}/nope")], LIMIT, PER_REQUEST)
        .await
        .expect_err("/nope is not there");
    println!("1 URL, /nope: failed: {err}");
    assert_eq!(err, format!("Get \"http://{addr}/nope\": 404 Not Found"));

    // Go's srv.Shutdown: the server returns once every request it began has been answered. (Not
    // /slow's: when its client hung up at the timeout, hyper dropped that handler's future, where
    // Go would cancel its r.Context() and wait for it to return.)
    shutdown();
    goro::time::timeout(Duration::from_secs(5), server).await.expect("the server did not shut down").unwrap()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while goro::runtime::num_goroutine() > gs_before {
        assert!(Instant::now() < deadline, "goroutines left: {} > {gs_before}", goro::runtime::num_goroutine());
        goro::time::sleep(Duration::from_millis(1)).await;
    }
    println!("server shut down, no goroutine left; {:.1?} in all", start.elapsed());
    Ok(())
}
