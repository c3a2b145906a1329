//! Buffers of events to Chrome's trace-event JSON, one event at a time: each event is written
//! from what it carries, with no state across events but the names of the tracks seen, so that
//! buffers can be written in any order as they arrive (viewers sort by timestamp) and a flight
//! recorder's window, cut anywhere, is still valid JSON.
//!
//! Tracks (`tid`): P `n` is `n + 1`, named `P n`; a thread that holds no P is
//! [`THREAD_TRACKS`] + its slot, named `thread n` (a G in a syscall shows there). Slices are
//! `B`/`E` pairs (a poll of a G, a syscall); regions and tasks are async slices (`b`/`e`),
//! which may begin on one track and end on another; wake-ups are flows (`s` on the waker's
//! track, `f` bound to the woken G's next slice).

use super::buf::Buf;
use super::event::{self, Event, Kind, Stop, NO_G, NO_P};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::panic::Location;

/// The first `tid` of the tracks of threads without a P.
pub(crate) const THREAD_TRACKS: u64 = 10_000;

/// The process id every event carries.
const PID: u32 = 1;

/// Writes one trace: [`begin`](Writer::begin), any number of [`buf`](Writer::buf)s,
/// [`finish`](Writer::finish).
pub(crate) struct Writer<W: Write> {
    w: W,
    first: bool,
    tracks: BTreeMap<u64, String>,
    line: String,
}

impl<W: Write> Writer<W> {
    pub(crate) fn new(w: W) -> Writer<W> {
        Writer { w, first: true, tracks: BTreeMap::new(), line: String::with_capacity(256) }
    }

    pub(crate) fn begin(&mut self) -> io::Result<()> {
        self.w.write_all(b"{\"traceEvents\":[")?;
        self.raw(&format!(
            "{{\"ph\":\"M\",\"pid\":{PID},\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":\"goro\"}}}}"
        ))
    }

    /// Writes every event of `buf`.
    pub(crate) fn buf(&mut self, buf: &Buf) -> io::Result<()> {
        for ev in event::decode(&buf.bytes) {
            self.event(&ev, buf.thread)?;
        }
        Ok(())
    }

