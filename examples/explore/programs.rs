//! The three classic Go bugs of tests/model (a loom model each, at 2 Gs), scaled to any number
//! of Gs for `goro::synctest::explore`: shared by examples/explore.rs (how many runs it takes)
//! and tests/synctest_explore.rs (each is found, its seed replays, its fix passes).

use goro::sync::{Map, Mutex, WaitGroup};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

pub const WAITGROUP_BUG: &str = "wg.Wait returned before every goroutine was done";
pub const LOST_UPDATE: &str = "an increment was lost";

/// waitgroup.rs with `n` workers: `wg.Add(1)` inside the goroutine (`add_inside`, the bug), or
/// before `go` (the fix). `Wait` can see a counter of zero before any worker has started.
pub async fn workers(n: usize, add_inside: bool) {
    let wg = WaitGroup::new();
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..n {
        let (wg, done) = (wg.clone(), done.clone());
        if !add_inside {
            wg.add(1); // the fix: Add before go
        }
        goro::go(async move {
            if add_inside {
                wg.add(1); // BUG: too late, Wait may already have returned
            }
            done.fetch_add(1, SeqCst);
            wg.done();
        });
    }
    wg.wait().await;
    assert_eq!(done.load(SeqCst), n, "{WAITGROUP_BUG}");
}

/// lock_order.rs with `n` Gs: `n` accounts in a row, each behind a mutex; G `i` (for `i` in
/// `0..n-1`) moves 1 from account `i` to account `i + 1`, and one more G moves 1 back from
/// account `n/2 + 1` to `n/2`, against the flow. A transfer locks `from`, then `to` (the bug:
/// the odd G and G `n/2` take the same two locks in opposite orders, and deadlock when each
/// gets its first before the other its second), or the lower-numbered account first (the fix:
/// one lock order).
///
/// Why a row and not a ring: in a ring where every G locks its own account then the next, the
/// only cycle is all `n` Gs at once (the dining philosophers), a bug of depth `n`: measured,
/// `explore` finds it at 10 Gs in thousands of runs, at 20 in about a million, and a schedule
/// of 100 Gs will not hit it. In the row the only cycle is the two Gs sharing a pair, among
/// `n - 2` others contending for the neighbouring locks: a depth-2 bug at every size.
pub async fn transfers(n: usize, one_order: bool) {
    let accounts: Arc<Vec<Mutex<usize>>> = Arc::new((0..n).map(|_| Mutex::new(100)).collect());
    let mut moves: Vec<(usize, usize)> = (0..n - 1).map(|i| (i, i + 1)).collect();
    moves.push((n / 2 + 1, n / 2)); // the one G going the other way
    let hs: Vec<_> = moves
        .into_iter()
        .map(|(from, to)| {
            let accounts = accounts.clone();
            goro::go(async move { transfer(&accounts, from, to, one_order).await })
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
    let mut total = 0;
    for a in accounts.iter() {
        total += *a.lock().await;
    }
    assert_eq!(total, 100 * n, "money was created or lost");
}

async fn transfer(accounts: &[Mutex<usize>], from: usize, to: usize, one_order: bool) {
    let (first, second) = if one_order { (from.min(to), from.max(to)) } else { (from, to) };
    let mut a = accounts[first].lock().await;
    let mut b = accounts[second].lock().await; // BUG (unless one_order): the other G's order
    let (src, dst) = if first == from { (&mut *a, &mut *b) } else { (&mut *b, &mut *a) };
    *src -= 1;
    *dst += 1;
}

/// sync_map.rs with `n` Gs: each reads the `hits` entry of a `sync.Map` and stores it plus one
/// (the bug: another G may have stored in between, and its increment is lost), or retries a
/// `compare_and_swap` (the fix).
///
/// The `yield_now().await` between the two calls is what makes the bug findable: `explore`
/// switches Gs only at goro's yield points, so with nothing to await between `load` and
/// `store` each G would run both without interruption and the lost update would never happen
/// in a bubble (loom, which interleaves atomic accesses, finds it without the await).
pub async fn hits(n: usize, cas: bool) {
    let m = Arc::new(Map::new());
    m.store("hits", 0usize);
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let m = m.clone();
            goro::go(async move {
                if cas {
                    compare_and_swap(&m).await
                } else {
                    load_then_store(&m).await
                }
            })
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
    assert_eq!(m.load("hits"), Some(n), "{LOST_UPDATE}");
}

async fn load_then_store(m: &Map<&'static str, usize>) {
    let v = m.load("hits").unwrap();
    goro::runtime::yield_now().await; // a scheduling point between the two calls (see `hits`)
    m.store("hits", v + 1); // BUG: another G may have stored in between
}

async fn compare_and_swap(m: &Map<&'static str, usize>) {
    loop {
        let v = m.load("hits").unwrap();
        goro::runtime::yield_now().await; // the same scheduling point: the swap must catch it
        if m.compare_and_swap("hits", &v, v + 1) {
            return;
        }
    }
}
