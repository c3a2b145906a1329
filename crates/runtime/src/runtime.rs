//! The public face of the scheduler: [`Builder`], [`Runtime`], [`run`], [`go`], and the
//! process-wide queries [`max_procs`] and [`num_goroutine`].

use crate::config::{self, Config, ThreadHook};
use crate::g::{self, JoinError, JoinHandle};
use crate::idle::M;
use crate::m::{Found, MCtx};
use crate::mains::MainState;
use crate::metrics::Metrics;
pub use crate::panics::UnhandledPanic;
use crate::sched::Shared;
use std::future::Future;
use std::io;
use std::panic::Location;
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering::*;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Waker};

/// Configures and builds a [`Runtime`].
///
/// ```
/// let rt = goro::runtime::Builder::new().max_procs(2).thread_name("worker").build()?;
/// assert_eq!(rt.block_on(async { goro::runtime::max_procs() }), 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    max_procs: Option<usize>,
    max_threads: usize,
    thread_name: String,
    stack_size: Option<usize>,
    handoff_blocked: bool,
    deadlock_detection: bool,
    census: crate::checkdead::Census,
    unhandled_panic: UnhandledPanic,
    on_thread_start: Option<ThreadHook>,
    on_thread_stop: Option<ThreadHook>,
    bubble: Option<crate::synctest::BubbleSpec>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// A builder with Go's defaults: `max_procs` from `GORO_MAXPROCS` or the number of CPUs,
    /// at most 10 000 threads.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().build().unwrap();
    /// rt.block_on(async {});
    /// ```
    pub fn new() -> Builder {
        Builder {
            max_procs: None,
            max_threads: config::DEFAULT_MAX_THREADS,
            thread_name: "goro-m".to_owned(),
            stack_size: None,
            handoff_blocked: true,
            deadlock_detection: true,
            census: crate::checkdead::Census::AllThreads,
            unhandled_panic: UnhandledPanic::Ignore,
            on_thread_start: None,
            on_thread_stop: None,
            bubble: None,
        }
    }

    /// Makes the runtime a synctest bubble (see `goro::synctest`): one P, run only by the
    /// thread inside [`Runtime::block_on`], no other thread, a virtual clock, and every
    /// scheduling choice taken from `spec`'s seed. Not part of the stable API.
    #[doc(hidden)]
    pub fn bubble(mut self, spec: crate::synctest::BubbleSpec) -> Builder {
        self.bubble = Some(spec);
        self.max_procs = Some(1);
        self.deadlock_detection = false;
        self.unhandled_panic = UnhandledPanic::ShutdownRuntime;
        self
    }

    /// The number of Ps: at most this many threads run Gs at once (Go's `GOMAXPROCS`).
    /// `0` makes [`build`](Self::build) fail with `InvalidInput`.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().max_procs(1).build().unwrap();
    /// assert_eq!(rt.block_on(async { goro::runtime::max_procs() }), 1);
    /// assert!(goro::runtime::Builder::new().max_procs(0).build().is_err());
    /// ```
    pub fn max_procs(mut self, n: usize) -> Builder {
        self.max_procs = Some(n);
        self
    }

    /// The most OS threads the runtime may start (Go's `debug.SetMaxThreads`, default 10 000).
    ///
    /// Go kills the program when it needs more (`fatal error: thread exhaustion`); goro, a
    /// library inside someone's process, does not: it says so once on stderr (`goro: runtime
    /// exceeded N threads`) and goes on with the threads it has. Work that wanted a new thread
    /// waits for one of them, and is never stranded: the next thread that runs out of work takes
    /// it before it sleeps. What can stall is a program whose every thread is blocked (in
    /// `goro::syscall`, or in plain blocking calls) waiting for such work.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().max_procs(2).max_threads(64).build().unwrap();
    /// rt.block_on(async {});
    /// ```
    pub fn max_threads(mut self, n: usize) -> Builder {
        self.max_threads = n;
        self
    }

    /// The name of the runtime's threads (`{name}-{n}`; default `goro-m`).
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().thread_name("pool").build().unwrap();
    /// rt.block_on(async {});
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Builder {
        self.thread_name = name.into();
        self
    }

    /// The stack size of the runtime's threads, in bytes (default: std's).
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().thread_stack_size(4 << 20).build().unwrap();
    /// rt.block_on(async {});
    /// ```
    pub fn thread_stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Whether sysmon hands off the P of a G that blocks its thread in plain code (default
    /// `true`). Such a G (one that calls `std::thread::sleep` or a blocking read straight in
    /// its poll, instead of through [`syscall`](crate::syscall())) keeps its M; once its thread
    /// has slept in the kernel for most of two time slices, its P's queued Gs move to another M,
    /// and a line on stderr names the G's spawn location. A G that computes is never taken for
    /// a blocked one, nor is one whose thread sleeps for moments (a page fault) or waits for
    /// one of goro's own locks. With `false`, the Gs behind it wait, as on a single-threaded
    /// executor.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().handoff_blocked(false).build().unwrap();
    /// rt.block_on(async {});
    /// ```
    pub fn handoff_blocked(mut self, on: bool) -> Builder {
        self.handoff_blocked = on;
        self
    }

    /// Whether the runtime reports a deadlock (default `true`): when every G and every main
    /// future has been parked for a second with nothing able to wake them (no runnable or
    /// running G, no syscall, no timer, no I/O wait, no other runtime at work, and no thread
    /// outside goro that could hold a channel), `block_on` (and so `goro::run`) panics with a
    /// message that starts with `all goroutines are asleep - deadlock!` followed by the dump
    /// of every G, and a `#[goro::main]` program prints Go's `fatal error: ` line and exits
    /// with status 2. See the porting guide for the rule and its one blind spot.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().deadlock_detection(false).build().unwrap();
    /// rt.block_on(async {});
    /// ```
    pub fn deadlock_detection(mut self, on: bool) -> Builder {
        self.deadlock_detection = on;
        self
    }

    /// What a G's panic that no [`JoinHandle`] observes does (the G was detached, or its handle
    /// dropped unread). It is printed in either case, in Go's shape (`panic: <message>` and
    /// the G's block of the [`dump`]) rather than as Rust's `thread 'goro-m-1' panicked` line;
    /// then [`UnhandledPanic::Ignore`] (the default of `goro::run` and `Builder`) goes on, and
    /// [`UnhandledPanic::ShutdownRuntime`] ends the run with it as Go does (`block_on` resumes
    /// the panic; `#[goro::main]` and `#[goro::test]` use it).
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().unhandled_panic(goro::runtime::UnhandledPanic::Ignore).build().unwrap();
    /// rt.block_on(async {
    ///     drop(goro::go(async { panic!("printed, then ignored") }));
    /// });
    /// ```
    pub fn unhandled_panic(mut self, what: UnhandledPanic) -> Builder {
        self.unhandled_panic = what;
        self
    }

    /// For `#[goro::test]`: the process's main thread is a test harness's, which holds no
    /// channel, so it does not keep a deadlock from being reported. Not part of the stable API.
    #[doc(hidden)]
    pub fn in_test_harness(mut self) -> Builder {
        self.census = crate::checkdead::Census::ExceptMainThread;
        self
    }

    /// A function called on every thread that runs this runtime's Gs, before it runs any: each
    /// M thread the runtime starts (also those started later, to replace an M blocked in a
    /// syscall), and the thread that calls [`Runtime::block_on`] (which runs Gs while it waits),
    /// on entering `block_on`. Not on sysmon's thread, which runs no G and no user code.
    ///
    /// The use case: entering another runtime's context on every thread, so that libraries that
    /// look for it (tokio's `Handle::current()`) work inside Gs. A panic in the hook on an M
    /// thread is reported on stderr and the thread runs on without it; on the thread of
    /// `block_on` it propagates out of `block_on`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let s = started.clone();
    /// let rt = goro::runtime::Builder::new()
    ///     .max_procs(2)
    ///     .on_thread_start(move || {
    ///         s.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(async {});
    /// assert!(started.load(Ordering::SeqCst) >= 1); // at least block_on's thread
    /// ```
    pub fn on_thread_start(mut self, f: impl Fn() + Send + Sync + 'static) -> Builder {
        self.on_thread_start = Some(ThreadHook(StdArc::new(f)));
        self
    }

    /// A function called on every thread that ran this runtime's Gs, after its last: each M
    /// thread as it stops (when the runtime is dropped, which waits for it), and the thread of
    /// [`Runtime::block_on`] as it leaves `block_on` (also by a panic). Undoes what
    /// [`on_thread_start`](Builder::on_thread_start) did, on the same thread.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicIsize, Ordering};
    /// use std::sync::Arc;
    /// let live = Arc::new(AtomicIsize::new(0));
    /// let (a, b) = (live.clone(), live.clone());
    /// let rt = goro::runtime::Builder::new()
    ///     .on_thread_start(move || {
    ///         a.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .on_thread_stop(move || {
    ///         b.fetch_sub(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(async { goro::go(async {}).await.unwrap() });
    /// drop(rt); // joins the Ms: each ran its stop hook
    /// assert_eq!(live.load(Ordering::SeqCst), 0);
    /// ```
    pub fn on_thread_stop(mut self, f: impl Fn() + Send + Sync + 'static) -> Builder {
        self.on_thread_stop = Some(ThreadHook(StdArc::new(f)));
        self
    }

    /// Builds the runtime. No thread starts until there is work for one.
    ///
    /// # Errors
    /// `InvalidInput` for `max_procs(0)`, `max_threads(0)` or `thread_stack_size(0)`.
    ///
    /// ```
    /// let err = goro::runtime::Builder::new().max_procs(0).build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// assert!(err.to_string().contains("max_procs"));
    /// ```
    pub fn build(self) -> io::Result<Runtime> {
        #[cfg(loom)]
        if crate::model::active() {
            crate::model::no_runtime();
        }
        let invalid = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        let max_procs = match self.max_procs {
            Some(0) => return invalid("goro: Builder::max_procs(0): a runtime needs at least one P".into()),
            Some(n) => n,
            None => config::default_max_procs(),
        };
        if self.max_threads == 0 {
            return invalid("goro: Builder::max_threads(0): a runtime needs at least one thread".into());
        }
        if self.stack_size == Some(0) {
            return invalid("goro: Builder::thread_stack_size(0): a thread needs a stack".into());
        }
        let debug = config::debug_vars();
        let config = Config {
            max_procs,
            max_threads: self.max_threads,
            thread_name: self.thread_name,
            stack_size: self.stack_size,
            schedtrace: debug.schedtrace,
            handoff_blocked: self.handoff_blocked,
            deadlock_detection: self.deadlock_detection,
            census: self.census,
            unhandled_panic: self.unhandled_panic,
            on_thread_start: self.on_thread_start,
            on_thread_stop: self.on_thread_stop,
            bubble: self.bubble.map(|spec| StdArc::new(crate::bubble::Bubble::new(spec))),
        };
        crate::panics::install_hook();
        let shared = Shared::new(config, crate::m::mstart)?;
        crate::checkdead::register(&shared);
        Ok(Runtime { shared })
    }
}

