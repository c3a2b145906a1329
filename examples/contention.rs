//! Where does a goro program wait? A small order service with a hot lock, served once with Go's
//! diagnostics on: the execution trace (`runtime/trace`), the block and mutex profiles
//! (`runtime.SetBlockProfileRate`, `runtime.SetMutexProfileFraction`) and a goroutine dump,
//! written where Go's tools open them.
//!
//! ```text
//! cargo run --release --example contention [-- OUTDIR]
//! ```
//!
//! writes, in OUTDIR (default: `goro-contention` in the system's temporary directory):
//!
//! - `trace.json`: the execution trace, for <https://ui.perfetto.dev> (or chrome://tracing):
//!   a track per P with every poll of every G, the waits and wake-ups, and the user's
//!   annotations: one `order` task per order, its `reserve_stock` and `quote_price` regions,
//!   logs of the rejected orders and of the stats;
//! - `block.pb.gz`: where Gs waited (channels, `select!`, locks), for `go tool pprof`;
//! - `mutex.pb.gz`: who held the locks that others waited for, charged to the stack that
//!   unlocked them, for `go tool pprof`;
//! - `goroutine.txt`: every G, taken while the service runs (`pprof.Lookup("goroutine")`,
//!   debug 2).
//!
//! The service, as a Go programmer would write it: clients place orders through two front
//! ends (web and mobile); a dispatcher fans them into one unbuffered channel; worker Gs take
//! them, quote the price from a table behind an `RwMutex` (which a repricer G rewrites now and
//! then) and reserve the stock in an inventory behind one `Mutex`, held across a slow write,
//! which is what makes the workers queue; each order is answered on a channel of its own. A
//! stats G reports on a ticker. The profiles then say it: the workers' time goes to
//! `reserve_stock`'s lock, and the mutex profile charges `reserve_stock`'s unlock.
//!
//! The run checks its own results (the trace parses and has events, the block profile names
//! `handle_order`, the mutex profile names `reserve_stock`) and exits with status 1 if one is
//! missing. With Go installed (`go` on the PATH, or the `GO` environment variable naming it),
//! it also prints `go tool pprof -top` of the block profile.

use goro::chan::{Receiver, Sender};
use goro::pprof::Record;
use goro::sync::{Mutex, RwMutex, WaitGroup};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Gs that serve orders.
const WORKERS: usize = 8;
/// Gs that place orders, half through each front end.
const CLIENTS: usize = 16;
/// Orders each client places, one at a time.
const ORDERS_PER_CLIENT: u64 = 100;
/// How long a reservation holds the inventory's lock: the stock database's write.
const STOCK_WRITE: Duration = Duration::from_micros(200);
/// How often the repricer rewrites the price table, and how long it holds the write lock.
const REPRICE_EVERY: Duration = Duration::from_millis(25);
const REPRICE_TIME: Duration = Duration::from_millis(1);
/// The stats G's period.
const STATS_EVERY: Duration = Duration::from_millis(100);
/// What is for sale: each item, how many of it the inventory starts with, and its list price
/// in cents. The last runs out, so some orders are rejected.
const CATALOG: [(&str, u32, u64); 4] = [
    ("gopher-plush", 2_000, 1_500),
    ("ferris-mug", 2_000, 900),
    ("sticker-pack", 2_000, 300),
    ("limited-print", 500, 4_000),
];

/// The stock of each item.
struct Inventory {
    stock: HashMap<&'static str, u32>,
}

/// Each item's price, in cents.
struct PriceTable {
    cents: HashMap<&'static str, u64>,
}

/// What the workers share.
struct Shop {
    /// The contended lock: every order takes it, and holds it across a write.
    inventory: Mutex<Inventory>,
    /// Read by every order, written by the repricer.
    prices: RwMutex<PriceTable>,
    served: AtomicU64,
    rejected: AtomicU64,
}

/// An order, and where its answer goes.
struct Order {
    id: u64,
    item: &'static str,
    qty: u32,
    reply: Sender<Result<Receipt, OutOfStock>>,
    /// The order's task in the trace, from the client's request to the worker's answer.
    task: goro::trace::Task,
}

