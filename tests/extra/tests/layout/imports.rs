//! The import graph of one crate's modules, read from its sources, and the circles in it.
//!
//! No parser crate: a small lexer (comments, strings, char literals and lifetimes are dropped,
//! so a path in a doc comment or a message is not an import) and a reader of the few items
//! that name modules (`mod`, `use`, attributes). The rules:
//!
//! - **A module is a file.** `src/lib.rs` is the crate root, shown as `crate`; `foo.rs` and
//!   `foo/mod.rs` are the module `foo`; `g/join.rs` is `g::join`. The files are found the way
//!   rustc finds them, from the `mod name;` declarations (`#[path = ".."]` included); a
//!   declared module with no file, or a file under `src/` that no declaration reaches
//!   (`src/bin/` aside), is an error: the check must read every file of the crate. An inline
//!   `mod name { .. }` belongs to its file.
//! - **Test code is left out:** a module declared under `#[cfg(test)]` or `#[cfg(all(test,
//!   ..))]` (unit tests, the loom models of `loom_tests`), with its files and inline body.
//!   Everything else counts, `#[cfg(loom)]` code included.
//! - **An import is a path that names an item of another module**: each leaf of a `use` item,
//!   groups `use crate::{a::X, b::{Y, Z}}` and multi-line ones included, and every path in
//!   code (`crate::m::foo()`, `super::raw::Header` in a type) that starts with `crate`,
//!   `$crate`, `self`, `super`, the name of a child module, or a module imported by a `use`.
//!   The edge goes from the file where the path is written to the file that *defines* the item:
//!   a name re-exported by a `pub use` (at any visibility: `pub`, `pub(crate)`, `pub(super)`)
//!   is followed to its definition, so `crate::set_wait_reason` that lib.rs re-exports from
//!   `runtime` is an import of `runtime`, and `super::JoinHandle` that `g/mod.rs` re-exports
//!   from `join` is one of `g::join`. A re-export that leads out of the crate ends at the last
//!   module of the crate on the way (`crate::loom::Mutex` is an import of `loom`). A glob
//!   `use a::*` imports the module `a`.
//! - **What is not an import:** `mod name;` (declaring a child is not using it); a `use` that
//!   names a module (`use crate::g;`, `use super::gfree::{self, ..}`), whose paths through that
//!   name are imports instead; a `pub use` whose name the re-exporting module does not itself
//!   use in its code (the crate root re-exporting `runtime::go` does not depend on `runtime`).
//! - **A submodule and its parent are modules like any other.** `use super::X` in `g/join.rs`
//!   imports `g` (the file `g/mod.rs`) when `g/mod.rs` defines `X`, and `g/mod.rs` using
//!   `join::foo` in its code imports `g::join`: the two make a circle.
//!
//! **Circles.** The check finds the shortest circle (modules in order of name break a tie),
//! reports it with every import among its modules, each with its file, line and text, takes
//! those imports out and looks again, until none is left. So every import that lies on a
//! circle is in exactly one report; a longer circle through an import already reported is not
//! reported again, and shows once the shorter one is fixed. The caller's list of allowed
//! circles is taken out the same way ([`permit`]) before the search.
//!
//! Known blind spots (none of them changes what the check finds in the workspace today): a
//! re-exported name that the re-exporting module's code also spells for something else counts
//! as used (one import too many); a name that comes through a `pub use a::*` glob is taken as
//! defined by the module with the glob; an item under `#[cfg(test)]` outside a test module
//! counts.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// One crate's sources: the path relative to the crate's directory (`src/lib.rs`) and the text.
pub type Sources = BTreeMap<String, String>;

/// Every `.rs` file under `dir/src`.
pub fn read_crate(dir: &Path) -> Sources {
    fn walk(base: &Path, dir: &Path, out: &mut Sources) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(base, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(base).expect("under the crate").to_string_lossy().replace('\\', "/");
                let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                out.insert(rel, text);
            }
        }
    }
    let mut out = Sources::new();
    walk(dir, &dir.join("src"), &mut out);
    out
}