/// A goro runtime: `max_procs` Ps, the Ms that run them, and every G spawned on it.
///
/// Several runtimes may live in one process, each with its own Ps and threads. Dropping the
/// runtime stops it: every G still alive has its future dropped (destructors run), and every
/// thread it started is joined.
///
/// ```
/// let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
/// let h = rt.spawn(async { 1 + 1 });
/// assert_eq!(rt.block_on(h).unwrap(), 2);
/// ```
pub struct Runtime {
    shared: StdArc<Shared>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("max_procs", &self.shared.allp.procs()).finish_non_exhaustive()
    }
}

impl Runtime {
    /// Runs `future` to completion on the calling thread, which becomes an M of this runtime
    /// (Go's M0) for the duration: while the future waits, the thread runs Gs like any M.
    ///
    /// The future need not be `Send` or `'static`: it never leaves this thread. A panic in it
    /// propagates out of `block_on`.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().build().unwrap();
    /// let local = String::from("borrowed");
    /// let n = rt.block_on(async { local.len() });
    /// assert_eq!(n, 8);
    /// ```
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let shared = &self.shared;
        // This thread runs Gs while it waits: `Builder::on_thread_start`/`on_thread_stop`.
        if let Some(h) = &shared.config.on_thread_start {
            (h.0)();
        }
        let _hooks = StopHook(shared);
        let m = StdArc::new(M::new());
        let main = StdArc::new(MainState::new(m.clone(), shared.netpoll.breaker(), Location::caller()));
        shared.mains.enter(main.clone());
        let ctx = MCtx::new(shared.clone(), m, Some(main.clone()));
        crate::m::enter(&ctx, || {
            let _own = crate::threads::OwnThread::enter();
            crate::sysmon::ensure_started(shared);
            if let Some(p) = shared.pidleget() {
                ctx.acquirep(p);
            }
            let _leave = LeaveBlockOn(&ctx, &main);
            let waker = Waker::from(main.clone());
            let mut cx = Context::from_waker(&waker);
            let mut future = pin!(future);
            loop {
                // The main G runs on a P like any G (Go's main goroutine does): woken while this M
                // had none, it takes one first (still counted as woken meanwhile, so `checkdead`
                // sees it runnable). Without it, everything main does would run off-P: each `go` a
                // fresh allocation pushed to the global queue instead of a recycled block in this
                // P's queue (W1 3x slower).
                if ctx.p().is_none() && main.is_notified() {
                    ctx.acquirep_for_main();
                }
                if main.take_notified() {
                    ctx.poll_start(0);
                    shared.mains.count_poll();
                    main.wait_reason.store(0, Relaxed);
                    main.polling.store(true, Relaxed);
                    crate::trace::go_start(g::raw::MAIN_FUTURE, main.location, 0);
                    let polled = future.as_mut().poll(&mut cx);
                    main.polling.store(false, Relaxed);
                    if crate::trace::is_enabled() {
                        let (stop, why) = match &polled {
                            Poll::Ready(_) => (crate::trace::Stop::Exit, ""),
                            Poll::Pending if main.is_notified() => (crate::trace::Stop::Requeue, ""),
                            Poll::Pending => (
                                crate::trace::Stop::Block,
                                crate::WaitReason::from_u8(main.wait_reason.load(Relaxed)).as_str(),
                            ),
                        };
                        crate::trace::go_stop(g::raw::MAIN_FUTURE, stop, why);
                    }
                    main.parked_at.store(shared.coarse_ms(), Relaxed);
                    ctx.poll_end();
                    crate::coop::run_poll_end();
                    ctx.check_detached(None);
                    if let Poll::Ready(out) = polled {
                        return out;
                    }
                    if main.is_notified() {
                        // The main future woke itself (yield_now): let the queued Gs run first.
                        ctx.defer_main();
                    }
                }
                match ctx.schedule() {
                    Found::Main => {}
                    Found::Shutdown => ctx.m.parker.park(),
                    Found::BubbleDeadlock(what) => {
                        let seed = shared.config.bubble.as_ref().map_or(0, |b| b.seed);
                        panic!(
                            "{what}\n\n{}\n\nGORO_SEED={seed} replays this run (goro::synctest::test_seed)",
                            crate::traceback::dump_of(shared)
                        );
                    }
                    Found::Ended => match shared.fatal.take() {
                        crate::fatal::Ending::Deadlock(report) => panic!("{report}"),
                        crate::fatal::Ending::Panic(payload) => std::panic::resume_unwind(payload),
                    },
                    Found::G(..) => unreachable!("schedule runs the Gs it finds"),
                }
            }
        })
    }

    /// Spawns a G on this runtime from any thread (inside or outside it).
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().build().unwrap();
    /// let h = std::thread::scope(|s| s.spawn(|| rt.spawn(async { 7 })).join().unwrap());
    /// assert_eq!(h.join().unwrap(), 7);
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::sysmon::ensure_started(&self.shared);
        crate::m::newproc(&self.shared, future, Location::caller())
    }

    /// The scheduler state (loom models and unit tests look inside it).
    #[cfg(any(loom, test))]
    pub(crate) fn shared(&self) -> &StdArc<Shared> {
        &self.shared
    }

    /// This runtime's counters; see [`Metrics`].
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    /// assert_eq!(rt.metrics().procs, 2);
    /// ```
    pub fn metrics(&self) -> Metrics {
        Metrics::collect(&self.shared)
    }

    /// What the bubble did so far (`None` for a runtime that is no bubble). Not part of the
    /// stable API.
    #[doc(hidden)]
    pub fn bubble_summary(&self) -> Option<crate::synctest::BubbleSummary> {
        self.shared.config.bubble.as_ref().map(|b| b.summary())
    }

    /// Whether the run ended early (see [`poll_ending`](Runtime::poll_ending)). Not part of the
    /// stable API.
    #[doc(hidden)]
    pub fn has_ended(&self) -> bool {
        self.shared.fatal.has_ended()
    }

    /// Marks G `id` as the program's main G (for the dump). Not part of the stable API.
    #[doc(hidden)]
    pub fn mark_main(&self, id: u64) {
        self.shared.mains.set_goid(id);
    }

    /// Ready with the reason once the run ended early (a deadlock, see
    /// [`Builder::deadlock_detection`]; an unhandled panic, see [`Builder::unhandled_panic`]);
    /// else `cx`'s waker is woken when it does. For the thread that waits for the runtime's
    /// main G. Not part of the stable API.
    #[doc(hidden)]
    pub fn poll_ending(&self, cx: &mut Context<'_>) -> Poll<crate::fatal::Ending> {
        self.shared.mains.set_waiting();
        match self.shared.fatal.poll(cx.waker()) {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }

    /// Every G of this runtime, as [`goroutines`] lists them.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().build().unwrap();
    /// let (tx, rx) = goro::chan::<()>(0);
    /// let h = rt.spawn(async move { rx.recv().await });
    /// while !rt.goroutines().iter().any(|g| g.wait_reason == Some(goro::runtime::WaitReason::ChanReceive)) {
    ///     std::thread::yield_now();
    /// }
    /// drop(tx);
    /// assert_eq!(h.join().unwrap(), None);
    /// ```
    pub fn goroutines(&self) -> Vec<crate::Goroutine> {
        crate::traceback::goroutines_of(&self.shared)
    }

    /// Every G of this runtime, as [`dump`] prints them.
    ///
    /// ```
    /// let rt = goro::runtime::Builder::new().build().unwrap();
    /// let h = rt.spawn(async { goro::time::sleep(std::time::Duration::from_millis(20)).await });
    /// let dump = rt.dump();
    /// assert!(dump.starts_with("goroutine "), "{dump}");
    /// h.join().unwrap();
    /// ```
    pub fn dump(&self) -> String {
        crate::traceback::dump_of(&self.shared)
    }

    fn shutdown(&mut self) {
        let sh = &*self.shared;
        let on_own_m = crate::m::current(|c| c.is_some_and(|c| std::ptr::eq(&*c.shared, sh) && !c.is_main()));
        if on_own_m {
            // Joining our own thread would deadlock. Ms still stop; Gs are left to their refs.
            sh.begin_shutdown();
            // No M starts from now on; those running stop at their next look at the flag
            // (their handles are dropped: this thread cannot join itself).
            drop(sh.threads.close());
            config::warn_once("goro: a Runtime was dropped on one of its own threads; its Gs are not dropped");
            sh.netpoll.shutdown(); // sockets of this runtime now fail instead of waiting forever
            return;
        }
        sh.begin_shutdown();
        // No M starts from now on (`newm` gives its P back); those running stop at their next
        // look at the flag, and are joined below.
        let threads = sh.threads.close();
        // Pairs with the fence in `runqput` after a push to the global queue: a waker that
        // pushes after our final drain sees the flag and drains itself.
        crate::loom::fence(SeqCst);
        {
            let idle = sh.idle.lock();
            for m in idle.sleeping_ms() {
                m.parker.unpark();
            }
        }
        sh.netpoll.wake();
        for t in threads {
            let _ = t.join();
        }
        crate::sysmon::stop(sh);
        // Nothing polls the netpoller any more: an operation on one of its sockets (kept out
        // of the runtime, or in a G destructor below) fails now instead of waiting forever.
        sh.netpoll.shutdown();
        // No M runs now. Drop every G still alive, inside the runtime's context (with no P) so
        // that destructors which spawn or wake find a runtime that refuses politely.
        let ctx = MCtx::new(self.shared.clone(), StdArc::new(M::new()), None);
        crate::m::enter(&ctx, || {
            // Finished Gs leave the list first, so the drain meets only live ones.
            sh.flush_all_dead();
            // SAFETY: no M runs, and each G handed to us comes with the list's reference.
            sh.allgs.close_and_drain(|g| unsafe { g::shutdown(g) });
            // Given only the Gs drained from the run queues below (the Ps' rings, the global
            // queue, a bubble's run set), each with the queue's reference, ours now.
            let mut release = |g| {
                // SAFETY: see above: a queued G comes with its queue's reference, and the
                // queue it came from no longer has it.
                unsafe { g::drop_ref(g) }
            };
            for p in sh.allp.iter() {
                // No M runs: every core is back in its P.
                if let Some(mut core) = p.try_take_core() {
                    core.runq.drain(&mut release);
                    core.gfree.free_all();
                    p.put_core(core);
                }
            }
            sh.global.drain(&mut release);
            if let Some(b) = &sh.config.bubble {
                b.drain(&mut release);
            }
            for p in sh.allp.iter() {
                // Pending timers hold the runtime (through their actions' Gs and channels).
                p.timers.clear();
            }
        });
        sh.gfree.free_all();
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Leaving `block_on` (also by panic): `Builder::on_thread_stop` on this thread, last.
struct StopHook<'a>(&'a Shared);

impl Drop for StopHook<'_> {
    fn drop(&mut self) {
        if let Some(h) = &self.0.config.on_thread_stop {
            if std::thread::panicking() {
                // A second panic while unwinding would abort: report it instead.
                h.call_on_m("on_thread_stop");
            } else {
                (h.0)();
            }
        }
    }
}

