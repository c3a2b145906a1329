//! The execution trace (Go's `runtime/trace`) and the flight recorder: the JSON is valid
//! trace-event JSON, every slice nests, and the trace of a known program says what it did.
//!
//! A trace is the process's: the tests here take turns (`SERIAL`).

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A `Write` whose bytes the test reads afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn rt() -> goro::runtime::Runtime {
    goro::runtime::Builder::new().max_procs(2).build().unwrap()
}

/// Parses a trace and checks what every viewer needs: the object, the fields each phase
/// requires, and that on every track the `B`/`E` slices nest (sorted by time, as viewers do).
fn parse_and_validate(bytes: &[u8]) -> Vec<Value> {
    let v: Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON: {e}: {}", String::from_utf8_lossy(&bytes[..bytes.len().min(2000)])));
    let events = v["traceEvents"].as_array().expect("traceEvents").clone();
    type Track<'a> = Vec<(f64, usize, &'a Value)>;
    let mut tracks: BTreeMap<(u64, u64), Track<'_>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "pid/tid: {e}");
        if ph == "M" {
            assert!(e["name"].is_string() && e["args"].is_object(), "{e}");
            continue;
        }
        assert!(e["ts"].is_f64() || e["ts"].is_u64(), "ts: {e}");
        match ph {
            "B" | "i" | "s" | "b" | "e" => assert!(e["name"].is_string(), "name: {e}"),
            "E" | "f" => {}
            _ => panic!("unexpected phase: {e}"),
        }
        if matches!(ph, "s" | "f" | "b" | "e") {
            assert!(e["id"].is_u64(), "id: {e}");
        }
        if matches!(ph, "B" | "E") {
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            tracks.entry(key).or_default().push((e["ts"].as_f64().unwrap(), i, e));
        }
    }
    for (track, mut evs) in tracks {
        // By time; at one instant an E before a B (a slice that ends where the next begins),
        // else in the order written.
        evs.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.2["ph"] == "B").cmp(&(b.2["ph"] == "B"))).then(a.1.cmp(&b.1)));
        let mut depth = 0i64;
        for (_, _, e) in evs {
            depth += if e["ph"] == "B" { 1 } else { -1 };
            assert!(depth >= 0, "an E without its B on track {track:?}: {e}");
        }
        assert_eq!(depth, 0, "a B without its E on track {track:?}");
    }
    events
}

async fn produce(tx: goro::chan::Sender<u32>) {
    for i in 0..20 {
        tx.send(i).await.unwrap();
    }
}

async fn square(rx: goro::chan::Receiver<u32>, tx: goro::chan::Sender<u32>) {
    while let Some(v) = rx.recv().await {
        tx.send(v * v).await.unwrap();
    }
}

async fn consume(rx: goro::chan::Receiver<u32>) -> u32 {
    let mut sum = 0;
    while let Some(v) = rx.recv().await {
        sum += v;
    }
    sum
}

#[test]
fn the_trace_of_a_pipeline_shows_each_gs_blocks_and_the_flows_between_them() {
    let _s = serial();
    let out = Shared::default();
    goro::trace::start(out.clone()).unwrap();
    let ids = rt().block_on(async {
        let (tx1, rx1) = goro::chan::<u32>(0);
        let (tx2, rx2) = goro::chan::<u32>(0);
        let p = goro::go(produce(tx1));
        let s = goro::go(square(rx1, tx2));
        let c = goro::go(consume(rx2));
        let (pid, sid, cid) = (p.id(), s.id(), c.id());
        p.await.unwrap();
        s.await.unwrap();
        assert_eq!(c.await.unwrap(), (0..20u32).map(|i| i * i).sum::<u32>());
        (pid, sid, cid)
    });
    goro::trace::stop().unwrap();
    let events = parse_and_validate(&out.0.lock().unwrap());

    // Each G's blocks, with Go's reasons.
    let mut blocks: HashMap<u64, Vec<String>> = HashMap::new();
    for e in events.iter().filter(|e| e["cat"] == "block") {
        blocks
            .entry(e["args"]["goid"].as_u64().unwrap())
            .or_default()
            .push(e["args"]["reason"].as_str().unwrap().to_owned());
    }
    let (producer, squarer, consumer) = ids;
    let has = |g: u64, why: &str| blocks.get(&g).is_some_and(|b| b.iter().any(|r| r == why));
    assert!(has(producer, "chan send"), "producer: {:?}", blocks.get(&producer));
    assert!(has(squarer, "chan receive"), "squarer: {:?}", blocks.get(&squarer));
    assert!(has(consumer, "chan receive"), "consumer: {:?}", blocks.get(&consumer));

    // A flow from the squarer (a sender on the second channel) to the consumer it woke: an `s`
    // by the squarer naming the consumer, and an `f` with the same id.
    let finishes: Vec<u64> = events.iter().filter(|e| e["ph"] == "f").map(|e| e["id"].as_u64().unwrap()).collect();
    let woke = events.iter().filter(|e| e["ph"] == "s" && e["args"]["goid"] == consumer && e["args"]["by"] == squarer);
    let ids: Vec<u64> = woke.map(|e| e["id"].as_u64().unwrap()).collect();
    assert!(!ids.is_empty(), "no wake-up of the consumer by the squarer");
    assert!(ids.iter().any(|id| finishes.contains(id)), "no flow ends in the consumer's poll");
    // Each wake-up has an id of its own (the consumer is woken for most of its 20 values), so
    // a viewer draws each arrow to the poll that wake-up led to.
    let starts: Vec<u64> = events.iter().filter(|e| e["ph"] == "s").map(|e| e["id"].as_u64().unwrap()).collect();
    let unique: std::collections::HashSet<&u64> = starts.iter().collect();
    assert_eq!(unique.len(), starts.len(), "two wake-ups share a flow id");

    // Every poll is on the track of the P that ran it (tids 1 ..= max_procs), never on a
    // thread's.
    for e in events.iter().filter(|e| e["ph"] == "B" && e["cat"] == "g") {
        let tid = e["tid"].as_u64().unwrap();
        assert!((1..=2).contains(&tid), "a poll off any P's track: {e}");
    }

    // Each G's slices name it and its spawn site in this file.
    let name = |g: u64| format!("G{g} {}:", file!());
    for g in [producer, squarer, consumer] {
        assert!(events.iter().any(|e| e["ph"] == "B" && e["name"].as_str().unwrap().starts_with(&name(g))), "G{g}");
    }
}

