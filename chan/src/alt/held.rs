//! The locks of an alt's channels ([`Locks`]), and the proof that they are held ([`Held`]).
//!
//! An arm reaches its channel's state only through a `&mut Held`, which only [`Locks::lock`]
//! makes, once it has taken every lock, and which lives in the guard that releases them. So
//! the arms' methods that need a lock are safe functions taking the proof; the `unsafe` is
//! here, where the locks are taken and released, and in the one step from the proof to a
//! channel's state (`Port::state`).

use super::ArmPtr;
use crate::unwind::{self, Caught};
use locks::Strategy;
use std::marker::PhantomData;

/// Proof that every lock of an alt's channels is held.
///
/// Made only by [`Locks::lock`], kept in the guard (whose drop releases the locks, and out of
/// which nothing can be moved), and lent from there: a mutable borrow of it is what an arm
/// needs to borrow its channel's state, one state at a time (two arms may share a channel).
pub(super) struct Held(());

/// The locks of an alt's channels, taken in lock order; releasing them (publishing each
/// channel's summary first) happens on drop, so a panic cannot leave one held.
pub(super) struct Locks<'g, 'a, L: Strategy, A: ArmPtr<'a, L>> {
    arms: &'g mut [A],
    lock_order: &'g [usize],
    /// How many of `lock_order` are held (all of them, unless a lock unwound midway).
    taken: usize,
    /// Lent out only once every lock is taken (`lock` returns the guard only then).
    held: Held,
    /// The arms' lifetime and strategy, which `A` names.
    _arms: PhantomData<(&'a (), L)>,
}

impl<'g, 'a, L: Strategy, A: ArmPtr<'a, L>> Locks<'g, 'a, L, A> {
    /// Takes the lock of every arm's channel: `lock_order` holds one arm per distinct lock,
    /// in the order every alt takes them.
    pub(super) fn lock(arms: &'g mut [A], lock_order: &'g [usize]) -> Self {
        Self::lock_with(arms, lock_order, false)
    }

    /// [`lock`](Self::lock) for an async alt, polled on an executor's worker: the first
    /// lock is taken with [`Strategy::lock_in_task`], the others as a thread takes them, so
    /// that a worker kept off a contended lock is never kept there holding another.
    pub(super) fn lock_in_task(arms: &'g mut [A], lock_order: &'g [usize]) -> Self {
        Self::lock_with(arms, lock_order, true)
    }

    /// [`lock`](Self::lock) for a withdrawal that must happen (an async alt's drop: its
    /// nodes point into memory about to go): a lock that panics is taken again, its panic
    /// kept in `caught` (see `unwind::insist`).
    pub(super) fn lock_insisting(
        arms: &'g mut [A],
        lock_order: &'g [usize],
        caught: &mut Caught,
    ) -> Self {
        let mut locks = Self::unlocked(arms, lock_order);
        for &i in lock_order {
            let lock = locks.arms[i].lock();
            unwind::insist(caught, || lock.lock());
            locks.taken += 1;
        }
        locks
    }

    fn lock_with(arms: &'g mut [A], lock_order: &'g [usize], task: bool) -> Self {
        let mut locks = Self::unlocked(arms, lock_order);
        for &i in lock_order {
            let lock = locks.arms[i].lock();
            match task && locks.taken == 0 {
                true => lock.lock_in_task(),
                false => lock.lock(),
            }
            locks.taken += 1;
        }
        locks
    }

    /// The guard, no lock taken yet.
    fn unlocked(arms: &'g mut [A], lock_order: &'g [usize]) -> Self {
        Locks {
            arms,
            lock_order,
            taken: 0,
            held: Held(()),
            _arms: PhantomData,
        }
    }

    /// The arms, and the proof that their channels' locks are held.
    pub(super) fn arms(&mut self) -> (&mut [A], &mut Held) {
        (&mut *self.arms, &mut self.held)
    }
}

impl<'a, L: Strategy, A: ArmPtr<'a, L>> Drop for Locks<'_, 'a, L, A> {
    fn drop(&mut self) {
        if self.taken == self.lock_order.len() {
            for arm in self.arms.iter() {
                arm.publish(&mut self.held);
            }
        }
        for &i in self.lock_order[..self.taken].iter().rev() {
            // SAFETY: taken by `lock`.
            unsafe { self.arms[i].lock().unlock() };
        }
    }
}
