//! Async send and receive: the same channels, a task waiting with its `Waker`.
//!
//! The first poll tries the operation as a blocking call would, with the same fast path (lock,
//! push or pop, unlock); nothing else of the future is touched, so an operation that
//! completes at once costs no more than `send`/`recv`. One that cannot complete writes its
//! wait (a task [`Party`] holding the waker, and a [`Node`] bound to it) into the pinned
//! future (`PhantomPinned`) and queues the node exactly as a blocked thread does, so a wait
//! allocates nothing. A partner (thread or task)
//! claims the context as it claims a blocked thread's, by a store to its `select` word under
//! the channel lock (the node is bound alone: `Node::alone`), moves the value through the
//! node, and takes the task's `Waker` out of the context,
//! all under the lock; after unlocking it raises the context's `done` flag, the task's
//! equivalent of a thread waiter's signal, and then wakes the waker (by value: it touches
//! nothing of the context after `done`). Until `done` the future does not complete and its
//! drop waits, so the partner never touches freed memory.
//!
//! Cancellation (dropping a future that is queued), under the channel lock:
//! - not yet claimed: the wait is aborted (as a timed-out thread's is, in the same critical
//!   section as the unlink) and the node unlinked; a send future's value is dropped with the
//!   future, once;
//! - already claimed: a send has happened (the receiver has the value) or the channel closed
//!   (the value is dropped with the future); a receive future already holds its value, which
//!   goes back to the channel: to the first waiting receiver if there is one, else to the
//!   *front* of the buffer, so it is the next value received: a sole receiver still sees
//!   each sender's values in order. (Another receiver may meanwhile have taken a later value
//!   of the same sender, and then sees the two out of order: no rule that loses nothing can
//!   avoid it.) The buffer may then hold one value more than its capacity, until received.
//!   The drop waits for the claimer to finish signalling *before* it runs any user code
//!   (the other receiver's waker, its own waker's drop, a value's drop), so a panic there
//!   cannot free memory the claimer still writes.
//!
//! A value put into a task's receive node has been received, as one put into a thread's
//! node has: the receive happened at the claim, and the future only delivers it later. So
//! the value holds nothing up: a close ends the other receivers at once, and a future that
//! is leaked keeps its value for ever, without anyone waiting on it. A future dropped before
//! it delivers gives the value back as above, unless some receive has meanwhile reported the
//! channel closed and drained: the value is then dropped with the future, since received
//! after that report it would have risen from the dead (`State::give_back`).
//!
//! Waker discipline: a waker is cloned with no lock held (cloning, like waking, runs the
//! executor's code) and replaced, on a poll with a waker that would not wake the stored one,
//! under the lock of the channel the node is queued on.

use super::{wake, Chan, Locked, Shared};
use crate::error::{RecvError, SendError};
use crate::unwind::Caught;
use crate::waitq::{Node, Party, Selected, Stage, Wake};
use crate::{Receiver, Sender};
use locks::{Adaptive, Strategy, Waiter};
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr;
use std::task::{Context as TaskCx, Poll, Waker};

/// Which queue an operation's node goes on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    Send,
    Recv,
}

/// What a queued operation waits with: a task context and a node, which the channel's queue
/// points at, hence pinned.
struct Wait<T, W> {
    ctx: Party<W>,
    node: Node<T, W>,
}

/// One async operation: where it stands, and its wait, set up only when it has to wait (the
/// common operation completes on its first poll, and a future that never waits never pays
/// for writing a context and a node it does not use). Touched only through `&self`
/// (interior mutability), so that no `&mut` to the node or context is ever made while the
/// queue holds pointers to them.
pub(super) struct Op<T, W> {
    pub(super) stage: Cell<Stage>,
    /// Initialised exactly while `stage` is `Queued`.
    wait: UnsafeCell<MaybeUninit<Wait<T, W>>>,
    /// Where the wait was written, taken once when it is set up and used for every access
    /// after that, by us as by the queue: the pointers the queue holds and ours then share
    /// one provenance, which no later poll's reborrow of the future (a `Pin<&mut Self>`, a
    /// `Box` moved to another thread) can invalidate under Stacked or Tree Borrows.
    at: Cell<*mut Wait<T, W>>,
    _pin: PhantomPinned,
}

