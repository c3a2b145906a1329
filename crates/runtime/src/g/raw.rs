//! The G object: a header every part of the runtime understands, followed by the future.
//!
//! One allocation per G, laid out as `#[repr(C)] Cell<F> { header: Header, stage: Stage<F> }`,
//! so a `NonNull<Header>` (what run queues, wakers and `JoinHandle`s hold) can be turned back
//! into the typed cell by the functions of the G's [`Vtable`], which are the only generic code.
//! The block comes from the current P's free list when a block of the right size class is there
//! (see [`gfree`]); that is Go's `gfget`, and freeing is `gfput`.

use super::error::JoinError;
use super::gfree::{self, Block, GlobalFree};
use super::state::State;
use crate::loom::{AtomicU16, AtomicU32, AtomicU8, Ordering, UnsafeCell};
use std::alloc::Layout;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Waker};

/// The bit of a wait-reason byte that says the primitive waited on belongs to no synctest bubble
/// of the waiter's, so that its wait is never durable (see `synctest::set_wait_reason_of`).
pub(crate) const EXTERNAL: u8 = 0x80;

/// Why a G is waiting (Go's `waitReason`), as [`dump`](crate::dump) and
/// [`goroutines`](crate::goroutines) show it. Every goro primitive that parks a G sets it
/// whenever it returns `Pending` ([`set_wait_reason`](crate::set_wait_reason)); the runtime
/// clears it when the G's next poll starts, so a G parked on some other crate's future shows
/// [`Future`](WaitReason::Future), never a stale reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum WaitReason {
    /// Nobody said why: a G parked on a future that is not goro's (`future`).
    Future = 0,
    /// `chan receive`.
    ChanReceive,
    /// `chan send`.
    ChanSend,
    /// `select`.
    Select,
    /// `sync.Mutex.Lock`.
    SyncMutexLock,
    /// `sync.WaitGroup.Wait`.
    SyncWaitGroupWait,
    /// `sleep`.
    Sleep,
    /// `IO wait`.
    IoWait,
    /// `syscall` (inside [`syscall`](crate::syscall()), or a `*_blocking` call in a G).
    Syscall,
    /// `sync.RWMutex.RLock`.
    SyncRwMutexRLock,
    /// `sync.RWMutex.Lock`.
    SyncRwMutexLock,
    /// `semacquire` (a weighted semaphore, `sync.Once` waiting for the first call).
    SemAcquire,
    /// `select (no cases)`: Go's `select {}`, a `select!` with no case at all.
    SelectNoCases,
    /// `chan receive (nil chan)`: a receive case on `None` alone.
    ChanReceiveNilChan,
    /// `chan send (nil chan)`: a send case on `None` alone.
    ChanSendNilChan,
    /// `sync.Cond.Wait`.
    SyncCondWait,
    /// `goroutine join`: awaiting a [`JoinHandle`](crate::JoinHandle) (Go has no such thing;
    /// named for what it is).
    Join,
    /// In `goro::synctest::wait`, or the root of a bubble waiting for its Gs to exit
    /// (`synctest.Wait`).
    SynctestWait,
    /// `future (bubble)`: a future that is not goro's, which only the bubble's own Gs,
    /// timers and pipes wake (said so with `goro::synctest::durable`): in a bubble, a G
    /// parked on it is durably blocked.
    BubbleFuture,
}

impl WaitReason {
    const ALL: [WaitReason; 19] = [
        WaitReason::Future,
        WaitReason::ChanReceive,
        WaitReason::ChanSend,
        WaitReason::Select,
        WaitReason::SyncMutexLock,
        WaitReason::SyncWaitGroupWait,
        WaitReason::Sleep,
        WaitReason::IoWait,
        WaitReason::Syscall,
        WaitReason::SyncRwMutexRLock,
        WaitReason::SyncRwMutexLock,
        WaitReason::SemAcquire,
        WaitReason::SelectNoCases,
        WaitReason::ChanReceiveNilChan,
        WaitReason::ChanSendNilChan,
        WaitReason::SyncCondWait,
        WaitReason::Join,
        WaitReason::SynctestWait,
        WaitReason::BubbleFuture,
    ];