/// A served order's answer.
struct Receipt {
    total_cents: u64,
}

/// A rejected order's answer.
struct OutOfStock;

/// Takes orders until the channel closes.
async fn worker(work: Receiver<Order>, shop: Arc<Shop>) {
    while let Some(order) = work.recv().await {
        handle_order(order, &shop).await;
    }
}

/// Quotes, reserves and answers one order.
async fn handle_order(order: Order, shop: &Shop) {
    let Order { id, item, qty, reply, task } = order;
    let unit_cents = {
        let _r = task.region("quote_price");
        quote_price(&shop.prices, item).await
    };
    let reserved = {
        let _r = task.region("reserve_stock");
        reserve_stock(&shop.inventory, item, qty).await
    };
    let answer = if reserved {
        shop.served.fetch_add(1, Relaxed);
        Ok(Receipt { total_cents: unit_cents * u64::from(qty) })
    } else {
        shop.rejected.fetch_add(1, Relaxed);
        task.log("rejected", &format!("order {id}: {qty} x {item}: out of stock"));
        Err(OutOfStock)
    };
    // The reply channel has room for the answer: a worker never waits for its client.
    let _ = reply.send(answer).await;
    task.end();
}

/// Takes `qty` of `item` out of the inventory, if there are that many. The lock is held across
/// the stock database's write, so every other worker that reserves meanwhile waits here.
async fn reserve_stock(inventory: &Mutex<Inventory>, item: &'static str, qty: u32) -> bool {
    let mut inv = inventory.lock().await;
    let left = inv.stock.get_mut(item).expect("the catalog's items are stocked");
    if *left < qty {
        return false;
    }
    *left -= qty;
    goro::time::sleep(STOCK_WRITE).await;
    drop(inv); // the unlock that the mutex profile charges with the time the others waited
    true
}

/// The price of one `item`.
async fn quote_price(prices: &RwMutex<PriceTable>, item: &'static str) -> u64 {
    prices.read().await.cents[item]
}

/// Rewrites the price table now and then until `done` closes: readers wait meanwhile.
async fn reprice(shop: Arc<Shop>, done: Receiver<()>) {
    let ticks = goro::time::tick(REPRICE_EVERY);
    let mut round = 0u64;
    loop {
        goro::select! {
            recv(ticks) -> _ => {}
            recv(done) -> _ => return,
        }
        round += 1;
        let mut table = shop.prices.write().await;
        // A sale on one item at a time, the others at their list price.
        for (i, &(item, _, list_cents)) in CATALOG.iter().enumerate() {
            let on_sale = round as usize % CATALOG.len() == i;
            table.cents.insert(item, if on_sale { list_cents * 9 / 10 } else { list_cents });
        }
        goro::time::sleep(REPRICE_TIME).await;
    }
}

/// Fans the two front ends into the workers' channel, until both close.
async fn dispatch(web: Receiver<Order>, mobile: Receiver<Order>, work: Sender<Order>) {
    let (mut web, mut mobile) = (Some(web), Some(mobile));
    while web.is_some() || mobile.is_some() {
        let order = goro::select! {
            recv(web.as_ref()) -> o => { if o.is_none() { web = None; } o }
            recv(mobile.as_ref()) -> o => { if o.is_none() { mobile = None; } o }
        };
        if let Some(order) = order {
            work.send(order).await.expect("the workers run until the work channel closes");
        }
    }
}

/// What one client got.
#[derive(Default)]
struct Tally {
    paid_cents: u64,
    rejected: u64,
}