/// One import: the line `line` of `file` (relative to the crate) in module `from` names an
/// item of module `to`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Import {
    pub from: String,
    pub to: String,
    pub file: String,
    pub line: usize,
    pub text: String,
}

/// A crate's modules and the imports between them.
#[derive(Debug)]
pub struct Graph {
    pub modules: BTreeSet<String>,
    pub imports: Vec<Import>,
}

/// Modules that import each other in a circle, and the imports that close it.
#[derive(Debug)]
pub struct Circle {
    /// Sorted.
    pub modules: Vec<String>,
    /// The way round: each imports the next, the last the first.
    pub order: Vec<String>,
    /// Every import among the modules.
    pub imports: Vec<Import>,
}

impl Circle {
    /// The circle, then one line per import: `from -> to  dir/file:line: text`.
    pub fn report(&self, dir: &str) -> String {
        let mut round = self.order.join(" -> ");
        let _ = write!(round, " -> {}", self.order[0]);
        let mut s =
            format!("{dir}: the modules {} import each other in a circle ({round}):\n", self.modules.join(", "));
        let prefix = if dir.is_empty() || dir == "." { String::new() } else { format!("{dir}/") };
        for i in &self.imports {
            let _ = writeln!(s, "    {} -> {}    {prefix}{}:{}: {}", i.from, i.to, i.file, i.line, i.text);
        }
        s
    }
}

/// The graph of the crate whose sources are `src` (its root is `src/lib.rs`).
pub fn graph(src: &Sources) -> Result<Graph, String> {
    Crate::read(src)?.graph()
}

/// The edges of `g`: each module's imports, by module.
fn edges(g: &Graph) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = g.modules.iter().map(|m| (m.as_str(), BTreeSet::new())).collect();
    for i in &g.imports {
        edges.entry(&i.from).or_default().insert(&i.to);
        edges.entry(&i.to).or_default();
    }
    edges
}

/// The shortest circle of `edges` (the first in the modules' order among the shortest), as the
/// path from its first module back to it.
fn shortest_circle<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Option<Vec<&'a str>> {
    let mut best: Option<Vec<&str>> = None;
    for &start in edges.keys() {
        // Breadth first from `start` until it comes back.
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut frontier = vec![start];
        let mut depth = 0;
        'search: while !frontier.is_empty() && best.as_ref().is_none_or(|b| depth < b.len()) {
            depth += 1;
            let mut next = Vec::new();
            for &v in &frontier {
                for &w in &edges[v] {
                    if w == start {
                        let mut path = vec![v];
                        while let Some(&p) = parent.get(path.last().expect("not empty")) {
                            path.push(p);
                        }
                        path.reverse();
                        if best.as_ref().is_none_or(|b| path.len() < b.len()) {
                            best = Some(path);
                        }
                        break 'search;
                    }
                    if w != start && !parent.contains_key(w) {
                        parent.insert(w, v);
                        next.push(w);
                    }
                }
            }
            frontier = next;
        }
    }
    best
}

/// The circles of `g`: the shortest one, then, the imports among its modules taken out, the
/// shortest of what is left, and so on until none is left. Every import that lies on a circle
/// is in the report of one; the list is what [`permit`] must be given to leave no circle.
pub fn circles(g: &Graph) -> Vec<Circle> {
    let mut imports = g.imports.clone();
    let mut out = Vec::new();
    loop {
        let rest = Graph { modules: g.modules.clone(), imports: imports.clone() };
        let Some(order) = shortest_circle(&edges(&rest)) else { break };
        let mut modules: Vec<String> = order.iter().map(|s| s.to_string()).collect();
        let order = modules.clone();
        modules.sort();
        let (inside, outside) = imports.into_iter().partition(|i| modules.contains(&i.from) && modules.contains(&i.to));
        imports = outside;
        out.push(Circle { modules, order, imports: inside });
    }
    out
}

