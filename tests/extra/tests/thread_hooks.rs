//! `Builder::on_thread_start` / `on_thread_stop`: the hooks run on every thread that runs Gs
//! (each M, and the thread of `block_on`), and their use case works: entering a tokio runtime
//! on each of them makes tokio-based code (timers, `tokio::spawn`, sockets) usable inside Gs.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    static TOKIO: RefCell<Vec<tokio::runtime::EnterGuard<'static>>> = const { RefCell::new(Vec::new()) };
}

#[test]
fn tokio_code_runs_inside_gs() {
    let tokio_rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap(),
    ));
    let (started, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s1, s2) = (started.clone(), stopped.clone());
    let rt = goro::runtime::Builder::new()
        .max_procs(2)
        .on_thread_start(move || {
            s1.fetch_add(1, SeqCst);
            TOKIO.with(|g| g.borrow_mut().push(tokio_rt.enter()));
        })
        .on_thread_stop(move || {
            s2.fetch_add(1, SeqCst);
            TOKIO.with(|g| drop(g.borrow_mut().pop()));
        })
        .build()
        .unwrap();
    let total = rt.block_on(async {
        // Many Gs, so that every M (and this thread) runs some: each needs tokio's context.
        let hs: Vec<_> = (0..32u64)
            .map(|i| {
                goro::go(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    tokio::spawn(async move { i * 2 }).await.unwrap()
                })
            })
            .collect();
        let mut total = 0;
        for h in hs {
            total += h.await.unwrap();
        }
        // A tokio socket pair, driven by tokio's reactor, awaited by Gs.
        let ln = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = ln.local_addr().unwrap();
        let server = goro::go(async move {
            use tokio::io::AsyncWriteExt;
            let (mut s, _) = ln.accept().await.unwrap();
            s.write_all(b"from tokio").await.unwrap();
        });
        use tokio::io::AsyncReadExt;
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        c.read_to_end(&mut buf).await.unwrap();
        assert_eq!(buf, b"from tokio");
        server.await.unwrap();
        total
    });
    assert_eq!(total, (0..32).map(|i| i * 2).sum::<u64>());
    assert!(started.load(SeqCst) >= 2, "the block_on thread and at least one M");
    drop(rt); // joins every M: each ran its stop hook
    assert_eq!(started.load(SeqCst), stopped.load(SeqCst), "a thread started without stopping");
    assert!(TOKIO.with(|g| g.borrow().is_empty()), "block_on's thread left tokio");
}

/// A hook that panics on an M does not take the runtime down.
#[test]
fn panicking_hook_on_an_m_is_survived() {
    let rt = goro::runtime::Builder::new()
        .max_procs(2)
        .on_thread_start(|| {
            if std::thread::current().name().is_some_and(|n| n.starts_with("goro-m")) {
                panic!("hook failed");
            }
        })
        .build()
        .unwrap();
    let n = rt.block_on(async {
        let hs: Vec<_> = (0..16).map(|i| goro::go(async move { i })).collect();
        let mut n = 0;
        for h in hs {
            n += h.await.unwrap();
        }
        n
    });
    assert_eq!(n, (0..16).sum::<i32>());
}
