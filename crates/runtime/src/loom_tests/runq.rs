//! Models of the run queue ([`Local`] and [`Steal`]): the owner pushes (past [`CAP`], so the ring overflows) and pops
//! while thieves steal half of it into their own queues.
//!
//! Items are the numbers `0..n`. Every thread records the numbers it took (the owner also
//! records the overflow batches, which stand in for the global queue); at the end each number
//! must have been taken exactly once: nothing lost, nothing duplicated.

use super::model;
use crate::runq::{self, Local, Steal, CAP};
use loom::sync::Arc;
use loom::thread;
use std::ptr::NonNull;

/// The items: pointers into a static table, so a duplicated item is a wrong count the final
/// check reports (not a double free), and a lost one leaks nothing.
static ITEMS: [usize; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

fn item(v: usize) -> NonNull<usize> {
    NonNull::from(&ITEMS[v])
}

fn take(p: NonNull<usize>) -> usize {
    // SAFETY: every item points into `ITEMS`, which is never written.
    unsafe { *p.as_ptr() }
}

/// Pushes `v` at the tail as the owner, recording an overflow batch as taken.
fn push_back(q: &mut Local<usize>, v: usize, got: &mut Vec<usize>) {
    q.push_back(item(v), |batch| {
        assert_eq!(batch.iter().count(), CAP / 2 + 1, "an overflow moves half the ring plus the new item");
        got.extend(batch.iter().map(take));
    });
}

/// Pushes `v` into `runnext` as the owner, recording an overflow batch as taken.
fn push_next(q: &mut Local<usize>, v: usize, got: &mut Vec<usize>) {
    q.push_next(item(v), |batch| got.extend(batch.iter().map(take)));
}

/// Pops everything from the ring (owner only).
fn pop_all(q: &mut Local<usize>, got: &mut Vec<usize>) {
    while let Some(p) = q.pop() {
        got.push(take(p));
    }
}

/// A thief: steals from `victim` into its own (empty) queue `mine`, then runs what it stole.
/// Checks the count `steal_into` reports against what actually arrived.
fn steal(victim: &Steal<usize>, mine: &mut Local<usize>, runnext: bool, got: &mut Vec<usize>) {
    // The pause before a runnext steal goes straight on: it is only a timing heuristic, and a
    // `thread::yield_now` there would make loom always let the victim run first (a yielded
    // thread is not rescheduled while another can make progress), hiding the race between the
    // victim's `pop_runnext` and the thief's CAS.
    let stolen = victim.steal_into(mine, runnext, || true);
    if let Some((first, n)) = stolen {
        let before = got.len();
        got.push(take(first));
        pop_all(mine, got);
        assert_eq!(got.len() - before, n, "steal_into reported {n} items");
        assert!(n <= CAP / 2, "a thief takes at most half the ring");
    }
    assert!(mine.is_empty());
}

fn assert_each_once(mut got: Vec<usize>, n: usize) {
    got.sort_unstable();
    assert_eq!(got, (0..n).collect::<Vec<_>>(), "every item is taken exactly once");
}

/// Owner pushes `CAP + 1` items at the tail (so the ring overflows unless the thief got in
/// first), then pops the rest; one thief steals once and runs what it got. Every item is taken
/// exactly once, whether it went through the overflow batch, the owner's pops or the thief.
#[test]
fn loom_runq_push_overflow_pop_vs_steal() {
    model(|| {
        let n = CAP + 1;
        let (mut victim, stealer) = runq::new();
        let thief = {
            thread::spawn(move || {
                let (mut mine, _) = runq::new();
                let mut got = Vec::new();
                steal(&stealer, &mut mine, false, &mut got);
                got
            })
        };
        let mut got = Vec::new();
        {
            for v in 0..n {
                push_back(&mut victim, v, &mut got);
            }
            pop_all(&mut victim, &mut got);
        }
        got.extend(thief.join().unwrap());
        assert!(victim.is_empty());
        assert_each_once(got, n);
    });
}

/// The owner pops while it pushes (so `head` moves under the thief's feet from both sides), and
/// the ring wraps: push 3, pop 1, push 3 (overflow possible), pop the rest; one thief steals.
#[test]
fn loom_runq_wrap_pop_vs_steal() {
    model(|| {
        let n = 6;
        let (mut victim, stealer) = runq::new();
        let thief = {
            thread::spawn(move || {
                let (mut mine, _) = runq::new();
                let mut got = Vec::new();
                steal(&stealer, &mut mine, false, &mut got);
                got
            })
        };
        let mut got = Vec::new();
        {
            for v in 0..3 {
                push_back(&mut victim, v, &mut got);
            }
            if let Some(p) = victim.pop() {
                got.push(take(p));
            }
            for v in 3..n {
                push_back(&mut victim, v, &mut got);
            }
            pop_all(&mut victim, &mut got);
        }
        got.extend(thief.join().unwrap());
        assert_each_once(got, n);
    });
}

/// `runnext` against a thief allowed to take it (the last stealing pass): the owner puts items
/// through `push_next` (each displacing the previous one to the ring), takes `runnext` with
/// `pop_runnext` and empties the ring; the thief steals with `steal_runnext = true`. The slot
/// is emptied by exactly one of the two CASes, and nothing is lost on the way from `runnext`
/// to the ring.
#[test]
fn loom_runq_runnext_vs_steal_runnext() {
    model(|| {
        let n = 3;
        let (mut victim, stealer) = runq::new();
        let thief = {
            thread::spawn(move || {
                let (mut mine, _) = runq::new();
                let mut got = Vec::new();
                steal(&stealer, &mut mine, true, &mut got);
                got
            })
        };
        let mut got = Vec::new();
        {
            for v in 0..n {
                push_next(&mut victim, v, &mut got);
            }
            if let Some(p) = victim.pop_runnext() {
                got.push(take(p));
            }
            pop_all(&mut victim, &mut got);
            // A thief may have emptied the ring before the last runnext was taken: the slot
            // must be empty by now either way.
            assert!(victim.pop_runnext().is_none());
        }
        got.extend(thief.join().unwrap());
        assert!(victim.is_empty());
        assert_each_once(got, n);
    });
}

/// The narrowest `runnext` race: one item, in `runnext` only; the owner's `pop_runnext` against
/// a thief's runnext steal, with the thief's pause in between its load and its CAS.
#[test]
fn loom_runq_pop_runnext_vs_steal_runnext() {
    model(|| {
        let (mut victim, stealer) = runq::new();
        let mut got = Vec::new();
        push_next(&mut victim, 0, &mut got);
        let thief = thread::spawn(move || {
            let (mut mine, _) = runq::new();
            let mut got = Vec::new();
            steal(&stealer, &mut mine, true, &mut got);
            got
        });
        if let Some(p) = victim.pop_runnext() {
            got.push(take(p));
        }
        got.extend(thief.join().unwrap());
        assert!(victim.is_empty());
        assert_each_once(got, 1);
    });
}

/// Two thieves against one owner that overflows and pops: the CAS on `head` lets each item go
/// to exactly one of the three.
#[test]
fn loom_runq_two_thieves() {
    model(|| {
        let n = CAP + 1;
        let (mut victim, stealer) = runq::new();
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let stealer = stealer.clone();
                thread::spawn(move || {
                    let (mut mine, _) = runq::new();
                    let mut got = Vec::new();
                    steal(&stealer, &mut mine, false, &mut got);
                    got
                })
            })
            .collect();
        let mut got = Vec::new();
        for v in 0..n {
            push_back(&mut victim, v, &mut got);
        }
        pop_all(&mut victim, &mut got);
        for t in thieves {
            got.extend(t.join().unwrap());
        }
        assert_each_once(got, n);
    });
}

