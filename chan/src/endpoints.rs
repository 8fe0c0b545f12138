//! The two ends of a channel, for code that wants a channel to end when one side goes away.
//!
//! [`Chan::split`] turns a channel into a [`Sender`] and a [`Receiver`]. Each wraps a `Chan`
//! handle that counts as one side only, so dropping the last `Sender` closes the channel (its
//! receivers drain the buffer, then see the end) and dropping the last `Receiver` closes it
//! too (sends fail with their value given back; buffered values are dropped). Every
//! operation is the `Chan` one of the same name.

use crate::chan::Role;
use crate::error::*;
use crate::Chan;
use locks::{Adaptive, Strategy};
use std::fmt;
use std::time::{Duration, Instant};

/// The sending end of a channel, from [`Chan::split`]; cloneable. The channel closes when the
/// last `Sender` (and `Chan` handle) is dropped.
pub struct Sender<T, L: Strategy = Adaptive>(pub(crate) Chan<T, L>);

/// The receiving end of a channel, from [`Chan::split`]; cloneable. The channel closes, and
/// its buffered values are dropped, when the last `Receiver` (and `Chan` handle) is dropped.
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
    };
}

impl<T, L: Strategy> Sender<T, L> {
    /// See [`Chan::send`].
    #[inline]
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        self.0.send(v)
    }

    /// See [`Chan::nbsend`].
    #[inline]
    pub fn nbsend(&self, v: T) -> Result<(), TrySendError<T>> {
        self.0.nbsend(v)
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
    #[inline]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.0.recv()
    }

    /// See [`Chan::nbrecv`].
    #[inline]
    pub fn nbrecv(&self) -> Result<T, TryRecvError> {
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

/// A channel end an [`Alt`](crate::Alt) can receive from: a [`Chan`] or a [`Receiver`].
pub trait RecvEnd<T, L: Strategy>: sealed::Sealed {
    #[doc(hidden)]
    fn chan(&self) -> &Chan<T, L>;
}

/// A channel end an [`Alt`](crate::Alt) can send on: a [`Chan`] or a [`Sender`].
pub trait SendEnd<T, L: Strategy>: sealed::Sealed {
    #[doc(hidden)]
    fn chan(&self) -> &Chan<T, L>;
}

mod sealed {
    pub trait Sealed {}
    impl<T, L: locks::Strategy> Sealed for crate::Chan<T, L> {}
    impl<T, L: locks::Strategy> Sealed for super::Sender<T, L> {}
    impl<T, L: locks::Strategy> Sealed for super::Receiver<T, L> {}
}

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
