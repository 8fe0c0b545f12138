//! A registered strategy behind a pointer: how [`DynLock`](crate::DynLock) reaches a strategy
//! it was not compiled with.
//!
//! The built-in strategies are variants of `DynLock`, dispatched by a `match`. A registered
//! one cannot be a variant, since its type is unknown here, so its lock is a trait object
//! made by code compiled for it when it was registered ([`new_lock`]), and its waiter is
//! boxed and reached through a table of functions compiled for the waiter's type.

use crate::registry::Registered;
use crate::strategy::{Strategy, Waiter};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::time::Instant;

/// A strategy's lock with its type erased.
pub(crate) trait ErasedLock: Send + Sync {
    fn lock(&self);
    fn lock_in_task(&self);
    fn lock_in_hand_off(&self);
    fn try_lock(&self) -> bool;
    /// # Safety
    /// The caller must hold the lock.
    unsafe fn unlock(&self);
    fn is_locked(&self) -> bool;
    fn waiter(&self, name: &'static str) -> RegisteredWaiter;
    fn first_waiter(&self, name: &'static str) -> RegisteredWaiter;
}

impl<S: Strategy> ErasedLock for S {
    fn lock(&self) {
        Strategy::lock(self)
    }

    fn lock_in_task(&self) {
        Strategy::lock_in_task(self)
    }

    fn lock_in_hand_off(&self) {
        Strategy::lock_in_hand_off(self)
    }

    fn try_lock(&self) -> bool {
        Strategy::try_lock(self)
    }

    unsafe fn unlock(&self) {
        // SAFETY: our caller holds the lock.
        unsafe { Strategy::unlock(self) }
    }

    fn is_locked(&self) -> bool {
        Strategy::is_locked(self)
    }

    fn waiter(&self, name: &'static str) -> RegisteredWaiter {
        RegisteredWaiter::new(Strategy::waiter(self), name)
    }

    fn first_waiter(&self, name: &'static str) -> RegisteredWaiter {
        RegisteredWaiter::new(Strategy::first_waiter(self), name)
    }
}

/// Makes an `S` from its parameters, given as `&dyn Any`: what the registry keeps for `S`.
pub(crate) fn new_lock<S: Strategy>(params: &dyn Any) -> Box<dyn ErasedLock> {
    // The registry hands this function only `S::Params` (both come from `S`'s entry); the
    // default is there so that no path can panic.
    let params = params
        .downcast_ref::<S::Params>()
        .copied()
        .unwrap_or_default();
    Box::new(S::with_params(params))
}

/// The lock of a registered strategy inside a [`DynLock`](crate::DynLock).
///
/// Made on first use, so that [`DynLock::new`](crate::DynLock::new) stays a `const fn`; each
/// operation then costs a load of the made lock and a call through its table.
pub struct RegisteredLock {
    backend: Registered,
    lock: OnceLock<Box<dyn ErasedLock>>,
}

impl RegisteredLock {
    pub(crate) const fn new(backend: Registered) -> Self {
        RegisteredLock {
            backend,
            lock: OnceLock::new(),
        }
    }

    /// The strategy and parameters it was made with.
    pub(crate) fn backend(&self) -> Registered {
        self.backend
    }

    #[inline]
    pub(crate) fn get(&self) -> &dyn ErasedLock {
        &**self
            .lock
            .get_or_init(|| (self.backend.entry().new_lock)(self.backend.params_any()))
    }

    pub(crate) fn waiter(&self) -> RegisteredWaiter {
        self.get().waiter(self.backend.name())
    }

    pub(crate) fn first_waiter(&self) -> RegisteredWaiter {
        self.get().first_waiter(self.backend.name())
    }

    /// Whether it is locked; a lock not yet made is not.
    pub(crate) fn is_locked(&self) -> bool {
        self.lock.get().is_some_and(|l| l.is_locked())
    }
}

impl fmt::Debug for RegisteredLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredLock")
            .field("backend", &format_args!("{}", self.backend))
            .field("locked", &self.is_locked())
            .finish()
    }
}

/// The waiter of a registered strategy inside a [`DynWaiter`](crate::DynWaiter): the
/// strategy's own waiter, boxed, and the functions that reach it.
///
/// Boxed because its size is unknown here; `signal` then reads the box's address and its
/// table from `*this` before the inner signal publishes, and touches `*this` no more.
pub struct RegisteredWaiter {
    /// An owned `Box<W>`, as a raw pointer: `signal` must reach it without making a
    /// reference (see there), and a `Box` field would assert unique access while it runs.
    waiter: NonNull<()>,
    table: &'static Table,
    name: &'static str,
}

/// What a [`RegisteredWaiter`] does with its `W`, compiled for `W`. Each function takes the
/// box's address as `*const ()` and must be given the address of a live `W`.
struct Table {
    wait: unsafe fn(*const ()),
    wait_checked: unsafe fn(*const ()) -> bool,
    wait_until: unsafe fn(*const (), Instant) -> bool,
    is_signalled: unsafe fn(*const ()) -> bool,
    signal: unsafe fn(*const ()),
    drop: unsafe fn(*mut ()),
}