/// A thief's queue is itself a victim: thief A steals from the owner into its queue while thief
/// B steals from A's queue. Items published by A's steal (its `tail` store) must reach B intact,
/// and an item is still taken exactly once.
#[test]
fn loom_runq_steal_from_a_thief() {
    model(|| {
        let n = CAP;
        let (mut victim, victim_stealer) = runq::new();
        let mut got = Vec::new();
        for v in 0..n {
            push_back(&mut victim, v, &mut got);
        }
        // This thread plays thief A, owner of `a`.
        let (mut a, a_stealer) = runq::new();
        let b = thread::spawn(move || {
            let (mut mine, _) = runq::new();
            let mut got = Vec::new();
            steal(&a_stealer, &mut mine, false, &mut got);
            got
        });
        if let Some((first, _)) = victim_stealer.steal_into(&mut a, false, || true) {
            got.push(take(first));
            pop_all(&mut a, &mut got);
        }
        got.extend(b.join().unwrap());
        // All other threads are done: the owner empties its queue.
        pop_all(&mut victim, &mut got);
        assert_each_once(got, n);
    });
}

/// `is_empty` as a non-owner sees it (Go's `runqempty`, which a spinning M relies on before it
/// sleeps): once an item is known to be queued, and while nobody takes it, the queue never looks
/// empty, even while the owner moves it from `runnext` to the ring (`push_next` displacing it)
/// or spills the ring to the overflow batch.
#[test]
fn loom_runq_is_empty_never_misses_a_queued_item() {
    model(|| {
        let (mut q, stealer) = runq::new();
        let queued = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let observer = {
            let queued = queued.clone();
            thread::spawn(move || {
                if queued.load(crate::loom::Ordering::Acquire) {
                    assert!(!stealer.is_empty(), "a queued item was missed");
                }
                assert!(stealer.len() <= CAP);
            })
        };
        let mut got = Vec::new();
        push_next(&mut q, 0, &mut got);
        queued.store(true, crate::loom::Ordering::Release);
        // 0 moves to the ring, 1 to runnext.
        push_next(&mut q, 1, &mut got);
        push_next(&mut q, 2, &mut got);
        observer.join().unwrap();
        if let Some(p) = q.pop_runnext() {
            got.push(take(p));
        }
        pop_all(&mut q, &mut got);
        assert_each_once(got, 3);
    });
}
