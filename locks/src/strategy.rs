//! The two things a lock strategy decides: how to take a lock, and how to wait for an event.
//!
//! `chan` is written against [`Strategy`] alone, so a channel built on a strategy takes its
//! lock *and* blocks its senders and receivers in that strategy's manner. A new strategy is a
//! type implementing `Strategy` (plus `lock_api::RawMutex`, to be usable as a plain mutex):
//! [`Strategy`]'s documentation says how to write one.

use std::fmt::{Debug, Display};
use std::time::Instant;

/// A lock protocol and its matching way to block a thread.
///
/// # Writing one
///
/// A strategy is a lock (`lock`, `try_lock`, `unlock`, `is_locked`) and a way to wait
/// (`Waiter`, made by `waiter`). `chan` takes the lock around every change to a channel and
/// waits with the waiter when an operation must block, so each method answers one question
/// a channel asks:
///
/// * [`lock`](Self::lock) takes the lock, however long it waits. It should be cheap when the
///   lock is free: a channel calls it for every message.
/// * [`try_lock`](Self::try_lock) takes it only if it is free now; it must not wait. `chan`
///   tries first and calls a `lock_*` only when that fails, so this is the hot path.
/// * [`unlock`](Self::unlock) releases it, and must publish what the holder wrote (Release)
///   to the next holder (who took it with Acquire). It must not unwind, and it may be called
///   on another thread than the locker's (see the safety section).
/// * [`is_locked`](Self::is_locked) is a racy hint for assertions and `Debug`.
/// * [`waiter`](Self::waiter) makes a fresh [`Waiter`], a one-shot event that a blocked
///   sender or receiver waits on until its partner signals it. Its contract is what makes
///   `chan` sound: read it there. You need not write one: [`NewWaiter`](crate::NewWaiter)
///   makes this crate's (`SemWaiter::new_waiter()`), and [`Raw`](crate::Raw) turns any
///   `lock_api::RawMutex` into a strategy with one of them.
/// * [`with_params`](Self::with_params), [`params`](Self::params) and
///   [`Params`](Self::Params) let a name such as `adaptive:spin_ns=0` make the lock;
///   [`NoParams`] is for a lock without knobs.
/// * [`first_waiter`](Self::first_waiter), [`lock_in_task`](Self::lock_in_task) and
///   [`lock_in_hand_off`](Self::lock_in_hand_off) are tuning hooks with sensible defaults.
///
/// Implement `lock_api::RawMutex` as well (forwarding to these methods) to make
/// [`Mutex<S, T>`](crate::Mutex) a plain mutex. Then [`register`](crate::register) it once
/// to pick it by name: [`Backend`](crate::Backend) parses and lists it,
/// [`DynLock`](crate::DynLock) runs it, and `$LOCKS_BACKEND` and `chantest --lock` name it.
///
/// A complete strategy, used by type, then registered and picked through `$LOCKS_BACKEND`:
///
/// ```
/// use locks::{lock_api, Backend, NewWaiter, NoParams, SemWaiter, Strategy, Waiter};
/// use std::sync::atomic::{AtomicBool, Ordering::{Acquire, Relaxed, Release}};
///
/// /// A test-and-set lock that yields while it waits.
/// pub struct Tas(AtomicBool);
///
/// // SAFETY: `lock` and `try_lock` succeed only by swapping `false` for `true` (Acquire), and
/// // `unlock` stores `false` (Release): one holder at a time, and each unlock happens before
/// // the next acquisition. A store cannot unwind, on whatever thread it runs.
/// unsafe impl Strategy for Tas {
///     type Params = NoParams;
///     type Waiter = SemWaiter; // borrowed: sleep on a futex until signalled
///     const NAME: &'static str = "tas";
///
///     fn with_params(_: NoParams) -> Self {
///         Tas(AtomicBool::new(false))
///     }
///     fn params(&self) -> NoParams {
///         NoParams
///     }
///     fn waiter(&self) -> SemWaiter {
///         SemWaiter::new_waiter()
///     }
///     fn lock(&self) {
///         while !self.try_lock() {
///             std::thread::yield_now();
///         }
///     }
///     fn try_lock(&self) -> bool {
///         !self.0.swap(true, Acquire)
///     }
///     unsafe fn unlock(&self) {
///         self.0.store(false, Release);
///     }
///     fn is_locked(&self) -> bool {
///         self.0.load(Relaxed)
///     }
/// }
///
/// // SAFETY: forwards to the `Strategy` impl above; it records no owner, so guards may move.
/// unsafe impl lock_api::RawMutex for Tas {
///     const INIT: Tas = Tas(AtomicBool::new(false));
///     type GuardMarker = lock_api::GuardSend;
///     fn lock(&self) {
///         Strategy::lock(self)
///     }
///     fn try_lock(&self) -> bool {
///         Strategy::try_lock(self)
///     }
///     unsafe fn unlock(&self) {
///         // SAFETY: our caller holds the lock.
///         unsafe { Strategy::unlock(self) }
///     }
///     fn is_locked(&self) -> bool {
///         Strategy::is_locked(self)
///     }
/// }
///
/// // By type: a mutex that threads share.
/// let m = std::sync::Arc::new(locks::Mutex::<Tas, u64>::new(0));
/// let threads: Vec<_> = (0..4)
///     .map(|_| {
///         let m = m.clone();
///         std::thread::spawn(move || (0..1000).for_each(|_| *m.lock() += 1))
///     })
///     .collect();
/// threads.into_iter().for_each(|t| t.join().unwrap());
/// assert_eq!(*m.lock(), 4000);
///
/// // By name: registered once, it is a backend like the built-ins.
/// locks::register::<Tas>()?;
/// assert!(Backend::all().iter().any(|b| b.name() == "tas"));
/// std::env::set_var("LOCKS_BACKEND", "tas");
/// let backend = Backend::from_env(Backend::DEFAULT)?;
/// assert_eq!(backend.to_string(), "tas");
/// let m = backend.mutex(0u32); // a DynLock running `Tas`
/// *m.lock() += 1;
/// let w = Strategy::waiter(&backend.raw()); // and its waiter, the strategy's own
/// unsafe { Waiter::signal(&w) }; // SAFETY: live, never signalled before
/// w.wait();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Safety
///
/// Implementations must provide mutual exclusion: between a successful [`lock`](Self::lock)
/// or [`try_lock`](Self::try_lock) and the matching [`unlock`](Self::unlock) no other thread
/// can take the lock, and an unlock *happens before* the next successful acquisition.
/// `unlock` must not unwind (a lock that cannot be released leaves every channel it guards
/// wedged), and [`Waiter`] carries its own contract. `lock` and `try_lock` may unwind: `chan`
/// then takes the lock again wherever a step cannot be left undone (withdrawing a wait, whose
/// node would otherwise outlive the memory it lives in; a close, which blocked parties wait
/// for), and aborts the process if that panics too. `unlock` may be called on another thread
/// than the one that locked (`lock_api`'s `GuardSend`, which [`DynLock`](crate::DynLock)
/// declares, allows it; `chan` itself always unlocks where it locked): a lock that cannot be
/// released there must not reach undefined behaviour, and may abort the process instead, as
/// [`StdLock`](crate::StdLock) does.
pub unsafe trait Strategy: Send + Sync + Sized + 'static {
    /// Tuning knobs, parsed from a backend name such as `adaptive:spin_ns=0`.
    type Params: Params;
    /// The strategy's way of putting a thread to sleep until another signals it.
    type Waiter: Waiter;
    /// The strategy's name, for reports and messages. The built-in strategies are known to
    /// [`crate::Backend`] by theirs (`"spin"`, `"sem"`, `"adaptive"`; `"dyn"` for
    /// [`DynLock`](crate::DynLock), which is whichever strategy its backend names); a
    /// strategy of your own is known by its name once [`register`](crate::register)ed.
    const NAME: &'static str;

    /// An unlocked lock with the given parameters.
    fn with_params(params: Self::Params) -> Self;
    /// The parameters this lock was made with.
    fn params(&self) -> Self::Params;
    /// A fresh, unsignalled waiter that waits the way this lock does.
    fn waiter(&self) -> Self::Waiter;
    /// A waiter for a thread that is first in line, whose partner is likely to come along
    /// within a few hundred nanoseconds (in `chan`: the only blocked sender, or receiver, of a
    /// channel). A strategy may let it spin where a thread further back would only yield:
    /// spinning costs a CPU, so it pays only for the one waiter that is served next. The
    /// default is [`waiter`](Self::waiter).
    fn first_waiter(&self) -> Self::Waiter {
        self.waiter()
    }

    /// Acquires the lock, waiting as long as it takes.
    fn lock(&self);
    /// Acquires the lock for an async task, on an executor's worker thread.
    ///
    /// Tasks that share a worker never contend for a lock that no task holds across an
    /// `await` (as `chan`'s are held), so contention seen here is another worker, or thread,
    /// using the same lock. A strategy may then keep this worker off the lock for longer than
    /// it would keep a thread: while it is away the other worker runs the whole exchange,
    /// instead of the two bouncing the lock's cache line between them. The default is
    /// [`lock`](Self::lock).
    fn lock_in_task(&self) {
        self.lock()
    }
    /// Acquires a lock that every holder keeps only for a hand-off between partners who are
    /// running now (in `chan`: the lock of a channel of at most one buffer, where each
    /// operation meets its partner or a single slot, and two threads rarely want the lock for
    /// long). Contention here means the holder is mid-exchange on another CPU and will let go
    /// within a few hundred nanoseconds, so a strategy may spin before it yields, as for a
    /// [`first_waiter`](Self::first_waiter): a yield with other contenders runnable is a
    /// context switch. The default is [`lock`](Self::lock).
    ///
    /// (Where a holder fills or drains a buffer of many slots, a locker that yields at once
    /// lets the two sides work in batches, which spinning would break.)
    fn lock_in_hand_off(&self) {
        self.lock()
    }
    /// Acquires the lock if it is free now.
    fn try_lock(&self) -> bool;
    /// Releases the lock.
    ///
    /// # Safety
    /// The caller must hold the lock.
    unsafe fn unlock(&self);
    /// Whether some thread holds the lock (a racy hint, for assertions and diagnostics).
    fn is_locked(&self) -> bool;

    /// Writes what this lock is, for `Debug` output (a channel's shows it): the name and the
    /// parameters that differ from their defaults, as a [`Backend`](crate::Backend) is
    /// written (`sem`, `adaptive:spin_ns=500`). A [`DynLock`](crate::DynLock) writes
    /// `dyn(` its backend `)`.
    ///
    /// ```
    /// use locks::{DynLock, SpinParams, SpinYield, Strategy};
    /// struct Name<'a, S>(&'a S);
    /// impl<S: Strategy> std::fmt::Display for Name<'_, S> {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         self.0.fmt_name(f)
    ///     }
    /// }
    /// let spin = SpinYield::with_params(SpinParams::DEFAULT.with_yields(10));
    /// assert_eq!(Name(&spin).to_string(), "spin:yields=10");
    /// let dynamic = DynLock::with_params("sem".parse().unwrap());
    /// assert_eq!(Name(&dynamic).to_string(), "dyn(sem)");
    /// ```
    fn fmt_name(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", Self::NAME, self.params())
    }
}

