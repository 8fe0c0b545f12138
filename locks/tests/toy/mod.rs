//! A strategy written outside the crate, to show that `Condvar` and `RwLock` are built on the
//! `Strategy` trait alone: a test-and-set lock that yields, and a waiter that polls a flag.

use locks::{NoParams, Strategy, Waiter};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::Instant;

#[derive(Debug, Default)]
pub(crate) struct Toy(AtomicBool);

// SAFETY: the flag is taken by a swap with Acquire and given back with a Release store.
unsafe impl Strategy for Toy {
    type Params = NoParams;
    type Waiter = ToyWaiter;
    const NAME: &'static str = "toy";

    fn with_params(_: NoParams) -> Self {
        Toy::default()
    }
    fn params(&self) -> NoParams {
        NoParams
    }
    fn waiter(&self) -> ToyWaiter {
        ToyWaiter(AtomicBool::new(false))
    }
    fn lock(&self) {
        while !self.try_lock() {
            std::thread::yield_now();
        }
    }
    fn try_lock(&self) -> bool {
        !self.0.swap(true, Acquire)
    }
    unsafe fn unlock(&self) {
        self.0.store(false, Release);
    }
    fn is_locked(&self) -> bool {
        self.0.load(Relaxed)
    }
}

// SAFETY: as `Strategy`'s, which it forwards to.
unsafe impl locks::lock_api::RawMutex for Toy {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Toy = Toy(AtomicBool::new(false));
    type GuardMarker = locks::lock_api::GuardSend;
    fn lock(&self) {
        Strategy::lock(self)
    }
    fn try_lock(&self) -> bool {
        Strategy::try_lock(self)
    }
    unsafe fn unlock(&self) {
        // SAFETY: our caller holds the lock.
        unsafe { Strategy::unlock(self) }
    }
}

#[derive(Debug)]
pub(crate) struct ToyWaiter(AtomicBool);

// SAFETY: `signal` is one Release store, read with Acquire; it never waits.
unsafe impl Waiter for ToyWaiter {
    fn wait(&self) {
        while !self.is_signalled() {
            std::thread::yield_now();
        }
    }
    fn wait_until(&self, deadline: Instant) -> bool {
        while !self.is_signalled() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }
    fn is_signalled(&self) -> bool {
        self.0.load(Acquire)
    }
    unsafe fn signal(this: *const Self) {
        // SAFETY: live until this store, our only touch.
        unsafe { (*this).0.store(true, Release) }
    }
}
