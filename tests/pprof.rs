//! goro::pprof's profiles as `go tool pprof` reads them.
//!
//! Needs Go: `GORO_PPROF_GO` names its `go` command (`.ci/pprof-check` installs Go and sets
//! it). Without it the tests say that they skip the pprof runs, and pass; the program's test
//! still checks its records.

use goro::pprof::{Frame, Profile, Record};
use goro::sync::Mutex;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The `go` command to run `go tool pprof` with, if the environment names one.
fn go() -> Option<PathBuf> {
    let go = std::env::var_os("GORO_PPROF_GO").map(PathBuf::from);
    if go.is_none() {
        eprintln!("GORO_PPROF_GO is not set: skipping the go tool pprof checks");
    }
    go
}

/// A directory of this test process's own for the profiles, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("goro-pprof-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `profile` (debug 0) to `dir/<name>.pb.gz`.
fn write(dir: &TempDir, profile: &Profile) -> PathBuf {
    let path = dir.0.join(format!("{}.pb.gz", profile.name()));
    profile.write_to(std::fs::File::create(&path).unwrap(), 0).unwrap();
    path
}

/// `go tool pprof <args> <file>`'s output; fails the test if pprof fails or complains.
fn pprof(go: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new(go)
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        // The Go found, not another one it would download.
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", go.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "go tool pprof {args:?} {}: {}\n{stderr}{stdout}", file.display(), out.status);
    // pprof reports what it could not read (a missing binary to symbolize with, a bad
    // mapping) on stderr and goes on: a profile it reads as written has nothing to report.
    assert!(stderr.trim().is_empty(), "go tool pprof {args:?} {}: stderr:\n{stderr}", file.display());
    stdout
}

/// `text` with each line's runs of spaces made one space and trimmed.
fn squeeze(text: &str) -> String {
    text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + "\n").collect()
}

fn site(function: &str, file: &str, line: u32) -> Frame {
    Frame::synthetic(function, Some(file.to_owned()), Some(line))
}

/// A frame at `addr` (as the runtime's stacks have) for one function.
fn at(addr: usize, function: &str, file: &str, line: u32) -> Frame {
    let mut f = site(function, file, line);
    f.addr = addr;
    f
}

/// The stacks of a pipeline: a consumer blocked receiving, a producer blocked sending, both
/// spawned by `main`.
fn contention_records() -> Vec<Record> {
    vec![
        Record::new(
            12,
            3_000_000,
            vec![
                at(0x5a1000, "goro_chan::Receiver<T>::recv::{{closure}}", "crates/chan/src/lib.rs", 210),
                at(0x5b2000, "pipeline::consumer::{{closure}}", "src/main.rs", 14),
                site("go src/main.rs:40", "src/main.rs", 40),
            ],
        ),
        Record::new(
            5,
            1_000_000,
            vec![
                at(0x5a2000, "goro_chan::Sender<T>::send::{{closure}}", "crates/chan/src/lib.rs", 120),
                at(0x5b3000, "pipeline::producer::{{closure}}", "src/main.rs", 24),
                site("go src/main.rs:41", "src/main.rs", 41),
            ],
        ),
    ]
}

#[test]
fn go_tool_pprof_reads_block_and_mutex_profiles() {
    let Some(go) = go() else { return };
    let dir = TempDir::new("contention");
    for name in ["block", "mutex"] {
        let file = write(&dir, &Profile::from_records(name, contention_records()).unwrap());
        let top = pprof(&go, &["-top", "-nodecount=50"], &file);
        eprintln!("{name}: go tool pprof -top:\n{top}");
        for f in [
            "pipeline::consumer::{{closure}}",
            "pipeline::producer::{{closure}}",
            "goro_chan::Receiver::recv::{{closure}}", // pprof drops type parameters
            "go src/main.rs:40",
        ] {
            assert!(top.contains(f), "{name}: {f} missing from -top:\n{top}");
        }
        // -top's unit is the default sample type's, the last: delay, 4 ms in all.
        assert!(top.contains("Type: delay"), "{top}");
        assert!(top.contains("of 4ms total"), "{top}");

        let raw = pprof(&go, &["-raw"], &file);
        eprintln!("{name}: go tool pprof -raw:\n{raw}");
        let raw = squeeze(&raw);
        assert!(raw.contains("\ncontentions/count delay/nanoseconds\n"), "{raw}");
        // Each sample's values and its stack's location ids, leaf first.
        assert!(raw.contains("\n12 3000000: 1 2 3\n"), "{raw}");
        assert!(raw.contains("\n5 1000000: 4 5 6\n"), "{raw}");
        assert!(raw.contains("\n2: 0x5b2000 M=1 pipeline::consumer::{{closure}} src/main.rs:14:0 s=0\n"), "{raw}");
        assert!(raw.contains("\n3: 0x0 M=1 go src/main.rs:40 src/main.rs:40:0 s=0\n"), "{raw}");
    }
}