/// `g` without the imports among `modules`, or an error if those imports do not make a circle
/// through all of them (a circle allowed that is gone, or a list of modules that is wrong).
pub fn permit(g: &Graph, modules: &[&str]) -> Result<Graph, String> {
    let inside = |i: &Import| modules.contains(&i.from.as_str()) && modules.contains(&i.to.as_str());
    let among = Graph {
        modules: modules.iter().map(|m| m.to_string()).collect(),
        imports: g.imports.iter().filter(|i| inside(i)).cloned().collect(),
    };
    // Strongly connected: every module reaches, and is reached from, the first.
    let edges = edges(&among);
    let reach = |forward: bool| {
        let mut seen = BTreeSet::from([modules[0]]);
        let mut todo = vec![modules[0]];
        while let Some(v) = todo.pop() {
            for (&a, bs) in &edges {
                for &b in bs {
                    let (from, to) = if forward { (a, b) } else { (b, a) };
                    if from == v && seen.insert(to) {
                        todo.push(to);
                    }
                }
            }
        }
        seen.len() == modules.len() && modules.iter().all(|m| g.modules.contains(*m))
    };
    if modules.len() < 2 || !reach(true) || !reach(false) {
        return Err(format!("the modules {modules:?} do not import each other in a circle"));
    }
    Ok(Graph { modules: g.modules.clone(), imports: g.imports.iter().filter(|i| !inside(i)).cloned().collect() })
}

