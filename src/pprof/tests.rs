//! The formats, from records made by hand: the text exactly as Go prints it, the proto as
//! pprof decodes it.

use super::*;
use prost::Message as _;
use std::io::Read as _;

fn line(function: &str, file: &str, line: u32) -> Line {
    Frame::synthetic(function, Some(file.to_owned()), Some(line)).lines.remove(0)
}

/// A frame at `addr` with `lines` (innermost first: more than one when calls were inlined).
fn frame(addr: usize, lines: Vec<Line>) -> Frame {
    let mut f = Frame::synthetic("", None, None);
    f.addr = addr;
    f.lines = lines;
    f
}

fn spawn_site() -> Frame {
    Frame::synthetic("go src/main.rs:40", Some("src/main.rs".to_owned()), Some(40))
}

/// Two stacks of a block profile: a channel receive in an `async fn` inlined into its caller,
/// and a frame without a symbol; both rooted at the same spawn site.
fn records() -> Vec<Record> {
    let recv = frame(0x4a1b2c, vec![line("goro_chan::Receiver<T>::recv::{{closure}}", "crates/chan/src/lib.rs", 210)]);
    let consumer = frame(
        0x4a2000,
        vec![line("app::consumer::{{closure}}", "src/main.rs", 14), line("app::run::{{closure}}", "src/main.rs", 30)],
    );
    let unknown = frame(0x10, vec![Frame::synthetic("??", None, None).lines.remove(0)]);
    vec![Record::new(3, 5000, vec![recv, consumer, spawn_site()]), Record::new(1, 9000, vec![unknown, spawn_site()])]
}

fn text(p: &Profile, debug: u8) -> String {
    let mut out = Vec::new();
    p.write_to(&mut out, debug).unwrap();
    String::from_utf8(out).unwrap()
}

fn decode(p: &Profile) -> proto::Profile {
    let mut gz = Vec::new();
    p.write_to(&mut gz, 0).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip's magic number");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut raw).unwrap();
    proto::Profile::decode(&raw[..]).unwrap()
}

#[test]
fn lookup_knows_three_profiles() {
    for name in ["goroutine", "block", "mutex"] {
        assert_eq!(lookup(name).unwrap().name(), name);
    }
    for name in ["heap", "allocs", "threadcreate", "Block", ""] {
        assert!(lookup(name).is_none(), "{name}");
    }
}

/// Go's `text/tabwriter` (minimum width 1, tab width 8, padding 1, tabs), as Go itself
/// printed these inputs.
#[test]
fn tabwriter_aligns_as_go() {
    assert_eq!(text::tabwriter(""), "");
    assert_eq!(text::tabwriter("no tabs\n"), "no tabs\n");
    assert_eq!(text::tabwriter("a\tb\nccccccccc\td\n"), "a\t\tb\nccccccccc\td\n");
    assert_eq!(text::tabwriter("#\t0x1\tf+0x0\tx.go:1\n#\t0x1\n\n"), "#\t0x1\tf+0x0\tx.go:1\n#\t0x1\n\n");
    // A column is aligned over consecutive lines with a cell in it only: the line without
    // one (`@`) starts a new block.
    assert_eq!(
        text::tabwriter("#\taaaaaaaaaaaaaaaa\tx\n#\tb\ty\n@\n#\tc\tz\n"),
        "#\taaaaaaaaaaaaaaaa\tx\n#\tb\t\t\ty\n@\n#\tc\tz\n"
    );
    assert_eq!(text::tabwriter("aaaaaaa\tb\naaaaaaaa\tb"), "aaaaaaa\t\tb\naaaaaaaa\tb");
    // Cells are measured in characters, not bytes.
    assert_eq!(text::tabwriter("ééééééé\tb\nx\tb\n"), "ééééééé\tb\nx\tb\n");
}

#[test]
fn block_text_is_gos() {
    let p = Profile::from_records("block", records()).unwrap();
    let want = "\
--- contention:
cycles/second=1000000000
9000 1 @ 0x10 0x0
#\t0x10
#\t0x0\tgo src/main.rs:40+0x0\tsrc/main.rs:40

5000 3 @ 0x4a1b2c 0x4a2000 0x0
#\t0x4a1b2c\tgoro_chan::Receiver<T>::recv::{{closure}}+0x0\tcrates/chan/src/lib.rs:210
#\t0x4a2000\tapp::consumer::{{closure}}+0x0\t\t\tsrc/main.rs:14
#\t0x4a2000\tapp::run::{{closure}}+0x0\t\t\tsrc/main.rs:30
#\t0x0\t\tgo src/main.rs:40+0x0\t\t\t\tsrc/main.rs:40

";
    assert_eq!(text(&p, 1), want);
    // Go prints debug 2 and up as 1 for this profile.
    assert_eq!(text(&p, 2), want);
}

