//! `goro::model`: model-check a goro program with loom. Built with `--cfg loom` only.
//!
//! # A model is not the scheduler
//!
//! goro's own loom models (`loom_tests`) drive the real scheduler: Ms, Ps, run queues,
//! spinning, stealing. For a user's program that is the wrong thing to explore: loom would
//! spend its whole budget on the scheduler's states (spinning Ms, idle Ps, sysmon) and never
//! reach the user's interleavings, and with one P it would run the Gs one after the other and
//! explore nothing. So a model leaves the scheduler out:
//!
//! - **Every G is a loom thread.** The main G runs on loom's main thread; each `go` spawns a
//!   loom thread that polls its future (a per-thread `block_on`). A G's waker wakes that thread,
//!   so loom switches between Gs exactly where goro's channels and `sync` types (already written
//!   over the loom shim) touch shared state, and nowhere else. Loom allows
//!   [`loom::MAX_THREADS`] threads: the main G and 4 more, every G of an execution counting,
//!   finished or not.
//! - **Time is virtual.** A timer (`sleep`, `after`, `Timer`, `Ticker`, `after_func`, a context
//!   deadline) is armed on the model's clock, a loom thread of its own started by the first
//!   arming (it takes one of the thread slots). The clock fires armed timers in deadline order,
//!   advancing the virtual time to each deadline; being a loom thread, it can fire at any point
//!   after the arming, so loom explores "the timer fires" before and after everything the Gs
//!   do. Durations are exact: `sleep(5ms)` fires before `after(10ms)` armed at the same time.
//! - **A deadlock is every loom thread blocked**, which loom reports itself; [`model`] catches
//!   that report and fails with the dump of the execution's Gs, as goro's runtime prints it.
//! - **Main returning ends the program**, as in Go: the Gs still running are stopped (each at
//!   the end of its current poll, before anything of main's is dropped, so none of them sees
//!   main's values go away), then dropped. Loom stops exploring at that point: what the Gs do
//!   after main returned is not part of the program.
//!
//! # Waking a G
//!
//! A G parks its loom thread (`loom::thread::park`) when its poll returns `Pending` and nothing
//! woke it meanwhile. The waker sets the G's `notified` flag and unparks the thread, but only
//! if the G is parked in its own loop (the `parked` flag): an unpark that reached a thread
//! blocked in a loom mutex (inside a goro primitive's poll) would make loom resume it without
//! the lock. An unpark is also a happens-before edge from the waker to the G's next poll, as
//! the G's state word is in a runtime; a wake that comes while the G is still polling has no
//! such edge in the model (the G sees the flag and polls again). That can only add orderings
//! to the ones loom explores, never hide one, and goro's primitives do not need the edge: each
//! takes its own lock or atomic on the next poll. The flags are plain atomics because a loom
//! atomic would add a branch point to every wake and every poll, and those multiply the
//! executions of every model.
//!
//! Model bookkeeping (the table of Gs for the dump, the clock's heap, flags only the model reads)
//! uses std types: loom runs one thread at a time, switching only at loom operations, and no
//! std lock is ever held across one.

mod join;
pub(crate) mod time;

pub(crate) use join::Join;

use crate::g::WaitReason;
use crate::traceback::{Goroutine, GoroutineStatus};
use crate::JoinHandle;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// The stack of a G's loom thread, in words (generator stacks are sized in words): the future
/// itself is boxed, but a poll of goro's primitives from deep user code needs more than loom's
/// default 32 KiB.
const G_STACK_WORDS: usize = 1 << 15;