    /// Go's text for the reason, as `runtime.Stack` prints it.
    ///
    /// ```
    /// assert_eq!(goro::runtime::WaitReason::ChanReceive.as_str(), "chan receive");
    /// assert_eq!(goro::runtime::WaitReason::Future.as_str(), "future");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::Future => "future",
            WaitReason::ChanReceive => "chan receive",
            WaitReason::ChanSend => "chan send",
            WaitReason::Select => "select",
            WaitReason::SyncMutexLock => "sync.Mutex.Lock",
            WaitReason::SyncWaitGroupWait => "sync.WaitGroup.Wait",
            WaitReason::Sleep => "sleep",
            WaitReason::IoWait => "IO wait",
            WaitReason::Syscall => "syscall",
            WaitReason::SyncRwMutexRLock => "sync.RWMutex.RLock",
            WaitReason::SyncRwMutexLock => "sync.RWMutex.Lock",
            WaitReason::SemAcquire => "semacquire",
            WaitReason::SelectNoCases => "select (no cases)",
            WaitReason::ChanReceiveNilChan => "chan receive (nil chan)",
            WaitReason::ChanSendNilChan => "chan send (nil chan)",
            WaitReason::SyncCondWait => "sync.Cond.Wait",
            WaitReason::Join => "goroutine join",
            WaitReason::SynctestWait => "synctest.Wait",
            WaitReason::BubbleFuture => "future (bubble)",
        }
    }

    /// The reason in a wait-reason byte (without the bubble's `EXTERNAL` bit).
    pub(crate) fn from_u8(v: u8) -> WaitReason {
        WaitReason::ALL.get(usize::from(v & !EXTERNAL)).copied().unwrap_or(WaitReason::Future)
    }
}

impl std::fmt::Display for WaitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The typed operations of one G, reached through its header.
pub(crate) struct Vtable {
    /// Polls the future with the G's own waker (see `waker::borrowed_waker`); on `Ready` (or a
    /// panic) the output is stored and `true` returned.
    pub(crate) poll: unsafe fn(NonNull<Header>, &Waker) -> bool,
    /// Drops the future and stores `JoinError::Cancelled`.
    pub(crate) cancel: unsafe fn(NonNull<Header>),
    /// Drops a stored output nobody will read.
    pub(crate) drop_output: unsafe fn(NonNull<Header>),
    /// Moves the output into `*dst`, a `*mut Option<Result<T, JoinError>>`.
    pub(crate) read_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Drops the cell in place and frees (or recycles) its memory.
    pub(crate) dealloc: unsafe fn(NonNull<Header>),
    /// `Schedule::ready` on the G's scheduler (instantiated for its type: the wake path makes
    /// no `dyn` call).
    schedule: unsafe fn(NonNull<Header>),
    /// The G's scheduler, from the type-erased pointer in its header.
    scheduler: fn(*const ()) -> *const dyn Schedule,
}

/// The part of a G that does not depend on its future's type.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) state: State,
    pub(crate) vtable: &'static Vtable,
    /// The scheduler the G belongs to (an `Arc<S>` of the `S: Schedule` it was allocated for,
    /// type-erased; the vtable knows `S`): one strong count, released when the G is freed.
    sched: *const (),
    /// Links in the all-Gs list (`allgs`), guarded by that list's shard lock.
    pub(crate) all_prev: UnsafeCell<Option<NonNull<Header>>>,
    pub(crate) all_next: UnsafeCell<Option<NonNull<Header>>>,
    /// Go's `goid`.
    pub(crate) goid: u64,
    /// Where `go` was called (Go's `gopc`).
    pub(crate) location: &'static Location<'static>,
    /// The join waker slot; see the ownership rule in [`state`](super::state).
    pub(crate) join_waker: UnsafeCell<Option<Waker>>,
    /// Why the G waits: set by the primitive that parks it, cleared when a poll starts (see
    /// [`WaitReason`]).
    pub(crate) wait_reason: AtomicU8,
    /// The free-list size class of the block, or `u8::MAX` for a G allocated on its own.
    class: u8,
    /// The execution trace's flow into this G's next poll (in what was padding): the count of
    /// its last wake-up in the low 15 bits, and `FLOW_PENDING` while that wake-up's poll has
    /// not begun; `FLOW_CREATED` until its first poll (see [`Header::trace_unblocked`]). Only
    /// touched while a trace runs.
    trace_flow: AtomicU16,
    /// When the G last parked, on the runtime's coarse clock (`Shared::coarse_ms`): written
    /// only when a poll ends with the G waiting, read by the dump.
    pub(crate) parked_at: AtomicU32,
    /// The goid of the G that spawned this one: [`MAIN_FUTURE`] for the main future of
    /// `block_on`, [`NO_PARENT`] when spawned from outside any G.
    pub(crate) parent: u64,
}

