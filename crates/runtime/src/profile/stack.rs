//! A sampled event's stack: captured as return addresses (cheap: no symbols are looked at),
//! symbolized when a profile is read, and cut to what the user wrote.

use super::record::{Frame, Line};
use crate::m::Origin;
use std::collections::HashMap;

/// Go's `maxStack` for profiles (Go keeps 32 frames; `async fn`s nest deeper, each `.await` a
/// `poll` frame, and a cut stack loses its root, the part that names the G).
pub(crate) const MAX_FRAMES: usize = 64;

/// The return addresses of the calling thread's stack, innermost first, at most
/// [`MAX_FRAMES`]; the frames of the capture itself are among them and are cut when the stack
/// is resolved (their names say what they are, their number depends on inlining).
#[cfg(not(loom))]
pub(crate) fn capture() -> Vec<usize> {
    let mut ips = Vec::with_capacity(MAX_FRAMES);
    {
        let mut push = |frame: &backtrace::Frame| {
            ips.push(frame.ip() as usize);
            ips.len() < MAX_FRAMES
        };
        // backtrace's `trace` takes the crate's global lock, which `resolve` holds while it reads
        // a binary's debug information (tens of milliseconds the first time): a G that samples
        // an event while a profile is being read would block its thread that long.
        #[cfg(unix)]
        // SAFETY: the lock serializes the symbolization cache (which only `resolve` touches) and
        // Windows's dbghelp; on unix the walk is `_Unwind_Backtrace`, which is thread-safe
        // (glibc's backtrace(3) calls it without a lock).
        unsafe {
            backtrace::trace_unsynchronized(&mut push)
        };
        #[cfg(not(unix))]
        backtrace::trace(&mut push);
    }
    ips
}

/// Under loom no profile is on (`wait_start` says 0), so nothing is captured.
#[cfg(loom)]
pub(crate) fn capture() -> Vec<usize> {
    Vec::new()
}

/// Where a stack stops being the user's: the frames below the G's own poll (the scheduler's) or
/// below the main future's poll (the thread that called `block_on`).
const SCHEDULER_FRAMES: &[&str] = &["goro_runtime::g::raw::poll", "goro_runtime::runtime::Runtime::block_on"];

/// The frames above the event's primitive: the capture's and this module's own.
const CAPTURE_FRAMES: &[&str] = &["backtrace::", "goro_runtime::profile::"];

/// Symbolizes stacks, remembering each address's answer (a profile is read many times, and the
/// first look at a binary's debug information is slow).
#[derive(Default)]
pub(crate) struct Resolver {
    seen: HashMap<usize, Vec<Line>>,
}

impl Resolver {
    /// The user's part of `ips` (see [`SCHEDULER_FRAMES`], [`CAPTURE_FRAMES`]), symbolized, with
    /// a frame for `origin` as its root. The cut is made function by function, not frame by
    /// frame: in an optimized build one frame holds many functions inlined into each other (a
    /// G's whole future inlined into the G's poll), and its debug information names each.
    pub(crate) fn stack(&mut self, ips: &[usize], origin: Option<Origin>) -> Vec<Frame> {
        let is = |l: &Line, prefixes: &[&str]| prefixes.iter().any(|p| l.function.starts_with(p));
        let mut frames = Vec::with_capacity(ips.len() + 1);
        let mut above_primitive = true;
        'frames: for &ip in ips {
            let mut lines = Vec::new();
            for l in self.lines(ip) {
                if above_primitive && is(l, CAPTURE_FRAMES) {
                    continue;
                }
                above_primitive = false;
                if is(l, SCHEDULER_FRAMES) {
                    if !lines.is_empty() {
                        frames.push(Frame { addr: ip, lines });
                    }
                    break 'frames;
                }
                lines.push(l.clone());
            }
            if !lines.is_empty() {
                frames.push(Frame { addr: ip, lines });
            }
        }
        match origin {
            Some(Origin::Go(at)) => frames.push(Frame::spawn_site(at)),
            Some(Origin::Main(at)) => frames.push(Frame::main(at)),
            None => {}
        }
        frames
    }

    fn lines(&mut self, ip: usize) -> &[Line] {
        self.seen.entry(ip).or_insert_with(|| resolve(ip))
    }
}

/// The functions at return address `ip`, innermost first.
fn resolve(ip: usize) -> Vec<Line> {
    let mut lines = Vec::new();
    // A return address points after the call: look up the call itself (as std's and Go's
    // tracebacks do), or the line can be the next statement's.
    #[cfg(loom)]
    let _ = ip;
    #[cfg(not(loom))]
    backtrace::resolve(ip.saturating_sub(1) as *mut std::ffi::c_void, |sym| {
        let function = match sym.name() {
            // `{:#}`: demangled without the hash.
            Some(name) => format!("{name:#}"),
            None => "??".to_owned(),
        };
        let file = sym.filename().map(|f| f.display().to_string());
        lines.push(Line { function, file, line: sym.lineno() });
    });
    if lines.is_empty() {
        lines.push(Line { function: "??".to_owned(), file: None, line: None });
    }
    lines
}