// ---------------------------------------------------------------------------------------------
// The lexer.

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
    /// A literal; a string's text, unescaped only as far as `#[path]` needs.
    Lit(String),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn lex(text: &str) -> Result<Vec<Token>, String> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // A quoted string from `i` (at the opening quote); returns its text and the index after it.
    let string = |mut i: usize, line: &mut usize| -> Result<(String, usize), String> {
        let start = *line;
        let mut s = String::new();
        i += 1;
        loop {
            match c.get(i) {
                None => return Err(format!("line {start}: unterminated string")),
                Some('"') => return Ok((s, i + 1)),
                Some('\\') => {
                    if at(i + 1) == '\n' {
                        *line += 1;
                    }
                    s.push(at(i + 1));
                    i += 2;
                }
                Some(&ch) => {
                    if ch == '\n' {
                        *line += 1;
                    }
                    s.push(ch);
                    i += 1;
                }
            }
        }
    };
    // A raw string from `i` (at the first `#` or the quote).
    let raw_string = |mut i: usize, line: &mut usize| -> Result<(String, usize), String> {
        let start = *line;
        let mut hashes = 0;
        while at(i) == '#' {
            hashes += 1;
            i += 1;
        }
        if at(i) != '"' {
            return Err(format!("line {start}: malformed raw string"));
        }
        i += 1;
        let mut s = String::new();
        loop {
            match c.get(i) {
                None => return Err(format!("line {start}: unterminated raw string")),
                Some('"') if (1..=hashes).all(|k| at(i + k) == '#') => return Ok((s, i + 1 + hashes)),
                Some(&ch) => {
                    if ch == '\n' {
                        *line += 1;
                    }
                    s.push(ch);
                    i += 1;
                }
            }
        }
    };
    while i < c.len() {
        let ch = c[i];
        let tok_line = line;
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= c.len() {
                    return Err(format!("line {tok_line}: unterminated block comment"));
                }
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            let (s, next) = string(i, &mut line)?;
            out.push(Token { tok: Tok::Lit(s), line: tok_line });
            i = next;
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime or label ('a, 'static).
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(Token { tok: Tok::Lit(String::new()), line: tok_line });
            } else if at(i + 2) == '\'' {
                i += 3;
                out.push(Token { tok: Tok::Lit(String::new()), line: tok_line });
            } else {
                i += 1;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if is_ident_start(ch) {
            let start = i;
            while i < c.len() && is_ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            match (word.as_str(), at(i)) {
                ("b" | "c", '"') => {
                    let (s, next) = string(i, &mut line)?;
                    out.push(Token { tok: Tok::Lit(s), line: tok_line });
                    i = next;
                }
                ("r" | "br" | "cr", '"') => {
                    let (s, next) = raw_string(i, &mut line)?;
                    out.push(Token { tok: Tok::Lit(s), line: tok_line });
                    i = next;
                }
                ("r" | "br" | "cr", '#') if matches!(at(i + 1), '#' | '"') => {
                    let (s, next) = raw_string(i, &mut line)?;
                    out.push(Token { tok: Tok::Lit(s), line: tok_line });
                    i = next;
                }
                ("r", '#') if is_ident_start(at(i + 1)) => {
                    let start = i + 1;
                    i += 1;
                    while i < c.len() && is_ident_char(c[i]) {
                        i += 1;
                    }
                    out.push(Token { tok: Tok::Ident(c[start..i].iter().collect()), line: tok_line });
                }
                ("b", '\'') => {
                    // A byte literal: lexed as the char literal that follows.
                }
                _ => out.push(Token { tok: Tok::Ident(word), line: tok_line }),
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (is_ident_char(c[i]) || (c[i] == '.' && at(i + 1).is_ascii_digit())) {
                i += 1;
            }
            out.push(Token { tok: Tok::Lit(String::new()), line: tok_line });
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Token { tok: Tok::Sep, line: tok_line });
            i += 2;
        } else {
            out.push(Token { tok: Tok::Punct(ch), line: tok_line });
            i += 1;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Reading one file's items.

/// A module path from the crate root (`["g", "join"]`; the root is `[]`).
type ModPath = Vec<String>;

/// `mod name;` in module `scope`.
struct ModDecl {
    scope: ModPath,
    name: String,
    path_attr: Option<String>,
    test: bool,
}

/// One leaf of a `use` item, in module `scope`.
#[derive(Debug)]
struct UseLeaf {
    scope: ModPath,
    /// As written, a trailing `self` dropped (`use super::gfree::{self}` is `[super, gfree]`).
    segs: Vec<String>,
    /// The name it binds (its `as` name, or its last segment); `None` for `as _` and globs.
    name: Option<String>,
    glob: bool,
    is_pub: bool,
    line: usize,
}

/// A path in code, in module `scope`.
struct CodePath {
    scope: ModPath,
    segs: Vec<String>,
    line: usize,
}

#[derive(Default)]
struct FileItems {
    decls: Vec<ModDecl>,
    /// Inline modules, and whether they are test code.
    inline: Vec<(ModPath, bool)>,
    uses: Vec<UseLeaf>,
    paths: Vec<CodePath>,
    /// The names each module's code spells (not in its `use`, `mod` and attributes; not a field
    /// or method after `.`, not a path's later segments).
    words: BTreeMap<ModPath, BTreeSet<String>>,
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token { tok: Tok::Ident(s), .. }) => Some(s),
        _ => None,
    }
}

fn is_punct(t: Option<&Token>, ch: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(p), .. }) if *p == ch)
}

