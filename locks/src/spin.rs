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

    /// How many waits a thread that has stopped spinning goes without, before it looks
    /// again: 8 after its first stop, doubling with each stop since its last hit, up to 253.
    ///
    /// Two misses in a row do not always mean a shared CPU. With more threads than CPUs the
    /// thread waited for is now and then just preempted, and a thread that then went 253 waits
    /// without a spin yielded where its spins would have hit: at O=0 and O=1 with eight
    /// senders on two CPUs, 0.10-0.39 yields a message, against 0.004-0.023 with a first stop
    /// of 8 waits, and a median 30-40 % lower (`docs/tuning.md`). A thread that really shares
    /// its partner's CPU misses again at each look; the doubling brings it to one look per 253
    /// waits after five stops.
    fn waits_without_spin(stops: u8) -> u8 {
        match stops {
            0..=4 => 8 << stops,
            _ => 253,
        }
    }

    std::thread_local! {
        /// This thread's record of its spins: below [`MISSES_TO_STOP`], how many in a row
        /// missed (it still spins); from there up, counting towards the next look, which
        /// comes when the count overflows.
        static SPINS: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
        /// How many times this thread has stopped spinning since its last hit.
        static STOPS: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    }

    /// Whether this thread should spin before it yields: not once its last spins missed.
    ///
    /// A spin pays only while the thread it waits for runs on another CPU. When the scheduler
    /// has put both on one CPU (at a short process's start it often does, and keeps them
    /// there while neither sleeps), every spin burns the budget that the partner needs,
    /// and a yield is the fastest hand-off there is: a chantest process of rendezvous
    /// messages went from about 200 ns a message to 500-1400 (`docs/tuning.md`). So a
    /// thread whose spins keep missing stops spinning, and tries once again after some waits
    /// without ([`waits_without_spin`]), in case the scheduler has moved one of the two since.
    #[inline]
    pub(crate) fn spin_pays() -> bool {
        let n = SPINS.get();
        if n < MISSES_TO_STOP {
            return true;
        }
        match n.checked_add(1) {
            Some(n) => {
                SPINS.set(n);
                false
            }
            // Time to look again: one spin, whose miss stops spinning again at once.
            None => {
                SPINS.set(MISSES_TO_STOP - 1);
                true
            }
        }
    }

    /// Records whether the spin that [`spin_pays`] allowed saw its change (`hit`); true if
    /// this miss is the one that stops the spinning (the caller then sleeps rather than
    /// yields: `adaptive::STOPPED`).
    #[inline]
    pub(crate) fn spun(hit: bool) -> bool {
        if hit {
            SPINS.set(0);
            STOPS.set(0);
            return false;
        }
        let n = SPINS.get() + 1;
        if n < MISSES_TO_STOP {
            SPINS.set(n);
            return false;
        }
        let stops = STOPS.get();
        STOPS.set(stops.saturating_add(1));
        // `spin_pays` answers no until the count overflows.
        SPINS.set(u8::MAX - waits_without_spin(stops));
        true
    }

    /// The CPUs thread `tid` may run on (0: the calling thread); `None` if it cannot be
    /// asked (a thread that has exited, say).
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(crate) fn affinity(tid: libc::pid_t) -> Option<libc::cpu_set_t> {
        use std::mem::{size_of, zeroed};
        // SAFETY: `cpu_set_t` is a plain bit array; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        // SAFETY: `set` is a writable `cpu_set_t` of the size passed.
        let rc = unsafe { libc::sched_getaffinity(tid, size_of::<libc::cpu_set_t>(), &mut set) };
        (rc == 0).then_some(set)
    }

    const UNKNOWN: u8 = 0;
    const ONE: u8 = 1;
    const MANY: u8 = 2;
    /// A thread is counting: the others do not spin meanwhile rather than count as well.
    const COUNTING: u8 = 3;
    static CPUS: AtomicU8 = AtomicU8::new(UNKNOWN);

    /// Whether this process may run on more than one CPU. Read once (it follows
    /// `sched_setaffinity` and cgroup limits at that moment, so `taskset -c 0` is seen; see
    /// [`process_spans_cpus`]).
    #[inline]
    pub(crate) fn worth_spinning() -> bool {
        // The answers first, the count (once per process) last: a compare fewer on the way to
        // either answer than a `match` that tests for the unknown first. Written as a chain so
        // that LLVM keeps its order: from a `match` it chose either, flipping with changes
        // elsewhere in the wait, and the one-CPU answer tested second cost 3 instructions a
        // wait in `--metric instructions`, which runs on one CPU.
        let n = CPUS.load(Relaxed);
        if n == ONE {
            return false;
        }
        n == MANY || count_cpus()
    }

    /// `extern "C"`: a wait that calls it cannot unwind (see `adaptive::wait_while`).
    ///
    /// Once per process: the count reads `/proc`, and a second thread that reached its first
    /// wait meanwhile used to count as well, or not, as the schedule had it: some 72,000
    /// instructions in one process of four (O=0 M=2), which `chantest --metric instructions`
    /// then saw as a change of 1.4 % between two runs of one build.
    #[cold]
    #[inline(never)]
    extern "C" fn count_cpus() -> bool {
        if let Err(n) = CPUS.compare_exchange(UNKNOWN, COUNTING, Relaxed, Relaxed) {
            return n == MANY;
        }
        let v = if process_spans_cpus() { MANY } else { ONE };
        CPUS.store(v, Relaxed);
        v == MANY
    }

    /// Whether the process's threads may run on more than one CPU, all of them together.
    ///
    /// Not the calling thread's own allowance, which is what `available_parallelism` counts:
    /// a program that pins each thread to a CPU of its own (the usual way to run a
    /// latency-bound pipeline, and `chantest --pin`) gives every thread a mask of one CPU,
    /// yet its threads run side by side, which is where a spin pays most. Judged by the
    /// caller's mask, such a process never spun: a rendezvous took 375 ns a message instead
    /// of 112 (`docs/tuning.md`). So on Linux the masks of all the process's threads are
    /// joined; std's count settles it when it already says more than one (it also applies a
    /// cgroup's CPU quota). Threads started later are not seen: this runs once, at the
    /// first wait that could spin, when the threads it waits for are running.
    pub(super) fn process_spans_cpus() -> bool {
        if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
            return true;
        }
        #[cfg(all(target_os = "linux", not(miri)))]
        if let Some(spans) = threads_span_cpus() {
            return spans;
        }
        false
    }

    /// Whether the affinity masks of this process's threads (`/proc/self/task`) cover more
    /// than one CPU between them, read until two are covered (a process may have thousands
    /// of threads); `None` if the list cannot be read.
    #[cfg(all(target_os = "linux", not(miri)))]
    fn threads_span_cpus() -> Option<bool> {
        // SAFETY: `cpu_set_t` is a plain bit array; all-zero is the empty set.
        let mut all: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for entry in std::fs::read_dir("/proc/self/task").ok()? {
            let tid = entry
                .ok()
                .and_then(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok());
            // A thread that has exited since the listing is skipped.
            let Some(set) = tid.and_then(affinity) else {
                continue;
            };
            for cpu in 0..libc::CPU_SETSIZE as usize {
                // SAFETY: `cpu` is below CPU_SETSIZE, the number of bits in a `cpu_set_t`.
                unsafe {
                    if libc::CPU_ISSET(cpu, &set) {
                        libc::CPU_SET(cpu, &mut all);
                    }
                }
            }
            // SAFETY: reads a valid `cpu_set_t`.
            if unsafe { libc::CPU_COUNT(&all) } > 1 {
                return Some(true);
            }
        }
        Some(false)
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

    /// Never stops the spinning: a miss leads to the yields, then the sleep, all modelled;
    /// the sleep that a stop leads to straight away is the same sleep.
    pub(crate) fn spun(_hit: bool) -> bool {
        false
    }
}