// SAFETY: every mutable field of the header is either atomic or guarded as documented on it
// (list links by the shard lock; the join waker by the JOIN_WAKER protocol).
unsafe impl Send for Header {}
// SAFETY: as above.
unsafe impl Sync for Header {}

enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

#[repr(C)]
struct Cell<F: Future> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
}

/// The memory of a G running `F`: its cell, starting on a cache line of its own
/// ([`gfree::ALIGN`]: a G that shared a line with its neighbour slowed both down). Pooled Gs
/// get that from `gfree::alloc_block`; a G too big for a class asks the allocator for the
/// alignment itself (its aligned path is slower, but such Gs are rare and each costs a copy of
/// its big future anyway).
fn cell_layout<F: Future>() -> Layout {
    Layout::new::<Cell<F>>().align_to(gfree::ALIGN).expect("a G's cell fits in memory")
}

/// Which G, for messages: its goid and where it was spawned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Who {
    pub(crate) goid: u64,
    pub(crate) location: &'static Location<'static>,
}

/// `Header::trace_flow`: a wake-up's poll has not begun yet (the flag over the count).
const FLOW_PENDING: u16 = 0x8000;
/// `Header::trace_flow`: the count's bits; its largest value stands for the creation.
const FLOW_COUNT: u16 = 0x7fff;
/// `Header::trace_flow`: created, not polled yet (the flow from its `go`).
const FLOW_CREATED: u16 = FLOW_PENDING | FLOW_COUNT;

/// The count of the wake-up after the one `flow` (a `Header::trace_flow` word) records:
/// 1 ..= 0x7ffe, round and round. Never `FLOW_COUNT`: over `FLOW_PENDING` that is
/// `FLOW_CREATED`, and the poll would report the G's creation instead of the wake-up.
fn next_flow_count(flow: u16) -> u16 {
    (flow & FLOW_COUNT) % (FLOW_COUNT - 1) + 1
}

impl Header {
    /// A trace's note that this G was made runnable: the flow id its next poll carries (its
    /// goid and the wake-up's count, 1 ..= 0x7ffe, never 0, the creation's). The count is kept
    /// when the poll takes the flow, so that each wake-up of a G has an id of its own (32 766
    /// in a row): restarted there, it would give all of a G's wake-ups one id, and a viewer
    /// would draw every arrow of the G from its last wake-up.
    pub(crate) fn trace_unblocked(&self) -> u64 {
        let n = next_flow_count(self.trace_flow.load(Ordering::Relaxed));
        self.trace_flow.store(FLOW_PENDING | n, Ordering::Relaxed);
        self.goid << 16 | u64::from(n)
    }

    /// A trace's look at the flow into the poll that begins: the id of the wake-up (or
    /// creation) that made the G runnable, 0 if none is pending. Written before the G was
    /// queued (`trace_unblocked`), read by the M that dequeued it: the queue orders the two.
    pub(crate) fn trace_take_flow(&self) -> u64 {
        match self.trace_flow.fetch_and(!FLOW_PENDING, Ordering::Relaxed) {
            FLOW_CREATED => self.goid << 16,
            n if n & FLOW_PENDING != 0 => self.goid << 16 | u64::from(n & FLOW_COUNT),
            _ => 0,
        }
    }

    #[inline]
    pub(crate) fn who(&self) -> Who {
        Who { goid: self.goid, location: self.location }
    }

    /// The scheduler of this G.
    pub(crate) fn scheduler(&self) -> &dyn Schedule {
        // SAFETY: `sched` is the `Arc<S>` that `allocate` stored with this vtable, whose
        // `scheduler` is instantiated for that `S`; the G holds a strong count on it until it is
        // freed, and `&self` proves it has not been freed.
        unsafe { &*(self.vtable.scheduler)(self.sched) }
    }

    /// `goready` on the G's scheduler (`Schedule::ready`): `g` was woken while it waited, and
    /// the caller hands its reference over to the run queue.
    ///
    /// # Safety
    /// `g` is a live G on which the caller owns a reference.
    pub(crate) unsafe fn schedule(g: NonNull<Header>) {
        // SAFETY: caller contract.
        let h = unsafe { g.as_ref() };
        // SAFETY: as in `scheduler`; the reference is handed over as the callee expects.
        unsafe { (h.vtable.schedule)(g) }
    }

