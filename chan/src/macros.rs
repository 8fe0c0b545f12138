//! `alt!`: [`Alt`](crate::Alt) with the bookkeeping written for you.

/// Waits on several sends and receives at once, like Plan 9's `alt` or Go's `select`.
///
/// Each arm is `recv(chan) -> pattern => { body }` or `send(chan, value) -> pattern => { body }`;
/// the pattern binds `Result<T, RecvError>` (a receive) or `Result<(), SendError<T>>` (a send;
/// the error gives back the value when the channel is closed). Exactly one arm's body runs.
/// An optional last arm `default => { body }` runs if no operation can proceed at once
/// (`CHANNOBLK`), or `timeout(duration) => { body }` if none proceeds in time. Ready arms are
/// chosen uniformly at random. The value of a send arm that did not fire is dropped.
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
///     recv(empty) -> _v => { "received" },
///     default => { "nothing ready" },
/// };
/// assert_eq!(what, "nothing ready");
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
    // Parse the arms into `(kind chan, value, pattern, body)` tuples, then the tail. `$mode`
    // is how an alt with no `default` waits: `block` (the thread) or `await` (`async;`).
    (@parse $mode:tt [$($arms:tt)*] recv($c:expr) -> $p:pat => $body:block $(, $($rest:tt)*)?) => {
        $crate::alt!(@parse $mode [$($arms)* (recv $c, (), $p, $body)] $($($rest)*)?)
    };
    (@parse $mode:tt [$($arms:tt)*] send($c:expr, $v:expr) -> $p:pat => $body:block $(, $($rest:tt)*)?) => {
        $crate::alt!(@parse $mode [$($arms)* (send $c, $v, $p, $body)] $($($rest)*)?)
    };
    (@parse $mode:tt [$($arms:tt)*] default => $body:block $(,)?) => {
        $crate::alt!(@slots [] (0) [$($arms)*] (default $body))
    };
    (@parse block [$($arms:tt)*] timeout($d:expr) => $body:block $(,)?) => {
        $crate::alt!(@slots [] (0) [$($arms)*] (timeout $d, $body))
    };
    (@parse await [$($arms:tt)*] timeout($d:expr) => $body:block $(,)?) => {
        ::core::compile_error!(
            "`alt!(async; ..)` takes no timeout arm: wrap it in the executor's timer (dropping the alt's future cancels it)"
        )
    };
    (@parse $mode:tt [$($arms:tt)*]) => {
        $crate::alt!(@slots [] (0) [$($arms)*] ($mode))
    };

    // One slot per arm, each `slot` from its own expansion so that they are distinct.
    (@slots [$($done:tt)*] ($i:expr) [(recv $c:expr, $v:tt, $p:pat, $body:block) $($rest:tt)*] $tail:tt) => {{
        let mut slot = ::core::option::Option::None;
        $crate::alt!(@slots [$($done)* (recv slot ($i) $c, $p, $body)] ($i + 1) [$($rest)*] $tail)
    }};
    (@slots [$($done:tt)*] ($i:expr) [(send $c:expr, $v:expr, $p:pat, $body:block) $($rest:tt)*] $tail:tt) => {{
        let mut slot = ::core::option::Option::Some($v);
        $crate::alt!(@slots [$($done)* (send slot ($i) $c, $p, $body)] ($i + 1) [$($rest)*] $tail)
    }};

    // Every slot declared: build the alt, wait, and run the fired arm's body.
    (@slots [$(($kind:ident $s:ident ($i:expr) $c:expr, $p:pat, $body:block))*] ($n:expr) [] $tail:tt) => {{
        let mut alt = $crate::Alt::new();
        $( alt.$kind(&$c, &mut $s); )*
        let fired = $crate::alt!(@wait alt $tail);
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
            ::core::option::Option::None => $crate::alt!(@otherwise $tail),
        }
    }};

    (@wait $alt:ident (block)) => { ::core::option::Option::Some($alt.wait()) };
    (@wait $alt:ident (await)) => { ::core::option::Option::Some($alt.wait_async().await) };
    (@wait $alt:ident (default $body:block)) => { $alt.try_wait() };
    (@wait $alt:ident (timeout $d:expr, $body:block)) => { $alt.wait_timeout($d) };

    (@otherwise (block)) => { ::core::unreachable!("an untimed alt always fires") };
    (@otherwise (await)) => { ::core::unreachable!("an untimed alt always fires") };
    (@otherwise (default $body:block)) => { $body };
    (@otherwise (timeout $d:expr, $body:block)) => { $body };

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

    (async; $($arms:tt)+) => { $crate::alt!(@parse await [] $($arms)+) };
    ($($arms:tt)+) => { $crate::alt!(@parse block [] $($arms)+) };
}
