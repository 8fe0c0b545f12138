//! `alt!`: [`Alt`](crate::Alt) with the bookkeeping written for you.

/// Waits on several sends and receives at once, like Plan 9's `alt` or Go's `select`.
///
/// Each arm is `recv(chan) -> pattern => body` or `send(chan, value) -> pattern => body`,
/// where `chan` is a [`Chan`](crate::Chan), a [`Sender`](crate::Sender) or
/// [`Receiver`](crate::Receiver), or any reference to one; the pattern binds
/// `Result<T, RecvError>` (a receive) or `Result<(), SendError<T>>` (a send; the error gives
/// back the value when the channel is closed). Exactly one arm's body runs. A body is a block
/// `{ .. }`, with or without a comma after it, or an expression followed by a comma (the last
/// arm's comma is optional). An optional last arm `default => body` runs if no operation can
/// proceed at once (`CHANNOBLK`), or `timeout(duration) => body` if none proceeds in time.
/// Ready arms are chosen uniformly at random. The value of a send arm that did not fire is
/// dropped. A malformed arm is a compile error that names it and says what was expected.
/// (An alt of more than about 50 arms needs a higher `#![recursion_limit]`; an [`Alt`]
/// built in a loop needs none.) The arms live on the stack: waiting allocates nothing, except
/// in `alt!(async; ..)` below, which builds an [`Alt`].
///
/// [`Alt`]: crate::Alt
///
/// ```
/// use chan::{alt, Chan};
/// let (numbers, words) = (Chan::<u32>::new(1), Chan::<String>::new(1));
/// numbers.send(7).unwrap();
/// let got = alt! {
///     recv(numbers) -> n => { format!("number {}", n.unwrap()) },
///     send(words, "hello".to_string()) -> sent => { format!("sent: {}", sent.is_ok()) },
/// };
/// assert!(got == "number 7" || got == "sent: true");
///
/// let empty = Chan::<u32>::new(0);
/// let what = alt! {
///     recv(empty) -> _v => "received",
///     default => "nothing ready",
/// };
/// assert_eq!(what, "nothing ready");
///
/// let late = alt! {
///     recv(&empty) -> v => { v.ok() }
///     timeout(std::time::Duration::from_millis(1)) => None,
/// };
/// assert_eq!(late, None);
/// ```
///
/// In an async task, `alt!(async; ..)` awaits [`Alt::wait_async`](crate::Alt::wait_async)
/// instead of blocking the thread (a `default` arm works as above; for a timeout, race the
/// whole `alt!` against the executor's timer):
///
/// ```
/// use chan::{alt, Chan};
/// let (a, b) = (Chan::<u32>::new(0), Chan::<&str>::new(0));
/// let tx = b.clone();
/// let t = std::thread::spawn(move || tx.send("from a thread").unwrap());
/// let got = futures::executor::block_on(async {
///     alt! { async;
///         recv(a) -> n => { format!("number {}", n.unwrap()) },
///         recv(b) -> s => { s.unwrap().to_string() },
///     }
/// });
/// assert_eq!(got, "from a thread");
/// t.join().unwrap();
/// ```
#[macro_export]
macro_rules! alt {
    // How it works: `@parse` reads one arm at a time, its head (`recv(c) -> p =>`,
    // `send(c, v) -> p =>`, `default =>`, `timeout(d) =>`) and its body (`{ .. }` with or
    // without a comma after it, or an expression and a comma) in one step, so that an arm
    // costs one level of the recursion limit here and one in `@slots`; `default` and
    // `timeout` go to `@last`, which makes sure nothing follows them. Once every arm is read,
    // `@slots` declares one slot per arm (and, blocking, the arm itself, on the stack) and
    // builds the alt. Every input that well-formed arms cannot match ends in a
    // `compile_error!` that says what was expected, so a slip never reaches the recursion
    // limit. `$mode` is how an alt with no `default` waits: `block` (the thread) or `await`
    // (`async;`).

    // The end of the arms.
    (@parse $mode:tt [] ()) => {
        ::core::compile_error!(
            "`alt!` needs at least one arm: `recv(chan) -> pattern => body`, `send(chan, value) -> pattern => body`, `default => body` or `timeout(duration) => body`"
        )
    };
    (@parse $mode:tt [$($arms:tt)*] ()) => {
        $crate::alt!(@slots [] (0) [$($arms)*] ($mode))
    };

    // Well-formed arms. The order of the body forms matters: a block followed by a comma or
    // by nothing is taken as a block (wrapping it in braces again would draw `unused_braces`
    // at the user's braces); then an expression and a comma, so that `{ a }.b(),` is one
    // expression; a block with no comma last, when what follows cannot continue it.
    (@parse $mode:tt [$($arms:tt)*] (recv ($c:expr $(,)?) -> $p:pat => $body:block, $($rest:tt)*)) => {
        $crate::alt!(@parse $mode [$($arms)* (recv $c, (), $p, $body)] ($($rest)*))
    };
    (@parse $mode:tt [$($arms:tt)*] (recv ($c:expr $(,)?) -> $p:pat => $body:block)) => {
        $crate::alt!(@parse $mode [$($arms)* (recv $c, (), $p, $body)] ())
    };
    (@parse $mode:tt [$($arms:tt)*] (recv ($c:expr $(,)?) -> $p:pat => $body:expr, $($rest:tt)*)) => {
        $crate::alt!(@parse $mode [$($arms)* (recv $c, (), $p, { $body })] ($($rest)*))
    };
    (@parse $mode:tt [$($arms:tt)*] (recv ($c:expr $(,)?) -> $p:pat => $body:expr)) => {
        $crate::alt!(@parse $mode [$($arms)* (recv $c, (), $p, { $body })] ())
    };
    (@parse $mode:tt $arms:tt (recv ($c:expr $(,)?) -> $p:pat => $body:expr; $($rest:tt)*)) => {
        $crate::alt!(@semicolon (recv($c) -> $p))
    };
    (@parse $mode:tt [$($arms:tt)*] (recv ($c:expr $(,)?) -> $p:pat => $body:block $($rest:tt)*)) => {
        $crate::alt!(@parse $mode [$($arms)* (recv $c, (), $p, $body)] ($($rest)*))
    };
    (@parse $mode:tt $arms:tt (recv ($c:expr $(,)?) -> $p:pat => $($rest:tt)*)) => {
        $crate::alt!(@bad_body (recv($c) -> $p) ($($rest)*))
    };
    (@parse $mode:tt [$($arms:tt)*] (send ($c:expr, $v:expr $(,)?) -> $p:pat => $body:block, $($rest:tt)*)) => {
        $crate::alt!(@parse $mode [$($arms)* (send $c, $v, $p, $body)] ($($rest)*))
    };
    (@parse $mode:tt [$($arms:tt)*] (send ($c:expr, $v:expr $(,)?) -> $p:pat => $body:block)) => {
        $crate::alt!(@parse $mode [$($arms)* (send $c, $v, $p, $body)] ())
    };
    (@parse $mode:tt [$($arms:tt)*] (send ($c:expr, $v:expr $(,)?) -> $p:pat => $body:expr, $($rest:tt)*)) => {
        $crate::alt!(@parse $mode [$($arms)* (send $c, $v, $p, { $body })] ($($rest)*))
    };
    (@parse $mode:tt [$($arms:tt)*] (send ($c:expr, $v:expr $(,)?) -> $p:pat => $body:expr)) => {
        $crate::alt!(@parse $mode [$($arms)* (send $c, $v, $p, { $body })] ())
    };
    (@parse $mode:tt $arms:tt (send ($c:expr, $v:expr $(,)?) -> $p:pat => $body:expr; $($rest:tt)*)) => {
        $crate::alt!(@semicolon (send($c, $v) -> $p))
    };
    (@parse $mode:tt [$($arms:tt)*] (send ($c:expr, $v:expr $(,)?) -> $p:pat => $body:block $($rest:tt)*)) => {
        $crate::alt!(@parse $mode [$($arms)* (send $c, $v, $p, $body)] ($($rest)*))
    };
    (@parse $mode:tt $arms:tt (send ($c:expr, $v:expr $(,)?) -> $p:pat => $($rest:tt)*)) => {
        $crate::alt!(@bad_body (send($c, $v) -> $p) ($($rest)*))
    };
    (@parse $mode:tt $arms:tt (default => $($rest:tt)*)) => {
        $crate::alt!(@last $arms (default) (default) ($($rest)*))
    };
    (@parse block $arms:tt (timeout ($d:expr $(,)?) => $($rest:tt)*)) => {
        $crate::alt!(@last $arms (timeout $d,) (timeout($d)) ($($rest)*))
    };

    // Malformed heads.
    (@parse await $arms:tt (timeout $($rest:tt)*)) => {
        ::core::compile_error!(
            "`alt!(async; ..)` takes no `timeout` arm: wrap the whole `alt!` in the executor's timer (dropping the alt's future cancels it)"
        )
    };
    (@parse $mode:tt $arms:tt (recv $args:tt => $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected `-> pattern` after `",
            ::core::stringify!(recv $args),
            "` (the pattern binds `Result<T, RecvError>`), as in `recv(chan) -> v => body`"
        ))
    };
    (@parse $mode:tt $arms:tt (send $args:tt => $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected `-> pattern` after `",
            ::core::stringify!(send $args),
            "` (the pattern binds `Result<(), SendError<T>>`), as in `send(chan, value) -> r => body`"
        ))
    };
    (@parse $mode:tt $arms:tt (recv ($c:expr $(,)?) $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected `-> pattern => body` after `",
            ::core::stringify!(recv($c)),
            "`"
        ))
    };
    (@parse $mode:tt $arms:tt (send ($c:expr, $v:expr $(,)?) $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected `-> pattern => body` after `",
            ::core::stringify!(send($c, $v)),
            "`"
        ))
    };
    (@parse $mode:tt $arms:tt (recv ($($args:tt)*) $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: a `recv` arm takes one channel, `recv(chan) -> pattern => body`; found `",
            ::core::stringify!(recv($($args)*)),
            "`"
        ))
    };
    (@parse $mode:tt $arms:tt (send ($($args:tt)*) $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: a `send` arm takes a channel and a value, `send(chan, value) -> pattern => body`; found `",
            ::core::stringify!(send($($args)*)),
            "`"
        ))
    };
    (@parse $mode:tt $arms:tt (recv $($rest:tt)*)) => {
        ::core::compile_error!(
            "`alt!`: expected `(chan)` after `recv`, as in `recv(chan) -> pattern => body`"
        )
    };
    (@parse $mode:tt $arms:tt (send $($rest:tt)*)) => {
        ::core::compile_error!(
            "`alt!`: expected `(chan, value)` after `send`, as in `send(chan, value) -> pattern => body`"
        )
    };
    (@parse block $arms:tt (default ($($args:tt)*) $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: `default` takes no argument (it fires when no arm is ready at once); to wait at most a while, write `timeout(",
            ::core::stringify!($($args)*),
            ") => body`"
        ))
    };
    (@parse await $arms:tt (default ($($args:tt)*) $($rest:tt)*)) => {
        ::core::compile_error!(
            "`alt!`: `default` takes no argument (it fires when no arm is ready at once); to wait at most a while, wrap the whole `alt!(async; ..)` in the executor's timer"
        )
    };
    (@parse $mode:tt $arms:tt (default $($rest:tt)*)) => {
        ::core::compile_error!("`alt!`: expected `=> body` after `default` (it binds nothing)")
    };
    (@parse block $arms:tt (timeout ($d:expr $(,)?) $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected `=> body` after `",
            ::core::stringify!(timeout($d)),
            "` (it binds nothing)"
        ))
    };
    (@parse block $arms:tt (timeout $($rest:tt)*)) => {
        ::core::compile_error!(
            "`alt!`: a `timeout` arm takes one duration in parentheses: `timeout(duration) => body`"
        )
    };
    (@parse $mode:tt $arms:tt ($other:tt $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected an arm, `recv(chan) -> pattern => body`, `send(chan, value) -> pattern => body`, `default => body` or `timeout(duration) => body`; found `",
            ::core::stringify!($other),
            "`"
        ))
    };

    // Malformed bodies of `recv` and `send` arms (`$head` is the arm as written).
    (@bad_body ($($head:tt)*) ()) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected a body after `",
            ::core::stringify!($($head)* =>),
            "`"
        ))
    };
    (@bad_body ($($head:tt)*) (, $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected a body after `",
            ::core::stringify!($($head)* =>),
            "`, found `,`"
        ))
    };
    (@bad_body ($($head:tt)*) ($($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected `,` after the body of `",
            ::core::stringify!($($head)*),
            "` (an expression body ends with a comma; a `{ .. }` body needs none)"
        ))
    };
    (@semicolon ($($head:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: arms are separated by `,`, not `;` (after the body of `",
            ::core::stringify!($($head)*),
            "`)"
        ))
    };

    // The body of `default` or `timeout(d)`, the last arm: `$kind` is what `@slots` takes
    // before the body, `$head` the arm as written.
    (@last [$($arms:tt)*] ($($kind:tt)*) $head:tt ($body:block $(,)?)) => {
        $crate::alt!(@slots [] (0) [$($arms)*] ($($kind)* $body))
    };
    (@last [$($arms:tt)*] ($($kind:tt)*) $head:tt ($body:expr $(,)?)) => {
        $crate::alt!(@slots [] (0) [$($arms)*] ($($kind)* { $body }))
    };
    (@last $arms:tt $kind:tt ($($head:tt)*) ()) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected a body after `",
            ::core::stringify!($($head)* =>),
            "`"
        ))
    };
    (@last $arms:tt $kind:tt ($($head:tt)*) (, $($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: expected a body after `",
            ::core::stringify!($($head)* =>),
            "`, found `,`"
        ))
    };
    (@last $arms:tt $kind:tt ($($head:tt)*) ($($rest:tt)*)) => {
        ::core::compile_error!(::core::concat!(
            "`alt!`: the `",
            ::core::stringify!($($head)*),
            "` arm must be the last (and only one `default` or `timeout` arm is allowed)"
        ))
    };

    // One slot and one channel reference per arm, each from its own expansion so that they
    // are distinct. `let end = &$c` extends the life of a temporary (`recv(&mut *c)`,
    // `recv(make())`) to the whole alt. The blocking forms also declare the arm itself here,
    // on the stack (`arm`, borrowing the slot until the wait is over), so that their wait
    // allocates nothing; `async;` adds the arms to an `Alt` instead, which owns them on the
    // heap (its future may be leaked with their nodes queued: see `alt/stack.rs`).
    (@slots [$($done:tt)*] ($i:expr) [(recv $c:expr, $v:tt, $p:pat, $body:tt) $($rest:tt)*] (await)) => {{
        let end = &$c;
        let mut slot = ::core::option::Option::None;
        $crate::alt!(@slots [$($done)* (recv end slot ($i) $p, $body)] ($i + 1) [$($rest)*] (await))
    }};
    (@slots [$($done:tt)*] ($i:expr) [(send $c:expr, $v:expr, $p:pat, $body:tt) $($rest:tt)*] (await)) => {{
        let end = &$c;
        let mut slot = ::core::option::Option::Some($v);
        $crate::alt!(@slots [$($done)* (send end slot ($i) $p, $body)] ($i + 1) [$($rest)*] (await))
    }};
    (@slots [$($done:tt)*] ($i:expr) [(recv $c:expr, $v:tt, $p:pat, $body:tt) $($rest:tt)*] $tail:tt) => {{
        let end = &$c;
        let mut slot = ::core::option::Option::None;
        let mut arm = $crate::__private::recv(end, &mut slot);
        $crate::alt!(@slots [$($done)* (recv slot arm ($i) $p, $body)] ($i + 1) [$($rest)*] $tail)
    }};
    (@slots [$($done:tt)*] ($i:expr) [(send $c:expr, $v:expr, $p:pat, $body:tt) $($rest:tt)*] $tail:tt) => {{
        let end = &$c;
        let mut slot = ::core::option::Option::Some($v);
        let mut arm = $crate::__private::send(end, &mut slot);
        $crate::alt!(@slots [$($done)* (send slot arm ($i) $p, $body)] ($i + 1) [$($rest)*] $tail)
    }};

    // Every slot declared: build the alt, wait, and run the fired arm's body. `async;`: an
    // `Alt` of boxed arms.
    (@slots [$(($kind:ident $e:ident $s:ident ($i:expr) $p:pat, $body:tt))*] ($n:expr) [] (await)) => {{
        let mut alt = $crate::Alt::new();
        $( alt.$kind($e, &mut $s); )*
        let fired = $crate::alt!(@wait alt (await));
        ::core::mem::drop(alt);
        match fired {
            ::core::option::Option::Some(fired) => {
                $(
                    if fired.index == $i {
                        let $p = $crate::alt!(@result $kind $s fired);
                        $body
                    } else
                )*
                { ::core::unreachable!("alt fired an arm it does not have") }
            }
            ::core::option::Option::None => $crate::alt!(@otherwise (await)),
        }
    }};
    // The blocking forms: an alt of the arms on the stack, for the wait. (The arms' borrows
    // of the slots end with it: an arm's drop touches nothing it borrows.)
    (@slots [$(($kind:ident $s:ident $a:ident ($i:expr) $p:pat, $body:tt))*] ($n:expr) [] $tail:tt) => {{
        let fired = {
            let mut alt = $crate::__private::StackAlt::new([$( $a.stack() ),*]);
            $crate::alt!(@wait alt $tail)
        };
        match fired {
            ::core::option::Option::Some(fired) => {
                $(
                    if fired.index == $i {
                        let $p = $crate::alt!(@result $kind $s fired);
                        $body
                    } else
                )*
                { ::core::unreachable!("alt fired an arm it does not have") }
            }
            ::core::option::Option::None => $crate::alt!(@otherwise $tail),
        }
    }};

    (@wait $alt:ident (block)) => { ::core::option::Option::Some($alt.wait()) };
    (@wait $alt:ident (await)) => { ::core::option::Option::Some($alt.wait_async().await) };
    (@wait $alt:ident (default $body:tt)) => { $alt.try_wait() };
    (@wait $alt:ident (timeout $d:expr, $body:tt)) => { $alt.wait_timeout($d) };

    (@otherwise (block)) => { ::core::unreachable!("an untimed alt always fires") };
    (@otherwise (await)) => { ::core::unreachable!("an untimed alt always fires") };
    (@otherwise (default $body:tt)) => { $body };
    (@otherwise (timeout $d:expr, $body:tt)) => { $body };

    (@result recv $s:ident $fired:ident) => {
        match $s.take() {
            ::core::option::Option::Some(v) if !$fired.closed => ::core::result::Result::Ok(v),
            _ => ::core::result::Result::Err($crate::RecvError),
        }
    };
    (@result send $s:ident $fired:ident) => {
        match $s.take() {
            ::core::option::Option::Some(v) if $fired.closed => {
                ::core::result::Result::Err($crate::SendError(v))
            }
            _ => ::core::result::Result::Ok(()),
        }
    };

    (async; $($arms:tt)*) => { $crate::alt!(@parse await [] ($($arms)*)) };
    ($($arms:tt)*) => { $crate::alt!(@parse block [] ($($arms)*)) };
}
