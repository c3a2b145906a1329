//! A flight recorder's window: the most recent buffers, within the recorder's age and byte
//! budget.

use super::buf::Buf;
use super::clock;
use super::event;
use std::collections::VecDeque;
use std::time::Duration;

/// Go's `trace.FlightRecorderConfig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightRecorderConfig {
    /// Go's `MinAge`: keep at least this much of the most recent trace (if `max_bytes` allows).
    /// Default: 10 s.
    pub min_age: Duration,
    /// Go's `MaxBytes`: keep at most about this many bytes of events (it wins over `min_age`).
    /// Default: 10 MiB. The window is kept in 64 KiB buffers, one per thread at a time, so the
    /// budget is met to within a buffer per thread.
    pub max_bytes: usize,
}

impl Default for FlightRecorderConfig {
    fn default() -> Self {
        FlightRecorderConfig { min_age: Duration::from_secs(10), max_bytes: 10 << 20 }
    }
}

/// The buffers of a flight recorder's window, oldest first.
pub(crate) struct Window {
    cfg: FlightRecorderConfig,
    pub(super) bufs: VecDeque<(u64, Buf)>,
    bytes: usize,
}

impl Window {
    pub(super) fn new(cfg: FlightRecorderConfig) -> Window {
        Window { cfg, bufs: VecDeque::new(), bytes: 0 }
    }

    /// Adds a buffer, then drops the oldest while the window is over its byte budget, or while
    /// what is left after dropping still covers `min_age`.
    pub(super) fn put(&mut self, buf: Buf) {
        let Some(first) = event::decode(&buf.bytes).next().map(|e| e.ts) else { return };
        self.bytes += buf.bytes.len();
        self.bufs.push_back((first, buf));
        let newest = clock::now();
        let min_age = self.cfg.min_age.as_nanos() as u64;
        while self.bufs.len() > 1 {
            let over = self.bytes > self.cfg.max_bytes;
            let covered = self.bufs.get(1).is_some_and(|(t, _)| newest.saturating_sub(*t) >= min_age);
            if !over && !covered {
                break;
            }
            let (_, old) = self.bufs.pop_front().expect("len > 1");
            self.bytes -= old.bytes.len();
        }
    }

    /// The bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}
