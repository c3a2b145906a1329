//! The parse and rewrite logic of `#[goro::main]` and `#[goro::test]`.
//!
//! `proc_macro`'s types only work inside a running macro expansion, so this module works on a
//! small token model of its own ([`Tok`]) that mirrors the input token trees one to one. It never
//! copies user tokens itself: the expansion it returns ([`Out`]) refers to the input's top-level
//! tokens by index, and the bridge in `lib.rs` copies the original `proc_macro` token trees there.
//! That keeps the user's spans (the body group above all) exactly as they were, and lets the unit
//! tests at the bottom drive the whole logic from plain strings.

use std::ops::Range;

/// A group's delimiter, as `proc_macro::Delimiter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delim {
    Paren,
    Bracket,
    Brace,
    /// An invisible group, as produced by `macro_rules!` fragments such as `$t:ty`.
    None,
}

/// A token tree of the model: enough of `proc_macro::TokenTree` to parse a fn signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident(String),
    /// A punctuation character and whether it is joined to the next one (`-` of `->`).
    Punct(char, bool),
    /// A literal, as written (`4`, `"text"`, `1_000usize`).
    Lit(String),
    Group(Delim, Vec<Tok>),
}

impl Tok {
    fn is_ident(&self, name: &str) -> bool {
        matches!(self, Tok::Ident(s) if s == name)
    }

    fn is_punct(&self, c: char) -> bool {
        matches!(self, Tok::Punct(p, _) if *p == c)
    }

    /// How the token reads in an error message.
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) | Tok::Lit(s) => s.clone(),
            Tok::Punct(c, _) => c.to_string(),
            Tok::Group(Delim::Paren, _) => "(".to_string(),
            Tok::Group(Delim::Bracket, _) => "[".to_string(),
            Tok::Group(Delim::Brace, _) => "{".to_string(),
            Tok::Group(Delim::None, inner) => match inner.first() {
                Some(t) => t.describe(),
                None => "(empty)".to_string(),
            },
        }
    }
}

/// Which macro is being expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Main,
    Test,
}

impl Kind {
    /// The name error messages start with.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Main => "goro::main",
            Kind::Test => "goro::test",
        }
    }
}

/// Which of the macro's two inputs an index refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    /// The attribute's arguments: `max_procs = 2` in `#[goro::main(max_procs = 2)]`.
    Args,
    /// The item the attribute is on.
    Item,
}

/// A compile error to report, located on a run of top-level input tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) msg: String,
    /// The first and last (inclusive) top-level token the error points at; `None` points at the
    /// attribute itself (e.g. when the item is empty).
    pub(crate) at: Option<(Src, usize, usize)>,
    /// Tokens to emit next to the error: for `goro::main`, a stub `fn main() {}`, so that rustc
    /// does not add "`main` function not found" to the report.
    pub(crate) fallback: Vec<Out>,
}

impl Error {
    fn new(kind: Kind, msg: impl AsRef<str>, at: Option<(Src, usize, usize)>) -> Self {
        Error { msg: format!("{}: {}", kind.name(), msg.as_ref()), at, fallback: Vec::new() }
    }
}

/// A piece of the expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    /// Generated Rust source, parsed as-is, spanned at the attribute (call site).
    Code(&'static str),
    /// A copy of the input's top-level tokens in this range, original spans kept.
    Copy(Src, Range<usize>),
    /// A generated group around more pieces.
    Group(Delim, Vec<Out>),
}

/// The parsed `#[goro::main(..)]` / `#[goro::test(..)]` arguments.
#[derive(Debug, Default, PartialEq, Eq)]
struct Args {
    /// The tokens of the `max_procs` value expression, if given.
    max_procs: Option<Range<usize>>,
    /// `allow_leaks` (tests only): Gs still alive when the test returns do not fail it.
    allow_leaks: bool,
    /// `synctest` (tests only): the test runs in a `goro::synctest` bubble.
    synctest: bool,
}

/// The parts of the `async fn` the attribute is on, as ranges of its top-level tokens.
#[derive(Debug, PartialEq, Eq)]
struct Func {
    /// The outer attributes (doc comments included: they arrive as `#[doc = ".."]`).
    attrs: Range<usize>,
    /// `pub`, `pub(crate)`, ... or empty.
    vis: Range<usize>,
    /// The `fn` keyword and the name.
    fn_name: Range<usize>,
    /// The return type after `->` (the arrow included), or empty.
    ret: Range<usize>,
    /// The body: always a single brace group.
    body: usize,
}

