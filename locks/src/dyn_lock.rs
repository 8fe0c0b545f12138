//! A lock whose strategy is chosen at run time.

use crate::backend::Backend;
use crate::strategy::Strategy;
use crate::{Adaptive, AdaptiveParams, SemLock, SpinYield};

/// One of the three locks, chosen by a [`Backend`] value rather than by type.
///
/// Each operation dispatches with a `match`; for hot code prefer a concrete type, or
/// [`Backend::visit`] to compile the code once per strategy. `INIT` (and so
/// `Mutex::<DynLock, _>::new`) is the default adaptive lock.
///
/// ```
/// let backend: locks::Backend = "spin".parse().unwrap();
/// let m = backend.mutex(0u64);
/// *m.lock() += 2;
/// assert_eq!(*m.lock(), 2);
/// ```
pub enum DynLock {
    /// See [`SpinYield`].
    Spin(SpinYield),
    /// See [`SemLock`].
    Sem(SemLock),
    /// See [`Adaptive`].
    Adaptive(Adaptive),
}

impl DynLock {
    /// An unlocked lock of the given backend.
    pub const fn new(backend: Backend) -> Self {
        match backend {
            Backend::Spin(p) => DynLock::Spin(SpinYield::new(p)),
            Backend::Sem => DynLock::Sem(SemLock::new()),
            Backend::Adaptive(p) => DynLock::Adaptive(Adaptive::new(p)),
        }
    }

    /// The backend this lock was made from.
    pub fn backend(&self) -> Backend {
        match self {
            DynLock::Spin(l) => Backend::Spin(l.params()),
            DynLock::Sem(_) => Backend::Sem,
            DynLock::Adaptive(l) => Backend::Adaptive(l.params()),
        }
    }
}

macro_rules! each {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            DynLock::Spin($l) => $e,
            DynLock::Sem($l) => $e,
            DynLock::Adaptive($l) => $e,
        }
    };
}

// SAFETY: every variant is a lock that provides mutual exclusion; the variant never changes
// after construction, so each operation reaches the same lock.
unsafe impl lock_api::RawMutex for DynLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = DynLock::Adaptive(Adaptive::new(AdaptiveParams::DEFAULT));
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        each!(self, l => Strategy::lock(l))
    }

    fn try_lock(&self) -> bool {
        each!(self, l => Strategy::try_lock(l))
    }

    unsafe fn unlock(&self) {
        // SAFETY: forwarded from our caller, who holds the lock.
        each!(self, l => unsafe { Strategy::unlock(l) })
    }

    fn is_locked(&self) -> bool {
        each!(self, l => Strategy::is_locked(l))
    }
}