pub(crate) use imp::*;

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::{spin_pays, spun};

    /// Runs `f` on a thread of its own, which starts with a fresh spin record.
    pub(crate) fn on_a_new_thread(f: impl FnOnce() + Send + 'static) {
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
    fn only_the_miss_that_stops_the_spinning_says_so() {
        on_a_new_thread(|| {
            assert!(!spun(false), "the first miss");
            assert!(spun(false), "the second, which stops it");
            while !spin_pays() {}
            assert!(spun(false), "the look again that misses stops it again");
            while !spin_pays() {}
            assert!(!spun(true), "a hit never does");
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
            assert!(spun(false), "stopped");
            // Each look that misses stops it again, for twice as long, up to 253 waits.
            for want in [8, 16, 32, 64, 128, 253, 253] {
                let skipped = (0..1000).take_while(|_| !spin_pays()).count();
                assert_eq!(skipped, want, "waits without a spin before the next look");
                assert!(spun(false), "the look missed: stopped again");
            }
            assert!(!spin_pays());
            // Or it hits: spinning again.
            on_a_new_thread(|| {
                spun(false);
                spun(false);
                while !spin_pays() {}
                spun(true);
                assert!(spin_pays() && spin_pays());
                // And the next stop is a short one again.
                spun(false);
                spun(false);
                assert_eq!((0..1000).take_while(|_| !spin_pays()).count(), 8);
            });
        });
    }

    /// Pins the calling thread to `cpu`; false if it may not run there.
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(crate) fn pin(cpu: usize) -> bool {
        // SAFETY: all-zero is the empty set; `cpu` is checked against CPU_SETSIZE; the set is
        // a valid `cpu_set_t` of the size passed; pid 0 is the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if cpu >= libc::CPU_SETSIZE as usize {
                return false;
            }
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }

    /// The CPUs the calling thread may run on.
    #[cfg(all(target_os = "linux", not(miri)))]
    fn allowed() -> Vec<usize> {
        let set = super::affinity(0).expect("the calling thread's affinity");
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    /// Threads pinned each to a CPU of its own still run side by side, so the process counts
    /// as many CPUs from any of them (it counted one, and never spun: `process_spans_cpus`).
    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_thread_pinned_to_one_cpu_still_sees_the_others() {
        let cpus = allowed();
        if cpus.len() < 2 {
            eprintln!("skipped: this test needs two CPUs, and may use {cpus:?}");
            return;
        }
        let (a, b) = (cpus[0], cpus[1]);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let partner = std::thread::spawn(move || {
            assert!(pin(b));
            ready_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        });
        ready_rx.recv().unwrap();
        std::thread::spawn(move || {
            assert!(pin(a));
            let own = std::thread::available_parallelism().unwrap().get();
            assert_eq!(own, 1, "pinned, std counts the thread's own CPU only");
            assert!(
                super::process_spans_cpus(),
                "the partner pinned to CPU {b} counts too"
            );
        })
        .join()
        .unwrap();
        done_tx.send(()).unwrap();
        partner.join().unwrap();
    }
}