/// Places orders one at a time and waits for each answer. The client that gets the service's
/// `halfway`-th answer says so on `halfway_tx`.
async fn place_orders(
    client: u64,
    front_end: Sender<Order>,
    answered: Arc<AtomicU64>,
    halfway_tx: Sender<()>,
) -> Tally {
    let halfway = CLIENTS as u64 * ORDERS_PER_CLIENT / 2;
    let mut tally = Tally::default();
    for n in 0..ORDERS_PER_CLIENT {
        let id = client * ORDERS_PER_CLIENT + n;
        let (item, _, _) = CATALOG[(id % CATALOG.len() as u64) as usize];
        let qty = 1 + (id % 3) as u32;
        let task = goro::trace::new_task("order");
        task.log("order", &format!("order {id}: {qty} x {item}"));
        let (reply, answer) = goro::chan(1);
        front_end.send(Order { id, item, qty, reply, task }).await.expect("the dispatcher runs");
        match answer.recv().await.expect("every order is answered") {
            Ok(receipt) => tally.paid_cents += receipt.total_cents,
            Err(OutOfStock) => tally.rejected += 1,
        }
        if answered.fetch_add(1, Relaxed) + 1 == halfway {
            let _ = halfway_tx.try_send(());
        }
    }
    tally
}

/// Logs the service's counters to the trace on a ticker until `done` closes; returns how many
/// times it did.
async fn report_stats(shop: Arc<Shop>, done: Receiver<()>) -> u32 {
    let ticks = goro::time::tick(STATS_EVERY);
    let mut reports = 0;
    loop {
        goro::select! {
            recv(ticks) -> _ => {
                let _r = goro::trace::region("report_stats");
                let (served, rejected) = (shop.served.load(Relaxed), shop.rejected.load(Relaxed));
                goro::trace::log("stats", &format!("{served} served, {rejected} rejected"));
                reports += 1;
            }
            recv(done) -> _ => return reports,
        }
    }
}

/// What a run of the service did.
struct Run {
    elapsed: Duration,
    served: u64,
    rejected: u64,
    /// What the clients were told: rejections, and the receipts' sum.
    clients: Tally,
    stats_reports: u32,
    /// Gs alive when the goroutine dump was taken.
    goroutines_at_dump: usize,
}

/// Runs the service until every client has its answers; writes `goroutine.txt` into `out`
/// halfway through.
async fn serve_orders(out: &Path) -> std::io::Result<Run> {
    let start = Instant::now();
    let shop = Arc::new(Shop {
        inventory: Mutex::new(Inventory { stock: CATALOG.iter().map(|&(item, n, _)| (item, n)).collect() }),
        prices: RwMutex::new(PriceTable { cents: CATALOG.iter().map(|&(item, _, c)| (item, c)).collect() }),
        served: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
    });
    let (done_tx, done) = goro::chan::<()>(0);
    let stats = goro::go(report_stats(shop.clone(), done.clone()));
    let repricer = goro::go(reprice(shop.clone(), done));

    let (work_tx, work) = goro::chan::<Order>(0);
    let workers = WaitGroup::new();
    for _ in 0..WORKERS {
        workers.go(worker(work.clone(), shop.clone()));
    }
    drop(work);
    let (web_tx, web) = goro::chan::<Order>(0);
    let (mobile_tx, mobile) = goro::chan::<Order>(0);
    goro::go(dispatch(web, mobile, work_tx));

    let mut clients = Vec::with_capacity(CLIENTS);
    let answered = Arc::new(AtomicU64::new(0));
    let (halfway_tx, halfway) = goro::chan::<()>(1);
    for c in 0..CLIENTS as u64 {
        let front_end = if c % 2 == 0 { web_tx.clone() } else { mobile_tx.clone() };
        clients.push(goro::go(place_orders(c, front_end, answered.clone(), halfway_tx.clone())));
    }
    drop((web_tx, mobile_tx, halfway_tx));

    halfway.recv().await.expect("a client reports the halfway mark");
    let goroutines_at_dump = goro::runtime::num_goroutine();
    let goroutines = goro::pprof::lookup("goroutine").expect("a known profile");
    // A file write blocks the thread: `syscall` lends the P to the other Gs meanwhile.
    goro::syscall(|| goroutines.write_to(std::fs::File::create(out.join("goroutine.txt"))?, 2))?;

    // The clients' senders were the front ends' last: when the clients are done, the
    // dispatcher ends, and with it the work channel and the workers.
    let mut told = Tally::default();
    for client in clients {
        let tally = client.await.expect("a client does not panic");
        told.paid_cents += tally.paid_cents;
        told.rejected += tally.rejected;
    }
    workers.wait().await;
    drop(done_tx);
    let stats_reports = stats.await.expect("the stats G does not panic");
    repricer.await.expect("the repricer does not panic");
    Ok(Run {
        elapsed: start.elapsed(),
        served: shop.served.load(Relaxed),
        rejected: shop.rejected.load(Relaxed),
        clients: told,
        stats_reports,
        goroutines_at_dump,
    })
}