    /// Names the tracks and closes the JSON; returns the writer's flush result.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        for (tid, name) in std::mem::take(&mut self.tracks) {
            let mut s = String::new();
            let _ = write!(
                s,
                "{{\"ph\":\"M\",\"pid\":{PID},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":\"{name}\"}}}}"
            );
            self.raw(&s)?;
            // P tracks first, in P order, then the threads.
            let mut s = String::new();
            let _ = write!(
                s,
                "{{\"ph\":\"M\",\"pid\":{PID},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}"
            );
            self.raw(&s)?;
        }
        self.w.write_all(b"],\"displayTimeUnit\":\"ns\"}\n")?;
        self.w.flush()
    }

    fn raw(&mut self, obj: &str) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        self.w.write_all(obj.as_bytes())
    }

    fn track(&mut self, p: u16, thread: u32) -> u64 {
        let (tid, name) = if p == NO_P {
            (THREAD_TRACKS + u64::from(thread), format!("thread {thread}"))
        } else {
            (u64::from(p) + 1, format!("P {p}"))
        };
        self.tracks.entry(tid).or_insert(name);
        tid
    }

    fn event(&mut self, ev: &Event<'_>, thread: u32) -> io::Result<()> {
        let tid = self.track(ev.p, thread);
        let mut s = std::mem::take(&mut self.line);
        s.clear();
        let ts = Ts(ev.ts);
        let head = |s: &mut String, ph: &str, name: &str, cat: &str| {
            let _ = write!(s, "{{\"ph\":\"{ph}\",\"pid\":{PID},\"tid\":{tid},\"ts\":{ts},\"cat\":\"{cat}\",\"name\":");
            push_str(s, name);
        };
        match ev.kind {
            Kind::GoCreate => {
                head(&mut s, "i", "go", "go");
                let _ = write!(s, ",\"s\":\"t\",\"args\":{{\"goid\":{},\"parent\":{},\"at\":", ev.a, G(ev.b));
                push_str(&mut s, &site(ev.c));
                s.push_str("}}");
                // The creation is the flow to the new G's first poll (see `go_create`'s caller).
                let _ = write!(s, ",\n{{\"ph\":\"s\",\"pid\":{PID},\"tid\":{tid},\"ts\":{ts},\"cat\":\"flow\",\"name\":\"go\",\"id\":{}}}", flow_of_create(ev.a));
            }
            Kind::GoStart => {
                let name = match ev.a {
                    0 => format!("main {}", site(ev.b)),
                    g => format!("G{g} {}", site(ev.b)),
                };
                head(&mut s, "B", &name, "g");
                let _ = write!(s, ",\"args\":{{\"goid\":{}}}}}", ev.a);
                if ev.c != 0 {
                    let _ = write!(s, ",\n{{\"ph\":\"f\",\"bp\":\"e\",\"pid\":{PID},\"tid\":{tid},\"ts\":{ts},\"cat\":\"flow\",\"name\":\"{}\",\"id\":{}}}", flow_name(ev.c), ev.c);
                }
            }
            Kind::GoStop => {
                let stop = Stop::from_u64(ev.b);
                let why = match stop {
                    Stop::Exit => "exit",
                    Stop::Requeue => "yield",
                    Stop::Block => ev.s1,
                };
                if stop == Stop::Block {
                    head(&mut s, "i", &format!("block: {why}"), "block");
                    let _ = write!(s, ",\"s\":\"t\",\"args\":{{\"goid\":{},\"reason\":", ev.a);
                    push_str(&mut s, why);
                    s.push_str("}},\n");
                }
                let _ = write!(s, "{{\"ph\":\"E\",\"pid\":{PID},\"tid\":{tid},\"ts\":{ts},\"args\":{{\"end\":");
                push_str(&mut s, why);
                s.push_str("}}");
            }
            Kind::GoUnblock => {
                head(&mut s, "s", "unblock", "flow");
                let _ = write!(s, ",\"id\":{},\"args\":{{\"goid\":{}", ev.c, ev.a);
                if ev.b != NO_G {
                    let _ = write!(s, ",\"by\":{}", ev.b);
                }
                s.push_str("}}");
            }
            Kind::SyscallEnter | Kind::SyscallExit => {
                let ph = if ev.kind == Kind::SyscallEnter { "B" } else { "E" };
                head(&mut s, ph, "syscall", "syscall");
                let _ = write!(s, ",\"args\":{{\"goid\":{}}}}}", G(ev.a));
            }
            Kind::Steal => {
                head(&mut s, "i", "steal", "sched");
                let _ = write!(s, ",\"s\":\"t\",\"args\":{{\"from\":\"P {}\",\"gs\":{}}}}}", ev.a, ev.b);
            }
            Kind::Handoff => {
                head(&mut s, "i", "handoff", "sched");
                let _ = write!(s, ",\"s\":\"t\",\"args\":{{\"p\":\"P {}\"}}}}", ev.a);
            }
            Kind::Timers => {
                head(&mut s, "i", "timers", "timer");
                let _ = write!(s, ",\"s\":\"t\",\"args\":{{\"fired\":{}}}}}", ev.a);
            }
            Kind::RegionBegin | Kind::RegionEnd => {
                let ph = if ev.kind == Kind::RegionBegin { "b" } else { "e" };
                head(&mut s, ph, if ev.s1.is_empty() { "region" } else { ev.s1 }, "region");
                let _ = write!(s, ",\"id\":{},\"args\":{{\"goid\":{}", ev.b, G(ev.a));
                if ev.c != 0 {
                    let _ = write!(s, ",\"task\":{}", ev.c);
                }
                s.push_str("}}");
            }
            Kind::Log => {
                head(&mut s, "i", ev.s1, "log");
                let _ = write!(s, ",\"s\":\"t\",\"args\":{{\"goid\":{}", G(ev.a));
                if ev.b != 0 {
                    let _ = write!(s, ",\"task\":{}", ev.b);
                }
                s.push_str(",\"message\":");
                push_str(&mut s, ev.s2);
                s.push_str("}}");
            }
            Kind::TaskBegin | Kind::TaskEnd => {
                let ph = if ev.kind == Kind::TaskBegin { "b" } else { "e" };
                head(&mut s, ph, if ev.s1.is_empty() { "task" } else { ev.s1 }, "task");
                let _ = write!(s, ",\"id\":{},\"args\":{{\"task\":{},\"goid\":{}}}}}", ev.a, ev.a, G(ev.b));
            }
        }
        let r = self.raw(&s);
        self.line = s;
        r
    }
}

/// The flow id of a G's creation (the same id its first start carries: see `g::raw`).
pub(crate) fn flow_of_create(goid: u64) -> u64 {
    goid << 16
}

/// What a flow with this id is: a creation (`go`) or a wake-up.
fn flow_name(id: u64) -> &'static str {
    if id & 0xffff == 0 {
        "go"
    } else {
        "unblock"
    }
}

/// A spawn site from its address in an event.
fn site(addr: u64) -> String {
    if addr == 0 {
        return String::from("?");
    }
    // SAFETY: the event was written by this process from a `&'static Location` (`go_create`,
    // `go_start`), which lives as long as the program.
    let at: &'static Location<'static> = unsafe { &*(addr as usize as *const Location<'static>) };
    format!("{}:{}", at.file(), at.line())
}

/// A goid in JSON: `null` for none ([`NO_G`]: a thread that polls no G, a G spawned from
/// outside any).
struct G(u64);

impl std::fmt::Display for G {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            NO_G => f.write_str("null"),
            g => write!(f, "{g}"),
        }
    }
}

/// A timestamp in microseconds, to the nanosecond.
struct Ts(u64);

impl std::fmt::Display for Ts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// Appends `v` as a JSON string.
fn push_str(s: &mut String, v: &str) {
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let mut s = String::new();
        push_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn timestamps_are_microseconds_to_the_nanosecond() {
        assert_eq!(Ts(1_234_567).to_string(), "1234.567");
        assert_eq!(Ts(5).to_string(), "0.005");
    }
}
