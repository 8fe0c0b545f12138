//! Three lock strategies, and the way each one makes a thread wait.
//!
//! | type | name | strategy | contended lock | a blocked channel operation |
//! |---|---|---|---|---|
//! | [`SpinYield`] | `spin` | Plan 9's old lock | test-and-set; 1000 × `sched_yield`; then 1 ms sleeps | polls, yields, then sleeps |
//! | [`SemLock`] | `sem` | Plan 9's 2013 semaphore lock | counter + futex [`Semaphore`], no spinning | futex sleep at once |
//! | [`Adaptive`] | `adaptive` | std / Go / kanal / parking_lot | optional PAUSE-spin (`spin_ns`, TSC-timed, off by default, never on 1 CPU), `sched_yield` for ≤ 20 µs, then futex; a hand-off's locker ([`Strategy::lock_in_hand_off`]: a channel of at most one buffer) PAUSE-spins 2 µs first (`wait_spin_ns`, never on 1 CPU); a task's locker ([`Strategy::lock_in_task`]) yields once, then naps 20 µs at a time (`task_nap_us`) | on a channel of at most one buffer the first in line PAUSE-spins for 2 µs (`wait_spin_ns`, never on 1 CPU), the rest only yield; then `sched_yield` for ≤ 20 µs, then futex sleep |
//!
//! Each is a [`lock_api::RawMutex`], so [`Mutex<R, T>`](Mutex), with `R` any of them
//! (`Mutex<SemLock, T>`), is an ordinary mutex with guards ([`SpinYield`] and [`Adaptive`]
//! also give `try_lock_for`/`try_lock_until` through `RawMutexTimed`; [`SemLock`] gives
//! `unlock_fair`, its hand-off being fair already, but no timed form: a waiter counted in its
//! `key` may already have been handed the lock, so it cannot simply leave). Each is also a
//! [`Strategy`], whose associated [`Waiter`] (an `unsafe trait`: the `chan` crate frees a
//! blocked thread's node on its word) is how a thread blocked on a channel waits: choosing a
//! backend changes the whole blocking behaviour of a channel.
//!
//! Pick a strategy by type:
//!
//! ```
//! use locks::{Adaptive, Mutex, SemLock, SpinYield};
//!
//! let counter: Mutex<SemLock, u64> = Mutex::new(0);
//! *counter.lock() += 1;
//!
//! let names: Mutex<SpinYield, Vec<&str>> = Mutex::new(vec![]);
//! names.lock().push("plan9");
//!
//! let tuned = Mutex::from_raw(Adaptive::new(locks::AdaptiveParams::DEFAULT.with_yield_ns(0)), 0u8);
//! assert_eq!(*tuned.lock(), 0);
//! ```
//!
//! or by name at run time, through [`Backend`] (`spin`, `sem`, `adaptive`, with parameters
//! after colons such as `adaptive:spin_ns=500:yield_ns=0` or `spin:yields=10:sleep_us=50`;
//! with the `test-aids` feature, `adaptive:hold_ns=30` is a test aid, not a tuning knob: it
//! busy-waits 30 ns inside every critical section, a known slowdown for `chantest
//! --calibrate`):
//!
//! ```
//! use locks::{Backend, Strategy, Visit};
//!
//! let backend: locks::Backend = "adaptive:spin_ns=500".parse()?;
//! let m = backend.mutex(String::new());
//! m.lock().push_str("hi");
//!
//! // From an environment variable, falling back to a default:
//! let backend = Backend::from_env("adaptive".parse()?)?; // reads $LOCKS_BACKEND
//! let m = backend.mutex(0u32); // locks::Mutex<locks::DynLock, u32>: a match per operation
//! *m.lock() += 1;
//!
//! // Or compile your code once per strategy and let the name pick one, with no dispatch cost:
//! struct Count;
//! impl Visit for Count {
//!     type Output = u64;
//!     fn visit<S: Strategy>(self, params: S::Params) -> u64 {
//!         let lock = S::with_params(params);
//!         lock.lock();
//!         unsafe { lock.unlock() }; // SAFETY: locked just above
//!         1
//!     }
//! }
//! assert_eq!("sem".parse::<Backend>()?.visit(Count), 1);
//! assert!("mcs".parse::<Backend>().is_err()); // "unknown lock backend `mcs` (valid: spin, sem, adaptive)"
//! # Ok::<(), locks::ParseBackendError>(())
//! ```
//!
//! A backend makes a [`DynLock`], which is itself a [`Strategy`] (its parameters are the
//! [`Backend`], its [`DynWaiter`] the chosen strategy's waiter), so code generic over
//! strategies, such as a `chan::Chan<T, DynLock>`, can take its strategy from a name too:
//! `Chan::<T, DynLock>::with_params(n, backend)` is a channel over the backend chosen at run
//! time, waiting with that backend's waiter. `Chan::<T, DynLock>::new(n)` does not read the
//! environment: like `Mutex::<DynLock, _>::new` it is the default adaptive lock
//! ([`Backend::DEFAULT`]); pass `Backend::from_env(..)?` for `$LOCKS_BACKEND`. The `match`
//! costs a few instructions per operation against the concrete [`Adaptive`] and no
//! measurable time (figures in the repository's `docs/tuning.md`).
//!
//! The rest of the family works over every strategy too, with parking_lot's calls (and Plan 9's
//! names as aliases): [`Condvar<S>`](Condvar) (`rsleep`, `rwakeup`, `rwakeupall`), whose
//! waiters block with their mutex's [`Waiter`], and [`RwLock<S, T>`](RwLock) (`rlock`,
//! `wlock`), a task-fair readers-writer lock on [`RawRwLock<S>`](RawRwLock). A program
//! written for parking_lot swaps its strategy by changing one type alias (the README shows
//! one).
//!
//! A strategy of your own is a type implementing [`Strategy`] (its documentation says how,
//! with a complete example); [`register`] makes its name known to [`Backend`], and so to
//! [`DynLock`] and `$LOCKS_BACKEND`. Another crate's `lock_api::RawMutex` is a strategy
//! through [`Raw`], std's `Mutex` through [`StdLock`], each waiting with one of this crate's
//! waiters ([`NewWaiter`]).
//!
//! With the `stats` feature, [`stats`] counts what the locks did (acquisitions, contended
//! acquisitions, spin iterations, yields, sleeps, futex waits and wakes:
//! `locks::stats::snapshot()`, `reset()`); without it the counters compile to nothing.
#![warn(missing_docs)]
// Every `unsafe` block says why it is sound, in a `// SAFETY:` comment: enforced, not only kept.
#![deny(clippy::undocumented_unsafe_blocks)]

