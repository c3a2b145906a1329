// `recv(rx) => ..` without `-> pattern`: the error points at the `=>` of that case.
async fn f(a: goro::chan::Receiver<u8>, b: goro::chan::Receiver<u8>) {
    goro::select! {
        recv(a) -> v => drop(v),
        recv(b) => {}
    }
}

fn main() {
    let _ = f;
}