impl<T, W: Waiter> Op<T, W> {
    fn new() -> Self {
        Op {
            stage: Cell::new(Stage::Idle),
            wait: UnsafeCell::new(MaybeUninit::uninit()),
            at: Cell::new(ptr::null_mut()),
            _pin: PhantomPinned,
        }
    }

    /// The wait; only while `Queued`.
    fn wait(&self) -> &Wait<T, W> {
        debug_assert_eq!(self.stage.get(), Stage::Queued);
        // SAFETY: initialised while queued, at `at`; only shared references are ever made.
        unsafe { &*self.at.get() }
    }

    /// Sets up the wait (a task context holding `waker`, a node holding `slot`) and queues
    /// its node; the caller holds the lock (`st`) and the operation is `Idle` or `Done`, so
    /// nothing else can see the wait's memory yet.
    fn queue<L: Strategy<Waiter = W>>(
        &self,
        st: &mut Locked<'_, T, L>,
        dir: Dir,
        slot: Option<T>,
        waker: Waker,
    ) {
        debug_assert_ne!(self.stage.get(), Stage::Queued);
        let at: *mut Wait<T, W> = self.wait.get().cast();
        // SAFETY: not queued, so the memory is ours and holds nothing to drop; written
        // through the raw pointer, with no `&mut` (see `at`).
        unsafe {
            at.write(Wait {
                ctx: Party::task(Some(waker)),
                node: Node::new(slot),
            })
        };
        self.at.set(at);
        // SAFETY: just written.
        let wait = unsafe { &*at };
        // Alone: the one node of its context, and `cancel_queued` aborts under the lock.
        wait.node.bind_alone(&wait.ctx);
        // SAFETY: `self` is pinned (every caller reaches it through `Pin`) and its drop
        // unlinks the node, under the lock, before the memory can go.
        unsafe {
            match dir {
                Dir::Send => st.queue_sender(&wait.node),
                Dir::Recv => st.queue_receiver(&wait.node),
            }
        }
        self.stage.set(Stage::Queued);
    }

    /// Ends a wait whose node is unlinked and whose claimer (if any) has signalled: takes
    /// what its slot holds, and the waker if the claimer did not take it (a wait aborted
    /// before any claim), and frees the rest, which runs no user code. The caller drops the
    /// two it gets, each user code, with no lock held.
    fn finish(&self) -> (Option<T>, Option<Waker>) {
        let wait = self.wait();
        // SAFETY: it was `Queued`, so initialised; unlinked and signalled, so ours alone.
        let (v, waker) = unsafe { (wait.node.take(), wait.ctx.swap_waker(None)) };
        self.stage.set(Stage::Done);
        // SAFETY: as above; the stage says it is gone before it goes, so nothing reads it
        // again (in place: moving it out first would copy all of it). Slot and waker are
        // empty, so nothing of the user's runs.
        unsafe { ptr::drop_in_place(self.at.get()) };
        (v, waker)
    }

    /// [`finish`](Self::finish) of a wait that a partner ended: the claim took the waker, so
    /// no user code is left to run. A receive's value, or a send's that a close left.
    #[inline]
    fn complete(&self) -> Option<T> {
        let (v, waker) = self.finish();
        debug_assert!(waker.is_none(), "a claim takes the waker");
        std::mem::forget(waker);
        v
    }

