//! The trace's clock: nanoseconds since the first trace of the process began.

use std::sync::OnceLock;
use std::time::Instant;

/// Now, in nanoseconds since the trace epoch (the first call).
pub(super) fn now() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}
