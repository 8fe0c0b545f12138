//! Plan 9 channels whose lock strategy is a type parameter.
//!
//! [`Chan<T, L>`](Chan) is `libthread`'s channel: many senders, many receivers, a buffer of
//! `nbuf` values or none (rendezvous), [`Alt`] (and the [`alt!`] macro) to wait on several
//! operations, and 9front's close. `L` is a [`locks::Strategy`]: it is the lock that guards
//! each channel *and* the way a blocked sender or receiver waits, so `Chan<T, locks::SpinYield>`
//! behaves like Plan 9 before 2013, `Chan<T, locks::SemLock>` like Plan 9 after, and
//! `Chan<T, locks::Adaptive>` (the default) yields briefly, then sleeps. `Chan<T, locks::DynLock>`
//! takes its strategy from a [`locks::Backend`] chosen at run time (a name, `$LOCKS_BACKEND`):
//! `Chan::with_params(n, backend)`; its `new` is the default adaptive lock.
//!
//! ```
//! use chan::Chan;
//! use locks::SemLock;
//!
//! let c: Chan<String, SemLock> = Chan::new(4);
//! let producer = {
//!     let c = c.clone();
//!     std::thread::spawn(move || {
//!         for i in 0..10 {
//!             c.send(i.to_string()).unwrap();
//!         }
//!         c.close();
//!     })
//! };
//! let got: Vec<String> = c.iter().collect();
//! assert_eq!(got.len(), 10);
//! producer.join().unwrap();
//! ```
//!
//! # Channels
//!
//! `chan::Chan<T, L = locks::Adaptive>` is Plan 9's channel: a cloneable handle through which any
//! thread may send and receive.
//!
//! ```
//! use chan::{Alt, Chan};
//!
//! let c: Chan<u64, locks::SemLock> = Chan::new(10); // chancreate(sizeof(ulong), 10)
//! let tx = c.clone();
//! let sender = std::thread::spawn(move || {
//!     for i in 0..100 {
//!         tx.send(i).unwrap();
//!     }
//!     tx.close(); // receivers drain what is buffered, then see the end
//! });
//! assert_eq!(c.iter().sum::<u64>(), 4950);
//! sender.join().unwrap();
//!
//! // Ends that close the channel when one side goes, as in crossbeam, flume or std: a sender
//! // thread that panics still ends its receiver's loop.
//! let (tx, rx) = Chan::<u32>::unbounded().split();
//! std::thread::spawn(move || {
//!     tx.send(1).unwrap();
//!     panic!("dies without closing");
//! });
//! assert_eq!(rx.iter().collect::<Vec<_>>(), [1]);
//!
//! // alt: whichever of several operations can happen first, over mixed element types.
//! let (words, numbers) = (Chan::<&str>::new(1), Chan::<u32>::new(0));
//! words.send("ready").unwrap();
//! let (mut w, mut n) = (None, None);
//! let mut alt = Alt::new();
//! let wi = alt.recv(&words, &mut w);
//! alt.recv(&numbers, &mut n);
//! assert_eq!(alt.wait().index, wi);
//! drop(alt);
//! assert_eq!(w, Some("ready"));
//! ```
//!
//! # A channel over a backend chosen at run time
//!
//! `Chan<T, locks::DynLock>` takes its lock, and with it the way its blocked senders and
//! receivers wait, from a [`locks::Backend`]: a name (`spin`, `sem`, `adaptive`, with parameters
//! such as `adaptive:yield_ns=0`) or `$LOCKS_BACKEND`. `Chan::<T, DynLock>::new(n)` does not read
//! the environment; it is the default adaptive lock.
//!
//! ```
//! use locks::{Backend, DynLock};
//!
//! // From an environment variable, falling back to a default:
//! let backend = Backend::from_env("adaptive".parse()?)?; // reads $LOCKS_BACKEND
//! let c: chan::Chan<u64, DynLock> = chan::Chan::with_params(10, backend);
//! c.send(7).unwrap();
//! assert_eq!(c.recv(), Ok(7));
//!
//! // A rendezvous over the semaphore lock, named at run time:
//! let d: chan::Chan<u64, DynLock> = chan::Chan::with_params(0, "sem".parse()?);
//! let tx = d.clone();
//! let t = std::thread::spawn(move || tx.send(42).unwrap());
//! assert_eq!(d.recv(), Ok(42));
//! t.join().unwrap();
//! # Ok::<(), locks::ParseBackendError>(())
//! ```
//!
//! # Operations
//!
//! | operation | semantics |
//! |---|---|
//! | `Chan::new(nbuf)` | `nbuf == 0`: rendezvous (a send completes when a receiver has the value) |
//! | `Chan::with_params(nbuf, p)` | the lock made with parameters `p` (e.g. `AdaptiveParams`) |
//! | `Chan::with_global_lock(nbuf, p)` | Plan 9's arrangement: one lock for every channel made this way |
//! | `Chan::unbounded()`, `unbounded_with_params(p)` | `send` never waits; memory grows with the backlog and is given back once it drains (down to 1024 slots); `capacity()` is `usize::MAX` |
//! | `split` → `(Sender, Receiver)` | the two ends, each cloneable, with their side's operations under the same names; the last `Sender` dropped closes the channel (receivers drain, then see the end), the last `Receiver` dropped closes it and drops what is buffered (sends fail, value given back); a `Chan` handle kept alongside counts as both; alt arms take ends as well as `Chan`s |
//! | `send`, `recv` | block while full / empty; `SendError(v)` gives the value back once closed |
//! | `nbsend`, `nbrecv` | never block: `Full(v)`/`Closed(v)`, `Empty`/`Closed`; on a rendezvous channel they succeed only if the partner already waits; linearizable with every other operation, across channels too |
//! | `send_timeout`, `send_deadline`, `recv_timeout`, `recv_deadline` | give up at the deadline, value returned; a timeout past what an `Instant` can hold (`Duration::MAX`) waits for ever, here and in `Alt` and `alt!` alike |
//! | `close` → `bool` | later sends fail, receives drain then fail, every blocked party and alt wakes; `false` if already closed |
//! | `closing` → `Option<usize>` | `None` while open, else how many values are still buffered (9front) |
//! | `len`, `capacity`, `is_empty`, `is_full`, `is_closed`, `iter`, `try_iter`, `into_iter` | as named |
//! | `alt!` | `alt! { recv(c) -> v => { .. }, send(d, x) -> r => { .. }, default => { .. } }` (or `timeout(dur) => { .. }`): the builder below, with the bookkeeping written for you; `alt!(async; ..)` awaits instead, in a task |
//! | `send_async`, `recv_async`, `Alt::wait_async` | the same operations from an async task, on any executor: the task waits with its `Waker`, the thread with `L`'s waiter, and either completes the other; dropping the future cancels (see below) |
//! | `Alt` | `recv(&chan, &mut Option<T>)`, `send(&chan, &mut Option<T>)` (the value stays there unless sent); `wait`, `try_wait` (CHANNOBLK), `wait_timeout`; uniform random among ready arms, also among duplicate arms on one channel after the alt has blocked, `.biased()` for first-ready; a closed channel's arm is reported only when no other arm can proceed; a received value replaces what its `Option` held only after every lock is released |
//!
//! # How it works
//!
//! Inside: each channel has a lock of type `L` guarding a ring buffer and FIFO queues of blocked
//! senders and receivers. A blocked operation queues a node that lives on its own stack (plain
//! `send`/`recv` never allocate) and sleeps with `L`'s waiter, never holding a lock. Hand-off is
//! direct: a sender that finds a waiting receiver moves its value into the receiver's node; a
//! receiver that frees a slot of a full buffer moves the first waiting sender's value into it.
//! A waiter queued by an alt on several channels is claimed by one compare-and-swap, so exactly
//! one arm fires. Wake-ups happen after the lock is released.
//!
//! What it promises under hostile conditions:
//! - No user code runs while a channel lock is held: no `Drop` of a value, no `Clone`, and
//!   nothing that can panic (alt draws its random poll order before locking, from a
//!   thread-local that cannot panic at thread exit). A panic anywhere releases every lock.
//! - `locks::Waiter` is an `unsafe trait`: `chan` frees a blocked thread's node as soon as its
//!   waiter says it was signalled, so the trait's contract says when that may be said. A
//!   waiter whose `wait` unwinds is survived: the wait is withdrawn, or, if a partner already
//!   claimed it, the partner's signal is waited out before the frame goes. A `wait` that
//!   returns early is waited again.
//! - `nbsend`/`nbrecv`/`len`/`is_closed` read a summary word without the lock, after a SeqCst
//!   fence, so they are linearizable across channels (the store-buffering litmus is a loom
//!   model and a native test).
//! - User code that the channel runs (a waker, the `Drop` of a value or of a waker) runs only
//!   once the operation, close or drop that runs it has finished changing the channel. Each
//!   piece runs caught, all of them run even if one panics, and the first panic goes on at the
//!   end. On a thread that is already unwinding it is discarded instead: raised there, it
//!   would abort the process. So a buffered value whose `Drop` panics does not stop the others
//!   being dropped, a close wakes everyone, and a handle dropped during a panic is counted out
//!   of both its sides.
//! - The semaphore lock counts up to 65,535 sleepers in its futex word; more (Linux allows
//!   about four million threads) wait uncounted and look for a permit every millisecond.
//!
//! # Tasks and threads on one channel
//!
//! In Plan 9 a channel connects threads, coroutines within a proc; in Rust the coroutine is the
//! async task. `send_async`, `recv_async` (on `Chan`, `Sender`, `Receiver`) and
//! `Alt::wait_async` are the channel operations for tasks, on any executor (nothing in `chan`
//! names a runtime), and the same channel serves blocked threads and waiting tasks at once:
//!
//! ```
//! use chan::{Alt, Chan};
//!
//! let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
//! let (jobs, results) = (Chan::<u64>::new(0), Chan::<u64>::new(8));
//!
//! // A blocking thread feeds a rendezvous channel...
//! let feed = jobs.clone();
//! let feeder = std::thread::spawn(move || {
//!     (1..=100).for_each(|i| feed.send(i).unwrap());
//!     feed.close();
//! });
//! // ...tasks take the jobs and send results, which a blocking thread collects.
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let (jobs, results) = (jobs.clone(), results.clone());
//!         rt.spawn(async move {
//!             while let Ok(j) = jobs.recv_async().await {
//!                 results.send_async(j * j).await.unwrap();
//!             }
//!         })
//!     })
//!     .collect();
//! let out = results.clone();
//! let collector = std::thread::spawn(move || out.iter().take(100).sum::<u64>());
//! rt.block_on(async {
//!     for w in workers {
//!         w.await.unwrap();
//!     }
//! });
//! feeder.join().unwrap();
//! assert_eq!(collector.join().unwrap(), (1..=100u64).map(|i| i * i).sum());
//!
//! // An alt in a task, over a channel a thread sends on.
//! let (a, b) = (Chan::<&str>::new(0), Chan::<u32>::new(0));
//! let tx = a.clone();
//! std::thread::spawn(move || tx.send("from a thread").unwrap());
//! let (mut x, mut y) = (None, None);
//! let fired = rt.block_on(async {
//!     let mut alt = Alt::new();
//!     alt.recv(&a, &mut x);
//!     alt.recv(&b, &mut y);
//!     alt.wait_async().await
//! });
//! assert_eq!((fired.index, x), (0, Some("from a thread")));
//! ```
//!
//! How a task waits: its future holds the queue node and a task context (so a wait allocates
//! nothing), queued exactly as a blocked thread's; a partner claims it with the same
//! compare-and-swap under the channel lock, moves the value, and takes the task's `Waker` out
//! of the context; after unlocking it raises the context's `done` flag, the task's signal, and
//! wakes the waker it took. Wakers are cloned and woken
//! with no lock held. Cancellation is dropping the future, at any point: a queued future
//! unlinks itself under the lock; a send not yet taken drops its value once, with the future; a
//! value already handed to a dropped receive goes to the next waiting receiver or back to the
//! front of the buffer (which may then hold one value beyond its capacity until it is
//! received), so no value is lost or duplicated, and it comes before every later value of its
//! sender still in the channel. A value handed to a receive future was received at that
//! moment, as a thread's would be, so it holds nothing up: a close ends the other receivers at
//! once, and a future leaked with `mem::forget` keeps its value for ever, blocking nobody. The
//! one exception to giving back: once a receive has reported the channel closed and drained,
//! a dropped future's value is dropped with it, since received after that report it would
//! have risen from the dead. (A later value that another receiver took while the dropped
//! future held this one was taken first: that receiver then sees the two out of order, the
//! one reordering a cancellation makes, which the soak (`chansoak`) counts and bounds.) A dropped
//! `Alt::wait_async` gives a received value back to its channel the same way. Timeouts for tasks
//! are the executor's timer (`tokio::time::timeout(d, rx.recv_async())`): the drop is the
//! cancellation. `Alt` is not `Send` (its arms are type-erased), so a task awaiting an alt
//! runs on a current-thread runtime, a `LocalSet` or `block_on`; its partners can be anywhere.
//! In a task that must be `Send` (`tokio::spawn` on a multi-thread runtime), waiting on several
//! channels' *receives* can be a `tokio::select!` (or `futures::select!`) of `recv_async`
//! futures: each loser is dropped, and one already handed a value gives it back as above, so
//! nothing is lost or received twice and one receiver still sees each sender's values in order
//! (`a_select_of_receives_loses_nothing` in `chan/tests/async.rs`). Not so for sends: a dropped
//! send future that a receiver had already claimed has sent, so two send arms of one `select!`
//! can both happen, where `Alt` fires exactly one arm.
//! With the `stream` feature, `Receiver::stream`/`into_stream` give a `futures_core::Stream`;
//! with the `sink` feature, `Sender::sink`/`into_sink` give a `futures_sink::Sink` (one item in
//! flight, sent as `send_async` sends it; a closed channel gives the item back in the error).
//!
//!
//! # Streams and sinks
//!
//! `Receiver` and `Sender` are not a `Stream` and a `Sink` themselves: `stream()` and
//! `sink()` (or `into_stream()` and `into_sink()`, which own the end) give them.
//!
//! ```
//! # #[cfg(all(feature = "stream", feature = "sink"))]
//! # fn main() {
//! use futures::{SinkExt, StreamExt};
//! let (tx, rx) = chan::bounded(4);
//! futures::executor::block_on(async {
//!     {
//!         let mut sink = std::pin::pin!(tx.into_sink());
//!         sink.send(1).await.unwrap();
//!         sink.send(2).await.unwrap();
//!     } // the sink, and with it the last sender, is dropped: the stream ends after 1 and 2
//!     let mut stream = std::pin::pin!(rx.stream());
//!     let mut got = vec![];
//!     while let Some(v) = stream.next().await {
//!         got.push(v);
//!     }
//!     assert_eq!(got, [1, 2]);
//! });
//! # }
//! # #[cfg(not(all(feature = "stream", feature = "sink")))]
//! # fn main() {}
//! ```
#![warn(missing_docs)]
// Every `unsafe` block says why it is sound, in a `// SAFETY:` comment: enforced, not only kept.
#![deny(clippy::undocumented_unsafe_blocks)]

