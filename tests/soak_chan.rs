//! The channel soak, `#[ignore]`d because it takes minutes:
//!
//! ```sh
//! cargo test --release --test soak_chan -- --ignored --nocapture
//! ```
//!
//! - [`mpmc_millions_with_cancellation`]: millions of values through MPMC channels (caps 0, 1,
//!   64) while sends and receives are cancelled every way a Rust user can cancel them; every
//!   value is accounted for exactly once.
//!
//! Each has a short smoke version that `cargo test` runs (same code, small sizes). The tests
//! run one at a time (they lock `common::soak::SERIAL`): RSS is per process, and the figures
//! they print mean nothing if another test runs alongside. The soaks of every binary:
//! `cargo test --release --test 'soak_*' -- --ignored --nocapture`.
//!
//! Knobs: `GORO_SOAK_MESSAGES` (default 4 000 000), `GORO_SOAK_SEED` (the random seed; the test
//! prints the one it used).
//!
//! Nothing sleeps to synchronize: the Gs meet on channels, `WaitGroup`s and join handles; time
//! only paces the workload, bounds waits as a failure detector, and is what timers are tested
//! against.

mod common;

use common::soak::*;
use common::{rt, watchdog};
use goro::chan::{Receiver, SendError, Sender, TryRecvError, TrySendError};
use goro::time::{after, sleep};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Millions of messages through MPMC channels, with cancellation everywhere
// ---------------------------------------------------------------------------------------------

// Per-id facts in the ledger. Exactly one of the three outcomes must be set for every id:
/// A consumer took the value out of the channel.
const RECEIVED: u8 = 1;
/// A failed send handed the value back to its producer (`SendError`, `TrySendError::Closed`).
const RETURNED: u8 = 2;
/// The value was dropped without either: a cancelled send dropped it (or a channel lost it).
const DROPPED: u8 = 4;
const OUTCOMES: u8 = RECEIVED | RETURNED | DROPPED;
// What the producer learned, to check against the outcome:
/// The send returned `Ok`: the value must be received.
const SENT_OK: u8 = 8;
/// A `select!` ran another arm, so its send case did not send: the value must be dropped.
const NOT_SENT: u8 = 16;
/// The send future was dropped mid-flight: either received or dropped, not both.
const ABANDONED: u8 = 32;

/// One byte of facts per id, and the anomalies seen on the way (never a panic inside `Drop`).
struct Ledger {
    state: Box<[AtomicU8]>,
    anomalies: AtomicU64,
    first_anomaly: Mutex<Option<String>>,
}

impl Ledger {
    fn new(n: usize) -> &'static Ledger {
        Box::leak(Box::new(Ledger {
            state: (0..n).map(|_| AtomicU8::new(0)).collect(),
            anomalies: AtomicU64::new(0),
            first_anomaly: Mutex::new(None),
        }))
    }

    fn mark(&self, id: u32, fact: u8) {
        self.state[id as usize].fetch_or(fact, SeqCst);
    }

    fn outcome(&self, id: u32, outcome: u8) {
        let prev = self.state[id as usize].fetch_or(outcome, SeqCst);
        if prev & OUTCOMES != 0 {
            self.anomaly(format!("id {id}: outcome {outcome} after {prev:#b} (a value seen twice)"));
        }
    }

    fn anomaly(&self, what: String) {
        if self.anomalies.fetch_add(1, SeqCst) == 0 {
            *self.first_anomaly.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
        }
    }
}

/// A message: its id, and its ledger. Dropping it unreceived and unreturned records `DROPPED`.
struct Tok {
    id: u32,
    ledger: &'static Ledger,
}

impl Tok {
    fn received(self) {
        let t = ManuallyDrop::new(self);
        t.ledger.outcome(t.id, RECEIVED);
    }
    fn returned(self) {
        let t = ManuallyDrop::new(self);
        t.ledger.outcome(t.id, RETURNED);
    }
}

impl Drop for Tok {
    fn drop(&mut self) {
        self.ledger.outcome(self.id, DROPPED);
    }
}

/// One channel's worth of ids: `base..base + n`, handed out by `next`.
struct Round {
    base: u32,
    n: u32,
    next: AtomicU32,
    received: AtomicU32,
    /// A consumer closes the channel when `received` reaches this (`u32::MAX`: never), so that
    /// sends fail while producers are busy.
    close_at: u32,
    ledger: &'static Ledger,
}

/// What the Gs of a round did, for the printout.
#[derive(Default, Debug, Clone, Copy)]
struct OpCounts {
    send: u64,
    try_send_full: u64,
    select_send: u64,
    select_send_default: u64,
    send_poll_dropped: u64,
    send_raced_lost: u64,
    recv: u64,
    try_recv_empty: u64,
    select_recv_timeout: u64,
    select_recv_default: u64,
    recv_poll_dropped: u64,
    recv_raced_lost: u64,
}

