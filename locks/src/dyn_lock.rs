//! A lock whose strategy is chosen at run time.
//!
//! [`DynLock`] and [`DynWaiter`] have a variant per row of the table of strategies
//! (`strategies!` in `lib.rs`), and every operation is a `match` on it. One more variant,
//! `Registered`, holds a strategy registered at run time, reached through a table of
//! functions compiled for it when it was registered (`erased.rs`).

use crate::backend::Backend;
use crate::erased::{RegisteredLock, RegisteredWaiter};
use crate::strategy::{Strategy, Waiter};
use std::fmt;
use std::time::Instant;

/// The layout of the [`DynWaiter`] variant that holds a `W`.
///
/// `DynWaiter` is `#[repr(u8)]`, and the Reference guarantees that such an enum is laid out
/// as a `repr(C)` union of `repr(C)` structs, one per variant, each a `u8` tag followed by
/// the variant's fields. So a variant holding a `W` has its `W` where this struct has
/// `waiter`, which lets [`DynWaiter::signal`] find it by address arithmetic alone.
#[repr(C)]
struct Variant<W> {
    tag: u8,
    waiter: W,
}

impl DynWaiter {
    /// The `W` inside `*this`, found without making a reference to anything.
    ///
    /// # Safety
    /// `this` must point to a live `DynWaiter` whose variant holds a `W`.
    #[inline]
    unsafe fn field<W>(this: *const Self) -> *const W {
        // SAFETY: the offset lies within `*this` (see `Variant`), which the caller vouches
        // for; `byte_add` keeps `this`'s provenance.
        unsafe { this.byte_add(std::mem::offset_of!(Variant<W>, waiter)) }.cast()
    }
}