/// Expands `#[goro::main(args)]` / `#[goro::test(args)]` on `item`.
pub(crate) fn expand(kind: Kind, args: &[Tok], item: &[Tok]) -> Result<Vec<Out>, Error> {
    let parsed = parse_args(kind, args).and_then(|args| Ok((args, parse_fn(kind, item)?)));
    let (args, func) = match parsed {
        Ok(parsed) => parsed,
        Err(mut err) => {
            if kind == Kind::Main {
                err.fallback = stub(item);
            }
            return Err(err);
        }
    };
    if args.synctest {
        return Ok(expand_synctest(&func));
    }

    // The future the runtime runs: the body, copied untouched, as an inner `async fn`. Not an
    // `async` block: whether the future is `Send` decides how it runs (below), and the compiler
    // can only answer that for a future defined outside the function being checked.
    let mut inner = vec![Out::Code("async fn __goro_main()")];
    inner.push(Out::Copy(Src::Item, func.ret.clone()));
    inner.push(Out::Copy(Src::Item, func.body..func.body + 1));
    let fut = vec![Out::Code("__goro_main()")];
    // `(&Main::new(builder, fut)).run()`: main runs as a G of its own when the future is
    // `Send + 'static`, else on the calling thread (see `goro_runtime::__private::entry`).
    let mut builder = vec![Out::Code("::goro::runtime::Builder::new()")];
    if let Some(n) = args.max_procs {
        builder.push(Out::Code(".max_procs"));
        // The value stays inside its own group, so an expression like `1 + 1` stays whole.
        builder.push(Out::Group(Delim::Paren, vec![Out::Copy(Src::Args, n)]));
    }
    let mut main_args = builder;
    main_args.push(Out::Code(","));
    main_args.extend(fut);
    let mut call = inner;
    call.extend([
        Out::Code("use ::goro::__private::{RunAsG as _, RunOnThread as _};"),
        Out::Group(
            Delim::Paren,
            vec![
                Out::Code(match kind {
                    Kind::Main => "&::goro::__private::Main::new",
                    Kind::Test => "&::goro::__private::Main::test",
                }),
                Out::Group(Delim::Paren, main_args),
            ],
        ),
    ]);
    if args.allow_leaks {
        call.push(Out::Code(".allow_leaks()"));
    }
    call.push(Out::Code(".run()"));

    let mut out = Vec::new();
    if kind == Kind::Test {
        // The full path, so that a `test` macro of the user's own cannot shadow the built-in one.
        out.push(Out::Code("#[::core::prelude::v1::test]"));
    }
    out.push(Out::Copy(Src::Item, func.attrs));
    out.push(Out::Copy(Src::Item, func.vis));
    out.push(Out::Copy(Src::Item, func.fn_name));
    out.push(Out::Group(Delim::Paren, Vec::new()));
    out.push(Out::Copy(Src::Item, func.ret));
    out.push(Out::Group(Delim::Brace, call));
    Ok(out)
}

/// `#[goro::test(synctest)]`: the body as an inner `async fn`, run by
/// `goro::synctest::__test_fn` (a bubble; twice under `GORO_SYNCTEST_CHECK_DETERMINISM=1`,
/// hence a function it can call again rather than one future).
fn expand_synctest(func: &Func) -> Vec<Out> {
    let mut call = vec![Out::Code("async fn __goro_main()")];
    call.push(Out::Copy(Src::Item, func.ret.clone()));
    call.push(Out::Copy(Src::Item, func.body..func.body + 1));
    call.push(Out::Code("::goro::synctest::__test_fn(__goro_main)"));
    let mut out = vec![Out::Code("#[::core::prelude::v1::test]")];
    out.push(Out::Copy(Src::Item, func.attrs.clone()));
    out.push(Out::Copy(Src::Item, func.vis.clone()));
    out.push(Out::Copy(Src::Item, func.fn_name.clone()));
    out.push(Out::Group(Delim::Paren, Vec::new()));
    out.push(Out::Copy(Src::Item, func.ret.clone()));
    out.push(Out::Group(Delim::Brace, call));
    out
}

/// `#[allow(dead_code)] fn name() {}` for the first `fn name` in the item, if there is one.
fn stub(item: &[Tok]) -> Vec<Out> {
    let name = (1..item.len()).find(|&j| item[j - 1].is_ident("fn") && matches!(item[j], Tok::Ident(_)));
    match name {
        Some(j) => vec![Out::Code("#[allow(dead_code)] fn"), Out::Copy(Src::Item, j..j + 1), Out::Code("() {}")],
        None => Vec::new(),
    }
}

