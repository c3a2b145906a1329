//! The block and mutex profiles (Go's `runtime.SetBlockProfileRate` and
//! `runtime.SetMutexProfileFraction`): which waits are counted, with whose stack, and how much.
//!
//! The profiles are the process's: every test here turns both on (rate 1: every event) and
//! looks for the stacks of its own functions only.

mod common;

use common::child::{is_child, run_child_status};
use goro::pprof::Record;
use goro::runtime::{set_block_profile_rate, set_mutex_profile_fraction};
use goro::sync::{Cond, Mutex, RwMutex, WaitGroup};
use std::sync::Arc;
use std::time::Duration;

fn on() {
    set_block_profile_rate(1);
    set_mutex_profile_fraction(1);
}

fn rt() -> goro::runtime::Runtime {
    goro::runtime::Builder::new().max_procs(2).build().unwrap()
}

/// The records whose stack has a frame of a function whose name contains `f`.
fn with_fn(records: Vec<Record>, f: &str) -> Vec<Record> {
    records.into_iter().filter(|r| r.stack.iter().any(|fr| fr.lines.iter().any(|l| l.function.contains(f)))).collect()
}

fn names(r: &Record) -> Vec<String> {
    r.stack.iter().flat_map(|f| f.lines.iter().map(|l| l.function.clone())).collect()
}

fn total(records: &[Record]) -> (i64, i64) {
    records.iter().fold((0, 0), |(c, d), r| (c + r.count, d + r.delay))
}

async fn consumer_blocked_on_recv(rx: goro::chan::Receiver<u32>) -> u32 {
    let mut sum = 0;
    while let Some(v) = rx.recv().await {
        sum += v;
    }
    sum
}

#[test]
fn a_receive_that_waits_is_counted_with_the_receivers_stack_and_spawn_site() {
    on();
    rt().block_on(async {
        let (tx, rx) = goro::chan::<u32>(0);
        let h = goro::go(consumer_blocked_on_recv(rx));
        for i in 0..5 {
            goro::time::sleep(Duration::from_millis(20)).await;
            tx.send(i).await.unwrap();
        }
        drop(tx);
        assert_eq!(h.await.unwrap(), 10);
    });
    let records = with_fn(goro::pprof::lookup("block").unwrap().records(), "consumer_blocked_on_recv");
    assert!(!records.is_empty(), "no block record names the consumer");
    let (count, delay) = total(&records);
    // Five receives waited about 20 ms each (the sixth, for the close, too).
    assert!(count >= 5, "{records:#?}");
    assert!(delay >= 5 * 15_000_000, "delay {delay} ns: {records:#?}");
    let r = &records[0];
    let n = names(r);
    // Innermost: goro's receive; the root: the `go` that spawned the consumer, in this file.
    assert!(n[0].starts_with("goro_chan::"), "{n:#?}");
    let root = r.stack.last().unwrap();
    assert!(root.lines[0].function.starts_with("go "), "{n:#?}");
    assert_eq!(root.lines[0].file.as_deref(), Some(file!()), "{n:#?}");
    // Nothing of the scheduler below the G's own poll.
    assert!(!n.iter().any(|f| f.contains("goro_runtime::m::")), "{n:#?}");
}

async fn sender_blocked_on_full_channel(tx: goro::chan::Sender<u32>) {
    for i in 0..3 {
        tx.send(i).await.unwrap();
    }
}

async fn waiter_in_select(a: goro::chan::Receiver<u32>, b: goro::chan::Receiver<u32>) -> u32 {
    goro::select! {
        recv(a) -> v => v.unwrap(),
        recv(b) -> v => v.unwrap(),
    }
}

#[test]
fn sends_and_selects_that_wait_are_counted() {
    on();
    rt().block_on(async {
        let (tx, rx) = goro::chan::<u32>(1);
        let h = goro::go(sender_blocked_on_full_channel(tx));
        for _ in 0..3 {
            goro::time::sleep(Duration::from_millis(10)).await;
            rx.recv().await.unwrap();
        }
        h.await.unwrap();

        let (ta, ra) = goro::chan::<u32>(0);
        let (_tb, rb) = goro::chan::<u32>(0);
        let h = goro::go(waiter_in_select(ra, rb));
        goro::time::sleep(Duration::from_millis(10)).await;
        ta.send(7).await.unwrap();
        assert_eq!(h.await.unwrap(), 7);
    });
    let block = goro::pprof::lookup("block").unwrap().records();
    assert!(!with_fn(block.clone(), "sender_blocked_on_full_channel").is_empty());
    let sel = with_fn(block, "waiter_in_select");
    assert!(!sel.is_empty());
    assert!(total(&sel).1 >= 5_000_000, "{sel:#?}");
}

async fn holder_that_unlocks_late(m: Arc<Mutex<u32>>, locked: goro::chan::Sender<()>) {
    let mut g = m.lock().await;
    locked.send(()).await.unwrap();
    goro::time::sleep(Duration::from_millis(30)).await;
    *g += 1;
    drop(g); // the unlock the mutex profile charges
}

async fn locker_that_waits(m: Arc<Mutex<u32>>) {
    *m.lock().await += 1;
}

