//! RwMutex: a writer excludes readers (loom checks every access to the data cell), readers are
//! never stranded behind a writer that gave up.

use super::poll_once_then_drop;
use crate::RwMutex;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// One writer, two readers (one of them the main thread): a reader sees the value before or
/// after the write, never during it (loom would report the overlapping accesses).
#[test]
fn loom_rwmutex_writer_vs_readers() {
    loom::model(|| {
        let m = Arc::new(RwMutex::new(UnsafeCell::new(0u32)));
        let w = m.clone();
        let writer = thread::spawn(move || {
            let g = w.write_blocking();
            // SAFETY: the write guard excludes every reader; loom checks it.
            g.with_mut(|p| unsafe { *p += 1 });
        });
        let r = m.clone();
        let reader = thread::spawn(move || {
            let g = r.read_blocking();
            // SAFETY: a read guard excludes the writer.
            g.with(|p| unsafe { *p })
        });
        let mine = {
            let g = m.read_blocking();
            // SAFETY: as above.
            g.with(|p| unsafe { *p })
        };
        let theirs = reader.join().unwrap();
        writer.join().unwrap();
        assert!(mine <= 1 && theirs <= 1);
        // SAFETY: every thread is joined.
        assert_eq!(m.try_write().unwrap().with(|p| unsafe { *p }), 1);
    });
}

/// A writer queues behind a held read lock, a reader may queue behind the writer (writer
/// preference), and the writer gives up: the reader must get in while the first read lock is
/// still held (it is released only after the reader is done, so a stranded reader deadlocks).
#[test]
fn loom_rwmutex_cancelled_writer_lets_readers_in() {
    loom::model(|| {
        let m = Arc::new(RwMutex::new(0u32));
        let held = m.try_read().unwrap();
        let w = m.clone();
        let writer = thread::spawn(move || {
            assert!(!poll_once_then_drop(w.write()), "a reader holds the lock");
        });
        let r = m.clone();
        let reader = thread::spawn(move || *r.read_blocking());
        writer.join().unwrap();
        assert_eq!(reader.join().unwrap(), 0);
        drop(held);
        assert!(m.try_write().is_some());
    });
}
