//! Go 1.25's flight recorder: the trace kept in memory, the last stretch of it only, to write
//! out when something went wrong (a slow request seen, a deadlock reported).

use super::control::{tracer, write_window, Out, CONTROL, ON};
use super::window::{FlightRecorderConfig, Window};
use std::io;
use std::sync::atomic::Ordering::Relaxed;

/// Go's `trace.FlightRecorder`: records the execution trace into a window in memory, of at
/// least [`min_age`](FlightRecorderConfig::min_age) and at most
/// [`max_bytes`](FlightRecorderConfig::max_bytes), and writes the window on request.
///
/// While one runs, a deadlock report of goro's (Go's `all goroutines are asleep`) writes its
/// window to a file and names the file in the report.
///
/// ```
/// use goro::trace::{FlightRecorder, FlightRecorderConfig};
/// use std::time::Duration;
///
/// let mut fr = FlightRecorder::new(FlightRecorderConfig { min_age: Duration::from_secs(5), max_bytes: 1 << 20 });
/// fr.start().unwrap();
/// goro::run(async {
///     for i in 0..10 {
///         goro::go(async move { goro::time::sleep(Duration::from_millis(i)).await }).await.unwrap();
///     }
/// });
/// // Something looked wrong: keep the last seconds.
/// let mut out = Vec::new();
/// fr.write_to(&mut out).unwrap();
/// fr.stop();
/// assert!(out.starts_with(b"{\"traceEvents\":["));
/// ```
#[derive(Debug)]
pub struct FlightRecorder {
    cfg: FlightRecorderConfig,
    running: bool,
}

impl FlightRecorder {
    /// Go's `trace.NewFlightRecorder`: a recorder that is not running yet.
    pub fn new(cfg: FlightRecorderConfig) -> FlightRecorder {
        FlightRecorder { cfg, running: false }
    }

    /// Go's `FlightRecorder.Start`: from now on, record.
    ///
    /// # Errors
    /// `tracing is already enabled` if a trace ([`start`](super::start)) or another flight
    /// recorder runs.
    pub fn start(&mut self) -> io::Result<()> {
        let mut c = CONTROL.lock();
        if c.writer.is_some() || c.flight {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "tracing is already enabled"));
        }
        tracer().with_sink(|s| *s = Out::Flight(Window::new(self.cfg)));
        c.gen += 1;
        tracer().advance(c.gen);
        c.flight = true;
        self.running = true;
        ON.store(true, Relaxed);
        Ok(())
    }

    /// Go's `FlightRecorder.Enabled`.
    pub fn enabled(&self) -> bool {
        self.running
    }

    /// Go's `FlightRecorder.WriteTo`: writes the window (the last `min_age` or so of the
    /// trace, as trace-event JSON) to `w`, and returns the bytes written. Recording goes on.
    ///
    /// # Errors
    /// If the recorder is not running, or writing to `w` failed.
    pub fn write_to(&self, w: &mut impl io::Write) -> io::Result<u64> {
        if !self.running {
            return Err(io::Error::other("goro: the flight recorder is not running"));
        }
        write_window(w)
    }

    /// How many bytes of events the window holds now (0 if the recorder is not running).
    pub fn window_bytes(&self) -> usize {
        if !self.running {
            return 0;
        }
        tracer().with_sink(|s| match s {
            Out::Flight(w) => w.bytes(),
            _ => 0,
        })
    }

    /// Go's `FlightRecorder.Stop`: stops recording and drops the window.
    pub fn stop(&mut self) {
        if !self.running {
            return;
        }
        self.running = false;
        let mut c = CONTROL.lock();
        ON.store(false, Relaxed);
        tracer().advance(0);
        tracer().with_sink(|s| *s = Out::Off);
        c.flight = false;
    }
}

impl Drop for FlightRecorder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// For a deadlock report: writes the running flight recorder's window to a new file in the
/// temporary directory and returns its path; `None` if no recorder runs.
pub(crate) fn dump_for_report(what: &str) -> Option<io::Result<std::path::PathBuf>> {
    if !CONTROL.lock().flight {
        return None;
    }
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, Relaxed);
    let path = std::env::temp_dir().join(format!("goro-{what}-{}-{n}.trace.json", std::process::id()));
    Some((|| {
        let mut f = io::BufWriter::new(std::fs::File::create(&path)?);
        write_window(&mut f)?;
        io::Write::flush(&mut f)?;
        Ok(path)
    })())
}