/// Runs `f`'s future as the main G of a loom model, once per interleaving loom explores: Go's
/// `func main` under a model checker. Available when the crate is built with `--cfg loom`.
///
/// ```ignore
/// #[cfg(loom)]
/// #[test]
/// fn transfer_is_atomic() {
///     goro::model(|| async {
///         let (tx, rx) = goro::chan::<u32>(0);
///         goro::go(async move { tx.send(1).await.unwrap() });
///         assert_eq!(rx.recv().await, Some(1));
///     });
/// }
/// ```
///
/// Inside the model:
///
/// - every G (main, and each [`go`](fn@crate::go)) is a loom thread of its own, and loom explores
///   their interleavings at every step of goro's channels, `select!` and `sync` types. The M/P
///   scheduler is not there: a G runs as soon as it can, and `max_procs`, `Builder`, `run` and
///   metrics do not apply (`goro::run` inside a model panics).
/// - loom runs at most 5 threads in a model: main plus 4 Gs, every G of an execution counting
///   (finished ones too); the model's clock takes one of them from the first armed timer on.
///   `go` past the limit panics, naming it.
/// - time is virtual: `goro::time`'s sleeps, timers, tickers and deadlines fire in deadline
///   order at any point after they are armed, so a `select!` between a message and
///   `time::after` is seen both ways. `std::time::Instant::now()` is still the real clock:
///   use durations in a model.
/// - a panic anywhere (main or any G) fails the model, as it ends a Go program: a G's panic is
///   not handed to its `JoinHandle`.
/// - when every G is blocked (loom reports a deadlock), the model fails with
///   `all goroutines are asleep - deadlock!` and each G's block of the dump
///   ([`dump`](crate::dump): `goroutine 2 [chan send]:` and where it was created).
/// - when main returns, the Gs still running stop, as in Go (no leak check).
/// - `goro::net`, `goro::signal` and [`syscall`](crate::syscall) are not available: they
///   compile under `--cfg loom`, so that a crate's binaries build for its model tests, and
///   panic when a model uses them. The `*_blocking`
///   calls block the G's thread; use the async forms.
///
/// Loom's knobs work as loom documents them: `LOOM_MAX_PREEMPTIONS` (unset: unbounded, which
/// is exhaustive but takes hours for most programs; 2 or 3 finds the usual bugs in seconds),
/// `LOOM_MAX_BRANCHES`, `LOOM_CHECKPOINT_FILE`, `LOOM_LOG`, `LOOM_LOCATION`.
///
/// # Panics
/// When the model fails: an assertion of the program, a G's panic, a deadlock (with the dump),
/// or a limit of loom's.
#[track_caller]
pub fn model<F, Fut>(f: F)
where
    F: Fn() -> Fut + Sync + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let location = Location::caller();
    let census: Arc<StdMutex<Option<Arc<Census>>>> = Arc::default();
    let executions = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let (c, n) = (census.clone(), executions.clone());
    let _quiet = LoomReports::quiet();
    let checked = catch_unwind(AssertUnwindSafe(|| {
        loom::model(move || {
            n.fetch_add(1, Relaxed);
            let m = Arc::new(Model::new(location));
            *lock(&c) = Some(m.census.clone());
            run_main(&m, &f);
        })
    }));
    let n = executions.load(Relaxed);
    let dump = lock(&census).as_ref().map(|c| c.dump()).unwrap_or_default();
    match checked {
        Ok(()) => eprintln!("goro::model: {n} executions in {:.1?}", start.elapsed()),
        Err(p) => {
            let msg = payload_text(&*p);
            if msg.starts_with("deadlock;") {
                panic!(
                    "goro::model: {}\n\n{dump}\n(loom found every thread of execution {n} blocked: {msg})",
                    crate::checkdead::DEADLOCK
                );
            }
            if msg.contains("exceeded maximum number of branches") {
                panic!(
                    "goro::model: execution {n} did not end within loom's LOOM_MAX_BRANCHES: the Gs may loop \
                     forever (a ticker that keeps firing while the Gs wait on each other is a deadlock that \
                     its timer hides); the goroutines were:\n\n{dump}\n({msg})"
                );
            }
            eprintln!("goro::model: execution {n} failed; its goroutines were:\n\n{dump}");
            resume_unwind(p)
        }
    }
}

/// While a [`model`] runs on this thread, the panic hook does not print loom's own reports of a
/// deadlock or of an execution past `LOOM_MAX_BRANCHES` (`deadlock; threads = [(Id(0),
/// Blocked(..)), ..]` and a backtrace): `model` catches them and fails with its own report, the
/// goroutines and what each waits on, which is the one a user should read first. Loom runs all
/// of a model's threads on the thread that called it, so a std thread-local set there covers
/// them; other threads' panics, and these two outside a model, print as before.
struct LoomReports(bool);

