//! A pub/sub broker with timeouts, as a Go programmer writes one: a broker goroutine owns the
//! subscriber set and serves subscribe, unsubscribe and publish requests over channels; each
//! subscriber has a bounded buffer, and a subscriber that does not keep up loses messages
//! instead of holding up the broker. The Go original's heart:
//!
//! ```go
//! func (b *Broker) run(ctx context.Context) map[string]int {
//!     subs := map[string]chan Msg{}
//!     drops := map[string]int{}
//!     for {
//!         select {
//!         case s := <-b.subscribe:
//!             subs[s.name] = s.ch
//!         case name := <-b.unsubscribe:
//!             if ch, ok := subs[name]; ok {
//!                 close(ch)
//!                 delete(subs, name)
//!             }
//!         case p := <-b.publish:
//!             n := 0
//!             for name, ch := range subs {
//!                 select {
//!                 case ch <- p.msg: // room in its buffer
//!                     n++
//!                 default: // full: wait a little for room, then drop it for this one alone
//!                     select {
//!                     case ch <- p.msg:
//!                         n++
//!                     case <-time.After(deliveryTimeout):
//!                         drops[name]++
//!                     }
//!                 }
//!             }
//!             p.ack <- n // buffered: never blocks on a publisher that gave up
//!         case <-ctx.Done():
//!             for _, ch := range subs {
//!                 close(ch) // ends every subscriber's `for m := range ch`
//!             }
//!             return drops
//!         }
//!     }
//! }
//! ```
//!
//! Four subscribers: alice and bob read every message; carol leaves after a few; `slow` has a
//! buffer of 2 and spends 200 ms on each message, ten times the 20 ms the broker waits for it.
//! A burst of 10 messages, each published with a timeout on its ack, then a shutdown by context.
//!
//! `cargo run --example pubsub`

use goro::chan::{Receiver, Sender};
use goro::context::{self, Context};
use goro::sync::WaitGroup;
use goro::Chan;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const MESSAGES: u32 = 10;
const DELIVERY_TIMEOUT: Duration = Duration::from_millis(20);
const SLOW_WORK: Duration = Duration::from_millis(200);
/// How long a publisher waits for the broker's ack. A live broker answers within one
/// `DELIVERY_TIMEOUT` per subscriber; this only catches a hung one.
const ACK_TIMEOUT: Duration = Duration::from_secs(2);
const NEVER_CLOSED: &str = "the request channels are never closed";

#[derive(Clone, Debug)]
struct Msg {
    seq: u32,
    text: String,
}

/// Go's `ErrClosed`: the broker has shut down.
#[derive(Debug, PartialEq)]
struct Closed;

/// The broker's handle: its request channels (the `chan` fields of Go's `type Broker struct`:
/// `goro::Chan`s, shared by every client and never closed) and its `ctx.Done()`.
#[derive(Clone)]
struct Broker {
    subscribe: Chan<(String, Sender<Msg>)>,
    unsubscribe: Chan<String>,
    /// A message, and the channel (capacity 1) on which the broker says how many got it.
    publish: Chan<(Msg, Sender<usize>)>,
    done: Receiver<()>,
}

impl Broker {
    /// Go's `b := NewBroker(); go b.run(ctx)`: the handle returns the drop counts at shutdown.
    fn start(ctx: &Context) -> (Broker, goro::runtime::JoinHandle<BTreeMap<String, u32>>) {
        // Unbuffered: a request is taken by the broker itself, so once `subscribe` returns, the
        // next publish reaches the new subscriber; and once the broker is gone, nothing takes one.
        let b = Broker { subscribe: Chan::new(0), unsubscribe: Chan::new(0), publish: Chan::new(0), done: ctx.done() };
        (b.clone(), goro::go(b.run()))
    }

