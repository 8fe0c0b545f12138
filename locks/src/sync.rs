//! The atomics every protocol in this crate is written against: std's normally, loom's when the
//! crate is built with `--cfg loom`, so the same source is what the models check.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32};

pub(crate) use std::sync::atomic::Ordering;

/// Gives the processor away: `sched_yield` for real, a scheduling point under loom.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// One iteration of a busy-wait: a PAUSE hint for real; under loom a yield, because loom
/// rejects a spin loop that never lets the thread it waits for run.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
