//! A `select` between a message and a timeout: in a model the timer is virtual and may fire at
//! any point after it is armed, so both outcomes must be explored (across the executions).
//!
//! ```go
//! ch := make(chan int, 1) // buffered: the sender never blocks if nobody receives
//! go func() { ch <- 7 }()
//! select {
//! case v := <-ch:
//! case <-time.After(time.Second):
//! }
//! ```

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

static GOT_MESSAGE: AtomicBool = AtomicBool::new(false);
static TIMED_OUT: AtomicBool = AtomicBool::new(false);

#[test]
fn both_outcomes_are_explored() {
    goro::model(|| async {
        let (tx, rx) = goro::chan::<u32>(1);
        // Once main has returned, the channel has no receiver and the send fails: ignored, as
        // Go's goroutine would not notice (it is gone with the program).
        goro::go(async move {
            let _ = tx.send(7).await;
        });
        goro::select! {
            recv(rx) -> v => {
                assert_eq!(v, Some(7));
                GOT_MESSAGE.store(true, SeqCst);
            },
            recv(goro::time::after(Duration::from_secs(1))) -> _ => TIMED_OUT.store(true, SeqCst),
        }
    });
    assert!(GOT_MESSAGE.load(SeqCst), "no execution received the message");
    assert!(TIMED_OUT.load(SeqCst), "no execution timed out");
}