impl std::ops::AddAssign for OpCounts {
    fn add_assign(&mut self, o: OpCounts) {
        self.send += o.send;
        self.try_send_full += o.try_send_full;
        self.select_send += o.select_send;
        self.select_send_default += o.select_send_default;
        self.send_poll_dropped += o.send_poll_dropped;
        self.send_raced_lost += o.send_raced_lost;
        self.recv += o.recv;
        self.try_recv_empty += o.try_recv_empty;
        self.select_recv_timeout += o.select_recv_timeout;
        self.select_recv_default += o.select_recv_default;
        self.recv_poll_dropped += o.recv_poll_dropped;
        self.recv_raced_lost += o.recv_raced_lost;
    }
}

/// Takes ids from the round until none is left, and sends each one way picked at random:
/// `send`, `try_send` (retried while full), `select!` against a timer or with `default`, a send
/// future polled once and dropped, a send future raced against a sleep.
async fn producer(tx: Sender<Tok>, round: Arc<Round>, seed: u64) -> OpCounts {
    let mut rng = Rng::new(seed);
    let mut c = OpCounts::default();
    let ledger = round.ledger;
    loop {
        let local = round.next.fetch_add(1, SeqCst);
        if local >= round.n {
            return c;
        }
        let id = round.base + local;
        let mut tok = Tok { id, ledger };
        loop {
            match rng.below(32) {
                0..=17 => {
                    c.send += 1;
                    match tx.send(tok).await {
                        Ok(()) => ledger.mark(id, SENT_OK),
                        Err(SendError(t)) => t.returned(),
                    }
                }
                18..=21 => match tx.try_send(tok) {
                    Ok(()) => ledger.mark(id, SENT_OK),
                    Err(TrySendError::Closed(t)) => t.returned(),
                    Err(TrySendError::Full(t)) => {
                        c.try_send_full += 1;
                        tok = t;
                        goro::runtime::yield_now().await;
                        continue;
                    }
                },
                22..=24 => {
                    c.select_send += 1;
                    goro::select! {
                        send(&tx, tok) -> r => match r {
                            Ok(()) => ledger.mark(id, SENT_OK),
                            Err(SendError(t)) => t.returned(),
                        },
                        recv(after(rng.micros(0, 200))) -> _ => ledger.mark(id, NOT_SENT),
                    }
                }
                25..=27 => {
                    c.select_send_default += 1;
                    goro::select! {
                        send(&tx, tok) -> r => match r {
                            Ok(()) => ledger.mark(id, SENT_OK),
                            Err(SendError(t)) => t.returned(),
                        },
                        default => {
                            ledger.mark(id, NOT_SENT);
                            goro::runtime::yield_now().await;
                        }
                    }
                }
                28..=29 => match poll_once_then_drop(tx.send(tok)) {
                    Some(Ok(())) => ledger.mark(id, SENT_OK),
                    Some(Err(SendError(t))) => t.returned(),
                    None => {
                        c.send_poll_dropped += 1;
                        ledger.mark(id, ABANDONED);
                        goro::runtime::yield_now().await;
                    }
                },
                _ => match race(tx.send(tok), sleep(rng.micros(0, 200))).await {
                    Either::Left(Ok(())) => ledger.mark(id, SENT_OK),
                    Either::Left(Err(SendError(t))) => t.returned(),
                    Either::Right(()) => {
                        c.send_raced_lost += 1;
                        ledger.mark(id, ABANDONED);
                    }
                },
            }
            break;
        }
    }
}

/// Receives until the channel is closed and drained, each receive one way picked at random (the
/// same menu as [`producer`]'s). The consumer that takes the round's `close_at`-th value closes
/// the channel.
async fn consumer(tx: Sender<Tok>, rx: Receiver<Tok>, round: Arc<Round>, seed: u64) -> OpCounts {
    let mut rng = Rng::new(seed);
    let mut c = OpCounts::default();
    loop {
        let v = match rng.below(32) {
            0..=17 => {
                c.recv += 1;
                rx.recv().await
            }
            18..=21 => match rx.try_recv() {
                Ok(t) => Some(t),
                Err(TryRecvError::Closed) => None,
                Err(TryRecvError::Empty) => {
                    c.try_recv_empty += 1;
                    goro::runtime::yield_now().await;
                    continue;
                }
            },
            22..=24 => goro::select! {
                recv(&rx) -> v => v,
                recv(after(rng.micros(0, 200))) -> _ => {
                    c.select_recv_timeout += 1;
                    continue;
                }
            },
            25..=27 => goro::select! {
                recv(&rx) -> v => v,
                default => {
                    c.select_recv_default += 1;
                    goro::runtime::yield_now().await;
                    continue;
                }
            },
            28..=29 => match poll_once_then_drop(rx.recv()) {
                Some(v) => v,
                None => {
                    c.recv_poll_dropped += 1;
                    goro::runtime::yield_now().await;
                    continue;
                }
            },
            _ => match race(rx.recv(), sleep(rng.micros(0, 200))).await {
                Either::Left(v) => v,
                Either::Right(()) => {
                    c.recv_raced_lost += 1;
                    continue;
                }
            },
        };
        match v {
            Some(t) => {
                t.received();
                if round.received.fetch_add(1, SeqCst) + 1 == round.close_at {
                    tx.close();
                }
            }
            None => return c,
        }
    }
}