#[test]
fn mutex_text_names_its_sampling_period() {
    let p = Profile::from_records("mutex", vec![Record::new(2, 700, vec![spawn_site()])]).unwrap();
    let want = format!(
        "--- mutex:\ncycles/second=1000000000\nsampling period={}\n700 2 @ 0x0\n#\t0x0\tgo src/main.rs:40+0x0\tsrc/main.rs:40\n\n",
        mutex_rate()
    );
    assert_eq!(text(&p, 1), want);
}

#[test]
fn empty_profiles() {
    assert_eq!(
        text(&Profile::from_records("block", Vec::new()).unwrap(), 1),
        "--- contention:\ncycles/second=1000000000\n"
    );
    assert_eq!(text(&Profile::from_records("goroutine", Vec::new()).unwrap(), 1), "goroutine profile: total 0\n");
    let p = decode(&Profile::from_records("block", Vec::new()).unwrap());
    assert!(p.sample.is_empty() && p.location.is_empty() && p.function.is_empty());
    assert_eq!(p.string_table[0], "");
}

#[test]
fn goroutine_text_counts_gs() {
    let state = |s: &str| Frame::synthetic(s, None, None);
    let records = vec![
        Record::new(1, 0, vec![state("running"), Frame::synthetic("main", Some("src/main.rs".into()), Some(3))]),
        Record::new(4, 0, vec![state("chan receive"), spawn_site()]),
    ];
    let p = Profile::from_records("goroutine", records).unwrap();
    assert_eq!(
        text(&p, 1),
        "\
goroutine profile: total 5
4 @ 0x0 0x0
#\t0x0\tchan receive+0x0\t?:0
#\t0x0\tgo src/main.rs:40+0x0\tsrc/main.rs:40

1 @ 0x0 0x0
#\t0x0\trunning+0x0\t?:0
#\t0x0\tmain+0x0\tsrc/main.rs:3

"
    );
}

fn string(p: &proto::Profile, i: i64) -> &str {
    &p.string_table[usize::try_from(i).unwrap()]
}

