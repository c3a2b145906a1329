//! Sync benchmarks W9–W14 of benches/README.md: goro's `WaitGroup`, `Mutex` and `Map` against tokio's
//! primitives, parking_lot, dashmap and `std::sync::RwLock<HashMap>`.
//!
//! Each workload is written once, generic over an executor ([`Exec`]: spawn, and run a main) and
//! the primitive under test ([`BenchWaitGroup`], [`BenchMutex`], [`BenchMap`]), so every row runs
//! the exact same code. The tasks count what they did and report it to a [`Tally`]; main checks
//! the totals after every run, so a broken row cannot look fast.
//!
//! Rows and where they run (benches/README.md: 2 workers everywhere, main a task on its runtime; goro
//! rows on a goro runtime with `max_procs(2)`, Gs spawned with `goro::go`, main the `block_on`
//! future; every other row on one tokio multi-thread runtime with 2 workers, tasks
//! `tokio::spawn`ed, main a spawned task too):
//! - W9 `waitgroup`: 4 tasks each do 250_000 `add(1)`/`done()` pairs on one wait group that also
//!   counts the 4 tasks themselves (main `add(4)`s, each task `done()`s once at its end), so main's
//!   `wait` returns when all 4 are through; each task adds its pair count to a shared atomic before
//!   its last `done()`, and main checks 1_000_000 after the wait (an early wake-up shows).
//!   Unit: one pair. Rows: `goro` (`goro::sync::WaitGroup`), `tokio_notify` (`NotifyWaitGroup`
//!   of `common/notify_wg.rs`: an `AtomicUsize` counter plus a `tokio::sync::Notify`; tokio has
//!   no wait group).
//! - W10 `mutex_contended`: 4 tasks each increment a `u64` under one mutex 250_000 times; main
//!   checks the counter is 1_000_000. Unit: one increment. Rows: `goro` (`goro::sync::Mutex`,
//!   `lock().await`), `tokio_mutex` (`tokio::sync::Mutex`), `parking_lot` (`parking_lot::Mutex`,
//!   a blocking lock, taken by tasks on the tokio runtime).
//! - W11–W14, maps of `u64` to `u64` with each map's default hasher (std's `RandomState` for
//!   all; under it goro's `Map` hashes integer keys with its own keyed folded multiply, as Go's
//!   map hashes with its own AES or multiply hash, dashmap and `HashMap` with SipHash), 2
//!   tasks. Rows: `goro` (`goro::sync::Map`, see below), `dashmap` (`dashmap::DashMap`, default
//!   shard count), `rwlock_hashmap` (`std::sync::RwLock<std::collections::HashMap>`). The two
//!   peers' `load_or_store` first looks under the read lock and takes the write lock (dashmap:
//!   the shard's, through `entry`) only for a key it did not find. Each run builds a fresh map,
//!   preloads it with `load_or_store(k, k)` for `k` in `0..keys` and primes it with `2 * keys`
//!   loads of `k % keys`, as Go's `sync/map_bench_test.go` does; that setup is outside the timed
//!   part, as `b.ResetTimer()` puts it there: the time runs from just before main spawns the 2
//!   tasks to main waking up after both are done (dropping the map is outside too). Task `g`
//!   (0 or 1) runs over its own index range `i in g * per .. (g + 1) * per` (Go's `id * b.N`).
//!   - W11 `map_load_hits`: 1_024 keys; 1_000_000 loads per task of key `i % 1024`. Checked:
//!     2_000_000 hits, each with value == key. Unit: one load.
//!   - W12 `map_load_misses`: 1_024 keys; 1_000_000 loads per task, even `i` of present key
//!     `(i / 2) % 1024`, odd `i` of absent key `1024 + (i / 2) % 1024`. Checked: exactly
//!     1_000_000 hits (value == key) and 1_000_000 misses. Unit: one load.
//!   - W13 `map_load_or_store_balanced`: Go's `BenchmarkLoadOrStoreBalanced` with 2 tasks of
//!     500_000 ops: 128 keys preloaded; for each `i`, `j = i % 256`; `j < 128` does
//!     `load_or_store(j, i)`, which must load the preloaded value `j`; `j >= 128` does
//!     `load_or_store(i, i)` of a key never seen before (the index ranges are disjoint and
//!     `i >= 128`), which must store. Over `i in 0..1_000_000` that is 500_032 loads and
//!     499_968 stores (1_000_000 = 3906 * 256 + 64, the last 64 all `j < 128`); both counts and
//!     every returned value are checked. The map ends each run with 500_096 keys. Unit: one op.
//!   - W14 `map_mixed_90_10`: 1_024 keys; 1_000_000 ops per task on key `i % 1024`: `i % 10 == 9`
//!     stores `i` (an existing key), the rest load. Checked: 1_800_000 loads, all hits with
//!     `value % 1024 == key`, and 200_000 stores. Unit: one op.
//!
//! goro::sync::Map's `BenchMap` impl and rows sit in the module [`goro_map`].
//!
//! Criterion reports the time of one whole run (W11–W14: its timed part) and the throughput in
//! elements (= units) per second; ns per unit = 1e9 / thrpt, or `median` of
//! `target/criterion/<group>/<row>/new/estimates.json` divided by the unit count. Runs are long
//! (tens to hundreds of ms), so the groups use flat sampling: 10 samples of the same number of
//! runs.
//!
//! `cargo bench -p goro-benches --bench sync -- dashmap` runs only the dashmap rows, `-- W10`
//! only W10.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};

