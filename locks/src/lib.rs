//! Three lock strategies, and the way each one makes a thread wait.
//!
//! | type | strategy | contended lock | waiting for an event |
//! |---|---|---|---|
//! | [`SpinYield`] | Plan 9's old lock | test-and-set, `sched_yield`, then 1 ms sleeps | poll, yield, sleep |
//! | [`SemLock`] | Plan 9's 2013 lock | counter + futex [`Semaphore`], no spinning | futex sleep at once |
//! | [`Adaptive`] | std / Go / kanal / parking_lot | optional timed spin, yields for 20 us, then futex | the same |
//!
//! Each is a [`lock_api::RawMutex`], so [`Mutex<Backend, T>`](Mutex) is an ordinary mutex with
//! guards; each is also a [`Strategy`], which adds a [`Waiter`]: the `chan` crate blocks its
//! senders and receivers with the waiter of the channel's lock, so picking a strategy picks the
//! whole blocking behaviour.
//!
//! Pick a strategy by type:
//!
//! ```
//! use locks::{Mutex, SemLock};
//! let m: Mutex<SemLock, Vec<u32>> = Mutex::new(vec![]);
//! m.lock().push(7);
//! assert_eq!(m.lock().len(), 1);
//! ```
//!
//! or by name at run time, through [`Backend`]:
//!
//! ```
//! let backend: locks::Backend = "adaptive:spin_ns=500".parse()?;
//! let m = backend.mutex(String::new());
//! m.lock().push_str("hi");
//! # Ok::<(), locks::ParseBackendError>(())
//! ```
//!
//! With the `stats` feature, [`stats`] counts what the locks did (acquisitions, contention,
//! spins, yields, futex waits and wakes).
#![warn(missing_docs)]

pub use lock_api;

mod adaptive;
mod backend;
#[cfg(not(loom))]
mod dyn_lock;
mod futex;
mod sem;
mod spin;
mod spin_yield;
pub mod stats;
mod strategy;
mod sync;

pub use adaptive::{Adaptive, AdaptiveParams, AdaptiveWaiter};
pub use backend::{Backend, ParseBackendError, Visit};
#[cfg(not(loom))]
pub use dyn_lock::DynLock;
pub use sem::{SemLock, SemWaiter, Semaphore};
pub use spin_yield::{SpinParams, SpinWaiter, SpinYield};
pub use strategy::{NoParams, Params, Strategy, Waiter};

/// A mutex protecting a `T` with the lock strategy `R`: `lock_api::Mutex` under our name.
pub type Mutex<R, T> = lock_api::Mutex<R, T>;
/// The guard of a [`Mutex`].
pub type MutexGuard<'a, R, T> = lock_api::MutexGuard<'a, R, T>;

/// `lock_api` needs a `const INIT`, which loom's atomics cannot provide, so these impls exist
/// only in real builds; the models drive the same code through [`Strategy`].
#[cfg(not(loom))]
macro_rules! raw_mutex {
    ($($t:ty = $init:expr;)*) => {$(
        // SAFETY: forwards to the `Strategy` impl, whose safety contract is mutual exclusion.
        unsafe impl lock_api::RawMutex for $t {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = $init;
            // Unlocking on another thread is fine: none of these locks records its owner.
            type GuardMarker = lock_api::GuardSend;

            #[inline]
            fn lock(&self) {
                Strategy::lock(self)
            }

            #[inline]
            fn try_lock(&self) -> bool {
                Strategy::try_lock(self)
            }

            #[inline]
            unsafe fn unlock(&self) {
                // SAFETY: our caller holds the lock.
                unsafe { Strategy::unlock(self) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                Strategy::is_locked(self)
            }
        }
    )*};
}

#[cfg(not(loom))]
raw_mutex! {
    SpinYield = SpinYield::new(SpinParams::DEFAULT);
    SemLock = SemLock::new();
    Adaptive = Adaptive::new(AdaptiveParams::DEFAULT);
}

/// Timed locking for the strategies that can give up cleanly. `SemLock` has none: a waiter
/// counted in its `key` may already have been handed the lock by an unlocker's semaphore
/// release, so it cannot simply leave (Plan 9's lock had no timed form either).
#[cfg(not(loom))]
macro_rules! raw_mutex_timed {
    ($($t:ty),*) => {$(
        // SAFETY: `try_lock_until` acquires exactly as `lock` does, or returns false having
        // acquired nothing.
        unsafe impl lock_api::RawMutexTimed for $t {
            type Duration = std::time::Duration;
            type Instant = std::time::Instant;

            fn try_lock_for(&self, timeout: std::time::Duration) -> bool {
                // A timeout past the end of time is no timeout.
                match std::time::Instant::now().checked_add(timeout) {
                    Some(deadline) => self.try_lock_until(deadline),
                    None => {
                        Strategy::lock(self);
                        true
                    }
                }
            }

            fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
                <$t>::try_lock_until(self, deadline)
            }
        }
    )*};
}

#[cfg(not(loom))]
raw_mutex_timed!(SpinYield, Adaptive);

// SAFETY: a semaphore-lock unlock that finds others queued releases one permit, which wakes
// one of them and makes it the owner: the hand-off is already fair, so `unlock_fair` is
// `unlock`.
#[cfg(not(loom))]
unsafe impl lock_api::RawMutexFair for SemLock {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: our caller holds the lock.
        unsafe { Strategy::unlock(self) }
    }
}
