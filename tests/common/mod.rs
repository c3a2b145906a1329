//! The helpers of goro's integration tests: `mod common;` in a file of `tests/`, and
//! `#[path = "../../common/mod.rs"] mod common;` in one of the member goro-extra-tests
//! (`tests/extra`). The channel tests' own helpers are in [`chan`], those of tests that re-run
//! their binary in a child process in [`child`], the soak tests' in [`soak`].
//!
//! Some tests synchronize with the tiny primitives below rather than with goro's channels and
//! sync types: they are built on std only, so a bug in goro cannot hide a bug in them. Nothing
//! here sleeps to synchronize: time only bounds waits, as a failure detector.

// Each test binary uses a part of this module: what one of them leaves unused is not dead.
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How long any single wait (or a whole channel test, [`chan::watchdog`]) may take before the
/// test is declared hung. Generous: the tests must not flake on a loaded 2-core machine, and a
/// debug build is slow.
pub const HANG: Duration = Duration::from_secs(30);

pub mod chan;
pub mod child;
pub mod soak;
mod watchdog;
#[allow(unused_imports)] // not every test binary uses every helper
pub use watchdog::{watchdog_for as watchdog, Watchdog};

/// Awaits `f`, failing the test if it has not completed after [`HANG`] (of the bubble's clock
/// inside a `goro::synctest` bubble): a failure detector, not a synchronization.
pub async fn within<F: Future>(what: &str, f: F) -> F::Output {
    goro::time::timeout(HANG, f).await.unwrap_or_else(|_| panic!("{what}: still waiting after {HANG:?}"))
}

/// A goro runtime with `procs` Ps.
pub fn rt(procs: usize) -> goro::runtime::Runtime {
    goro::runtime::Builder::new().max_procs(procs).build().expect("build runtime")
}

/// Polls `fut` once with a no-op waker.
pub fn poll_noop<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Polls `cond` on the calling (plain) thread until it holds; panics after [`HANG`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// Inside a G: yields until `cond` holds; panics after [`HANG`].
pub async fn yield_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        goro::runtime::yield_now().await;
    }
}

/// A one-shot event: `set` once, and every `wait()` (a future) completes. Wakers are kept in a
/// std `Mutex`, so a wake-up is never lost.
#[derive(Default)]
pub struct Event {
    set: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Event {
    pub fn new() -> Arc<Event> {
        Arc::new(Event::default())
    }

    pub fn set(&self) {
        let wakers = {
            let mut w = self.wakers.lock().unwrap();
            self.set.store(true, SeqCst);
            std::mem::take(&mut *w)
        };
        for w in wakers {
            w.wake();
        }
    }

    pub fn is_set(&self) -> bool {
        self.set.load(SeqCst)
    }

    pub fn wait(self: &Arc<Self>) -> EventWait {
        EventWait(self.clone())
    }
}

pub struct EventWait(Arc<Event>);

impl Future for EventWait {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.is_set() {
            return Poll::Ready(());
        }
        let mut w = self.0.wakers.lock().unwrap();
        if self.0.is_set() {
            return Poll::Ready(());
        }
        if !w.iter().any(|x| x.will_wake(cx.waker())) {
            w.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// A one-slot channel of nonzero `usize`s for exactly one sender and one receiver that take
/// turns (the slot is empty whenever the sender sends).
#[derive(Default)]
pub struct Slot {
    value: AtomicUsize,
    waker: Mutex<Option<Waker>>,
}

impl Slot {
    pub fn new() -> Arc<Slot> {
        Arc::new(Slot::default())
    }

    pub fn send(&self, v: usize) {
        assert_ne!(v, 0);
        let prev = self.value.swap(v, SeqCst);
        assert_eq!(prev, 0, "Slot: sent into a full slot");
        let w = self.waker.lock().unwrap().take();
        if let Some(w) = w {
            w.wake();
        }
    }

    pub fn recv(self: &Arc<Self>) -> SlotRecv {
        SlotRecv(self.clone())
    }
}

pub struct SlotRecv(Arc<Slot>);

impl Future for SlotRecv {
    type Output = usize;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let v = self.0.value.swap(0, SeqCst);
        if v != 0 {
            return Poll::Ready(v);
        }
        *self.0.waker.lock().unwrap() = Some(cx.waker().clone());
        // Re-check after publishing the waker: a send in between would have found no waker.
        let v = self.0.value.swap(0, SeqCst);
        if v != 0 {
            self.0.waker.lock().unwrap().take();
            return Poll::Ready(v);
        }
        Poll::Pending
    }
}

/// Counts its drops in a shared counter.
pub struct DropCount(pub Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Busy-waits (no yield) for about `d`: "CPU work" for a G.
pub fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The names of this process's threads (Linux: `/proc/self/task/*/comm`, truncated to 15
/// bytes by the kernel). `None` where `/proc` is not there.
pub fn thread_names() -> Option<Vec<String>> {
    let dir = std::fs::read_dir("/proc/self/task").ok()?;
    let mut names = Vec::new();
    for entry in dir.flatten() {
        // A thread may exit between the listing and the read: skip it.
        if let Ok(name) = std::fs::read_to_string(entry.path().join("comm")) {
            names.push(name.trim_end().to_owned());
        }
    }
    Some(names)
}

/// The message of a panic payload (`&str` or `String`).
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string payload>".to_owned()
    }
}

/// Runs `fut` on the calling plain thread (no goro runtime), parking the thread between polls;
/// panics if it is not done after [`HANG`] (for instance, because a wake-up was lost).
pub fn block_on_plain<F: Future>(what: &str, fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    let deadline = Instant::now() + HANG;
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        let now = Instant::now();
        assert!(now < deadline, "timed out waiting for {what}");
        std::thread::park_timeout(deadline - now);
    }
}
