//! Go's `os/signal` for contexts: [`notify_context`] (Go's `signal.NotifyContext`), on the
//! [`signal-hook`](https://docs.rs/signal-hook) crate. Unix only: on other systems this module
//! does not exist (Go's `os.Interrupt` on Windows maps to console events, which `signal-hook`
//! does not offer); use a platform crate there and cancel a context from its handler.
//!
//! ```no_run
//! use goro::context::Context;
//! use goro::signal::{notify_context, SIGINT, SIGTERM};
//!
//! #[goro::main]
//! async fn main() {
//!     // ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//!     // defer stop()
//!     let (ctx, stop) = notify_context(&Context::background(), [SIGINT, SIGTERM]);
//!     ctx.done().recv().await; // Ctrl-C
//!     stop(); // a second Ctrl-C now ends the program, as Go's stop() restores
//!     println!("shutting down: {:?}", ctx.err());
//! }
//! ```
//!
//! # How it works
//!
//! The first call starts one thread, `goro-signal`, that reads the signals from a self-pipe
//! (`signal_hook::iterator`) and cancels the contexts that asked for each one: the process's
//! signal handler only writes a byte, as Go's does. Each signal is registered once per process;
//! while at least one context (not yet stopped) asks for it, its default action (terminating
//! the process, for `SIGINT`) is suppressed. Once the last one is stopped the default action
//! comes back (emulated by `signal-hook`), as Go's `stop` "restores the default behavior".

use crate::context::{self, CancelFunc, Context};
use signal_hook::iterator::{Handle, Signals};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};

pub use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

/// A signal number (`libc`'s `c_int`): [`SIGINT`] is Go's `os.Interrupt`.
pub type Signal = i32;

/// A context that is cancelled when one of `signals` arrives, when the returned [`CancelFunc`]
/// is called, or when `parent` is done, whichever comes first (Go's `signal.NotifyContext`).
///
/// Call the function (Go's `stop`) as soon as the context is no longer needed: it cancels the
/// context and stops catching the signals for it. While a context catches `SIGINT`, Ctrl-C no
/// longer ends the program (that is the point); after the last `stop`, it does again. The
/// context's error after a signal is [`ContextError::Canceled`](crate::context::ContextError),
/// as in Go.
///
/// Works from any thread (no runtime needed, unless `parent` has a deadline ahead, which
/// [`with_cancel`](crate::context::with_cancel) does not need either).
///
/// # Panics
/// With the message of [`try_notify_context`]'s error: an empty list (Go's "every signal" is
/// not supported), a signal that cannot be caught (`SIGKILL`, `SIGSTOP`, or one of the
/// `SIGSEGV` family that `signal-hook` refuses), or a failure to set the handler up.
///
/// ```
/// use goro::context::{Context, ContextError};
/// use goro::signal::{notify_context, raise, SIGUSR1};
/// goro::run(async {
///     let (ctx, stop) = notify_context(&Context::background(), [SIGUSR1]);
///     raise(SIGUSR1).unwrap(); // as `kill -USR1 <pid>` would
///     ctx.done().recv().await;
///     assert_eq!(ctx.err(), Some(ContextError::Canceled));
///     stop();
/// });
/// ```
#[track_caller]
pub fn notify_context(
    parent: &Context,
    signals: impl IntoIterator<Item = impl Borrow<Signal>>,
) -> (Context, CancelFunc) {
    match try_notify_context(parent, signals) {
        Ok(r) => r,
        Err(e) => panic!("goro::signal::notify_context: {e}"),
    }
}

