//! The modules of each crate of the workspace import each other in one direction only, except
//! the circles of [`ALLOWED`], each with its reason: the layering that crates/runtime's
//! `src/lib.rs` (its `# Layout`) describes, and the same rule for every other crate. A change
//! that closes another circle fails here, naming the modules and the importing lines; so does
//! an entry of `ALLOWED` that is no longer a circle. The crates are the root package and every
//! member of the workspace with a `src/lib.rs`. What counts as a module and as an import is in
//! `imports.rs`; the tests at the bottom plant each kind of circle, in a small crate and in each
//! crate of the workspace, and check that the report names it.
//!
//! It lives in this unpublished member because it reads the sources of every crate.

mod imports;

use imports::{circles, graph, permit, read_crate, Sources};
use std::fs;
use std::path::{Path, PathBuf};

/// The circles that are there on purpose, or that their owners are removing: the crate's
/// directory, the modules and why. An entry permits the imports among its modules, which must
/// still make a circle through all of them; with those taken out, no circle may be left.
const ALLOWED: &[(&str, &[&str], &str)] = &[
    (
        "crates/runtime",
        &["model", "model::join"],
        "goro::model (loom only) is one scheduler over one `Model` state: a model's Join waits on the G slot that \
         mod.rs owns, and mod.rs hands Joins out",
    ),
    (
        "crates/runtime",
        &["model", "model::time"],
        "goro::model (loom only): its virtual clock (time.rs) is part of the `Model` state that mod.rs defines, and \
         fires timers through it",
    ),
    (
        ".",
        &["context", "context::node"],
        "a Context is a handle on its Node, and a Node holds its parent Context (Go's cancelCtx and its parent): \
         one type in two files, as the net pair below",
    ),
    (
        ".",
        &["net::split", "net::stream"],
        "a TcpStream makes its split halves, which hold it: one type in two files, as tokio's tcp/stream.rs and \
         tcp/split.rs",
    ),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace's directory")
}

/// The directories of the workspace's library crates (`.` for the root package), from the root
/// Cargo.toml's `members`.
fn library_crates(root: &Path) -> Vec<String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let start = manifest.find("members").expect("[workspace] members");
    let list = &manifest[start..];
    let list = &list[list.find('[').expect("members = [")..=list.find(']').expect("members = [..]")];
    let mut dirs = vec![".".to_owned()];
    dirs.extend(list.split('"').skip(1).step_by(2).map(str::to_owned));
    dirs.retain(|d| root.join(d).join("src/lib.rs").is_file());
    dirs
}

/// What is wrong with the crate in `dir` whose sources are `src`: each entry of [`ALLOWED`]
/// that is no longer a circle, and each circle that is not in it.
fn check(dir: &str, src: &Sources) -> (Vec<String>, Vec<String>) {
    let mut g = graph(src).unwrap_or_else(|e| panic!("{dir}: {e}"));
    if dir == "crates/runtime" {
        // The sources were read: the runtime has some 40 modules and hundreds of imports.
        assert!(g.modules.len() > 30 && g.imports.len() > 200, "{dir}: {g:?}");
    }
    let mut gone = Vec::new();
    for (_, modules, why) in ALLOWED.iter().filter(|(d, ..)| *d == dir) {
        match permit(&g, modules) {
            Ok(rest) => g = rest,
            Err(e) => gone.push(format!("{dir}: {e}: take ({why}) out of ALLOWED\n")),
        }
    }
    (gone, circles(&g).iter().map(|c| c.report(dir)).collect())
}

fn crates() -> Vec<(String, Sources)> {
    let root = workspace();
    let dirs = library_crates(&root);
    for expected in [".", "crates/runtime", "crates/chan", "crates/sync", "crates/macros"] {
        assert!(dirs.iter().any(|c| c == expected), "{expected} was not found among the crates {dirs:?}");
    }
    for (dir, ..) in ALLOWED {
        assert!(dirs.iter().any(|c| c == dir), "ALLOWED names {dir}, which is not a crate");
    }
    dirs.into_iter().map(|d| (d.clone(), read_crate(&root.join(&d)))).collect()
}

