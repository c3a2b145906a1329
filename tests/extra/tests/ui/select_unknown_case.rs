// Go's `case v := <-ch:` spelled as a case kind goro does not have.
async fn f(a: goro::chan::Receiver<u8>) {
    goro::select! {
        recv(a) -> _ => {}
        receive(a) -> _ => {}
    }
}

fn main() {
    let _ = f;
}
