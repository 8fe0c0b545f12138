//! The two things a lock strategy decides: how to take a lock, and how to wait for an event.
//!
//! `chan` is written against [`Strategy`] alone, so a channel built on a strategy takes its
//! lock *and* blocks its senders and receivers in that strategy's manner. A new strategy is a
//! type implementing `Strategy` (plus `lock_api::RawMutex`, to be usable as a plain mutex).

use std::fmt::{Debug, Display};
use std::time::Instant;

/// A lock protocol and its matching way to block a thread.
///
/// # Safety
///
/// Implementations must provide mutual exclusion: between a successful [`lock`](Self::lock)
/// or [`try_lock`](Self::try_lock) and the matching [`unlock`](Self::unlock) no other thread
/// can take the lock, and an unlock *happens before* the next successful acquisition.
pub unsafe trait Strategy: Send + Sync + Sized + 'static {
    /// Tuning knobs, parsed from a backend name such as `adaptive:spin_ns=0`.
    type Params: Params;
    /// The strategy's way of putting a thread to sleep until another signals it.
    type Waiter: Waiter;
    /// The name [`crate::Backend`] knows this strategy by.
    const NAME: &'static str;

    /// An unlocked lock with the given parameters.
    fn with_params(params: Self::Params) -> Self;
    /// The parameters this lock was made with.
    fn params(&self) -> Self::Params;
    /// A fresh, unsignalled waiter that waits the way this lock does.
    fn waiter(&self) -> Self::Waiter;

    /// Acquires the lock, waiting as long as it takes.
    fn lock(&self);
    /// Acquires the lock if it is free now.
    fn try_lock(&self) -> bool;
    /// Releases the lock.
    ///
    /// # Safety
    /// The caller must hold the lock.
    unsafe fn unlock(&self);
    /// Whether some thread holds the lock (a racy hint, for assertions and diagnostics).
    fn is_locked(&self) -> bool;
}

/// A one-shot event: one thread [`wait`](Waiter::wait)s, another [`signal`](Waiter::signal)s.
///
/// A waiter is meant to live on the waiting thread's stack, registered somewhere the signalling
/// thread can find it. The waiting thread must not free it before the wait has returned `true`
/// and must not signal it itself.
pub trait Waiter: Send + Sync {
    /// Blocks until signalled; returns at once if that already happened.
    fn wait(&self);

    /// Blocks until signalled or until `deadline`; `true` if signalled.
    ///
    /// After `false` the waiter may still be signalled later; a caller that has handed its
    /// address to another thread must either withdraw it or [`wait`](Waiter::wait) again.
    fn wait_until(&self, deadline: Instant) -> bool;

    /// Whether the signal has arrived.
    fn is_signalled(&self) -> bool;

    /// Wakes the thread waiting on `this`.
    ///
    /// The waiting thread may return from `wait` and free the waiter while this call is still
    /// running, which is why it takes a raw pointer: implementations touch `*this` only through
    /// one atomic operation that publishes the signal, and afterwards use the address alone
    /// (a futex wake on a stale address wakes nobody).
    ///
    /// # Safety
    /// `this` must point to a live waiter that has not been signalled before.
    unsafe fn signal(this: *const Self);
}

/// Parameters of a strategy, as they appear after its name: `name:key=value:key=value`.
pub trait Params: Copy + Default + Debug + Display + PartialEq + Send + Sync + 'static {
    /// The keys [`set`](Params::set) accepts.
    const KEYS: &'static [&'static str];
    /// Sets one parameter from its textual value; the error says what was wrong.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;
}

/// For a strategy without knobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoParams;

impl Display for NoParams {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Ok(())
    }
}

impl Params for NoParams {
    const KEYS: &'static [&'static str] = &[];
    fn set(&mut self, key: &str, _: &str) -> Result<(), String> {
        Err(format!(
            "unknown parameter `{key}` (this backend takes none)"
        ))
    }
}

/// Parses a parameter value as an integer in `0..=max`, with an error naming the key.
pub(crate) fn parse_num(key: &str, value: &str, max: u64) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(format!(
            "parameter `{key}` wants an integer from 0 to {max}, not `{value}`"
        )),
    }
}