#[test]
fn go_tool_pprof_reads_goroutine_profiles() {
    let Some(go) = go() else { return };
    let dir = TempDir::new("goroutine");
    let records = vec![
        Record::new(
            7,
            0,
            vec![Frame::synthetic("chan receive", None, None), site("go src/main.rs:40", "src/main.rs", 40)],
        ),
        Record::new(1, 0, vec![Frame::synthetic("running", None, None), site("main", "src/main.rs", 3)]),
    ];
    let file = write(&dir, &Profile::from_records("goroutine", records).unwrap());
    let top = pprof(&go, &["-top", "-nodecount=50"], &file);
    eprintln!("goroutine: go tool pprof -top:\n{top}");
    for f in ["chan receive", "running", "go src/main.rs:40", "main"] {
        assert!(top.contains(f), "{f} missing from -top:\n{top}");
    }
    assert!(top.contains("Type: goroutine"), "{top}");
    assert!(top.contains("of 8 total"), "{top}");
    let traces = squeeze(&pprof(&go, &["-traces"], &file));
    assert!(traces.contains("\n7 chan receive\ngo src/main.rs:40\n"), "{traces}");
    assert!(traces.contains("\n1 running\nmain\n"), "{traces}");
}

/// The consumer of the pipeline below: it waits on every receive, the producer being slow.
async fn consumer(rx: goro::chan::Receiver<u64>, total: Arc<Mutex<u64>>) {
    while let Some(v) = rx.recv().await {
        add_under_contention(&total, v).await;
    }
}

/// Holds the lock across a sleep, so that the other Gs queue on it: the mutex profile charges
/// their wait to this function, whose unlock ends it.
async fn add_under_contention(total: &Mutex<u64>, v: u64) {
    let mut t = total.lock().await;
    goro::time::sleep(Duration::from_millis(2)).await;
    *t += v;
}

/// A program's own profiles, the runtime's records of a pipeline whose consumers block on a
/// channel and contend on a `goro::sync::Mutex`: `go tool pprof -top` names its functions.
#[test]
fn a_programs_block_and_mutex_profiles_name_its_functions() {
    goro::runtime::set_block_profile_rate(1);
    goro::runtime::set_mutex_profile_fraction(1);
    let total = Arc::new(Mutex::new(0));
    let rt = goro::runtime::Builder::new().max_procs(2).build().unwrap();
    rt.block_on(async {
        let (tx, rx) = goro::chan::<u64>(0);
        let consumers: Vec<_> = (0..3).map(|_| goro::go(consumer(rx.clone(), total.clone()))).collect();
        for v in 1..=30 {
            goro::time::sleep(Duration::from_millis(1)).await;
            tx.send(v).await.unwrap();
        }
        drop(tx);
        for c in consumers {
            c.await.unwrap();
        }
    });
    assert_eq!(*total.lock_blocking(), 465);

    for (name, function) in [("block", "consumer"), ("mutex", "add_under_contention")] {
        let profile = goro::pprof::lookup(name).unwrap();
        let named = |r: &Record| r.stack.iter().any(|f| f.lines.iter().any(|l| l.function.contains(function)));
        let records = profile.records();
        assert!(records.iter().any(named), "{name}: no record names {function}: {records:#?}");

        let Some(go) = go() else { continue };
        let dir = TempDir::new(name);
        let file = write(&dir, &profile);
        let top = pprof(&go, &["-top", "-nodecount=50"], &file);
        eprintln!("{name}: go tool pprof -top:\n{top}");
        assert!(
            top.contains(&format!("::{function}::{{{{closure}}}}")),
            "{name}: {function} missing from -top:\n{top}"
        );
        assert!(top.contains("Type: delay"), "{top}");
        // The root of each stack is the `go` of this file that spawned the G.
        assert!(top.contains(&format!("go {}:", file!())), "{name}: no spawn site of {} in -top:\n{top}", file!());
    }
}