const PRODUCERS: u64 = 3;
const CONSUMERS: u64 = 3;

/// One round: a fresh channel of capacity `cap`, producers and consumers, and a chaos G that
/// keeps spawning extra producers and consumers and aborting them at random points. Returns
/// the counts of the Gs that were not aborted, and the number of Gs aborted.
async fn mpmc_round(cap: usize, round: Arc<Round>, rng: &mut Rng) -> (OpCounts, u64) {
    let (tx, rx) = goro::chan::<Tok>(cap);
    let producers: Vec<_> = (0..PRODUCERS).map(|_| goro::go(producer(tx.clone(), round.clone(), rng.next()))).collect();
    let consumers: Vec<_> =
        (0..CONSUMERS).map(|_| goro::go(consumer(tx.clone(), rx.clone(), round.clone(), rng.next()))).collect();
    let chaos = {
        let (tx, rx, round, seed) = (tx.clone(), rx.clone(), round.clone(), rng.next());
        goro::go(async move {
            let mut rng = Rng::new(seed);
            let mut aborted = 0u64;
            while round.next.load(SeqCst) < round.n {
                let victim = if rng.below(2) == 0 {
                    goro::go(producer(tx.clone(), round.clone(), rng.next()))
                } else {
                    goro::go(consumer(tx.clone(), rx.clone(), round.clone(), rng.next()))
                };
                for _ in 0..rng.below(64) {
                    goro::runtime::yield_now().await;
                }
                victim.abort();
                match victim.await {
                    Ok(_) => {}
                    Err(e) if e.is_cancelled() => aborted += 1,
                    Err(e) => panic!("a victim G failed: {e:?}"),
                }
            }
            aborted
        })
    };
    let mut counts = OpCounts::default();
    for p in producers {
        counts += p.await.expect("producer");
    }
    let aborted = chaos.await.expect("chaos G");
    // Every send has ended (each producer ran out of ids; each victim was aborted or ended):
    // closing now fails no send, unless a consumer closed the channel early on purpose.
    tx.close();
    for c in consumers {
        counts += c.await.expect("consumer");
    }
    // Every consumer saw `None`, so the channel was closed and drained: nothing may be left in
    // it, not even a value handed to a victim consumer whose G was aborted after an early close
    // (its dropped receive gives the value back, and the others wait for that before they see
    // `None`: see `Chan::inflight` in crates/chan/src/chan.rs).
    match rx.try_recv() {
        Err(TryRecvError::Closed) => {}
        Ok(t) => panic!("cap {cap}: value {} stranded in a channel every consumer saw drained", t.id),
        Err(TryRecvError::Empty) => panic!("cap {cap}: try_recv says Empty after every consumer saw None"),
    }
    (counts, aborted)
}

/// What the ledger says about `range`: counts per outcome; panics on any id whose facts do not
/// add up.
#[derive(Default, Debug)]
struct Tally {
    received: u64,
    returned: u64,
    dropped: u64,
    sent_ok: u64,
    not_sent: u64,
    abandoned: u64,
    abandoned_received: u64,
}

fn tally(ledger: &Ledger, range: std::ops::Range<u32>) -> Tally {
    let mut t = Tally::default();
    for id in range {
        let s = ledger.state[id as usize].load(SeqCst);
        let outcomes = s & OUTCOMES;
        assert!(outcomes.count_ones() == 1, "id {id}: facts {s:#08b}: not exactly one outcome");
        if s & SENT_OK != 0 {
            assert_eq!(outcomes, RECEIVED, "id {id}: send returned Ok, facts {s:#08b}: lost");
            t.sent_ok += 1;
        }
        if s & NOT_SENT != 0 {
            assert_eq!(outcomes, DROPPED, "id {id}: a select ran another arm, yet facts {s:#08b}");
            t.not_sent += 1;
        }
        if s & ABANDONED != 0 {
            t.abandoned += 1;
            t.abandoned_received += u64::from(outcomes == RECEIVED);
        }
        match outcomes {
            RECEIVED => t.received += 1,
            RETURNED => t.returned += 1,
            _ => t.dropped += 1,
        }
    }
    t
}

