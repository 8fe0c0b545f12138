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

    /// After this many spins in a row that ran out without seeing the change they waited
    /// for, a thread stops spinning.
    const MISSES_TO_STOP: u8 = 2;

    std::thread_local! {
        /// This thread's record of its spins: below [`MISSES_TO_STOP`], how many in a row
        /// missed (it still spins); from there up, how many waits it has not spun for.
        static SPINS: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    }

    /// Whether this thread should spin before it yields: not once its last spins missed.
    ///
    /// A spin pays only while the thread it waits for runs on another CPU. When the scheduler
    /// has put both on one CPU (at a short process's start it often does, and keeps them
    /// there while neither sleeps), every spin burns the budget that the partner needs,
    /// and a yield is the fastest hand-off there is: a chantest process of rendezvous
    /// messages went from about 200 ns a message to 500-1400 (`docs/tuning.md`). So a
    /// thread whose spins keep missing stops spinning, and tries once again after 250-odd
    /// waits without, in case the scheduler has moved one of the two since.
    #[inline]
    pub(crate) fn spin_pays() -> bool {
        SPINS.with(|s| {
            let n = s.get();
            if n < MISSES_TO_STOP {
                return true;
            }
            match n.checked_add(1) {
                Some(n) => {
                    s.set(n);
                    false
                }
                // Time to look again: one spin, whose miss stops spinning again at once.
                None => {
                    s.set(MISSES_TO_STOP - 1);
                    true
                }
            }
        })
    }

    /// Records whether the spin that [`spin_pays`] allowed saw its change (`hit`).
    #[inline]
    pub(crate) fn spun(hit: bool) {
        SPINS.with(|s| s.set(if hit { 0 } else { s.get() + 1 }));
    }

    const UNKNOWN: u8 = 0;
    const ONE: u8 = 1;
    const MANY: u8 = 2;
    static CPUS: AtomicU8 = AtomicU8::new(UNKNOWN);

    /// Whether this process may run on more than one CPU. Read once (it follows
    /// `sched_setaffinity` and cgroup limits at that moment, so `taskset -c 0` is seen).
    #[inline]
    pub(crate) fn worth_spinning() -> bool {
        // The answer first, the count (once per process) last: a compare fewer on the way to
        // either answer than a `match` that tests for the unknown first.
        match CPUS.load(Relaxed) {
            MANY => true,
            ONE => false,
            _ => count_cpus(),
        }
    }

    /// `extern "C"`: a wait that calls it cannot unwind (see `adaptive::wait_while`).
    #[cold]
    #[inline(never)]
    extern "C" fn count_cpus() -> bool {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let v = if n > 1 { MANY } else { ONE };
        CPUS.store(v, Relaxed);
        v == MANY
    }
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

    /// Loom runs every spin: a model must reach both outcomes of each.
    pub(crate) fn spin_pays() -> bool {
        true
    }

    pub(crate) fn spun(_hit: bool) {}
}

pub(crate) use imp::*;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{spin_pays, spun};

    /// Each test thread starts with a fresh record.
    fn on_a_new_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    #[test]
    fn two_misses_in_a_row_stop_the_spinning() {
        on_a_new_thread(|| {
            assert!(spin_pays());
            spun(false);
            assert!(spin_pays(), "one miss is not enough");
            spun(false);
            assert!(!spin_pays(), "two in a row are");
        });
    }

    #[test]
    fn a_hit_forgives_a_miss() {
        on_a_new_thread(|| {
            spun(false);
            spun(true);
            spun(false);
            assert!(spin_pays());
        });
    }

    #[test]
    fn a_thread_that_stopped_looks_again_now_and_then() {
        on_a_new_thread(|| {
            spun(false);
            spun(false);
            let skipped = (0..1000).take_while(|_| !spin_pays()).count();
            assert_eq!(skipped, 253, "waits without a spin before the next look");
            // The look misses: back to not spinning at once.
            spun(false);
            assert!(!spin_pays());
            // Or it hits: spinning again.
            on_a_new_thread(|| {
                spun(false);
                spun(false);
                while !spin_pays() {}
                spun(true);
                assert!(spin_pays() && spin_pays());
            });
        });
    }
}