/// Leaving `block_on` (also by panic): give the P up and stop counting the main G.
struct LeaveBlockOn<'a>(&'a MCtx, &'a StdArc<MainState>);

impl Drop for LeaveBlockOn<'_> {
    fn drop(&mut self) {
        // The main future's last poll may have unwound past `run_poll_end` and its flag.
        crate::coop::run_poll_end();
        // A synctest bubble's preemption count must not follow this thread out of it.
        crate::coop::set_budget(0);
        self.1.polling.store(false, Relaxed);
        if let Some(p) = self.0.releasep() {
            self.0.shared.handoffp(p);
        }
        self.0.shared.mains.leave(self.1);
    }
}

/// Runs `future` as the main G of a new runtime, and returns its output (Go's `func main`).
///
/// The calling thread becomes M0. When the future returns, every G still alive is dropped
/// (their destructors run) and the runtime's threads stop, as a Go program exits when `main`
/// returns. `max_procs` comes from `GORO_MAXPROCS`, else the number of CPUs; use [`Builder`]
/// for anything else.
///
/// ```
/// let answer = goro::run(async {
///     let h = goro::go(async { 21 * 2 });
///     h.await.unwrap()
/// });
/// assert_eq!(answer, 42);
/// ```
///
/// # Panics
/// If the runtime cannot be built (the OS refuses a thread), or if `future` panics. Inside a
/// goro runtime (in a G, or in the main future of `run`): Go has nothing like a `main` inside a
/// goroutine, and this would build a second runtime and block the G's thread until the future
/// ended. Await the future there instead; a second runtime on purpose is
/// `Builder::new().build()?.block_on(fut)`.
#[track_caller]
pub fn run<F: Future>(future: F) -> F::Output {
    if crate::m::current(|ctx| ctx.is_some()) {
        panic!(
            "goro::run called inside a goroutine (at {}): it would start a second runtime and block this G's \
             thread until the future ends. Await the future instead (or start it with goro::go); for a second \
             runtime on purpose, use goro::runtime::Builder::new().build() and Runtime::block_on",
            Location::caller()
        );
    }
    let rt = Builder::new().build().unwrap_or_else(|e| panic!("goro::run: cannot build the runtime: {e}"));
    rt.block_on(future)
}

