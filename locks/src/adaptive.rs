//! Spin briefly, then sleep on a futex: the strategy of the Linux adaptive semaphore in seed
//! 003, glibc's adaptive mutex, Go's runtime lock, parking_lot and Rust's std.
//!
//! The lock is Drepper's three-state futex mutex (0 free, 1 held, 2 held with sleepers), as in
//! std: a contended locker first watches the word with relaxed loads and a PAUSE hint, but only
//! while the holder has no sleepers queued (state 1) and only for a budget of *time*
//! ([`AdaptiveParams::spin_ns`]); then it marks the word 2 and sleeps. Unlock wakes one sleeper
//! only if the word said 2. When the process may run on a single CPU it does not spin at all:
//! the holder cannot make progress while we burn the only CPU.

use crate::futex;
use crate::spin::{worth_spinning, Budget};
use crate::stats::count;
use crate::strategy::{parse_num, Params, Strategy, Waiter};
use crate::sync::{spin_hint, AtomicU32, Ordering::*};
use std::fmt;
use std::time::Instant;

/// Tuning of [`Adaptive`] and its waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveParams {
    /// How long to spin before sleeping, in nanoseconds; 0 never spins.
    pub spin_ns: u32,
}

impl AdaptiveParams {
    /// The defaults.
    ///
    /// A futex sleep and wake costs about 14 us on our 2-vCPU machine and a cache-line
    /// hand-off about 65 ns, so a budget of a few microseconds covers any critical section
    /// that is worth spinning for while staying well below the cost of the sleep it avoids.
    pub const DEFAULT: AdaptiveParams = AdaptiveParams { spin_ns: 4_000 };
}

impl Default for AdaptiveParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for AdaptiveParams {
    /// Only the parameters that differ from the defaults, each as `:key=value`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.spin_ns != Self::DEFAULT.spin_ns {
            write!(f, ":spin_ns={}", self.spin_ns)?;
        }
        Ok(())
    }
}

impl Params for AdaptiveParams {
    const KEYS: &'static [&'static str] = &["spin_ns"];
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "spin_ns" => self.spin_ns = parse_num(key, value, 1_000_000_000)? as u32,
            _ => {
                return Err(format!(
                    "unknown parameter `{key}` for adaptive (valid: spin_ns)"
                ))
            }
        }
        Ok(())
    }
}

/// Spins on `word` while it holds `busy`, within the budget; returns the last value seen.
#[inline]
fn spin_while(word: &AtomicU32, busy: u32, spin_ns: u32) -> u32 {
    let s = word.load(Relaxed);
    if s != busy || spin_ns == 0 || !worth_spinning() {
        return s;
    }
    let budget = Budget::start(spin_ns);
    let mut spins = 0u32;
    let s = loop {
        let s = word.load(Relaxed);
        if s != busy || budget.spent() {
            break s;
        }
        spin_hint();
        spins += 1;
    };
    count!(spins, spins);
    s
}

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// Spin for a bounded time, then block on a futex.
///
/// ```
/// use locks::{Adaptive, AdaptiveParams, Mutex};
/// let m = Mutex::<Adaptive, _>::new(0);
/// *m.lock() += 1;
/// // A lock that never spins, for experiments:
/// let m = Mutex::from_raw(Adaptive::new(AdaptiveParams { spin_ns: 0 }), 0);
/// assert_eq!(*m.lock(), 0);
/// ```
pub struct Adaptive {
    state: AtomicU32,
    params: AdaptiveParams,
}

impl Adaptive {
    /// An unlocked lock with the given tuning.
    #[cfg(not(loom))]
    pub const fn new(params: AdaptiveParams) -> Self {
        Adaptive {
            state: AtomicU32::new(UNLOCKED),
            params,
        }
    }

    /// An unlocked lock with the given tuning.
    #[cfg(loom)]
    pub fn new(params: AdaptiveParams) -> Self {
        Adaptive {
            state: AtomicU32::new(UNLOCKED),
            params,
        }
    }

