//! The events of a trace as they sit in a buffer: one compact record each, written by the
//! thread that saw it happen and decoded only by the thread that writes the trace out.
//!
//! A record is a kind byte, the P it happened on (`u16::MAX`: none), a timestamp (nanoseconds
//! since the trace's epoch), three integer arguments whose meaning depends on the kind, and up
//! to two strings (a user region's name, a log's category and message), each at most
//! [`MAX_STR`] bytes (longer ones are cut at a character boundary).

/// The longest string an event keeps.
pub(crate) const MAX_STR: usize = 1024;

/// The fixed part of a record: kind, P, timestamp, three arguments, two string lengths.
pub(crate) const FIXED: usize = 1 + 2 + 8 + 3 * 8 + 2 * 2;

/// No G: the goid of events on a thread that polls nothing.
pub(crate) const NO_G: u64 = u64::MAX;

/// No P (an event on a thread that holds none).
pub(crate) const NO_P: u16 = u16::MAX;

/// What happened. The arguments of each kind are named on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// `a`: the new G's goid, `b`: its parent's goid, `c`: its spawn site (a
    /// `&'static Location` as an address).
    GoCreate = 1,
    /// A poll of a G begins. `a`: goid, `b`: spawn site, `c`: the flow id of the wake-up (or
    /// creation) that made it runnable, 0 if none.
    GoStart,
    /// The poll ends. `a`: goid, `b`: a [`Stop`], string 1: Go's wait reason if it blocked.
    GoStop,
    /// A waiting G was made runnable. `a`: its goid, `b`: the waker's goid (`u64::MAX`: not a
    /// G), `c`: the flow id its next start will carry.
    GoUnblock,
    /// `a`: goid of a G that enters `goro::syscall` (or a `*_blocking` call).
    SyscallEnter,
    /// `a`: goid of the G back from it.
    SyscallExit,
    /// An M took Gs from another P's queue. `a`: the victim P, `b`: how many.
    Steal,
    /// A P was handed to another M (its own M is in a syscall or blocked). `a`: the P.
    Handoff,
    /// A P ran its expired timers. `a`: how many.
    Timers,
    /// `a`: goid, `b`: region id, `c`: its task (0: none), string 1: the region's name.
    RegionBegin,
    /// As `RegionBegin`.
    RegionEnd,
    /// `a`: goid, string 1: category, string 2: message.
    Log,
    /// `a`: task id, `b`: goid, string 1: the task's name.
    TaskBegin,
    /// `a`: task id, `b`: goid.
    TaskEnd,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        use Kind::*;
        Some(match v {
            1 => GoCreate,
            2 => GoStart,
            3 => GoStop,
            4 => GoUnblock,
            5 => SyscallEnter,
            6 => SyscallExit,
            7 => Steal,
            8 => Handoff,
            9 => Timers,
            10 => RegionBegin,
            11 => RegionEnd,
            12 => Log,
            13 => TaskBegin,
            14 => TaskEnd,
            _ => return None,
        })
    }
}

/// How a poll of a G ended (`GoStop`'s `b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Stop {
    /// It completed (or was cancelled, or panicked): the G is gone.
    Exit = 0,
    /// It returned `Pending` and waits (`c`: why).
    Block = 1,
    /// It returned `Pending` but was woken during the poll (a yield, a preemption): queued
    /// again at once.
    Requeue = 2,
}

impl Stop {
    pub(crate) fn from_u64(v: u64) -> Stop {
        match v {
            0 => Stop::Exit,
            1 => Stop::Block,
            _ => Stop::Requeue,
        }
    }
}

/// One decoded record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event<'a> {
    pub(crate) kind: Kind,
    pub(crate) p: u16,
    pub(crate) ts: u64,
    pub(crate) a: u64,
    pub(crate) b: u64,
    pub(crate) c: u64,
    pub(crate) s1: &'a str,
    pub(crate) s2: &'a str,
}

/// The bytes a record of these strings takes.
pub(crate) fn size(s1: &str, s2: &str) -> usize {
    FIXED + s1.len().min(MAX_STR) + s2.len().min(MAX_STR)
}

/// Appends a record to `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode(out: &mut Vec<u8>, kind: Kind, p: u16, ts: u64, a: u64, b: u64, c: u64, s1: &str, s2: &str) {
    let (s1, s2) = (cut(s1), cut(s2));
    out.push(kind as u8);
    out.extend_from_slice(&p.to_le_bytes());
    out.extend_from_slice(&ts.to_le_bytes());
    out.extend_from_slice(&a.to_le_bytes());
    out.extend_from_slice(&b.to_le_bytes());
    out.extend_from_slice(&c.to_le_bytes());
    out.extend_from_slice(&(s1.len() as u16).to_le_bytes());
    out.extend_from_slice(&(s2.len() as u16).to_le_bytes());
    out.extend_from_slice(s1.as_bytes());
    out.extend_from_slice(s2.as_bytes());
}

/// `s`, cut to at most [`MAX_STR`] bytes at a character boundary.
fn cut(s: &str) -> &str {
    if s.len() <= MAX_STR {
        return s;
    }
    let mut end = MAX_STR;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The records of a buffer, in the order they were written.
pub(crate) fn decode(mut bytes: &[u8]) -> impl Iterator<Item = Event<'_>> {
    std::iter::from_fn(move || {
        if bytes.len() < FIXED {
            return None;
        }
        let kind = Kind::from_u8(bytes[0])?;
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        let p = u16_at(1);
        let (ts, a, b, c) = (u64_at(3), u64_at(11), u64_at(19), u64_at(27));
        let (l1, l2) = (u16_at(35) as usize, u16_at(37) as usize);
        let rest = &bytes[FIXED..];
        if rest.len() < l1 + l2 {
            return None;
        }
        // Written from `&str`s by `encode`, cut at character boundaries.
        let s1 = std::str::from_utf8(&rest[..l1]).unwrap_or("");
        let s2 = std::str::from_utf8(&rest[l1..l1 + l2]).unwrap_or("");
        bytes = &rest[l1 + l2..];
        Some(Event { kind, p, ts, a, b, c, s1, s2 })
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn records_decode_as_they_were_encoded() {
        let mut buf = Vec::new();
        encode(&mut buf, Kind::GoStart, 3, 10, 7, 8, 9, "", "");
        encode(&mut buf, Kind::Log, NO_P, 11, 7, 0, 0, "cat", "héllo");
        let long = "é".repeat(MAX_STR);
        encode(&mut buf, Kind::RegionBegin, 0, 12, 1, 2, 0, &long, "");
        let evs: Vec<_> = decode(&buf).collect();
        assert_eq!(evs.len(), 3);
        assert_eq!((evs[0].kind, evs[0].p, evs[0].ts, evs[0].a, evs[0].b, evs[0].c), (Kind::GoStart, 3, 10, 7, 8, 9));
        assert_eq!((evs[1].p, evs[1].s1, evs[1].s2), (NO_P, "cat", "héllo"));
        assert_eq!(evs[2].s1.len(), MAX_STR);
        assert!(evs[2].s1.chars().all(|c| c == 'é'));
    }
}