/// W9: tasks, and `add(1)`/`done()` pairs per task.
const WG_TASKS: u64 = 4;
const WG_PAIRS: u64 = 250_000;
/// W10: tasks, and increments per task.
const MUTEX_TASKS: u64 = 4;
const MUTEX_INCREMENTS: u64 = 250_000;
/// W11–W14: tasks per run.
const MAP_TASKS: u64 = 2;

#[path = "common/mod.rs"]
mod common;
use common::exec::{group, row, Exec, Goro, Runtimes, Tokio};
use common::notify_wg::NotifyWaitGroup;
use common::signal::Signal;

/// How one run ends: every task reports once, with two counts of what it did (e.g. hits and
/// misses); the last report wakes main, which checks the totals.
struct Tally {
    left: AtomicUsize,
    a: AtomicU64,
    b: AtomicU64,
    done: Signal,
}

impl Tally {
    fn new(tasks: u64) -> Arc<Tally> {
        Arc::new(Tally {
            left: AtomicUsize::new(tasks as usize),
            a: AtomicU64::new(0),
            b: AtomicU64::new(0),
            done: Signal::default(),
        })
    }

    fn report(&self, a: u64, b: u64) {
        self.a.fetch_add(a, Ordering::Relaxed);
        self.b.fetch_add(b, Ordering::Relaxed);
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.set();
        }
    }

    /// Waits for every task; returns the sums of their two counts.
    async fn wait(&self) -> (u64, u64) {
        self.done.wait().await;
        (self.a.load(Ordering::Relaxed), self.b.load(Ordering::Relaxed))
    }
}

// ---- W9: wait groups ----

/// A wait group as W9 uses it.
trait BenchWaitGroup: Send + Sync + 'static {
    fn new() -> Self;
    fn add(&self, n: usize);
    fn done(&self);
    fn wait(&self) -> impl Future<Output = ()> + Send + '_;
}

impl BenchWaitGroup for goro::sync::WaitGroup {
    fn new() -> Self {
        goro::sync::WaitGroup::new()
    }
    fn add(&self, n: usize) {
        goro::sync::WaitGroup::add(self, n as isize);
    }
    fn done(&self) {
        goro::sync::WaitGroup::done(self);
    }
    fn wait(&self) -> impl Future<Output = ()> + Send + '_ {
        goro::sync::WaitGroup::wait(self)
    }
}

impl BenchWaitGroup for NotifyWaitGroup {
    fn new() -> Self {
        NotifyWaitGroup::new()
    }
    fn add(&self, n: usize) {
        NotifyWaitGroup::add(self, n);
    }
    fn done(&self) {
        NotifyWaitGroup::done(self);
    }
    fn wait(&self) -> impl Future<Output = ()> + Send + '_ {
        NotifyWaitGroup::wait(self)
    }
}

const W9: &str = "W9_waitgroup";

/// W9 waitgroup (see the module docs).
async fn waitgroup<E: Exec, W: BenchWaitGroup>() -> Duration {
    let start = Instant::now();
    let wg = Arc::new(W::new());
    let pairs = Arc::new(AtomicU64::new(0));
    wg.add(WG_TASKS as usize);
    for _ in 0..WG_TASKS {
        let (wg, pairs) = (wg.clone(), pairs.clone());
        E::spawn(async move {
            for _ in 0..WG_PAIRS {
                wg.add(1);
                wg.done();
            }
            pairs.fetch_add(WG_PAIRS, Ordering::Relaxed);
            wg.done(); // published to main by the wait group itself
        });
    }
    wg.wait().await;
    let elapsed = start.elapsed();
    assert_eq!(pairs.load(Ordering::Relaxed), WG_TASKS * WG_PAIRS, "{W9}: wait returned early");
    elapsed
}

