//! `SIGQUIT` (Ctrl-\) dumps every G and exits with status 2, as a Go program does.
//!
//! The signal is caught by signal-hook, whose handler only writes to a pipe (no allocation, no
//! lock in signal context); a thread of goro's waits on the pipe and does the rest: the dump of
//! every runtime of the process on stderr, then `exit(2)`. `#[goro::main]` turns it on; other
//! programs call [`dump_on_sigquit`] once.

use std::io;

/// Makes `SIGQUIT` (Ctrl-\ in a terminal, `kill -QUIT`) print every G of every goro runtime
/// of the process on stderr, in Go's shape ([`dump`](crate::dump)), after Go's `SIGQUIT: quit`
/// line, and exit with status 2, as a Go program does. `#[goro::main]` programs have it on;
/// others call this once (later calls do nothing). Unix only: elsewhere it does nothing.
///
/// # Errors
/// If the signal handler or its thread cannot be set up.
///
/// ```
/// goro::runtime::dump_on_sigquit().unwrap();
/// ```
pub fn dump_on_sigquit() -> io::Result<()> {
    #[cfg(all(unix, not(loom)))]
    {
        use std::sync::Mutex;
        static STARTED: Mutex<bool> = Mutex::new(false);
        let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
        if *started {
            return Ok(());
        }
        let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGQUIT])?;
        std::thread::Builder::new().name("goro-sigquit".into()).spawn(move || {
            // It can wake no G: it does not keep a deadlock from being reported.
            let _own = crate::threads::OwnThread::enter();
            if signals.forever().next().is_some() {
                let dumps = crate::checkdead::dump_all();
                let _ = io::Write::flush(&mut io::stdout());
                eprint!("SIGQUIT: quit\n\n{dumps}");
                std::process::exit(2);
            }
        })?;
        *started = true;
    }
    Ok(())
}