/// A one-shot event: one thread [`wait`](Waiter::wait)s, another [`signal`](Waiter::signal)s.
///
/// A waiter lives on the waiting thread's stack, registered somewhere the signalling thread
/// can find it (in `chan`, a node linked into a channel's queue). Whether that stack frame may
/// be freed depends entirely on what the waiter reports, which is why the trait is unsafe.
///
/// # Safety
///
/// `chan` frees the frame holding a waiter as soon as the waiter says it was signalled, so an
/// implementation must guarantee:
///
/// 1. [`wait`](Waiter::wait) returns normally only after [`signal`](Waiter::signal) has been
///    called on this waiter and has made its last access to `*this` (everything `signal` does
///    afterwards uses the address alone, such as a futex wake, which finds nobody at a stale
///    address). The same holds when [`wait_until`](Waiter::wait_until),
///    [`is_signalled`](Waiter::is_signalled) or [`wait_checked`](Waiter::wait_checked)
///    returns `true`.
/// 2. `signal` publishes the signal with a *Release* operation that `wait`, `wait_until`,
///    `is_signalled` and `wait_checked` read with *Acquire* (or a Relaxed read and an
///    Acquire fence), so what the signaller wrote before signalling is visible to the woken
///    thread.
/// 3. `signal` finishes in bounded time: it never waits for the waiting thread.
///
/// `wait` and `wait_until` may unwind; `chan` then withdraws the wait and, if a partner had
/// already claimed it, waits for that partner's `signal` by polling `is_signalled` before the
/// frame goes. A `wait` that returns early by mistake is waited again as long as
/// `is_signalled` says `false`.
pub unsafe trait Waiter: Send + Sync {
    /// Blocks until signalled; returns at once if that already happened.
    fn wait(&self);
    /// [`wait`](Waiter::wait), then [`is_signalled`](Waiter::is_signalled): how `chan`
    /// waits, so that a `wait` that returns early is waited again. The default makes both
    /// calls; an implementation whose `wait` has just seen the signal may answer from that
    /// sighting instead of reading its word a second time (the adaptive waiter's blocking
    /// path is a few instructions shorter for it).
    #[inline]
    fn wait_checked(&self) -> bool {
        self.wait();
        self.is_signalled()
    }

    /// Blocks until signalled or until `deadline`; `true` if signalled.
    ///
    /// After `false` the waiter may still be signalled later; a caller that has handed its
    /// address to another thread must either withdraw it or [`wait`](Waiter::wait) again.
    fn wait_until(&self, deadline: Instant) -> bool;

    /// Whether the signal has arrived (and `signal` is done with `*this`).
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

impl NoParams {
    /// The only value, as the constant every parameter type has.
    pub const DEFAULT: NoParams = NoParams;
}

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
