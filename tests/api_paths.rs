//! Every public path of the API contract (the names users port Go code onto, in their homes), and
//! every path that moved, through its deprecated alias: a path that disappears, or an alias
//! that stops naming the same item as its home, fails to compile here.
//!
//! The homes are named with `let _: <signature> = <path>;` (a function's signature is checked
//! too), and a type's home with `type_of`. An alias is checked against its home with `same`,
//! which compiles only if both name one type, or with a function pointer of the home's
//! signature.

use std::future::Future;
use std::marker::PhantomData;
use std::time::{Duration, Instant, SystemTime};

/// Names a type.
fn type_of<T: ?Sized>() -> PhantomData<T> {
    PhantomData
}

/// Compiles only if `A` and `B` are one type.
fn same<A: ?Sized, B: ?Sized>(_: PhantomData<A>, _: PhantomData<B>)
where
    PhantomData<A>: Into<PhantomData<B>>,
{
}

#[test]
fn root() {
    // What Go spells as language, and what every program needs first.
    let _: fn(std::future::Ready<u8>) -> u8 = goro::run::<std::future::Ready<u8>>;
    let _: fn(std::future::Ready<u8>) -> goro::runtime::JoinHandle<u8> = goro::go::<std::future::Ready<u8>>;
    let _: fn(usize) -> (goro::chan::Sender<u8>, goro::chan::Receiver<u8>) = goro::chan::<u8>;
    assert_eq!(goro::syscall(|| 1u8), 1);
    let _ = type_of::<goro::Chan<u8>>();
    goro::run(async {
        let (tx, rx) = goro::chan::<u8>(1);
        let h = goro::go! { 1 };
        goro::select! {
            send(tx, 2) -> r => r.unwrap(),
        }
        let v = goro::select! {
            recv(rx) -> v => v,
        };
        assert_eq!(v, Some(2));
        assert_eq!(h.await.unwrap(), 1);
    });
    let (tx, rx) = goro::chan::<u8>(1);
    goro::select_blocking! {
        send(tx, 3) -> r => r.unwrap(),
    }
    assert_eq!(rx.recv_blocking(), Some(3));
}

#[goro::test]
async fn attribute_macros() {
    assert_eq!(goro::runtime::num_goroutine(), 1);
}