    pub(crate) fn wait_reason(&self) -> WaitReason {
        WaitReason::from_u8(self.wait_reason.load(Ordering::Relaxed))
    }
}

/// What a G asks of the scheduler that runs it (tokio's `task::Schedule`), so that the G layer
/// names no scheduler type: [`allocate`] records the scheduler in the G's header, type-erased,
/// and the G's vtable, instantiated for the scheduler's type, gets it back. `sched::Shared`
/// implements it.
pub(crate) trait Schedule: Send + Sync + 'static {
    /// `goready`: `g` was woken while it waited; the run queue's reference is handed over.
    fn ready(&self, g: NonNull<Header>);
    /// `g` completed, with the all-Gs list's reference: it leaves the list now
    /// ([`Unlink::Done`]), or joins the current P's batch of Gs to unlink later.
    fn unlink(&self, g: NonNull<Header>) -> Unlink;
    /// Unlinks a batch that [`unlink`](Self::unlink) handed back ([`Unlink::Flush`]), after
    /// the completer is done with its G: the list's references are dropped
    /// (`g::drop_list_refs`).
    fn unlink_batch(&self, p: usize, batch: DeadBatch);
    /// `gfput`: the memory block (size class `class`) of a freed G.
    fn gfput(&self, class: u8, block: gfree::Block);
    /// A G's panic that nothing observed (its `JoinError`, dropped unread).
    fn unobserved(&self, parent: u64, err: JoinError);
    /// The synctest bubble the scheduler is (0: none): a join of one of its Gs is durable only
    /// there.
    fn bubble_tag(&self) -> u64;
}

/// How a finished G leaves `allgs` (see [`Schedule::unlink`]).
// The batch is moved into the completer's frame, once per finished G; boxing it would allocate
// at every 32nd finish, where Go allocates nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Unlink {
    /// Unlinked already.
    Done,
    /// In the current P's batch, which unlinks it later.
    Batched,
    /// It filled P `.0`'s batch, taken out: the completer hands it to `unlink_batch` when done.
    Flush(usize, DeadBatch),
}

/// A batch of finished Gs that a P collected (`allgs::DeadGs`), taken out to be unlinked: its
/// first `.1` Gs, each with the list's reference.
pub(crate) type DeadBatch = ([NonNull<Header>; DEAD_BATCH], usize);

/// How many finished Gs a P collects before it unlinks them.
pub(crate) const DEAD_BATCH: usize = 32;

/// The id under which the main future of `block_on` (not a G, but main all the same) appears
/// in a dump and as a parent.
pub(crate) const MAIN_FUTURE: u64 = 0;
/// `Header::parent` of a G spawned from outside any G (a plain thread).
pub(crate) const NO_PARENT: u64 = u64::MAX;

/// Size in bytes of the G header, for the memory report.
pub const HEADER_SIZE: usize = std::mem::size_of::<Header>();

/// Allocates a G running `future` for scheduler `sched`, in state
/// [`state::INITIAL`](super::state::INITIAL).
///
/// `local` is the spawning P's free list, when the spawner holds a P, and `global` the
/// runtime's. The `bool` says whether the memory came from a free list.
pub(crate) fn allocate<F, S: Schedule>(
    future: F,
    sched: &StdArc<S>,
    global: &GlobalFree,
    goid: u64,
    parent: u64,
    location: &'static Location<'static>,
    local: Option<&mut gfree::LocalFree>,
) -> (NonNull<Header>, bool)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let layout = cell_layout::<F>();
    let class = gfree::class_of(layout);
    let mut reused = false;
    let mem: NonNull<Cell<F>> = match class {
        Some(c) => {
            let block = match local.and_then(|l| l.get(c, global)) {
                Some(b) => {
                    reused = true;
                    b
                }
                None => gfree::alloc_block(c),
            };
            block.as_ptr().cast()
        }
        None => {
            // SAFETY: a `Cell` is never zero-sized (the header alone is not).
            let p = unsafe { std::alloc::alloc(layout) };
            match NonNull::new(p) {
                Some(p) => p.cast(),
                None => std::alloc::handle_alloc_error(layout),
            }
        }
    };
    let cell = Cell {
        header: Header {
            state: State::new(super::state::INITIAL),
            vtable: vtable::<F, S>(),
            sched: StdArc::into_raw(sched.clone()).cast(),
            all_prev: UnsafeCell::new(None),
            all_next: UnsafeCell::new(None),
            goid,
            location,
            join_waker: UnsafeCell::new(None),
            wait_reason: AtomicU8::new(0),
            class: class.unwrap_or(u8::MAX),
            trace_flow: AtomicU16::new(FLOW_CREATED),
            parked_at: AtomicU32::new(0),
            parent,
        },
        stage: UnsafeCell::new(Stage::Running(future)),
    };
    // SAFETY: `mem` is valid for writes of `Cell<F>`: a block of a class at least that large and
    // at least as aligned (class_of checked both), or an allocation of exactly its layout.
    unsafe { mem.as_ptr().write(cell) };
    crate::trace::go_create(goid, parent, location);
    (mem.cast(), reused)
}

