//! The probe behind the W8 finding of 4266616 (benches/results/2026-12-05-4266616-ab.txt): W8 with
//! goro's public API, 30 runs in one runtime, printing the median ns per message and the
//! runtime's scheduler counters per run. Not a cargo target: copy it into `src/main.rs` of a
//! scratch crate whose `Cargo.toml` has `goro = { package = "goro-rt", path = "<a checkout>" }`
//! (and an empty `[workspace]`), build it `--release` once per checkout, and alternate them.
// W8 (select fan-in) with goro's public API, 30 runs in one runtime; prints ns/msg median and the
// runtime's scheduler counters per run (medians).
use std::time::Instant;
const MSGS: u64 = 1_000_000;
async fn run() {
    let (tx_a, rx_a) = goro::chan::<u64>(16);
    let (tx_b, rx_b) = goro::chan::<u64>(16);
    let (done_tx, done_rx) = goro::chan::<u64>(3);
    let d = done_tx.clone();
    goro::go(async move {
        let (mut a_open, mut b_open) = (true, true);
        let mut count = 0u64;
        while a_open || b_open {
            let r: (usize, Option<u64>) = goro::select! {
                recv(a_open.then_some(&rx_a)) -> v => (0, v),
                recv(b_open.then_some(&rx_b)) -> v => (1, v),
            };
            match r {
                (_, Some(_)) => count += 1,
                (0, None) => a_open = false,
                (_, None) => b_open = false,
            }
        }
        d.send(count).await.unwrap();
    });
    for (tx, base) in [(tx_a, 0), (tx_b, MSGS / 2)] {
        let d = done_tx.clone();
        goro::go(async move {
            for v in base..base + MSGS / 2 {
                tx.send(v).await.unwrap();
            }
            drop(tx);
            d.send(0).await.unwrap();
        });
    }
    let mut total = 0;
    for _ in 0..3 {
        total += done_rx.recv().await.unwrap();
    }
    assert_eq!(total, MSGS);
}
fn main() {
    let rt = goro::Builder::new().max_procs(2).build().unwrap();
    let mut ns = vec![];
    let mut wake = vec![];
    let mut spin = vec![];
    let mut hand = vec![];
    let mut steal = vec![];
    for _ in 0..30 {
        let m0 = rt.metrics();
        let t = Instant::now();
        rt.block_on(run());
        ns.push(t.elapsed().as_nanos() as f64 / MSGS as f64);
        let m1 = rt.metrics();
        wake.push(m1.thread_wakeups - m0.thread_wakeups);
        spin.push(m1.spinning_wakeups - m0.spinning_wakeups);
        hand.push(m1.handoffs - m0.handoffs);
        steal.push(m1.steals - m0.steals);
    }
    fn med<T: PartialOrd + Copy>(v: &mut Vec<T>) -> T { v.sort_by(|a, b| a.partial_cmp(b).unwrap()); v[v.len() / 2] }
    println!("ns/msg {:.1} thread_wakeups {} spinning_wakeups {} handoffs {} steals {}", med(&mut ns), med(&mut wake), med(&mut spin), med(&mut hand), med(&mut steal));
}
