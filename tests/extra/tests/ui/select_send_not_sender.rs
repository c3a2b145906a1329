// A send case needs a sender.
async fn f(rx: goro::chan::Receiver<u8>) {
    goro::select! {
        send(rx, 1) -> _ => {}
    }
}

fn main() {
    let _ = f;
}
