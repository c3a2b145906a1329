//! An axum `Router` served from goroutines: `goro::hyper::serve` (Go's `http.Serve`) with
//! `TowerToHyperService` between axum's tower service and hyper. Its handlers are goro code: a
//! visit counter behind a `goro::sync::Mutex`, and a store G that owns the users and answers
//! lookups over a channel. The Go original (Go 1.22's `ServeMux` patterns; `{id}` is axum's
//! syntax too):
//!
//! ```go
//! type User struct {
//!     ID   int    `json:"id"`
//!     Name string `json:"name"`
//! }
//!
//! type lookup struct {
//!     id    int
//!     reply chan<- *User
//! }
//!
//! // store owns the users: the handlers ask it over a channel instead of sharing a map.
//! func store(lookups <-chan lookup) {
//!     users := map[int]User{1: {1, "Ken Thompson"}, 2: {2, "Rob Pike"}, 3: {3, "Robert Griesemer"}}
//!     for req := range lookups {
//!         if u, ok := users[req.id]; ok {
//!             req.reply <- &u
//!         } else {
//!             req.reply <- nil
//!         }
//!     }
//! }
//!
//! func main() {
//!     var mu sync.Mutex
//!     visits := 0
//!     lookups := make(chan lookup)
//!     go store(lookups)
//!
//!     mux := http.NewServeMux()
//!     mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
//!         mu.Lock()
//!         visits++
//!         n := visits
//!         mu.Unlock()
//!         fmt.Fprintf(w, "Hello, visitor %d!\n", n)
//!     })
//!     mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
//!         id, err := strconv.Atoi(r.PathValue("id"))
//!         if err != nil {
//!             http.Error(w, err.Error(), http.StatusBadRequest)
//!             return
//!         }
//!         reply := make(chan *User, 1)
//!         lookups <- lookup{id, reply}
//!         w.Header().Set("Content-Type", "application/json")
//!         if u := <-reply; u != nil {
//!             json.NewEncoder(w).Encode(u)
//!         } else {
//!             w.WriteHeader(http.StatusNotFound)
//!             json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf("no user %d", id)})
//!         }
//!     })
//!     ln, err := net.Listen("tcp", "127.0.0.1:8080")
//!     if err != nil {
//!         log.Fatal(err)
//!     }
//!     log.Fatal(http.Serve(ln, mux))
//! }
//! ```
//!
//! Serve on 127.0.0.1:8080 (or the port given as the argument) until Ctrl-C:
//!
//! ```text
//! cargo run --release --features hyper --example http_axum [PORT]
//! ```
//!
//! With the argument `--self-test` it serves on a port the system picks, has 20 Gs visit `/` at
//! once (each on a connection of its own, with hyper's client over `goro::hyper::Io`) and checks
//! that the counter handed out 1 to 20, each once; then looks up users, present, absent and
//! malformed, checks every answer, and exits 0 (as Go's `main` returns, ending the server's G):
//!
//! ```text
//! cargo run --release --features hyper --example http_axum -- --self-test
//! ```

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use goro::chan::{Receiver, Sender};
use goro::hyper::{Error, TowerToHyperService};
use goro::net::{TcpListener, TcpStream};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::header;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// How many Gs visit `/` at once in the self-test.
const VISITORS: u64 = 20;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct User {
    id: u32,
    name: String,
}

/// A request to the store: a user's id, and where to send the answer.
struct Lookup {
    id: u32,
    reply: Sender<Option<User>>,
}

/// What every handler shares (Go's closure captures: `mu`, `visits`, `lookups`).
#[derive(Clone)]
struct App {
    visits: Arc<goro::sync::Mutex<u64>>,
    lookups: Sender<Lookup>,
}

/// Owns the users and answers lookups until every sender of `lookups` is gone (Go's `for req :=
/// range lookups`).
async fn store(lookups: Receiver<Lookup>) {
    let users: HashMap<u32, User> = [(1, "Ken Thompson"), (2, "Rob Pike"), (3, "Robert Griesemer")]
        .into_iter()
        .map(|(id, name)| (id, User { id, name: name.into() }))
        .collect();
    while let Some(req) = lookups.recv().await {
        let _ = req.reply.send(users.get(&req.id).cloned()).await; // buffered: never waits
    }
}

/// `GET /`: counts the visit under the mutex.
async fn hello(State(app): State<App>) -> String {
    let n = {
        let mut visits = app.visits.lock().await; // mu.Lock()
        *visits += 1;
        *visits
    }; // mu.Unlock()
    format!("Hello, visitor {n}!\n")
}

