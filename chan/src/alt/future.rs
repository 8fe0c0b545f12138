//! `Alt::wait_async`: an alt whose owner is an async task.
//!
//! The same protocol as the blocking wait (random poll order drawn before locking, channels
//! locked in address order, first ready arm in poll order, else one node per arm queued in
//! poll order), with a task [`Party`] in the pinned future instead of a thread's. The arms'
//! nodes live in the alt's boxed arms, as for a blocked thread, so a wait allocates nothing
//! beyond what [`Alt::wait`] does (the scratch orders, kept between waits).
//!
//! Cancellation: dropping a queued future takes every lock and aborts the wait; if an arm
//! fired first, a send arm's value is gone (sent) and a receive arm's value goes back to its
//! channel as for a dropped [`RecvFuture`](crate::RecvFuture) (to a waiting receiver, else
//! to the front of the buffer), never into the arm's `Option`, where a later wait would
//! drop it. Unsent values go back to their send arms' `Option`s, as after a timed-out wait.

use super::{complete_ready, dequeue_all, finish_arms, release_arms, Alt, Fired, Locks};
use crate::unwind::Caught;
use crate::waitq::{Party, Selected, Stage};
use locks::{Adaptive, Strategy};
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context as TaskCx, Poll};

/// The future of [`Alt::wait_async`]: the index of the arm that fired, as [`Alt::wait`]
/// gives it.
#[must_use = "futures do nothing unless polled"]
pub struct AltFuture<'f, 'a, L: Strategy = Adaptive> {
    alt: &'f mut Alt<'a, L>,
    stage: Stage,
    ctx: UnsafeCell<Party<L::Waiter>>,
    /// `ctx`'s address, taken on the first poll (pinned by then) and used for every access:
    /// ours and the queue's pointers share one provenance, which a later poll's reborrow of
    /// the future cannot invalidate (see `Op::at` in `chan/future.rs`).
    at: *const Party<L::Waiter>,
    _pin: PhantomPinned,
}

// Not `Send`: neither is `Alt`, whose arms are type-erased without a `Send` bound (a channel
// of `Rc`s can be an arm). A task awaiting an alt runs on a current-thread runtime, a local
// set or `block_on`, or builds a `SendAlt` (arms of `Send` values only), whose future is
// `Send`; its partners may be tasks and threads anywhere.

impl<'a, L: Strategy> Alt<'a, L> {
    /// [`wait`](Self::wait) from an async task: completes when one arm has fired, with the
    /// same fairness (uniform among ready arms unless [`biased`](Self::biased)) and closed-arm
    /// rule, without blocking the executor's thread. Arms on channels with blocked threads
    /// and tasks mix freely.
    ///
    /// For a timeout use the executor's timer (say `tokio::time::timeout`) or race it in a
    /// `select!`: dropping the future is the cancellation, and loses nothing (see
    /// [`AltFuture`]'s module notes: a value already received goes back to its channel).
    /// [`try_wait`](Self::try_wait) is the non-blocking form, as for threads.
    ///
    /// # Panics
    /// On its first poll, if there are no arms.
    ///
    /// ```
    /// use chan::{Alt, Chan};
    /// let (a, b) = (Chan::<u32>::new(0), Chan::<&str>::new(0));
    /// let tx = b.clone();
    /// let thread = std::thread::spawn(move || tx.send("hi").unwrap()); // blocks until taken
    /// let (mut x, mut y) = (None, None);
    /// let mut alt = Alt::new();
    /// alt.recv(&a, &mut x);
    /// let yi = alt.recv(&b, &mut y);
    /// let fired = futures::executor::block_on(alt.wait_async());
    /// assert_eq!((fired.index, fired.closed), (yi, false));
    /// drop(alt);
    /// assert_eq!(y, Some("hi"));
    /// thread.join().unwrap();
    /// ```
    pub fn wait_async(&mut self) -> AltFuture<'_, 'a, L> {
        self.cancel_leaked();
        AltFuture {
            alt: self,
            stage: Stage::Idle,
            ctx: UnsafeCell::new(Party::task(None)),
            at: std::ptr::null(),
            _pin: PhantomPinned,
        }
    }
}

impl<L: Strategy> AltFuture<'_, '_, L> {
    /// The task context (after the first poll). Unbounded: it borrows nothing of `self`, so
    /// that the alt can be borrowed beside it.
    fn ctx<'c>(&self) -> &'c Party<L::Waiter> {
        // SAFETY: `at` points at our pinned context, alive as long as the future, which every
        // caller outlives the returned reference within.
        unsafe { &*self.at }
    }