pub use lock_api;

/// The one table of strategies: a row per strategy, `Variant(Type, ParamsType, WaiterType)`.
///
/// `strategies!(callback)` expands to `callback! { rows }`, and every list of strategies in
/// the crate is such a callback: [`Backend`]'s variants, [`Backend::ALL`], names, parsing
/// and [`Backend::visit`] (`backend.rs`), [`DynLock`] and its [`DynWaiter`] (`dyn_lock.rs`),
/// and the `lock_api::RawMutex` impls (below). A new strategy is its own file (the type,
/// its `Strategy` and `Waiter` impls, a `Params` type with a `const DEFAULT` and `Eq`, and a
/// `pub(crate) const fn from_params(params) -> Self`) plus one row here, and its `mod` and
/// `pub use` lines.
macro_rules! strategies {
    ($callback:ident) => {
        $callback! {
            /// [`SpinYield`](crate::SpinYield): Plan 9's old test-and-set lock.
            Spin(crate::SpinYield, crate::SpinParams, crate::SpinWaiter),
            /// [`SemLock`](crate::SemLock): Plan 9's 2013 semaphore lock.
            Sem(crate::SemLock, crate::NoParams, crate::SemWaiter),
            /// [`Adaptive`](crate::Adaptive): spin (optionally) and yield for a while, then futex.
            Adaptive(crate::Adaptive, crate::AdaptiveParams, crate::AdaptiveWaiter),
        }
    };
}

