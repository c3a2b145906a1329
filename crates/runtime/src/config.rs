//! Runtime configuration: the builder's settings and the environment knobs Go users know
//! (`GORO_MAXPROCS` for `GOMAXPROCS`, `GORO_DEBUG` for `GODEBUG`).
//!
//! A knob that cannot be parsed is reported in one line on stderr (once per process and
//! message) and its default is used: a typo in an environment variable should not take a
//! program down, but it must not pass silently either.

use std::collections::HashSet;
use std::panic::Location;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

/// Go's default limit on threads (`debug.SetMaxThreads`).
pub(crate) const DEFAULT_MAX_THREADS: usize = 10_000;

#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) max_procs: usize,
    pub(crate) max_threads: usize,
    pub(crate) thread_name: String,
    pub(crate) stack_size: Option<usize>,
    pub(crate) schedtrace: Option<Duration>,
    /// Whether sysmon hands off the P of an M stuck in one poll (`Builder::handoff_blocked`).
    pub(crate) handoff_blocked: bool,
    /// Whether sysmon reports deadlocks (`Builder::deadlock_detection`), and which threads
    /// count as able to wake a G unseen (see `checkdead`).
    pub(crate) deadlock_detection: bool,
    pub(crate) census: Census,
    /// What a G's unobserved panic does (`Builder::unhandled_panic`).
    pub(crate) unhandled_panic: UnhandledPanic,
    /// `Builder::on_thread_start` / `on_thread_stop`.
    pub(crate) on_thread_start: Option<ThreadHook>,
    pub(crate) on_thread_stop: Option<ThreadHook>,
    /// Set for a synctest bubble (`Builder::bubble`; see `bubble`).
    pub(crate) bubble: Option<std::sync::Arc<crate::bubble::Bubble>>,
}

/// A function the runtime calls on each thread that runs its Gs (`Builder::on_thread_start`,
/// `Builder::on_thread_stop`).
#[derive(Clone)]
pub(crate) struct ThreadHook(pub(crate) std::sync::Arc<dyn Fn() + Send + Sync>);

impl ThreadHook {
    /// Calls the hook on an M thread. A panic is reported once and otherwise ignored: the M must
    /// go on (its P would be lost, and the runtime with it), and the panic hook has already
    /// printed the message.
    pub(crate) fn call_on_m(&self, name: &str) {
        let f = &self.0;
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f())).is_err() {
            warn_once(&format!(
                "goro: the runtime's {name} hook panicked on an M thread; the thread runs on without it"
            ));
        }
    }
}

impl std::fmt::Debug for ThreadHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThreadHook")
    }
}

/// Prints `msg` on stderr unless this process already printed it.
pub(crate) fn warn_once(msg: &str) {
    static SEEN: StdMutex<Option<HashSet<String>>> = StdMutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert(msg.to_owned()) {
        eprintln!("{msg}");
    }
}

/// Prints the message `msg()` on stderr the first time this process reports `kind` at
/// `location` (a spawn site, a call site): the reports of misuse that could otherwise flood
/// stderr once per G or per call.
pub(crate) fn warn_once_at(kind: &'static str, location: &'static Location<'static>, msg: impl FnOnce() -> String) {
    type Key = (&'static str, &'static Location<'static>);
    static SEEN: StdMutex<Option<HashSet<Key>>> = StdMutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert((kind, location)) {
        drop(seen);
        eprintln!("{}", msg());
    }
}

/// The number of CPUs this process may use.
pub(crate) fn ncpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `max_procs` when the builder sets none: `GORO_MAXPROCS`, else the number of CPUs.
pub(crate) fn default_max_procs() -> usize {
    let cpus = ncpu();
    match std::env::var("GORO_MAXPROCS") {
        Err(std::env::VarError::NotPresent) => cpus,
        Ok(v) => match parse_procs(&v) {
            Ok(n) => n,
            Err(why) => {
                warn_once(&format!("goro: GORO_MAXPROCS={v:?} {why}; using {cpus} (the number of CPUs)"));
                cpus
            }
        },
        Err(std::env::VarError::NotUnicode(v)) => {
            warn_once(&format!("goro: GORO_MAXPROCS={v:?} is not valid UTF-8; using {cpus} (the number of CPUs)"));
            cpus
        }
    }
}

pub(crate) fn parse_procs(v: &str) -> Result<usize, &'static str> {
    match v.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1"),
        Ok(n) => Ok(n),
        Err(_) => Err("is not a positive integer"),
    }
}