/// The index after the bracket that closes the one at `i`.
fn skip_balanced(toks: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < toks.len() {
        match toks[i].tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Whether the attribute `cfg(test)` or `cfg(all(.., test, ..))` (its tokens inside `#[..]`).
fn is_test_cfg(attr: &[Token]) -> bool {
    let t: Vec<&Tok> = attr.iter().map(|t| &t.tok).collect();
    let word = |k: usize, w: &str| matches!(t.get(k), Some(Tok::Ident(s)) if s == w);
    let punct = |k: usize, p: char| matches!(t.get(k), Some(Tok::Punct(c)) if *c == p);
    if !(word(0, "cfg") && punct(1, '(')) {
        return false;
    }
    if word(2, "test") && punct(3, ')') {
        return true;
    }
    if !(word(2, "all") && punct(3, '(')) {
        return false;
    }
    // The top-level arguments of all(..): `test` alone between commas.
    let mut depth = 0;
    let mut arg_start = 4;
    for (k, tok) in t.iter().enumerate().skip(4) {
        match tok {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') if depth > 0 => depth -= 1,
            Tok::Punct(',' | ')') if depth == 0 => {
                if k == arg_start + 1 && word(arg_start, "test") {
                    return true;
                }
                if matches!(tok, Tok::Punct(')')) {
                    return false;
                }
                arg_start = k + 1;
            }
            _ => {}
        }
    }
    false
}

/// `path = ".."` (the tokens inside `#[..]`).
fn path_attr(attr: &[Token]) -> Option<String> {
    match (attr.first().map(|t| &t.tok), attr.get(1).map(|t| &t.tok), attr.get(2).map(|t| &t.tok), attr.len()) {
        (Some(Tok::Ident(p)), Some(Tok::Punct('=')), Some(Tok::Lit(s)), 3) if p == "path" => Some(s.clone()),
        _ => None,
    }
}

/// The leaves of the use tree at `toks[*i..]`, under `prefix`.
fn use_tree(toks: &[Token], i: &mut usize, prefix: &[String], scope: &ModPath, is_pub: bool, out: &mut Vec<UseLeaf>) {
    let mut segs = prefix.to_vec();
    loop {
        let Some(t) = toks.get(*i) else { return };
        match &t.tok {
            Tok::Sep if segs.is_empty() => {
                // `::std::..`: a path from the extern prelude.
                segs.push("::".to_owned());
                *i += 1;
            }
            Tok::Punct('$') => *i += 1,
            Tok::Ident(s) => {
                *i += 1;
                if matches!(toks.get(*i).map(|t| &t.tok), Some(Tok::Sep)) {
                    segs.push(s.clone());
                    *i += 1;
                    continue;
                }
                let line = t.line;
                let mut name = Some(s.clone());
                if s == "self" {
                    name = segs.last().cloned();
                } else {
                    segs.push(s.clone());
                }
                if ident(toks.get(*i)) == Some("as") {
                    name = ident(toks.get(*i + 1)).filter(|n| *n != "_").map(str::to_owned);
                    *i += 2;
                }
                out.push(UseLeaf { scope: scope.clone(), segs, name, glob: false, is_pub, line });
                return;
            }
            Tok::Punct('*') => {
                *i += 1;
                out.push(UseLeaf { scope: scope.clone(), segs, name: None, glob: true, is_pub, line: t.line });
                return;
            }
            Tok::Punct('{') => {
                *i += 1;
                loop {
                    match toks.get(*i).map(|t| &t.tok) {
                        None => return,
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        Some(_) => {
                            let before = *i;
                            use_tree(toks, i, &segs, scope, is_pub, out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            _ => return,
        }
    }
}

/// The items of one file, whose module is `module`.
fn read_items(toks: &[Token], module: &ModPath) -> FileItems {
    let mut items = FileItems::default();
    // One entry per open brace: the inline module it opens, if it opens one.
    let mut braces: Vec<Option<String>> = Vec::new();
    let scope_of = |braces: &[Option<String>]| -> ModPath {
        let mut p = module.clone();
        p.extend(braces.iter().flatten().cloned());
        p
    };
    let mut attrs: Vec<Vec<Token>> = Vec::new();
    let mut is_pub = false;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match &t.tok {
            Tok::Punct('#') => {
                let inner = is_punct(toks.get(i + 1), '!');
                let open = if inner { i + 2 } else { i + 1 };
                if is_punct(toks.get(open), '[') {
                    let end = skip_balanced(toks, open);
                    if !inner {
                        attrs.push(toks[open + 1..end.saturating_sub(1).max(open + 1)].to_vec());
                    }
                    i = end;
                    continue;
                }
            }
            Tok::Ident(s) if s == "pub" => {
                is_pub = true;
                i += 1;
                if is_punct(toks.get(i), '(') {
                    i = skip_balanced(toks, i);
                }
                continue;
            }
            Tok::Ident(s) if s == "mod" && ident(toks.get(i + 1)).is_some() => {
                let name = ident(toks.get(i + 1)).expect("checked").to_owned();
                let test = attrs.iter().any(|a| is_test_cfg(a));
                let scope = scope_of(&braces);
                if is_punct(toks.get(i + 2), ';') {
                    let path_attr = attrs.iter().find_map(|a| path_attr(a));
                    items.decls.push(ModDecl { scope, name, path_attr, test });
                    i += 3;
                } else if is_punct(toks.get(i + 2), '{') {
                    let mut path = scope;
                    path.push(name.clone());
                    items.inline.push((path, test));
                    if test {
                        i = skip_balanced(toks, i + 2);
                    } else {
                        braces.push(Some(name));
                        i += 3;
                    }
                } else {
                    i += 1;
                }
                attrs.clear();
                is_pub = false;
                continue;
            }
            Tok::Ident(s) if s == "use" && !is_punct(toks.get(i + 1), '<') => {
                let scope = scope_of(&braces);
                i += 1;
                use_tree(toks, &mut i, &[], &scope, is_pub, &mut items.uses);
                while i < toks.len() && !is_punct(toks.get(i), ';') {
                    i += 1;
                }
                attrs.clear();
                is_pub = false;
                continue;
            }
            Tok::Ident(s) => {
                let after_sep = i > 0 && toks[i - 1].tok == Tok::Sep;
                let macro_var = i > 0 && is_punct(toks.get(i - 1), '$') && s != "crate";
                let scope = scope_of(&braces);
                let words = items.words.entry(scope.clone()).or_default();
                if !after_sep && !macro_var && matches!(toks.get(i + 1).map(|t| &t.tok), Some(Tok::Sep)) {
                    let mut segs = vec![s.clone()];
                    let mut j = i + 1;
                    while toks.get(j).map(|t| &t.tok) == Some(&Tok::Sep) {
                        let Some(next) = ident(toks.get(j + 1)) else { break };
                        segs.push(next.to_owned());
                        j += 2;
                    }
                    words.insert(s.clone());
                    let line = toks[j - 1].line;
                    items.paths.push(CodePath { scope, segs, line });
                    i = j;
                    attrs.clear();
                    is_pub = false;
                    continue;
                }
                if !is_punct(toks.get(i.wrapping_sub(1)), '.') {
                    words.insert(s.clone());
                }
                attrs.clear();
                is_pub = false;
            }
            Tok::Punct('{') => braces.push(None),
            Tok::Punct('}') => {
                braces.pop();
                attrs.clear();
                is_pub = false;
            }
            Tok::Punct(';') => {
                attrs.clear();
                is_pub = false;
            }
            _ => {}
        }
        i += 1;
    }
    items
}

// ---------------------------------------------------------------------------------------------
// The crate: its module tree, then the resolution of paths.

#[derive(Default)]
struct Crate {
    /// The file of each file module.
    files: BTreeMap<ModPath, String>,
    /// The child modules of each module (file or inline), test modules left out.
    children: BTreeMap<ModPath, BTreeSet<String>>,
    /// Test modules: nothing in or under them is read, and a path into one is no import.
    tests: BTreeSet<ModPath>,
    uses: Vec<UseLeaf>,
    paths: Vec<CodePath>,
    words: BTreeMap<ModPath, BTreeSet<String>>,
    /// Each module's `pub use` names and what they name (as written, in that module).
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<Vec<String>>>>,
    /// The names that `use` items bind to modules, in each module.
    aliases: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    lines: BTreeMap<String, Vec<String>>,
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// `a/b/c.rs` -> `a/b`.
fn dir_of(file: &str) -> &str {
    file.rfind('/').map_or("", |k| &file[..k])
}

/// `a/../b` -> `b`, `a/./b` -> `a/b`.
fn normalize(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

impl Crate {
    fn read(src: &Sources) -> Result<Crate, String> {
        const ROOT: &str = "src/lib.rs";
        if !src.contains_key(ROOT) {
            return Err(format!("no {ROOT}"));
        }
        let mut c = Crate::default();
        let mut reached: BTreeSet<String> = BTreeSet::new();
        // (file, its module, whether it is test code)
        let mut queue: Vec<(String, ModPath, bool)> = vec![(ROOT.to_owned(), Vec::new(), false)];
        while let Some((file, module, test)) = queue.pop() {
            if !reached.insert(file.clone()) {
                return Err(format!("{file} is declared as a module twice"));
            }
            let text = &src[&file];
            let toks = lex(text).map_err(|e| format!("{file}: {e}"))?;
            let items = read_items(&toks, &module);
            // A child's directory: beside lib.rs and mod.rs, in `foo/` for foo.rs.
            let base = match file.rsplit('/').next() {
                Some("lib.rs" | "mod.rs" | "main.rs") => dir_of(&file).to_owned(),
                _ => file.trim_end_matches(".rs").to_owned(),
            };
            for (path, is_test) in &items.inline {
                if test || *is_test {
                    c.tests.insert(path.clone());
                } else {
                    let (name, parent) = path.split_last().expect("an inline module has a name");
                    c.children.entry(parent.to_vec()).or_default().insert(name.clone());
                }
            }
            for d in &items.decls {
                let inline_dirs = d.scope[module.len()..].join("/");
                let dir = if inline_dirs.is_empty() { base.clone() } else { format!("{base}/{inline_dirs}") };
                let candidates: Vec<String> = match &d.path_attr {
                    Some(p) if d.scope.len() == module.len() => vec![normalize(&format!("{}/{p}", dir_of(&file)))],
                    Some(p) => vec![normalize(&format!("{dir}/{p}"))],
                    None => vec![format!("{dir}/{}.rs", d.name), format!("{dir}/{}/mod.rs", d.name)],
                };
                let found: Vec<&String> = candidates.iter().filter(|p| src.contains_key(*p)).collect();
                let child_file = match found.as_slice() {
                    [one] => (*one).clone(),
                    [] => return Err(format!("{file}: `mod {};` has no file: none of {candidates:?}", d.name)),
                    _ => return Err(format!("{file}: `mod {};` has two files: {found:?}", d.name)),
                };
                let mut child = d.scope.clone();
                child.push(d.name.clone());
                let child_test = test || d.test;
                if child_test {
                    c.tests.insert(child.clone());
                } else {
                    c.children.entry(d.scope.clone()).or_default().insert(d.name.clone());
                }
                queue.push((child_file, child, child_test));
            }
            if !test {
                c.files.insert(module.clone(), file.clone());
                c.uses.extend(items.uses);
                c.paths.extend(items.paths);
                for (m, w) in items.words {
                    c.words.entry(m).or_default().extend(w);
                }
                c.lines.insert(file.clone(), text.lines().map(|l| l.trim().to_owned()).collect());
            }
        }
        let unreached: Vec<&String> = src
            .keys()
            .filter(|f| f.starts_with("src/") && !f.starts_with("src/bin/") && *f != "src/main.rs")
            .filter(|f| !reached.contains(*f))
            .collect();
        if !unreached.is_empty() {
            return Err(format!("no `mod` declaration reaches {unreached:?}: the check cannot read them"));
        }
        for u in &c.uses {
            if let (true, false, Some(name)) = (u.is_pub, u.glob, &u.name) {
                c.reexports.entry(u.scope.clone()).or_default().entry(name.clone()).or_default().push(u.segs.clone());
            }
        }
        // The names bound to modules; a `use` may go through another's name, so to a fixpoint.
        for _ in 0..16 {
            let mut found = Vec::new();
            for u in c.uses.iter().filter(|u| !u.glob) {
                let (Some(name), Some(abs)) = (&u.name, c.absolute(&u.scope, &u.segs)) else { continue };
                for (m, is_module) in c.resolve(&abs, 0) {
                    if is_module && c.aliases.get(&u.scope).and_then(|a| a.get(name)) != Some(&m) {
                        found.push((u.scope.clone(), name.clone(), m));
                    }
                }
            }
            if found.is_empty() {
                break;
            }
            for (scope, name, m) in found {
                c.aliases.entry(scope).or_default().insert(name, m);
            }
        }
        Ok(c)
    }

    fn is_test(&self, m: &[String]) -> bool {
        (0..=m.len()).any(|k| self.tests.contains(&m[..k]))
    }

    /// The absolute module path of `segs` written in module `scope`, if it starts inside the
    /// crate.
    fn absolute(&self, scope: &ModPath, segs: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segs.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(scope.iter().chain(rest).cloned().collect()),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let base = scope.get(..scope.len().checked_sub(ups)?)?;
                Some(base.iter().chain(&segs[ups..]).cloned().collect())
            }
            name => {
                if self.children.get(scope).is_some_and(|c| c.contains(name))
                    || self.tests.contains(&scope.iter().chain([first]).cloned().collect::<Vec<_>>())
                {
                    Some(scope.iter().chain(segs).cloned().collect())
                } else {
                    let m = self.aliases.get(scope)?.get(name)?;
                    Some(m.iter().chain(rest).cloned().collect())
                }
            }
        }
    }

    /// What the absolute path `abs` names: for each item it may be (a re-export under two
    /// `cfg`s names two), the module that defines it, and whether the path names that module
    /// itself. Nothing for a path into test code.
    fn resolve(&self, abs: &[String], depth: usize) -> Vec<(ModPath, bool)> {
        let mut cur: ModPath = Vec::new();
        for (k, s) in abs.iter().enumerate() {
            let mut next = cur.clone();
            next.push(s.clone());
            if self.is_test(&next) {
                return Vec::new();
            }
            if self.children.get(&cur).is_some_and(|c| c.contains(s)) {
                cur = next;
                continue;
            }
            if let Some(targets) = self.reexports.get(&cur).and_then(|r| r.get(s)) {
                if depth > 16 {
                    return vec![(cur, false)];
                }
                let mut out = Vec::new();
                for t in targets {
                    match self.absolute(&cur, t) {
                        Some(mut p) => {
                            p.extend(abs[k + 1..].iter().cloned());
                            out.extend(self.resolve(&p, depth + 1));
                        }
                        // Out of the crate: the last module of the crate on the way.
                        None => out.push((cur.clone(), false)),
                    }
                }
                return out;
            }
            return vec![(cur, false)];
        }
        vec![(cur, true)]
    }

    /// The file module that holds module `m` (an inline module is its file's).
    fn file_of(&self, m: &[String]) -> ModPath {
        (0..=m.len()).rev().map(|k| m[..k].to_vec()).find(|p| self.files.contains_key(p)).unwrap_or_default()
    }

    fn graph(&self) -> Result<Graph, String> {
        let mut imports = BTreeSet::new();
        let mut add = |c: &Crate, scope: &ModPath, target: &ModPath, line: usize| {
            let (from, to) = (c.file_of(scope), c.file_of(target));
            if from != to {
                let file = c.files[&from].clone();
                let text = c.lines[&file].get(line - 1).cloned().unwrap_or_default();
                imports.insert(Import { from: show(&from), to: show(&to), file, line, text });
            }
        };
        for u in &self.uses {
            let Some(abs) = self.absolute(&u.scope, &u.segs) else { continue };
            for (m, is_module) in self.resolve(&abs, 0) {
                let used = match &u.name {
                    _ if u.glob => true,
                    _ if is_module => false,
                    Some(name) => !u.is_pub || self.words.get(&u.scope).is_some_and(|w| w.contains(name)),
                    None => !u.is_pub,
                };
                if used {
                    add(self, &u.scope, &m, u.line);
                }
            }
        }
        for p in &self.paths {
            let Some(abs) = self.absolute(&p.scope, &p.segs) else { continue };
            for (m, _) in self.resolve(&abs, 0) {
                add(self, &p.scope, &m, p.line);
            }
        }
        Ok(Graph { modules: self.files.keys().map(|m| show(m)).collect(), imports: imports.into_iter().collect() })
    }
}