/// The [`Table`] of `W`, as a constant so that `&TableOf::<W>::TABLE` is a `&'static`.
struct TableOf<W>(PhantomData<W>);

impl<W: Waiter> TableOf<W> {
    const TABLE: Table = Table {
        wait: wait::<W>,
        wait_checked: wait_checked::<W>,
        wait_until: wait_until::<W>,
        is_signalled: is_signalled::<W>,
        signal: signal::<W>,
        drop: drop_box::<W>,
    };
}

// The functions of a `Table`. Safety, for each: `p` is the address of a live `W` (for `signal`:
// one never signalled before; for `drop_box`: a `Box<W>` nobody else uses).

unsafe fn wait<W: Waiter>(p: *const ()) {
    // SAFETY: `p` is a live `W` (see above).
    unsafe { (*p.cast::<W>()).wait() }
}

unsafe fn wait_checked<W: Waiter>(p: *const ()) -> bool {
    // SAFETY: `p` is a live `W`.
    unsafe { (*p.cast::<W>()).wait_checked() }
}

unsafe fn wait_until<W: Waiter>(p: *const (), deadline: Instant) -> bool {
    // SAFETY: `p` is a live `W`.
    unsafe { (*p.cast::<W>()).wait_until(deadline) }
}

unsafe fn is_signalled<W: Waiter>(p: *const ()) -> bool {
    // SAFETY: `p` is a live `W`.
    unsafe { (*p.cast::<W>()).is_signalled() }
}

unsafe fn signal<W: Waiter>(p: *const ()) {
    // SAFETY: `p` is a live `W`, never signalled before: `W::signal`'s own precondition.
    unsafe { W::signal(p.cast::<W>()) }
}

unsafe fn drop_box<W: Waiter>(p: *mut ()) {
    // SAFETY: `p` came from `Box::into_raw` of a `Box<W>`, and nobody uses it any more.
    drop(unsafe { Box::from_raw(p.cast::<W>()) })
}

impl RegisteredWaiter {
    fn new<W: Waiter>(w: W, name: &'static str) -> Self {
        RegisteredWaiter {
            waiter: NonNull::from(Box::leak(Box::new(w))).cast(),
            table: &TableOf::<W>::TABLE,
            name,
        }
    }

    /// The name of the strategy whose waiter this is.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }
}

impl Drop for RegisteredWaiter {
    fn drop(&mut self) {
        // SAFETY: the box is ours alone, made in `new`, and freed only here.
        unsafe { (self.table.drop)(self.waiter.as_ptr()) }
    }
}

// SAFETY: a `RegisteredWaiter` owns its `W` (a `Waiter`, so `Send` and `Sync`) and shares it
// with nothing else; the raw pointer is only how it is held.
unsafe impl Send for RegisteredWaiter {}
// SAFETY: as for `Send`: `&RegisteredWaiter` gives access to nothing but a `&W`.
unsafe impl Sync for RegisteredWaiter {}

impl fmt::Debug for RegisteredWaiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredWaiter")
            .field("name", &self.name)
            .field("signalled", &self.is_signalled())
            .finish()
    }
}

// SAFETY: every method forwards to the one boxed `W`, which lives until this waiter drops, so
// `W`'s guarantees (a signal reported only once `signal` is done with the waiter,
// Release/Acquire pairing, a bounded `signal`) are this waiter's. `signal` touches `*this`
// only before the inner signal publishes: see there.
unsafe impl Waiter for RegisteredWaiter {
    #[inline]
    fn wait(&self) {
        // SAFETY: the box holds a live `W` as long as `self` lives.
        unsafe { (self.table.wait)(self.waiter.as_ptr()) }
    }

    #[inline]
    fn wait_checked(&self) -> bool {
        // SAFETY: as in `wait`.
        unsafe { (self.table.wait_checked)(self.waiter.as_ptr()) }
    }

    #[inline]
    fn wait_until(&self, deadline: Instant) -> bool {
        // SAFETY: as in `wait`.
        unsafe { (self.table.wait_until)(self.waiter.as_ptr(), deadline) }
    }

    #[inline]
    fn is_signalled(&self) -> bool {
        // SAFETY: as in `wait`.
        unsafe { (self.table.is_signalled)(self.waiter.as_ptr()) }
    }

    unsafe fn signal(this: *const Self) {
        // SAFETY: the caller guarantees `*this` is live and not yet signalled, so nobody may
        // free it before the inner signal below publishes: its two fields are read here, by
        // value through the raw pointer, with no reference to `*this` (which would assert
        // that it stays valid for the whole call). The box they name is then a live `W`
        // never signalled before, which is all the inner `signal` asks; it touches the box
        // only up to its publishing operation, and after it we touch nothing.
        unsafe {
            let (waiter, table) = ((*this).waiter, (*this).table);
            (table.signal)(waiter.as_ptr())
        }
    }
}