/// [`notify_context`], returning an error instead of panicking for bad input.
///
/// # Errors
/// `InvalidInput` for an empty list or a signal that cannot be caught; the system's error if
/// the handler or the `goro-signal` thread cannot be set up.
///
/// ```
/// use goro::context::Context;
/// let err = goro::signal::try_notify_context(&Context::background(), [9]).err().unwrap(); // SIGKILL
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// let err = goro::signal::try_notify_context(&Context::background(), [0i32; 0]).err().unwrap();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// ```
pub fn try_notify_context(
    parent: &Context,
    signals: impl IntoIterator<Item = impl Borrow<Signal>>,
) -> io::Result<(Context, CancelFunc)> {
    #[cfg(loom)]
    goro_runtime::__private::refuse_io_in_model("goro::signal");
    let mut sigs: Vec<Signal> = signals.into_iter().map(|s| *s.borrow()).collect();
    sigs.sort_unstable();
    sigs.dedup();
    if sigs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no signals given (Go's NotifyContext with no signals relays every signal; goro needs them named)",
        ));
    }
    if let Some(s) = sigs.iter().find(|s| signal_hook::consts::FORBIDDEN.contains(s)) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("signal {s} cannot be caught")));
    }
    let (ctx, cancel) = context::with_cancel(parent);
    let id = NEXT_ID.fetch_add(1, Relaxed);
    {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        if reg.is_none() {
            *reg = Some(Registry::start()?);
        }
        let reg = reg.as_mut().expect("started above");
        for &s in &sigs {
            if let Err(e) = reg.subscribe(s, id, cancel.clone()) {
                reg.unsubscribe(id);
                return Err(e);
            }
        }
    }
    let stop: CancelFunc = Arc::new(move || {
        cancel();
        if let Some(reg) = REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            reg.unsubscribe(id);
        }
    });
    Ok((ctx, stop))
}

/// Sends `sig` to the calling thread (C's `raise`; in effect Go's `syscall.Kill(os.Getpid(),
/// sig)` for a caught signal): for tests and examples of [`notify_context`].
///
/// # Errors
/// The system's, for an invalid signal number.
///
/// ```
/// use goro::context::Context;
/// let (ctx, stop) = goro::signal::notify_context(&Context::background(), [goro::signal::SIGUSR2]);
/// goro::signal::raise(goro::signal::SIGUSR2).unwrap();
/// ctx.done().recv_blocking(); // cancelled by the signal
/// stop();
/// ```
pub fn raise(sig: Signal) -> io::Result<()> {
    signal_hook::low_level::raise(sig)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// The process's subscriptions, per signal.
struct Registry {
    /// Adds a signal to the `goro-signal` thread's set.
    handle: Handle,
    signals: HashMap<Signal, Subscribers>,
}

struct Subscribers {
    /// Set while nobody subscribes: the signal then takes its default action (a
    /// `signal-hook` conditional default, registered with the first subscription).
    default: Arc<AtomicBool>,
    cancels: Vec<(u64, CancelFunc)>,
}

impl Registry {
    /// Starts the `goro-signal` thread, with no signals yet.
    fn start() -> io::Result<Registry> {
        let mut signals = Signals::new(std::iter::empty::<Signal>())?;
        let handle = signals.handle();
        std::thread::Builder::new().name("goro-signal".into()).spawn(move || {
            for sig in signals.forever() {
                // Cancelling runs the contexts' machinery (closing channels, waking Gs): outside
                // the registry's lock.
                let cancels: Vec<CancelFunc> = REGISTRY
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .and_then(|r| r.signals.get(&sig))
                    .map(|s| s.cancels.iter().map(|(_, c)| c.clone()).collect())
                    .unwrap_or_default();
                for c in cancels {
                    c();
                }
            }
        })?;
        Ok(Registry { handle, signals: HashMap::new() })
    }

    fn subscribe(&mut self, sig: Signal, id: u64, cancel: CancelFunc) -> io::Result<()> {
        let subs = match self.signals.entry(sig) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let default = Arc::new(AtomicBool::new(false));
                signal_hook::flag::register_conditional_default(sig, default.clone())?;
                self.handle.add_signal(sig)?;
                e.insert(Subscribers { default, cancels: Vec::new() })
            }
        };
        subs.cancels.push((id, cancel));
        subs.default.store(false, SeqCst);
        Ok(())
    }

    fn unsubscribe(&mut self, id: u64) {
        for subs in self.signals.values_mut() {
            subs.cancels.retain(|(i, _)| *i != id);
            if subs.cancels.is_empty() {
                subs.default.store(true, SeqCst);
            }
        }
    }
}
