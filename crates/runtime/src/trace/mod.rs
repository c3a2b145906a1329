//! Go's `runtime/trace`: an execution trace of what the goroutines did, written as Chrome's
//! trace-event JSON (`{"traceEvents": [...]}`), which Perfetto (ui.perfetto.dev) and
//! chrome://tracing open as they are; and Go 1.25's flight recorder, which keeps the last
//! seconds of that trace in memory to write out when something went wrong.
//!
//! | Go | goro |
//! |----|------|
//! | `trace.Start(w)` / `trace.Stop()` | [`start`] / [`stop`] |
//! | `trace.IsEnabled()` | [`is_enabled`] |
//! | `trace.StartRegion(ctx, name)`, `trace.WithRegion` | [`region`] (a guard: the region ends when it drops) |
//! | `trace.Log(ctx, category, message)` | [`log`] |
//! | `trace.NewTask(ctx, name)`, `task.End()` | [`new_task`], [`Task::end`] |
//! | `trace.NewFlightRecorder(cfg)` | [`FlightRecorder::new`] with [`FlightRecorderConfig`] |
//!
//! # What the trace shows
//!
//! A track per P, with a slice for every poll of a G on it, named by the G's id and spawn site
//! (`G7 src/main.rs:12`); where a poll ends with the G waiting, an instant event
//! `block: <reason>` with Go's wait reason (`chan receive`, `sync.Mutex.Lock`, `select`...);
//! a flow arrow from the G (or thread) that made a G runnable to that G's next poll, and from a
//! `go` to the new G's first poll; a track per thread for what happens off any P (a G in
//! `goro::syscall`); instants for steals, P hand-offs and timers run; and the user's regions
//! (async slices per G), logs and tasks.
//!
//! # How it is written
//!
//! Each thread appends its events to a buffer of its own (no lock and no allocation per event;
//! a 64 KiB buffer at a time), and a full buffer goes to a thread of goro's, `goro-trace`,
//! which writes the JSON: the G that caused an event never formats or writes anything. While
//! no trace runs, each event site costs one relaxed load. The buffers are per thread, not per
//! P, as in Go 1.22's tracer: a P's events are all written by the M that holds it, and a
//! thread's buffer needs no hand-over when its P changes hands, nor a P at all (a syscall's
//! events, a wake-up from a thread that holds no P).
//!
//! Unlike Go's `trace.Start`, a trace and a flight recorder do not run at the same time here:
//! [`start`] fails while a [`FlightRecorder`] runs, and the other way round.

pub(crate) mod buf;
mod clock;
mod control;
mod event;
mod json;
mod recorder;
mod window;

pub use control::{start, stop};
pub(crate) use recorder::dump_for_report;
pub use recorder::FlightRecorder;
pub use window::FlightRecorderConfig;

pub(crate) use event::{Stop, NO_G};

use buf::Slot;
use control::{tracer, ON};
use event::{Kind, NO_P};
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Go's `trace.IsEnabled`: whether events are being recorded (a trace or a flight recorder
/// runs), for code that would compute something only to [`log`] it.
#[inline]
pub fn is_enabled() -> bool {
    ON.load(Relaxed)
}

/// Go's `trace.StartRegion`: a region of the calling G's time, named `name`, shown in the
/// trace from now until the guard drops (Go's `Region.End`). Regions nest; one may span
/// `.await`s (it is the G's, not the thread's).
///
/// ```
/// # goro::run(async {
/// let _r = goro::trace::region("parse request");
/// goro::time::sleep(std::time::Duration::from_millis(1)).await;
/// # });
/// ```
#[must_use = "the region ends when the guard drops"]
pub fn region(name: &str) -> Region {
    region_in(name, 0)
}

/// A region of task `task` (0: none).
fn region_in(name: &str, task: u64) -> Region {
    if !is_enabled() {
        return Region { id: 0, goid: NO_G, task, name: String::new() };
    }
    static IDS: AtomicU64 = AtomicU64::new(1);
    let id = IDS.fetch_add(1, Relaxed);
    let goid = CUR_GOID.with(Cell::get);
    emit(Kind::RegionBegin, goid, id, task, name, "");
    // The end names the region too: viewers pair an async slice's ends by id and name.
    Region { id, goid, task, name: name.to_owned() }
}

/// A region of a G's time (see [`region`]); it ends when dropped.
#[derive(Debug)]
pub struct Region {
    id: u64,
    goid: u64,
    task: u64,
    name: String,
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.id != 0 && is_enabled() {
            emit(Kind::RegionEnd, self.goid, self.id, self.task, &self.name, "");
        }
    }
}

/// Go's `trace.Log`: a message in the trace, on the calling G's P, under `category`.
pub fn log(category: &str, message: &str) {
    if is_enabled() {
        emit(Kind::Log, CUR_GOID.with(Cell::get), 0, 0, category, message);
    }
}

/// Go's `trace.NewTask`: a task named `name`, shown from now until [`Task::end`] (or its drop),
/// across whatever Gs work on it. [`Task::log`] and [`Task::region`] attach work to it.
pub fn new_task(name: &str) -> Task {
    static IDS: AtomicU64 = AtomicU64::new(1);
    let id = IDS.fetch_add(1, Relaxed);
    if is_enabled() {
        emit(Kind::TaskBegin, id, CUR_GOID.with(Cell::get), 0, name, "");
    }
    Task { id, name: name.to_owned(), ended: false }
}