fn vtable<F, S: Schedule>() -> &'static Vtable
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    &Vtable {
        poll: poll::<F>,
        cancel: cancel::<F>,
        drop_output: drop_output::<F>,
        read_output: read_output::<F>,
        dealloc: dealloc::<F, S>,
        schedule: schedule::<S>,
        scheduler: scheduler::<S>,
    }
}

/// # Safety
/// `g` is a live G allocated for an `S`, and the caller hands one reference over.
unsafe fn schedule<S: Schedule>(g: NonNull<Header>) {
    // SAFETY: caller contract: the header's `sched` is an `Arc<S>` that outlives this call.
    let s = unsafe { &*g.as_ref().sched.cast::<S>() };
    s.ready(g);
}

/// `sched`, the pointer `allocate` stored for an `S`, as a `dyn Schedule`.
fn scheduler<S: Schedule>(sched: *const ()) -> *const dyn Schedule {
    sched.cast::<S>() as *const dyn Schedule
}

/// # Safety
/// `ptr` must point to a live `Cell<F>`.
unsafe fn cell<'a, F: Future>(ptr: NonNull<Header>) -> &'a Cell<F> {
    // SAFETY: the header is the first field of the `#[repr(C)]` cell (caller: it is a Cell<F>).
    unsafe { ptr.cast::<Cell<F>>().as_ref() }
}

/// # Safety
/// The caller is the M that moved the G to `RUNNING`, so it has exclusive access to the stage.
unsafe fn poll<F: Future>(ptr: NonNull<Header>, waker: &Waker) -> bool {
    // SAFETY: caller contract.
    let cell = unsafe { cell::<F>(ptr) };
    let mut cx = Context::from_waker(waker);
    cell.stage.with_mut(|stage| {
        // SAFETY: exclusive access (RUNNING); the future is pinned inside the G's allocation,
        // which never moves and is dropped in place.
        let res = catch_unwind(AssertUnwindSafe(|| match unsafe { &mut *stage } {
            Stage::Running(f) => unsafe { Pin::new_unchecked(f) }.poll(&mut cx),
            _ => unreachable!("goro: a G was polled after it completed"),
        }));
        let out = match res {
            Ok(Poll::Pending) => return false,
            Ok(Poll::Ready(v)) => Ok(v),
            Err(panic) => Err(JoinError::panic(cell.header.goid, cell.header.location, panic)),
        };
        // SAFETY: as above. Dropping the future may run user code that panics: catch it too.
        set_stage(unsafe { &mut *stage }, Stage::Finished(out), &cell.header);
        true
    })
}

/// Replaces the stage, dropping the old one in place; a panic in that drop becomes the G's
/// output.
///
/// In place, not moved out first: the future is pinned, and a suspended one may hold pointers
/// into itself (an async fn's local borrowing another, e.g. a lock guard borrowing a socket
/// the same future owns; an intrusive waiter node). Moving it before the drop (Pin's drop
/// guarantee forbids that) left those pointers aimed at the stage's new contents.
fn set_stage<F: Future>(stage: &mut Stage<F>, new: Stage<F>, header: &Header) {
    let stage: *mut Stage<F> = stage;
    // SAFETY: `stage` is valid and ours alone (the caller's `&mut`, no longer used). A
    // `drop_in_place` that unwinds has still dropped the rest of the value on the way out, so
    // either way the place holds no value afterwards, and it is written before anything reads it.
    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { std::ptr::drop_in_place(stage) }));
    match dropped {
        // SAFETY: as above: the place is dropped, so writing does not leak or double-drop.
        Ok(()) => unsafe { stage.write(new) },
        Err(panic) => {
            // The future's destructor panicked: report that instead.
            // SAFETY: as above.
            unsafe { stage.write(Stage::Finished(Err(JoinError::panic(header.goid, header.location, panic)))) };
            drop(new);
        }
    }
}

