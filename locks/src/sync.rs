//! The atomics every protocol in this crate is written against: std's normally, loom's when the
//! crate is built with `--cfg loom`, so the same source is what the models check.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32};

pub(crate) use std::sync::atomic::Ordering;

/// Gives the processor away: `sched_yield` for real, a scheduling point under loom.
///
/// libc's rather than `std::thread::yield_now`, which does the same but, being a Rust
/// function, may unwind as far as the compiler knows: a wait that calls it keeps the landing
/// pads of its callers' guards (see `adaptive::wait_while`).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(not(loom), unix))]
    // SAFETY: takes nothing and touches no memory of ours; its only error (none on Linux)
    // would leave the thread running, which a yield allows anyway.
    unsafe {
        libc::sched_yield();
    }
    #[cfg(all(not(loom), not(unix)))]
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

/// A `Copy` value that some lock guards: read and written only by a thread that holds it (or
/// otherwise ordered after every other access). Loom checks those accesses for data races.
#[derive(Debug)]
pub(crate) struct Guarded<T> {
    #[cfg(loom)]
    cell: loom::cell::UnsafeCell<T>,
    #[cfg(not(loom))]
    cell: std::cell::UnsafeCell<T>,
}

impl<T: Copy> Guarded<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new(value: T) -> Self {
        Guarded {
            cell: std::cell::UnsafeCell::new(value),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(value: T) -> Self {
        Guarded {
            cell: loom::cell::UnsafeCell::new(value),
        }
    }

    /// The value.
    ///
    /// # Safety
    /// No other thread writes it meanwhile: the caller holds the lock that guards it, or
    /// every write happens before this read.
    #[inline]
    pub(crate) unsafe fn get(&self) -> T {
        #[cfg(loom)]
        // SAFETY: the caller's contract.
        return self.cell.with(|p| unsafe { *p });
        #[cfg(not(loom))]
        // SAFETY: the caller's contract.
        unsafe {
            *self.cell.get()
        }
    }

    /// Replaces the value.
    ///
    /// # Safety
    /// No other thread reads or writes it meanwhile: the caller holds the lock that guards it.
    #[inline]
    pub(crate) unsafe fn set(&self, value: T) {
        #[cfg(loom)]
        // SAFETY: the caller's contract.
        self.cell.with_mut(|p| unsafe { *p = value });
        #[cfg(not(loom))]
        // SAFETY: the caller's contract.
        unsafe {
            *self.cell.get() = value
        };
    }
}