    /// A queued operation: `Ready` once a partner has claimed it and signalled (the node is
    /// then unlinked and ours), `Pending` otherwise, with the waker brought up to date. (The
    /// callers test the signal first, inline: a task is usually polled because it was woken.)
    #[inline(never)]
    fn poll_queued<L: Strategy<Waiter = W>>(&self, sh: &Shared<T, L>, cx: &TaskCx<'_>) -> Poll<()> {
        let ctx = &self.wait().ctx;
        loop {
            if ctx.selected() != Selected::Waiting {
                if ctx.task_signalled() {
                    return Poll::Ready(());
                }
                // Claimed, and the partner is between its unlock and its signal: poll again
                // soon rather than block the executor's thread.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let st = sh.lock_in_task();
            if ctx.selected() != Selected::Waiting {
                continue;
            }
            // SAFETY: still waiting, and we hold the lock of the one channel it is queued on.
            if unsafe { ctx.waker_will_wake(cx.waker()) } {
                return Poll::Pending;
            }
            drop(st);
            let new = cx.waker().clone();
            let st = sh.lock_in_task();
            if ctx.selected() != Selected::Waiting {
                drop(st);
                drop(new);
                continue;
            }
            // SAFETY: as above.
            let old = unsafe { ctx.swap_waker(Some(new)) };
            drop(st);
            drop(old);
            return Poll::Pending;
        }
    }

    /// Drop of a queued operation: see the module docs for where a value goes. A send's
    /// value still in its node is dropped here, once, with no lock held. The user code that
    /// follows (the wake-up of a receiver a value went back to, the drops of a value and of
    /// our waker) runs once the wait is over, each piece caught (see `crate::unwind`).
    #[cold]
    #[inline(never)]
    fn cancel_queued<L: Strategy<Waiter = W>>(&self, sh: &Shared<T, L>, dir: Dir) {
        let Wait { ctx, node } = self.wait();
        // The node points into this future, which goes once the drop returns, or unwinds:
        // a lock that panics is taken again (see `unwind::insist`).
        let mut caught = Caught::none();
        let mut st = sh.lock_insisting(&mut caught);
        let mut back = Ok(None);
        if ctx.abort() {
            match dir {
                Dir::Send => st.unqueue_sender(node),
                Dir::Recv => st.unqueue_receiver(node),
            }
            drop(st);
        } else {
            // Claimed. The partner wrote the node under this lock, which we now hold.
            if dir == Dir::Recv {
                // SAFETY: claimed and unlinked: the slot is ours.
                if let Some(v) = unsafe { node.take() } {
                    back = st.give_back(v);
                }
            }
            drop(st);
            // The partner may still be about to signal: it must be done with us before we
            // run any user code, which may panic and free this future while the partner
            // still writes to it.
            while !ctx.task_signalled() {
                crate::sync::yield_now();
            }
        }
        let (v, waker) = self.finish();
        match back {
            Ok(w) => caught.wake(w),
            Err(refused) => caught.run(|| drop(refused)),
        }
        caught.run(|| drop(v));
        caught.run(|| drop(waker));
        caught.finish();
    }

    /// Drop of an operation: nothing to do unless it is queued.
    #[inline]
    pub(super) fn cancel<L: Strategy<Waiter = W>>(&self, sh: &Shared<T, L>, dir: Dir) {
        if self.stage.get() == Stage::Queued {
            self.cancel_queued(sh, dir);
        }
    }

    /// A send that found the channel, locked, in other than its common state: a receiver to
    /// hand the value to, a full buffer, or closed. Out of line, and apart from
    /// [`send_wait`](Self::send_wait): a rendezvous completes here with the few registers a
    /// claim needs, without the saves that queueing a wait would cost it.
    #[inline(never)]
    fn send_locked<L: Strategy<Waiter = W>>(
        &self,
        sh: &Shared<T, L>,
        st: Locked<'_, T, L>,
        v: T,
        cx: &TaskCx<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        match complete_send(st, v) {
            Ok((done, w)) => {
                wake(w);
                done
            }
            Err((st, v)) => {
                // Full: the wait needs a waker, and cloning runs the executor's code, never
                // under the lock.
                drop(st);
                self.send_wait(sh, v, cx)
            }
        }
    }

    /// A send that must wait, or looked bound to: clones the waker first (never under the
    /// lock), then locks and tries once more before queueing its wait.
    #[inline(never)]
    fn send_wait<L: Strategy<Waiter = W>>(
        &self,
        sh: &Shared<T, L>,
        v: T,
        cx: &TaskCx<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        let waker = cx.waker().clone();
        match complete_send(sh.lock_in_task(), v) {
            Ok((done, w)) => {
                // Completed: the clone is not needed. Its drop and the partner's wake-up are
                // user code, both run.
                let mut caught = Caught::none();
                caught.wake(w);
                caught.run(|| drop(waker));
                caught.finish();
                done
            }
            Err((mut st, v)) => {
                self.queue(&mut st, Dir::Send, Some(v), waker);
                Poll::Pending
            }
        }
    }

    /// A receive that found the channel, locked, with nothing to take plainly: a sender to
    /// take from, or nothing (see [`send_locked`](Self::send_locked)).
    #[inline(never)]
    fn recv_locked<L: Strategy<Waiter = W>>(
        &self,
        sh: &Shared<T, L>,
        st: Locked<'_, T, L>,
        cx: &TaskCx<'_>,
    ) -> Poll<Result<T, RecvError>> {
        match complete_recv(st) {
            RecvNow::Got(v, w) => Poll::Ready(Ok(sh.deliver(v, w))),
            RecvNow::Closed => Poll::Ready(Err(RecvError)),
            RecvNow::Wait(st) => {
                drop(st);
                self.recv_wait(sh, cx)
            }
        }
    }

    /// A receive that must wait, or looked bound to (see [`send_wait`](Self::send_wait)).
    #[inline(never)]
    fn recv_wait<L: Strategy<Waiter = W>>(
        &self,
        sh: &Shared<T, L>,
        cx: &TaskCx<'_>,
    ) -> Poll<Result<T, RecvError>> {
        let waker = cx.waker().clone();
        match complete_recv(sh.lock_in_task()) {
            // Completed: the clone is not needed (see `Shared::deliver_dropping`).
            RecvNow::Got(v, w) => Poll::Ready(Ok(sh.deliver_dropping(v, w, waker))),
            RecvNow::Closed => {
                drop(waker);
                Poll::Ready(Err(RecvError))
            }
            RecvNow::Wait(mut st) => {
                self.queue(&mut st, Dir::Recv, None, waker);
                Poll::Pending
            }
        }
    }

    /// Polls a send whose value, while `Idle`, is in `value`.
    #[inline(always)]
    pub(super) fn poll_send<L: Strategy<Waiter = W>>(
        &self,
        sh: &Shared<T, L>,
        value: &UnsafeCell<MaybeUninit<T>>,
        cx: &TaskCx<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        match self.stage.get() {
            Stage::Idle => {}
            Stage::Queued => {
                if !self.wait().ctx.task_signalled() && self.poll_queued(sh, cx).is_pending() {
                    return Poll::Pending;
                }
                // A receiver emptied the slot; a close left the value in it.
                return Poll::Ready(match self.complete() {
                    None => Ok(()),
                    Some(v) => Err(SendError(v)),
                });
            }
            Stage::Done => panic!("a send future polled after it completed"),
        }
        // SAFETY: `Idle`: the value is there, and ours. `Done` from here on, so that it is
        // never read twice (nor dropped by the future if this unwinds).
        let v = unsafe { (*value.get()).assume_init_read() };
        self.stage.set(Stage::Done);
        // A hint, read without the fence that makes it exact: a send that looks bound to
        // wait gets its waker before locking rather than lock twice.
        if sh.summary_hint().send_would_wait(&sh.cap) {
            return self.send_wait(sh, v, cx);
        }
        let mut st = sh.lock_in_task();
        match st.buffer_plainly(v) {
            Ok(()) => {
                drop(st);
                Poll::Ready(Ok(()))
            }
            Err(v) => self.send_locked(sh, st, v, cx),
        }
    }

    #[inline(always)]
    pub(super) fn poll_recv<L: Strategy<Waiter = W>>(
        &self,
        sh: &Shared<T, L>,
        cx: &TaskCx<'_>,
    ) -> Poll<Result<T, RecvError>> {
        match self.stage.get() {
            Stage::Idle => {}
            Stage::Queued => {
                if !self.wait().ctx.task_signalled() && self.poll_queued(sh, cx).is_pending() {
                    return Poll::Pending;
                }
                // A sender filled the slot; a close left it empty.
                return Poll::Ready(self.complete().ok_or(RecvError));
            }
            Stage::Done => panic!("a receive future polled after it completed"),
        }
        self.stage.set(Stage::Done);
        // As for a send: a receive that looks bound to wait gets its waker first.
        if sh.summary_hint().recv_would_wait() {
            return self.recv_wait(sh, cx);
        }
        let mut st = sh.lock_in_task();
        match st.take_buffered() {
            Some(v) => {
                drop(st);
                Poll::Ready(Ok(v))
            }
            None => self.recv_locked(sh, st, cx),
        }
    }
}

/// A send under the lock, completed if it can be (closed, or a receiver or room for the
/// value): the lock is released, and the outcome comes back with the claimed receiver, for
/// the caller to wake. Else the lock and the value back, for the caller to wait.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn complete_send<T, L: Strategy>(
    mut st: Locked<'_, T, L>,
    v: T,
) -> Result<(Poll<Result<(), SendError<T>>>, Option<Wake<L::Waiter>>), (Locked<'_, T, L>, T)> {
    if st.is_closed() {
        drop(st);
        return Ok((Poll::Ready(Err(SendError(v))), None));
    }
    match st.try_send(v) {
        Ok(w) => {
            drop(st);
            Ok((Poll::Ready(Ok(())), w))
        }
        Err(v) => Err((st, v)),
    }
}

