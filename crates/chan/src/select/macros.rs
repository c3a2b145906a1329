//! `select!` and `select_blocking!`.
//!
//! The macros parse the cases into a list, giving each a hygienic name and an index from fixed
//! pools as they go (64 of each: a select may have up to 64 cases, in one recursion step each), pin one [`RecvCase`](super::RecvCase) or
//! [`SendCase`](super::SendCase) per case on the stack, run a
//! [`SelectFuture`](super::SelectFuture) over them, and match the winner's index to its arm.
//! Arm bodies are expanded in the caller's scope, so `break`, `continue`, `return` and `?`
//! behave as in any `match`.

/// Waits on several channel operations and runs exactly one: Go's `select` statement.
///
/// ```
/// use std::time::Duration;
/// goro::run(async {
///     let (tx, rx) = goro::chan::<i32>(1);
///     let (done_tx, done_rx) = goro::chan::<()>(0);
///     tx.send(1).await.unwrap();
///     let got = goro::select! {
///         recv(rx) -> v => v,
///         recv(done_rx) -> _ => None,
///     };
///     assert_eq!(got, Some(1));
///     // With `default`, select never waits.
///     let idle = goro::select! {
///         recv(rx) -> _ => false,
///         default => true,
///     };
///     assert!(idle);
///     drop(done_tx);
/// });
/// ```
///
/// Cases:
/// - `recv(rx) -> v => body`: `v` is `Option<T>` (`None` once the channel is closed and
///   drained).
/// - `send(tx, value) -> res => body`: `res` is `Result<(), SendError<T>>`; a send case on a
///   closed channel is ready and fires with the value back (Go panics there). A send case that
///   did not fire did not send.
/// - `default => body`: makes the select non-blocking.
///
/// Arms are written as in `match`: an arm whose body is a block `{ .. }` needs no comma after
/// it; any other body is followed by a comma (optional after the last arm). Unlike `match`, a
/// body that is a bare `match`, `if` or loop expression needs the comma too (or braces). An
/// expression arm that runs into the next case without its comma is reported as such; any other
/// case that does not parse is reported at its first wrong token, with what was expected there.
///
/// A case's channel may be a `Receiver`/`Sender`, a [`Chan`](crate::Chan), a reference to one,
/// or an `Option` of either: `None` is Go's nil channel, never ready. A case names a channel,
/// not a future: for a timeout, receive from `goro::time::after(d)`; to race any future, use
/// `goro::time::timeout(d, fut)` or `ctx.or_done(fut)`.
///
/// `break` and `continue` in an arm act on the loop around the `select!` (the arms are `match`
/// arms): unlike Go, where `break` inside `select` leaves only the `select`. The same channel may appear in several cases. Among
/// the cases ready at once one is picked uniformly at random. The whole `select!` evaluates to
/// the chosen arm's value.
///
/// Cancel-safe: dropping the enclosing future while the select waits unlinks every case; a
/// value that a sender already handed to a receive case goes back to its channel.
///
/// Arm bodies run after the select has let go of its channels, so Go's "nil the channel once
/// it is closed" idiom ports directly:
///
/// ```
/// goro::run(async {
///     let (a_tx, a_rx) = goro::chan::<u8>(1);
///     let (b_tx, b_rx) = goro::chan::<u8>(1);
///     a_tx.send(1).await.unwrap();
///     b_tx.send(2).await.unwrap();
///     drop((a_tx, b_tx));
///     let (mut a, mut b) = (Some(a_rx), Some(b_rx));
///     let mut sum = 0;
///     while a.is_some() || b.is_some() {
///         goro::select! {
///             recv(a.as_ref()) -> v => match v { Some(v) => sum += v, None => a = None },
///             recv(b.as_ref()) -> v => match v { Some(v) => sum += v, None => b = None },
///         }
///     }
///     assert_eq!(sum, 3);
/// });
/// ```
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@start await $($tokens)*)
    };
}