    fn start(&mut self, cx: &TaskCx<'_>) -> Poll<Fired> {
        let ctx = self.ctx();
        assert!(
            !self.alt.arms.is_empty(),
            "alt with no arms would wait forever"
        );
        self.alt.plan();
        // `will_wake` is best-effort: asked once (see `chan/future.rs`).
        let mut installed = false;
        loop {
            let Alt {
                arms,
                poll_order,
                lock_order,
                ..
            } = &mut *self.alt;
            let mut locks = Locks::lock_in_task(arms, lock_order);
            if let Some((fired, w)) = locks.poll(poll_order) {
                drop(locks);
                self.stage = Stage::Done;
                complete_ready(&mut *arms[fired.index], w);
                return Poll::Ready(fired);
            }
            // SAFETY: no node of ours is queued: the waker slot is ours.
            if !installed && !unsafe { ctx.waker_will_wake(cx.waker()) } {
                drop(locks);
                let new = cx.waker().clone();
                // SAFETY: as above.
                drop(unsafe { ctx.swap_waker(Some(new)) });
                installed = true;
                continue;
            }
            ctx.reset_task();
            let (held_arms, held) = locks.arms();
            for &i in poll_order.iter() {
                // SAFETY: the arms stay boxed in place, and the context pinned in this
                // future, until the nodes are dequeued (on completion, or by the drop).
                unsafe { held_arms[i].enqueue(held, ctx, i) };
            }
            drop(locks);
            self.stage = Stage::Queued;
            // Should this future be leaked, the alt withdraws the wait (`cancel_leaked`).
            self.alt.pending = self.at;
            return Poll::Pending;
        }
    }

    fn poll_queued(&mut self, cx: &TaskCx<'_>) -> Poll<Fired> {
        let ctx = self.ctx();
        loop {
            let selected = ctx.selected();
            if selected != Selected::Waiting {
                if !ctx.task_signalled() {
                    // Claimed; the partner's signal is a moment away.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let Alt {
                    arms, lock_order, ..
                } = &mut *self.alt;
                dequeue_all(arms, lock_order);
                self.alt.pending = std::ptr::null();
                self.stage = Stage::Done;
                // Values to their places first (no user code), then drop what the places
                // held (user code: a panic there leaves every value delivered).
                finish_arms(&mut self.alt.arms);
                let mut caught = Caught::none();
                release_arms(&mut self.alt.arms, &mut caught);
                caught.finish();
                let fired = Fired::from_selected(selected);
                return Poll::Ready(
                    fired.unwrap_or_else(|| unreachable!("only the drop aborts an async alt")),
                );
            }
            let Alt {
                arms, lock_order, ..
            } = &mut *self.alt;
            let locks = Locks::lock_in_task(arms, lock_order);
            if ctx.selected() != Selected::Waiting {
                drop(locks);
                continue;
            }
            // SAFETY: every lock of the alt is held.
            if unsafe { ctx.waker_will_wake(cx.waker()) } {
                return Poll::Pending;
            }
            drop(locks);
            let new = cx.waker().clone();
            let locks = Locks::lock_in_task(arms, lock_order);
            if ctx.selected() != Selected::Waiting {
                drop(locks);
                drop(new);
                continue;
            }
            // SAFETY: still waiting, with every lock held.
            let old = unsafe { ctx.swap_waker(Some(new)) };
            drop(locks);
            drop(old);
            return Poll::Pending;
        }
    }
}

impl<L: Strategy> Future for AltFuture<'_, '_, L> {
    type Output = Fired;
    fn poll(self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<Fired> {
        // SAFETY: nothing is moved out of `this`: the context stays where the queued nodes
        // point, and `&mut` to this `!Unpin` struct asserts no uniqueness over it.
        let this = unsafe { self.get_unchecked_mut() };
        if this.at.is_null() {
            this.at = this.ctx.get();
        }
        match this.stage {
            Stage::Idle => this.start(cx),
            Stage::Queued => this.poll_queued(cx),
            Stage::Done => panic!("an alt future polled after it completed"),
        }
    }
}

impl<L: Strategy> futures_core::FusedFuture for AltFuture<'_, '_, L> {
    fn is_terminated(&self) -> bool {
        self.stage == Stage::Done
    }
}

impl<L: Strategy> Drop for AltFuture<'_, '_, L> {
    /// Withdraws a queued wait, then drops the waker the context may still hold: user code,
    /// run caught after everything else (see `crate::unwind`), not left to the drop glue.
    fn drop(&mut self) {
        let mut caught = Caught::none();
        if self.stage == Stage::Queued {
            self.stage = Stage::Done;
            let ctx = self.ctx();
            caught.run(|| self.alt.cancel_async(ctx));
        }
        // SAFETY: no node of the context is queued any more (withdrawn just above, or never
        // queued, or dequeued when the wait ended), and any claimer has signalled: the
        // waker slot is ours.
        let waker = unsafe { (*self.ctx.get()).swap_waker(None) };
        caught.run(|| drop(waker));
        caught.finish();
    }
}

impl<L: Strategy> fmt::Debug for AltFuture<'_, '_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AltFuture")
            .field("alt", &self.alt)
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}
