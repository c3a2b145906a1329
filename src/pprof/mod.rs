//! Go's `runtime/pprof`, for the goroutine, block and mutex profiles: written in pprof's own
//! format, which `go tool pprof` (and every pprof viewer) opens, or in Go's text form.
//!
//! | Go | goro |
//! |----|------|
//! | `pprof.Lookup("goroutine")`, `"block"`, `"mutex"` | [`lookup`] (`None` for any other name) |
//! | `p.Name()` | [`Profile::name`] |
//! | `p.WriteTo(w, 0)` | [`Profile::write_to`]`(w, 0)`: the gzipped profile.proto that `go tool pprof` reads |
//! | `p.WriteTo(w, 1)` | [`Profile::write_to`]`(w, 1)`: Go's legacy text form |
//! | `pprof.Lookup("goroutine").WriteTo(w, 2)` | [`Profile::write_to`]`(w, 2)`: every G, as [`runtime::dump`](crate::runtime::dump) prints them |
//! | `runtime.SetBlockProfileRate(rate)` | [`runtime::set_block_profile_rate`](crate::runtime::set_block_profile_rate) |
//! | `runtime.SetMutexProfileFraction(rate)` | [`runtime::set_mutex_profile_fraction`](crate::runtime::set_mutex_profile_fraction) |
//! | `runtime.BlockProfileRecord` | [`Record`] (its stack symbolized: [`Frame`], [`Line`]) |
//!
//! The block and mutex profiles are empty until their rates are set, as in Go: the block
//! profile samples the time Gs spend blocked on channels, `select!` and the sync types, the
//! mutex profile the time Gs wait for a [`sync::Mutex`](crate::sync::Mutex) or
//! [`sync::RwMutex`](crate::sync::RwMutex) another G holds, counted against the stack that
//! unlocked it.
//!
//! # The goroutine profile
//!
//! A goro G is a future: while it waits it has no stack, only a state. Each G's stack in the
//! goroutine profile is therefore two frames goro makes up: the innermost says what it is
//! doing (`running`, `runnable`, `syscall`, or what it waits on, in Go's words: `chan
//! receive`, `select`, `sync.Mutex.Lock`, ...), the root where it was spawned (`go
//! src/main.rs:12`, with that file and line; `main` for the main future of
//! [`run`](crate::run) or `block_on`), as the block and mutex profiles' stacks are rooted. Gs
//! with the same two frames are counted together, so `go tool pprof -top` lists how many Gs
//! wait on what, and `-traces` from where they came.
//!
//! Reading the goroutine profile needs a runtime: [`Profile::write_to`] and
//! [`Profile::records`] panic outside one, as [`runtime::goroutines`](crate::runtime::goroutines)
//! does.
//!
//! # Reading a profile
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! goro::run(async {
//!     goro::runtime::set_block_profile_rate(1); // every blocking event
//!     // ... the program ...
//!     let f = std::fs::File::create("block.pprof")?;
//!     goro::pprof::lookup("block").unwrap().write_to(f, 0)
//! })
//! # }
//! ```
//!
//! Then, with Go installed:
//!
//! ```text
//! go tool pprof -top block.pprof            # the functions, by time blocked
//! go tool pprof -traces block.pprof         # every stack and its values
//! go tool pprof -http=:8080 block.pprof     # graphs and flame graphs in a browser
//! ```
//!
//! The stacks of the block and mutex profiles are the program's own, symbolized when a profile
//! is read: their files and lines need debug information in the binary, which cargo's release
//! profile leaves out. Keep line tables at little cost:
//!
//! ```toml
//! [profile.release]
//! debug = "line-tables-only"
//! ```
//!
//! Without them the functions are still named, at `?:0`.

mod proto;
#[cfg(test)]
mod tests;
mod text;

pub use goro_runtime::profile::{Frame, Line, Record};

use crate::runtime::{Goroutine, GoroutineStatus, WaitReason};
use std::collections::HashMap;
use std::io::{self, Write};

/// One of the profiles [`lookup`] finds (Go's `*pprof.Profile`). It holds no data: each
/// [`write_to`](Profile::write_to) reads the profile as it is then.
#[derive(Clone, Debug)]
pub struct Profile {
    kind: Kind,
    /// Records given instead of the runtime's (see [`Profile::from_records`]).
    given: Option<Vec<Record>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Goroutine,
    Block,
    Mutex,
}

impl Kind {
    fn of(name: &str) -> Option<Kind> {
        match name {
            "goroutine" => Some(Kind::Goroutine),
            "block" => Some(Kind::Block),
            "mutex" => Some(Kind::Mutex),
            _ => None,
        }
    }
}

/// Go's `pprof.Lookup`: the profile named `name`, one of `"goroutine"`, `"block"` and
/// `"mutex"`; `None` for any other (Go's heap, allocs and threadcreate profiles have no goro
/// counterpart: goro does not manage memory or threads the way Go's runtime does).
///
/// ```
/// assert_eq!(goro::pprof::lookup("block").unwrap().name(), "block");
/// assert!(goro::pprof::lookup("heap").is_none());
/// ```
pub fn lookup(name: &str) -> Option<Profile> {
    Kind::of(name).map(|kind| Profile { kind, given: None })
}

impl Profile {
    /// The profile's name, as given to [`lookup`].
    pub fn name(&self) -> &str {
        match self.kind {
            Kind::Goroutine => "goroutine",
            Kind::Block => "block",
            Kind::Mutex => "mutex",
        }
    }

    /// The profile's records as [`write_to`](Profile::write_to) writes them: the block and
    /// mutex profiles' from the runtime, by time (`delay`) first; the goroutine profile's one
    /// per distinct stack, `count` Gs on it (`delay` 0), the most Gs first.
    ///
    /// # Panics
    /// For the goroutine profile, outside a goro runtime.
    pub fn records(&self) -> Vec<Record> {
        let mut records = match (&self.given, self.kind) {
            (Some(r), _) => r.clone(),
            (None, Kind::Block) => goro_runtime::profile::block_records(),
            (None, Kind::Mutex) => goro_runtime::profile::mutex_records(),
            (None, Kind::Goroutine) => goroutine_records(&crate::runtime::goroutines()),
        };
        match self.kind {
            // Go's order: `writeBlock` and `writeMutex` sort by delay, `printCountProfile` by
            // count. The stacks break ties, so that a profile reads the same from run to run.
            Kind::Block | Kind::Mutex => records.sort_by(|a, b| {
                (b.delay, b.count).cmp(&(a.delay, a.count)).then_with(|| stack_key(&a.stack).cmp(&stack_key(&b.stack)))
            }),
            Kind::Goroutine => records
                .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| stack_key(&a.stack).cmp(&stack_key(&b.stack)))),
        }
        records
    }

    /// Go's `(*Profile).WriteTo`: writes the profile to `w`. `debug` 0 writes the gzipped
    /// profile.proto that `go tool pprof` reads; 1 Go's legacy text form (`--- contention:`
    /// and `<delay> <count> @ <addresses>` lines for block and mutex, `goroutine profile: total
    /// N` for goroutine), each stack's functions, files and lines on `#` lines; for the
    /// goroutine profile, 2 (or more) writes every G as [`runtime::dump`](crate::runtime::dump)
    /// does (Go's `runtime.Stack(buf, true)`), for block and mutex it is 1.
    ///
    /// The proto form's values are Go's: the block and mutex profiles' `contentions/count` and
    /// `delay/nanoseconds` (the mutex profile's already scaled by its sampling rate), the
    /// goroutine profile's `goroutine/count`.
    ///
    /// ```
    /// goro::run(async {
    ///     let mut text = Vec::new();
    ///     goro::pprof::lookup("goroutine").unwrap().write_to(&mut text, 1).unwrap();
    ///     let text = String::from_utf8(text).unwrap();
    ///     assert!(text.starts_with("goroutine profile: total 1\n"), "{text}");
    /// });
    /// ```
    ///
    /// # Panics
    /// For the goroutine profile, outside a goro runtime.
    pub fn write_to(&self, mut w: impl Write, debug: u8) -> io::Result<()> {
        if self.kind == Kind::Goroutine && debug >= 2 {
            return w.write_all(crate::runtime::dump().as_bytes());
        }
        let records = self.records();
        if debug >= 1 {
            let text = match self.kind {
                Kind::Block => text::contention("contention", None, &records),
                Kind::Mutex => text::contention("mutex", Some(mutex_rate()), &records),
                Kind::Goroutine => text::counts("goroutine", &records),
            };
            return w.write_all(text.as_bytes());
        }
        let profile = match self.kind {
            // Go's `printCountCycleProfile`: period 1 for both, the mutex profile's values
            // being scaled by the rate already.
            Kind::Block | Kind::Mutex => proto::build(
                &proto::Shape {
                    sample_types: &[("contentions", "count"), ("delay", "nanoseconds")],
                    period_type: ("contentions", "count"),
                    period: 1,
                },
                &records,
                |r| vec![r.count, r.delay],
            ),
            Kind::Goroutine => proto::build(
                &proto::Shape {
                    sample_types: &[("goroutine", "count")],
                    period_type: ("goroutine", "count"),
                    period: 1,
                },
                &records,
                |r| vec![r.count],
            ),
        };
        proto::write(&profile, w)
    }

    /// The profile `name` (as [`lookup`] takes it) holding `records` instead of the runtime's:
    /// for tests of the formats, and for tools that convert records.
    #[doc(hidden)]
    pub fn from_records(name: &str, records: Vec<Record>) -> Option<Profile> {
        Kind::of(name).map(|kind| Profile { kind, given: Some(records) })
    }
}