/// Whether a frame of `r`'s stack is of a function whose name contains `f`.
fn names_fn(r: &Record, f: &str) -> bool {
    r.stack.iter().any(|fr| fr.lines.iter().any(|l| l.function.contains(f)))
}

/// One line for a stack: the goro call it waited (or unlocked) in, then this program's
/// functions, innermost first, then the G's spawn site.
fn stack_line(r: &Record) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in r.stack.iter().flat_map(|f| f.lines.iter()) {
        let name = line.function.replace("::{{closure}}", "");
        let ours = name.starts_with("contention::") || name.starts_with("go ");
        if parts.is_empty() && name.starts_with("goro") {
            parts.push(name); // what the G waited in
        } else if ours && parts.last() != Some(&name) {
            parts.push(name);
        }
    }
    parts.join(" < ")
}

/// Prints the five stacks with the most delay, those that read the same (two call sites in one
/// function) counted together.
fn print_top(title: &str, records: &[Record]) {
    let mut stacks: Vec<(String, i64, i64)> = Vec::new();
    for r in records {
        let line = stack_line(r);
        match stacks.iter_mut().find(|s| s.0 == line) {
            Some(s) => (s.1, s.2) = (s.1 + r.delay, s.2 + r.count),
            None => stacks.push((line, r.delay, r.count)),
        }
    }
    stacks.sort_by_key(|s| std::cmp::Reverse(s.1));
    let total: i64 = stacks.iter().map(|s| s.1).sum();
    println!("{title}: {:.1?} in all; by stack (delay, events, where):", Duration::from_nanos(total as u64));
    for (line, delay, count) in stacks.iter().take(5) {
        println!("  {:>8.1?} {count:>6}x  {line}", Duration::from_nanos(*delay as u64));
    }
}

/// Reports `msg` and exits with status 1.
fn fail(msg: &str) -> ! {
    eprintln!("contention: FAILED: {msg}");
    std::process::exit(1)
}

/// The trace's events, once it is checked to be trace-event JSON with events in it.
fn read_trace(path: &Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| fail(&format!("{} is not JSON: {e}", path.display())));
    match json["traceEvents"].as_array() {
        Some(events) if !events.is_empty() => events.clone(),
        _ => fail(&format!("{} has no traceEvents", path.display())),
    }
}

/// The Go command: `$GO`, else `go` if it runs.
fn go_command() -> Option<std::ffi::OsString> {
    let go = std::env::var_os("GO").unwrap_or_else(|| "go".into());
    let ok = std::process::Command::new(&go).arg("version").output().is_ok_and(|o| o.status.success());
    ok.then_some(go)
}