/// Starts a G running `future`: Go's `go` statement.
///
/// The G starts soon, on the current P if possible. The [`JoinHandle`] gives its result; drop
/// it to detach the G, as in Go. A panic in the G is caught and returned through the handle
/// (it never takes the runtime down).
///
/// ```
/// goro::run(async {
///     let handles: Vec<_> = (0..10).map(|i| goro::go(async move { i * i })).collect();
///     let mut sum = 0;
///     for h in handles {
///         sum += h.await.unwrap();
///     }
///     assert_eq!(sum, 285);
/// });
/// ```
///
/// # Panics
/// When called outside a goro runtime (no `goro::run`, `#[goro::main]` or `block_on` on this
/// thread); use [`Runtime::spawn`] from other threads.
#[track_caller]
pub fn go<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let location = Location::caller();
    crate::m::current(|ctx| {
        match ctx {
        Some(ctx) => ctx.spawn(future, location),
        #[cfg(loom)]
        None if crate::model::active() => crate::model::go(future, location),
        None => panic!(
            "goro::go called outside a goro runtime (at {location}): start one with goro::run(async {{ .. }}) or #[goro::main], or use Runtime::spawn from a plain thread"
        ),
    }
    })
}

/// `go!{ body }` is `go(async move { body })`: the closest Rust gets to Go's `go func() { .. }()`.
/// Given an `async` block, it spawns that block, as `go` would: `go!(async move { .. })` and
/// `go!(async { .. })` are both `go(async move { .. })` (`move` is implied by `go!`, as for a
/// plain body; a G must own what it uses).
///
/// ```
/// goro::run(async {
///     let (a, b) = (2, 3);
///     let h = goro::go! { a * b };
///     assert_eq!(h.await.unwrap(), 6);
///     let h = goro::go!(async move { a + b });
///     assert_eq!(h.await.unwrap(), 5);
/// });
/// ```
#[macro_export]
macro_rules! go {
    (async move $body:block) => {
        $crate::go(async move $body)
    };
    (async $body:block) => {
        $crate::go(async move $body)
    };
    ($($body:tt)*) => {
        $crate::go(async move { $($body)* })
    };
}

