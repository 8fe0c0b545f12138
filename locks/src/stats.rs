//! What the locks and waiters did: counters behind the `stats` feature.
//!
//! With the feature off every counting site compiles to nothing and [`snapshot`] returns
//! zeros (check [`ENABLED`]). With it on, each event costs one relaxed atomic add on a
//! process-wide counter: cheap, but shared, so leave it off when measuring raw speed.
//!
//! ```
//! locks::stats::reset();
//! let m = locks::Mutex::<locks::Adaptive, _>::new(0);
//! *m.lock() += 1;
//! let s = locks::stats::snapshot();
//! assert_eq!(s.acquisitions, if locks::stats::ENABLED { 1 } else { 0 });
//! ```

/// Whether the crate was built with the `stats` feature.
pub const ENABLED: bool = cfg!(feature = "stats");

/// Counter values at one moment (all zero without the `stats` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Locks taken, by any path.
    pub acquisitions: u64,
    /// Locks that were not free at the first attempt.
    pub contended: u64,
    /// Busy-wait iterations (PAUSE-hinted loads) in locks and waiters.
    pub spins: u64,
    /// `sched_yield` calls.
    pub yields: u64,
    /// Timed sleeps: the spin-and-yield strategy's last resort (milliseconds), and the
    /// adaptive lock's naps in a task (microseconds).
    pub sleeps: u64,
    /// `FUTEX_WAIT` calls: each is a potential trip through the scheduler.
    pub futex_waits: u64,
    /// `FUTEX_WAKE` calls.
    pub futex_wakes: u64,
    /// Threads moved off a CPU they shared with the thread they waited for (the adaptive
    /// lock's [`moves`](crate::AdaptiveParams::moves)).
    pub moves: u64,
}

impl Snapshot {
    /// The counts accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            acquisitions: self.acquisitions.wrapping_sub(earlier.acquisitions),
            contended: self.contended.wrapping_sub(earlier.contended),
            spins: self.spins.wrapping_sub(earlier.spins),
            yields: self.yields.wrapping_sub(earlier.yields),
            sleeps: self.sleeps.wrapping_sub(earlier.sleeps),
            futex_waits: self.futex_waits.wrapping_sub(earlier.futex_waits),
            futex_wakes: self.futex_wakes.wrapping_sub(earlier.futex_wakes),
            moves: self.moves.wrapping_sub(earlier.moves),
        }
    }
}

#[cfg(feature = "stats")]
pub(crate) mod imp {
    use super::Snapshot;
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    // One cache line each, so that counting one kind of event does not slow another.
    pub(crate) static ACQUISITIONS: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static CONTENDED: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static SPINS: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static YIELDS: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static SLEEPS: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static FUTEX_WAITS: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static FUTEX_WAKES: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
    pub(crate) static MOVES: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));

    // A static, not a const: a const that refers to statics needs Rust 1.83 (the MSRV is 1.82).
    static ALL: [&CachePadded<AtomicU64>; 8] = [
        &ACQUISITIONS,
        &CONTENDED,
        &SPINS,
        &YIELDS,
        &SLEEPS,
        &FUTEX_WAITS,
        &FUTEX_WAKES,
        &MOVES,
    ];

    pub(super) fn snapshot() -> Snapshot {
        let [acquisitions, contended, spins, yields, sleeps, futex_waits, futex_wakes, moves] =
            ALL.map(|c| c.load(Relaxed));
        Snapshot {
            acquisitions,
            contended,
            spins,
            yields,
            sleeps,
            futex_waits,
            futex_wakes,
            moves,
        }
    }

    pub(super) fn reset() {
        for c in ALL {
            c.store(0, Relaxed);
        }
    }
}

/// The counters now. Counts from threads running concurrently may be caught mid-update;
/// take snapshots around a quiescent run for exact figures.
pub fn snapshot() -> Snapshot {
    #[cfg(feature = "stats")]
    return imp::snapshot();
    #[cfg(not(feature = "stats"))]
    Snapshot::default()
}

/// Sets every counter back to zero.
pub fn reset() {
    #[cfg(feature = "stats")]
    imp::reset();
}

/// `count!(futex_waits)` or `count!(spins, n)`: add to a counter when `stats` is on.
macro_rules! count {
    ($field:ident) => {
        $crate::stats::count!($field, 1)
    };
    ($field:ident, $n:expr) => {{
        #[cfg(feature = "stats")]
        {
            let _ = $crate::stats::counter!($field)
                .fetch_add($n as u64, ::std::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(not(feature = "stats"))]
        {
            let _ = || $n;
        }
    }};
}

#[cfg(feature = "stats")]
macro_rules! counter {
    (acquisitions) => {
        &$crate::stats::imp::ACQUISITIONS
    };
    (contended) => {
        &$crate::stats::imp::CONTENDED
    };
    (spins) => {
        &$crate::stats::imp::SPINS
    };
    (yields) => {
        &$crate::stats::imp::YIELDS
    };
    (sleeps) => {
        &$crate::stats::imp::SLEEPS
    };
    (futex_waits) => {
        &$crate::stats::imp::FUTEX_WAITS
    };
    (futex_wakes) => {
        &$crate::stats::imp::FUTEX_WAKES
    };
    (moves) => {
        &$crate::stats::imp::MOVES
    };
}

pub(crate) use count;
#[cfg(feature = "stats")]
pub(crate) use counter;