/// `total` messages split evenly among caps 0, 1 and 64, in 8 or more rounds of at most 200 000
/// (a fresh channel each); a quarter of the rounds close their channel early, when a random share
/// (50-100 %) of the round's values has been received, so that sends fail with their value
/// back.
fn mpmc_with_cancellation(test: &'static str, total: u64, limit: Duration) {
    let _serial = serial();
    let _w = watchdog(test, limit);
    let seed = seed(test);
    let ledger = Ledger::new(total as usize);
    let rt = rt(2);
    let per_cap = total / 3;
    let mut base = 0u32;
    for (i, cap) in [0usize, 1, 64].into_iter().enumerate() {
        let n_cap = if i == 2 { total - 2 * per_cap } else { per_cap };
        let mut rng = Rng::new(seed ^ cap as u64);
        let start = Instant::now();
        let (mut counts, mut aborted, mut rounds, mut early) = (OpCounts::default(), 0, 0, 0);
        let mut left = n_cap;
        // At least 8 rounds per cap (so that the smoke run closes some early too), at most
        // 200 000 values each.
        let round_size = n_cap.div_ceil(8).clamp(1, 200_000);
        let mut tl = Tally::default();
        while left > 0 {
            let n = left.min(round_size) as u32;
            left -= n as u64;
            let close_at = if rounds % 4 == 1 { n / 2 + rng.below(n as u64 / 2 + 1) as u32 } else { u32::MAX };
            early += u64::from(close_at != u32::MAX);
            let round =
                Arc::new(Round { base, n, next: AtomicU32::new(0), received: AtomicU32::new(0), close_at, ledger });
            let mut r = rng.clone();
            rng.next();
            let (c, a) = rt.block_on({
                let round = round.clone();
                async move { mpmc_round(cap, round, &mut r).await }
            });
            counts += c;
            aborted += a;
            rounds += 1;
            assert_eq!(ledger.anomalies.load(SeqCst), 0, "cap {cap}: {:?}", ledger.first_anomaly.lock());
            let t = tally(ledger, base..base + n);
            assert_eq!(t.received, u64::from(round.received.load(SeqCst)), "cap {cap}");
            if close_at == u32::MAX {
                assert_eq!(t.returned, 0, "cap {cap}: a send failed though nobody closed the channel");
            }
            tl.received += t.received;
            tl.returned += t.returned;
            tl.dropped += t.dropped;
            tl.sent_ok += t.sent_ok;
            tl.not_sent += t.not_sent;
            tl.abandoned += t.abandoned;
            tl.abandoned_received += t.abandoned_received;
            base += n;
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{test}: cap {cap:>2}: {n_cap} messages in {rounds} rounds ({early} closed early) in {secs:.2} s: \
             {:.0} messages/s, {:.0} received/s; {aborted} Gs aborted",
            n_cap as f64 / secs,
            tl.received as f64 / secs,
        );
        println!("{test}: cap {cap:>2}: {tl:?}");
        println!("{test}: cap {cap:>2}: {counts:?}");
        // The run must have exercised what it claims to (a weak floor: each is 1/16 or more of
        // the menu, over tens of thousands of ops).
        assert!(tl.received > 0 && tl.sent_ok > 0 && tl.not_sent > 0, "cap {cap}: {tl:?}");
        assert!(counts.select_send > 0 && counts.select_recv_timeout + counts.select_recv_default > 0);
        assert!(counts.send_poll_dropped + counts.send_raced_lost + counts.recv_poll_dropped > 0);
    }
    assert_eq!(base as u64, total);
    drop(rt);
    assert_eq!(ledger.anomalies.load(SeqCst), 0, "{:?}", ledger.first_anomaly.lock());
}

/// Several million values (default 4 000 000, `GORO_SOAK_MESSAGES` overrides) through MPMC
/// channels at caps 0, 1 and 64 on two Ps, with sends and receives cancelled at random: inside
/// `select!` with an `after` timeout or a `default` arm, as futures polled once and dropped, as
/// futures that lose a race against a sleep, and inside Gs aborted at random points. Every
/// value whose send returned `Ok` is received exactly once, every value whose send failed came
/// back to its producer, every value whose `select!` case did not fire was not sent, and every
/// other value is either received or dropped with its cancelled future: never both, never lost
/// inside the channel, never seen twice.
#[test]
#[ignore = "soak: several million messages; run with --release -- --ignored"]
fn mpmc_millions_with_cancellation() {
    let total = env_u64("GORO_SOAK_MESSAGES", 4_000_000);
    mpmc_with_cancellation("mpmc_millions_with_cancellation", total, Duration::from_secs(900));
}

#[test]
fn mpmc_with_cancellation_smoke() {
    mpmc_with_cancellation("mpmc_with_cancellation_smoke", 50_000, Duration::from_secs(120));
}