fn main() {
    let out: PathBuf =
        std::env::args_os().nth(1).map_or_else(|| std::env::temp_dir().join("goro-contention"), PathBuf::from);
    if let Err(e) = std::fs::create_dir_all(&out) {
        fail(&format!("cannot create {}: {e}", out.display()));
    }
    let trace_path = out.join("trace.json");
    let block_path = out.join("block.pb.gz");
    let mutex_path = out.join("mutex.pb.gz");
    let goroutine_path = out.join("goroutine.txt");

    // Every blocking event and every contention, as the profiles of a short run should be.
    goro::runtime::set_block_profile_rate(1);
    goro::runtime::set_mutex_profile_fraction(1);
    let file = std::fs::File::create(&trace_path)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", trace_path.display())));
    goro::trace::start(file).unwrap_or_else(|e| fail(&format!("trace::start: {e}")));
    let run =
        goro::run(serve_orders(&out)).unwrap_or_else(|e| fail(&format!("writing {}: {e}", goroutine_path.display())));
    // The rest reads and writes files, reads the binary's debug information for the profiles'
    // stacks, and runs Go: work that blocks its thread, done once the Gs are gone.
    goro::trace::stop().unwrap_or_else(|e| fail(&format!("writing {}: {e}", trace_path.display())));

    let block = goro::pprof::lookup("block").expect("a known profile");
    let mutex = goro::pprof::lookup("mutex").expect("a known profile");
    for (profile, path) in [(&block, &block_path), (&mutex, &mutex_path)] {
        let written = std::fs::File::create(path).and_then(|f| profile.write_to(f, 0));
        if let Err(e) = written {
            fail(&format!("writing {}: {e}", path.display()));
        }
    }

    let orders = CLIENTS as u64 * ORDERS_PER_CLIENT;
    println!(
        "{orders} orders from {CLIENTS} clients on {WORKERS} workers ({} Ps) in {:.2?}: {} served (${:.2}), {} \
         out of stock; {} stats reports; {} Gs at the goroutine dump",
        goro::runtime::max_procs(),
        run.elapsed,
        run.served,
        run.clients.paid_cents as f64 / 100.0,
        run.rejected,
        run.stats_reports,
        run.goroutines_at_dump,
    );
    if run.served + run.rejected != orders || run.clients.rejected != run.rejected {
        fail(&format!(
            "{} orders served and {} rejected of {orders}; the clients were told of {} rejections",
            run.served, run.rejected, run.clients.rejected
        ));
    }

    let events = read_trace(&trace_path);
    // The user's annotations: tasks and regions begin with `b` events, logs are instants.
    let count = |ph: &str, cat: &str, name: Option<&str>| {
        events.iter().filter(|e| e["ph"] == ph && e["cat"] == cat && name.is_none_or(|n| e["name"] == n)).count()
    };
    let (tasks, reservations) = (count("b", "task", Some("order")), count("b", "region", Some("reserve_stock")));
    println!(
        "trace: {} events, {tasks} order tasks, {reservations} reserve_stock regions, {} logs",
        events.len(),
        count("i", "log", None)
    );
    if tasks == 0 || reservations == 0 {
        fail("the trace has no order task or no reserve_stock region");
    }

    println!();
    let block_records = block.records();
    let mutex_records = mutex.records();
    print_top("block profile", &block_records);
    print_top("mutex profile", &mutex_records);
    if !block_records.iter().any(|r| names_fn(r, "handle_order")) {
        fail("no stack of the block profile names handle_order");
    }
    if !mutex_records.iter().any(|r| names_fn(r, "reserve_stock")) {
        fail("no stack of the mutex profile names reserve_stock (the inventory's unlock)");
    }

    let (b, m, t, g) = (block_path.display(), mutex_path.display(), trace_path.display(), goroutine_path.display());
    println!();
    println!("written to {}:", out.display());
    println!("  where Gs waited, by function:  go tool pprof -top {b}");
    println!("  who held the contended locks:  go tool pprof -http=:8080 {m}");
    println!("                                 (graphs and flame graphs in a browser; -traces: every stack)");
    println!("  the execution trace:           open {t} at https://ui.perfetto.dev (or chrome://tracing)");
    println!("  every G, halfway through:      {g}");
    println!("Files and lines in the stacks need debug information: in your project's Cargo.toml,");
    println!("  [profile.release]");
    println!("  debug = \"line-tables-only\"");

    if let Some(go) = go_command() {
        println!();
        println!("$ go tool pprof -top {b}");
        match std::process::Command::new(&go).args(["tool", "pprof", "-top"]).arg(&block_path).output() {
            Ok(o) => {
                let text = String::from_utf8_lossy(&o.stdout);
                for line in text.lines().take(20) {
                    println!("{line}");
                }
                if !o.status.success() {
                    println!("(go tool pprof failed: {})", String::from_utf8_lossy(&o.stderr).trim());
                }
            }
            Err(e) => println!("(cannot run go tool pprof: {e})"),
        }
    }
}
