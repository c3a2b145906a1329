//! What `goro::sync::Map` allocates, counted by a global allocator (its own test binary, so
//! that no other test's allocations are counted). Go's `sync.Map` allocates an entry and boxes
//! the value for every new key; goro's map keeps the first value inside its entry, carves entries
//! from blocks of 16, and makes one small box per overwrite.

use goro::sync::Map;
use std::cell::Cell;

/// The system allocator, counting the allocations each thread makes.
struct CountingAlloc;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to `System`; the counting touches no allocation.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // `try_with`: the allocator also runs while a thread's locals are being torn down.
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above; `ptr` came from `System.alloc`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Allocations this thread made while running `f`.
fn allocs_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

const KEYS: u64 = 20_000;

/// A new key's share of its entry's block.
const PER_KEY: u64 = KEYS / 16;

/// Beyond `PER_KEY`, per shard: its dirty table's first allocation and doublings, and its
/// partly carved block. 13 at most for `2 * KEYS` keys over the 4 shards of a 1-CPU machine
/// (4 to 16 384 buckets is 12 allocations), fewer with more shards.
const PER_SHARD: u64 = 16;

/// The map's shard count, as `Map`'s docs give it: 4 per CPU, rounded up to a power of two, at
/// most 64.
fn shards() -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    (4 * cpus).next_power_of_two().min(64)
}

/// Beyond one box per overwrite: each shard's tables growing, a dirty map rebuilt after a
/// promotion, the epoch's per-thread state.
const SLACK: u64 = KEYS / 10;

/// A cache that only grows (Go's first use case for `sync.Map`): `load_or_store` and `store` of
/// new keys make one allocation per 16 keys, and a few per shard as its table grows. (1 339
/// for the first 20 000 keys on a 2-CPU machine, against a bound of 1 378 there.)
#[test]
fn a_new_key_costs_a_sixteenth_of_an_allocation() {
    let bound = PER_KEY + PER_SHARD * shards();
    let m: Map<u64, u64> = Map::new();
    m.store(u64::MAX, 0); // the epoch's and the map's first-use allocations
    let n = allocs_in(|| {
        for k in 0..KEYS {
            assert_eq!(m.load_or_store(k, k), (k, false));
        }
    });
    assert!(n <= bound, "load_or_store of {KEYS} new keys made {n} allocations");
    let n = allocs_in(|| {
        for k in KEYS..2 * KEYS {
            m.store(k, k);
        }
    });
    assert!(n <= bound, "store of {KEYS} new keys made {n} allocations");
}

/// Loading present keys allocates nothing; overwriting one allocates its new value's box
/// (a value is immutable once stored, as Go's interface box is).
#[test]
fn loads_allocate_nothing_and_an_overwrite_one_box() {
    let m: Map<u64, u64> = Map::new();
    for k in 0..KEYS {
        m.store(k, k);
    }
    m.range(|_, _| true); // promotes every shard's dirty map: the keys are in `read`
    let n = allocs_in(|| {
        for k in 0..KEYS {
            assert_eq!(m.load(&k), Some(k));
        }
    });
    assert_eq!(n, 0, "{KEYS} loads of present keys made {n} allocations");
    let n = allocs_in(|| {
        for k in 0..KEYS {
            m.store(k, k + 1);
        }
    });
    assert!(n <= KEYS + SLACK, "{KEYS} overwrites made {n} allocations");
    for k in 0..KEYS {
        assert_eq!(m.load(&k), Some(k + 1));
    }
}