/// A task of the trace (see [`new_task`]).
#[derive(Debug)]
pub struct Task {
    id: u64,
    name: String,
    ended: bool,
}

impl Task {
    /// The task's id (Go's task ids are not exposed; this one names it in the trace's events).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Go's `task.End`.
    pub fn end(mut self) {
        self.finish();
    }

    /// Go's `trace.StartRegion` with the task's context: a [`region`] of the calling G,
    /// attributed to this task.
    #[must_use = "the region ends when the guard drops"]
    pub fn region(&self, name: &str) -> Region {
        region_in(name, self.id)
    }

    /// A message in the trace under `category`, attributed to this task.
    pub fn log(&self, category: &str, message: &str) {
        if is_enabled() {
            emit(Kind::Log, CUR_GOID.with(Cell::get), self.id, 0, category, message);
        }
    }

    fn finish(&mut self) {
        if !self.ended {
            self.ended = true;
            if is_enabled() {
                emit(Kind::TaskEnd, self.id, CUR_GOID.with(Cell::get), 0, &self.name, "");
            }
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.finish();
    }
}

// ---- the runtime's event sites ----------------------------------------------------------

thread_local! {
    /// This thread's slot, once it has written an event.
    static SLOT: RefCell<Option<Arc<Slot>>> = const { RefCell::new(None) };
    /// The G this thread polls (0: the main future of `block_on`; [`NO_G`]: none), kept by
    /// `go_start`/`go_stop`.
    static CUR_GOID: Cell<u64> = const { Cell::new(NO_G) };
}

/// `go` made G `goid` (spawned at `at`) in G `parent`.
#[inline]
pub(crate) fn go_create(goid: u64, parent: u64, at: &'static Location<'static>) {
    if is_enabled() {
        emit(Kind::GoCreate, goid, parent, at as *const Location<'static> as u64, "", "");
    }
}

/// A poll of G `goid` begins; `flow`: the id of the wake-up that made it runnable, if any.
#[inline]
pub(crate) fn go_start(goid: u64, at: &'static Location<'static>, flow: u64) {
    if is_enabled() {
        CUR_GOID.with(|c| c.set(goid));
        emit(Kind::GoStart, goid, at as *const Location<'static> as u64, flow, "", "");
    }
}

/// The poll of G `goid` ended (`reason`: Go's words for its wait, if it blocks).
#[inline]
pub(crate) fn go_stop(goid: u64, stop: Stop, reason: &str) {
    if is_enabled() {
        CUR_GOID.with(|c| c.set(NO_G));
        emit(Kind::GoStop, goid, stop as u64, 0, reason, "");
    }
}

/// G `goid` was made runnable by whatever this thread polls; its next start carries `flow`.
#[inline]
pub(crate) fn go_unblock(goid: u64, flow: u64) {
    if is_enabled() {
        emit(Kind::GoUnblock, goid, CUR_GOID.with(Cell::get), flow, "", "");
    }
}

/// The G this thread polls enters (`true`) or leaves a syscall.
#[inline]
pub(crate) fn syscall(enter: bool) {
    if is_enabled() {
        let kind = if enter { Kind::SyscallEnter } else { Kind::SyscallExit };
        emit(kind, CUR_GOID.with(Cell::get), 0, 0, "", "");
    }
}

/// This M stole `n` Gs from P `victim`.
#[inline]
pub(crate) fn steal(victim: usize, n: usize) {
    if is_enabled() {
        emit(Kind::Steal, victim as u64, n as u64, 0, "", "");
    }
}

/// P `p` was handed to another M.
#[inline]
pub(crate) fn handoff(p: usize) {
    if is_enabled() {
        emit(Kind::Handoff, p as u64, 0, 0, "", "");
    }
}

/// This M ran `n` expired timers of its P.
#[inline]
pub(crate) fn timers(n: usize) {
    if is_enabled() && n > 0 {
        emit(Kind::Timers, n as u64, 0, 0, "", "");
    }
}

/// Records one event on this thread's buffer.
#[cold]
#[inline(never)]
fn emit(kind: Kind, a: u64, b: u64, c: u64, s1: &str, s2: &str) {
    if cfg!(loom) {
        return;
    }
    let t = tracer();
    // The P from the record its M publishes (`current`): nothing to keep here.
    let p = crate::current::held_p().map_or(NO_P, |p| p as u16);
    let ts = clock::now();
    // `try_with`: a thread that is exiting (its slot already dropped) records nothing more.
    let _ = SLOT.try_with(|s| {
        // Borrowed, not cloned: a count per event would be two more atomic operations. Nothing
        // in `write` records an event, so the borrow cannot be asked for again meanwhile.
        let mut s = s.borrow_mut();
        let slot = s.get_or_insert_with(|| t.register());
        t.write(slot, event::size(s1, s2), |out| event::encode(out, kind, p, ts, a, b, c, s1, s2));
    });
}