// ---- W10: mutexes ----

/// A mutex around a `u64` counter, as W10 uses it.
trait BenchMutex: Send + Sync + 'static {
    fn new() -> Self;
    fn increment(&self) -> impl Future<Output = ()> + Send + '_;
    fn get(&self) -> impl Future<Output = u64> + Send + '_;
}

impl BenchMutex for goro::sync::Mutex<u64> {
    fn new() -> Self {
        goro::sync::Mutex::new(0)
    }
    async fn increment(&self) {
        *self.lock().await += 1;
    }
    async fn get(&self) -> u64 {
        *self.lock().await
    }
}

impl BenchMutex for tokio::sync::Mutex<u64> {
    fn new() -> Self {
        tokio::sync::Mutex::new(0)
    }
    async fn increment(&self) {
        *self.lock().await += 1;
    }
    async fn get(&self) -> u64 {
        *self.lock().await
    }
}

/// A blocking lock, held for one increment and never across an await.
impl BenchMutex for parking_lot::Mutex<u64> {
    fn new() -> Self {
        parking_lot::Mutex::new(0)
    }
    async fn increment(&self) {
        *self.lock() += 1;
    }
    async fn get(&self) -> u64 {
        *self.lock()
    }
}

const W10: &str = "W10_mutex_contended";

/// W10 mutex_contended (see the module docs).
async fn mutex_contended<E: Exec, M: BenchMutex>() -> Duration {
    let start = Instant::now();
    let m = Arc::new(M::new());
    let tally = Tally::new(MUTEX_TASKS);
    for _ in 0..MUTEX_TASKS {
        let (m, t) = (m.clone(), tally.clone());
        E::spawn(async move {
            for _ in 0..MUTEX_INCREMENTS {
                m.increment().await;
            }
            t.report(MUTEX_INCREMENTS, 0);
        });
    }
    let (reported, _) = tally.wait().await;
    let elapsed = start.elapsed();
    assert_eq!((reported, m.get().await), (MUTEX_TASKS * MUTEX_INCREMENTS, reported), "{W10}: lost an increment");
    elapsed
}

// ---- W11–W14: maps ----

/// A concurrent map of `u64` to `u64`, as W11–W14 use it (the subset of Go's `sync.Map` they
/// need, with its signatures).
trait BenchMap: Send + Sync + 'static {
    fn new() -> Self;
    fn load(&self, k: &u64) -> Option<u64>;
    fn store(&self, k: u64, v: u64);
    /// The value now under `k`, and whether it was there already (else `v` was stored).
    fn load_or_store(&self, k: u64, v: u64) -> (u64, bool);
}

impl BenchMap for dashmap::DashMap<u64, u64> {
    fn new() -> Self {
        dashmap::DashMap::new()
    }
    fn load(&self, k: &u64) -> Option<u64> {
        self.get(k).map(|v| *v)
    }
    fn store(&self, k: u64, v: u64) {
        self.insert(k, v);
    }
    fn load_or_store(&self, k: u64, v: u64) -> (u64, bool) {
        if let Some(old) = self.get(&k) {
            return (*old, true);
        }
        match self.entry(k) {
            dashmap::Entry::Occupied(e) => (*e.get(), true),
            dashmap::Entry::Vacant(e) => {
                e.insert(v);
                (v, false)
            }
        }
    }
}

/// `std::sync::RwLock<HashMap>`, the plain way to share a map.
struct RwLockHashMap(RwLock<HashMap<u64, u64>>);

impl BenchMap for RwLockHashMap {
    fn new() -> Self {
        RwLockHashMap(RwLock::new(HashMap::new()))
    }
    fn load(&self, k: &u64) -> Option<u64> {
        self.0.read().unwrap().get(k).copied()
    }
    fn store(&self, k: u64, v: u64) {
        self.0.write().unwrap().insert(k, v);
    }
    fn load_or_store(&self, k: u64, v: u64) -> (u64, bool) {
        if let Some(&old) = self.0.read().unwrap().get(&k) {
            return (old, true);
        }
        match self.0.write().unwrap().entry(k) {
            std::collections::hash_map::Entry::Occupied(e) => (*e.get(), true),
            std::collections::hash_map::Entry::Vacant(e) => (*e.insert(v), false),
        }
    }
}