mod alt;
mod chan;
mod endpoints;
mod error;
#[cfg(not(loom))]
mod global;
mod iter;
mod macros;
mod ring;
mod rng;
mod sync;
mod unwind;
mod waitq;

pub use crate::alt::{Alt, AltFuture, Fired, SendAlt, SendAltFuture};

/// What [`alt!`] expands to. Not public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::alt::stack::{recv, send, StackAlt, StackArm};
    pub use crate::alt::{RecvArm, SendArm};
}
#[cfg(feature = "stream")]
pub use crate::chan::RecvStream;
#[cfg(feature = "sink")]
pub use crate::chan::SendSink;
pub use crate::chan::{Chan, OwnedRecvFuture, OwnedSendFuture, RecvFuture, SendFuture};
pub use crate::endpoints::{Receiver, RecvEnd, SendEnd, Sender, WeakSender};
pub use crate::error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use crate::iter::{IntoIter, Iter, TryIter};
pub use locks;

/// A channel buffering `cap` values (0: rendezvous) as its two ends, with the default lock
/// ([`Adaptive`](locks::Adaptive)): `Chan::new(cap).split()`. The channel closes when either
/// side's last end is dropped (see [`Chan::split`]). For another lock,
/// `Chan::<T, L>::new(cap).split()`.
///
/// ```
/// let (tx, rx) = chan::bounded(2);
/// let producer = std::thread::spawn(move || (0..5).try_for_each(|i| tx.send(i)));
/// assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
/// producer.join().unwrap().unwrap();
/// ```
///
/// # Panics
/// If `cap` exceeds `u32::MAX`.
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    Chan::new(cap).split()
}

/// An unbounded channel as its two ends, with the default lock: `Chan::unbounded().split()`.
/// `send` never waits; the buffer grows with the backlog and gives its memory back once
/// drained (see [`Chan::unbounded`]).
///
/// ```
/// let (tx, rx) = chan::unbounded();
/// (0..100_000u32).for_each(|i| tx.send(i).unwrap());
/// drop(tx);
/// assert_eq!(rx.capacity(), usize::MAX);
/// assert_eq!(rx.iter().count(), 100_000);
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    Chan::unbounded().split()
}

/// This crate's README (the page crates.io shows), whose examples run as doctests. The
/// workspace README's run in `benches`, which is not published: a packaged crate cannot
/// reach files outside its directory.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