/// [`select!`] for plain threads: the same cases, parking the thread until one fires.
///
/// ```
/// let (tx, rx) = goro::chan::<u8>(0);
/// std::thread::spawn(move || tx.send_blocking(3).unwrap());
/// let v = goro::select_blocking! {
///     recv(rx) -> v => v.unwrap(),
/// };
/// assert_eq!(v, 3);
/// ```
#[macro_export]
macro_rules! select_blocking {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@start block $($tokens)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // ---- start: hand the name and index pools to the parser (one recursion step per case, so
    // 64 cases stay well within the default recursion limit)
    (@start $mode:ident $($tokens:tt)*) => {
        $crate::__select_parse!(@parse $mode [] []
            [_c0 _c1 _c2 _c3 _c4 _c5 _c6 _c7 _c8 _c9 _c10 _c11 _c12 _c13 _c14 _c15
             _c16 _c17 _c18 _c19 _c20 _c21 _c22 _c23 _c24 _c25 _c26 _c27 _c28 _c29 _c30 _c31
             _c32 _c33 _c34 _c35 _c36 _c37 _c38 _c39 _c40 _c41 _c42 _c43 _c44 _c45 _c46 _c47
             _c48 _c49 _c50 _c51 _c52 _c53 _c54 _c55 _c56 _c57 _c58 _c59 _c60 _c61 _c62 _c63]
            [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
             32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]
            $($tokens)*)
    };
    // ---- recv. A block body needs no comma after it, as in `match`; the block-then-anything
    // rule comes last, so that a body such as `{ a }.len()` is still one expression.
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [$name:ident $($names:ident)*] [$idx:tt $($idxs:tt)*]
        recv($ch:expr) -> $p:pat => $body:block , $($rest:tt)*) => {
        $crate::__select_parse!(@parse $mode [$($cases)* ($name $idx recv ($ch) () ($p) ($body))] [$($def)*]
            [$($names)*] [$($idxs)*] $($rest)*)
    };
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [$name:ident $($names:ident)*] [$idx:tt $($idxs:tt)*]
        recv($ch:expr) -> $p:pat => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@parse $mode [$($cases)* ($name $idx recv ($ch) () ($p) ($body))] [$($def)*]
            [$($names)*] [$($idxs)*] $($($rest)*)?)
    };
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [$name:ident $($names:ident)*] [$idx:tt $($idxs:tt)*]
        recv($ch:expr) -> $p:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@parse $mode [$($cases)* ($name $idx recv ($ch) () ($p) ($body))] [$($def)*]
            [$($names)*] [$($idxs)*] $($rest)*)
    };
    // ---- send
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [$name:ident $($names:ident)*] [$idx:tt $($idxs:tt)*]
        send($ch:expr, $v:expr) -> $p:pat => $body:block , $($rest:tt)*) => {
        $crate::__select_parse!(@parse $mode [$($cases)* ($name $idx send ($ch) ($v) ($p) ($body))] [$($def)*]
            [$($names)*] [$($idxs)*] $($rest)*)
    };
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [$name:ident $($names:ident)*] [$idx:tt $($idxs:tt)*]
        send($ch:expr, $v:expr) -> $p:pat => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@parse $mode [$($cases)* ($name $idx send ($ch) ($v) ($p) ($body))] [$($def)*]
            [$($names)*] [$($idxs)*] $($($rest)*)?)
    };
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [$name:ident $($names:ident)*] [$idx:tt $($idxs:tt)*]
        send($ch:expr, $v:expr) -> $p:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@parse $mode [$($cases)* ($name $idx send ($ch) ($v) ($p) ($body))] [$($def)*]
            [$($names)*] [$($idxs)*] $($rest)*)
    };
    // ---- default
    (@parse $mode:ident [$($cases:tt)*] [] $names:tt $idxs:tt default => $body:block , $($rest:tt)*) => {
        $crate::__select_parse!(@parse $mode [$($cases)*] [($body)] $names $idxs $($rest)*)
    };
    (@parse $mode:ident [$($cases:tt)*] [] $names:tt $idxs:tt default => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@parse $mode [$($cases)*] [($body)] $names $idxs $($($rest)*)?)
    };
    (@parse $mode:ident [$($cases:tt)*] [] $names:tt $idxs:tt default => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@parse $mode [$($cases)*] [($body)] $names $idxs $($rest)*)
    };
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)+] $names:tt $idxs:tt default $($rest:tt)*) => {
        ::core::compile_error!("goro::select!: more than one `default` case")
    };
    // ---- done
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] $names:tt $idxs:tt) => {
        $crate::__select_parse!(@emit $mode [$($cases)*] [$($def)*])
    };
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] [] [] $kind:ident ($($args:tt)*) $($rest:tt)*) => {
        ::core::compile_error!("goro::select!: at most 64 cases (use goro::chan::Select for more)")
    };
    // ---- a case that does not parse: match it again against the bare grammar, so that the
    // compiler's error points at the first token of that case that is wrong, and its note says
    // what was expected there.
    (@parse $mode:ident [$($cases:tt)*] [$($def:tt)*] $names:tt $idxs:tt $($rest:tt)+) => {
        $crate::__select_case!($($rest)+)
    };
    // ---- expansion. The cases live in an inner block that hands out only the winner's owned
    // outcome; they (and their borrows of the channel variables) are gone before the arm body
    // runs, so a body may assign the channel variables, e.g. Go's `ch = nil` (`rx = None`).
    (@emit $mode:ident [$(($name:ident $idx:tt $kind:ident ($ch:expr) ($($v:expr)?) ($p:pat) ($body:expr)))*] [$(($def:expr))?]) => {{
        let (__goro_select_winner, ($($name,)*)) = {
            $(
                let $name = &$ch;
                let mut $name = ::core::pin::pin!($crate::__select_parse!(@case $kind $name $($v)?));
            )*
            let __goro_select_winner: ::core::option::Option<usize> = {
                let __goro_select = $crate::select::SelectFuture::new(
                    [$(&*$name as &dyn $crate::select::Case),*],
                    $crate::__select_parse!(@has_default $($def)?),
                );
                $crate::__select_parse!(@wait $mode __goro_select)
            };
            (
                __goro_select_winner,
                ($(
                    if __goro_select_winner == ::core::option::Option::Some($idx) {
                        ::core::option::Option::Some($name.as_mut().take())
                    } else {
                        ::core::option::Option::None
                    },
                )*),
            )
        };
        $crate::__select_parse!(@match __goro_select_winner [$(($name $idx ($p) ($body)))*] [$(($def))?])
    }};
    (@match $w:ident [$(($name:ident $idx:tt ($p:pat) ($body:expr)))*] []) => {
        match $w {
            $(
                ::core::option::Option::Some($idx) => {
                    let $p = $name.expect("the winner's outcome");
                    $body
                }
            )*
            _ => ::core::unreachable!("goro::select!: no case fired"),
        }
    };
    (@match $w:ident [$(($name:ident $idx:tt ($p:pat) ($body:expr)))*] [($def:expr)]) => {
        match $w {
            $(
                ::core::option::Option::Some($idx) => {
                    let $p = $name.expect("the winner's outcome");
                    $body
                }
            )*
            ::core::option::Option::None => $def,
            _ => ::core::unreachable!("goro::select!: no case fired"),
        }
    };
    (@case recv $name:ident) => {
        $crate::select::RecvCase::new($crate::select::AsRecv::as_recv($name))
    };
    (@case send $name:ident $v:expr) => {
        $crate::select::SendCase::new($crate::select::AsSend::as_send($name), $v)
    };
    (@has_default) => { false };
    (@has_default $def:expr) => { true };
    (@wait await $f:ident) => { $f.await };
    (@wait block $f:ident) => { $crate::select::block_on($f) };
}