/// The number of Ps of the current runtime (Go's `runtime.GOMAXPROCS(0)`); outside any
/// runtime, the number a new one would get.
///
/// ```
/// let rt = goro::runtime::Builder::new().max_procs(3).build().unwrap();
/// assert_eq!(rt.block_on(async { goro::runtime::max_procs() }), 3);
/// ```
pub fn max_procs() -> usize {
    crate::m::current(|ctx| ctx.map(|c| c.shared.allp.procs())).unwrap_or_else(config::default_max_procs)
}

/// The number of live Gs in the current runtime, main included (Go's
/// `runtime.NumGoroutine()`); `0` outside any runtime.
///
/// ```
/// goro::run(async {
///     assert_eq!(goro::runtime::num_goroutine(), 1); // main
/// });
/// ```
pub fn num_goroutine() -> usize {
    #[cfg(loom)]
    if let Some(n) = crate::model::num_goroutine() {
        return n;
    }
    crate::m::current(|ctx| ctx.map_or(0, |c| c.shared.num_goroutine()))
}

/// The counters of the current runtime (Go's `runtime/metrics`).
///
/// ```
/// goro::run(async {
///     goro::go(async {}).await.unwrap();
///     let m = goro::runtime::metrics();
///     assert!(m.spawned >= 1);
/// });
/// ```
///
/// # Panics
/// Outside a goro runtime; use [`Runtime::metrics`] there.
pub fn metrics() -> Metrics {
    crate::m::current(|ctx| match ctx {
        Some(c) => Metrics::collect(&c.shared),
        None => panic!("goro::runtime::metrics called outside a goro runtime; use Runtime::metrics"),
    })
}

