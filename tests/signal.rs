//! `goro::signal::notify_context` (Go's `signal.NotifyContext`). One test function: signals
//! are process-wide, and cargo runs the tests of one binary on parallel threads.
#![cfg(unix)]

mod common;

use common::HANG;
use goro::context::{self, Context, ContextError};
use goro::signal::{notify_context, raise, try_notify_context, SIGUSR1, SIGUSR2};

async fn done_within(ctx: &Context, what: &str) {
    goro::time::timeout(HANG, ctx.done().recv()).await.unwrap_or_else(|_| panic!("{what}: not cancelled"));
}

#[test]
fn notify_context_semantics() {
    goro::run(async {
        // A signal cancels every context that asked for it, and only those.
        let (a, stop_a) = notify_context(&Context::background(), [SIGUSR1]);
        let both = vec![SIGUSR1, SIGUSR2];
        let (b, stop_b) = notify_context(&Context::background(), &both); // by reference too
        let (c, stop_c) = notify_context(&Context::background(), [SIGUSR2]);
        raise(SIGUSR1).unwrap();
        done_within(&a, "a").await;
        done_within(&b, "b").await;
        assert_eq!(a.err(), Some(ContextError::Canceled));
        assert_eq!(c.err(), None, "SIGUSR2's context saw SIGUSR1");
        // Still subscribed until stopped: another SIGUSR1 is caught, not the default (which
        // would end this test process).
        raise(SIGUSR1).unwrap();
        stop_a();
        stop_b();

        // stop cancels.
        assert_eq!(c.err(), None);
        stop_c();
        assert_eq!(c.err(), Some(ContextError::Canceled));
        stop_c(); // idempotent

        // The parent's cancellation reaches the child.
        let (parent, cancel) = context::with_cancel(&Context::background());
        let (d, stop_d) = notify_context(&parent, [SIGUSR2]);
        cancel();
        done_within(&d, "d").await;
        // Subscribed until stop, though: a SIGUSR2 now is caught.
        raise(SIGUSR2).unwrap();
        stop_d();

        // A new context after everything was stopped works again.
        let (e, stop_e) = notify_context(&Context::background(), [SIGUSR2]);
        raise(SIGUSR2).unwrap();
        done_within(&e, "e").await;
        // `raise` runs the handler before it returns, so no signal raised above is still on its
        // way to a default action once the last subscriber stops.
        stop_e();

        // Bad input.
        let err = try_notify_context(&Context::background(), [libc_sigkill()]).err().unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("cannot be caught"), "{err}");
        let err = try_notify_context(&Context::background(), Vec::<i32>::new()).err().unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        let p =
            std::panic::catch_unwind(|| drop(notify_context(&Context::background(), [libc_sigkill()]))).unwrap_err();
        assert!(p.downcast_ref::<String>().unwrap().starts_with("goro::signal::notify_context: signal 9"));
    });
}

fn libc_sigkill() -> i32 {
    9
}