    async fn run(self) -> BTreeMap<String, u32> {
        // The subscriber channels are split pairs: the broker holds the sending end.
        let mut subs: BTreeMap<String, Sender<Msg>> = BTreeMap::new();
        let mut drops: BTreeMap<String, u32> = BTreeMap::new();
        loop {
            goro::select! {
                recv(self.subscribe) -> s => {
                    let (name, ch) = s.expect(NEVER_CLOSED);
                    drops.insert(name.clone(), 0);
                    subs.insert(name, ch);
                }
                recv(self.unsubscribe) -> name => {
                    if let Some(ch) = subs.remove(&name.expect(NEVER_CLOSED)) {
                        ch.close(); // the subscriber drains what is buffered, then its loop ends
                    }
                }
                recv(self.publish) -> p => {
                    let (msg, ack) = p.expect(NEVER_CLOSED);
                    let mut n = 0;
                    for (name, ch) in &subs {
                        // Room in the buffer: sent at once, no timer. Full: wait at most
                        // DELIVERY_TIMEOUT for room (Go's `case <-time.After(d)`), else drop.
                        // A send that fails (the subscriber is gone) counts as a drop too.
                        let sent = goro::select! {
                            send(ch, msg.clone()) -> sent => sent.is_ok(),
                            default => goro::select! {
                                send(ch, msg.clone()) -> sent => sent.is_ok(),
                                recv(goro::time::after(DELIVERY_TIMEOUT)) -> _ => false,
                            },
                        };
                        match sent {
                            true => n += 1,
                            false => *drops.get_mut(name).unwrap() += 1,
                        }
                    }
                    // Go's `p.ack <- n` on a channel of capacity 1: never blocks, and a
                    // publisher that timed out has dropped its end, so this fails harmlessly.
                    let _ = ack.try_send(n);
                }
                recv(self.done) -> _ => {
                    for ch in subs.values() {
                        ch.close(); // Go's close(ch): every `while let Some(..)` loop ends
                    }
                    return drops;
                }
            }
        }
    }

    /// Go's `b.Subscribe(name, n)`: a channel of `buf` slots. Every client call also selects on
    /// `<-b.done`, so that it fails with `Closed`, instead of blocking, once the broker is gone.
    async fn subscribe(&self, name: &str, buf: usize) -> Result<Receiver<Msg>, Closed> {
        let (tx, rx) = goro::chan(buf);
        goro::select! {
            send(self.subscribe, (name.to_string(), tx)) -> _ => Ok(rx),
            recv(self.done) -> _ => Err(Closed),
        }
    }

    async fn unsubscribe(&self, name: &str) -> Result<(), Closed> {
        goro::select! {
            send(self.unsubscribe, name.to_string()) -> _ => Ok(()),
            recv(self.done) -> _ => Err(Closed),
        }
    }

    /// Go's `b.Publish(msg)`: hands the message over, then waits for the ack.
    async fn publish(&self, msg: Msg) -> Result<usize, Closed> {
        let (ack, acked) = goro::chan(1);
        goro::select! {
            send(self.publish, (msg, ack)) -> _ => {}
            recv(self.done) -> _ => return Err(Closed),
        }
        goro::select! {
            recv(acked) -> n => n.ok_or(Closed),
            recv(self.done) -> _ => Err(Closed),
        }
    }
}

/// A subscriber's loop, Go's `for m := range ch`: it ends when the broker closes `ch`. Each
/// message takes `work`; after `leave` messages it unsubscribes and reads on until `ch` is
/// closed (Go's rule: keep draining after unsubscribing, or the broker may wait on you).
async fn consume(b: Broker, name: &'static str, ch: Receiver<Msg>, work: Duration, leave: Option<usize>) -> Vec<u32> {
    let mut got = Vec::new();
    while let Some(m) = ch.recv().await {
        assert_eq!(m.text, format!("news #{}", m.seq));
        got.push(m.seq);
        if !work.is_zero() {
            // select { case <-time.After(work): case <-ctx.Done(): } (b.done is ctx.Done()):
            // the work is cut short at shutdown, so the buffered rest drains at once.
            goro::select! {
                recv(goro::time::after(work)) -> _ => {}
                recv(b.done) -> _ => {}
            }
        }
        if Some(got.len()) == leave {
            // Err(Closed) if the broker has shut down already: then there is nothing to leave.
            let _ = b.unsubscribe(name).await;
        }
    }
    got
}