/// Parses the attribute's arguments: nothing, `max_procs = N`, and for a test `allow_leaks`,
/// separated by commas (a trailing one allowed). `N` is any expression; an integer literal is
/// checked here to be at least 1.
fn parse_args(kind: Kind, toks: &[Tok]) -> Result<Args, Error> {
    let expected = match kind {
        Kind::Main => "(expected `max_procs = N`)",
        Kind::Test => "(expected `max_procs = N`, `allow_leaks` or `synctest`)",
    };
    let at = |a: usize, b: usize| Some((Src::Args, a, b));
    let mut args = Args::default();
    let mut i = 0;
    while i < toks.len() {
        let name = match &toks[i] {
            Tok::Ident(name) => name,
            other => {
                let msg = format!("unexpected `{}` {expected}", other.describe());
                return Err(Error::new(kind, msg, at(i, i)));
            }
        };
        if (name == "allow_leaks" || name == "synctest") && kind == Kind::Test {
            let flag = if name == "allow_leaks" { &mut args.allow_leaks } else { &mut args.synctest };
            if *flag {
                return Err(Error::new(kind, format!("`{name}` is given more than once"), at(i, i)));
            }
            *flag = true;
            if args.allow_leaks && args.synctest {
                let msg = "`allow_leaks` and `synctest` do not go together: a bubble waits for every G it \
                           started, and one left blocked fails the test";
                return Err(Error::new(kind, msg, at(i, i)));
            }
            let flag_at = i;
            i += 1;
            match toks.get(i) {
                None => break,
                Some(t) if t.is_punct(',') => {
                    i += 1;
                    if i < toks.len() && toks[i].is_punct(',') {
                        let msg = format!("unexpected `,` {expected}");
                        return Err(Error::new(kind, msg, at(i, i)));
                    }
                    continue;
                }
                Some(t) => {
                    let msg = format!("unexpected `{}` after `{}` {expected}", t.describe(), describe(&toks[flag_at]));
                    return Err(Error::new(kind, msg, at(i, i)));
                }
            }
        }
        if name != "max_procs" {
            let msg = format!("unknown argument `{name}` {expected}");
            return Err(Error::new(kind, msg, at(i, i)));
        }
        let name_at = i;
        i += 1;
        if !toks.get(i).is_some_and(|t| t.is_punct('=')) {
            let msg = "`max_procs` needs a value, e.g. `max_procs = 4`";
            let end = i.min(toks.len() - 1);
            return Err(Error::new(kind, msg, at(name_at, end)));
        }
        i += 1;
        let start = i;
        while i < toks.len() && !toks[i].is_punct(',') {
            i += 1;
        }
        if start == i {
            let msg = "`max_procs` needs a value, e.g. `max_procs = 4`";
            return Err(Error::new(kind, msg, at(name_at, start - 1)));
        }
        if args.max_procs.is_some() {
            let msg = "`max_procs` is given more than once";
            return Err(Error::new(kind, msg, at(name_at, i - 1)));
        }
        if let [Tok::Lit(text)] = flatten(&toks[start..i]).as_slice() {
            check_max_procs(kind, text, at(start, i - 1))?;
        }
        args.max_procs = Some(start..i);
        if args.synctest {
            let msg = "`max_procs` has no meaning with `synctest`: a bubble runs one G at a time";
            return Err(Error::new(kind, msg, at(name_at, i - 1)));
        }
        // Skip the comma; a trailing one is fine, a doubled one is not.
        i += 1;
        if i < toks.len() && toks[i].is_punct(',') {
            let msg = format!("unexpected `,` {expected}");
            return Err(Error::new(kind, msg, at(i, i)));
        }
    }
    if args.synctest && args.max_procs.is_some() {
        let msg = "`max_procs` has no meaning with `synctest`: a bubble runs one G at a time";
        return Err(Error::new(kind, msg, None));
    }
    Ok(args)
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(name) => name.clone(),
        other => other.describe(),
    }
}

/// Checks a literal `max_procs` value: a positive integer, `usize` suffix allowed.
fn check_max_procs(kind: Kind, text: &str, at: Option<(Src, usize, usize)>) -> Result<(), Error> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    let digits = digits.strip_suffix("usize").unwrap_or(&digits);
    let (digits, radix) = if let Some(d) = digits.strip_prefix("0x") {
        (d, 16)
    } else if let Some(d) = digits.strip_prefix("0o") {
        (d, 8)
    } else if let Some(d) = digits.strip_prefix("0b") {
        (d, 2)
    } else {
        (digits, 10)
    };
    match u128::from_str_radix(digits, radix) {
        Ok(0) => Err(Error::new(kind, "`max_procs` must be at least 1", at)),
        Ok(_) => Ok(()),
        Err(_) => {
            let msg = format!("`max_procs` must be a positive integer, e.g. `max_procs = 4`, not `{text}`");
            Err(Error::new(kind, msg, at))
        }
    }
}

