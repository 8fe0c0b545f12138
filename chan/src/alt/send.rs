//! `SendAlt`: an [`Alt`] that may move between threads, for tasks on a work-stealing runtime.
//!
//! An `Alt`'s arms are type-erased without a `Send` bound, so that a channel of `Rc`s can be an
//! arm; that makes every `Alt`, and its future, `!Send`. `SendAlt` is the same alt built only
//! from arms whose values are `Send`: then everything it holds (shared references to channels
//! of `Send` values, the arms' `&mut Option<T>`, their queue nodes, the scratch orders) may
//! move to another thread, and so may its future between polls. The protocol, fairness and
//! cancellation rules are `Alt`'s: it is one.

use super::{Alt, AltFuture, Fired};
use crate::{RecvEnd, SendEnd};
use locks::{Adaptive, Strategy};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskCx, Poll};
use std::time::{Duration, Instant};

/// An [`Alt`] whose arms all carry `Send` values, so that it and its
/// [`wait_async`](Self::wait_async) future are `Send`: an alt to await inside
/// `tokio::spawn` on the multi-thread runtime.
///
/// ```
/// use chan::{Chan, SendAlt};
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() {
/// let (a, b) = (Chan::<u32>::new(0), Chan::<String>::new(1));
/// b.send("hi".to_string()).unwrap();
/// let task = tokio::spawn(async move {
///     let (mut x, mut y) = (None, None);
///     let mut alt = SendAlt::new();
///     alt.recv(&a, &mut x);
///     let yi = alt.recv(&b, &mut y);
///     let fired = alt.wait_async().await;
///     drop(alt);
///     (fired.index == yi, y)
/// });
/// assert_eq!(task.await.unwrap(), (true, Some("hi".to_string())));
/// # }
/// ```
pub struct SendAlt<'a, L: Strategy = Adaptive>(Alt<'a, L>);

// SAFETY: every arm was added through `recv`/`send` below, which require `T: Send`: an arm then
// holds `&Chan<T, L>` (shared across threads when `T: Send`, the channel being `Sync`), an
// `&mut Option<T>` and a node of `T`s (movable when `T: Send`), and `L`'s waiter (`Send`).
// The raw pointers inside (queue links, the pending wait's context) are touched only under
// channel locks or by the alt's owner, whichever thread that is; nothing is thread-local.
unsafe impl<L: Strategy> Send for SendAlt<'_, L> {}

impl<L: Strategy> Default for SendAlt<'_, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, L: Strategy> SendAlt<'a, L> {
    /// An empty alt that chooses uniformly at random among ready arms.
    pub fn new() -> Self {
        SendAlt(Alt::new())
    }

    /// See [`Alt::biased`].
    pub fn biased(self) -> Self {
        SendAlt(self.0.biased())
    }

    /// See [`Alt::recv`]; the value type must be `Send`.
    pub fn recv<T: Send + 'a>(
        &mut self,
        chan: &'a (impl RecvEnd<T, L> + ?Sized),
        dst: &'a mut Option<T>,
    ) -> usize {
        self.0.recv(chan, dst)
    }

    /// See [`Alt::send`]; the value type must be `Send`.
    pub fn send<T: Send + 'a>(
        &mut self,
        chan: &'a (impl SendEnd<T, L> + ?Sized),
        src: &'a mut Option<T>,
    ) -> usize {
        self.0.send(chan, src)
    }

    /// How many arms there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no arms.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// See [`Alt::wait`].
    pub fn wait(&mut self) -> Fired {
        self.0.wait()
    }

    /// See [`Alt::try_wait`].
    pub fn try_wait(&mut self) -> Option<Fired> {
        self.0.try_wait()
    }

    /// See [`Alt::wait_timeout`].
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Fired> {
        self.0.wait_timeout(timeout)
    }

    /// See [`Alt::wait_deadline`].
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<Fired> {
        self.0.wait_deadline(deadline)
    }

    /// See [`Alt::wait_async`]; the future is `Send`.
    pub fn wait_async(&mut self) -> SendAltFuture<'_, 'a, L> {
        SendAltFuture(self.0.wait_async())
    }
}

impl<L: Strategy> fmt::Debug for SendAlt<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SendAlt").field(&self.0).finish()
    }
}

/// The future of [`SendAlt::wait_async`]: an [`AltFuture`] that is `Send`.
#[must_use = "futures do nothing unless polled"]
pub struct SendAltFuture<'f, 'a, L: Strategy = Adaptive>(AltFuture<'f, 'a, L>);

// SAFETY: it holds `&mut` to a `SendAlt`'s alt (`Send`, see there) and a task context (the
// strategy's waiter type, a `Waker`, atomics), which claimers reach only through the protocol,
// whichever thread polls.
unsafe impl<L: Strategy> Send for SendAltFuture<'_, '_, L> {}

impl<L: Strategy> Future for SendAltFuture<'_, '_, L> {
    type Output = Fired;
    fn poll(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Fired> {
        // SAFETY: a structural projection: the inner future is never moved out.
        unsafe { self.map_unchecked_mut(|f| &mut f.0) }.poll(cx)
    }
}

impl<L: Strategy> futures_core::FusedFuture for SendAltFuture<'_, '_, L> {
    fn is_terminated(&self) -> bool {
        self.0.is_terminated()
    }
}

impl<L: Strategy> fmt::Debug for SendAltFuture<'_, '_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SendAltFuture").field(&self.0).finish()
    }
}
