//! What a profile holds when it is read: one [`Record`] per distinct stack, its frames resolved
//! to function names, files and lines (Go's `runtime.BlockProfileRecord`, with the
//! symbolization that Go's `pprof` package does when it writes the profile).

/// One stack of a block or mutex profile and what was counted on it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Record {
    /// Events counted (Go's `contentions`), scaled as Go scales them: a block event shorter
    /// than the rate counts `rate / delay` times.
    pub count: i64,
    /// Nanoseconds spent blocked (Go's `delay`), scaled the same way.
    pub delay: i64,
    /// The stack, innermost frame first: the goro primitive that blocked (or unlocked), the
    /// user's functions and `async fn`s that called it, and last a frame for the G's spawn
    /// site (`go` at `file:line`), or `main` for the main future of `block_on`.
    pub stack: Vec<Frame>,
}

/// One frame of a stack: a return address and the functions at it (more than one when the
/// compiler inlined calls there).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Frame {
    /// The instruction address; 0 for a frame goro made up (the G's spawn site).
    pub addr: usize,
    /// The functions at `addr`, innermost (inlined into the next) first; at least one.
    pub lines: Vec<Line>,
}

/// A function at a frame, with its source position when the binary has debug information.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Line {
    /// The demangled name, without its hash (`my_crate::worker::{{closure}}`); `??` when the
    /// binary has no symbol for the address.
    pub function: String,
    /// The source file, when known.
    pub file: Option<String>,
    /// The line in `file`, when known.
    pub line: Option<u32>,
}

impl Frame {
    /// A made-up frame (no address) for one function at a source position.
    pub fn synthetic(function: impl Into<String>, file: Option<String>, line: Option<u32>) -> Frame {
        Frame { addr: 0, lines: vec![Line { function: function.into(), file, line }] }
    }
}

impl Frame {
    /// The root frame of a G's stacks: the `go` statement (or `Runtime::spawn`) that spawned
    /// it, named `go <file>:<line>` (Go's stacks end in the function passed to `go`; a goro G
    /// is a future, whose spawn site is what names it).
    pub fn spawn_site(at: &std::panic::Location<'_>) -> Frame {
        Frame::synthetic(format!("go {}:{}", at.file(), at.line()), Some(at.file().to_owned()), Some(at.line()))
    }

    /// The root frame of the main future of `block_on` (`location`: where `block_on` was
    /// called), named `main`.
    pub fn main(at: &std::panic::Location<'_>) -> Frame {
        Frame::synthetic("main", Some(at.file().to_owned()), Some(at.line()))
    }
}

impl Record {
    /// A record of `count` events and `delay` nanoseconds on `stack`.
    pub fn new(count: i64, delay: i64, stack: Vec<Frame>) -> Record {
        Record { count, delay, stack }
    }
}