std::thread_local! {
    static QUIET_LOOM_REPORTS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl LoomReports {
    fn quiet() -> LoomReports {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let reported_by_model = QUIET_LOOM_REPORTS.with(|q| q.get()) && {
                    let msg = payload_text(info.payload());
                    msg.starts_with("deadlock;") || msg.contains("exceeded maximum number of branches")
                };
                if !reported_by_model {
                    previous(info);
                }
            }));
        });
        LoomReports(QUIET_LOOM_REPORTS.with(|q| q.replace(true)))
    }
}

impl Drop for LoomReports {
    fn drop(&mut self) {
        QUIET_LOOM_REPORTS.with(|q| q.set(self.0));
    }
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        String::new()
    }
}

/// Locks a std mutex of the model's bookkeeping, ignoring poisoning (a model that failed is
/// still read for its report).
fn lock<T>(m: &StdMutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The G statuses of [`GInfo::status`].
const RUNNABLE: u8 = 0;
const RUNNING: u8 = 1;
const WAITING: u8 = 2;
const DONE: u8 = 3;

/// What the dump shows of a G. Std types only: the census of a failed execution is read after
/// loom gave up on it.
struct GInfo {
    id: u64,
    parent: Option<u64>,
    location: &'static Location<'static>,
    main: bool,
    status: AtomicU8,
    reason: AtomicU8,
}

impl GInfo {
    fn row(&self) -> Option<Goroutine> {
        let status = match self.status.load(Relaxed) {
            RUNNABLE => GoroutineStatus::Runnable,
            RUNNING => GoroutineStatus::Running,
            WAITING => GoroutineStatus::Waiting,
            _ => return None,
        };
        Some(Goroutine {
            id: self.id,
            status,
            wait_reason: (status == GoroutineStatus::Waiting).then(|| WaitReason::from_u8(self.reason.load(Relaxed))),
            waited: None,
            location: self.location,
            parent: self.parent,
            main: self.main,
        })
    }
}

/// Every G of one execution, for [`goroutines`](crate::goroutines), [`dump`](crate::dump) and
/// the report of a failed model.
#[derive(Default)]
struct Census {
    gs: StdMutex<Vec<Arc<GInfo>>>,
}

impl Census {
    fn rows(&self) -> Vec<Goroutine> {
        lock(&self.gs).iter().filter_map(|g| g.row()).collect()
    }

    fn dump(&self) -> String {
        let mut s = String::new();
        for (i, g) in self.rows().iter().enumerate() {
            if i > 0 {
                s.push('\n');
            }
            let _ = write!(s, "{g}");
        }
        s
    }
}

/// One G of a model: its row in the census and how to wake its loom thread.
pub(crate) struct GSlot {
    info: Arc<GInfo>,
    /// Set by the G's thread when it starts.
    thread: OnceLock<loom::thread::Thread>,
    /// Woken since its last poll began.
    notified: AtomicBool,
    /// Woke itself during its poll (`yield_now`, Go's `Gosched`).
    self_woken: AtomicBool,
    /// Parked in [`GSlot::park`]: only then may a wake unpark the thread.
    parked: AtomicBool,
    /// `JoinHandle::abort`: drop the future at the next scheduling point.
    cancel: AtomicBool,
}

impl GSlot {
    fn new(info: GInfo) -> Arc<GSlot> {
        Arc::new(GSlot {
            info: Arc::new(info),
            thread: OnceLock::new(),
            notified: AtomicBool::new(false),
            self_woken: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            cancel: AtomicBool::new(false),
        })
    }

    pub(crate) fn id(&self) -> u64 {
        self.info.id
    }

    pub(crate) fn location(&self) -> &'static Location<'static> {
        self.info.location
    }

    /// What the G's waker does: the G polls again (now, if it is parked; after its poll, if it
    /// is polling).
    pub(crate) fn wake(&self) {
        if self.thread.get().is_some_and(|t| t.id() == loom::thread::current().id()) {
            self.self_woken.store(true, Relaxed);
        }
        if self.notified.swap(true, Relaxed) {
            return;
        }
        let _ = self.info.status.compare_exchange(WAITING, RUNNABLE, Relaxed, Relaxed);
        if self.parked.swap(false, Relaxed) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }

    /// Stops the G at its next scheduling point (`JoinHandle::abort`).
    pub(crate) fn abort(&self) {
        self.cancel.store(true, Relaxed);
        self.wake();
    }

    /// Whether the G was woken since its last poll began (and clears it).
    fn take_notified(&self) -> bool {
        self.notified.swap(false, Relaxed)
    }

    /// Parks the calling thread, the G's own, until the G is woken.
    fn park(&self) {
        if self.take_notified() {
            return;
        }
        loop {
            // No loom operation between the swap above (or below) and `park`: no wake can come
            // in between, and one that comes after finds `parked` set.
            self.parked.store(true, Relaxed);
            loom::thread::park();
            self.parked.store(false, Relaxed);
            if self.take_notified() {
                return;
            }
        }
    }
}

struct GWake(Arc<GSlot>);

impl Wake for GWake {
    fn wake(self: Arc<Self>) {
        self.0.wake();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.wake();
    }
}

/// One execution of a model.
pub(crate) struct Model {
    /// Where `goro::model` was called: the main G's location.
    location: &'static Location<'static>,
    /// The real instant the virtual clock starts from.
    base: Instant,
    census: Arc<Census>,
    /// Every G but main, to stop them when main returns.
    slots: StdMutex<Vec<Arc<GSlot>>>,
    main: OnceLock<Arc<GSlot>>,
    next_goid: AtomicU64,
    /// Loom threads in use: main, the Gs, the clock.
    threads: AtomicUsize,
    /// Threads other than main that may still poll or fire (not stopped, not exited).
    active: AtomicUsize,
    /// Main returned: the Gs stop at their next scheduling point, the clock stops firing.
    ending: AtomicBool,
    /// Every G has stopped: they drop their futures and exit.
    teardown: AtomicBool,
    clock: time::Clock,
}

/// This thread's place in a model: the model, and its G (`None` on the clock's thread).
#[derive(Clone)]
struct Cur {
    model: Arc<Model>,
    g: Option<Arc<GSlot>>,
}

loom::thread_local! {
    static CURRENT: RefCell<Option<Cur>> = RefCell::new(None);
}

fn current() -> Option<Cur> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

fn enter(cur: Cur) {
    CURRENT.with(|c| *c.borrow_mut() = Some(cur));
}

/// Whether the calling thread is a thread of a model (a G, or the clock).
pub(crate) fn active() -> bool {
    CURRENT.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

impl Model {
    fn new(location: &'static Location<'static>) -> Model {
        Model {
            location,
            base: Instant::now(),
            census: Arc::default(),
            slots: StdMutex::new(Vec::new()),
            main: OnceLock::new(),
            next_goid: AtomicU64::new(1),
            threads: AtomicUsize::new(1),
            active: AtomicUsize::new(0),
            ending: AtomicBool::new(false),
            teardown: AtomicBool::new(false),
            clock: time::Clock::new(),
        }
    }

    fn new_g(&self, parent: Option<u64>, location: &'static Location<'static>, main: bool) -> Arc<GSlot> {
        let id = self.next_goid.fetch_add(1, Relaxed);
        let slot =
            GSlot::new(GInfo { id, parent, location, main, status: AtomicU8::new(RUNNABLE), reason: AtomicU8::new(0) });
        lock(&self.census.gs).push(slot.info.clone());
        slot
    }

    /// Takes a loom thread slot for `what`, or panics naming loom's limit.
    fn take_thread(&self, what: &dyn std::fmt::Display) {
        let used = self.threads.load(Relaxed);
        if used >= loom::MAX_THREADS {
            let max = loom::MAX_THREADS;
            let clock = if self.clock.started() { ", and the model's clock (started by the first timer)" } else { "" };
            panic!(
                "goro::model: {what}: loom runs at most {max} threads (loom::MAX_THREADS), and this execution \
                 uses them all: the main G, {} G{}{clock}. Every G of an execution takes one, finished or not, \
                 so a model starts at most {} Gs ({} once a timer is armed)",
                used - 1 - usize::from(self.clock.started()),
                if used - 1 - usize::from(self.clock.started()) == 1 { "" } else { "s" },
                max - 1,
                max - 2,
            );
        }
        self.threads.store(used + 1, Relaxed);
        self.active.fetch_add(1, Relaxed);
    }

    /// A thread other than main stops polling (or exits): the last one lets main tear down.
    fn thread_stopped(&self) {
        if self.active.fetch_sub(1, Relaxed) == 1 && self.ending.load(Relaxed) {
            if let Some(main) = self.main.get() {
                main.wake();
            }
        }
    }

    /// Main returned: stop every G at its next scheduling point (a G in the middle of a poll
    /// finishes it first, with main's values still there), then let them drop their futures.
    fn end(&self, main: &GSlot) {
        self.ending.store(true, Relaxed);
        // What happens after main returned is not part of the program.
        loom::stop_exploring();
        let slots: Vec<Arc<GSlot>> = lock(&self.slots).clone();
        for s in &slots {
            s.wake();
        }
        self.clock.wake();
        while self.active.load(Relaxed) != 0 {
            main.park();
        }
        self.teardown.store(true, Relaxed);
        for s in &slots {
            s.wake();
        }
    }
}

/// Runs one execution: the main G on loom's main thread.
fn run_main<F, Fut>(m: &Arc<Model>, f: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let slot = m.new_g(None, m.location, true);
    let _ = slot.thread.set(loom::thread::current());
    let _ = m.main.set(slot.clone());
    enter(Cur { model: m.clone(), g: Some(slot.clone()) });
    // Dropped by hand on success only: see `LEAK`.
    let mut fut = ManuallyDrop::new(Box::pin(f()));
    let _ = drive(m, &slot, fut.as_mut());
    m.end(&slot);
    drop(ManuallyDrop::into_inner(fut));
    slot.info.status.store(DONE, Relaxed);
    // Timers still armed hold channels and Gs' wakers: dropped here, on a live thread.
    m.clock.clear();
}

/// Why the futures of a failed execution are leaked (the Gs' futures and main's are held in
/// `ManuallyDrop` and dropped by hand when the execution succeeds).
///
/// When loom finds a deadlock it panics on the thread that blocked last, with no thread left
/// active; any loom operation after that panics again. Unwinding that thread would drop its
/// G's future, whose goro values (a channel, a `MutexGuard`) do loom operations in their
/// destructors: a panic during unwinding, which aborts the test binary. The same holds after
/// any failure, once the panic has left loom's scheduler (the threads' locals are dropped
/// outside the execution). So a failed execution's futures, and the clock's timers, are leaked:
/// the test is over anyway. (The other threads' stacks are not unwound: their generators are
/// dropped without running while the thread panics.)
const LEAK: () = ();

/// How [`drive`] ended.
enum Driven<T> {
    Done(T),
    /// `JoinHandle::abort`.
    Cancelled,
    /// Main returned.
    Ending,
}

/// Polls `fut` on the calling thread, the G's own, until it completes, is aborted, or the model
/// ends (the last two only for a G other than main).
fn drive<T>(m: &Model, slot: &Arc<GSlot>, mut fut: Pin<&mut dyn Future<Output = T>>) -> Driven<T> {
    let waker = Waker::from(Arc::new(GWake(slot.clone())));
    let mut cx = Context::from_waker(&waker);
    let info = &slot.info;
    loop {
        if !info.main {
            if m.ending.load(Relaxed) {
                return Driven::Ending;
            }
            if slot.cancel.load(Relaxed) {
                return Driven::Cancelled;
            }
        }
        info.status.store(RUNNING, Relaxed);
        info.reason.store(0, Relaxed);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Driven::Done(v);
        }
        info.status.store(WAITING, Relaxed);
        if slot.take_notified() {
            info.status.store(RUNNABLE, Relaxed);
            if slot.self_woken.swap(false, Relaxed) {
                // It woke itself (`yield_now`, Go's `Gosched`): let the others go first, or a
                // G that spins on `yield_now` would keep loom on its thread forever.
                loom::thread::yield_now();
            }
            continue;
        }
        slot.park();
    }
}

/// `go` in a model: the G runs on a loom thread of its own.
pub(crate) fn go<F>(future: F, location: &'static Location<'static>) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let cur = current().expect("goro: model::go outside a model");
    let m = cur.model.clone();
    let parent = cur.g.as_ref().map(|g| g.id());
    if m.ending.load(Relaxed) {
        // Main returned (this runs in the last poll of a G being stopped): the program is over,
        // and the G never starts. Its handle waits forever.
        let slot = m.new_g(parent, location, false);
        slot.info.status.store(DONE, Relaxed);
        return JoinHandle::from_model(Arc::new(Join::new(slot)));
    }
    m.take_thread(&format_args!("`go` at {location}"));
    let slot = m.new_g(parent, location, false);
    let join = Arc::new(Join::new(slot.clone()));
    lock(&m.slots).push(slot.clone());
    let j = join.clone();
    // Dropped by hand on success only: see `LEAK`.
    let future = ManuallyDrop::new(future);
    let body = move || {
        let _ = slot.thread.set(loom::thread::current());
        enter(Cur { model: m.clone(), g: Some(slot.clone()) });
        let mut fut = ManuallyDrop::new(Box::pin(ManuallyDrop::into_inner(future)));
        match drive(&m, &slot, fut.as_mut()) {
            Driven::Done(v) => {
                drop(ManuallyDrop::into_inner(fut));
                j.complete(Ok(v));
            }
            Driven::Cancelled => {
                drop(ManuallyDrop::into_inner(fut));
                j.complete(Err(crate::JoinError::cancelled(slot.id(), slot.location())));
            }
            Driven::Ending => {
                // Stopped; the future is dropped once every G has stopped (none polls then).
                m.thread_stopped();
                while !m.teardown.load(Relaxed) {
                    slot.park();
                }
                drop(ManuallyDrop::into_inner(fut));
                slot.info.status.store(DONE, Relaxed);
                return;
            }
        }
        slot.info.status.store(DONE, Relaxed);
        m.thread_stopped();
    };
    let spawned = loom::thread::Builder::new()
        .name(format!("goroutine {}", crate::g::ModelJoin::id(&*join)))
        .stack_size(G_STACK_WORDS)
        .spawn(body)
        .expect("loom spawns");
    drop(spawned); // detached: the JoinHandle is goro's
    JoinHandle::from_model(join)
}

