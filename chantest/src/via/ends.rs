//! A channel's two ends as the workload uses them, whoever made the channel: ours
//! ([`super::chan`]) or a peer's ([`super::peers`]). The one thread runner
//! ([`super::chan::run_on`]) and the one task runner ([`super::task::run_on`]) take these, so
//! that every channel is driven, timed and checked by the same code; an adapter only says how
//! its channel sends and receives.
//!
//! The contract, met by ours through closing and by the peers through disconnection:
//! - every sender holds a clone of [`Tx`] (or [`AsyncTx`]) and calls `finish` when it is done;
//!   a sender's end dropped unfinished (its thread panicked) must not leave the receiver
//!   waiting forever once every other sender has finished too;
//! - a receiver that finds a fault calls `hang_up`, after which every send fails rather than
//!   waits, so that no sender stays blocked;
//! - once every sender has finished, `leftover` says whether the channel still holds a value,
//!   which would be one too many.

use std::future::Future;

/// A sender's end of a channel, for threads.
pub(crate) trait Tx<T>: Clone + Send + 'static {
    /// Sends `v`, waiting for room; `false` once the receiver has hung up.
    fn send(&self, v: T) -> bool;

    /// This sender has sent all it will: dropping its end may now end the receiver's wait.
    fn finish(self) {}
}

/// The receiver's end of a channel, for a thread.
pub(crate) trait Rx<T>: Send + 'static {
    /// Receives a value, waiting for one; `None` once no more can come.
    fn recv(&mut self) -> Option<T>;

    /// After a failed check: makes every send fail from now on.
    fn hang_up(self)
    where
        Self: Sized,
    {
    }

    /// After every sender has finished: a value still in the channel, if any.
    fn leftover(self) -> Option<T>;
}

/// A sender's end of a channel, for tasks.
pub(crate) trait AsyncTx<T>: Clone + Send + Sync + 'static {
    /// Sends `v`, waiting for room; `false` once the receiver has hung up.
    fn send(&self, v: T) -> impl Future<Output = bool> + Send;

    /// As [`Tx::finish`].
    fn finish(self) {}
}

/// The receiver's end of a channel, for a task.
pub(crate) trait AsyncRx<T>: Send + 'static {
    /// Receives a value, waiting for one; `None` once no more can come.
    fn recv(&mut self) -> impl Future<Output = Option<T>> + Send;

    /// As [`Rx::hang_up`].
    fn hang_up(self)
    where
        Self: Sized,
    {
    }

    /// As [`Rx::leftover`].
    fn leftover(self) -> Option<T>;
}