/// One map workload of benches/README.md, written once for every [`BenchMap`].
trait MapWorkload: 'static {
    /// The criterion group, e.g. `W11_map_load_hits`.
    const NAME: &'static str;
    /// Keys preloaded (with value = key) before the timed part.
    const KEYS: u64;
    /// Operations per task.
    const PER_TASK: u64;
    /// The totals of the two counts that every run must report.
    const EXPECTED: (u64, u64);
    /// One task's work over its index range; returns its two counts.
    fn task<M: BenchMap>(m: &M, indices: std::ops::Range<u64>) -> (u64, u64);
}

/// One run of `W` on map `M`: fresh map, preload and prime (untimed), then the timed part: spawn
/// the tasks and wait for all of them. Returns the timed part's duration.
async fn map_run<E: Exec, M: BenchMap, W: MapWorkload>() -> Duration {
    let m = Arc::new(M::new());
    for k in 0..W::KEYS {
        assert_eq!(m.load_or_store(k, k), (k, false), "{}: preload", W::NAME);
    }
    for i in 0..2 * W::KEYS {
        assert_eq!(m.load(&(i % W::KEYS)), Some(i % W::KEYS), "{}: priming", W::NAME);
    }
    let tally = Tally::new(MAP_TASKS);
    let start = Instant::now();
    for g in 0..MAP_TASKS {
        let (m, t) = (m.clone(), tally.clone());
        E::spawn(async move {
            let (a, b) = W::task(&*m, g * W::PER_TASK..(g + 1) * W::PER_TASK);
            t.report(a, b);
        });
    }
    let counts = tally.wait().await;
    let elapsed = start.elapsed();
    assert_eq!(counts, W::EXPECTED, "{}: wrong counts", W::NAME);
    elapsed // the map is dropped here, after the clock stopped
}

/// W11 map_load_hits. Counts: (hits, misses).
struct LoadHits;
impl MapWorkload for LoadHits {
    const NAME: &'static str = "W11_map_load_hits";
    const KEYS: u64 = 1_024;
    const PER_TASK: u64 = 1_000_000;
    const EXPECTED: (u64, u64) = (MAP_TASKS * Self::PER_TASK, 0);
    fn task<M: BenchMap>(m: &M, indices: std::ops::Range<u64>) -> (u64, u64) {
        let (mut hits, mut misses) = (0, 0);
        for i in indices {
            let k = i % Self::KEYS;
            match m.load(&k) {
                Some(v) => {
                    assert_eq!(v, k, "{}: wrong value", Self::NAME);
                    hits += 1;
                }
                None => misses += 1,
            }
        }
        (hits, misses)
    }
}

/// W12 map_load_misses. Counts: (hits, misses).
struct LoadMisses;
impl MapWorkload for LoadMisses {
    const NAME: &'static str = "W12_map_load_misses";
    const KEYS: u64 = 1_024;
    const PER_TASK: u64 = 1_000_000;
    const EXPECTED: (u64, u64) = (MAP_TASKS * Self::PER_TASK / 2, MAP_TASKS * Self::PER_TASK / 2);
    fn task<M: BenchMap>(m: &M, indices: std::ops::Range<u64>) -> (u64, u64) {
        let (mut hits, mut misses) = (0, 0);
        for i in indices {
            // Even i: present key (i/2) % 1024; odd i: absent key 1024 + (i/2) % 1024.
            let k = (i / 2) % Self::KEYS + (i % 2) * Self::KEYS;
            match m.load(&k) {
                Some(v) => {
                    assert_eq!(v, k, "{}: wrong value", Self::NAME);
                    hits += 1;
                }
                None => misses += 1,
            }
        }
        (hits, misses)
    }
}

/// W13 map_load_or_store_balanced, Go's `BenchmarkLoadOrStoreBalanced`. Counts: (loaded, stored).
struct LoadOrStoreBalanced;
impl LoadOrStoreBalanced {
    const HITS: u64 = 128;
    const MISSES: u64 = 128;
}
impl MapWorkload for LoadOrStoreBalanced {
    const NAME: &'static str = "W13_map_load_or_store_balanced";
    const KEYS: u64 = Self::HITS;
    const PER_TASK: u64 = 500_000;
    // Over i in 0..1_000_000: 3906 full cycles of 256 (128 loads + 128 stores each), then 64
    // indices with j = i % 256 < 128, all loads.
    const EXPECTED: (u64, u64) = (500_032, 499_968);
    fn task<M: BenchMap>(m: &M, indices: std::ops::Range<u64>) -> (u64, u64) {
        let (mut loaded, mut stored) = (0, 0);
        for i in indices {
            let j = i % (Self::HITS + Self::MISSES);
            if j < Self::HITS {
                let (v, was_loaded) = m.load_or_store(j, i);
                assert!(was_loaded && v == j, "{}: unexpected miss for {j}", Self::NAME);
                loaded += 1;
            } else {
                let (v, was_loaded) = m.load_or_store(i, i);
                assert!(!was_loaded && v == i, "{}: failed to store {i}: existing value {v}", Self::NAME);
                stored += 1;
            }
        }
        (loaded, stored)
    }
}

