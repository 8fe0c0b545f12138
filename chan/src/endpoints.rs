//! The two ends of a channel, for code that wants a channel to end when one side goes away.
//!
//! [`Chan::split`] turns a channel into a [`Sender`] and a [`Receiver`]. Each wraps a `Chan`
//! handle that counts as one side only, so dropping the last `Sender` closes the channel (its
//! receivers drain the buffer, then see the end) and dropping the last `Receiver` closes it
//! too (sends fail with their value given back; buffered values are dropped). Every
//! operation is the `Chan` one of the same name.

use crate::chan::{Role, Shared};
use crate::error::*;
use crate::Chan;
use locks::{Adaptive, Strategy};
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The sending end of a channel, from [`Chan::split`] or [`bounded`](crate::bounded);
/// cloneable. The channel closes when the last `Sender` (and `Chan` handle) is dropped; a
/// [`WeakSender`] does not count.
pub struct Sender<T, L: Strategy = Adaptive>(pub(crate) Chan<T, L>);

/// The receiving end of a channel, from [`Chan::split`] or [`bounded`](crate::bounded);
/// cloneable. The channel closes, and its buffered values are dropped, when the last
/// `Receiver` (and `Chan` handle) is dropped.
pub struct Receiver<T, L: Strategy = Adaptive>(pub(crate) Chan<T, L>);

/// What both ends can tell about their channel.
macro_rules! common {
    () => {
        /// Closes the channel (see [`Chan::close`]); `false` if it was already closed.
        pub fn close(&self) -> bool {
            self.0.close()
        }

        /// Whether the channel is closed, explicitly or because one side has gone.
        pub fn is_closed(&self) -> bool {
            self.0.is_closed()
        }

        /// See [`Chan::closing`].
        pub fn closing(&self) -> Option<usize> {
            self.0.closing()
        }

        /// How many values are buffered.
        pub fn len(&self) -> usize {
            self.0.len()
        }

        /// Whether nothing is buffered.
        pub fn is_empty(&self) -> bool {
            self.0.is_empty()
        }

        /// Whether the buffer is full (always true for a rendezvous channel).
        pub fn is_full(&self) -> bool {
            self.0.is_full()
        }

        /// How many values the channel buffers; `usize::MAX` if unbounded.
        pub fn capacity(&self) -> usize {
            self.0.capacity()
        }

        /// Whether two ends belong to the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            self.0.same_channel(&other.0)
        }

        /// How many live handles can send (see [`Chan::sender_count`]).
        pub fn sender_count(&self) -> usize {
            self.0.sender_count()
        }

        /// How many live handles can receive (see [`Chan::receiver_count`]).
        pub fn receiver_count(&self) -> usize {
            self.0.receiver_count()
        }

        /// The parameters of the channel's lock (see [`Chan::lock_params`]).
        pub fn lock_params(&self) -> L::Params {
            self.0.lock_params()
        }
    };
}

impl<T, L: Strategy> Sender<T, L> {
    /// See [`Chan::send`].
    // Always: the whole send compiles into the caller, as `Chan::send` does (see there).
    #[inline(always)]
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        self.0.send(v)
    }

    /// See [`Chan::nbsend`]; [`try_send`](Self::try_send) is the same.
    #[doc(alias = "try_send")]
    #[inline]
    pub fn nbsend(&self, v: T) -> Result<(), TrySendError<T>> {
        self.0.nbsend(v)
    }

    /// See [`Chan::try_send`]; [`nbsend`](Self::nbsend) is the same.
    #[doc(alias = "nbsend")]
    #[inline]
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.0.nbsend(v)
    }

    /// A [`WeakSender`]: a handle that can become a `Sender` again while the channel has one,
    /// but does not itself keep the channel open.
    ///
    /// ```
    /// let (tx, rx) = chan::unbounded::<u32>();
    /// let weak = tx.downgrade();
    /// weak.upgrade().unwrap().send(1).unwrap();
    /// drop(tx); // the last sender: the channel closes, although `weak` remains
    /// assert!(weak.upgrade().is_none());
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1]);
    /// ```
    pub fn downgrade(&self) -> WeakSender<T, L> {
        WeakSender(Arc::downgrade(&self.0.shared))
    }

    /// See [`Chan::send_timeout`].
    pub fn send_timeout(&self, v: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.0.send_timeout(v, timeout)
    }

    /// See [`Chan::send_deadline`].
    pub fn send_deadline(&self, v: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.0.send_deadline(v, deadline)
    }

    common!();
}