/// `GET /users/{id}`: asks the store G. A malformed id is refused by the `Path` extractor with
/// 400 Bad Request, as Go's handler does after `strconv.Atoi`.
async fn user(
    State(app): State<App>,
    Path(id): Path<u32>,
) -> Result<Json<User>, (StatusCode, Json<HashMap<&'static str, String>>)> {
    let (reply, answer) = goro::chan(1); // reply := make(chan *User, 1)
    let gone = || (StatusCode::SERVICE_UNAVAILABLE, Json(HashMap::from([("error", "store is gone".to_string())])));
    app.lookups.send(Lookup { id, reply }).await.map_err(|_| gone())?;
    match answer.recv().await.ok_or_else(gone)? {
        Some(u) => Ok(Json(u)),
        None => Err((StatusCode::NOT_FOUND, Json(HashMap::from([("error", format!("no user {id}"))])))),
    }
}

fn router() -> Router {
    let (lookups, requests) = goro::chan(0); // lookups := make(chan lookup)
    goro::go(store(requests)); // go store(lookups)
    let app = App { visits: Arc::new(goro::sync::Mutex::new(0)), lookups };
    Router::new().route("/", get(hello)).route("/users/{id}", get(user)).with_state(app)
}

#[goro::main]
async fn main() -> Result<(), Error> {
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some("--self-test") {
        return self_test().await;
    }
    let port: u16 = match arg {
        Some(p) => p.parse().map_err(|e| format!("usage: http_axum [PORT | --self-test]: {p:?}: {e}"))?,
        None => 8080,
    };
    let ln = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = ln.local_addr()?;
    println!("listening on http://{addr}/ (Ctrl-C to stop); try:");
    println!("  curl http://{addr}/");
    println!("  curl http://{addr}/users/2");
    println!("  curl -i http://{addr}/users/99");
    // log.Fatal(http.Serve(ln, mux))
    goro::hyper::serve(ln, TowerToHyperService::new(router())).await?;
    Ok(())
}

async fn self_test() -> Result<(), Error> {
    let start = Instant::now();
    let ln = TcpListener::bind("127.0.0.1:0").await?;
    let addr = ln.local_addr()?;
    // go http.Serve(ln, mux): the server's G runs until `main` returns.
    goro::go(goro::hyper::serve(ln, TowerToHyperService::new(router())));
    println!("self-test: serving on http://{addr}/");

    // 20 visitors at once: the mutex hands each a number of its own.
    let (tx, visits) = goro::chan::<Result<String, Error>>(0);
    for _ in 0..VISITORS {
        let tx = tx.clone();
        goro::go!(tx.send(fetch(addr, "/").await.map(|(_, _, body)| body)).await.unwrap());
    }
    drop(tx);
    let mut seen = Vec::new();
    while let Some(body) = visits.recv().await {
        let body = body?;
        let n: u64 = body.strip_prefix("Hello, visitor ").and_then(|s| s.strip_suffix("!\n")).unwrap_or("?").parse()?;
        seen.push(n);
    }
    seen.sort_unstable();
    println!("GET / x {VISITORS} at once  -> visitors {}..={}, each once", seen[0], seen[seen.len() - 1]);
    assert_eq!(seen, (1..=VISITORS).collect::<Vec<_>>());
    let (status, _, body) = fetch(addr, "/").await?;
    println!("GET /               -> {status}: {body:?}");
    assert_eq!((status, body), (StatusCode::OK, format!("Hello, visitor {}!\n", VISITORS + 1)));

    let (status, ctype, body) = fetch(addr, "/users/2").await?;
    println!("GET /users/2        -> {status}: {body}");
    assert_eq!((status, ctype.as_str()), (StatusCode::OK, "application/json"));
    assert_eq!(serde_json::from_str::<User>(&body)?, User { id: 2, name: "Rob Pike".into() });

    let (status, ctype, body) = fetch(addr, "/users/99").await?;
    println!("GET /users/99       -> {status}: {body}");
    assert_eq!((status, ctype.as_str()), (StatusCode::NOT_FOUND, "application/json"));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body)?, serde_json::json!({"error": "no user 99"}));

    let (status, _, body) = fetch(addr, "/users/abc").await?;
    println!("GET /users/abc      -> {status}: {body:?}");
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, _, body) = fetch(addr, "/nope").await?;
    println!("GET /nope           -> {status}: {body:?}");
    assert_eq!(status, StatusCode::NOT_FOUND);

    println!("self-test passed in {:.1?}", start.elapsed());
    Ok(())
}

/// `GET path` on a connection of its own (Go's `http.Get` without its connection pool): the
/// status, the Content-Type and the body.
async fn fetch(addr: SocketAddr, path: &str) -> Result<(StatusCode, String, String), Error> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(goro::hyper::Io::new(stream)).await?;
    goro::go(conn); // the connection's G: ends when `sender` is dropped and the response read
    let req = hyper::Request::get(path).header(header::HOST, addr.to_string()).body(Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status();
    let ctype = resp.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or("?").to_owned());
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, ctype.unwrap_or_default(), String::from_utf8(body.to_vec())?))
}
