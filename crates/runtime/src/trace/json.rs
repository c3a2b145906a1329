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
use std::collections::{BTreeMap, HashMap};
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
    sites: HashMap<u64, String>,
    line: Vec<u8>,
    name: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub(crate) fn new(w: W) -> Writer<W> {
        Writer {
            w,
            first: true,
            tracks: BTreeMap::new(),
            sites: HashMap::new(),
            line: Vec::with_capacity(256),
            name: Vec::with_capacity(64),
        }
    }

    pub(crate) fn begin(&mut self) -> io::Result<()> {
        self.w.write_all(b"{\"traceEvents\":[")?;
        self.raw(
            format!(
                "{{\"ph\":\"M\",\"pid\":{PID},\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":\"goro\"}}}}"
            )
            .as_bytes(),
        )
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
            self.raw(s.as_bytes())?;
            // P tracks first, in P order, then the threads.
            let mut s = String::new();
            let _ = write!(
                s,
                "{{\"ph\":\"M\",\"pid\":{PID},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}"
            );
            self.raw(s.as_bytes())?;
        }
        self.w.write_all(b"],\"displayTimeUnit\":\"ns\"}\n")?;
        self.w.flush()
    }

    fn raw(&mut self, obj: &[u8]) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        self.w.write_all(obj)
    }

    fn track(&mut self, p: u16, thread: u32) -> u64 {
        if p == NO_P {
            let tid = THREAD_TRACKS + u64::from(thread);
            self.tracks.entry(tid).or_insert_with(|| format!("thread {thread}"));
            tid
        } else {
            let tid = u64::from(p) + 1;
            self.tracks.entry(tid).or_insert_with(|| format!("P {p}"));
            tid
        }
    }

    /// The spawn site at `addr` as `file:line`, formatted once per site.
    fn site(&mut self, addr: u64) -> &str {
        self.sites.entry(addr).or_insert_with(|| site(addr))
    }

    fn event(&mut self, ev: &Event<'_>, thread: u32) -> io::Result<()> {
        let tid = self.track(ev.p, thread);
        // Two reused buffers: the event's JSON and a name made up for it (no allocation per
        // event once they have grown), written without `core::fmt` (this is the trace's
        // hottest loop, on the `goro-trace` thread).
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let mut name = std::mem::take(&mut self.name);
        name.clear();
        let j = &mut J(&mut line);
        let ts = ev.ts;
        let head = |j: &mut J<'_>, ph: &str, name: &[u8], cat: &str| {
            j.s("{\"ph\":\"").s(ph).s("\",\"pid\":1,\"tid\":").n(tid).s(",\"ts\":").ts(ts);
            j.s(",\"cat\":\"").s(cat).s("\",\"name\":").qb(name);
        };
        match ev.kind {
            Kind::GoCreate => {
                head(j, "i", "go".as_bytes(), "go");
                j.s(",\"s\":\"t\",\"args\":{\"goid\":").n(ev.a).s(",\"parent\":").g(ev.b).s(",\"at\":");
                j.q(self.site(ev.c)).s("}}");
                // The creation is the flow to the new G's first poll (see `go_create`'s caller).
                j.s(",\n{\"ph\":\"s\",\"pid\":1,\"tid\":").n(tid).s(",\"ts\":").ts(ts);
                j.s(",\"cat\":\"flow\",\"name\":\"go\",\"id\":").n(flow_of_create(ev.a)).s("}");
            }
            Kind::GoStart => {
                match ev.a {
                    0 => J(&mut name).s("main "),
                    g => J(&mut name).s("G").n(g).s(" "),
                };
                name.extend_from_slice(self.site(ev.b).as_bytes());
                head(j, "B", &name, "g");
                j.s(",\"args\":{\"goid\":").n(ev.a).s("}}");
                if ev.c != 0 {
                    j.s(",\n{\"ph\":\"f\",\"bp\":\"e\",\"pid\":1,\"tid\":").n(tid).s(",\"ts\":").ts(ts);
                    j.s(",\"cat\":\"flow\",\"name\":\"").s(flow_name(ev.c)).s("\",\"id\":").n(ev.c).s("}");
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
                    name.extend_from_slice(b"block: ");
                    name.extend_from_slice(why.as_bytes());
                    head(j, "i", &name, "block");
                    j.s(",\"s\":\"t\",\"args\":{\"goid\":").n(ev.a).s(",\"reason\":").q(why).s("}},\n");
                }
                j.s("{\"ph\":\"E\",\"pid\":1,\"tid\":").n(tid).s(",\"ts\":").ts(ts);
                j.s(",\"args\":{\"end\":").q(why).s("}}");
            }
            Kind::GoUnblock => {
                head(j, "s", "unblock".as_bytes(), "flow");
                j.s(",\"id\":").n(ev.c).s(",\"args\":{\"goid\":").n(ev.a);
                if ev.b != NO_G {
                    j.s(",\"by\":").n(ev.b);
                }
                j.s("}}");
            }
            Kind::SyscallEnter | Kind::SyscallExit => {
                let ph = if ev.kind == Kind::SyscallEnter { "B" } else { "E" };
                head(j, ph, "syscall".as_bytes(), "syscall");
                j.s(",\"args\":{\"goid\":").g(ev.a).s("}}");
            }
            Kind::Steal => {
                head(j, "i", "steal".as_bytes(), "sched");
                j.s(",\"s\":\"t\",\"args\":{\"from\":\"P ").n(ev.a).s("\",\"gs\":").n(ev.b).s("}}");
            }
            Kind::Handoff => {
                head(j, "i", "handoff".as_bytes(), "sched");
                j.s(",\"s\":\"t\",\"args\":{\"p\":\"P ").n(ev.a).s("\"}}");
            }
            Kind::Timers => {
                head(j, "i", "timers".as_bytes(), "timer");
                j.s(",\"s\":\"t\",\"args\":{\"fired\":").n(ev.a).s("}}");
            }
            Kind::RegionBegin | Kind::RegionEnd => {
                let ph = if ev.kind == Kind::RegionBegin { "b" } else { "e" };
                head(j, ph, if ev.s1.is_empty() { "region" } else { ev.s1 }.as_bytes(), "region");
                j.s(",\"id\":").n(ev.b).s(",\"args\":{\"goid\":").g(ev.a);
                if ev.c != 0 {
                    j.s(",\"task\":").n(ev.c);
                }
                j.s("}}");
            }
            Kind::Log => {
                head(j, "i", ev.s1.as_bytes(), "log");
                j.s(",\"s\":\"t\",\"args\":{\"goid\":").g(ev.a);
                if ev.b != 0 {
                    j.s(",\"task\":").n(ev.b);
                }
                j.s(",\"message\":").q(ev.s2).s("}}");
            }
            Kind::TaskBegin | Kind::TaskEnd => {
                let ph = if ev.kind == Kind::TaskBegin { "b" } else { "e" };
                head(j, ph, if ev.s1.is_empty() { "task" } else { ev.s1 }.as_bytes(), "task");
                j.s(",\"id\":").n(ev.a).s(",\"args\":{\"task\":").n(ev.a).s(",\"goid\":").g(ev.b).s("}}");
            }
        }
        let r = self.raw(&line);
        self.line = line;
        self.name = name;
        r
    }
}

