// A future is not a channel: `recv(sleep(d))` and `recv(rx.recv())` point at the timer channel
// and at `timeout`/`or_done`.
use std::time::Duration;

async fn f(rx: goro::chan::Receiver<u8>) {
    goro::select! {
        recv(goro::time::sleep(Duration::from_millis(1))) -> _ => {}
        recv(rx) -> _ => {}
    }
    goro::select! {
        recv(rx.recv()) -> _ => {}
        default => {}
    }
}

fn main() {
    let _ = f;
}