#[test]
fn no_crate_has_an_import_circle_but_the_allowed_ones() {
    let failures: Vec<String> = crates()
        .iter()
        .flat_map(|(dir, src)| {
            let (gone, circles) = check(dir, src);
            gone.into_iter().chain(circles)
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.concat());
}

#[test]
fn a_circle_planted_in_any_crate_fails_the_check() {
    for (dir, mut src) in crates() {
        // Through a re-export of the crate root, through a grouped import, in code.
        let root = src.get_mut("src/lib.rs").expect("the crate root");
        root.push_str(
            "\nmod planted_a;\nmod planted_b;\npub use planted_b::planted_helper;\nmod planted_c;\nmod planted_d;\n\
             mod planted_e;\nmod planted_f;\n",
        );
        for (file, text) in [
            ("src/planted_a.rs", "pub struct A;\nfn f() {\n    crate::planted_helper();\n}\n"),
            ("src/planted_b.rs", "pub fn planted_helper() -> crate::planted_a::A {\n    crate::planted_a::A\n}\n"),
            ("src/planted_c.rs", "pub struct C;\nuse crate::{\n    planted_d::{D, E},\n};\n"),
            ("src/planted_d.rs", "pub struct D;\npub struct E;\nuse crate::{planted_c::C};\n"),
            ("src/planted_e.rs", "pub struct E(pub crate::planted_f::F);\n"),
            ("src/planted_f.rs", "pub struct F;\nfn f(e: crate::planted_e::E) {}\n"),
        ] {
            src.insert(file.to_owned(), text.to_owned());
        }
        let report = check(&dir, &src).1.concat();
        let prefix = if dir == "." { String::new() } else { format!("{dir}/") };
        for wanted in [
            format!("{dir}: the modules planted_a, planted_b import each other in a circle"),
            format!("planted_a -> planted_b    {prefix}src/planted_a.rs:3: crate::planted_helper();"),
            format!("planted_b -> planted_a    {prefix}src/planted_b.rs:1: pub fn planted_helper() -> crate::planted_a::A {{"),
            format!("{dir}: the modules planted_c, planted_d import each other in a circle"),
            format!("planted_c -> planted_d    {prefix}src/planted_c.rs:3: planted_d::{{D, E}},"),
            format!("planted_d -> planted_c    {prefix}src/planted_d.rs:3: use crate::{{planted_c::C}};"),
            format!("{dir}: the modules planted_e, planted_f import each other in a circle"),
            format!("planted_e -> planted_f    {prefix}src/planted_e.rs:1: pub struct E(pub crate::planted_f::F);"),
            format!("planted_f -> planted_e    {prefix}src/planted_f.rs:2: fn f(e: crate::planted_e::E) {{}}"),
        ] {
            assert!(report.contains(&wanted), "{dir}: the report lacks {wanted:?}:\n{report}");
        }
        assert_eq!(report.matches("import each other in a circle").count(), 3, "{dir}:\n{report}");
    }
}

#[test]
fn an_allowed_circle_that_is_gone_fails_the_check() {
    let g = graph(&planted(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
        ("src/b.rs", "pub struct B;\n"),
    ]))
    .expect("a graph");
    let e = permit(&g, &["a", "b"]).unwrap_err();
    assert!(e.contains("do not import each other in a circle"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// The check on planted crates.

fn planted(files: &[(&str, &str)]) -> Sources {
    files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
}

/// The report of every circle of the planted crate.
fn report(files: &[(&str, &str)]) -> String {
    let g = graph(&planted(files)).unwrap_or_else(|e| panic!("{e}"));
    circles(&g).iter().map(|c| c.report("planted")).collect()
}

#[track_caller]
fn assert_reports(report: &str, wanted: &[&str]) {
    for w in wanted {
        assert!(report.contains(w), "the report lacks {w:?}:\n{report}");
    }
}

#[test]
fn a_plain_circle_is_reported_with_its_lines() {
    let r = report(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
        ("src/b.rs", "// use crate::a::A; is a comment\n\nuse crate::a::A;\npub struct B(Box<A>);\n"),
    ]);
    assert_reports(
        &r,
        &[
            "planted: the modules a, b import each other in a circle",
            "a -> b    planted/src/a.rs:1: use crate::b::B;",
            "b -> a    planted/src/b.rs:3: use crate::a::A;",
        ],
    );
    assert_eq!(r.lines().count(), 3, "{r}");
}

#[test]
fn a_circle_through_a_reexport_of_the_crate_root_is_reported() {
    // a.rs calls `crate::helper`, which the root re-exports from b; b imports a.
    let r = report(&[
        ("src/lib.rs", "mod a;\nmod b;\n\npub use b::helper;\npub use a::{start, A};\n"),
        ("src/a.rs", "pub struct A;\npub fn start() {\n    crate::helper();\n}\n"),
        ("src/b.rs", "pub fn helper() -> crate::A {\n    crate::a::A\n}\n"),
    ]);
    assert_reports(
        &r,
        &[
            "planted: the modules a, b import each other in a circle",
            "a -> b    planted/src/a.rs:3: crate::helper();",
            "b -> a    planted/src/b.rs:1: pub fn helper() -> crate::A {",
            "b -> a    planted/src/b.rs:2: crate::a::A",
        ],
    );
    // The root re-exports both and imports neither: it is in no circle.
    assert!(!r.contains("crate ->"), "{r}");
}

#[test]
fn a_circle_through_a_grouped_import_is_reported() {
    let r = report(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("src/a.rs", "use crate::{\n    c::C,\n    b::{inner::B, Other},\n};\npub struct A;\n"),
        ("src/b/mod.rs", "pub mod inner;\npub struct Other;\n"),
        ("src/b/inner.rs", "use crate::{a::A as Renamed, c};\npub struct B(Renamed, c::C);\n"),
        ("src/c.rs", "pub struct C;\n"),
    ]);
    assert_reports(
        &r,
        &[
            "planted: the modules a, b::inner import each other in a circle",
            "a -> b::inner    planted/src/a.rs:3: b::{inner::B, Other},",
            "b::inner -> a    planted/src/b/inner.rs:1: use crate::{a::A as Renamed, c};",
        ],
    );
    assert!(!r.contains("-> c"), "c is in no circle: {r}");
}

#[test]
fn a_circle_through_a_path_in_code_is_reported() {
    let r = report(&[
        ("src/lib.rs", "mod m;\nmod sched;\n"),
        ("src/m.rs", "pub fn schedule(s: &crate::sched::Shared) {}\n"),
        (
            "src/sched.rs",
            "pub struct Shared;\nfn wake() {\n    let x = \"crate::m::no\";\n    crate::m::schedule(&Shared)\n}\n",
        ),
    ]);
    assert_reports(
        &r,
        &[
            "m -> sched    planted/src/m.rs:1: pub fn schedule(s: &crate::sched::Shared) {}",
            "sched -> m    planted/src/sched.rs:4: crate::m::schedule(&Shared)",
        ],
    );
    assert!(!r.contains("sched.rs:3"), "a string is no import: {r}");
}

#[test]
fn a_submodule_and_its_parent_import_each_other_through_super_and_child_paths() {
    let r = report(&[
        ("src/lib.rs", "mod g;\n"),
        (
            "src/g/mod.rs",
            "mod join;\nmod raw;\npub use join::JoinHandle;\npub trait Schedule {}\nfn f() { raw::free() }\n",
        ),
        ("src/g/join.rs", "use super::raw::Header;\npub struct JoinHandle(Header);\n"),
        ("src/g/raw.rs", "use super::Schedule;\npub struct Header;\npub fn free() {}\n"),
    ]);
    // raw imports g (Schedule) and g calls raw; g's re-export of join is not an import of join.
    assert_reports(
        &r,
        &[
            "planted: the modules g, g::raw import each other in a circle",
            "g -> g::raw    planted/src/g/mod.rs:5: fn f() { raw::free() }",
            "g::raw -> g    planted/src/g/raw.rs:1: use super::Schedule;",
        ],
    );
    assert!(!r.contains("g::join"), "{r}");
    // raw -> join and join -> raw close a second circle, once raw's import of JoinHandle is
    // resolved through g's re-export.
    let r = report(&[
        ("src/lib.rs", "mod g;\n"),
        ("src/g/mod.rs", "mod join;\nmod raw;\npub use join::JoinHandle;\n"),
        ("src/g/join.rs", "use super::raw::Header;\npub struct JoinHandle(Header);\n"),
        ("src/g/raw.rs", "use super::JoinHandle;\npub struct Header;\n"),
    ]);
    assert_reports(
        &r,
        &[
            "planted: the modules g::join, g::raw import each other in a circle",
            "g::raw -> g::join    planted/src/g/raw.rs:1: use super::JoinHandle;",
        ],
    );
}

#[test]
fn a_module_imported_by_name_is_followed_into_its_paths() {
    let r = report(&[
        ("src/lib.rs", "mod a;\nmod g;\n"),
        ("src/g/mod.rs", "pub mod raw;\n"),
        ("src/g/raw.rs", "pub fn header() -> crate::a::A { crate::a::A }\n"),
        ("src/a.rs", "use crate::g::{self};\npub struct A;\nfn f() {\n    g::raw::header();\n}\n"),
    ]);
    assert_reports(&r, &["a -> g::raw    planted/src/a.rs:4: g::raw::header();"]);
    assert!(!r.contains("-> g "), "naming the module g is not an import of g: {r}");
}

#[test]
fn test_code_and_comments_are_no_imports() {
    let r = report(&[
        ("src/lib.rs", "mod a;\nmod b;\n#[cfg(all(test, loom))]\nmod loom_tests;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "src/b.rs",
            "/* crate::a::A /* nested */ crate::a::A */\npub struct B;\n/// crate::a::A\nfn f() -> char { '\"' }\n\
             const S: &str = r#\"crate::a::A\"#;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
        ),
        ("src/loom_tests.rs", "use crate::{a::A, b::B};\n"),
    ]);
    assert_eq!(r, "");
}

#[test]
fn a_reexport_used_by_its_own_module_is_an_import() {
    let r = report(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "pub(crate) use crate::b::Spinning;\npub struct A(Spinning);\n"),
        ("src/b.rs", "pub struct Spinning;\nfn f(_: crate::a::A) {}\n"),
    ]);
    assert_reports(&r, &["a -> b    planted/src/a.rs:1: pub(crate) use crate::b::Spinning;"]);
}

#[test]
fn a_file_no_declaration_reaches_is_an_error() {
    let e = graph(&planted(&[("src/lib.rs", "mod a;\n"), ("src/a.rs", ""), ("src/b.rs", "")])).unwrap_err();
    assert!(e.contains("src/b.rs"), "{e}");
    let e = graph(&planted(&[("src/lib.rs", "mod a;\nmod b;\n"), ("src/a.rs", "")])).unwrap_err();
    assert!(e.contains("`mod b;` has no file"), "{e}");
}
