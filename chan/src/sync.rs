//! Atomics: std's normally, loom's under `--cfg loom`, so the models check this very code.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// Yielding in a wait for another thread's progress (a claimer's signal): loom's under loom,
/// so that the model runs that thread.
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;
