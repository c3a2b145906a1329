//! The attribute macros of goro: `#[goro::main]` and `#[goro::test]`.
//!
//! Use them through the `goro` crate (the package `goro-rt`), which re-exports both; this crate
//! is an implementation detail and its expansion names `::goro` paths, so it only works with
//! `goro` as a dependency (`goro = { package = "goro-rt", .. }`).
//!
//! Both macros turn an `async fn` without parameters into an ordinary fn that runs the body as
//! the main goroutine of a goro runtime, the way Go runs `func main()`:
//!
//! | written | expands to |
//! |---------|------------|
//! | `#[goro::main] async fn main() -> R { body }` | `fn main() -> R { async fn __goro_main() -> R { body } (&Main::new(Builder::new(), __goro_main())).run() }` |
//! | `#[goro::main(max_procs = 2)] ..` | the same with `Builder::new().max_procs(2)` |
//! | `#[goro::test] async fn t() -> R { body }` | the same fn `t`, with `#[test]` |
//!
//! (`Main` and `Builder` are spelled `::goro::__private::Main` and `::goro::runtime::Builder`.) When
//! the body's future is `Send + 'static` and its output `Send`, as an `async fn main` nearly
//! always is, `run` spawns it as a G of its own (Go's main goroutine: it runs on whichever P
//! is free) and the calling thread only waits for it, so a G that computes without a yield
//! point can never hold main up by landing on main's thread. Otherwise it runs on the calling
//! thread, as `Runtime::block_on` does. The compiler picks the way (see `goro_runtime::__private::entry`).
//!
//! The return type (`-> R`) is optional, and anything `main` or a `#[test]` may return works
//! (`Result<(), E>` with `E: Debug`, ...). The function's attributes (doc comments,
//! `#[should_panic]`, `#[ignore]`, lints) and visibility are kept; the body's tokens are passed
//! through untouched, so compiler errors inside it point at the user's code.
//!
//! The only argument is `max_procs = N`: the number of Ps (Go's `GOMAXPROCS`) of a runtime built
//! just for this function; without it, the runtime is sized as `goro::run` sizes one (from `GORO_MAXPROCS`, else
//! the number of CPUs). `N` is any `usize` expression; a literal must be at least 1.
//!
//! Misuse is a compile error that says what is wrong and points at it: a fn that is not
//! `async`, takes parameters, has generics or a `where` clause, is `unsafe`, `const` or
//! `extern`, or has no body; an unknown or repeated argument; and, for `goro::test`, a second
//! test attribute such as a leftover `#[test]`.
//!
//! The crate has no dependencies: it parses the few tokens of a fn signature itself instead of
//! pulling in `syn` and `quote`.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

mod expand;

use expand::{Delim, Kind, Out, Src, Tok};

/// Runs `async fn main` as the main goroutine of a goro runtime.
///
/// The function must be `async`, take no parameters and have no generics; it may return any
/// type `main` may return. It becomes a plain `fn main()` that builds a runtime (with `N` Ps
/// given `max_procs = N`, else from `GORO_MAXPROCS` or the number of CPUs) and runs the body
/// as its main G: a G of its own when the body's future is `Send` (the calling thread then
/// only waits), else on the calling thread (`Runtime::block_on`). When the body returns, the
/// goroutines still alive are dropped and the runtime's threads stop.
///
/// ```ignore
/// #[goro::main]
/// async fn main() {
///     let (tx, rx) = goro::chan::<u32>(0);
///     goro::go!{ tx.send(42).await.unwrap() };
///     assert_eq!(rx.recv().await, Some(42));
/// }
/// ```
///
/// With a return type, and a runtime of its own with two Ps:
///
/// ```ignore
/// #[goro::main(max_procs = 2)]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     assert_eq!(goro::runtime::max_procs(), 2);
///     let n = goro::go(async { "7".parse::<u32>() }).await.unwrap()?;
///     println!("{n}");
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    run(Kind::Main, args, item)
}

/// Runs an `async fn` test as the main goroutine of a goro runtime of its own.
///
/// The same as [`macro@main`], and the generated fn carries `#[test]`; do not add `#[test]`
/// yourself. Other attributes stay on it: `#[should_panic]`, `#[ignore]`, doc comments. Every
/// test gets its own runtime, so tests running in parallel on cargo's test threads do not share
/// Ps. `max_procs = N` sets the runtime's P count, e.g. `max_procs = 1` to run every goroutine of
/// the test on one P. `allow_leaks` lets the test pass with goroutines still alive when it
/// returns (by default that fails it, after a grace of a second). `synctest` runs the test in a
/// `goro::synctest` bubble instead (Go's `synctest.Test`): a fake clock that jumps when every
/// goroutine is durably blocked, one goroutine at a time, every choice from a seed
/// (`GORO_SEED`), twice and compared step by step under `GORO_SYNCTEST_CHECK_DETERMINISM=1`;
/// it takes neither `max_procs` nor `allow_leaks`.
///
/// ```ignore
/// #[goro::test]
/// async fn spawns() {
///     assert_eq!(goro::go(async { 1 }).await.unwrap(), 1);
/// }
///
/// #[goro::test(max_procs = 1)]
/// async fn one_p() -> Result<(), String> {
///     assert_eq!(goro::runtime::max_procs(), 1);
///     Ok(())
/// }
///
/// #[goro::test]
/// #[should_panic(expected = "boom")]
/// async fn panics() {
///     panic!("boom");
/// }
///
/// #[goro::test(synctest)]
/// async fn an_hour_in_no_time() {
///     let start = goro::time::now();
///     goro::time::sleep(std::time::Duration::from_secs(3600)).await;
///     assert_eq!(goro::time::now() - start, std::time::Duration::from_secs(3600));
/// }
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    run(Kind::Test, args, item)
}

