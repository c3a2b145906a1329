//! Unit tests with access to the internals: the read/dirty moves happen when Go's algorithm
//! says they do, and the invariants hold after each.

use super::Map;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// A value that counts its live instances.
#[derive(Debug)]
struct Counted(Arc<AtomicUsize>, u32);

impl Counted {
    fn new(live: &Arc<AtomicUsize>, v: u32) -> Counted {
        live.fetch_add(1, Relaxed);
        Counted(live.clone(), v)
    }
}

impl Clone for Counted {
    fn clone(&self) -> Counted {
        Counted::new(&self.0, self.1)
    }
}

impl PartialEq for Counted {
    fn eq(&self, other: &Counted) -> bool {
        self.1 == other.1
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

#[test]
fn new_keys_go_to_dirty_and_amend_read() {
    let m = Map::with_one_shard();
    assert_eq!(m.state(), (0, false, None, 0));
    m.store(1, 1);
    // dirtyLocked built an (empty) copy of read, then the key went in; read is amended.
    assert_eq!(m.state(), (0, true, Some(1), 0));
    m.store(2, 2);
    assert_eq!(m.state(), (0, true, Some(2), 0));
    m.check_invariants();
}

#[test]
fn promotion_after_len_dirty_misses() {
    let m = Map::with_one_shard();
    for k in 0..4 {
        m.store(k, k);
    }
    for i in 1..4 {
        assert_eq!(m.load(&0), Some(0));
        assert_eq!(m.state(), (0, true, Some(4), i), "miss {i} must not promote yet");
    }
    // The 4th miss pays for the copy: dirty becomes read.
    assert_eq!(m.load(&9), None); // a miss of an absent key counts too
    assert_eq!(m.state(), (4, false, None, 0));
    // Now loads hit read and take no lock: no more misses.
    for k in 0..4 {
        assert_eq!(m.load(&k), Some(k));
    }
    assert_eq!(m.state(), (4, false, None, 0));
    m.check_invariants();
}

#[test]
fn absent_key_with_clean_read_is_not_a_miss() {
    let m = Map::with_one_shard();
    m.store(1, 1);
    m.range(|_, _| true); // promotes
    assert_eq!(m.state(), (1, false, None, 0));
    assert_eq!(m.load(&2), None);
    assert_eq!(m.state(), (1, false, None, 0), "not amended: a read miss is final, no lock taken");
}

#[test]
fn dirty_rebuild_expunges_deleted_entries_and_store_unexpunges() {
    let m = Map::with_one_shard();
    for k in 0..3 {
        m.store(k, k);
    }
    m.range(|_, _| true); // promote: read = {0, 1, 2}
    m.delete(&1); // entry 1: nil, in read only
    assert_eq!(m.state(), (3, false, None, 0));
    m.store(10, 10); // first new key: dirty = read minus expunged 1, plus 10
    assert_eq!(m.state(), (3, true, Some(3), 0));
    m.check_invariants();
    assert_eq!(m.load(&1), None);
    // Storing to the expunged key unexpunges it and puts it back into dirty.
    m.store(1, 11);
    assert_eq!(m.state(), (3, true, Some(4), 0));
    m.check_invariants();
    m.range(|_, _| true);
    assert_eq!(m.state(), (4, false, None, 0));
    for (k, v) in [(0, 0), (1, 11), (2, 2), (10, 10)] {
        assert_eq!(m.load(&k), Some(v));
    }
}

/// Deleting the only new key of `dirty` leaves `read` amended with nothing new in `dirty` (as
/// in Go): lookups of absent keys keep taking the lock until the misses promote `dirty`.
#[test]
fn delete_of_the_only_new_key_leaves_read_amended() {
    let m = Map::with_one_shard();
    m.store(1, 1);
    m.store(2, 2);
    m.range(|_, _| true); // read = {1, 2}
    m.store(3, 3); // dirty = {1, 2, 3}, amended
    assert_eq!(m.load_and_delete(&3), Some(3)); // removed from dirty: one miss
    assert_eq!(m.state(), (2, true, Some(2), 1));
    m.check_invariants();
    assert_eq!(m.load(&3), None); // a second miss promotes
    assert_eq!(m.state(), (2, false, None, 0));
    m.check_invariants();
    assert_eq!((m.load(&1), m.load(&2), m.load(&3)), (Some(1), Some(2), None));
}

#[test]
fn load_or_store_on_expunged_entry() {
    let m = Map::with_one_shard();
    m.store(1, 1);
    m.range(|_, _| true);
    m.delete(&1);
    m.store(2, 2); // expunges 1
    assert_eq!(m.load_or_store(1, 5), (5, false));
    assert_eq!(m.load_or_store(1, 6), (5, true));
    m.check_invariants();
    assert_eq!(m.len(), 2);
}

#[test]
fn swap_and_delete_in_every_state() {
    let m = Map::with_one_shard();
    assert_eq!(m.swap(1, 1), None); // new key, dirty
    assert_eq!(m.swap(1, 2), Some(1)); // dirty only
    m.range(|_, _| true);
    assert_eq!(m.swap(1, 3), Some(2)); // read, lock-free
    assert_eq!(m.load_and_delete(&1), Some(3));
    assert_eq!(m.swap(1, 4), None); // nil entry in read: lock-free trySwap
    m.delete(&1);
    m.store(2, 0); // expunge 1
    assert_eq!(m.swap(1, 5), None); // expunged: locked unexpunge
    assert_eq!(m.load_and_delete(&2), Some(0)); // dirty only: removed from dirty, a miss...
    assert_eq!(m.state(), (1, false, None, 0)); // ...which promotes dirty = {1}
    assert_eq!(m.load(&1), Some(5));
    m.check_invariants();
}

#[test]
fn compare_ops_on_dirty_entries_count_misses() {
    let m = Map::with_one_shard();
    m.store(1, 1);
    m.store(2, 2);
    assert!(m.compare_and_swap(&1, &1, 10));
    assert_eq!(m.state(), (0, true, Some(2), 1));
    assert!(!m.compare_and_delete(&2, &3)); // found, no match: still a miss -> promotion
    assert_eq!(m.state(), (2, false, None, 0));
    assert!(m.compare_and_delete(&2, &2));
    assert!(!m.compare_and_swap(&3, &3, 3)); // absent, read clean: no lock
    assert_eq!(m.load(&1), Some(10));
    assert_eq!(m.load(&2), None);
}

#[test]
fn clear_keeps_dirty_non_nil_and_resets_misses() {
    let m = Map::with_one_shard();
    m.store(1, 1);
    m.load(&1); // one miss (dirty len 1): promotes
    m.store(2, 2); // dirty rebuilt
    m.clear();
    assert_eq!(m.state(), (0, false, Some(0), 0));
    assert!(m.is_empty());
    m.store(3, 3);
    assert_eq!(m.state(), (0, true, Some(1), 0));
    assert_eq!(m.load(&3), Some(3));
    m.check_invariants();
}

#[test]
fn borrowed_lookups() {
    let m: Map<String, Vec<u8>> = Map::with_one_shard();
    m.store("a".into(), vec![1]);
    assert_eq!(m.load("a"), Some(vec![1]));
    assert!(m.compare_and_swap("a", &vec![1], vec![2]));
    assert!(m.compare_and_delete("a", &vec![2]));
    m.store("b".into(), vec![]);
    m.delete("b");
    assert_eq!(m.load_and_delete("b"), None);
    assert!(m.is_empty());
}

#[test]
fn zero_sized_values() {
    let m = Map::with_one_shard();
    m.store(1, ());
    m.store(1, ());
    assert_eq!(m.swap(2, ()), None);
    assert_eq!(m.swap(2, ()), Some(()));
    assert!(m.compare_and_swap(&2, &(), ()));
    assert!(m.compare_and_delete(&1, &()));
    assert_eq!(m.len(), 1);
}

/// Live values are dropped by the map's drop itself, not later by the epoch collector, even
/// when retired snapshots still share their entries.
#[test]
fn drop_frees_live_values_at_once() {
    let live = Arc::new(AtomicUsize::new(0));
    {
        let m = Map::with_one_shard();
        for k in 0..50u32 {
            m.store(k, Counted::new(&live, k));
        }
        m.range(|_, _| true); // promote: the amended snapshot is retired, sharing the table
        for k in 50..60u32 {
            m.store(k, Counted::new(&live, k)); // new dirty; read retired again
        }
        assert_eq!(live.load(Relaxed), 60);
    }
    assert_eq!(live.load(Relaxed), 0);
}

/// A shard's block of entries outlives the shard's slab moving on (or the map going), and goes
/// with the last of its entries, whichever order they are dropped in.
#[test]
fn a_block_is_freed_with_its_last_entry() {
    use super::entry::{Entry, EntryRef};
    use super::slab::{block_len, Slab, LIVE_BLOCKS};
    const BLOCK: usize = block_len::<Entry<Counted>>();
    let blocks = || LIVE_BLOCKS.with(|n| n.get());
    let (live, before) = (Arc::new(AtomicUsize::new(0)), blocks());
    let mut slab = Slab::new();
    let mut first: Vec<EntryRef<Counted>> =
        (0..BLOCK as u32).map(|v| EntryRef::carve(&mut slab, Counted::new(&live, v))).collect();
    assert_eq!(blocks() - before, 1);
    let second = EntryRef::carve(&mut slab, Counted::new(&live, 99));
    assert_eq!(blocks() - before, 2, "a full block makes the slab start another");
    drop(slab);
    assert_eq!(blocks() - before, 2, "the slab's blocks stay for their entries");
    let last = first.remove(BLOCK / 2);
    drop(first);
    assert_eq!((blocks() - before, live.load(Relaxed)), (2, 2), "one entry keeps its block");
    drop(last);
    assert_eq!(blocks() - before, 1);
    let again = second.clone();
    drop(second);
    assert_eq!(blocks() - before, 1, "a block goes with its last entry, not its first reference");
    drop(again);
    assert_eq!((blocks() - before, live.load(Relaxed)), (0, 0));
}

/// A block is about 512 bytes of entries whatever the value's size: a large value's entry is a
/// block of its own, not one of 16.
#[test]
fn a_block_holds_what_fits_in_512_bytes() {
    use super::entry::Entry;
    use super::slab::block_len;
    assert_eq!(block_len::<Entry<u64>>(), 16);
    assert_eq!(block_len::<Entry<String>>(), 10);
    assert_eq!(block_len::<Entry<[u8; 200]>>(), 2);
    assert_eq!(block_len::<Entry<[u8; 4096]>>(), 1);
    assert_eq!(block_len::<Entry<()>>(), 16);
}

#[test]
fn check_invariants_catches_an_expunged_entry_in_dirty() {
    let m = Map::with_one_shard();
    m.store(1, 1);
    m.range(|_, _| true);
    m.delete(&1);
    m.store(2, 2); // 1 expunged
                   // Break invariant 1 by hand: put the expunged entry into dirty.
    {
        let s = &m.shards()[0];
        let g = s.reclaim.pin();
        let m = &s.load_read(&g).m;
        let e = m.get(m.hash(&1), &1).cloned().unwrap();
        s.mu.lock().m.as_mut().unwrap().insert(m.hash(&1), 1, e);
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.check_invariants()));
    assert!(r.is_err());
}

/// W13 (two Gs each storing new keys half the time): were every store of a new key to take one
/// lock for the whole map, the Gs would queue on each other and two would run 1.5-2x slower
/// than one alone. A key's store takes only its own shard's lock: with one shard's lock held
/// (as by a G in the middle of a store), a new key of another shard goes in at once. With one
/// lock for the whole map this store would wait for the lock, and the test fail on its timeout.
#[test]
fn a_new_key_does_not_wait_for_another_shards_lock() {
    let m = Arc::new(Map::<u64, u64>::new());
    assert!(m.shards().len() >= 4, "4 shards per CPU");
    let held = m.shard_index(&0);
    let other = (1..).find(|k| m.shard_index(k) != held).unwrap();
    let lock = m.shards()[held].mu.lock();
    let (done, waiting) = std::sync::mpsc::channel();
    let m2 = m.clone();
    std::thread::spawn(move || {
        m2.store(other, 1);
        done.send(()).unwrap();
    });
    let stored = waiting.recv_timeout(std::time::Duration::from_secs(30));
    drop(lock);
    stored.expect("a store into another shard waited for this shard's lock");
    assert_eq!(m.load(&other), Some(1));
    // And the held shard's own keys wait for it, as they must: after the unlock they go in.
    m.store(0, 0);
    assert_eq!(m.load(&0), Some(0));
    m.check_invariants();
}

/// A G whose store finds its shard's lock held by another thread (as by a G copying a large
/// `read` into a new dirty map, which takes milliseconds) waits as in `goro::syscall`: the G
/// queued behind it on its P runs meanwhile, and the wait is not taken for a plain blocking
/// call. Before, the thread slept on the lock holding the P, until sysmon took the P away a
/// time slice later, counted a blocked poll and told the user to wrap "a blocking call" in
/// `goro::syscall`; this test then failed on `blocked_polls`.
#[test]
fn a_g_waiting_for_a_shard_lock_lets_the_gs_behind_it_run() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::mpsc::channel;
    let m = Arc::new(Map::<u64, u64>::new());
    let (locked_tx, locked) = channel::<()>();
    let (release, released) = channel::<()>();
    let holder = {
        let m = m.clone();
        std::thread::spawn(move || {
            let _held = m.shards()[m.shard_index(&1)].mu.lock();
            locked_tx.send(()).unwrap();
            released.recv().unwrap();
        })
    };
    locked.recv().unwrap();
    let rt = goro::runtime::Builder::new().max_procs(1).build().unwrap();
    let (finished_tx, finished) = channel::<()>();
    let body = rt.spawn(async move {
        let waiting = Arc::new(AtomicBool::new(false));
        let storer = {
            let (m, waiting) = (m.clone(), waiting.clone());
            goro::go(async move {
                waiting.store(true, SeqCst);
                m.store(1, 1); // a new key: it goes in under its shard's lock
            })
        };
        // One P: once the storer has started, this G runs again only if the storer's wait let
        // the P go.
        while !waiting.load(SeqCst) {
            goro::runtime::yield_now().await;
        }
        release.send(()).unwrap();
        storer.await.unwrap();
        assert_eq!(m.load(&1), Some(1));
        finished_tx.send(()).unwrap();
    });
    // Bounded, so that a wait that keeps the P for good fails here instead of hanging the run.
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the storer's wait kept the only P: the G behind it never ran");
    body.join().unwrap();
    holder.join().unwrap();
    assert_eq!(rt.metrics().blocked_polls, 0, "a wait for the map's lock was taken for a blocked poll");
}