/// Every G of the current runtime (Go's goroutine profile): its id, status, wait reason and
/// how long it has waited, where it was spawned and by which G. The main future of
/// [`Runtime::block_on`] comes first, as id 0.
///
/// ```
/// goro::run(async {
///     let (tx, rx) = goro::chan::<u32>(0);
///     let h = goro::go(async move { rx.recv().await });
///     goro::runtime::yield_now().await; // let it park
///     let gs = goro::runtime::goroutines();
///     let g = gs.iter().find(|g| g.id == h.id()).unwrap();
///     assert_eq!(g.wait_reason, Some(goro::runtime::WaitReason::ChanReceive));
///     assert_eq!(g.status, goro::runtime::GoroutineStatus::Waiting);
///     tx.send(1).await.unwrap();
///     assert_eq!(h.await.unwrap(), Some(1));
/// });
/// ```
///
/// # Panics
/// Outside a goro runtime; use [`Runtime::goroutines`] there.
pub fn goroutines() -> Vec<crate::Goroutine> {
    #[cfg(loom)]
    if let Some(gs) = crate::model::goroutines() {
        return gs;
    }
    crate::m::current(|ctx| match ctx {
        Some(c) => crate::traceback::goroutines_of(&c.shared),
        None => panic!("goro::runtime::goroutines called outside a goro runtime; use Runtime::goroutines"),
    })
}