/// Timed locking for the strategies that can give up cleanly, invoked in their own files.
/// `SemLock` has none: a waiter counted in its `key` may already have been handed the lock by
/// an unlocker's semaphore release, so it cannot simply leave (Plan 9's lock had no timed
/// form either).
#[cfg(not(loom))]
macro_rules! raw_mutex_timed {
    ($t:ty) => {
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
                        $crate::Strategy::lock(self);
                        true
                    }
                }
            }

            fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
                <$t>::try_lock_until(self, deadline)
            }
        }
    };
}

/// `lock_api::RawMutex` for a [`Strategy`] type, forwarding to it, with `INIT` as given.
///
/// `lock_api` needs a `const INIT`, which loom's atomics cannot provide, so these impls exist
/// only in real builds; the models drive the same code through [`Strategy`].
#[cfg(not(loom))]
macro_rules! forward_raw_mutex {
    ($t:ty, $init:expr) => {
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
    };
}

mod adaptive;
mod backend;
mod barrier;
mod condvar;
#[cfg(not(loom))]
mod dyn_lock;
#[cfg(not(loom))]
mod erased;
mod futex;
mod migrate;
mod raw;
mod registry;
mod rwlock;
mod sem;
mod spin;
mod spin_yield;
pub mod stats;
#[cfg(not(loom))]
mod std_lock;
mod strategy;
mod sync;

pub use adaptive::{Adaptive, AdaptiveParams, AdaptiveWaiter};
pub use backend::{Backend, ParseBackendError, Visit};
pub use condvar::{Condvar, WaitTimeoutResult};
#[cfg(not(loom))]
pub use dyn_lock::{DynLock, DynWaiter};
#[cfg(not(loom))]
pub use erased::{RegisteredLock, RegisteredWaiter};
pub use raw::{NewWaiter, Raw};
#[cfg(not(loom))]
pub use registry::{register, register_as};
pub use registry::{RegisterError, Registered};
pub use rwlock::RawRwLock;
pub use sem::{SemLock, SemWaiter, Semaphore};
pub use spin_yield::{SpinParams, SpinWaiter, SpinYield};
#[cfg(not(loom))]
pub use std_lock::StdLock;
pub use strategy::{NoParams, Params, Strategy, Waiter};

/// This crate's README (the page crates.io shows), whose examples run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// A mutex protecting a `T` with the lock strategy `R`: `lock_api::Mutex` under our name.
pub type Mutex<R, T> = lock_api::Mutex<R, T>;
/// The guard of a [`Mutex`].
pub type MutexGuard<'a, R, T> = lock_api::MutexGuard<'a, R, T>;

/// A readers-writer lock protecting a `T`, over the strategy `S`: `lock_api::RwLock` on our
/// [`RawRwLock`]. Many readers or one writer; task-fair (see [`RawRwLock`]).
///
/// ```
/// use locks::{RwLock, SpinYield};
/// let config: RwLock<SpinYield, String> = RwLock::new("plan9".into());
/// {
///     let a = config.read();
///     let b = config.try_read().expect("readers share");
///     assert!(config.try_write().is_none());
///     assert_eq!(*a, *b);
/// }
/// config.write().push_str("front");
/// assert_eq!(config.into_inner(), "plan9front");
/// ```
pub type RwLock<S, T> = lock_api::RwLock<RawRwLock<S>, T>;
/// The shared guard of an [`RwLock`].
pub type RwLockReadGuard<'a, S, T> = lock_api::RwLockReadGuard<'a, RawRwLock<S>, T>;
/// The exclusive guard of an [`RwLock`].
pub type RwLockWriteGuard<'a, S, T> = lock_api::RwLockWriteGuard<'a, RawRwLock<S>, T>;

/// The table's rows through [`forward_raw_mutex!`], each starting from its default parameters.
#[cfg(not(loom))]
macro_rules! raw_mutex {
    ($($(#[$doc:meta])* $variant:ident($t:ty, $params:ty, $waiter:ty)),+ $(,)?) => {$(
        forward_raw_mutex!($t, <$t>::from_params(<$params>::DEFAULT));
    )+};
}

#[cfg(not(loom))]
strategies!(raw_mutex);
