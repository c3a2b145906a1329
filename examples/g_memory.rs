//! How much memory a parked G costs: spawns 1_000_000 Gs that wait forever on a future that is
//! never woken, and reports the resident set growth per G next to the G header's size.
//!
//! `cargo run --release --example g_memory` (`-- N` for another count).

use std::future::pending;

fn rss_bytes() -> usize {
    // Linux: the second field of /proc/self/statm is the resident set in pages.
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm (Linux only)");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("statm format");
    pages * 4096
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let rt = goro::runtime::Builder::new().max_procs(2).build().expect("runtime");
    let (before, after) = rt.block_on(async move {
        let before = rss_bytes();
        let mut handles = Vec::with_capacity(n);
        let vec_bytes = n * std::mem::size_of::<goro::runtime::JoinHandle<()>>();
        for _ in 0..n {
            handles.push(goro::go(pending::<()>()));
        }
        // Let every G be polled once, so each is parked, not just queued.
        while goro::runtime::metrics().local_runq + goro::runtime::metrics().global_runq > 0 {
            goro::runtime::yield_now().await;
        }
        goro::runtime::yield_now().await;
        let after = rss_bytes();
        assert_eq!(goro::runtime::num_goroutine(), n + 1);
        drop(handles);
        (before, after - vec_bytes)
    });
    let per_g = (after - before) as f64 / n as f64;
    // The header's size is a layout detail of the runtime crate, outside goro's API.
    println!("G header: {} bytes (size_of)", goro_runtime::__private::HEADER_SIZE);
    println!(
        "{n} parked Gs on `pending::<()>()`: RSS grew {:.1} MiB = {per_g:.0} bytes per G",
        (after - before) as f64 / (1 << 20) as f64
    );
    drop(rt); // drops every G
}