/// The settings of `GORO_DEBUG` (comma-separated `name=value`, as in `GODEBUG`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DebugVars {
    pub(crate) schedtrace: Option<Duration>,
}

pub(crate) fn debug_vars() -> DebugVars {
    match std::env::var("GORO_DEBUG") {
        Ok(v) => {
            let (vars, errors) = parse_debug(&v);
            for e in errors {
                warn_once(&format!("goro: GORO_DEBUG={v:?}: {e}"));
            }
            vars
        }
        Err(std::env::VarError::NotPresent) => DebugVars::default(),
        Err(std::env::VarError::NotUnicode(v)) => {
            warn_once(&format!("goro: GORO_DEBUG={v:?} is not valid UTF-8; ignored"));
            DebugVars::default()
        }
    }
}

pub(crate) fn parse_debug(v: &str) -> (DebugVars, Vec<String>) {
    let mut vars = DebugVars::default();
    let mut errors = Vec::new();
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, value)) = item.split_once('=') else {
            errors.push(format!("{item:?} is not name=value; ignored"));
            continue;
        };
        match name.trim() {
            "schedtrace" => match value.trim().parse::<u64>() {
                Ok(0) => vars.schedtrace = None,
                Ok(ms) => vars.schedtrace = Some(Duration::from_millis(ms)),
                Err(_) => errors.push(format!("schedtrace={value:?} is not a number of milliseconds; ignored")),
            },
            other => errors.push(format!("unknown setting {other:?} (known: schedtrace); ignored")),
        }
    }
    (vars, errors)
}

/// Which threads of the process may wake a G unseen, besides goro's own (see `checkdead`'s
/// module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Census {
    /// Every other thread.
    AllThreads,
    /// Every other thread but the process's main thread (a test harness's, which holds no
    /// handle): what `#[goro::test]` asks for.
    ExceptMainThread,
}

/// What to do with a G's panic that no `JoinHandle` observed (`Builder::unhandled_panic`).
///
/// ```
/// use goro::runtime::UnhandledPanic;
/// let rt = goro::runtime::Builder::new().unhandled_panic(UnhandledPanic::ShutdownRuntime).build().unwrap();
/// let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
///     rt.block_on(async {
///         drop(goro::go(async { panic!("boom") })); // detached: nothing will observe it
///         std::future::pending::<()>().await; // main would wait forever
///     })
/// }));
/// assert_eq!(*ended.unwrap_err().downcast::<&str>().unwrap(), "boom");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnhandledPanic {
    /// Print it in Go's shape and go on (the default of `goro::run` and `Builder`): the other
    /// Gs and main keep running.
    #[default]
    Ignore,
    /// Print it, then end the run with it, as Go does: `block_on` (and `goro::run`) resumes the
    /// G's panic in the calling thread, a `#[goro::main]` program exits with status 2, a
    /// `#[goro::test]` fails with the G's panic (both use this policy).
    ShutdownRuntime,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn procs() {
        assert_eq!(parse_procs("4"), Ok(4));
        assert_eq!(parse_procs(" 2 "), Ok(2));
        assert!(parse_procs("0").is_err());
        assert!(parse_procs("-1").is_err());
        assert!(parse_procs("two").is_err());
    }

    #[test]
    fn debug() {
        let (v, e) = parse_debug("schedtrace=1000");
        assert_eq!(v.schedtrace, Some(Duration::from_secs(1)));
        assert!(e.is_empty());
        let (v, e) = parse_debug("schedtrace=x,foo=1,bare");
        assert_eq!(v.schedtrace, None);
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[1].contains("unknown setting \"foo\""));
    }
}