/// Appends JSON to a buffer, without `core::fmt` (the buffer only ever receives `&str`s and
/// ASCII, so it holds UTF-8).
struct J<'a>(&'a mut Vec<u8>);

impl J<'_> {
    /// Text as it is.
    fn s(&mut self, v: &str) -> &mut Self {
        self.0.extend_from_slice(v.as_bytes());
        self
    }

    /// A number.
    fn n(&mut self, mut v: u64) -> &mut Self {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.0.extend_from_slice(&buf[i..]);
        self
    }

    /// A goid: `null` for none ([`NO_G`]: a thread that polls no G, a G spawned from outside
    /// any).
    fn g(&mut self, v: u64) -> &mut Self {
        if v == NO_G {
            self.s("null")
        } else {
            self.n(v)
        }
    }

    /// A timestamp in microseconds, to the nanosecond.
    fn ts(&mut self, ns: u64) -> &mut Self {
        self.n(ns / 1000);
        let frac = ns % 1000;
        self.0.extend_from_slice(&[
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ]);
        self
    }

    /// A JSON string.
    fn q(&mut self, v: &str) -> &mut Self {
        self.qb(v.as_bytes())
    }

    /// A JSON string, from UTF-8 bytes.
    fn qb(&mut self, v: &[u8]) -> &mut Self {
        push_str(self.0, v);
        self
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

/// Appends `v` as a JSON string.
fn push_str(s: &mut Vec<u8>, v: &[u8]) {
    s.push(b'"');
    if !v.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        s.extend_from_slice(v);
        s.push(b'"');
        return;
    }
    for c in String::from_utf8_lossy(v).chars() {
        match c {
            '"' => s.extend_from_slice(b"\\\""),
            '\\' => s.extend_from_slice(b"\\\\"),
            '\n' => s.extend_from_slice(b"\\n"),
            '\r' => s.extend_from_slice(b"\\r"),
            '\t' => s.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let v = c as usize;
                s.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[v >> 4], HEX[v & 15]]);
            }
            c => {
                let mut b = [0u8; 4];
                s.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    s.push(b'"');
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let mut s = Vec::new();
        push_str(&mut s, "a\"b\\c\nd\u{1}é".as_bytes());
        assert_eq!(String::from_utf8(s).unwrap(), r#""a\"b\\c\nd\u0001é""#);
        let mut s = Vec::new();
        push_str(&mut s, b"plain");
        assert_eq!(s, b"\"plain\"");
    }

    #[test]
    fn numbers_and_timestamps() {
        let mut s = Vec::new();
        J(&mut s).n(0).s(" ").n(u64::MAX).s(" ").g(NO_G).s(" ").ts(1_234_567).s(" ").ts(5).s(" ").ts(1000);
        assert_eq!(String::from_utf8(s).unwrap(), "0 18446744073709551615 null 1234.567 0.005 1.000");
    }
}
