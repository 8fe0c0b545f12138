//! `RecvStream` (feature `stream`): a receiver as a [`futures_core::Stream`], each item a
//! receive future's operation (`Op`) run again in one heap allocation.

use super::future::{Dir, Handle, HeapOp};
use super::Chan;
use crate::waitq::Stage;
use crate::Receiver;
use locks::{Adaptive, Strategy};
use std::fmt;
use std::pin::Pin;
use std::task::{Context as TaskCx, Poll};

/// A channel's received values as a [`futures_core::Stream`] (feature `stream`), from
/// [`Receiver::stream`], [`Receiver::into_stream`] or [`Chan::stream`]. Ends when the
/// channel is closed and drained.
///
/// It is `Unpin` (`rx.stream().next().await` works as written): its wait lives in one
/// heap allocation made with the stream and reused for every item. Dropping it mid-wait
/// follows [`RecvFuture`](crate::RecvFuture)'s rule.
///
/// What the adapters cost (`cargo bench -p benches --bench async`, two tasks on tokio's
/// current-thread runtime, a 2-vCPU guest): 175 ns an item through `into_sink` and
/// `into_stream` against 156 ns with `send_async`/`recv_async` on a rendezvous channel, 67
/// against 57 ns with ten buffers (kanal's futures: 144 and 48). The allocation is made
/// once; the difference per item is the indirection to the heap and the `Sink` protocol's
/// three calls per item.
///
/// ```
/// use futures::StreamExt;
/// let (tx, rx) = chan::Chan::<u32>::new(4).split();
/// std::thread::spawn(move || (0..10).for_each(|i| tx.send(i).unwrap()));
/// let all = futures::executor::block_on(rx.into_stream().collect::<Vec<_>>());
/// assert_eq!(all, (0..10).collect::<Vec<_>>());
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct RecvStream<'a, T, L: Strategy = Adaptive> {
    chan: Handle<'a, T, L>,
    op: HeapOp<T, L::Waiter>,
}

// SAFETY: as for `RecvFuture`.
unsafe impl<T: Send, L: Strategy> Send for RecvStream<'_, T, L> {}
// SAFETY: as for `RecvFuture`.
unsafe impl<T: Send, L: Strategy> Sync for RecvStream<'_, T, L> {}

impl<T, L: Strategy> futures_core::Stream for RecvStream<'_, T, L> {
    type Item = T;
    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Option<T>> {
        let this = self.into_ref().get_ref();
        // Ready for the next item (or to see the end again) once this one is done, also if
        // user code run on the way (another task's waker) panics: a `Done` operation holds
        // nothing, and the stream must not stay broken by somebody else's panic.
        let _ready = ResetWhenDone(&this.op.stage);
        this.op
            .poll_recv(&this.chan.chan().shared, cx)
            .map(Result::ok)
    }
}

/// Puts a finished operation back to `Idle` when dropped, on unwinding too.
struct ResetWhenDone<'a>(&'a std::cell::Cell<Stage>);

impl Drop for ResetWhenDone<'_> {
    fn drop(&mut self) {
        if self.0.get() == Stage::Done {
            self.0.set(Stage::Idle);
        }
    }
}

impl<T, L: Strategy> Drop for RecvStream<'_, T, L> {
    fn drop(&mut self) {
        self.op.cancel(&self.chan.chan().shared, Dir::Recv);
    }
}

impl<T, L: Strategy> fmt::Debug for RecvStream<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field("chan", self.chan.chan())
            .finish_non_exhaustive()
    }
}

impl<T, L: Strategy> Chan<T, L> {
    /// The received values as a [`futures_core::Stream`] (feature `stream`).
    pub fn stream(&self) -> RecvStream<'_, T, L> {
        RecvStream {
            chan: Handle::Borrowed(self),
            op: HeapOp::new(),
        }
    }
}

impl<T, L: Strategy> Receiver<T, L> {
    /// The received values as a [`futures_core::Stream`] (feature `stream`).
    pub fn stream(&self) -> RecvStream<'_, T, L> {
        self.0.stream()
    }

    /// This receiver as a [`futures_core::Stream`] that owns it (feature `stream`).
    pub fn into_stream(self) -> RecvStream<'static, T, L> {
        RecvStream {
            chan: Handle::Owned(self.0),
            op: HeapOp::new(),
        }
    }
}