fn value_types(p: &proto::Profile, types: &[proto::ValueType]) -> Vec<(String, String)> {
    types.iter().map(|t| (string(p, t.r#type).to_owned(), string(p, t.unit).to_owned())).collect()
}

/// A sample's stack as pprof reads it: per location, its address and `function file:line`s.
fn stack_of(p: &proto::Profile, s: &proto::Sample) -> Vec<(u64, Vec<String>)> {
    s.location_id
        .iter()
        .map(|&id| {
            let loc = &p.location[usize::try_from(id).unwrap() - 1];
            assert_eq!(loc.id, id, "location ids are their index + 1");
            assert_eq!(loc.mapping_id, 1);
            let lines = loc
                .line
                .iter()
                .map(|l| {
                    let f = &p.function[usize::try_from(l.function_id).unwrap() - 1];
                    assert_eq!(f.id, l.function_id, "function ids are their index + 1");
                    assert_eq!(f.system_name, f.name);
                    format!("{} {}:{}", string(p, f.name), string(p, f.filename), l.line)
                })
                .collect();
            (loc.address, lines)
        })
        .collect()
}

#[test]
fn block_proto_decodes() {
    let p = decode(&Profile::from_records("block", records()).unwrap());
    assert_eq!(p.string_table[0], "");
    let mut strings = p.string_table.clone();
    strings.sort();
    strings.dedup();
    assert_eq!(strings.len(), p.string_table.len(), "each string once");
    assert_eq!(
        value_types(&p, &p.sample_type),
        [("contentions".into(), "count".into()), ("delay".into(), "nanoseconds".into())]
    );
    assert_eq!(value_types(&p, p.period_type.as_slice()), [("contentions".into(), "count".into())]);
    assert_eq!(p.period, 1);
    assert!(p.time_nanos > 0);

    assert_eq!(p.mapping.len(), 1);
    let m = &p.mapping[0];
    assert_eq!(m.id, 1);
    assert!(m.has_functions && m.has_filenames && m.has_line_numbers && m.has_inline_frames);

    // Sorted as the text is: the longest delay first.
    assert_eq!(p.sample.len(), 2);
    assert_eq!(p.sample[0].value, [1, 9000]);
    assert_eq!(p.sample[1].value, [3, 5000]);
    assert_eq!(
        stack_of(&p, &p.sample[0]),
        [(0x10, vec!["?? :0".to_owned()]), (0, vec!["go src/main.rs:40 src/main.rs:40".to_owned()])]
    );
    assert_eq!(
        stack_of(&p, &p.sample[1]),
        [
            (0x4a1b2c, vec!["goro_chan::Receiver<T>::recv::{{closure}} crates/chan/src/lib.rs:210".to_owned()]),
            (
                0x4a2000,
                vec![
                    "app::consumer::{{closure}} src/main.rs:14".to_owned(),
                    "app::run::{{closure}} src/main.rs:30".to_owned()
                ]
            ),
            (0, vec!["go src/main.rs:40 src/main.rs:40".to_owned()]),
        ]
    );
    // The spawn site's location and function are shared by both stacks; the rest are one each.
    assert_eq!(p.sample[0].location_id[1], p.sample[1].location_id[2]);
    assert_eq!(p.location.len(), 4);
    assert_eq!(p.function.len(), 5);
}

#[test]
fn synthetic_frames_are_locations_of_their_own() {
    let state = |s: &str| Frame::synthetic(s, None, None);
    let records = vec![
        Record::new(2, 0, vec![state("chan receive"), spawn_site()]),
        Record::new(1, 0, vec![state("select"), spawn_site()]),
    ];
    let p = decode(&Profile::from_records("goroutine", records).unwrap());
    assert_eq!(value_types(&p, &p.sample_type), [("goroutine".into(), "count".into())]);
    assert_eq!(value_types(&p, p.period_type.as_slice()), [("goroutine".into(), "count".into())]);
    assert_eq!(p.period, 1);
    // Three locations at address 0, told apart by their functions.
    assert_eq!(p.location.len(), 3);
    assert!(p.location.iter().all(|l| l.address == 0));
    assert_eq!(p.sample[0].value, [2]);
    assert_eq!(
        stack_of(&p, &p.sample[0]),
        [(0, vec!["chan receive :0".to_owned()]), (0, vec!["go src/main.rs:40 src/main.rs:40".to_owned()])]
    );
    assert_eq!(stack_of(&p, &p.sample[1])[0], (0, vec!["select :0".to_owned()]));
}

#[test]
fn goroutine_profile_of_a_runtime() {
    crate::run(async {
        let (tx, rx) = crate::chan::<()>(0);
        let mut hs = Vec::new();
        for _ in 0..3 {
            let rx = rx.clone();
            hs.push(crate::go(async move { rx.recv().await }));
        }
        let p = lookup("goroutine").unwrap();
        // Until the three have parked: another P may be running one meanwhile.
        let mut records = p.records();
        for _ in 0..10_000 {
            if records.first().is_some_and(|r| r.count == 3 && r.stack[0].lines[0].function == "chan receive") {
                break;
            }
            crate::runtime::yield_now().await;
            records = p.records();
        }
        let r = &records[0];
        assert_eq!(r.count, 3, "{records:?}");
        assert_eq!(r.delay, 0);
        assert_eq!(r.stack[0].lines[0].function, "chan receive");
        let root = &r.stack[1].lines[0];
        assert!(root.function.starts_with("go src/pprof/tests.rs:"), "{root:?}");
        assert_eq!(root.file.as_deref(), Some("src/pprof/tests.rs"));
        // And main, running this.
        assert!(records.iter().any(|r| r.count == 1
            && r.stack[0].lines[0].function == "running"
            && r.stack[1].lines[0].function == "main"));
        assert_eq!(records.iter().map(|r| r.count).sum::<i64>(), 4);

        let mut text = Vec::new();
        p.write_to(&mut text, 1).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("goroutine profile: total 4\n3 @ 0x0 0x0\n#\t0x0\tchan receive+0x0\t"), "{text}");
        let mut dump = Vec::new();
        p.write_to(&mut dump, 2).unwrap();
        assert!(String::from_utf8(dump).unwrap().contains("[chan receive]:"));

        drop(tx);
        for h in hs {
            h.await.unwrap();
        }
    });
}