/// Every G of the current runtime in Go's shape (`runtime.Stack(buf, true)`), one block per G:
///
/// ```text
/// goroutine 7 [chan receive, 2 minutes]:
/// created by goroutine 1 at src/main.rs:14:9
/// ```
///
/// The bracket says what it does (`running`, `runnable`, `syscall`) or what it waits on (Go's
/// words: `chan receive`, `select`, `sync.WaitGroup.Wait`, ...; `future` for a future that is
/// not goro's), and from a minute on, for how long. A goro G has no stack to print; where it
/// was spawned, and by which G, stands in for it.
///
/// ```
/// goro::run(async {
///     let (_tx, rx) = goro::chan::<u32>(0);
///     let h = goro::go(async move { rx.recv().await });
///     let parked = format!("goroutine {} [chan receive]:", h.id());
///     let mut dump = goro::runtime::dump();
///     // Until it parks: another P may be running it meanwhile (`[running]`).
///     for _ in 0..10_000 {
///         if dump.contains(&parked) {
///             break;
///         }
///         goro::runtime::yield_now().await;
///         dump = goro::runtime::dump();
///     }
///     assert!(dump.contains(&parked), "{dump}");
///     h.abort();
/// });
/// ```
///
/// # Panics
/// Outside a goro runtime; use [`Runtime::dump`] there.
pub fn dump() -> String {
    #[cfg(loom)]
    if let Some(d) = crate::model::dump() {
        return d;
    }
    crate::m::current(|ctx| match ctx {
        Some(c) => crate::traceback::dump_of(&c.shared),
        None => panic!("goro::runtime::dump called outside a goro runtime; use Runtime::dump"),
    })
}

