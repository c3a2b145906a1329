//! What channels cost in memory: the size of a channel, and the bytes a blocked sender or
//! receiver adds to its G.
//!
//! - 1_000_000 unbuffered channels are made and kept: resident set growth per channel (the
//!   shared `hchan` allocation, one `Sender` and one `Receiver`).
//! - 200_000 Gs each block in `recv().await` (then in `send(v).await`) on a channel of their
//!   own, against 200_000 Gs parked on `pending()`: the difference per G is what a blocked
//!   operation costs, since its sudog lives inside the G's future (nothing else is allocated).
//!
//! `cargo run --release --example chan_memory`

use std::future::{pending, Future};
use std::mem::size_of;

fn rss_bytes() -> usize {
    // Linux: the second field of /proc/self/statm is the resident set in pages.
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm (Linux only)");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("statm format");
    pages * 4096
}

/// Resident bytes per G for `n` Gs each running a future from `make` until it parks. The
/// channels the futures use are made before the measurement starts (a future itself is built
/// straight into its G); the Gs are kept, so that a later measurement cannot reuse their
/// memory.
async fn per_g<F, Fut>(n: usize, mut make: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut handles = Vec::with_capacity(n);
    let before = rss_bytes();
    for _ in 0..n {
        handles.push(goro::go(make()));
    }
    // Let every G be polled once, so each is parked, not just queued.
    while goro::runtime::metrics().local_runq + goro::runtime::metrics().global_runq > 0 {
        goro::runtime::yield_now().await;
    }
    goro::runtime::yield_now().await;
    let after = rss_bytes();
    // Kept alive (leaked) so that no later measurement reuses their memory.
    std::mem::forget(handles);
    (after - before) as f64 / n as f64
}

fn main() {
    println!(
        "size_of Sender<u64>: {} bytes, Receiver<u64>: {} bytes",
        size_of::<goro::chan::Sender<u64>>(),
        size_of::<goro::chan::Receiver<u64>>()
    );
    println!(
        "size_of the recv future Recv<u64>: {} bytes, the send future Send<u64>: {} bytes (sudog included)",
        size_of::<goro::chan::futures::Recv<'static, u64>>(),
        size_of::<goro::chan::futures::Send<'static, u64>>()
    );

    let n = 1_000_000;
    let before = rss_bytes();
    let chans: Vec<_> = (0..n).map(|_| goro::chan::<u64>(0)).collect();
    let per_chan = (rss_bytes() - before) as f64 / n as f64
        - size_of::<(goro::chan::Sender<u64>, goro::chan::Receiver<u64>)>() as f64;
    println!("{n} unbuffered channels: {per_chan:.0} bytes each (the shared hchan allocation, beyond the two handles)");
    std::mem::forget(chans); // kept, so the Gs below do not reuse their memory

    let rt = goro::runtime::Builder::new().max_procs(2).build().expect("runtime");
    let g = 200_000;
    let (parked, recv, send) = rt.block_on(async move {
        per_g(20_000, pending::<()>).await; // warm-up: the runtime's own first allocations
        let parked = per_g(g, pending::<()>).await;
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..g).map(|_| goro::chan::<u64>(0)).unzip();
        let mut rxs = rxs.into_iter();
        let recv = per_g(g, || {
            let rx = rxs.next().expect("one per G");
            async move {
                rx.recv().await;
            }
        })
        .await;
        std::mem::forget((txs, rxs));
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..g).map(|_| goro::chan::<u64>(0)).unzip();
        let mut txs = txs.into_iter();
        let send = per_g(g, || {
            let tx = txs.next().expect("one per G");
            async move {
                let _ = tx.send(1).await;
            }
        })
        .await;
        std::mem::forget((txs, rxs));
        (parked, recv, send)
    });
    println!("a G parked on pending(): {parked:.0} bytes");
    drop(rt); // shutdown drops every G
    println!(
        "a G blocked in recv().await: {recv:.0} bytes ({:+.0} for the blocked receive); in send(v).await: {send:.0} bytes ({:+.0})",
        recv - parked,
        send - parked
    );
}