/// Parses `#[attrs]* vis? async fn name() (-> Ret)? { body }`.
fn parse_fn(kind: Kind, toks: &[Tok]) -> Result<Func, Error> {
    let at = |a: usize, b: usize| Some((Src::Item, a, b));
    let mut i = 0;

    // Outer attributes: `#` followed by a bracket group.
    while i < toks.len() && toks[i].is_punct('#') {
        let content = match toks.get(i + 1) {
            Some(Tok::Group(Delim::Bracket, content)) => content,
            _ => return Err(Error::new(kind, "expected an attribute after `#`", at(i, i))),
        };
        if kind == Kind::Test {
            if let Some(path) = test_attr_path(content) {
                let msg = if path == "test" {
                    "remove `#[test]`: goro::test already adds it".to_string()
                } else {
                    format!("a second test attribute `#[{path}]` is not supported; remove one of them")
                };
                return Err(Error::new(kind, msg, at(i, i + 1)));
            }
        }
        i += 2;
    }
    let attrs = 0..i;

    // Visibility: `pub` or `pub(..)`.
    let vis_start = i;
    if toks.get(i).is_some_and(|t| t.is_ident("pub")) {
        i += 1;
        if let Some(Tok::Group(Delim::Paren, _)) = toks.get(i) {
            i += 1;
        }
    }
    let vis = vis_start..i;

    // Qualifiers, then `fn`.
    let mut is_async = false;
    loop {
        let Some(tok) = toks.get(i) else {
            let msg = "expected an `async fn`";
            let err = if toks.is_empty() { None } else { at(toks.len() - 1, toks.len() - 1) };
            return Err(Error::new(kind, msg, err));
        };
        match tok {
            Tok::Ident(s) if s == "fn" => break,
            Tok::Ident(s) if s == "async" => is_async = true,
            Tok::Ident(s) if s == "unsafe" => {
                return Err(Error::new(kind, "the function must not be `unsafe`", at(i, i)));
            }
            Tok::Ident(s) if s == "const" => {
                return Err(Error::new(kind, "the function must not be `const`", at(i, i)));
            }
            Tok::Ident(s) if s == "extern" => {
                let end = if let Some(Tok::Lit(_)) = toks.get(i + 1) { i + 1 } else { i };
                return Err(Error::new(kind, "the function must not be `extern`", at(i, end)));
            }
            other => {
                let msg = format!("expected an `async fn`, found `{}`", other.describe());
                return Err(Error::new(kind, msg, at(i, i)));
            }
        }
        i += 1;
    }
    let fn_at = i;
    i += 1;
    match toks.get(i) {
        Some(Tok::Ident(_)) => {}
        _ => return Err(Error::new(kind, "expected the function's name after `fn`", at(fn_at, fn_at))),
    }
    let fn_name = fn_at..i + 1;
    if !is_async {
        return Err(Error::new(kind, "the function must be `async fn`", at(fn_at, i)));
    }
    i += 1;

    // No generics.
    if toks.get(i).is_some_and(|t| t.is_punct('<')) {
        let end = generics_end(toks, i).unwrap_or(i);
        return Err(Error::new(kind, "generic functions are not supported", at(i, end)));
    }

    // No parameters.
    match toks.get(i) {
        Some(Tok::Group(Delim::Paren, params)) => {
            if !params.is_empty() {
                return Err(Error::new(kind, "the function must take no parameters", at(i, i)));
            }
        }
        _ => {
            let end = i.min(toks.len() - 1);
            return Err(Error::new(kind, "expected `()` after the function's name", at(fn_at, end)));
        }
    }
    i += 1;

    // The body is the last token tree; everything between the parameters and it is the return
    // type. (A type may itself hold a top-level brace group, as in `Foo<{ N }>`.)
    let last = toks.len() - 1;
    let body = match &toks[last] {
        Tok::Group(Delim::Brace, _) if last >= i => last,
        Tok::Punct(';', _) => return Err(Error::new(kind, "the function must have a body", at(last, last))),
        _ => return Err(Error::new(kind, "expected the function's body `{ .. }`", at(last, last))),
    };
    if let Some(w) = (i..body).find(|&j| toks[j].is_ident("where")) {
        return Err(Error::new(kind, "`where` clauses are not supported", at(w, body - 1)));
    }
    let ret = i..body;
    if !ret.is_empty() {
        let arrow = toks[i].is_punct('-') && toks.get(i + 1).is_some_and(|t| t.is_punct('>'));
        if !arrow {
            let msg = format!("expected `->` or the function's body, found `{}`", toks[i].describe());
            return Err(Error::new(kind, msg, at(i, body - 1)));
        }
        if ret.len() == 2 {
            return Err(Error::new(kind, "expected a return type after `->`", at(i, i + 1)));
        }
    }

    Ok(Func { attrs, vis, fn_name, ret, body })
}

