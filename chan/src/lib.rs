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
//! How it works, in brief (see the module sources for the details):
//! - a per-channel lock of type `L` guards the buffer and FIFO queues of blocked senders and
//!   receivers (or, with [`Chan::with_global_lock`], one lock shared by all channels, as in
//!   Plan 9);
//! - a blocked operation queues a node that lives on its own stack, so plain `send`/`recv`
//!   allocate nothing;
//! - hand-off is direct: a sender that finds a waiting receiver moves the value into the
//!   receiver's node; a receiver that empties a slot of a full buffer moves the first waiting
//!   sender's value into it; wake-ups happen after the lock is released;
//! - `nbsend`/`nbrecv` fail without the lock when a published summary shows they must.
//!
//! Async tasks use the same channels, on any executor: [`Chan::send_async`],
//! [`Chan::recv_async`] (also on [`Sender`] and [`Receiver`]), [`Alt::wait_async`] and
//! `alt!(async; ..)`, with the `stream` feature a `Stream` of received values
//! (`Receiver::stream`) and with the `sink` feature a `Sink` of values to send
//! (`Sender::sink`). A task waits with its `Waker` where a thread waits with `L`'s waiter,
//! and either completes the other. The wait node lives in the pinned future (no allocation);
//! dropping a future cancels it without losing a value (see [`RecvFuture`]).
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
mod waitq;

pub use crate::alt::{Alt, AltFuture, Fired, SendAlt, SendAltFuture};
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
