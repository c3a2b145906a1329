//! Go's `bucket`s of the block and mutex profiles: one per distinct stack (and G origin), with
//! what was counted on it. A table is written only when an event is sampled, under its lock
//! (Go's `profBlockLock`); nothing else runs under it (no user code: the keys are addresses).

use super::record::{Frame, Record};
use super::stack::Resolver;
use crate::m::Origin;
use std::collections::HashMap;
use std::sync::Mutex;

/// A stack and the G it was sampled in.
#[derive(PartialEq, Eq, Hash)]
struct Key {
    ips: Box<[usize]>,
    origin: Option<Origin>,
}

/// Go's `blockRecord`: floats, since a sampled short block event counts `rate / delay` times.
#[derive(Default, Clone, Copy)]
struct Counts {
    count: f64,
    delay: f64,
}

/// One profile's buckets.
pub(crate) struct Table {
    buckets: Mutex<Option<HashMap<Key, Counts>>>,
}

impl Table {
    pub(crate) const fn new() -> Table {
        Table { buckets: Mutex::new(None) }
    }

    /// Adds `count` events and `delay` nanoseconds to the bucket of (`ips`, `origin`).
    pub(crate) fn add(&self, ips: Vec<usize>, origin: Option<Origin>, count: f64, delay: f64) {
        let key = Key { ips: ips.into_boxed_slice(), origin };
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let c = buckets.get_or_insert_with(HashMap::new).entry(key).or_default();
        c.count += count;
        c.delay += delay;
    }

    /// Every bucket as a record, symbolized (outside the lock: symbolizing is slow).
    pub(crate) fn records(&self) -> Vec<Record> {
        let snapshot: Vec<(Box<[usize]>, Option<Origin>, Counts)> = {
            let buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
            let Some(b) = buckets.as_ref() else { return Vec::new() };
            b.iter().map(|(k, c)| (k.ips.clone(), k.origin, *c)).collect()
        };
        // Symbolizing reads the binary's debug information (hundreds of milliseconds the first
        // time): a blocking call, so a G that reads a profile lets its P go meanwhile.
        let merged = crate::syscall(|| {
            let mut resolver = RESOLVER.lock().unwrap_or_else(|e| e.into_inner());
            let resolver = resolver.get_or_insert_with(Resolver::default);
            // Stacks that differ only below the cut (the scheduler's frames: a G polled after a
            // steal or from `runnext`) are one stack to the user.
            let mut merged: HashMap<Vec<Frame>, Counts> = HashMap::new();
            for (ips, origin, c) in snapshot {
                let m = merged.entry(resolver.stack(&ips, origin)).or_default();
                m.count += c.count;
                m.delay += c.delay;
            }
            merged
        });
        merged
            .into_iter()
            .map(|(stack, c)| Record::new(c.count.round() as i64, c.delay.round() as i64, stack))
            .collect()
    }
}

/// The symbols found so far, for every profile.
static RESOLVER: Mutex<Option<Resolver>> = Mutex::new(None);
