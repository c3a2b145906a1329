//! Models of the trace's buffers (`trace::buf`): a thread writing events while the reader ends
//! their generation. Every event must land in exactly one buffer, and every buffer the reader
//! takes must be complete when taken (loom's cell tracking fails the model if a write into a
//! buffer races the reader's take).

use super::model;
use crate::trace::buf::{Buf, Sink, Tracer};
use loom::sync::Arc;
use loom::thread;

/// The buffers handed over, in order.
#[derive(Default)]
struct Collect(Vec<Buf>);

impl Sink for Collect {
    fn put(&mut self, buf: Buf) {
        self.0.push(buf);
    }
}

/// The events (one byte each) of the buffers of generation `gen`.
fn events_of(bufs: &[Buf], gen: u64) -> Vec<u8> {
    bufs.iter().filter(|b| b.gen == gen).flat_map(|b| b.bytes.iter().copied()).collect()
}

/// A writer writes two events while the reader moves the trace from generation 1 to 2 and
/// then stops it: each event is in generation 1's buffers or 2's, once, in order.
#[test]
fn loom_trace_generation_end_against_a_writer() {
    model(|| {
        let t = Arc::new(Tracer::new(Collect::default()));
        t.advance(1);
        let w = {
            let t = t.clone();
            thread::spawn(move || {
                let slot = t.register();
                for e in [1u8, 2] {
                    t.write(&slot, 1, |out| out.push(e));
                }
                slot
            })
        };
        t.advance(2);
        let _slot = w.join().unwrap();
        t.advance(0);
        t.with_sink(|c| {
            let (g1, g2) = (events_of(&c.0, 1), events_of(&c.0, 2));
            let mut all = g1.clone();
            all.extend(&g2);
            assert_eq!(all, [1, 2], "generation 1: {g1:?}, generation 2: {g2:?}");
        });
    });
}

/// Writes after the trace stopped are dropped, and the stop waits for a write under way.
#[test]
fn loom_trace_stop_against_a_writer() {
    model(|| {
        let t = Arc::new(Tracer::new(Collect::default()));
        t.advance(1);
        let w = {
            let t = t.clone();
            thread::spawn(move || {
                let slot = t.register();
                t.write(&slot, 1, |out| out.push(7));
                slot
            })
        };
        t.advance(0);
        let slot = w.join().unwrap();
        // Off: nothing is recorded.
        t.write(&slot, 1, |out| out.push(8));
        t.with_sink(|c| {
            let got = events_of(&c.0, 1);
            // The write raced the stop: it is in, whole, or it came after (and was dropped).
            assert!(got.is_empty() || got == [7], "{got:?}");
            assert!(c.0.iter().all(|b| !b.bytes.contains(&8)));
        });
    });
}