fn run(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let args = top_level(args);
    let item = top_level(item);
    let args_model: Vec<Tok> = args.iter().map(model).collect();
    let item_model: Vec<Tok> = item.iter().map(model).collect();
    match expand::expand(kind, &args_model, &item_model) {
        Ok(pieces) => {
            let mut out = TokenStream::new();
            emit(&pieces, &args, &item, &mut out);
            out
        }
        Err(err) => {
            let (first, last) = match err.at {
                None => (Span::call_site(), Span::call_site()),
                Some((src, a, b)) => {
                    let toks = if src == Src::Args { &args } else { &item };
                    (toks[a].span(), toks[b].span())
                }
            };
            let mut out = compile_error(&err.msg, first, last);
            emit(&err.fallback, &args, &item, &mut out);
            out
        }
    }
}

/// The top-level token trees of `stream`, invisible groups (`macro_rules!` fragments) opened up
/// into their contents, exactly as [`expand::flatten`] does on the model.
fn top_level(stream: TokenStream) -> Vec<TokenTree> {
    fn push(stream: TokenStream, out: &mut Vec<TokenTree>) {
        for tree in stream {
            match tree {
                TokenTree::Group(g) if g.delimiter() == Delimiter::None => push(g.stream(), out),
                other => out.push(other),
            }
        }
    }
    let mut out = Vec::new();
    push(stream, &mut out);
    out
}

/// The model of a token tree.
fn model(tree: &TokenTree) -> Tok {
    match tree {
        TokenTree::Ident(i) => Tok::Ident(i.to_string()),
        TokenTree::Punct(p) => Tok::Punct(p.as_char(), p.spacing() == Spacing::Joint),
        TokenTree::Literal(l) => Tok::Lit(l.to_string()),
        TokenTree::Group(g) => {
            let delim = match g.delimiter() {
                Delimiter::Parenthesis => Delim::Paren,
                Delimiter::Bracket => Delim::Bracket,
                Delimiter::Brace => Delim::Brace,
                Delimiter::None => Delim::None,
            };
            Tok::Group(delim, g.stream().into_iter().map(|t| model(&t)).collect())
        }
    }
}

/// Turns the expansion's pieces into tokens: generated code spanned at the attribute, copies of
/// the input with their own spans.
fn emit(pieces: &[Out], args: &[TokenTree], item: &[TokenTree], out: &mut TokenStream) {
    for piece in pieces {
        match piece {
            Out::Code(code) => out.extend(code.parse::<TokenStream>().expect("goro-macros: bad generated code")),
            Out::Copy(Src::Args, r) => out.extend(args[r.clone()].iter().cloned()),
            Out::Copy(Src::Item, r) => out.extend(item[r.clone()].iter().cloned()),
            Out::Group(delim, inner) => {
                let delim = match delim {
                    Delim::Paren => Delimiter::Parenthesis,
                    Delim::Bracket => Delimiter::Bracket,
                    Delim::Brace => Delimiter::Brace,
                    Delim::None => Delimiter::None,
                };
                let mut stream = TokenStream::new();
                emit(inner, args, item, &mut stream);
                out.extend([TokenTree::Group(Group::new(delim, stream))]);
            }
        }
    }
}

/// `::core::compile_error! { "msg" }`, spanned so that the error covers `first..=last`: rustc
/// reports a macro call's error from the span of its path to the span of its arguments.
fn compile_error(msg: &str, first: Span, last: Span) -> TokenStream {
    let punct = |c: char, spacing: Spacing| {
        let mut p = Punct::new(c, spacing);
        p.set_span(first);
        TokenTree::Punct(p)
    };
    let mut lit = Literal::string(msg);
    lit.set_span(last);
    let mut group = Group::new(Delimiter::Brace, TokenStream::from(TokenTree::Literal(lit)));
    group.set_span(last);
    [
        punct(':', Spacing::Joint),
        punct(':', Spacing::Alone),
        TokenTree::Ident(Ident::new("core", first)),
        punct(':', Spacing::Joint),
        punct(':', Spacing::Alone),
        TokenTree::Ident(Ident::new("compile_error", first)),
        punct('!', Spacing::Alone),
        TokenTree::Group(group),
    ]
    .into_iter()
    .collect()
}
