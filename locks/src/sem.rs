//! Plan 9's 2013 semaphore lock, and the futex semaphore under it.
//!
//! The lock is a counter `key` in front of a semaphore: whoever moves `key` from 0 to 1 owns
//! the lock; everyone else sleeps on the semaphore, and an unlock that finds others counted in
//! `key` releases the semaphore once, handing the lock directly to one sleeper. There is no
//! spinning at all, so every contended hand-over is a sleep and a wake-up in the kernel: a lock
//! convoy. That is why erik quanstrom measured it 1.7x slower than the old lock with one
//! sender, and also why it stops the yield storm when threads outnumber CPUs.

use crate::futex;
use crate::stats::count;
use crate::strategy::{NoParams, Strategy, Waiter};
use crate::sync::{AtomicU32, Ordering::*};
use std::fmt;
use std::time::Instant;

/// Bits of the word that count free permits; the rest count sleepers.
const PERMIT_BITS: u32 = 16;
const PERMITS: u32 = (1 << PERMIT_BITS) - 1;
const SLEEPER: u32 = 1 << PERMIT_BITS;
/// The most sleepers the word counts. Linux allows about 4 million threads, so more can
/// come: they wait without being counted, polling every [`POLL`].
const MAX_SLEEPERS: u32 = u32::MAX >> PERMIT_BITS;
/// How often a sleeper beyond [`MAX_SLEEPERS`] looks for a permit.
const POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// A counting semaphore on one futex word.
///
/// The word holds the free permits (low 16 bits) and the number of threads that announced
/// they are going to sleep (high 16 bits), so that a release knows in the same atomic step
/// whether anyone needs waking, and touches the semaphore no more after that step (a waiter
/// built on it may be freed the moment the permit lands, so a second word read afterwards
/// would be a use after free). Hence the limits: at most [`MAX_PERMITS`](Self::MAX_PERMITS)
/// permits (a release beyond that panics before the word changes), and 65,535 counted
/// sleepers. Linux allows far more threads than that; the ones that find the count full
/// sleep uncounted, a millisecond at a time, and take a permit when they see one, so no
/// count ever wraps and no permit is lost, only the wake-up of those few is slower.
///
/// ```
/// let s = locks::Semaphore::new(1);
/// assert!(s.try_acquire());
/// assert!(!s.try_acquire());
/// s.release();
/// s.acquire();
/// ```
pub struct Semaphore {
    state: AtomicU32,
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Relaxed);
        f.debug_struct("Semaphore")
            .field("permits", &(s & PERMITS))
            .field("sleepers", &(s >> PERMIT_BITS))
            .finish()
    }
}

impl Semaphore {
    /// The most permits a semaphore can hold.
    pub const MAX_PERMITS: u32 = PERMITS;

    /// A semaphore holding `permits` permits.
    ///
    /// # Panics
    /// If `permits` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS).
    #[cfg(not(loom))]
    pub const fn new(permits: u32) -> Self {
        assert!(permits <= PERMITS, "too many permits for a Semaphore");
        Semaphore {
            state: AtomicU32::new(permits),
        }
    }

    /// A semaphore holding `permits` permits.
    #[cfg(loom)]
    pub fn new(permits: u32) -> Self {
        assert!(permits <= PERMITS, "too many permits for a Semaphore");
        Semaphore {
            state: AtomicU32::new(permits),
        }
    }

    /// The permits free now (racy).
    pub fn permits(&self) -> u32 {
        self.state.load(Relaxed) & PERMITS
    }

