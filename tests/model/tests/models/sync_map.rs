//! Go's classic lost update: two goroutines read a `sync.Map` entry and store it plus one. Each
//! call is atomic, the pair is not: both can read 0, and the map ends at 1. The fix is
//! `CompareAndSwap` in a retry loop.
//!
//! ```go
//! v, _ := m.Load("hits")
//! m.Store("hits", v.(int)+1) // BUG: another goroutine may have stored in between
//! ```

use crate::harness::failure;
use goro::sync::Map;
use std::sync::Arc;

async fn hits(increment: fn(&Map<&'static str, u32>)) {
    let m = Arc::new(Map::new());
    m.store("hits", 0);
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            goro::go(async move { increment(&m) })
        })
        .collect();
    for h in hs {
        h.await.unwrap();
    }
    assert_eq!(m.load("hits"), Some(2), "an increment was lost");
}

fn load_then_store(m: &Map<&'static str, u32>) {
    let v = m.load("hits").unwrap();
    m.store("hits", v + 1);
}

fn compare_and_swap(m: &Map<&'static str, u32>) {
    loop {
        let v = m.load("hits").unwrap();
        if m.compare_and_swap("hits", &v, v + 1) {
            return;
        }
    }
}

#[test]
fn load_then_store_is_caught() {
    let msg = failure(|| goro::model(|| hits(load_then_store)));
    assert!(msg.contains("an increment was lost"), "{msg}");
}

#[test]
fn compare_and_swap_passes() {
    goro::model(|| hits(compare_and_swap));
}
