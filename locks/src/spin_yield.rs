//! Plan 9's old lock: test-and-set, and on failure give the CPU away and try again.
//!
//! Plan 9 (`libc/port/lock.c`, before 2013) tried the `XCHG` once, then 1000 times with a
//! `sleep(0)` (a yield) between tries, then slept 100 ms between tries, and finally 1 s. It
//! never spins on PAUSE and never sleeps in the kernel waiting for the holder: the waiter keeps
//! polling. We keep the 1000 yields and the polling, but fall back to 1 ms sleeps rather than
//! 100 ms: a 100 ms stall would make any benchmark measure the timer, not the lock. Both numbers
//! are parameters (`spin:yields=1000:sleep_us=1000`).
//!
//! Its strength is the uncontended and lightly contended case: no system call ever, and a
//! yield is cheap when there is nothing else to run. Its weakness is the seed's point: when
//! threads outnumber CPUs, a holder that is preempted leaves every waiter yielding in a storm.

use crate::stats::count;
use crate::strategy::{parse_num, Params, Strategy, Waiter};
use crate::sync::{self, AtomicU32, Ordering::*};
use std::fmt;
#[cfg(not(loom))]
use std::time::Duration;
use std::time::Instant;

/// Tuning of [`SpinYield`] and its waiter.
///
/// `#[non_exhaustive]`: start from [`DEFAULT`](Self::DEFAULT) and change what you need with
/// the `with_*` methods (or by assigning a field), so that a new knob is not a breaking change.
///
/// ```
/// let p = locks::SpinParams::DEFAULT.with_yields(10);
/// assert_eq!(p.to_string(), ":yields=10");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpinParams {
    /// Failed attempts answered with `sched_yield` before falling back to sleeping (Plan 9: 1000).
    pub yields: u32,
    /// The sleep between attempts after that, in microseconds (Plan 9: 100 000, then 1 000 000).
    pub sleep_us: u32,
}

impl SpinParams {
    /// The defaults: 1000 yields, then 1 ms sleeps.
    pub const DEFAULT: SpinParams = SpinParams {
        yields: 1000,
        sleep_us: 1000,
    };

    /// With [`yields`](Self::yields) set.
    pub const fn with_yields(mut self, yields: u32) -> Self {
        self.yields = yields;
        self
    }

    /// With [`sleep_us`](Self::sleep_us) set.
    pub const fn with_sleep_us(mut self, us: u32) -> Self {
        self.sleep_us = us;
        self
    }
}

impl Default for SpinParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for SpinParams {
    /// Only the parameters that differ from the defaults, each as `:key=value`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.yields != Self::DEFAULT.yields {
            write!(f, ":yields={}", self.yields)?;
        }
        if self.sleep_us != Self::DEFAULT.sleep_us {
            write!(f, ":sleep_us={}", self.sleep_us)?;
        }
        Ok(())
    }
}

impl Params for SpinParams {
    const KEYS: &'static [&'static str] = &["yields", "sleep_us"];
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "yields" => self.yields = parse_num(key, value, u32::MAX as u64)? as u32,
            "sleep_us" => self.sleep_us = parse_num(key, value, 1_000_000)? as u32,
            _ => {
                return Err(format!(
                    "unknown parameter `{key}` for spin (valid: yields, sleep_us)"
                ))
            }
        }
        Ok(())
    }
}

/// Polls `ready` the Plan 9 way: yield up to `yields` times, then sleep between polls.
/// Gives up (returning `false`) once `deadline` has passed. `word` is what `ready` looks at,
/// and `busy` its value while not ready.
#[inline]
fn poll(
    params: SpinParams,
    deadline: Option<Instant>,
    word: &AtomicU32,
    busy: u32,
    mut ready: impl FnMut() -> bool,
) -> bool {
    let mut tries = 0u32;
    loop {
        if ready() {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        if tries < params.yields && tries < MAX_YIELDS {
            tries += 1;
            count!(yields);
            sync::yield_now();
        } else {
            count!(sleeps);
            nap(params, word, busy);
        }
    }
}

/// Loom explores a yielding thread running forever; two yields cover the path.
const MAX_YIELDS: u32 = if cfg!(loom) { 2 } else { u32::MAX };

#[cfg(not(loom))]
fn nap(params: SpinParams, _word: &AtomicU32, _busy: u32) {
    std::thread::sleep(Duration::from_micros(params.sleep_us as u64));
}

/// Loom explores a yielding thread running on forever, so an unbounded poll never finishes
/// a model. There the "sleep" phase waits for the word to change instead, which is what a
/// real sleep-and-poll amounts to once the sleep has passed; the stores that end a wait
/// ([`unpoll`]) wake it.
#[cfg(loom)]
fn nap(_params: SpinParams, word: &AtomicU32, busy: u32) {
    crate::futex::wait(word, busy);
}

/// Called after every store that may end a [`poll`]; a real poller needs no wake-up.
#[inline]
fn unpoll(_word: *const AtomicU32) {
    #[cfg(loom)]
    crate::futex::wake_one(_word);
}

/// Test-and-set, then yield: Plan 9's lock before 2013.
///
/// ```
/// let m = locks::Mutex::<locks::SpinYield, _>::new(Vec::new());
/// m.lock().push(1);
/// assert_eq!(*m.lock(), [1]);
/// ```
pub struct SpinYield {
    /// 1 while held.
    locked: AtomicU32,
    params: SpinParams,
}

impl fmt::Debug for SpinYield {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinYield")
            .field("locked", &Strategy::is_locked(self))
            .field("params", &self.params)
            .finish()
    }
}

