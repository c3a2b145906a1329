//! Where events go while a trace runs: a buffer per thread, and the generations that let the
//! trace's reader take every buffer without stopping anybody (Go 1.22's tracer does the same).
//!
//! # Protocol
//!
//! A trace runs in generations (`Tracer::gen`, 0 while off). Each thread has a [`Slot`] with
//! two buffers, one per generation parity, and a sequence counter that is odd while the thread
//! writes an event. A writer makes its counter odd, *then* reads the generation, writes into
//! that generation's buffer, and makes the counter even. The reader ([`Tracer::advance`])
//! stores the next generation, *then* looks at every slot's counter and waits while it is odd
//! and unchanged. Both sides order their two steps (Dekker's pattern), so either the writer
//! read the new generation, or the reader saw the counter odd and waited for that write to
//! end. After the wait, the old generation's buffer of that slot is the
//! reader's: no write is in it and every later write reads the new generation (and uses the
//! other buffer). The counter's final `Release` increment, read by the reader with `Acquire`,
//! makes the buffer's contents visible. The two steps are `SeqCst` accesses (a swap and a
//! load, in the single order of all `SeqCst` operations); loom models that order only through
//! fences, so under loom each side has a `SeqCst` fence between its two steps too.
//!
//! A buffer that fills is handed to the sink at once by its writer (under the sink's lock: one
//! lock per buffer, not per event).

#[cfg(loom)]
use crate::loom::fence;
use crate::loom::{AtomicU64, Mutex, Ordering::*, UnsafeCell};
use std::sync::Arc;

/// How many bytes of events a buffer holds before it goes to the sink.
pub(crate) const BUF_BYTES: usize = 64 * 1024;

/// One thread's events of one generation.
pub(crate) struct Buf {
    /// The generation the events belong to.
    pub(crate) gen: u64,
    /// The thread (its slot's id).
    pub(crate) thread: u32,
    /// The encoded events (see `event`).
    pub(crate) bytes: Vec<u8>,
}

/// A thread's buffers and its writing counter.
pub(crate) struct Slot {
    id: u32,
    seq: AtomicU64,
    bufs: [UnsafeCell<Option<Buf>>; 2],
}

// SAFETY: `bufs` is written only by the slot's thread while its counter is odd, and read by the
// reader only after the protocol of the module docs gave it the buffer; `Buf` is plain data.
unsafe impl Sync for Slot {}
// SAFETY: as above.
unsafe impl Send for Slot {}

/// Where full buffers (and, at the end of a generation, the partial ones) go.
pub(crate) trait Sink: Send {
    /// Takes a buffer of events.
    fn put(&mut self, buf: Buf);
}

/// The tracer's shared state: the generation, the slots, the sink.
pub(crate) struct Tracer<S> {
    gen: AtomicU64,
    slots: Mutex<Vec<Arc<Slot>>>,
    next_id: AtomicU64,
    sink: Mutex<S>,
}

impl<S: Sink> Tracer<S> {
    pub(crate) fn new(sink: S) -> Tracer<S> {
        Tracer {
            gen: AtomicU64::new(0),
            slots: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            sink: Mutex::new(sink),
        }
    }

    /// A new slot for the calling thread, registered so that the reader finds it.
    pub(crate) fn register(&self) -> Arc<Slot> {
        let id = self.next_id.fetch_add(1, Relaxed) as u32;
        let slot = Arc::new(Slot { id, seq: AtomicU64::new(0), bufs: [UnsafeCell::new(None), UnsafeCell::new(None)] });
        self.slots.lock().push(slot.clone());
        slot
    }

    /// Runs `write` on `slot`'s buffer of the current generation, if a trace is on; `need`:
    /// the bytes it will append. `slot` must be the calling thread's own.
    #[inline]
    pub(crate) fn write(&self, slot: &Slot, need: usize, write: impl FnOnce(&mut Vec<u8>)) {
        // Only this thread writes its counter: it is even here.
        let seq = slot.seq.load(Relaxed);
        // Dekker's pattern with the reader's `advance` (module docs).
        slot.seq.swap(seq + 1, SeqCst);
        store_load_fence();
        let gen = self.gen.load(SeqCst);
        if gen != 0 {
            slot.bufs[(gen & 1) as usize].with_mut(|b| {
                // SAFETY: our counter is odd and we read `gen` after making it so: the reader
                // does not touch this generation's buffer until we are done (module docs).
                let b = unsafe { &mut *b };
                let full = b.as_ref().is_some_and(|buf| buf.gen != gen || buf.bytes.len() + need > BUF_BYTES);
                if full {
                    let buf = b.take().expect("checked");
                    self.sink.lock().put(buf);
                }
                let buf = b.get_or_insert_with(|| Buf { gen, thread: slot.id, bytes: Vec::with_capacity(BUF_BYTES) });
                write(&mut buf.bytes);
            });
        }
        slot.seq.store(seq + 2, Release);
    }

    /// Ends the current generation: from now on writers use generation `next` (0: tracing
    /// stops), and every buffer of the old one goes to the sink. Returns the old generation.
    /// Callers serialize their calls (the trace's control lock).
    pub(crate) fn advance(&self, next: u64) -> u64 {
        let old = self.gen.swap(next, SeqCst);
        if old == 0 {
            return 0;
        }
        store_load_fence();
        let mut slots = self.slots.lock();
        let mut taken = Vec::new();
        for slot in slots.iter() {
            let seq = slot.seq.load(SeqCst);
            if seq & 1 == 1 {
                // A write is under way; it may have read the old generation. Wait for it.
                while slot.seq.load(Acquire) == seq {
                    crate::loom::thread::yield_now();
                }
            }
            slot.bufs[(old & 1) as usize].with_mut(|b| {
                // SAFETY: the wait above (module docs): no write is in this buffer, and every
                // later write of this slot reads the new generation and uses the other one.
                if let Some(buf) = unsafe { (*b).take() } {
                    taken.push(buf);
                }
            });
        }
        // A slot whose thread is gone (only the list holds it) will write nothing more.
        slots.retain(|s| Arc::strong_count(s) > 1);
        drop(slots);
        let mut sink = self.sink.lock();
        for buf in taken {
            sink.put(buf);
        }
        old
    }

    /// Runs `f` on the sink.
    pub(crate) fn with_sink<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        f(&mut self.sink.lock())
    }
}

/// The store-load order of Dekker's pattern. `SeqCst` read-modify-writes and loads give it in
/// the language's memory model (and a locked instruction on x86 gives it in the hardware's), but
/// loom orders only through fences, so its models get one.
#[inline(always)]
fn store_load_fence() {
    #[cfg(loom)]
    fence(SeqCst);
}