/// The index of the `>` closing the generics opened at `open`, if found.
fn generics_end(toks: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut prev_minus = false;
    for (j, tok) in toks.iter().enumerate().skip(open) {
        match tok {
            Tok::Punct('<', _) => depth += 1,
            // The `>` of `->` (as in `F: Fn() -> u8`) closes nothing.
            Tok::Punct('>', _) if !prev_minus => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
        prev_minus = tok.is_punct('-');
    }
    None
}

/// If an attribute's content is a test attribute (`test`, `tokio::test`, `goro::test`, ...),
/// its path as written.
fn test_attr_path(content: &[Tok]) -> Option<String> {
    let content = flatten(content);
    let mut path = String::new();
    for (j, tok) in content.iter().enumerate() {
        match tok {
            Tok::Ident(s) => path.push_str(s),
            Tok::Punct(':', _) => path.push(':'),
            // Arguments, as in `#[tokio::test(flavor = "multi_thread")]`.
            Tok::Group(Delim::Paren, _) if j == content.len() - 1 => {}
            _ => return None,
        }
    }
    let last = path.rsplit("::").next().unwrap_or("");
    (last == "test").then_some(path)
}

/// The tokens with invisible groups replaced by their contents, recursively at the top level.
pub(crate) fn flatten(toks: &[Tok]) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    for tok in toks {
        match tok {
            Tok::Group(Delim::None, inner) => out.extend(flatten(inner)),
            other => out.push(other.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small lexer: enough Rust to write the tests' inputs and expected outputs as strings.
    fn lex(src: &str) -> Vec<Tok> {
        let chars: Vec<char> = src.chars().collect();
        let mut pos = 0;
        let toks = lex_until(&chars, &mut pos, None);
        assert_eq!(pos, chars.len(), "unbalanced input: {src}");
        toks
    }

    fn lex_until(chars: &[char], pos: &mut usize, close: Option<char>) -> Vec<Tok> {
        let mut toks = Vec::new();
        while *pos < chars.len() {
            let c = chars[*pos];
            if c.is_whitespace() {
                *pos += 1;
            } else if Some(c) == close {
                *pos += 1;
                return toks;
            } else if c.is_alphabetic() || c == '_' || c.is_ascii_digit() {
                let start = *pos;
                while *pos < chars.len() && (chars[*pos].is_alphanumeric() || chars[*pos] == '_') {
                    *pos += 1;
                }
                let word: String = chars[start..*pos].iter().collect();
                toks.push(if c.is_ascii_digit() { Tok::Lit(word) } else { Tok::Ident(word) });
            } else if c == '"' {
                let start = *pos;
                *pos += 1;
                while chars[*pos] != '"' {
                    *pos += if chars[*pos] == '\\' { 2 } else { 1 };
                }
                *pos += 1;
                toks.push(Tok::Lit(chars[start..*pos].iter().collect()));
            } else if let Some((delim, close)) = match c {
                '(' => Some((Delim::Paren, ')')),
                '[' => Some((Delim::Bracket, ']')),
                '{' => Some((Delim::Brace, '}')),
                // `«..»` writes an invisible group, as `macro_rules!` fragments make.
                '«' => Some((Delim::None, '»')),
                _ => None,
            } {
                *pos += 1;
                toks.push(Tok::Group(delim, lex_until(chars, pos, Some(close))));
            } else {
                *pos += 1;
                let next = chars.get(*pos).copied();
                let joint = next.is_some_and(|n| n.is_ascii_punctuation() && !"()[]{}\"".contains(n));
                toks.push(Tok::Punct(c, joint));
            }
        }
        assert!(close.is_none(), "missing {close:?}");
        toks
    }

    /// Renders tokens with single spaces, so different spellings of the same tokens compare equal.
    fn render(toks: &[Tok], out: &mut String) {
        for tok in toks {
            match tok {
                Tok::Ident(s) | Tok::Lit(s) => out.push_str(s),
                Tok::Punct(c, _) => out.push(*c),
                Tok::Group(delim, inner) => {
                    let (open, close) = match delim {
                        Delim::Paren => ("(", ")"),
                        Delim::Bracket => ("[", "]"),
                        Delim::Brace => ("{", "}"),
                        Delim::None => ("«", "»"),
                    };
                    out.push_str(open);
                    out.push(' ');
                    render(inner, out);
                    out.push_str(close);
                }
            }
            out.push(' ');
        }
    }

    fn render_out(pieces: &[Out], args: &[Tok], item: &[Tok], out: &mut Vec<Tok>) {
        for piece in pieces {
            match piece {
                Out::Code(code) => out.extend(lex(code)),
                Out::Copy(Src::Args, r) => out.extend_from_slice(&args[r.clone()]),
                Out::Copy(Src::Item, r) => out.extend_from_slice(&item[r.clone()]),
                Out::Group(delim, inner) => {
                    let mut toks = Vec::new();
                    render_out(inner, args, item, &mut toks);
                    out.push(Tok::Group(*delim, toks));
                }
            }
        }
    }

    fn normalize(src: &str) -> String {
        let mut s = String::new();
        render(&lex(src), &mut s);
        s
    }

    /// The token location an error points at, rendered.
    fn norm_at(src: &str) -> String {
        normalize(src).trim_end().to_string()
    }

    fn try_expand(kind: Kind, args: &str, item: &str) -> Result<String, Error> {
        // The bridge opens up top-level invisible groups before expanding; so do the tests.
        let (args, item) = (flatten(&lex(args)), flatten(&lex(item)));
        let pieces = expand(kind, &args, &item)?;
        let mut toks = Vec::new();
        render_out(&pieces, &args, &item, &mut toks);
        let mut s = String::new();
        render(&toks, &mut s);
        Ok(s)
    }

    #[track_caller]
    fn assert_expands(kind: Kind, args: &str, item: &str, expected: &str) {
        match try_expand(kind, args, item) {
            Ok(got) => assert_eq!(got, normalize(expected)),
            Err(e) => panic!("unexpected error: {e:?}"),
        }
    }

    /// Asserts an error and returns where it points, rendered.
    #[track_caller]
    fn assert_error(kind: Kind, args: &str, item: &str, msg: &str) -> String {
        match try_expand(kind, args, item) {
            Ok(got) => panic!("expected an error, got {got}"),
            Err(e) => {
                assert_eq!(e.msg, msg);
                let Some((src, a, b)) = e.at else {
                    return String::new();
                };
                let toks = flatten(&lex(if src == Src::Args { args } else { item }));
                let mut s = String::new();
                render(&toks[a..=b], &mut s);
                s.trim_end().to_string()
            }
        }
    }

    /// The expected body of an expansion: the inner `async fn` with return type `ret` and body
    /// `block`, run on a runtime with `max_procs(procs)` if given.
    fn body(procs: Option<&str>, ret: &str, block: &str) -> String {
        body_of("new", procs, ret, block)
    }

    /// [`body`] of a `#[goro::test]`.
    fn test_body(procs: Option<&str>, ret: &str, block: &str) -> String {
        body_of("test", procs, ret, block)
    }

    fn body_of(ctor: &str, procs: Option<&str>, ret: &str, block: &str) -> String {
        let builder = match procs {
            Some(n) => format!("::goro::runtime::Builder::new().max_procs({n})"),
            None => "::goro::runtime::Builder::new()".to_owned(),
        };
        format!(
            "{{ async fn __goro_main() {ret} {block} use ::goro::__private::{{RunAsG as _, RunOnThread as _}}; \
             (&::goro::__private::Main::{ctor}({builder}, __goro_main())).run() }}"
        )
    }

    #[test]
    fn main_plain() {
        assert_expands(
            Kind::Main,
            "",
            "async fn main() { println!(\"hi\"); }",
            &format!("fn main() {}", body(None, "", "{ println!(\"hi\"); }")),
        );
    }

    #[test]
    fn main_with_return_type_attrs_and_vis() {
        assert_expands(
            Kind::Main,
            "",
            "#[doc = \"d\"] #[allow(unused)] pub(crate) async fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
            &format!(
                "#[doc = \"d\"] #[allow(unused)] pub(crate) fn main() -> Result<(), Box<dyn Error>> {}",
                body(None, "-> Result<(), Box<dyn Error>>", "{ Ok(()) }")
            ),
        );
    }

    #[test]
    fn main_with_max_procs() {
        assert_expands(
            Kind::Main,
            "max_procs = 2",
            "async fn main() { work().await }",
            &format!("fn main() {}", body(Some("2"), "", "{ work().await }")),
        );
        // A trailing comma, a suffix, an expression.
        assert_expands(
            Kind::Main,
            "max_procs = 1_000usize,",
            "async fn main() {}",
            &format!("fn main() {}", body(Some("1_000usize"), "", "{}")),
        );
        assert_expands(
            Kind::Main,
            "max_procs = N + 1",
            "async fn main() {}",
            &format!("fn main() {}", body(Some("N + 1"), "", "{}")),
        );
    }

    #[test]
    fn test_plain_keeps_attributes() {
        assert_expands(
            Kind::Test,
            "",
            "#[should_panic(expected = \"boom\")] #[ignore] async fn t() { panic!(\"boom\") }",
            &format!(
                "#[::core::prelude::v1::test] #[should_panic(expected = \"boom\")] #[ignore] fn t() {}",
                test_body(None, "", "{ panic!(\"boom\") }")
            ),
        );
    }

    #[test]
    fn test_with_allow_leaks() {
        for args in ["allow_leaks", "allow_leaks,", "max_procs = 2, allow_leaks", "allow_leaks, max_procs = 2"] {
            let procs = args.contains("max_procs").then_some("2");
            let b = test_body(procs, "", "{}");
            let b = b.replace(".run() }", ".allow_leaks().run() }");
            assert_expands(Kind::Test, args, "async fn t() {}", &format!("#[::core::prelude::v1::test] fn t() {b}"));
        }
    }

    #[test]
    fn test_with_max_procs_and_return_type() {
        assert_expands(
            Kind::Test,
            "max_procs = 1",
            "async fn t() -> Result<(), String> { Ok(()) }",
            &format!(
                "#[::core::prelude::v1::test] fn t() -> Result<(), String> {}",
                test_body(Some("1"), "-> Result<(), String>", "{ Ok(()) }")
            ),
        );
    }

    #[test]
    fn return_type_with_braces_and_invisible_groups() {
        // A const generic block in the return type, and `macro_rules!`-made invisible groups.
        assert_expands(
            Kind::Main,
            "",
            "async fn main() -> Foo<{ 3 }> { x }",
            &format!("fn main() -> Foo<{{ 3 }}> {}", body(None, "-> Foo<{ 3 }>", "{ x }")),
        );
        assert_expands(
            Kind::Main,
            "max_procs = «1 + 1»",
            "«#[doc = \"d\"]» «pub» async fn «main»() -> «Vec<u8>» «{ x }»",
            &format!("#[doc = \"d\"] pub fn main() -> Vec<u8> {}", body(Some("1 + 1"), "-> Vec<u8>", "{ x }")),
        );
    }

    #[test]
    fn not_async() {
        let at = assert_error(Kind::Main, "", "fn main() {}", "goro::main: the function must be `async fn`");
        assert_eq!(at, norm_at("fn main"));
        assert_error(Kind::Test, "", "#[ignore] pub fn t() {}", "goro::test: the function must be `async fn`");
    }

    #[test]
    fn parameters() {
        let at =
            assert_error(Kind::Main, "", "async fn main(x: u8) {}", "goro::main: the function must take no parameters");
        assert_eq!(at, norm_at("( x: u8)"));
    }

    #[test]
    fn generics_and_where() {
        let at = assert_error(
            Kind::Test,
            "",
            "async fn t<F: Fn() -> u8, T>() {}",
            "goro::test: generic functions are not supported",
        );
        assert_eq!(at, norm_at("< F: Fn( ) -> u8, T>"));
        let at = assert_error(
            Kind::Test,
            "",
            "async fn t() -> u8 where u8: Copy { 1 }",
            "goro::test: `where` clauses are not supported",
        );
        assert_eq!(at, norm_at("where u8: Copy"));
    }

    #[test]
    fn other_qualifiers() {
        assert_error(Kind::Main, "", "async unsafe fn main() {}", "goro::main: the function must not be `unsafe`");
        assert_error(Kind::Main, "", "const fn main() {}", "goro::main: the function must not be `const`");
        let at =
            assert_error(Kind::Main, "", "extern \"C\" fn main() {}", "goro::main: the function must not be `extern`");
        assert_eq!(at, norm_at("extern \"C\""));
    }

    #[test]
    fn not_a_function() {
        assert_error(Kind::Main, "", "struct S;", "goro::main: expected an `async fn`, found `struct`");
        let at = assert_error(Kind::Main, "", "", "goro::main: expected an `async fn`");
        assert_eq!(at, "");
        assert_error(Kind::Test, "", "async fn t();", "goro::test: the function must have a body");
        assert_error(
            Kind::Test,
            "",
            "async fn t() u8 {}",
            "goro::test: expected `->` or the function's body, found `u8`",
        );
        assert_error(Kind::Test, "", "async fn t() -> {}", "goro::test: expected a return type after `->`");
    }

    #[test]
    fn second_test_attribute() {
        let at = assert_error(
            Kind::Test,
            "",
            "#[test] async fn t() {}",
            "goro::test: remove `#[test]`: goro::test already adds it",
        );
        assert_eq!(at, norm_at("# [ test]"));
        assert_error(
            Kind::Test,
            "",
            "#[tokio::test(flavor = \"multi_thread\")] async fn t() {}",
            "goro::test: a second test attribute `#[tokio::test]` is not supported; remove one of them",
        );
        // An attribute that merely mentions `test` is fine.
        assert_expands(
            Kind::Test,
            "",
            "#[cfg(test)] #[my_test_helper] async fn t() {}",
            &format!(
                "#[::core::prelude::v1::test] #[cfg(test)] #[my_test_helper] fn t() {}",
                test_body(None, "", "{}")
            ),
        );
        // goro::main does not care.
        assert_expands(Kind::Main, "", "#[test] async fn t() {}", &format!("#[test] fn t() {}", body(None, "", "{}")));
    }

    #[test]
    fn bad_arguments() {
        let at = assert_error(
            Kind::Main,
            "foo",
            "async fn main() {}",
            "goro::main: unknown argument `foo` (expected `max_procs = N`)",
        );
        assert_eq!(at, norm_at("foo"));
        assert_error(
            Kind::Test,
            "worker_threads = 4",
            "async fn t() {}",
            "goro::test: unknown argument `worker_threads` (expected `max_procs = N`, `allow_leaks` or `synctest`)",
        );
        // `allow_leaks` is a test's argument only, once.
        assert_error(
            Kind::Main,
            "allow_leaks",
            "async fn main() {}",
            "goro::main: unknown argument `allow_leaks` (expected `max_procs = N`)",
        );
        assert_error(
            Kind::Test,
            "allow_leaks, allow_leaks",
            "async fn t() {}",
            "goro::test: `allow_leaks` is given more than once",
        );
        assert_error(Kind::Main, "4", "async fn main() {}", "goro::main: unexpected `4` (expected `max_procs = N`)");
        assert_error(
            Kind::Main,
            "max_procs",
            "async fn main() {}",
            "goro::main: `max_procs` needs a value, e.g. `max_procs = 4`",
        );
        assert_error(
            Kind::Main,
            "max_procs = ",
            "async fn main() {}",
            "goro::main: `max_procs` needs a value, e.g. `max_procs = 4`",
        );
        assert_error(
            Kind::Main,
            "max_procs(2)",
            "async fn main() {}",
            "goro::main: `max_procs` needs a value, e.g. `max_procs = 4`",
        );
        assert_error(
            Kind::Main,
            "max_procs = 1, max_procs = 2",
            "async fn main() {}",
            "goro::main: `max_procs` is given more than once",
        );
        assert_error(
            Kind::Main,
            "max_procs = 1,, ",
            "async fn main() {}",
            "goro::main: unexpected `,` (expected `max_procs = N`)",
        );
        let at = assert_error(
            Kind::Main,
            "max_procs = 0",
            "async fn main() {}",
            "goro::main: `max_procs` must be at least 1",
        );
        assert_eq!(at, norm_at("0"));
        assert_error(
            Kind::Main,
            "max_procs = \"2\"",
            "async fn main() {}",
            "goro::main: `max_procs` must be a positive integer, e.g. `max_procs = 4`, not `\"2\"`",
        );
        // An invisible group around a literal (a `macro_rules!` `$n:expr`) is checked too.
        assert_error(Kind::Main, "max_procs = «0»", "async fn main() {}", "goro::main: `max_procs` must be at least 1");
    }

    #[test]
    fn main_errors_come_with_a_stub() {
        let render = |kind: Kind, args: &str, item: &str| {
            let (args, item) = (lex(args), lex(item));
            let err = expand(kind, &args, &item).unwrap_err();
            let mut toks = Vec::new();
            render_out(&err.fallback, &args, &item, &mut toks);
            let mut s = String::new();
            render(&toks, &mut s);
            s
        };
        assert_eq!(
            render(Kind::Main, "", "pub unsafe fn main(x: u8) -> u8 { x }"),
            normalize("#[allow(dead_code)] fn main() {}")
        );
        assert_eq!(render(Kind::Main, "foo", "async fn main() {}"), normalize("#[allow(dead_code)] fn main() {}"));
        assert_eq!(render(Kind::Main, "", "struct S;"), "");
        // A test that fails to expand is simply not there.
        assert_eq!(render(Kind::Test, "", "fn t() {}"), "");
    }

    #[test]
    fn synctest_runs_the_body_in_a_bubble_and_takes_no_other_argument() {
        assert_expands(
            Kind::Test,
            "synctest",
            "async fn t() { x() }",
            "#[::core::prelude::v1::test] fn t() { async fn __goro_main() { x() } \
             ::goro::synctest::__test_fn(__goro_main) }",
        );
        assert_error(
            Kind::Test,
            "synctest, max_procs = 2",
            "async fn t() {}",
            "goro::test: `max_procs` has no meaning with `synctest`: a bubble runs one G at a time",
        );
        assert_error(
            Kind::Test,
            "max_procs = 2, synctest",
            "async fn t() {}",
            "goro::test: `max_procs` has no meaning with `synctest`: a bubble runs one G at a time",
        );
        assert_error(
            Kind::Test,
            "synctest, allow_leaks",
            "async fn t() {}",
            "goro::test: `allow_leaks` and `synctest` do not go together: a bubble waits for every G it \
             started, and one left blocked fails the test",
        );
        assert_error(
            Kind::Main,
            "synctest",
            "async fn main() {}",
            "goro::main: unknown argument `synctest` (expected `max_procs = N`)",
        );
    }

    #[test]
    fn argument_errors_come_first() {
        // Both are wrong: the arguments are reported.
        assert_error(
            Kind::Main,
            "foo = 1",
            "fn main() {}",
            "goro::main: unknown argument `foo` (expected `max_procs = N`)",
        );
    }
}
