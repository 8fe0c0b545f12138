//! Bounded busy-waiting: a budget in nanoseconds, checked against the time-stamp counter.
//!
//! A budget of PAUSE instructions would be meaningless across machines: one PAUSE takes about
//! 10 cycles on older Intel parts and about 140 on Skylake and later. So the adaptive strategy
//! spins for a span of *time*, read from the TSC where there is one (a few cycles a read) and
//! from the monotonic clock elsewhere.
//!
//! Spinning only helps when the thread being waited for can run at the same time, so a budget
//! is worth nothing on a process confined to one CPU; [`worth_spinning`] says which case holds.

#[cfg(not(loom))]
mod imp {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    use std::sync::atomic::AtomicU32;
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    use std::time::Instant;

    /// TSC ticks per 1024 ns, measured once; 0 until then.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    static TICKS_PER_1024NS: AtomicU32 = AtomicU32::new(0);

    #[cfg(all(target_arch = "x86_64", not(miri)))]
    #[inline]
    fn ticks() -> u64 {
        // SAFETY: RDTSC has no preconditions on x86_64. It is not serializing, which does not
        // matter for a budget that only has to be roughly right.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    #[cfg(all(target_arch = "x86_64", not(miri)))]
    #[cold]
    fn calibrate() -> u32 {
        // 50 us against the monotonic clock: about 1 % error, paid once per process.
        let (t0, c0) = (Instant::now(), ticks());
        while t0.elapsed().as_nanos() < 50_000 {
            std::hint::spin_loop();
        }
        // In a VM the TSC read on another CPU may be behind the first: a reading that went
        // backwards gives a nonsense rate, so it is clamped rather than allowed to underflow.
        let (ns, c) = (t0.elapsed().as_nanos() as u64, ticks().saturating_sub(c0));
        let per = (c.saturating_mul(1024) / ns.max(1)).clamp(1, u32::MAX as u64) as u32;
        TICKS_PER_1024NS.store(per, Relaxed);
        per
    }

    /// A deadline `ns` nanoseconds from now, to test with [`Budget::spent`].
    #[derive(Clone, Copy)]
    pub(crate) struct Budget {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        end: u64,
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        end: Instant,
    }

    impl Budget {
        #[inline]
        pub(crate) fn start(ns: u32) -> Budget {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            {
                let per = match TICKS_PER_1024NS.load(Relaxed) {
                    0 => calibrate(),
                    per => per,
                };
                Budget {
                    end: ticks() + ((ns as u64 * per as u64) >> 10),
                }
            }
            #[cfg(not(all(target_arch = "x86_64", not(miri))))]
            Budget {
                end: Instant::now() + std::time::Duration::from_nanos(ns as u64),
            }
        }

        #[inline]
        pub(crate) fn spent(&self) -> bool {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            return ticks() >= self.end;
            #[cfg(not(all(target_arch = "x86_64", not(miri))))]
            return Instant::now() >= self.end;
        }
    }

    const UNKNOWN: u8 = 0;
    const ONE: u8 = 1;
    const MANY: u8 = 2;
    static CPUS: AtomicU8 = AtomicU8::new(UNKNOWN);

    /// Whether this process may run on more than one CPU. Read once (it follows
    /// `sched_setaffinity` and cgroup limits at that moment, so `taskset -c 0` is seen).
    #[inline]
    pub(crate) fn worth_spinning() -> bool {
        match CPUS.load(Relaxed) {
            UNKNOWN => count_cpus(),
            v => v == MANY,
        }
    }

    #[cold]
    #[inline(never)]
    fn count_cpus() -> bool {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let v = if n > 1 { MANY } else { ONE };
        CPUS.store(v, Relaxed);
        v == MANY
    }
}

/// Whether spinning has lately paid for this thread, and so how long its next spin may be.
///
/// A waiter's spin catches its event only if the thread that will signal it is running on
/// another CPU meanwhile. The scheduler decides that, and may keep two partners on one CPU for
/// a while; then every spin is time taken from the partner. So each thread keeps a short
/// record: a spin that caught its event restores the full budget, each one in a row that did
/// not halves it, and below [`MIN_SPIN_NS`] the thread stops spinning, except that every
/// [`PROBE_EVERY`]th wait tries the full budget again, to notice when spinning pays once more.
#[cfg(not(loom))]
pub(crate) struct SpinHistory;

/// Budgets shorter than this are not worth starting a spin for.
#[cfg(not(loom))]
const MIN_SPIN_NS: u32 = 100;
/// How often a thread that has stopped spinning tries again.
#[cfg(not(loom))]
const PROBE_EVERY: u32 = 32;

#[cfg(not(loom))]
std::thread_local! {
    /// Consecutive wasted spins (saturating at 31), and a count of waits for the probes.
    static SPIN_RECORD: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

#[cfg(not(loom))]
impl SpinHistory {
    /// The spin budget for this thread's next wait, out of `max_ns`.
    #[inline]
    pub(crate) fn budget(max_ns: u32) -> u32 {
        if max_ns == 0 {
            return 0;
        }
        SPIN_RECORD
            .try_with(|r| {
                let (wasted, waits) = r.get();
                r.set((wasted, waits.wrapping_add(1)));
                let ns = max_ns >> wasted;
                if ns >= MIN_SPIN_NS {
                    ns
                } else if waits % PROBE_EVERY == 0 {
                    max_ns
                } else {
                    0
                }
            })
            // Thread-local storage is gone while the thread exits: spin in full.
            .unwrap_or(max_ns)
    }

    /// Records whether a spin caught its event.
    #[inline]
    pub(crate) fn record(caught: bool) {
        let _ = SPIN_RECORD.try_with(|r| {
            let (wasted, waits) = r.get();
            r.set((if caught { 0 } else { (wasted + 1).min(31) }, waits));
        });
    }
}

/// Under loom every wait spins its full (two-step) budget: the history is a heuristic about
/// real schedulers, and a thread-local would be shared by loom's threads anyway.
#[cfg(loom)]
pub(crate) struct SpinHistory;

#[cfg(loom)]
impl SpinHistory {
    pub(crate) fn budget(max_ns: u32) -> u32 {
        max_ns
    }

    pub(crate) fn record(_caught: bool) {}
}

/// Under loom time does not pass and every spin is a scheduling point: a budget of two
/// iterations exercises both the "caught it while spinning" and the "gave up" paths.
#[cfg(loom)]
mod imp {
    pub(crate) struct Budget(std::cell::Cell<u32>);

    impl Budget {
        pub(crate) fn start(ns: u32) -> Budget {
            Budget(std::cell::Cell::new(if ns == 0 { 0 } else { 2 }))
        }

        pub(crate) fn spent(&self) -> bool {
            let left = self.0.get();
            self.0.set(left.saturating_sub(1));
            left == 0
        }
    }

    pub(crate) fn worth_spinning() -> bool {
        true
    }
}

pub(crate) use imp::*;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SpinHistory;

    #[test]
    fn wasted_spins_shrink_the_budget_and_a_caught_one_restores_it() {
        std::thread::spawn(|| {
            assert_eq!(SpinHistory::budget(2000), 2000);
            SpinHistory::record(false);
            assert_eq!(SpinHistory::budget(2000), 1000);
            SpinHistory::record(false);
            assert_eq!(SpinHistory::budget(2000), 500);
            (0..10).for_each(|_| SpinHistory::record(false));
            // Stopped, except for one probe in every 32 waits.
            let spun: Vec<u32> = (0..64).map(|_| SpinHistory::budget(2000)).collect();
            assert_eq!(spun.iter().filter(|&&ns| ns == 2000).count(), 2);
            assert!(spun.iter().all(|&ns| ns == 0 || ns == 2000));
            SpinHistory::record(true);
            assert_eq!(SpinHistory::budget(2000), 2000);
            assert_eq!(SpinHistory::budget(0), 0);
        })
        .join()
        .unwrap();
    }
}
