//! The channel toolkit of the Go porter: `goro::Chan` (both ends in one handle, closed only by
//! `close`), `futures_sink::Sink` for `Sender`, and glob imports that leave `Send` alone.

use futures_sink::Sink;
use goro::chan::{SendError, TryRecvError};
use goro::Chan;
use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

/// Glob imports of `goro::chan` and `goro::sync` must not shadow `std::marker::Send` (or
/// anything else of the prelude): this module compiles only if they do not.
mod glob_imports {
    #[allow(unused_imports)]
    use goro::chan::*;
    #[allow(unused_imports)]
    use goro::sync::*;

    pub fn is_send<T: Send>() {}

    #[test]
    fn send_is_still_the_marker_trait() {
        is_send::<goro::chan::Sender<u8>>();
        is_send::<WaitGroup>();
    }
}

/// Go's `let (_, rx) = chan(0)` trap: with `Chan` the channel stays open when every other
/// handle is gone, so a receive waits, as Go's `<-ch` does.
#[test]
fn chan_stays_open_until_close() {
    goro::run(async {
        let ch = Chan::<u8>::new(0);
        drop(ch.sender()); // a sender made and dropped: no effect on `ch`
        let r = goro::time::timeout(Duration::from_millis(20), ch.recv()).await;
        assert!(r.is_err(), "a receive on an open Chan waits: {r:?}");
        assert!(!ch.is_closed());
        let c = ch.clone();
        goro::go(async move {
            c.send(1).await.unwrap();
            c.close();
        });
        assert_eq!(ch.recv().await, Some(1));
        assert_eq!(ch.recv().await, None);
        assert_eq!(ch.send(2).await, Err(SendError(2)), "a send on a closed Chan fails with the value");
    });
}

/// A `Chan` works in `select!` cases, both ways, and as a nil channel through `Option`.
#[test]
fn chan_in_select() {
    goro::run(async {
        let a = Chan::<u32>::new(1);
        let b = Chan::<u32>::new(1);
        a.send(1).await.unwrap();
        let got = goro::select! {
            recv(a) -> v => v,
            send(b, 5) -> r => { r.unwrap(); None }
        };
        // Both are ready: either fired.
        match got {
            Some(1) => assert_eq!(b.try_recv(), Err(TryRecvError::Empty)),
            None => assert_eq!(b.try_recv(), Ok(5)),
            other => panic!("{other:?}"),
        }
        let nil: Option<&Chan<u32>> = None;
        let v = goro::select! {
            recv(nil) -> _ => unreachable!(),
            default => 0,
        };
        assert_eq!(v, 0);
    });
}

/// Into the split pair: then the Rust rules apply.
#[test]
fn chan_into_split() {
    let ch = Chan::new(2);
    ch.try_send(1).unwrap();
    let (tx, rx): (goro::chan::Sender<i32>, goro::chan::Receiver<i32>) = ch.into();
    tx.try_send(2).unwrap();
    drop(tx);
    assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
}

async fn sink_send<T>(tx: &mut goro::chan::Sender<T>, v: T) -> Result<(), SendError<T>> {
    poll_fn(|cx| Pin::new(&mut *tx).poll_ready(cx)).await?;
    Pin::new(&mut *tx).start_send(v)?;
    poll_fn(|cx| Pin::new(&mut *tx).poll_flush(cx)).await
}

/// The `Sink` impl sends in order, waits for an unbuffered receiver, gives the item back on a
/// closed channel, and closes the channel on `poll_close`.
#[test]
fn sender_as_sink() {
    goro::run(async {
        let (mut tx, rx) = goro::chan::<u32>(0);
        let consumer = goro::go(async move {
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                got.push(v);
            }
            got
        });
        for i in 0..100 {
            sink_send(&mut tx, i).await.unwrap();
        }
        let keep = tx.clone();
        poll_fn(|cx| Pin::new(&mut tx).poll_close(cx)).await.unwrap();
        assert!(keep.is_closed(), "poll_close closes the channel for every sender");
        assert_eq!(consumer.await.unwrap(), (0..100).collect::<Vec<_>>());
        let err = sink_send(&mut tx, 7).await.unwrap_err();
        assert_eq!(err, SendError(7));
    });
}

/// An unflushed item is dropped with its `Sender` (as for any `Sink`); a pending send is
/// cancelled, and the value never reaches a receiver.
#[test]
fn sink_item_in_flight_is_dropped_with_the_sender() {
    goro::run(async {
        let (mut tx, rx) = goro::chan::<u32>(0);
        let keep = tx.clone();
        poll_fn(|cx| Pin::new(&mut tx).poll_ready(cx)).await.unwrap();
        Pin::new(&mut tx).start_send(1).unwrap();
        // One flush poll parks the send (nobody receives).
        let parked = poll_fn(|cx| Poll::Ready(Pin::new(&mut tx).poll_flush(cx).is_pending())).await;
        assert!(parked);
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "the cancelled send sent nothing");
        keep.try_send(2).unwrap_err(); // unbuffered, nobody waits: full
        drop(keep);
        assert_eq!(rx.recv().await, None);
    });
}

use std::task::Poll;

#[test]
#[should_panic(expected = "start_send on a Sender before poll_ready")]
fn sink_start_send_twice_panics() {
    let (mut tx, _rx) = goro::chan::<u32>(0);
    Pin::new(&mut tx).start_send(1).unwrap();
    let _ = Pin::new(&mut tx).start_send(2);
}

/// `Sender<T>` stays `Send + Sync` for a `T` that is only `Send` (the sink slot is reached
/// through `&mut` only).
#[test]
fn sender_is_sync_for_send_only_items() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<goro::chan::Sender<std::cell::Cell<u8>>>();
    send_sync::<Chan<std::cell::Cell<u8>>>();
    fn send<T: Send>() {}
    send::<goro::chan::futures::Wait<'static, 'static>>(); // a G may await a dynamic select
}
