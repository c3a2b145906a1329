//! A server binary in the crate of the model tests: `--cfg loom` builds it too (cargo builds a
//! package's binaries for its integration tests), so it shows that a crate whose program uses
//! `goro::net` and `goro::signal` can follow the porting guide's steps for model tests. It is never
//! run under loom; run normally, it is an echo server on 127.0.0.1:7007 until Ctrl-C.

use goro::context::Context;
use goro::net::{TcpListener, TcpStream};

#[goro::main]
async fn main() -> std::io::Result<()> {
    let (ctx, _stop) = goro::signal::notify_context(&Context::background(), [goro::signal::SIGINT]);
    let listener = TcpListener::bind("127.0.0.1:7007").await?;
    goro::go!(async move {
        while let Ok((conn, _)) = listener.accept().await {
            goro::go(echo(conn));
        }
    });
    ctx.done().recv().await;
    Ok(())
}

async fn echo(conn: TcpStream) {
    let mut buf = [0u8; 1024];
    while let Ok(n @ 1..) = conn.read(&mut buf).await {
        if conn.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
}