/// One `select!` case that `select!` could not parse, alone. An expression arm followed by the
/// next case without a comma (the usual slip: Go's `case` needs none) is said as such; anything
/// else is matched against the bare grammar ([`__select_case_grammar!`]), so that the
/// compiler's error points at the token of that case that is wrong (its note says what the
/// grammar expected there). Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_case {
    (recv $args:tt -> $v:pat => $($body:tt)+) => {
        $crate::__select_case!(@comma [recv $args -> $v =>] [] $($body)+)
    };
    (send $args:tt -> $v:pat => $($body:tt)+) => {
        $crate::__select_case!(@comma [send $args -> $v =>] [] $($body)+)
    };
    (default => $($body:tt)+) => {
        $crate::__select_case!(@comma [default =>] [] $($body)+)
    };
    // Looking through the arm's body, token by token, for the start of a next case.
    (@comma $case:tt [$($seen:tt)+] recv ($($a:tt)*) $($rest:tt)*) => {
        $crate::__select_missing_comma!($($seen)+)
    };
    (@comma $case:tt [$($seen:tt)+] send ($($a:tt)*) $($rest:tt)*) => {
        $crate::__select_missing_comma!($($seen)+)
    };
    (@comma $case:tt [$($seen:tt)+] default => $($rest:tt)*) => {
        $crate::__select_missing_comma!($($seen)+)
    };
    (@comma $case:tt [$($seen:tt)*] $t:tt $($rest:tt)*) => {
        $crate::__select_case!(@comma $case [$($seen)* $t] $($rest)*)
    };
    (@comma [$($case:tt)*] [$($seen:tt)*]) => {
        $crate::__select_case_grammar!($($case)* $($seen)*)
    };
    ($($other:tt)*) => {
        $crate::__select_case_grammar!($($other)*)
    };
}

/// The error of an arm whose body runs into the next case without a comma. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_missing_comma {
    ($($body:tt)+) => {
        ::core::compile_error!(::core::concat!(
            "goro::select!: expected `,` after the arm `",
            ::core::stringify!($($body)+),
            "`: an arm whose body is not a block `{ .. }` is followed by a comma before the next case"
        ))
    };
}

/// The grammar of one `select!` case, alone (see [`__select_case!`]). Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_case_grammar {
    (recv($rx:expr) -> $v:pat => $body:expr $(, $($rest:tt)*)?) => {
        ::core::compile_error!("goro::select!: a block arm must be followed by a comma or the next case")
    };
    (send($tx:expr, $value:expr) -> $res:pat => $body:expr $(, $($rest:tt)*)?) => {
        ::core::compile_error!("goro::select!: a block arm must be followed by a comma or the next case")
    };
    (default => $body:expr $(, $($rest:tt)*)?) => {
        ::core::compile_error!("goro::select!: a block arm must be followed by a comma or the next case")
    };
}