impl<T, L: Strategy> Receiver<T, L> {
    /// See [`Chan::recv`].
    // Always: as `Chan::recv`.
    #[inline(always)]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.0.recv()
    }

    /// See [`Chan::nbrecv`]; [`try_recv`](Self::try_recv) is the same.
    #[doc(alias = "try_recv")]
    #[inline]
    pub fn nbrecv(&self) -> Result<T, TryRecvError> {
        self.0.nbrecv()
    }

    /// See [`Chan::try_recv`]; [`nbrecv`](Self::nbrecv) is the same.
    #[doc(alias = "nbrecv")]
    #[inline]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.0.nbrecv()
    }

    /// See [`Chan::recv_timeout`].
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.0.recv_timeout(timeout)
    }

    /// See [`Chan::recv_deadline`].
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.0.recv_deadline(deadline)
    }

    /// A blocking iterator over received values, ending when the channel is closed (or every
    /// sender gone) and drained.
    pub fn iter(&self) -> crate::Iter<'_, T, L> {
        self.0.iter()
    }

    /// An iterator over the values that can be received without waiting.
    pub fn try_iter(&self) -> crate::TryIter<'_, T, L> {
        self.0.try_iter()
    }

    common!();
}

#[cfg(not(loom))]
impl<T> Sender<T, locks::DynLock> {
    /// See [`Chan::backend`].
    pub fn backend(&self) -> locks::Backend {
        self.0.backend()
    }
}

#[cfg(not(loom))]
impl<T> Receiver<T, locks::DynLock> {
    /// See [`Chan::backend`].
    pub fn backend(&self) -> locks::Backend {
        self.0.backend()
    }
}

/// A sender that does not keep its channel open, from [`Sender::downgrade`] (tokio's
/// `WeakSender`): it cannot send, but [`upgrade`](Self::upgrade) turns it into a [`Sender`]
/// as long as some sending handle (a `Sender` or a `Chan`) is alive. Once the last one has
/// gone the channel is closed for good and `upgrade` returns `None`. A `WeakSender` holds
/// no buffered value and, once every handle has gone, not even the channel's memory.
///
/// A task that should stop when everyone else has stopped sending keeps one:
///
/// ```
/// let (tx, rx) = chan::bounded::<&str>(4);
/// let weak = tx.downgrade();
/// let ticker = std::thread::spawn(move || {
///     let mut ticks = 0;
///     // Sends only while somebody else still holds a sender.
///     while let Some(tx) = weak.upgrade() {
///         if tx.send("tick").is_err() {
///             break;
///         }
///         ticks += 1;
///         std::thread::yield_now();
///     }
///     ticks
/// });
/// assert_eq!(rx.recv(), Ok("tick"));
/// drop(tx);
/// // The receiver sees the end once the ticker has let go of its upgraded sender.
/// let received = 1 + rx.iter().count();
/// assert_eq!(received, ticker.join().unwrap());
/// ```
pub struct WeakSender<T, L: Strategy = Adaptive>(Weak<Shared<T, L>>);

impl<T, L: Strategy> WeakSender<T, L> {
    /// A [`Sender`], if the channel still has a sending handle; `None` once the last one
    /// has been dropped (and the channel has closed). A channel closed by
    /// [`close`](Sender::close) while senders remain still gives one, whose sends fail.
    pub fn upgrade(&self) -> Option<Sender<T, L>> {
        let shared = self.0.upgrade()?;
        shared.add_sender_if_any().then(|| {
            Sender(Chan {
                shared,
                role: Role::Send,
            })
        })
    }
}

impl<T, L: Strategy> Clone for WeakSender<T, L> {
    fn clone(&self) -> Self {
        WeakSender(self.0.clone())
    }
}

impl<T, L: Strategy> fmt::Debug for WeakSender<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WeakSender { .. }")
    }
}

impl<T, L: Strategy> Clone for Sender<T, L> {
    fn clone(&self) -> Self {
        Sender(self.0.with_role(Role::Send))
    }
}

impl<T, L: Strategy> Clone for Receiver<T, L> {
    fn clone(&self) -> Self {
        Receiver(self.0.with_role(Role::Recv))
    }
}

impl<'a, T, L: Strategy> IntoIterator for &'a Receiver<T, L> {
    type Item = T;
    type IntoIter = crate::Iter<'a, T, L>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T, L: Strategy> IntoIterator for Receiver<T, L> {
    type Item = T;
    type IntoIter = crate::IntoIter<T, L>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<T, L: Strategy> fmt::Debug for Sender<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Sender").field(&self.0).finish()
    }
}