/// Records why the current G is about to wait (Go's `gopark` reason), which
/// [`dump`](crate::dump()) and [`goroutines`](crate::goroutines()) show. goro's channels, locks,
/// timers and sockets call it every time they return `Pending`; the runtime clears it when the
/// G's next poll starts, so the primitive of another crate that parks a G may call it too
/// (otherwise the G shows as waiting on a `future`). Outside a G it does nothing.
///
/// ```
/// goro::run(async {
///     goro::go(async { goro::runtime::set_wait_reason(goro::runtime::WaitReason::ChanReceive) }).await.unwrap();
/// });
/// ```
pub fn set_wait_reason(reason: crate::g::WaitReason) {
    #[cfg(loom)]
    if crate::model::set_wait_reason(reason) {
        return;
    }
    crate::m::current(|ctx| {
        if let Some(ctx) = ctx {
            ctx.with_wait_reason(|slot| slot.store(reason as u8, Relaxed));
        }
    })
}

/// The index (`0..max_procs()`) of the P the calling thread holds while it runs Gs, or `None`
/// off goro (a plain thread, another executor, or an M between Gs).
///
/// For per-P caches such as `goro::sync::Pool`'s (Go's `runtime_procPin`): while a G runs
/// synchronous code its M keeps its P, so data indexed by this value is touched by one thread at
/// a time in the common case. It is a hint, not a lock: a blocking call may hand the P to another
/// M (Go's hand-off), so per-P data still needs its own (uncontended) synchronization.
///
/// ```
/// assert_eq!(goro_runtime::__private::current_proc_index(), None);
/// goro::run(async {
///     assert!(goro_runtime::__private::current_proc_index().unwrap() < goro::runtime::max_procs());
/// });
/// ```
pub fn current_proc_index() -> Option<usize> {
    crate::m::current(|ctx| ctx.and_then(|c| c.p()))
}

/// Whether a lock that finds its lock word held should spin before it parks the G: Go's
/// `sync_runtime_canSpin` without its count of rounds (and without the CPU count, which the
/// caller knows). Spinning can help only if another P is running, not just looking for work (the
/// holder may be running there), and it is worth it only while the calling G's P has nothing
/// else to run: its local run queue, `runnext` included, is empty, and, on the thread of a
/// `block_on`, its main future has not been woken (Go would have put main in `runnext`). `true`
/// off goro (a plain thread, another executor) and for an M without a P, which holds no P that
/// could run others.
///
/// ```
/// assert!(goro_runtime::__private::can_spin()); // a plain thread
/// let rt = goro::runtime::Builder::new().max_procs(1).build().unwrap();
/// assert!(!rt.block_on(async { goro_runtime::__private::can_spin() })); // nobody else runs the holder
/// ```
pub fn can_spin() -> bool {
    crate::m::current(|ctx| {
        let Some(c) = ctx else { return true };
        let Some(p) = c.p() else { return true };
        let sh = &*c.shared;
        sh.allp.procs() > sh.idle.npidle() + sh.idle.nmspinning() + 1 && sh.allp[p].runq.is_empty() && !c.main_pending()
    })
}

/// Awaiting a G: a yield point, then the join, parked with Go's wait reason. (The join's
/// protocol is `g`'s; the wait reason and the yield point are the scheduler's.)
impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A yield point, even for a G that has finished (a loop joining finished Gs must still
        // let others run once sysmon asks); nothing is taken before it.
        std::task::ready!(crate::coop::poll_proceed(cx));
        let polled = self.as_mut().poll_join(cx);
        if polled.is_pending() {
            crate::synctest::set_wait_reason_of(crate::WaitReason::Join, self.bubble_tag());
        }
        polled
    }
}