impl SpinYield {
    /// An unlocked lock with the given tuning.
    #[cfg(not(loom))]
    pub const fn new(params: SpinParams) -> Self {
        SpinYield {
            locked: AtomicU32::new(0),
            params,
        }
    }

    /// The table's constructor (`crate::strategies!`).
    #[cfg(not(loom))]
    pub(crate) const fn from_params(params: SpinParams) -> Self {
        Self::new(params)
    }

    /// An unlocked lock with the given tuning.
    #[cfg(loom)]
    pub fn new(params: SpinParams) -> Self {
        SpinYield {
            locked: AtomicU32::new(0),
            params,
        }
    }

    #[inline]
    fn try_acquire(&self) -> bool {
        // Plan 9's test-and-set was an XCHG; a compare-and-swap is the same locked instruction
        // on x86 but does not write when it fails (loom also models it faithfully).
        // Acquire: what the previous holder wrote before its Release store is visible to us.
        self.locked.compare_exchange(0, 1, Acquire, Relaxed).is_ok()
    }

    #[cold]
    fn lock_contended(&self) {
        self.lock_contended_until(None);
    }

    /// `false` if `deadline` passed before the lock was free.
    #[cold]
    fn lock_contended_until(&self, deadline: Option<Instant>) -> bool {
        count!(contended);
        // Test before test-and-set: polling with a plain load keeps the cache line shared
        // instead of bouncing it with writes while the holder works.
        poll(self.params, deadline, &self.locked, 1, || {
            self.locked.load(Relaxed) == 0 && self.try_acquire()
        })
    }

    /// Takes the lock unless `deadline` passes first; the engine of `RawMutexTimed`.
    #[cfg(not(loom))]
    pub(crate) fn try_lock_until(&self, deadline: Instant) -> bool {
        let ok = self.try_acquire() || self.lock_contended_until(Some(deadline));
        if ok {
            count!(acquisitions);
        }
        ok
    }
}

#[cfg(not(loom))]
raw_mutex_timed!(SpinYield);

// SAFETY: `locked` is taken only by a compare-and-swap from 0 to 1, and released by the holder alone;
// the Acquire CAS pairs with the Release store of the previous unlock.
unsafe impl Strategy for SpinYield {
    type Params = SpinParams;
    type Waiter = SpinWaiter;
    const NAME: &'static str = "spin";

    fn with_params(params: SpinParams) -> Self {
        SpinYield::new(params)
    }

    fn params(&self) -> SpinParams {
        self.params
    }

    fn waiter(&self) -> SpinWaiter {
        SpinWaiter::new(self.params)
    }

    #[inline]
    fn lock(&self) {
        if !self.try_acquire() {
            self.lock_contended();
        }
        count!(acquisitions);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let ok = self.try_acquire();
        if ok {
            count!(acquisitions);
        }
        ok
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.locked.store(0, Release);
        unpoll(&self.locked);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(Relaxed) != 0
    }
}

/// The spin-and-yield way to wait for an event: poll a flag, yielding, then sleeping.
/// Signalling is a single store; no system call on either side, ever.
pub struct SpinWaiter {
    set: AtomicU32,
    params: SpinParams,
}

impl fmt::Debug for SpinWaiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpinWaiter")
            .field("signalled", &(self.set.load(Relaxed) == 1))
            .field("params", &self.params)
            .finish()
    }
}

impl SpinWaiter {
    /// An unsignalled waiter.
    pub fn new(params: SpinParams) -> Self {
        SpinWaiter {
            set: AtomicU32::new(0),
            params,
        }
    }
}

// SAFETY: `signal` publishes with one Release store or RMW of the waiter's word, which `wait`,
// `wait_checked`, `wait_until` and `is_signalled` read with Acquire before reporting a
// signal; afterwards it uses only the word's address (a futex wake, or nothing). It never
// waits.
unsafe impl Waiter for SpinWaiter {
    fn wait(&self) {
        self.wait_checked();
    }

    fn wait_checked(&self) -> bool {
        // `poll` without a deadline returns only once `is_signalled` has said so.
        poll(self.params, None, &self.set, 0, || self.is_signalled())
    }

    fn wait_until(&self, deadline: Instant) -> bool {
        #[cfg(loom)]
        let _ = deadline;
        // Under loom time does not pass: look once, then time out, so that models explore
        // the timeout path.
        #[cfg(loom)]
        return self.is_signalled();
        #[cfg(not(loom))]
        poll(self.params, Some(deadline), &self.set, 0, || {
            self.is_signalled()
        })
    }

    #[inline]
    fn is_signalled(&self) -> bool {
        // Acquire: pairs with the Release in `signal`, so the waker's writes are visible.
        self.set.load(Acquire) == 1
    }

    unsafe fn signal(this: *const Self) {
        // SAFETY: the caller guarantees `this` is live; this store is our only touch of it
        // (`unpoll` uses the address alone, and only under loom).
        let set = unsafe { &raw const (*this).set };
        // SAFETY: as above: live until this store lands.
        unsafe { (*set).store(1, Release) };
        unpoll(set);
    }
}