/// # Safety
/// As for `poll`.
unsafe fn cancel<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: caller contract.
    let cell = unsafe { cell::<F>(ptr) };
    let err = JoinError::cancelled(cell.header.goid, cell.header.location);
    // SAFETY: exclusive access (RUNNING).
    cell.stage.with_mut(|stage| set_stage(unsafe { &mut *stage }, Stage::Finished(Err(err)), &cell.header));
}

/// # Safety
/// The G is complete and the caller owns its output (no `JoinHandle` will read it).
unsafe fn drop_output<F: Future>(ptr: NonNull<Header>) {
    // SAFETY: caller contract.
    let cell = unsafe { cell::<F>(ptr) };
    // SAFETY: caller owns the stage.
    let old = cell.stage.with_mut(|stage| std::mem::replace(unsafe { &mut *stage }, Stage::Consumed));
    match old {
        // A panic nothing observed: goro says so (and may end the run, see `panics`).
        Stage::Finished(Err(e)) if e.is_panic() => {
            cell.header.scheduler().unobserved(cell.header.parent, e);
        }
        // A panicking output destructor is swallowed: there is nobody to report it to, and
        // it must not take the M down.
        old => {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(old)));
        }
    }
}

/// # Safety
/// The G is complete, the caller is its `JoinHandle`, and `dst` is a valid
/// `*mut Option<Result<F::Output, JoinError>>`.
unsafe fn read_output<F: Future>(ptr: NonNull<Header>, dst: *mut ()) {
    // SAFETY: caller contract.
    let cell = unsafe { cell::<F>(ptr) };
    // SAFETY: the JoinHandle owns the output once COMPLETE is seen with JOIN_INTEREST set.
    let stage = cell.stage.with_mut(|stage| std::mem::replace(unsafe { &mut *stage }, Stage::Consumed));
    match stage {
        // SAFETY: caller contract on `dst`.
        Stage::Finished(out) => unsafe { *dst.cast::<Option<Result<F::Output, JoinError>>>() = Some(out) },
        _ => panic!("goro: JoinHandle polled after it returned Ready"),
    }
}

/// # Safety
/// The G's reference count reached zero: nothing else refers to it.
unsafe fn dealloc<F: Future, S: Schedule>(ptr: NonNull<Header>) {
    let cell_ptr = ptr.cast::<Cell<F>>();
    // SAFETY: caller contract: we are the only user; read the fields needed after the drop.
    let (class, sched) = unsafe {
        let h = &cell_ptr.as_ref().header;
        (h.class, h.sched.cast::<S>())
    };
    // SAFETY: the cell is initialized and nothing refers to it any more. Dropping the stage may
    // run a future's destructor (only if the G never completed, which shutdown prevents) or an
    // output's; the join waker is a plain `Waker`.
    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { std::ptr::drop_in_place(cell_ptr.as_ptr()) }));
    // SAFETY: `sched` came from `Arc::<S>::into_raw` in `allocate` (this vtable is `S`'s).
    let sched = unsafe { StdArc::from_raw(sched) };
    if class == u8::MAX {
        // SAFETY: allocated with exactly this layout in `allocate`.
        unsafe { std::alloc::dealloc(cell_ptr.as_ptr().cast(), cell_layout::<F>()) };
    } else {
        let block = Block::new(cell_ptr.cast());
        sched.gfput(class, block);
    }
    drop(sched);
    if let Err(p) = dropped {
        std::panic::resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From every word `trace_flow` can hold, the next wake-up's count is a count (1 ..=
    /// 0x7ffe), not the creation's mark nor "none" once `FLOW_PENDING` is set over it, and
    /// differs from the last one's: so `trace_take_flow` never reads a wake-up as the creation.
    #[test]
    fn each_wake_up_count_is_a_count_of_its_own() {
        for flow in 0..=u16::MAX {
            let n = next_flow_count(flow);
            assert!((1..FLOW_COUNT).contains(&n), "after {flow:#x}: count {n:#x}");
            assert_ne!(FLOW_PENDING | n, FLOW_CREATED, "after {flow:#x}: the creation's mark");
            if flow != FLOW_CREATED {
                assert_ne!(n, flow & FLOW_COUNT, "after {flow:#x}: the same count again");
            }
        }
    }
}