impl<T, L: Strategy> fmt::Debug for Receiver<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Receiver").field(&self.0).finish()
    }
}

/// A channel end an [`Alt`](crate::Alt) can receive from: a [`Chan`] or a [`Receiver`], or
/// any reference to one (`&Chan`, `&&Receiver`, `&mut Chan`, ...), a `Box`, `Rc` or `Arc`
/// of one.
///
/// ```
/// use chan::{alt, Chan, Receiver};
/// fn first(c: &Chan<i32>, r: &Receiver<i32>) -> i32 {
///     alt! {
///         recv(c) -> v => v.unwrap(),
///         recv(r) -> v => v.unwrap() * 10,
///     }
/// }
/// let c = Chan::new(1);
/// let (tx, rx) = chan::bounded(1);
/// tx.send(4).unwrap();
/// assert_eq!(first(&c, &rx), 40);
/// c.send(3).unwrap();
/// drop(tx);
/// // Both ready now (rx is closed and drained, which fires as an error): take `c` first.
/// assert_eq!(alt! { recv(&&c) -> v => v.unwrap(), default => -1 }, 3);
/// ```
pub trait RecvEnd<T, L: Strategy>: sealed::Sealed {
    #[doc(hidden)]
    fn chan(&self) -> &Chan<T, L>;
}

/// A channel end an [`Alt`](crate::Alt) can send on: a [`Chan`] or a [`Sender`], or any
/// reference to one (`&Chan`, `&&Sender`, `&mut Chan`, ...), a `Box`, `Rc` or `Arc` of one.
///
/// ```
/// use chan::{alt, Sender};
/// fn offer(tx: &Sender<&'static str>) -> bool {
///     alt! { send(tx, "hi") -> sent => sent.is_ok(), default => false }
/// }
/// let (tx, rx) = chan::bounded(1);
/// assert!(offer(&tx));
/// assert!(!offer(&tx)); // full
/// assert_eq!(rx.recv(), Ok("hi"));
/// ```
pub trait SendEnd<T, L: Strategy>: sealed::Sealed {
    #[doc(hidden)]
    fn chan(&self) -> &Chan<T, L>;
}

mod sealed {
    pub trait Sealed {}
    impl<T, L: locks::Strategy> Sealed for crate::Chan<T, L> {}
    impl<T, L: locks::Strategy> Sealed for super::Sender<T, L> {}
    impl<T, L: locks::Strategy> Sealed for super::Receiver<T, L> {}
    impl<E: Sealed + ?Sized> Sealed for &E {}
    impl<E: Sealed + ?Sized> Sealed for &mut E {}
    impl<E: Sealed + ?Sized> Sealed for Box<E> {}
    impl<E: Sealed + ?Sized> Sealed for std::rc::Rc<E> {}
    impl<E: Sealed + ?Sized> Sealed for std::sync::Arc<E> {}
}

/// The end behind a pointer to one, however many pointers deep (`alt!` takes `&$chan`, so a
/// `&Chan` argument arrives as `&&Chan`).
macro_rules! through_pointers {
    ($($ptr:ty),*) => {$(
        impl<T, L: Strategy, E: RecvEnd<T, L> + ?Sized> RecvEnd<T, L> for $ptr {
            fn chan(&self) -> &Chan<T, L> {
                (**self).chan()
            }
        }

        impl<T, L: Strategy, E: SendEnd<T, L> + ?Sized> SendEnd<T, L> for $ptr {
            fn chan(&self) -> &Chan<T, L> {
                (**self).chan()
            }
        }
    )*};
}

through_pointers!(&E, &mut E, Box<E>, std::rc::Rc<E>, std::sync::Arc<E>);

impl<T, L: Strategy> RecvEnd<T, L> for Chan<T, L> {
    fn chan(&self) -> &Chan<T, L> {
        self
    }
}

impl<T, L: Strategy> SendEnd<T, L> for Chan<T, L> {
    fn chan(&self) -> &Chan<T, L> {
        self
    }
}

impl<T, L: Strategy> RecvEnd<T, L> for Receiver<T, L> {
    fn chan(&self) -> &Chan<T, L> {
        &self.0
    }
}

impl<T, L: Strategy> SendEnd<T, L> for Sender<T, L> {
    fn chan(&self) -> &Chan<T, L> {
        &self.0
    }
}