    /// Takes a permit if one is free.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        let mut s = self.state.load(Relaxed);
        while s & PERMITS != 0 {
            // Acquire: the releaser's writes before its release are visible to us.
            match self.state.compare_exchange_weak(s, s - 1, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Takes a permit, sleeping in the kernel until one is free.
    #[inline]
    pub fn acquire(&self) {
        if !self.try_acquire() {
            self.acquire_slow(None);
        }
    }

    /// Takes a permit, sleeping until one is free or `deadline` passes; `true` if taken.
    #[cfg(not(loom))]
    pub fn acquire_until(&self, deadline: Instant) -> bool {
        self.try_acquire() || self.acquire_slow(Some(deadline))
    }

    /// Under loom time does not pass: try once, then time out.
    #[cfg(loom)]
    pub fn acquire_until(&self, _deadline: std::time::Instant) -> bool {
        self.try_acquire()
    }

    #[cold]
    fn acquire_slow(&self, deadline: Option<Instant>) -> bool {
        // Either take a permit or register as a sleeper, in one atomic step. With the sleeper
        // count full, stay unregistered instead: releases will not wake us, so we poll.
        let mut s = self.state.load(Relaxed);
        let me = loop {
            let (next, took) = match s & PERMITS {
                0 if s >= MAX_SLEEPERS * SLEEPER => break 0,
                0 => (s + SLEEPER, false),
                _ => (s - 1, true),
            };
            match self.state.compare_exchange_weak(s, next, Acquire, Relaxed) {
                Ok(_) if took => return true,
                Ok(_) => {
                    s = next;
                    break SLEEPER;
                }
                Err(now) => s = now,
            }
        };
        loop {
            if s & PERMITS != 0 {
                // Take the permit and leave the sleepers (if we are one) in one step.
                match self
                    .state
                    .compare_exchange_weak(s, s - 1 - me, Acquire, Relaxed)
                {
                    Ok(_) => return true,
                    Err(now) => s = now,
                }
                continue;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                // Timed out: leave, unless a permit arrived after all (the word then differs
                // from `s`, and the loop takes it, so a wake-up meant for us is never lost).
                match self
                    .state
                    .compare_exchange_weak(s, s - me, Relaxed, Relaxed)
                {
                    Ok(_) => return false,
                    Err(now) => s = now,
                }
                continue;
            }
            // Sleeps only if the word still says "no permits" as we last saw it: any release
            // in between changed it, so no wake-up can be lost. An unregistered poller sleeps
            // for at most a millisecond at a time.
            let nap = match me {
                0 => Some(Instant::now() + POLL),
                _ => None,
            };
            match deadline.into_iter().chain(nap).min() {
                None => futex::wait(&self.state, s),
                #[cfg(not(loom))]
                Some(d) => futex::wait_until(&self.state, s, d),
                #[cfg(loom)]
                Some(_) => futex::wait(&self.state, s),
            }
            s = self.state.load(Relaxed);
        }
    }

    /// Returns a permit, waking one sleeper if there is any.
    ///
    /// # Panics
    /// If the semaphore already holds [`MAX_PERMITS`](Self::MAX_PERMITS).
    #[inline]
    pub fn release(&self) {
        // SAFETY: `self` is a live reference.
        unsafe { Self::release_raw(self) }
    }

    /// `release` through a pointer, for waiters that may be freed as soon as the permit lands.
    ///
    /// # Safety
    /// `this` must point to a live semaphore until the permit is published.
    unsafe fn release_raw(this: *const Self) {
        // A raw pointer, not a reference: once the compare-exchange has published the permit
        // the waiter may return and free the word, and a reference that outlives it would be
        // dangling when the wake below uses it (Miri flagged it, in a timed condvar wait).
        // SAFETY: `this` is live (the caller's contract); taking a field's address reads nothing.
        let state = unsafe { &raw const (*this).state };
        // SAFETY: live until our successful compare-exchange publishes the permit.
        let mut s = unsafe { (*state).load(Relaxed) };
        loop {
            assert!(s & PERMITS != PERMITS, "Semaphore permit count overflow");
            // Release: our writes before the release become visible to the acquirer.
            // SAFETY: as above; the word is live until this succeeds.
            match unsafe { (*state).compare_exchange_weak(s, s + 1, Release, Relaxed) } {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        if s >= SLEEPER {
            // Only the address is used: a wake on a freed word wakes nobody, or a stranger
            // that rechecks its own word (spurious wake-ups are in every futex user's contract).
            futex::wake_one(state);
        }
    }
}

/// Plan 9's 2013 lock: a counter plus a semaphore, no spinning.
///
/// ```
/// let m = locks::Mutex::<locks::SemLock, _>::new(5);
/// *m.lock() += 1;
/// assert_eq!(m.into_inner(), 6);
/// ```
pub struct SemLock {
    /// The holder plus everyone queued behind it.
    key: AtomicU32,
    sem: Semaphore,
}

impl fmt::Debug for SemLock {
    /// `key` counts the holder and everyone queued behind it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemLock")
            .field("key", &self.key.load(Relaxed))
            .field("sem", &self.sem)
            .finish()
    }
}

impl SemLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SemLock {
            key: AtomicU32::new(0),
            sem: Semaphore::new(0),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        SemLock {
            key: AtomicU32::new(0),
            sem: Semaphore::new(0),
        }
    }
}

impl SemLock {
    /// The table's constructor (`crate::strategies!`): a semaphore lock has no parameters.
    #[cfg(not(loom))]
    pub(crate) const fn from_params(_: NoParams) -> Self {
        Self::new()
    }
}

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

impl Default for SemLock {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the 0 -> 1 transition of `key` admits one owner; any later arrival increments `key`
// and waits for a semaphore permit, of which an unlock creates exactly one when it leaves
// others counted in `key`. Orderings: Acquire on taking (fast path on `key`, slow path inside
// the semaphore), Release on giving (on `key`, and inside `Semaphore::release`).
unsafe impl Strategy for SemLock {
    type Params = NoParams;
    type Waiter = SemWaiter;
    const NAME: &'static str = "sem";

    fn with_params(_: NoParams) -> Self {
        SemLock::new()
    }

    fn params(&self) -> NoParams {
        NoParams
    }

    fn waiter(&self) -> SemWaiter {
        SemWaiter(Semaphore::new(0))
    }

    #[inline]
    fn lock(&self) {
        if self.key.fetch_add(1, Acquire) != 0 {
            count!(contended);
            self.sem.acquire();
        }
        count!(acquisitions);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let ok = self.key.compare_exchange(0, 1, Acquire, Relaxed).is_ok();
        if ok {
            count!(acquisitions);
        }
        ok
    }

    #[inline]
    unsafe fn unlock(&self) {
        if self.key.fetch_sub(1, Release) != 1 {
            // Someone is queued: hand the lock straight to one of them.
            self.sem.release();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.key.load(Relaxed) != 0
    }
}

/// The semaphore way to wait: sleep in the kernel at once; a zero-permit [`Semaphore`].
#[derive(Debug)]
pub struct SemWaiter(pub(crate) Semaphore);

// SAFETY: `signal` publishes with one Release store or RMW of the waiter's word, which `wait`,
// `wait_until` and `is_signalled` read with Acquire before reporting a signal; afterwards it
// uses only the word's address (a futex wake, or nothing). It never waits.
unsafe impl Waiter for SemWaiter {
    fn wait(&self) {
        self.0.acquire();
        // Leave the permit in place: the event stays signalled.
        // SAFETY: our own live semaphore; nobody else releases it again.
        unsafe { Semaphore::release_raw(&self.0) };
    }

    fn wait_until(&self, deadline: std::time::Instant) -> bool {
        if !self.0.acquire_until(deadline) {
            return false;
        }
        self.0.release();
        true
    }

    fn is_signalled(&self) -> bool {
        // Acquire: pairs with the Release of `signal`'s permit (the `Waiter` contract).
        self.0.state.load(Acquire) & PERMITS != 0
    }

    unsafe fn signal(this: *const Self) {
        // SAFETY: the caller guarantees `this` is live until the permit is published, which
        // is all `release_raw` needs.
        unsafe { Semaphore::release_raw(&raw const (*this).0) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// Pretends `n` threads already sleep on `sem`, as that many real threads would.
    fn with_sleepers(sem: &Semaphore, n: u32) {
        sem.state.store(n * SLEEPER, Relaxed);
    }

    #[test]
    fn the_65536th_sleeper_waits_uncounted_and_gets_its_permit() {
        // Counting this thread used to wrap the 16-bit sleeper field to 0: an overflow panic
        // in a debug build, and in a release build a release that woke nobody.
        let sem = Arc::new(Semaphore::new(0));
        with_sleepers(&sem, MAX_SLEEPERS);
        let t = {
            let sem = sem.clone();
            std::thread::spawn(move || sem.acquire())
        };
        std::thread::sleep(Duration::from_millis(5)); // most likely asleep by now
        sem.release();
        t.join().unwrap();
        assert_eq!(sem.state.load(Relaxed), MAX_SLEEPERS * SLEEPER);
    }

    #[test]
    fn an_uncounted_sleeper_times_out_leaving_the_word_as_it_was() {
        let sem = Semaphore::new(0);
        with_sleepers(&sem, MAX_SLEEPERS);
        assert!(!sem.acquire_until(Instant::now() + Duration::from_millis(3)));
        assert_eq!(sem.state.load(Relaxed), MAX_SLEEPERS * SLEEPER);
    }
}
