//! The clocks a run reads: wall time, the time-stamp counter, and the kernel's accounting.
//!
//! `getrusage(RUSAGE_SELF)` covers every thread of the process, so deltas taken by the
//! receiver around a run include the senders' CPU time and context switches as well. A
//! transport with a peer process adds the peer's own figures, which it reports at the end.

use crate::model::Sample;
use std::time::Instant;

/// Resource usage of the whole process at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// User plus system CPU time, in nanoseconds.
    pub cpu_ns: u64,
    /// Voluntary context switches: a thread blocked (futex wait, sleep).
    pub vcsw: u64,
    /// Involuntary context switches: a thread was preempted (time slice ran out).
    pub ivcsw: u64,
}

impl Usage {
    /// The process's usage now.
    pub(crate) fn now() -> Usage {
        // SAFETY: `rusage` is plain old data, so all-zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable `rusage`; RUSAGE_SELF cannot fail with a valid
        // pointer, and if it somehow did we would report zeros rather than garbage.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        if rc != 0 {
            return Usage::default();
        }
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        Usage {
            cpu_ns: ns(ru.ru_utime) + ns(ru.ru_stime),
            vcsw: ru.ru_nvcsw as u64,
            ivcsw: ru.ru_nivcsw as u64,
        }
    }

    /// The two together: this process's and a peer process's usage.
    pub(crate) fn plus(&self, other: &Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_add(other.cpu_ns),
            vcsw: self.vcsw.saturating_add(other.vcsw),
            ivcsw: self.ivcsw.saturating_add(other.ivcsw),
        }
    }

    /// What was used between `earlier` and `self`.
    pub(crate) fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            vcsw: self.vcsw.saturating_sub(earlier.vcsw),
            ivcsw: self.ivcsw.saturating_sub(earlier.ivcsw),
        }
    }
}

/// The time-stamp counter, or 0 where there is none.
///
/// Plan 9's chantest reported cycles; on modern x86 the TSC ticks at a constant rate rather
/// than with the core clock, so it is a second wall clock with finer grain, not a count of
/// work done.
#[inline]
pub(crate) fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC is part of the x86_64 baseline and has no preconditions.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Both clocks read together, at the start or the end of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp {
    /// Wall time.
    pub at: Instant,
    /// The time-stamp counter.
    pub tsc: u64,
}

/// The start of a run shared by its threads: whichever passes the start barrier first, a
/// sender or the receiver, reads the clock, so that no message can be sent before it.
/// (Read by the receiver alone after the barrier, the clock started late when the receiver
/// was descheduled there: a pipe's senders wrote 2,000 messages into its buffer first, and a
/// 400 µs run was timed at 6.9 µs.)
#[derive(Debug, Default)]
pub(crate) struct StartLine(std::sync::OnceLock<Stamp>);

impl StartLine {
    /// The run's start: read now if no thread has read it yet.
    #[inline]
    pub(crate) fn mark(&self) -> Stamp {
        *self.0.get_or_init(Stamp::now)
    }
}

impl Stamp {
    /// The clocks now.
    #[inline]
    pub(crate) fn now() -> Stamp {
        Stamp {
            at: Instant::now(),
            tsc: cycles(),
        }
    }

    /// Nanoseconds and cycles from `earlier` to `self`.
    pub(crate) fn since(&self, earlier: &Stamp) -> (u64, u64) {
        let ns = self.at.duration_since(earlier.at).as_nanos();
        (
            u64::try_from(ns).unwrap_or(u64::MAX),
            self.tsc.wrapping_sub(earlier.tsc),
        )
    }
}

/// A sample of `(ns, cycles)` from [`Stamp::since`] and the usage over the same run,
/// without futex counts (for transports the `locks` crate does not count).
pub(crate) fn sample((ns, cycles): (u64, u64), used: Usage) -> Sample {
    Sample {
        ns,
        cycles,
        cpu_ns: used.cpu_ns,
        vcsw: used.vcsw,
        ivcsw: used.ivcsw,
        futex_waits: 0,
        futex_wakes: 0,
        yields: 0,
        contended: 0,
        spins: 0,
        moves: 0,
        cpu_trip_ns: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HAVE_TSC;

    #[test]
    fn usage_moves_forward() {
        let a = Usage::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = Usage::now();
        assert!(b.cpu_ns >= a.cpu_ns);
        assert_eq!(a.since(&b), Usage::default(), "deltas never go negative");
    }

    #[test]
    fn stamps_are_ordered() {
        let a = Stamp::now();
        let b = Stamp::now();
        let (ns, cyc) = b.since(&a);
        assert!(ns < 1_000_000_000);
        if HAVE_TSC {
            assert!(cyc < 1 << 40);
        }
    }
}