#[test]
fn runtime() {
    // Go's `runtime` and `runtime/metrics`.
    let _: fn() -> goro::runtime::Builder = goro::runtime::Builder::new;
    let _ = type_of::<goro::runtime::Runtime>();
    let _ = type_of::<goro::runtime::UnhandledPanic>();
    let _ = type_of::<goro::runtime::JoinHandle<u8>>();
    let _ = type_of::<goro::runtime::JoinError>();
    let _: fn() -> usize = goro::runtime::max_procs;
    let _: fn() -> usize = goro::runtime::num_goroutine;
    let _: fn() -> goro::runtime::YieldNow = goro::runtime::yield_now;
    let _: fn() -> goro::runtime::Metrics = goro::runtime::metrics;
    let _: fn() -> String = goro::runtime::dump;
    let _: fn() -> Vec<goro::runtime::Goroutine> = goro::runtime::goroutines;
    let _ = type_of::<goro::runtime::GoroutineStatus>();
    let _ = goro::runtime::dump_on_sigquit;
    let _: fn(goro::runtime::WaitReason) = goro::runtime::set_wait_reason;
    let _: fn(&mut std::task::Context<'_>) -> std::task::Poll<()> = goro::runtime::coop::poll_proceed;
    let _: fn() -> bool = goro::runtime::coop::should_yield;
    let _ = goro::runtime::WaitReason::ChanReceive;

    let rt = goro::runtime::Builder::new()
        .max_procs(1)
        .unhandled_panic(goro::runtime::UnhandledPanic::Ignore)
        .build()
        .unwrap();
    rt.block_on(async {
        assert_eq!(goro::runtime::max_procs(), 1);
        goro::runtime::yield_now().await;
        let m: goro::runtime::Metrics = goro::runtime::metrics();
        assert_eq!(m.procs, 1);
    });
}

#[test]
fn chan() {
    // The module holds its own constructor: the root's function, the same item.
    let _: fn(usize) -> (goro::chan::Sender<u8>, goro::chan::Receiver<u8>) = goro::chan::chan::<u8>;
    let (tx, rx) = goro::chan::chan::<u8>(1);
    tx.try_send(1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
    let _ = type_of::<goro::chan::SendError<u8>>();
    let _ = type_of::<goro::chan::TrySendError<u8>>();
    let _ = type_of::<goro::chan::TryRecvError>();
    let _ = type_of::<goro::chan::Select<'static>>();
    let _ = type_of::<goro::chan::Iter<'static, u8>>();
    let _ = type_of::<goro::chan::RecvToken<u8>>();
    let _ = type_of::<goro::chan::SendToken<u8>>();
    let _ = type_of::<goro::chan::futures::Send<'static, u8>>();
    let _ = type_of::<goro::chan::futures::Recv<'static, u8>>();
    let c = goro::Chan::<u8>::new(1);
    assert_eq!(c.capacity(), 1);
}

#[test]
fn sync() {
    // Go's `sync`, and x/sync's `errgroup` and `semaphore` as modules of their own.
    let _ = type_of::<goro::sync::WaitGroup>();
    let _ = type_of::<goro::sync::Map<u8, u8>>();
    let _ = type_of::<goro::sync::Mutex<u8>>();
    let _ = type_of::<goro::sync::MutexGuard<'static, u8>>();
    let _ = type_of::<goro::sync::RwMutex<u8>>();
    let _ = type_of::<goro::sync::RwMutexReadGuard<'static, u8>>();
    let _ = type_of::<goro::sync::RwMutexWriteGuard<'static, u8>>();
    let _ = type_of::<goro::sync::Once>();
    let _ = type_of::<goro::sync::Pool<u8>>();
    let _ = type_of::<goro::sync::Cond>();
    let _ = type_of::<goro::sync::errgroup::Group<String>>();
    let _: fn(usize) -> goro::sync::semaphore::Semaphore = goro::sync::semaphore::Semaphore::new;
    let _ = type_of::<goro::sync::semaphore::SemaphorePermit<'static>>();
    let _ = type_of::<goro::sync::semaphore::OwnedSemaphorePermit>();
    let _ = type_of::<goro::sync::futures::Acquire<'static>>();
}

#[test]
fn time_context_net_signal_synctest() {
    let _: fn(Duration) -> goro::time::Sleep = goro::time::sleep;
    let _: fn(Duration) -> goro::chan::Receiver<Instant> = goro::time::after;
    let _: fn(Duration) -> goro::chan::Receiver<Instant> = goro::time::tick;
    let _: fn(Duration) -> goro::time::Ticker = goro::time::Ticker::new;
    let _: fn(Duration) -> goro::time::Timer = goro::time::Timer::new;
    let _: fn(Duration, fn()) -> goro::time::Timer = goro::time::after_func::<fn()>;
    let _: fn(Duration, std::future::Ready<u8>) -> goro::time::Timeout<std::future::Ready<u8>> = goro::time::timeout;
    let _ = type_of::<goro::time::Elapsed>();
    let _: fn() -> Instant = goro::time::now;
    let _: fn() -> SystemTime = goro::time::system_now;

    let _: fn() -> goro::context::Context = goro::context::Context::background;
    let _: fn(&goro::context::Context) -> (goro::context::Context, goro::context::CancelFunc) =
        goro::context::with_cancel;
    let _: fn(&goro::context::Context, Duration) -> (goro::context::Context, goro::context::CancelFunc) =
        goro::context::with_timeout;
    let _: fn(&goro::context::Context, Instant) -> (goro::context::Context, goro::context::CancelFunc) =
        goro::context::with_deadline;
    let _ = goro::context::ContextError::Canceled;

    let _ = type_of::<goro::net::TcpListener>();
    let _ = type_of::<goro::net::TcpStream>();
    let _ = type_of::<goro::net::UdpSocket>();
    let _: fn() -> (goro::net::Pipe, goro::net::Pipe) = goro::net::pipe;
    #[cfg(unix)]
    if std::hint::black_box(false) {
        let _: (goro::context::Context, goro::context::CancelFunc) =
            goro::signal::notify_context(&goro::context::Context::background(), [goro::signal::SIGINT]);
    }

    let _: fn(std::future::Ready<u8>) -> u8 = goro::synctest::test::<std::future::Ready<u8>>;
    let _: fn(u64, std::future::Ready<u8>) -> u8 = goro::synctest::test_seed::<std::future::Ready<u8>>;
    let _: fn() -> goro::synctest::Wait = goro::synctest::wait;
    let _ = goro::synctest::sleep;
    let _ = goro::synctest::explore::<fn() -> std::future::Ready<()>, std::future::Ready<()>>;
    fn _is_future<F: Future>(_: F) {}
    _is_future(goro::synctest::sleep(Duration::ZERO));
}

/// The paths that moved: each still compiles, deprecated, and names the same item as its home.
#[test]
#[allow(deprecated)]
fn deprecated_aliases() {
    same(type_of::<goro::Builder>(), type_of::<goro::runtime::Builder>());
    same(type_of::<goro::Runtime>(), type_of::<goro::runtime::Runtime>());
    same(type_of::<goro::UnhandledPanic>(), type_of::<goro::runtime::UnhandledPanic>());
    same(type_of::<goro::JoinHandle<u8>>(), type_of::<goro::runtime::JoinHandle<u8>>());
    same(type_of::<goro::JoinError>(), type_of::<goro::runtime::JoinError>());
    same(type_of::<goro::YieldNow>(), type_of::<goro::runtime::YieldNow>());
    same(type_of::<goro::WaitReason>(), type_of::<goro::runtime::WaitReason>());
    let _: fn() -> usize = goro::max_procs;
    let _: fn() -> usize = goro::num_goroutine;
    let _: fn() -> goro::runtime::YieldNow = goro::yield_now;
    let _: fn(&mut std::task::Context<'_>) -> std::task::Poll<()> = goro::runtime::poll_proceed;
    let _: fn() -> bool = goro::runtime::should_yield;
    let _: usize = goro::runtime::HEADER_SIZE;
    same(type_of::<goro::chan::Chan<u8>>(), type_of::<goro::Chan<u8>>());
    same(type_of::<goro::sync::Semaphore>(), type_of::<goro::sync::semaphore::Semaphore>());
    same(
        type_of::<goro::sync::SemaphorePermit<'static>>(),
        type_of::<goro::sync::semaphore::SemaphorePermit<'static>>(),
    );
    same(type_of::<goro::sync::OwnedSemaphorePermit>(), type_of::<goro::sync::semaphore::OwnedSemaphorePermit>());

    // Constructors, variants and generic arguments through the aliases.
    let rt = goro::Builder::new().max_procs(1).unhandled_panic(goro::UnhandledPanic::Ignore).build().unwrap();
    let _: &goro::Runtime = &rt;
    rt.block_on(async {
        assert_eq!(goro::max_procs(), 1);
        assert_eq!(goro::num_goroutine(), 1);
        let y: goro::YieldNow = goro::yield_now();
        y.await;
        let h: goro::JoinHandle<u8> = goro::go(async { 7 });
        let r: Result<u8, goro::JoinError> = h.await;
        assert_eq!(r.unwrap(), 7);
        assert_eq!(goro::WaitReason::ChanReceive.as_str(), "chan receive");
    });
    let c = goro::chan::Chan::<u8>::new(1);
    assert_eq!(c.capacity(), 1);
    let sem = goro::sync::Semaphore::new(1);
    let permit: Option<goro::sync::SemaphorePermit<'_>> = sem.try_acquire_guard(1);
    assert!(permit.is_some());
}
