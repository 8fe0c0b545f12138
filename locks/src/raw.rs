//! Another crate's mutex as a strategy: [`Raw`], any `lock_api::RawMutex` with one of our ways
//! to wait ([`NewWaiter`]).

use crate::adaptive::{AdaptiveParams, AdaptiveWaiter};
use crate::sem::{SemWaiter, Semaphore};
use crate::spin_yield::{SpinParams, SpinWaiter};
use crate::strategy::{NoParams, Strategy, Waiter};
use lock_api::{GuardSend, RawMutex};
use std::fmt;
use std::marker::PhantomData;

/// A waiter that can be made on its own, without a lock of ours: the way to wait that a
/// [`Raw`] lock, or a strategy of your own, borrows from this crate.
///
/// ```
/// use locks::{NewWaiter, SemWaiter, Waiter};
/// let w = SemWaiter::new_waiter();
/// assert!(!w.is_signalled());
/// ```
pub trait NewWaiter: Waiter + Sized + 'static {
    /// A fresh, unsignalled waiter for a thread further back in line.
    fn new_waiter() -> Self;
    /// A fresh waiter for the thread first in line, which may spin a little before it
    /// sleeps (see [`Strategy::first_waiter`]). The default is [`new_waiter`](Self::new_waiter).
    fn new_first_waiter() -> Self {
        Self::new_waiter()
    }
}

/// The adaptive lock's waiter with default parameters: yields for up to 20 µs, then sleeps
/// on a futex; first in line, it spins 2 µs first (never on one CPU).
impl NewWaiter for AdaptiveWaiter {
    fn new_waiter() -> Self {
        AdaptiveWaiter::new(AdaptiveParams::DEFAULT.with_wait_spin_ns(0))
    }

    fn new_first_waiter() -> Self {
        AdaptiveWaiter::new(AdaptiveParams::DEFAULT)
    }
}

/// The semaphore lock's waiter: sleeps on a futex at once.
impl NewWaiter for SemWaiter {
    fn new_waiter() -> Self {
        SemWaiter(Semaphore::new(0))
    }
}

/// Plan 9's old lock's waiter with default parameters: polls, yields, then sleeps 1 ms at a
/// time.
impl NewWaiter for SpinWaiter {
    fn new_waiter() -> Self {
        SpinWaiter::new(SpinParams::DEFAULT)
    }
}

/// Any [`lock_api::RawMutex`] as a [`Strategy`], waiting with `W` (by default the adaptive
/// lock's waiter), so that another crate's lock can guard our channels beside ours:
/// `Chan<T, Raw<parking_lot::RawMutex>>`.
///
/// Only the lock differs from a strategy of ours with the same waiter, which is what a
/// comparison wants. Its name is `raw`; register it under a name of its own to pick it by
/// name (`locks::register_as::<Raw<parking_lot::RawMutex>>("parking_lot")`, as `chantest`
/// does for its `parking_lot` lane).
///
/// The mutex's guards must be `Send` (`GuardMarker = GuardSend`): a [`Strategy`] may be
/// unlocked on another thread than the one that locked it. (parking_lot's `RawMutex` is, with
/// its `send_guard` feature; std's `Mutex` has no raw form, and [`StdLock`](crate::StdLock)
/// wraps it.)
///
/// ```
/// use locks::{Mutex, Raw, SemWaiter, Strategy};
///
/// // A mutex of this crate, standing in for another crate's `RawMutex`.
/// type Borrowed = Raw<locks::Adaptive, SemWaiter>;
/// let lock = Borrowed::new();
/// Strategy::lock(&lock);
/// assert!(Strategy::is_locked(&lock));
/// unsafe { Strategy::unlock(&lock) }; // SAFETY: locked just above
///
/// // It is a `RawMutex` again, so a plain mutex too.
/// let m: Mutex<Borrowed, u32> = Mutex::new(1);
/// *m.lock() += 1;
/// ```
pub struct Raw<R, W = AdaptiveWaiter> {
    raw: R,
    /// `fn() -> W`: a `Raw` holds no waiter, it makes them.
    wait: PhantomData<fn() -> W>,
}

impl<R: RawMutex, W> Raw<R, W> {
    /// An unlocked lock: `R::INIT`.
    pub const fn new() -> Self {
        Raw::from_raw(R::INIT)
    }

    /// The given mutex (unlocked) as a strategy.
    pub const fn from_raw(raw: R) -> Self {
        Raw {
            raw,
            wait: PhantomData,
        }
    }
}

impl<R: RawMutex, W> Default for Raw<R, W> {
    fn default() -> Self {
        Raw::new()
    }
}

impl<R: RawMutex, W> fmt::Debug for Raw<R, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Raw")
            .field("mutex", &std::any::type_name::<R>())
            .field("waiter", &std::any::type_name::<W>())
            .field("locked", &self.raw.is_locked())
            .finish()
    }
}

/// Aborts the process if dropped: armed around a call that must not unwind.
pub(crate) struct AbortOnUnwind(pub(crate) &'static str);

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!(
            "locks: {} unwound; a lock that cannot be released wedges every channel it \
             guards, so the process stops",
            self.0
        );
        std::process::abort();
    }
}

// SAFETY: mutual exclusion with happens-before from unlock to the next acquisition is what
// `lock_api::RawMutex` (an unsafe trait) promises: `lock_api::Mutex` hands out `&mut T` on
// it alone. `GuardSend` says it may be unlocked on any thread, as a `Strategy` may be. A
// `RawMutex::unlock` may unwind, which `Strategy::unlock` must not: it aborts instead. The
// waiter is `W`'s, whose own unsafe impl carries the `Waiter` contract.
unsafe impl<R, W> Strategy for Raw<R, W>
where
    R: RawMutex<GuardMarker = GuardSend> + Send + Sync + 'static,
    W: NewWaiter,
{
    type Params = NoParams;
    type Waiter = W;
    const NAME: &'static str = "raw";

    fn with_params(_: NoParams) -> Self {
        Raw::new()
    }

    fn params(&self) -> NoParams {
        NoParams
    }

    fn waiter(&self) -> W {
        W::new_waiter()
    }

    fn first_waiter(&self) -> W {
        W::new_first_waiter()
    }

    #[inline]
    fn lock(&self) {
        self.raw.lock()
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.raw.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        let bomb = AbortOnUnwind("a lock_api::RawMutex's unlock");
        // SAFETY: our caller holds the lock, taken through `self.raw`.
        unsafe { self.raw.unlock() };
        std::mem::forget(bomb);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// The name it was registered under (`parking_lot`), else `raw`.
    fn fmt_name(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::registry::name_of::<Self>().unwrap_or(Self::NAME))
    }
}

// SAFETY: forwards to the `Strategy` impl above, whose contract is mutual exclusion; its
// guards are `Send` because `R`'s are.
unsafe impl<R, W> RawMutex for Raw<R, W>
where
    R: RawMutex<GuardMarker = GuardSend> + Send + Sync + 'static,
    W: NewWaiter,
{
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Raw::new();
    type GuardMarker = GuardSend;

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
