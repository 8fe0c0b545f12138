//! std's mutex as a strategy: [`StdLock`].
//!
//! std has no raw mutex: `std::sync::Mutex` unlocks only by dropping its guard, and the guard
//! borrows the mutex and must be dropped on the thread that locked it (it is not `Send`: on
//! some platforms std's mutex is a pthread mutex, which only its owner may unlock). So the
//! lock keeps the guard inside itself while it is held, with the mutex boxed so that the
//! guard's borrow outlives any move of the lock, and it checks the thread at unlock.

use crate::adaptive::AdaptiveWaiter;
use crate::raw::{AbortOnUnwind, NewWaiter};
use crate::strategy::{NoParams, Strategy};
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

/// `std::sync::Mutex<()>` as a [`Strategy`] (its name is `std`), waiting with `W` (by default
/// the adaptive lock's waiter), so that std's lock can guard our channels beside ours:
/// `Chan<T, StdLock>`. On Linux it is std's futex mutex: a compare-and-swap to lock, a swap
/// to unlock, a short spin and then a futex wait when contended.
///
/// Beside std's own operations it keeps its guard, a thread number and a flag for
/// [`is_locked`](Strategy::is_locked): a few nanoseconds per operation.
///
/// It must be unlocked on the thread that locked it, as std's guard must be dropped there
/// (`chan` always does). Unlocked on another thread it aborts the process rather than
/// reach undefined behaviour; dropped locked on another thread, it leaks its mutex.
///
/// It has no `lock_api::RawMutex` impl: that needs a `const INIT`, and the box cannot be one.
///
/// ```
/// use locks::{StdLock, Strategy};
/// let lock: StdLock = StdLock::with_params(locks::NoParams);
/// assert!(lock.try_lock());
/// assert!(!lock.try_lock());
/// unsafe { lock.unlock() }; // SAFETY: locked just above
/// lock.lock();
/// unsafe { lock.unlock() }; // SAFETY: locked just above
/// ```
pub struct StdLock<W = AdaptiveWaiter> {
    /// The guard, while the lock is held (`locked`). Only the holder touches it: written
    /// after locking, taken before unlocking. `MaybeUninit`, not `Option`: a reference inside
    /// an `Option` field would be asserted live by every call that takes the lock by value,
    /// `drop(lock)` included, whose `Drop` frees what it points to.
    guard: UnsafeCell<MaybeUninit<MutexGuard<'static, ()>>>,
    /// The thread that took the guard, while the lock is held; only the holder touches it.
    owner: UnsafeCell<u64>,
    /// The boxed mutex (`Box::leak`): the guard borrows it, so it is freed only in `drop`,
    /// once no guard is left.
    mutex: NonNull<Mutex<()>>,
    /// Whether the lock is held (so whether `guard` holds one): set by the holder after
    /// locking, cleared by it before unlocking.
    locked: AtomicBool,
    wait: PhantomData<fn() -> W>,
}

/// This thread's number: unique for the life of the process (an address of a thread-local
/// could be reused by a thread started after another ended).
fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: Cell<u64> = const { Cell::new(0) };
    }
    NUMBER.with(|n| match n.get() {
        0 => {
            let mine = NEXT.fetch_add(1, Relaxed);
            n.set(mine);
            mine
        }
        mine => mine,
    })
}

impl<W> StdLock<W> {
    /// An unlocked lock.
    pub fn new() -> Self {
        StdLock {
            guard: UnsafeCell::new(MaybeUninit::uninit()),
            owner: UnsafeCell::new(0),
            mutex: NonNull::from(Box::leak(Box::new(Mutex::new(())))),
            locked: AtomicBool::new(false),
            wait: PhantomData,
        }
    }

    /// Keeps `guard` as the holder's.
    fn hold(&self, guard: MutexGuard<'static, ()>) {
        // SAFETY: we hold std's mutex, so no other thread touches `guard` or `owner` until we
        // unlock (every access is by a holder, and std's mutex orders the holders); the
        // previous holder took its guard out, so nothing is overwritten.
        unsafe {
            (*self.guard.get()).write(guard);
            *self.owner.get() = thread_number();
        }
        self.locked.store(true, Relaxed);
    }

    /// The boxed mutex, borrowed for as long as a guard may need it.
    fn mutex(&self) -> &'static Mutex<()> {
        // SAFETY: the box lives until `drop`, which frees it only when no guard is left (or
        // leaks it); a guard is the only thing that keeps this reference, and it lives in
        // `guard`.
        unsafe { self.mutex.as_ref() }
    }
}

impl<W> Default for StdLock<W> {
    fn default() -> Self {
        StdLock::new()
    }
}

impl<W> Drop for StdLock<W> {
    fn drop(&mut self) {
        if *self.locked.get_mut() {
            // Dropping the guard here would unlock on another thread than the locker's:
            // leave the mutex locked and leak it.
            if *self.owner.get_mut() != thread_number() {
                return;
            }
            // SAFETY: `locked` says the guard is there; `&mut self` makes it ours alone.
            drop(unsafe { self.guard.get_mut().assume_init_read() });
        }
        // SAFETY: made by `Box::leak` in `new`; the guard is gone, and nothing else refers to
        // the mutex.
        drop(unsafe { Box::from_raw(self.mutex.as_ptr()) });
    }
}

impl<W> fmt::Debug for StdLock<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdLock")
            .field("locked", &self.locked.load(Relaxed))
            .finish()
    }
}

// SAFETY: `guard` and `owner` are touched only by the holder of std's mutex, and the guard is
// dropped only on the thread that locked (checked at unlock and in drop), so moving the lock
// to another thread moves a guard that is never released there. The mutex itself is `Send`
// and `Sync`.
unsafe impl<W> Send for StdLock<W> {}
// SAFETY: as for `Send`: shared, every access to `guard` and `owner` is ordered by std's
// mutex.
unsafe impl<W> Sync for StdLock<W> {}

// SAFETY: std's mutex provides mutual exclusion, with happens-before from an unlock (the
// guard's drop) to the next lock. Unlock never unwinds: std's guard drop does not, and an
// unlock on the wrong thread aborts. The waiter is `W`'s, whose own unsafe impl carries the
// `Waiter` contract.
unsafe impl<W: NewWaiter> Strategy for StdLock<W> {
    type Params = NoParams;
    type Waiter = W;
    const NAME: &'static str = "std";

    fn with_params(_: NoParams) -> Self {
        StdLock::new()
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
        // A holder that panicked poisons the mutex; the lock guards nothing of its own, so
        // poison means nothing here.
        let guard = self.mutex().lock().unwrap_or_else(PoisonError::into_inner);
        self.hold(guard);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let guard = match self.mutex().try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        self.hold(guard);
        true
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: our caller holds the lock, so `owner` is ours alone (see `hold`).
        let mine = self.locked.load(Relaxed) && unsafe { *self.owner.get() } == thread_number();
        match mine {
            true => {
                self.locked.store(false, Relaxed);
                // SAFETY: held by us (`locked`), so the guard is there and ours alone; it is
                // taken out once, here, before std's mutex lets the next holder in.
                let guard = unsafe { (*self.guard.get()).assume_init_read() };
                let bomb = AbortOnUnwind("std's mutex guard drop");
                drop(guard);
                std::mem::forget(bomb);
            }
            false => {
                eprintln!(
                    "locks: a StdLock was unlocked on another thread than the one that \
                     locked it (or not locked at all); std's mutex cannot be released \
                     there, so the process stops"
                );
                std::process::abort();
            }
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(Relaxed)
    }
}