#[goro::main]
async fn main() {
    let start = Instant::now();
    assert_eq!(goro::runtime::num_goroutine(), 1, "main is the only G, as in Go");
    let (ctx, cancel) = context::with_cancel(&Context::background());
    let (broker, broker_g) = Broker::start(&ctx);

    // Fast subscribers get room for the whole burst, so however late their G runs, the broker
    // never waits for them; `slow` gets 2 slots and takes 200 ms per message.
    let wg = WaitGroup::new();
    let mut logs = Vec::new();
    for (name, buf, work, leave) in [
        ("alice", 16, Duration::ZERO, None),
        ("bob", 16, Duration::ZERO, None),
        ("carol", 16, Duration::ZERO, Some(4)),
        ("slow", 2, SLOW_WORK, None),
    ] {
        let ch = broker.subscribe(name, buf).await.expect("the broker is running");
        logs.push((name, wg.go(consume(broker.clone(), name, ch, work, leave))));
    }

    // The burst. Go: `ctx, cancel := context.WithTimeout(ctx, ackTimeout); n, err := b.Publish(..)`
    // around one call is `goro::time::timeout(d, fut)`.
    let burst = Instant::now();
    let mut acked = 0;
    for seq in 1..=MESSAGES {
        let msg = Msg { seq, text: format!("news #{seq}") };
        let n = goro::time::timeout(ACK_TIMEOUT, broker.publish(msg)).await.expect("no ack: the broker hangs");
        acked += n.expect("the broker is running");
    }
    let burst = burst.elapsed();

    // Shutdown: the broker closes every subscriber channel; wg.Wait() for their loops to end.
    cancel();
    wg.wait().await;
    let drops = broker_g.await.unwrap();
    let mut got = BTreeMap::new();
    for (name, h) in logs {
        let seqs = h.await.unwrap();
        println!("{name:>5}: received {seqs:?}, dropped {}", drops[name]);
        got.insert(name, seqs);
    }
    println!("burst of {MESSAGES} took {burst:?}");

    // Fast subscribers: every message, in order, nothing dropped. carol: a prefix, at least what
    // she read before leaving (more may have been queued for her before her unsubscribe).
    let all: Vec<u32> = (1..=MESSAGES).collect();
    assert_eq!((&got["alice"], &got["bob"]), (&all, &all));
    let carol = &got["carol"];
    assert!(carol.len() >= 4 && carol[..] == all[..carol.len()], "{carol:?}");
    assert_eq!((drops["alice"], drops["bob"], drops["carol"]), (0, 0, 0));

    // slow: the first two always fit its buffer; what it got is in order, and every message it
    // did not get is one the broker counted as dropped.
    let slow = &got["slow"];
    assert_eq!(slow[..2], [1, 2], "{slow:?}");
    assert!(slow.windows(2).all(|w| w[0] < w[1]), "{slow:?}");
    assert_eq!(slow.len() as u32 + drops["slow"], MESSAGES);
    // It takes a message at most every SLOW_WORK, so during the burst it can have taken one plus
    // one per SLOW_WORK elapsed, with 2 more in its buffer. (The burst lasts about 7 delivery
    // timeouts, 140 ms: it gets 2 or 3, and about 7 are dropped.)
    let bound = 3 + (burst.as_nanos() / SLOW_WORK.as_nanos()) as usize;
    assert!(slow.len() <= bound, "{} received in {burst:?}", slow.len());
    // Every ack counted the subscribers that got the message: together, all that was received.
    assert_eq!(acked, got.values().map(Vec::len).sum::<usize>());

    // After shutdown a client fails cleanly instead of blocking on a broker that is gone.
    let late = goro::time::timeout(ACK_TIMEOUT, broker.publish(Msg { seq: 0, text: "late".into() })).await;
    assert_eq!(late, Ok(Err(Closed)));
    assert!(broker.subscribe("late", 1).await.is_err());
    println!("publish after shutdown: {late:?}");

    // No G is left: the broker and the subscribers have returned (their Gs end right after).
    let deadline = Instant::now() + Duration::from_secs(5);
    while goro::runtime::num_goroutine() > 1 {
        assert!(Instant::now() < deadline, "leaked goroutines: {}", goro::runtime::num_goroutine());
        goro::runtime::yield_now().await;
    }
    println!("{} goroutine left; done in {:?}", goro::runtime::num_goroutine(), start.elapsed());
}
