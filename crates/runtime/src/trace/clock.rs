//! The trace's clock: nanoseconds since the first trace of the process began, from the
//! monotonic clock. Every event reads it, so on Linux it is `clock_gettime` itself (std's
//! `Instant::elapsed` adds a `Duration` subtraction and conversion that cost about as much as
//! the call).

use std::sync::OnceLock;

/// The monotonic clock, in nanoseconds from an arbitrary start.
#[cfg(all(target_os = "linux", not(loom)))]
fn raw() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The monotonic clock, in nanoseconds from an arbitrary start.
#[cfg(not(all(target_os = "linux", not(loom))))]
fn raw() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// Now, in nanoseconds since the trace epoch (the first call).
pub(super) fn now() -> u64 {
    static EPOCH: OnceLock<u64> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(raw);
    raw().saturating_sub(epoch)
}
