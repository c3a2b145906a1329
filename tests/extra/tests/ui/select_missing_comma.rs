// An expression arm needs a comma before the next case (a block arm does not, as in `match`):
// the error says so, naming the arm that lacks it.
async fn f(a: goro::chan::Receiver<u8>, b: goro::chan::Receiver<u8>) {
    goro::select! {
        recv(a) -> v => drop(v)
        recv(b) -> _ => {}
    }
}

fn main() {
    let _ = f;
}