/// What a receive under the lock found.
enum RecvNow<'a, T, L: Strategy> {
    /// A value, and the sender to wake (lock released): deliver with `Shared::deliver`.
    Got(T, Option<Wake<L::Waiter>>),
    /// Closed and drained (lock released).
    Closed,
    /// Nothing yet: the lock back, for the caller to wait.
    Wait(Locked<'a, T, L>),
}

/// A receive under the lock, completed if it can be: a value buffered or a sender to take
/// from, or closed and drained.
#[inline(always)]
fn complete_recv<T, L: Strategy>(mut st: Locked<'_, T, L>) -> RecvNow<'_, T, L> {
    if let Some((v, w)) = st.try_recv() {
        drop(st);
        return RecvNow::Got(v, w);
    }
    if st.recv_closed() {
        drop(st);
        return RecvNow::Closed;
    }
    RecvNow::Wait(st)
}

/// A channel an async operation borrows (`&Chan`) or owns (an endpoint's `Chan`, so that the
/// future can outlive the borrow: `tokio::spawn(rx.into_recv_async())`).
trait ChanRef<T, L: Strategy> {
    fn chan(&self) -> &Chan<T, L>;
}

impl<T, L: Strategy> ChanRef<T, L> for &Chan<T, L> {
    #[inline(always)]
    fn chan(&self) -> &Chan<T, L> {
        self
    }
}

impl<T, L: Strategy> ChanRef<T, L> for Chan<T, L> {
    #[inline(always)]
    fn chan(&self) -> &Chan<T, L> {
        self
    }
}

/// A send future's state, whichever way it holds its channel.
struct SendOp<C: ChanRef<T, L>, T, L: Strategy> {
    chan: C,
    op: Op<T, L::Waiter>,
    /// The value to send, there exactly while the operation is `Idle` (a queued send keeps
    /// it in its node).
    value: UnsafeCell<MaybeUninit<T>>,
}

impl<C: ChanRef<T, L>, T, L: Strategy> SendOp<C, T, L> {
    fn new(chan: C, v: T) -> Self {
        SendOp {
            chan,
            op: Op::new(),
            value: UnsafeCell::new(MaybeUninit::new(v)),
        }
    }

    // Always: the common send is a lock, a push and an unlock, and a call around it (with
    // the registers it saves) would cost as much again; the slow paths are out of line.
    #[inline(always)]
    fn poll(&self, cx: &TaskCx<'_>) -> Poll<Result<(), SendError<T>>> {
        self.op.poll_send(&self.chan.chan().shared, &self.value, cx)
    }
}

impl<C: ChanRef<T, L>, T, L: Strategy> Drop for SendOp<C, T, L> {
    #[inline]
    fn drop(&mut self) {
        match self.op.stage.get() {
            // SAFETY: `Idle`: the value was never taken, so it is there to drop, once.
            Stage::Idle => unsafe { self.value.get_mut().assume_init_drop() },
            _ => self.op.cancel(&self.chan.chan().shared, Dir::Send),
        }
    }
}

/// A receive future's state, whichever way it holds its channel.
struct RecvOp<C: ChanRef<T, L>, T, L: Strategy> {
    chan: C,
    op: Op<T, L::Waiter>,
}

impl<C: ChanRef<T, L>, T, L: Strategy> RecvOp<C, T, L> {
    fn new(chan: C) -> Self {
        RecvOp {
            chan,
            op: Op::new(),
        }
    }

    #[inline(always)]
    fn poll(&self, cx: &TaskCx<'_>) -> Poll<Result<T, RecvError>> {
        self.op.poll_recv(&self.chan.chan().shared, cx)
    }
}

impl<C: ChanRef<T, L>, T, L: Strategy> Drop for RecvOp<C, T, L> {
    #[inline]
    fn drop(&mut self) {
        self.op.cancel(&self.chan.chan().shared, Dir::Recv);
    }
}

/// The future of [`Chan::send_async`] (and [`Sender::send_async`]).
///
/// Dropping it before it completes is safe at any point: either the value was sent, or it is
/// dropped with the future, exactly once. It is `!Unpin` (its wait lives in it, allocation
/// free): `.await` it, or pin it (`std::pin::pin!`) to poll it by hand.
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T, L: Strategy = Adaptive>(SendOp<&'a Chan<T, L>, T, L>);

/// The future of [`Chan::recv_async`] (and [`Receiver::recv_async`]).
///
/// Dropping it before it completes is safe at any point: a value it had already been handed
/// goes back to the channel (to a waiting receiver, else to the front of the buffer).
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T, L: Strategy = Adaptive>(RecvOp<&'a Chan<T, L>, T, L>);

/// [`SendFuture`] owning its sender: from [`Sender::into_send_async`] (or
/// [`Chan::into_send_async`]), for a future that must outlive the sender's scope
/// (`tokio::spawn(tx.into_send_async(v))`). Dropping it drops the sender.
#[must_use = "futures do nothing unless polled"]
pub struct OwnedSendFuture<T, L: Strategy = Adaptive>(SendOp<Chan<T, L>, T, L>);

/// [`RecvFuture`] owning its receiver: from [`Receiver::into_recv_async`] (or
/// [`Chan::into_recv_async`]). Dropping it drops the receiver.
#[must_use = "futures do nothing unless polled"]
pub struct OwnedRecvFuture<T, L: Strategy = Adaptive>(RecvOp<Chan<T, L>, T, L>);

// SAFETY: the raw pointers inside (node links, the context pointer) are touched only under
// the channel's lock or by the future's owner while the node is unqueued; values of `T` move
// between threads, hence `T: Send`. `&Self` exposes nothing, hence `Sync`.
unsafe impl<T: Send, L: Strategy> Send for SendFuture<'_, T, L> {}
// SAFETY: as above.
unsafe impl<T: Send, L: Strategy> Sync for SendFuture<'_, T, L> {}
// SAFETY: as for `SendFuture`.
unsafe impl<T: Send, L: Strategy> Send for RecvFuture<'_, T, L> {}
// SAFETY: as above.
unsafe impl<T: Send, L: Strategy> Sync for RecvFuture<'_, T, L> {}
// SAFETY: as for `SendFuture`; the owned `Chan` is `Send` and `Sync` when `T: Send`.
unsafe impl<T: Send, L: Strategy> Send for OwnedSendFuture<T, L> {}
// SAFETY: as above.
unsafe impl<T: Send, L: Strategy> Sync for OwnedSendFuture<T, L> {}
// SAFETY: as for `OwnedSendFuture`.
unsafe impl<T: Send, L: Strategy> Send for OwnedRecvFuture<T, L> {}
// SAFETY: as above.
unsafe impl<T: Send, L: Strategy> Sync for OwnedRecvFuture<T, L> {}

/// `Future`, `FusedFuture` (terminated once it has completed) and `Debug` for the four
/// public futures, each a newtype over its `SendOp` or `RecvOp`.
macro_rules! future_impls {
    ($name:ident $(<$lt:lifetime>)?, $out:ty) => {
        impl<T, L: Strategy> Future for $name<$($lt,)? T, L> {
            type Output = $out;
            #[inline(always)]
            fn poll(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Self::Output> {
                // Only `&` is ever taken of the pinned fields, so nothing moves.
                self.into_ref().get_ref().0.poll(cx)
            }
        }

        impl<T, L: Strategy> futures_core::FusedFuture for $name<$($lt,)? T, L> {
            fn is_terminated(&self) -> bool {
                self.0.op.stage.get() == Stage::Done
            }
        }

        impl<T, L: Strategy> fmt::Debug for $name<$($lt,)? T, L> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("stage", &self.0.op.stage.get())
                    .finish_non_exhaustive()
            }
        }
    };
}

future_impls!(SendFuture<'_>, Result<(), SendError<T>>);
future_impls!(RecvFuture<'_>, Result<T, RecvError>);
future_impls!(OwnedSendFuture, Result<(), SendError<T>>);
future_impls!(OwnedRecvFuture, Result<T, RecvError>);

impl<T, L: Strategy> Chan<T, L> {
    /// Sends `v` from an async task: completes when [`send`](Self::send) would return,
    /// without blocking the executor's thread. Works with any executor, and with blocking
    /// parties on the same channel: a thread blocked in [`recv`](Self::recv) is woken by it,
    /// and a thread's `recv` completes a pending `send_async`.
    ///
    /// Gives `v` back (`SendError`) if the channel is or becomes closed. Dropping the
    /// future before it completes drops `v` unless it was already sent. The wait allocates
    /// nothing (the queue node lives in the future), and a timeout is the executor's (say
    /// `tokio::time::timeout`): dropping the future is the cancellation.
    ///
    /// ```
    /// use chan::Chan;
    /// let c: Chan<u32> = Chan::new(0);
    /// let rx = c.clone();
    /// let thread = std::thread::spawn(move || rx.recv()); // a blocking receiver
    /// futures::executor::block_on(c.send_async(7)).unwrap();
    /// assert_eq!(thread.join().unwrap(), Ok(7));
    /// ```
    pub fn send_async(&self, v: T) -> SendFuture<'_, T, L> {
        SendFuture(SendOp::new(self, v))
    }

    /// Receives from an async task: completes when [`recv`](Self::recv) would return, without
    /// blocking the executor's thread; fails once the channel is closed and drained.
    ///
    /// Dropping the future before it completes loses nothing: a value it had already been
    /// handed goes to the next waiting receiver, or back to the front of the buffer.
    ///
    /// ```
    /// use chan::Chan;
    /// let c: Chan<&str> = Chan::new(1);
    /// let tx = c.clone();
    /// let thread = std::thread::spawn(move || tx.send("from a thread")); // a blocking sender
    /// let got = futures::executor::block_on(c.recv_async());
    /// assert_eq!(got, Ok("from a thread"));
    /// thread.join().unwrap().unwrap();
    /// ```
    pub fn recv_async(&self) -> RecvFuture<'_, T, L> {
        RecvFuture(RecvOp::new(self))
    }

    /// [`send_async`](Self::send_async) by a future that owns this handle.
    pub fn into_send_async(self, v: T) -> OwnedSendFuture<T, L> {
        OwnedSendFuture(SendOp::new(self, v))
    }

    /// [`recv_async`](Self::recv_async) by a future that owns this handle.
    pub fn into_recv_async(self) -> OwnedRecvFuture<T, L> {
        OwnedRecvFuture(RecvOp::new(self))
    }
}

impl<T, L: Strategy> Sender<T, L> {
    /// See [`Chan::send_async`].
    pub fn send_async(&self, v: T) -> SendFuture<'_, T, L> {
        self.0.send_async(v)
    }

    /// [`send_async`](Self::send_async) by a future that owns the sender (dropped with it),
    /// so it can be spawned:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (tx, rx) = chan::bounded::<u32>(0);
    /// let sent = tokio::spawn(tx.into_send_async(3));
    /// assert_eq!(rx.recv_async().await, Ok(3));
    /// sent.await.unwrap().unwrap();
    /// # }
    /// ```
    pub fn into_send_async(self, v: T) -> OwnedSendFuture<T, L> {
        OwnedSendFuture(SendOp::new(self.0, v))
    }
}

impl<T, L: Strategy> Receiver<T, L> {
    /// See [`Chan::recv_async`].
    pub fn recv_async(&self) -> RecvFuture<'_, T, L> {
        self.0.recv_async()
    }

    /// [`recv_async`](Self::recv_async) by a future that owns the receiver (dropped with
    /// it), so it can be spawned:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let (tx, rx) = chan::bounded::<u32>(1);
    /// let got = tokio::spawn(rx.into_recv_async());
    /// tx.send_async(4).await.unwrap();
    /// assert_eq!(got.await.unwrap(), Ok(4));
    /// # }
    /// ```
    pub fn into_recv_async(self) -> OwnedRecvFuture<T, L> {
        OwnedRecvFuture(RecvOp::new(self.0))
    }
}

