//! The runtime's modules import each other in one direction only, except the scheduler's shared
//! half and the M (`sched` and `m`, Go's `proc.go` split in two): the layering that
//! `src/lib.rs`'s Layout describes. A new import that closes a circle fails here, naming it.
//!
//! An import is any `crate::<module>` (or, inside `g/`, `super::<module>`) path in code, doc
//! comments excluded; the loom models and `model/` are left out (they test everything).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The circles allowed, each sorted.
const ALLOWED: &[&[&str]] = &[&["m", "sched"]];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "loom_tests" && name != "model" {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `g/raw.rs` -> `g::raw`, `g/mod.rs` -> `g`, `lib.rs` -> `lib`.
fn module_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).expect("under src").with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.is_empty() {
        "lib".to_owned()
    } else {
        parts.join("::")
    }
}

/// The module paths that follow `prefix` in `line`: `(first, first::second)` for each
/// (`crate::g::raw::Header` gives `("g", "g::raw")`).
fn refs(line: &str, prefix: &str) -> Vec<(String, String)> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    for (i, _) in line.match_indices(prefix) {
        let rest = &line[i + prefix.len()..];
        let first = ident(rest);
        if first.is_empty() {
            continue;
        }
        let second = rest[first.len()..].strip_prefix("::").map(ident).unwrap_or_default();
        let two = if second.is_empty() { first.clone() } else { format!("{first}::{second}") };
        out.push((first, two));
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mods: BTreeMap<String, PathBuf> = files.iter().map(|p| (module_of(&root, p), p.clone())).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = mods.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (m, path) in &mods {
        let text = fs::read_to_string(path).expect("read source");
        let in_g = m == "g" || m.starts_with("g::");
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let mut found = refs(code, "crate::");
            if in_g {
                found.extend(refs(code, "super::").into_iter().map(|(a, b)| (format!("g::{a}"), format!("g::{b}"))));
            }
            for (first, two) in found {
                let target = if mods.contains_key(&two) { two } else { first };
                if mods.contains_key(&target) && &target != m && target != "lib" {
                    edges.get_mut(m).expect("module").insert(target);
                }
            }
        }
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T<'_>, v: &str) {
        t.index.insert(v.to_owned(), t.next);
        t.low.insert(v.to_owned(), t.next);
        t.next += 1;
        t.stack.push(v.to_owned());
        for w in t.edges[v].clone() {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.stack.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            loop {
                let w = t.stack.pop().expect("on the stack");
                let done = w == v;
                c.push(w);
                if done {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                t.out.push(c);
            }
        }
    }
    let mut t = T { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), next: 0, out: Vec::new() };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_only_import_circle_is_sched_and_m() {
    let edges = graph();
    assert!(edges.len() > 20, "the sources were not found: {:?}", edges.keys());
    let found = circles(&edges);
    let allowed: Vec<Vec<String>> = ALLOWED.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect();
    for c in &found {
        let why: Vec<String> = c
            .iter()
            .flat_map(|a| edges[a].iter().filter(|b| c.contains(b)).map(move |b| format!("{a} -> {b}")))
            .collect();
        assert!(allowed.contains(c), "the runtime's modules import each other in a circle: {c:?}, through {why:?}");
    }
}