/// W14 map_mixed_90_10. Counts: (load hits, stores).
struct Mixed9010;
impl MapWorkload for Mixed9010 {
    const NAME: &'static str = "W14_map_mixed_90_10";
    const KEYS: u64 = 1_024;
    const PER_TASK: u64 = 1_000_000;
    const EXPECTED: (u64, u64) = (MAP_TASKS * Self::PER_TASK / 10 * 9, MAP_TASKS * Self::PER_TASK / 10);
    fn task<M: BenchMap>(m: &M, indices: std::ops::Range<u64>) -> (u64, u64) {
        let (mut hits, mut stores) = (0, 0);
        for i in indices {
            let k = i % Self::KEYS;
            if i % 10 == 9 {
                m.store(k, i);
                stores += 1;
            } else if let Some(v) = m.load(&k) {
                // The preloaded k, or some stored i with i % 1024 == k.
                assert_eq!(v % Self::KEYS, k, "{}: wrong value", Self::NAME);
                hits += 1;
            }
        }
        (hits, stores)
    }
}

/// goro::sync::Map's rows.
mod goro_map {
    use super::*;

    impl BenchMap for goro::sync::Map<u64, u64> {
        fn new() -> Self {
            goro::sync::Map::new()
        }
        fn load(&self, k: &u64) -> Option<u64> {
            goro::sync::Map::load(self, k)
        }
        fn store(&self, k: u64, v: u64) {
            goro::sync::Map::store(self, k, v);
        }
        fn load_or_store(&self, k: u64, v: u64) -> (u64, bool) {
            goro::sync::Map::load_or_store(self, k, v)
        }
    }

    /// Adds the `goro` row of workload `W` to `g`.
    pub(super) fn row<W: MapWorkload>(g: &mut BenchmarkGroup<'_, WallTime>, rts: &Runtimes) {
        super::row::<Goro, _>(g, "goro", rts, map_run::<Goro, goro::sync::Map<u64, u64>, W>);
    }
}

// ---- harness ----

/// W11–W14: a row per map, goro's first.
fn map_group<W: MapWorkload>(c: &mut Criterion, rts: &Runtimes) {
    let mut g = group(c, W::NAME, MAP_TASKS * W::PER_TASK);
    goro_map::row::<W>(&mut g, rts);
    row::<Tokio, _>(&mut g, "dashmap", rts, map_run::<Tokio, dashmap::DashMap<u64, u64>, W>);
    row::<Tokio, _>(&mut g, "rwlock_hashmap", rts, map_run::<Tokio, RwLockHashMap, W>);
    g.finish();
}

fn benches(c: &mut Criterion) {
    let rts = Runtimes::default();

    let mut g = group(c, W9, WG_TASKS * WG_PAIRS);
    row::<Goro, _>(&mut g, "goro", &rts, waitgroup::<Goro, goro::sync::WaitGroup>);
    row::<Tokio, _>(&mut g, "tokio_notify", &rts, waitgroup::<Tokio, NotifyWaitGroup>);
    g.finish();

    let mut g = group(c, W10, MUTEX_TASKS * MUTEX_INCREMENTS);
    row::<Goro, _>(&mut g, "goro", &rts, mutex_contended::<Goro, goro::sync::Mutex<u64>>);
    row::<Tokio, _>(&mut g, "tokio_mutex", &rts, mutex_contended::<Tokio, tokio::sync::Mutex<u64>>);
    row::<Tokio, _>(&mut g, "parking_lot", &rts, mutex_contended::<Tokio, parking_lot::Mutex<u64>>);
    g.finish();

    map_group::<LoadHits>(c, &rts);
    map_group::<LoadMisses>(c, &rts);
    map_group::<LoadOrStoreBalanced>(c, &rts);
    map_group::<Mixed9010>(c, &rts);
}

criterion_group!(sync, benches);
criterion_main!(sync);