macro_rules! dyn_lock {
    ($($(#[$doc:meta])* $variant:ident($t:ty, $params:ty, $waiter:ty)),+ $(,)?) => {
        /// One of the lock strategies, chosen by a [`Backend`] value rather than by type.
        ///
        /// Each operation dispatches with a `match`; for hot code prefer a concrete type, or
        /// [`Backend::visit`] to compile the code once per strategy (the repository's
        /// `docs/tuning.md` gives what the `match` costs). `INIT` (and so
        /// `Mutex::<DynLock, _>::new`) is [`Backend::DEFAULT`], the adaptive lock.
        ///
        /// ```
        /// let backend: locks::Backend = "spin".parse().unwrap();
        /// let m = backend.mutex(0u64);
        /// *m.lock() += 2;
        /// assert_eq!(*m.lock(), 2);
        /// ```
        ///
        /// It is a [`Strategy`] too, with [`Backend`] as its parameters and a [`DynWaiter`]
        /// that waits the way the chosen strategy does, so a channel's lock can be chosen by
        /// name: `chan::Chan::<T, DynLock>::with_params(n, backend)`. Its
        /// [`NAME`](Strategy::NAME) is `"dyn"`; [`DynLock::backend`] says which it is.
        #[derive(Debug)]
        pub enum DynLock {
            $(
                #[doc = concat!("The lock [`Backend::", stringify!($variant), "`] names.")]
                $variant($t),
            )+
            /// The lock of a strategy registered with [`register`](crate::register).
            Registered(RegisteredLock),
        }

        /// The waiter of a [`DynLock`]: the waiter of the strategy it was made with.
        ///
        /// `#[repr(u8)]` fixes its layout, which `signal` relies on to reach the inner
        /// waiter through a raw pointer.
        #[derive(Debug)]
        #[repr(u8)]
        pub enum DynWaiter {
            $(
                #[doc = concat!("The waiter of [`DynLock::", stringify!($variant), "`].")]
                $variant($waiter),
            )+
            /// The waiter of [`DynLock::Registered`]: its strategy's own, boxed.
            Registered(RegisteredWaiter),
        }

        impl DynLock {
            /// An unlocked lock of the given backend.
            pub const fn new(backend: Backend) -> Self {
                match backend {
                    $(Backend::$variant(p) => DynLock::$variant(<$t>::from_params(p)),)+
                    Backend::Registered(r) => DynLock::Registered(RegisteredLock::new(r)),
                }
            }

            /// The backend this lock was made from.
            pub fn backend(&self) -> Backend {
                match self {
                    $(DynLock::$variant(l) => Backend::$variant(Strategy::params(l)),)+
                    DynLock::Registered(l) => Backend::Registered(l.backend()),
                }
            }
        }

        impl DynWaiter {
            /// The name of the strategy whose waiter this is.
            pub fn name(&self) -> &'static str {
                match self {
                    $(DynWaiter::$variant(_) => <$t as Strategy>::NAME,)+
                    DynWaiter::Registered(w) => w.name(),
                }
            }

            /// The inner waiter's address, through a reference (for the test of `field`).
            #[cfg(test)]
            fn inner_by_ref(&self) -> *const () {
                match self {
                    $(DynWaiter::$variant(w) => (w as *const $waiter).cast(),)+
                    DynWaiter::Registered(w) => (w as *const RegisteredWaiter).cast(),
                }
            }

            /// The inner waiter's address, as `signal` finds it.
            #[cfg(test)]
            fn inner_by_layout(&self) -> *const () {
                let this: *const Self = self;
                match self {
                    // SAFETY: `this` is live and holds this variant.
                    $(DynWaiter::$variant(_) => unsafe { Self::field::<$waiter>(this) }.cast(),)+
                    // SAFETY: as above.
                    DynWaiter::Registered(_) => unsafe { Self::field::<RegisteredWaiter>(this) }.cast(),
                }
            }
        }

        // Every variant is a lock that provides mutual exclusion, and the variant never
        // changes after construction, so each operation reaches the same lock (a registered
        // one is made once, on first use). Unlocking on another thread, which `GuardSend`
        // allows, is allowed by every `Strategy` too.
        forward_raw_mutex!(DynLock, DynLock::new(Backend::DEFAULT));

        // SAFETY: every variant is a `Strategy`, so provides mutual exclusion with a
        // non-unwinding unlock; the variant never changes after construction, so each
        // operation reaches the same lock. Its waiter is the variant's own (see `DynWaiter`).
        unsafe impl Strategy for DynLock {
            type Params = Backend;
            type Waiter = DynWaiter;
            const NAME: &'static str = "dyn";

            fn with_params(backend: Backend) -> Self {
                DynLock::new(backend)
            }

            fn params(&self) -> Backend {
                self.backend()
            }

            fn waiter(&self) -> DynWaiter {
                match self {
                    $(DynLock::$variant(l) => DynWaiter::$variant(Strategy::waiter(l)),)+
                    DynLock::Registered(l) => DynWaiter::Registered(l.waiter()),
                }
            }

            fn first_waiter(&self) -> DynWaiter {
                match self {
                    $(DynLock::$variant(l) => DynWaiter::$variant(Strategy::first_waiter(l)),)+
                    DynLock::Registered(l) => DynWaiter::Registered(l.first_waiter()),
                }
            }

            #[inline]
            fn lock(&self) {
                match self {
                    $(DynLock::$variant(l) => Strategy::lock(l),)+
                    DynLock::Registered(l) => l.get().lock(),
                }
            }

            #[inline]
            fn lock_in_hand_off(&self) {
                match self {
                    $(DynLock::$variant(l) => Strategy::lock_in_hand_off(l),)+
                    DynLock::Registered(l) => l.get().lock_in_hand_off(),
                }
            }

            #[inline]
            fn lock_in_task(&self) {
                match self {
                    $(DynLock::$variant(l) => Strategy::lock_in_task(l),)+
                    DynLock::Registered(l) => l.get().lock_in_task(),
                }
            }

            #[inline]
            fn try_lock(&self) -> bool {
                match self {
                    $(DynLock::$variant(l) => Strategy::try_lock(l),)+
                    DynLock::Registered(l) => l.get().try_lock(),
                }
            }

            #[inline]
            unsafe fn unlock(&self) {
                match self {
                    // SAFETY: our caller holds the lock, which is this variant's lock.
                    $(DynLock::$variant(l) => unsafe { Strategy::unlock(l) },)+
                    // SAFETY: as above; `get` returns the one lock made for this variant.
                    DynLock::Registered(l) => unsafe { l.get().unlock() },
                }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                match self {
                    $(DynLock::$variant(l) => Strategy::is_locked(l),)+
                    DynLock::Registered(l) => l.is_locked(),
                }
            }

            fn fmt_name(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "dyn({})", self.backend())
            }
        }

        // SAFETY: each method forwards to the one inner waiter, which never changes, so the
        // inner waiter's guarantees (wait and is_signalled report a signal only after
        // `signal` is done with the waiter, Release/Acquire pairing, bounded `signal`) are
        // this waiter's. `signal` touches `*this` only as the contract allows: see there.
        unsafe impl Waiter for DynWaiter {
            #[inline]
            fn wait(&self) {
                match self {
                    $(DynWaiter::$variant(w) => w.wait(),)+
                    DynWaiter::Registered(w) => w.wait(),
                }
            }

            #[inline]
            fn wait_checked(&self) -> bool {
                match self {
                    $(DynWaiter::$variant(w) => w.wait_checked(),)+
                    DynWaiter::Registered(w) => w.wait_checked(),
                }
            }

            #[inline]
            fn wait_until(&self, deadline: Instant) -> bool {
                match self {
                    $(DynWaiter::$variant(w) => w.wait_until(deadline),)+
                    DynWaiter::Registered(w) => w.wait_until(deadline),
                }
            }

            #[inline]
            fn is_signalled(&self) -> bool {
                match self {
                    $(DynWaiter::$variant(w) => w.is_signalled(),)+
                    DynWaiter::Registered(w) => w.is_signalled(),
                }
            }

            #[inline]
            unsafe fn signal(this: *const Self) {
                // SAFETY: the waiting thread may free `*this` as soon as the inner signal has
                // published, even before that call returns, so no reference to `*this` (nor
                // to the inner waiter) may be made here: a reference asserts the memory
                // stays valid while it is live, and one passed as an argument is protected
                // for the whole call. Instead:
                // 1. `match *this` with `_` patterns reads the tag alone, through the raw
                //    pointer. The caller guarantees `*this` is live and not yet signalled, so
                //    the inner signal has not published and nobody can free it yet; the tag
                //    was written once, at construction, and is only ever read, so this plain
                //    read races with nothing.
                // 2. `field` finds the inner waiter by address arithmetic on `this` (the
                //    layout `repr(u8)` guarantees), again without a reference, and keeps
                //    `this`'s provenance.
                // 3. The inner `signal` gets a pointer to a live waiter that has not been
                //    signalled (exactly our own precondition), and its contract bounds what
                //    it does with it. After it we touch nothing.
                unsafe {
                    match *this {
                        $(DynWaiter::$variant(_) => {
                            <$waiter as Waiter>::signal(Self::field::<$waiter>(this))
                        })+
                        DynWaiter::Registered(_) => {
                            RegisteredWaiter::signal(Self::field::<RegisteredWaiter>(this))
                        }
                    }
                }
            }
        }
    };
}

strategies!(dyn_lock);

impl fmt::Display for DynLock {
    /// The backend's name, as [`Backend`] displays it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.backend(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_finds_the_inner_waiter_where_a_reference_does() {
        for b in Backend::ALL {
            let w = DynLock::new(b).waiter();
            assert_eq!(w.name(), b.name());
            assert_eq!(w.inner_by_layout(), w.inner_by_ref(), "{b}");
        }
    }

    #[test]
    fn signal_reaches_the_inner_waiter() {
        for b in Backend::ALL {
            let w = DynLock::new(b).waiter();
            assert!(!w.is_signalled());
            // SAFETY: live, never signalled before.
            unsafe { DynWaiter::signal(&w) };
            assert!(w.is_signalled(), "{b}");
            w.wait();
            assert!(w.wait_until(Instant::now()));
        }
    }
}
