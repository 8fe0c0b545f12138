//! `alt!`'s blocking forms, their arms on the caller's stack, so that a wait allocates
//! nothing. Not public API: `chan::__private` re-exports it for the macro's expansion.
//!
//! The macro declares each arm ([`recv`], [`send`]) beside the slot it borrows, and a
//! [`StackAlt`] over them. An arm's node is queued only within one of the alt's waits, which
//! unlinks it before returning (or unwinding, by its guard), so the arms need only outlive
//! the waits, which their borrow ensures. An [`Alt`](super::Alt) owns its arms instead: its
//! [`AltFuture`](super::AltFuture) may be leaked with their nodes still queued, and the alt
//! then keeps them alive, and withdraws the wait when it is used again or dropped. So
//! `alt!(async; ..)` still builds an `Alt`.

use super::{plan, run, Arm, Fired, Mode, Port, RecvArm, SendArm, Waits};
use crate::{RecvEnd, SendEnd};
use locks::Strategy;
use std::fmt;
use std::time::Duration;

/// A receive arm of `alt!`, from `chan` into `dst`, as [`Alt::recv`](super::Alt::recv)
/// adds one.
pub fn recv<'a, T: 'a, L: Strategy>(
    chan: &'a (impl RecvEnd<T, L> + ?Sized),
    dst: &'a mut Option<T>,
) -> RecvArm<'a, T, L> {
    RecvArm {
        port: Port::new(chan.chan()),
        dst,
        displaced: None,
        refused: None,
    }
}

/// A send arm of `alt!`, from `src` on `chan`, as [`Alt::send`](super::Alt::send) adds one.
pub fn send<'a, T: 'a, L: Strategy>(
    chan: &'a (impl SendEnd<T, L> + ?Sized),
    src: &'a mut Option<T>,
) -> SendArm<'a, T, L> {
    SendArm {
        port: Port::new(chan.chan()),
        src,
    }
}

/// An arm of `alt!`, borrowed for a [`StackAlt`].
pub struct StackArm<'r, 'a, L: Strategy>(&'r mut (dyn Arm<L> + 'a));

impl<'a, T: 'a, L: Strategy> RecvArm<'a, T, L> {
    /// This arm, for a [`StackAlt`].
    pub fn stack(&mut self) -> StackArm<'_, 'a, L> {
        StackArm(self)
    }
}

impl<'a, T: 'a, L: Strategy> SendArm<'a, T, L> {
    /// This arm, for a [`StackAlt`].
    pub fn stack(&mut self) -> StackArm<'_, 'a, L> {
        StackArm(self)
    }
}

/// `alt!`'s alt of `N` arms on the stack: an [`Alt`](super::Alt)'s blocking waits, unbiased,
/// with the arms and the scratch orders in arrays.
pub struct StackAlt<'r, 'a, L: Strategy, const N: usize> {
    arms: [&'r mut (dyn Arm<L> + 'a); N],
    poll_order: [usize; N],
    lock_order: [usize; N],
}

impl<'r, 'a, L: Strategy, const N: usize> StackAlt<'r, 'a, L, N> {
    /// An alt over `arms`, an arm's index being its place in the array.
    pub fn new(arms: [StackArm<'r, 'a, L>; N]) -> Self {
        StackAlt {
            arms: arms.map(|arm| arm.0),
            poll_order: [0; N],
            lock_order: [0; N],
        }
    }

    /// See [`Alt::wait`](super::Alt::wait).
    pub fn wait(&mut self) -> Fired {
        Waits::wait(self)
    }

    /// See [`Alt::try_wait`](super::Alt::try_wait).
    pub fn try_wait(&mut self) -> Option<Fired> {
        Waits::try_wait(self)
    }

    /// See [`Alt::wait_timeout`](super::Alt::wait_timeout).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Fired> {
        Waits::wait_timeout(self, timeout)
    }
}

impl<L: Strategy, const N: usize> Waits for StackAlt<'_, '_, L, N> {
    fn arm_count(&self) -> usize {
        N
    }

    fn run(&mut self, mode: Mode) -> Option<Fired> {
        let locks = plan(
            &self.arms,
            false,
            &mut self.poll_order,
            &mut self.lock_order,
        );
        run(
            &mut self.arms,
            &self.poll_order,
            &self.lock_order[..locks],
            mode,
        )
    }
}

impl<T, L: Strategy> fmt::Debug for RecvArm<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvArm").finish_non_exhaustive()
    }
}

impl<T, L: Strategy> fmt::Debug for SendArm<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendArm").finish_non_exhaustive()
    }
}

impl<L: Strategy> fmt::Debug for StackArm<'_, '_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StackArm").finish_non_exhaustive()
    }
}

impl<L: Strategy, const N: usize> fmt::Debug for StackAlt<'_, '_, L, N> {
    /// The number of arms and the lock strategy, as an `Alt`'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StackAlt")
            .field("arms", &N)
            .field("lock", &L::NAME)
            .finish_non_exhaustive()
    }
}
