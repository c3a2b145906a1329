//! Go's classic: `wg.Add(1)` inside the goroutine. `Wait` can run before any `Add`, see a
//! counter of zero and return while the goroutines have not even started.
//!
//! ```go
//! var wg sync.WaitGroup
//! var done atomic.Int32
//! for i := 0; i < 2; i++ {
//!     go func() {
//!         wg.Add(1) // BUG: too late, Wait may already have returned
//!         defer wg.Done()
//!         done.Add(1)
//!     }()
//! }
//! wg.Wait()
//! ```

use crate::harness::failure;
use goro::sync::WaitGroup;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::Arc;

/// The goroutines of the model, `add_inside` choosing where `wg.Add(1)` is.
async fn workers(add_inside: bool) {
    let wg = Arc::new(WaitGroup::new());
    // A plain atomic is enough for a counter that is only incremented and then checked:
    // the race under test is the WaitGroup's.
    let done = Arc::new(AtomicU32::new(0));
    for _ in 0..2 {
        let (wg, done) = (wg.clone(), done.clone());
        if !add_inside {
            wg.add(1); // the fix: Add before go
        }
        goro::go(async move {
            if add_inside {
                wg.add(1);
            }
            done.fetch_add(1, SeqCst);
            wg.done();
        });
    }
    wg.wait().await;
    assert_eq!(done.load(SeqCst), 2, "wg.Wait returned before every goroutine was done");
}

#[test]
fn add_inside_the_goroutine_is_caught() {
    let msg = failure(|| goro::model(|| workers(true)));
    assert!(msg.contains("wg.Wait returned before every goroutine was done"), "{msg}");
}

#[test]
fn add_before_go_passes() {
    goro::model(|| workers(false));
}