/// An [`Op`] on the heap, for the long-lived adapters (streams, sinks), which are `Unpin` so
/// that `rx.stream().next().await` compiles as written: one allocation when the adapter is
/// made, reused for every item. Held as a raw pointer, not a `Box`, so that moving the adapter
/// asserts nothing about the memory the queue points into.
#[cfg(any(feature = "stream", feature = "sink"))]
pub(super) struct HeapOp<T, W>(std::ptr::NonNull<Op<T, W>>);

#[cfg(any(feature = "stream", feature = "sink"))]
impl<T, W: Waiter> HeapOp<T, W> {
    pub(super) fn new() -> Self {
        HeapOp(std::ptr::NonNull::from(Box::leak(Box::new(Op::new()))))
    }
}

#[cfg(any(feature = "stream", feature = "sink"))]
impl<T, W> std::ops::Deref for HeapOp<T, W> {
    type Target = Op<T, W>;
    fn deref(&self) -> &Op<T, W> {
        // SAFETY: allocated in `new`, freed only by our drop; only `&` is ever made.
        unsafe { self.0.as_ref() }
    }
}

#[cfg(any(feature = "stream", feature = "sink"))]
impl<T, W> Drop for HeapOp<T, W> {
    fn drop(&mut self) {
        // SAFETY: from `Box::leak` in `new`; the adapter's drop has cancelled any wait first
        // (its fields drop after its own `drop`), so nothing points into it any more.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// A channel a stream or sink borrows, or owns (an endpoint's `Chan`, with its role, so that
/// dropping it counts as dropping the endpoint).
#[cfg(any(feature = "stream", feature = "sink"))]
pub(super) enum Handle<'a, T, L: Strategy> {
    Borrowed(&'a Chan<T, L>),
    Owned(Chan<T, L>),
}

#[cfg(any(feature = "stream", feature = "sink"))]
impl<T, L: Strategy> Handle<'_, T, L> {
    pub(super) fn chan(&self) -> &Chan<T, L> {
        match self {
            Handle::Borrowed(c) => c,
            Handle::Owned(c) => c,
        }
    }
}
