// Arms as `match` takes them: a block arm needs no comma; an expression arm does; a trailing
// comma is optional; `{ .. }.method()` is still one expression.
#![deny(unused_must_use)]

async fn f(a: goro::chan::Receiver<u8>, b: goro::chan::Sender<u8>, c: goro::Chan<u8>) -> usize {
    let n = goro::select! {
        recv(a) -> v => { v.map_or(0, usize::from) }
        send(b, 1) -> r => { r.map_or(0, |_| 1) }
        recv(c) -> _ => { vec![1, 2] }.len(),
        default => { 0 }
    };
    let m = goro::select! {
        recv(a) -> _ => 1,
        default => 2,
    };
    // The after_func whose Timer is deliberately dropped.
    let _ = goro::time::after_func(std::time::Duration::from_secs(1), || {});
    n + m
}

fn main() {
    let _ = f;
}