    #[cold]
    fn lock_contended(&self) {
        count!(contended);
        let mut s = spin_while(&self.state, LOCKED, self.params.spin_ns);
        if s == UNLOCKED {
            match self
                .state
                .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            {
                Ok(_) => return,
                Err(now) => s = now,
            }
        }
        loop {
            // Having waited, we can no longer know whether others sleep too, so take the lock
            // as "contended": the cost is at most one needless wake at our unlock.
            if s != CONTENDED && self.state.swap(CONTENDED, Acquire) == UNLOCKED {
                return;
            }
            futex::wait(&self.state, CONTENDED);
            s = spin_while(&self.state, LOCKED, self.params.spin_ns);
        }
    }
}

// SAFETY: ownership is the transition of `state` away from 0, by a compare-exchange or swap
// with Acquire; unlock is a swap to 0 with Release, so each holder's writes happen before the
// next holder's acquisition.
unsafe impl Strategy for Adaptive {
    type Params = AdaptiveParams;
    type Waiter = AdaptiveWaiter;
    const NAME: &'static str = "adaptive";

    fn with_params(params: AdaptiveParams) -> Self {
        Adaptive::new(params)
    }

    fn params(&self) -> AdaptiveParams {
        self.params
    }

    fn waiter(&self) -> AdaptiveWaiter {
        AdaptiveWaiter::new(self.params)
    }

    #[inline]
    fn lock(&self) {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        count!(acquisitions);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let ok = self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .is_ok();
        if ok {
            count!(acquisitions);
        }
        ok
    }

    #[inline]
    unsafe fn unlock(&self) {
        if self.state.swap(UNLOCKED, Release) == CONTENDED {
            futex::wake_one(&self.state);
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Relaxed) != UNLOCKED
    }
}

const EMPTY: u32 = 0;
const SET: u32 = 1;
const PARKED: u32 = 2;

/// The adaptive way to wait for an event: spin for the budget, then sleep on a futex.
/// Signalling costs a system call only if the waiter had gone to sleep.
pub struct AdaptiveWaiter {
    state: AtomicU32,
    params: AdaptiveParams,
}

impl AdaptiveWaiter {
    /// An unsignalled waiter.
    pub fn new(params: AdaptiveParams) -> Self {
        AdaptiveWaiter {
            state: AtomicU32::new(EMPTY),
            params,
        }
    }

    /// Sleeps until signalled or, given a deadline, until it passes; `true` if signalled.
    fn park(&self, deadline: Option<Instant>) -> bool {
        if spin_while(&self.state, EMPTY, self.params.spin_ns) == SET {
            return self.is_signalled();
        }
        loop {
            // Acquire on both outcomes: seeing SET must make the signaller's writes visible.
            if let Err(SET) = self.state.compare_exchange(EMPTY, PARKED, Acquire, Acquire) {
                return true;
            }
            match deadline {
                None => futex::wait(&self.state, PARKED),
                #[cfg(not(loom))]
                Some(d) if Instant::now() < d => futex::wait_until(&self.state, PARKED, d),
                // Leave the word PARKED: a late signal then makes one harmless wake call.
                Some(_) => return self.is_signalled(),
            }
        }
    }
}

impl Waiter for AdaptiveWaiter {
    fn wait(&self) {
        self.park(None);
    }

    fn wait_until(&self, deadline: Instant) -> bool {
        self.park(Some(deadline))
    }

    #[inline]
    fn is_signalled(&self) -> bool {
        self.state.load(Acquire) == SET
    }

    unsafe fn signal(this: *const Self) {
        // SAFETY: the caller guarantees `this` is live; the swap is our last use of the
        // reference, after which the waiter may be gone and we use only its address.
        let state = unsafe { &(*this).state };
        if state.swap(SET, Release) == PARKED {
            futex::wake_one(state);
        }
    }
}