#[test]
fn a_contended_mutex_charges_the_unlocker_and_counts_the_lockers_wait() {
    on();
    rt().block_on(async {
        let m = Arc::new(Mutex::new(0));
        let (tx, rx) = goro::chan::<()>(0);
        let h = goro::go(holder_that_unlocks_late(m.clone(), tx));
        rx.recv().await.unwrap();
        let w = goro::go(locker_that_waits(m.clone()));
        h.await.unwrap();
        w.await.unwrap();
        assert_eq!(*m.lock().await, 2);
    });
    let mutex = with_fn(goro::pprof::lookup("mutex").unwrap().records(), "holder_that_unlocks_late");
    assert!(!mutex.is_empty(), "no mutex record names the unlocker");
    let (count, delay) = total(&mutex);
    assert!(count >= 1 && delay >= 15_000_000, "{mutex:#?}");
    let block = with_fn(goro::pprof::lookup("block").unwrap().records(), "locker_that_waits");
    assert!(!block.is_empty(), "the locker's wait is a block event too, as in Go");
}

async fn waits_for_the_group(wg: Arc<WaitGroup>) {
    wg.wait().await;
}

async fn waits_on_the_cond(c: Arc<(Mutex<bool>, Cond)>) {
    let (m, cond) = &*c;
    let mut g = m.lock().await;
    while !*g {
        g = cond.wait(g).await;
    }
}

#[test]
fn waitgroup_and_cond_waits_are_counted() {
    on();
    rt().block_on(async {
        let wg = Arc::new(WaitGroup::new());
        wg.add(1);
        let h = goro::go(waits_for_the_group(wg.clone()));
        let c = Arc::new((Mutex::new(false), Cond::new()));
        let hc = goro::go(waits_on_the_cond(c.clone()));
        goro::time::sleep(Duration::from_millis(20)).await;
        wg.done();
        *c.0.lock().await = true;
        c.1.broadcast();
        h.await.unwrap();
        hc.await.unwrap();
    });
    let block = goro::pprof::lookup("block").unwrap().records();
    assert!(!with_fn(block.clone(), "waits_for_the_group").is_empty());
    assert!(!with_fn(block, "waits_on_the_cond").is_empty());
}

async fn writer_that_unlocks_late(l: Arc<RwMutex<u32>>, locked: goro::chan::Sender<()>) {
    let mut g = l.write().await;
    locked.send(()).await.unwrap();
    goro::time::sleep(Duration::from_millis(30)).await;
    *g += 1;
    drop(g);
}

async fn reader_that_waits(l: Arc<RwMutex<u32>>) -> u32 {
    *l.read().await
}

#[test]
fn an_rwmutex_counts_in_both_profiles_as_in_go() {
    on();
    rt().block_on(async {
        let l = Arc::new(RwMutex::new(0));
        let (tx, rx) = goro::chan::<()>(0);
        let h = goro::go(writer_that_unlocks_late(l.clone(), tx));
        rx.recv().await.unwrap();
        let r = goro::go(reader_that_waits(l.clone()));
        h.await.unwrap();
        assert_eq!(r.await.unwrap(), 1);
    });
    assert!(!with_fn(goro::pprof::lookup("mutex").unwrap().records(), "writer_that_unlocks_late").is_empty());
    assert!(!with_fn(goro::pprof::lookup("block").unwrap().records(), "reader_that_waits").is_empty());
}

/// The first read of a profile in a process symbolizes its stacks, reading the binary's debug
/// information: tens to hundreds of milliseconds. Read from a G, that is a blocking call, and
/// the other Gs of its P must not wait for it.
#[test]
fn case_a_g_reads_the_block_profile() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
    if is_child("case_a_g_reads_the_block_profile") {
        on();
        goro::runtime::Builder::new().max_procs(1).build().unwrap().block_on(async {
            let (tx, rx) = goro::chan::<u32>(0);
            let h = goro::go(consumer_blocked_on_recv(rx));
            goro::time::sleep(Duration::from_millis(5)).await;
            tx.send(1).await.unwrap();
            drop(tx);
            h.await.unwrap();
            // A G with work to do on the same P while the reader reads.
            let (done, ticks) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU32::new(0)));
            let ticker = {
                let (done, ticks) = (done.clone(), ticks.clone());
                goro::go(async move {
                    while !done.load(Relaxed) {
                        goro::time::sleep(Duration::from_millis(1)).await;
                        ticks.fetch_add(1, Relaxed);
                    }
                })
            };
            goro::time::sleep(Duration::from_millis(5)).await;
            let reader = goro::go(async move {
                let (t, before) = (std::time::Instant::now(), ticks.load(Relaxed));
                let n = goro::pprof::lookup("block").unwrap().records().len();
                let (took, ticked) = (t.elapsed(), ticks.load(Relaxed) - before);
                done.store(true, Relaxed);
                println!("the first read of the block profile took {took:?}; the other G ticked {ticked} times");
                assert!(n > 0);
                // Generous: a tick every 1 ms asked, at least one per 20 ms granted.
                assert!(took < Duration::from_millis(20) || ticked >= 1, "the other G waited {took:?} for the read");
            });
            reader.await.unwrap();
            ticker.await.unwrap();
        });
    }
}

#[test]
fn reading_a_profile_in_a_g_lets_the_other_gs_of_its_p_run() {
    let (status, out) = run_child_status("case_a_g_reads_the_block_profile", &[]);
    assert!(status.success(), "{}\n{}", out.stdout, out.stderr);
}
