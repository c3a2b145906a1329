//! Starting and stopping: the process's tracer, where its buffers go, and the lock that
//! serializes [`start`], [`stop`] and the flight recorder's calls.

use super::buf::{Buf, Sink, Tracer};
use super::json;
use super::window::Window;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::OnceLock;

/// Whether events are being recorded (a trace or a flight recorder runs): the one load an
/// event site pays while nothing is traced.
pub(super) static ON: AtomicBool = AtomicBool::new(false);

/// Where the buffers go.
pub(super) enum Out {
    Off,
    /// To the `goro-trace` thread of [`start`].
    Stream(mpsc::Sender<Buf>),
    /// Into a flight recorder's window.
    Flight(Window),
}

impl Sink for Out {
    fn put(&mut self, buf: Buf) {
        match self {
            Out::Off => {}
            Out::Stream(tx) => {
                let _ = tx.send(buf);
            }
            Out::Flight(w) => w.put(buf),
        }
    }
}

/// The process's tracer (under loom no trace ever runs).
pub(super) fn tracer() -> &'static Tracer<Out> {
    static TRACER: OnceLock<Tracer<Out>> = OnceLock::new();
    TRACER.get_or_init(|| Tracer::new(Out::Off))
}

/// What runs, under the control lock: starting, stopping and reading are serialized by it.
pub(super) struct Control {
    /// The last generation used (generations never repeat, so two in a row differ in parity).
    pub(super) gen: u64,
    /// The `goro-trace` thread of a running [`start`].
    pub(super) writer: Option<std::thread::JoinHandle<io::Result<()>>>,
    /// Whether a flight recorder runs.
    pub(super) flight: bool,
}

/// Not the loom shim's lock: starting and stopping a trace is no part of any model.
pub(super) static CONTROL: parking_lot::Mutex<Control> =
    parking_lot::Mutex::new(Control { gen: 0, writer: None, flight: false });

/// Go's `trace.Start`: from now on, record the execution trace and write it to `w` (from a
/// thread of goro's, as the events come) until [`stop`].
///
/// # Errors
/// `tracing is already enabled` (Go's message) if a trace or a [`FlightRecorder`](super::FlightRecorder) runs, and
/// the error of writing the trace's first bytes to `w`.
///
/// ```
/// let out = std::env::temp_dir().join("goro-doc-trace.json");
/// goro::trace::start(std::fs::File::create(&out).unwrap()).unwrap();
/// goro::run(async {
///     let (tx, rx) = goro::chan::<u32>(0);
///     goro::go(async move { tx.send(1).await.unwrap() });
///     rx.recv().await;
/// });
/// goro::trace::stop().unwrap();
/// let json = std::fs::read_to_string(&out).unwrap();
/// assert!(json.starts_with("{\"traceEvents\":["));
/// ```
pub fn start(w: impl io::Write + Send + 'static) -> io::Result<()> {
    let mut c = CONTROL.lock();
    if c.writer.is_some() || c.flight {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, "tracing is already enabled"));
    }
    let mut out = json::Writer::new(io::BufWriter::new(w));
    out.begin()?;
    let (tx, rx) = mpsc::channel::<Buf>();
    let writer = std::thread::Builder::new().name("goro-trace".into()).spawn(move || {
        let _own = crate::threads::OwnThread::enter();
        for buf in rx {
            out.buf(&buf)?;
        }
        out.finish()
    })?;
    tracer().with_sink(|s| *s = Out::Stream(tx));
    c.gen += 1;
    tracer().advance(c.gen);
    c.writer = Some(writer);
    ON.store(true, Relaxed);
    Ok(())
}

/// Go's `trace.Stop`: stops the trace [`start`]ed, writes what is left of it and waits until
/// it is all written. Does nothing if no trace runs.
///
/// # Errors
/// The first error writing the trace met (the events after it were dropped).
pub fn stop() -> io::Result<()> {
    let mut c = CONTROL.lock();
    let Some(writer) = c.writer.take() else { return Ok(()) };
    ON.store(false, Relaxed);
    tracer().advance(0);
    // Dropping the sender ends the writer's loop once it has written every buffer.
    tracer().with_sink(|s| *s = Out::Off);
    drop(c);
    writer.join().unwrap_or_else(|_| Err(io::Error::other("goro: the trace writer panicked")))
}

/// Writes the running flight recorder's window to `w` (see [`FlightRecorder::write_to`]).
pub(crate) fn write_window(w: &mut impl io::Write) -> io::Result<u64> {
    let bufs = {
        let mut c = CONTROL.lock();
        if !c.flight {
            return Err(io::Error::other("goro: no flight recorder runs"));
        }
        // End the generation, so that every thread's partial buffer joins the window; the
        // threads go on in the next one.
        c.gen += 1;
        tracer().advance(c.gen);
        tracer().with_sink(|s| match s {
            Out::Flight(win) => win
                .bufs
                .iter()
                .map(|(_, b)| Buf { gen: b.gen, thread: b.thread, bytes: b.bytes.clone() })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
    };
    let mut counted = Counted { w, n: 0 };
    let mut out = json::Writer::new(&mut counted);
    out.begin()?;
    for b in &bufs {
        out.buf(b)?;
    }
    out.finish()?;
    Ok(counted.n)
}

/// Counts what goes through.
struct Counted<'a, W> {
    w: &'a mut W,
    n: u64,
}

impl<W: io::Write> io::Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.w.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}
