//! `SendSink` (feature `sink`): a sender as a [`futures_sink::Sink`], each item a send
//! future's operation (`Op`) run again in one heap allocation.

use super::future::{Dir, Handle, HeapOp};
use super::Chan;
use crate::error::SendError;
use crate::waitq::Stage;
use crate::Sender;
use locks::{Adaptive, Strategy};
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context as TaskCx, Poll};

/// A channel's sending side as a [`futures_sink::Sink`] (feature `sink`), from
/// [`Sender::sink`], [`Sender::into_sink`] or [`Chan::sink`].
///
/// `start_send` keeps the item; `poll_ready`, `poll_flush` and `poll_close` send it as
/// [`send_async`](Chan::send_async) would (so at most one item is in flight, and `Ready`
/// from `poll_flush` means the channel has it: buffered, or taken by a receiver). An
/// item the channel refuses because it is closed comes back in the error. `poll_close`
/// only flushes: the channel closes when its last sender goes, or on
/// [`close`](Chan::close).
///
/// It is `Unpin` (`tx.sink().send(v).await` works as written): its wait lives in one heap
/// allocation made with the sink. Dropping it mid-send drops the item unless it was
/// sent, as for [`SendFuture`](crate::SendFuture). What that costs per item is measured
/// in `RecvStream`'s documentation (feature `stream`).
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// let (tx, rx) = chan::Chan::<u32>::new(2).split();
/// let receiver = std::thread::spawn(move || rx.iter().sum::<u32>());
/// futures::executor::block_on(async move {
///     let mut sink = std::pin::pin!(tx.into_sink());
///     sink.send_all(&mut futures::stream::iter(1..=10).map(Ok)).await.unwrap();
/// }); // the sink, the last sender, is dropped: the channel closes
/// assert_eq!(receiver.join().unwrap(), 55);
/// ```
#[must_use = "sinks do nothing unless polled"]
pub struct SendSink<'a, T, L: Strategy = Adaptive> {
    chan: Handle<'a, T, L>,
    op: HeapOp<T, L::Waiter>,
    /// Whether an item is in flight: in `value` while the operation is `Idle`, in the
    /// node while it is `Queued`.
    pending: Cell<bool>,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: as for `SendFuture`.
unsafe impl<T: Send, L: Strategy> Send for SendSink<'_, T, L> {}
// SAFETY: as for `SendFuture`.
unsafe impl<T: Send, L: Strategy> Sync for SendSink<'_, T, L> {}

impl<T, L: Strategy> SendSink<'_, T, L> {
    fn new(chan: Handle<'_, T, L>) -> SendSink<'_, T, L> {
        SendSink {
            chan,
            op: HeapOp::new(),
            pending: Cell::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Sends the item in flight, if any.
    fn flush(&self, cx: &TaskCx<'_>) -> Poll<Result<(), SendError<T>>> {
        if !self.pending.get() {
            return Poll::Ready(Ok(()));
        }
        // Once the operation is done (sent, or refused with the value in the error), nothing
        // is in flight and the operation is ready for the next item. Also if user code run on
        // the way (another task's waker, our waker's clone) panics: `Done` means the value
        // has left `value`, and the sink must not stay broken by somebody else's panic.
        let _ready = ReadyWhenDone(self);
        self.op.poll_send(&self.chan.chan().shared, &self.value, cx)
    }
}

/// Makes a sink whose operation is done ready for the next item when dropped, on
/// unwinding too.
struct ReadyWhenDone<'s, 'a, T, L: Strategy>(&'s SendSink<'a, T, L>);

impl<T, L: Strategy> Drop for ReadyWhenDone<'_, '_, T, L> {
    fn drop(&mut self) {
        if self.0.op.stage.get() == Stage::Done {
            self.0.pending.set(false);
            self.0.op.stage.set(Stage::Idle);
        }
    }
}

impl<T, L: Strategy> futures_sink::Sink<T> for SendSink<'_, T, L> {
    type Error = SendError<T>;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Result<(), Self::Error>> {
        self.into_ref().get_ref().flush(cx)
    }

    /// # Panics
    /// If an item is still in flight (`poll_ready` did not return `Ready(Ok(()))`).
    fn start_send(self: Pin<&mut Self>, item: T) -> Result<(), Self::Error> {
        let this = self.into_ref().get_ref();
        assert!(
            !this.pending.get(),
            "SendSink::start_send with an item in flight: call poll_ready first"
        );
        // SAFETY: nothing in flight, so `Idle` and `value` empty: ours to fill.
        unsafe { (*this.value.get()).write(item) };
        this.pending.set(true);
        Ok(())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Result<(), Self::Error>> {
        self.into_ref().get_ref().flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Result<(), Self::Error>> {
        self.into_ref().get_ref().flush(cx)
    }
}

impl<T, L: Strategy> Drop for SendSink<'_, T, L> {
    fn drop(&mut self) {
        if !self.pending.get() {
            return;
        }
        match self.op.stage.get() {
            // SAFETY: in flight and `Idle`: the value is in `value`, dropped once here.
            Stage::Idle => unsafe { self.value.get_mut().assume_init_drop() },
            _ => self.op.cancel(&self.chan.chan().shared, Dir::Send),
        }
    }
}

impl<T, L: Strategy> fmt::Debug for SendSink<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendSink")
            .field("chan", self.chan.chan())
            .field("pending", &self.pending.get())
            .finish_non_exhaustive()
    }
}

impl<T, L: Strategy> Chan<T, L> {
    /// This channel's sending side as a [`futures_sink::Sink`] (feature `sink`).
    pub fn sink(&self) -> SendSink<'_, T, L> {
        SendSink::new(Handle::Borrowed(self))
    }
}

impl<T, L: Strategy> Sender<T, L> {
    /// This sender as a [`futures_sink::Sink`] (feature `sink`).
    pub fn sink(&self) -> SendSink<'_, T, L> {
        self.0.sink()
    }

    /// This sender as a [`futures_sink::Sink`] that owns it (feature `sink`): dropping
    /// the sink drops the sender.
    pub fn into_sink(self) -> SendSink<'static, T, L> {
        SendSink::new(Handle::Owned(self.0))
    }
}