/// Records `reason` for the calling G, if it is a G of a model.
pub(crate) fn set_wait_reason(reason: WaitReason) -> bool {
    CURRENT
        .try_with(|c| match c.borrow().as_ref() {
            Some(Cur { g: Some(g), .. }) => {
                g.info.reason.store(reason as u8, Relaxed);
                true
            }
            Some(Cur { g: None, .. }) => true,
            None => false,
        })
        .unwrap_or(false)
}

/// The model's Gs as `goroutines()` lists them, if the calling thread is in a model.
pub(crate) fn goroutines() -> Option<Vec<Goroutine>> {
    current().map(|c| c.model.census.rows())
}

/// The model's Gs as `dump()` prints them, if the calling thread is in a model.
pub(crate) fn dump() -> Option<String> {
    current().map(|c| c.model.census.dump())
}

/// The number of live Gs of the model, main included, if the calling thread is in one.
pub(crate) fn num_goroutine() -> Option<usize> {
    current().map(|c| c.model.census.rows().len())
}

/// The model's virtual time, if the calling thread is in a model.
pub(crate) fn now() -> Option<Instant> {
    current().map(|c| c.model.base + c.model.clock.now())
}

/// `goro::syscall` in a model: not available.
#[track_caller]
pub(crate) fn no_syscall() -> ! {
    panic!(
        "goro::syscall at {} is not available in goro::model: a model checks goro's Gs, channels, sync \
         types and timers, and a blocking call is none of them. Leave the call out of the model (test \
         the code around it with a stand-in), or call it without goro::syscall",
        Location::caller()
    )
}

/// I/O in a model (`goro::net`, `goro::signal`): not available.
pub(crate) fn no_io(what: &str) -> ! {
    panic!(
        "{what} is not available in goro::model: a model checks goro's Gs, channels, sync types and \
         timers, not the outside world. Keep the I/O out of the model: let the code under test talk to a \
         channel, and model a stand-in for the socket on its other end"
    )
}

/// `Builder::build` (and so `goro::run`) in a model.
pub(crate) fn no_runtime() -> ! {
    panic!(
        "goro: a runtime cannot be built inside goro::model: a model has no scheduler (every G is a loom \
         thread). The closure's future is the main G: use goro::go, channels and the rest directly"
    )
}