#[test]
fn one_trace_at_a_time_as_in_go() {
    let _s = serial();
    goro::trace::start(Shared::default()).unwrap();
    assert!(goro::trace::is_enabled());
    let again = goro::trace::start(Shared::default()).unwrap_err();
    assert_eq!(again.to_string(), "tracing is already enabled");
    let mut fr = goro::trace::FlightRecorder::new(Default::default());
    assert_eq!(fr.start().unwrap_err().to_string(), "tracing is already enabled");
    goro::trace::stop().unwrap();
    assert!(!goro::trace::is_enabled());
    goro::trace::stop().unwrap(); // a stop with nothing running does nothing, as Go's

    fr.start().unwrap();
    assert!(fr.enabled() && goro::trace::is_enabled());
    assert_eq!(goro::trace::start(Shared::default()).unwrap_err().to_string(), "tracing is already enabled");
    fr.stop();
    assert!(!goro::trace::is_enabled());
    assert!(fr.write_to(&mut Vec::new()).is_err(), "a stopped recorder has no window");
}

/// A workload that writes events steadily: two Gs in ping-pong, a ticker, a region and a log
/// per round.
async fn busy_for(d: Duration) {
    let (ping_tx, ping_rx) = goro::chan::<u64>(0);
    let (pong_tx, pong_rx) = goro::chan::<u64>(0);
    let echo = goro::go(async move {
        while let Some(v) = ping_rx.recv().await {
            pong_tx.send(v).await.unwrap();
        }
    });
    let until = std::time::Instant::now() + d;
    let mut i = 0u64;
    while std::time::Instant::now() < until {
        let _r = goro::trace::region("round");
        for _ in 0..100 {
            ping_tx.send(i).await.unwrap();
            assert_eq!(pong_rx.recv().await, Some(i));
            i += 1;
        }
        goro::trace::log("rounds", &i.to_string());
        goro::time::sleep(Duration::from_micros(100)).await;
    }
    drop(ping_tx);
    echo.await.unwrap();
}

/// The flight recorder keeps its window within its byte budget while a workload runs for
/// `secs`, and its window, written at the end, is valid and recent.
fn flight_recorder_within_budget(secs: u64) {
    let _s = serial();
    let budget = 256 << 10;
    let cfg = goro::trace::FlightRecorderConfig { min_age: Duration::from_millis(500), max_bytes: budget };
    let mut fr = goro::trace::FlightRecorder::new(cfg);
    fr.start().unwrap();
    let max_seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    rt().block_on(async {
        let work = goro::go(busy_for(Duration::from_secs(secs)));
        while !work.is_finished() {
            // One full buffer may sit beyond the budget until the next one evicts it.
            max_seen.fetch_max(fr.window_bytes(), std::sync::atomic::Ordering::Relaxed);
            goro::time::sleep(Duration::from_millis(50)).await;
        }
        work.await.unwrap();
    });
    let mut out = Vec::new();
    let n = fr.write_to(&mut out).unwrap();
    fr.stop();
    assert_eq!(n as usize, out.len());
    let max_seen = max_seen.load(std::sync::atomic::Ordering::Relaxed);
    println!("{secs} s: window at most {max_seen} bytes of events (budget {budget}), {} bytes of JSON", out.len());
    assert!(max_seen > 0, "the window stayed empty");
    assert!(max_seen <= budget + 64 * 1024, "window {max_seen} bytes, budget {budget}");
    let events = parse_and_validate_window(&out);
    // Recent: the window's newest events are from the workload's last second.
    let newest = events.iter().filter_map(|e| e["ts"].as_f64()).fold(0.0, f64::max);
    let oldest = events.iter().filter_map(|e| e["ts"].as_f64()).fold(f64::MAX, f64::min);
    assert!(newest - oldest < (secs as f64) * 1e6, "the window spans the whole run: it kept nothing out");
    assert!(events.iter().any(|e| e["cat"] == "log" && e["name"] == "rounds"), "no log in the window");
}

/// A flight recorder's window is cut anywhere: slices may lack their start or end there, but
/// the JSON is valid and every event has its fields.
fn parse_and_validate_window(bytes: &[u8]) -> Vec<Value> {
    let v: Value = serde_json::from_slice(bytes).expect("JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents").clone();
    for e in &events {
        assert!(e["ph"].is_string() && e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
    }
    events
}

#[test]
fn the_flight_recorders_window_stays_within_its_budget() {
    flight_recorder_within_budget(3);
}

/// The 60 s run: `cargo test --release --test trace -- --ignored --nocapture`.
#[test]
#[ignore]
fn soak_the_flight_recorders_window_stays_within_its_budget_for_a_minute() {
    flight_recorder_within_budget(60);
}