/// The mutex profile's sampling rate, read without changing it.
fn mutex_rate() -> i32 {
    goro_runtime::profile::set_mutex_profile_fraction(-1)
}

/// What orders two stacks: their functions and addresses, innermost first.
fn stack_key(stack: &[Frame]) -> Vec<(&str, Option<&str>, Option<u32>, usize)> {
    stack
        .iter()
        .flat_map(|f| f.lines.iter().map(move |l| (l.function.as_str(), l.file.as_deref(), l.line, f.addr)))
        .collect()
}

/// The goroutine profile of `gs`: one record per distinct (state, spawn site), counting its Gs.
/// The root frames are those of the block and mutex profiles' stacks.
fn goroutine_records(gs: &[Goroutine]) -> Vec<Record> {
    // Keyed by file and line, which is all a root frame names (not the column).
    type Key = (&'static str, bool, &'static str, u32);
    let mut counts: HashMap<Key, (i64, &'static std::panic::Location<'static>)> = HashMap::new();
    for g in gs {
        let state = match g.status {
            GoroutineStatus::Running => "running",
            GoroutineStatus::Runnable => "runnable",
            GoroutineStatus::Syscall => "syscall",
            _ => g.wait_reason.unwrap_or(WaitReason::Future).as_str(),
        };
        // The main future of `block_on` is no G (its id is 0); its stacks are rooted at `main`.
        let main_future = g.id == 0;
        let key = (state, main_future, g.location.file(), g.location.line());
        counts.entry(key).or_insert((0, g.location)).0 += 1;
    }
    counts
        .into_iter()
        .map(|((state, main_future, ..), (count, at))| {
            let root = if main_future { Frame::main(at) } else { Frame::spawn_site(at) };
            Record::new(count, 0, vec![Frame::synthetic(state, None, None), root])
        })
        .collect()
}
