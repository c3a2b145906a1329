//! Go's classic deadlock: two mutexes locked in opposite orders by two goroutines. Each holds
//! one and waits for the other; Go's runtime prints `all goroutines are asleep - deadlock!`
//! when it happens, a model finds the interleaving where it does. The fix is one lock order.
//!
//! ```go
//! go func() { a.Lock(); b.Lock(); ...; b.Unlock(); a.Unlock() }()
//! b.Lock(); a.Lock() // BUG: the other order
//! ```

use crate::harness::failure;
use goro::sync::Mutex;
use std::sync::Arc;

async fn two_locks(main_order_reversed: bool) {
    let a = Arc::new(Mutex::new(0u32));
    let b = Arc::new(Mutex::new(0u32));
    let (a2, b2) = (a.clone(), b.clone());
    let h = goro::go(async move {
        let mut ga = a2.lock().await;
        let mut gb = b2.lock().await;
        *ga += 1;
        *gb += 1;
    });
    if main_order_reversed {
        let mut gb = b.lock().await;
        let mut ga = a.lock().await;
        *ga += 1;
        *gb += 1;
    } else {
        let mut ga = a.lock().await;
        let mut gb = b.lock().await;
        *ga += 1;
        *gb += 1;
    }
    h.await.unwrap();
    assert_eq!((*a.lock().await, *b.lock().await), (2, 2));
}

#[test]
fn opposite_orders_deadlock_is_caught() {
    let msg = failure(|| goro::model(|| two_locks(true)));
    // The report is the runtime's: Go's first line, then each G and what it waits on.
    assert!(msg.contains("all goroutines are asleep - deadlock!"), "{msg}");
    assert!(msg.contains("goroutine 1 [sync.Mutex.Lock]:\nmain goroutine, started at "), "{msg}");
    assert!(msg.contains("goroutine 2 [sync.Mutex.Lock]:\ncreated by goroutine 1 at "), "{msg}");
    assert!(msg.contains("lock_order.rs"), "{msg}");
}

#[test]
fn one_order_passes() {
    goro::model(|| two_locks(false));
}
