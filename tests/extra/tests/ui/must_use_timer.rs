// A Timer or Ticker made and dropped at once is a bug: `#[must_use]` (denied here) says so.
#![deny(unused_must_use)]
use std::time::Duration;

async fn f() {
    goro::time::Timer::new(Duration::from_secs(1));
    goro::time::Ticker::new(Duration::from_secs(1));
    goro::time::after_func(Duration::from_secs(1), || {});
}

fn main() {
    let _ = f;
}
