//! A hostile executor's tools: hand-made wakers that panic, count or re-enter a channel, and
//! a `poll` that takes any waker, so a test can drive a future the way no well-behaved
//! executor would (a different waker each time, from another thread, never again).
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// What a [`hostile`] waker does wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Nothing: it counts its wake-ups.
    None,
    /// `wake` and `wake_by_ref` panic.
    PanicWake,
    /// `clone` panics.
    PanicClone,
    /// Dropping a clone panics (the original, held by the test, does not).
    PanicDrop,
}

/// The state behind a hostile waker: its fault, its wake-up count, and an optional hook run
/// inside `wake` (say, a send on the channel the waker's future waits on).
pub(crate) struct Hostile {
    pub(crate) fault: Fault,
    pub(crate) wakes: AtomicUsize,
    pub(crate) hook: Option<Box<dyn Fn() + Send + Sync>>,
}

impl Hostile {
    pub(crate) fn new(fault: Fault) -> Arc<Self> {
        Arc::new(Hostile {
            fault,
            wakes: AtomicUsize::new(0),
            hook: None,
        })
    }

    /// A well-behaved waker whose `wake` runs `hook` first: a waker that re-enters.
    pub(crate) fn reentrant(hook: impl Fn() + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Hostile {
            fault: Fault::None,
            wakes: AtomicUsize::new(0),
            hook: Some(Box::new(hook)),
        })
    }

    pub(crate) fn wakes(&self) -> usize {
        self.wakes.load(SeqCst)
    }

    fn on_wake(&self) {
        self.wakes.fetch_add(1, SeqCst);
        if let Some(h) = &self.hook {
            h();
        }
        // Not while unwinding: a failed assertion that drops a future whose give-back wakes
        // this waker would abort the whole test binary, hiding the failure's message and the
        // other tests' results.
        if self.fault == Fault::PanicWake {
            panic!("hostile waker: wake");
        }
    }
}

/// The test's original waker has `VTABLE`; a clone made by `clone` has `CLONE_VTABLE`, so that
/// only clones panic on drop: the test can still drop its own waker.
static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_original);
static CLONE_VTABLE: RawWakerVTable =
    RawWakerVTable::new(clone, wake_clone, wake_by_ref, drop_clone);

fn state(p: *const ()) -> *const Hostile {
    p.cast()
}

unsafe fn clone(p: *const ()) -> RawWaker {
    let s = state(p);
    // SAFETY: `s` came from `Arc::into_raw` and the waker being cloned holds a count.
    if unsafe { (*s).fault } == Fault::PanicClone && !std::thread::panicking() {
        panic!("hostile waker: clone");
    }
    // SAFETY: as above.
    unsafe { Arc::increment_strong_count(s) };
    RawWaker::new(s.cast(), &CLONE_VTABLE)
}

unsafe fn wake(p: *const ()) {
    // SAFETY: forwarded.
    unsafe { wake_as(p, false) }
}

unsafe fn wake_clone(p: *const ()) {
    // SAFETY: forwarded.
    unsafe { wake_as(p, true) }
}

unsafe fn wake_as(p: *const (), is_clone: bool) {
    // Release the count whatever `on_wake` does: a guard drops it on unwind too.
    struct Release(*const Hostile, bool);
    impl Drop for Release {
        fn drop(&mut self) {
            // SAFETY: the waker being consumed held this count.
            drop(unsafe { Arc::from_raw(self.0) });
            if self.1 && !std::thread::panicking() {
                panic!("hostile waker: drop");
            }
        }
    }
    let s = state(p);
    // SAFETY: the consumed waker holds a count.
    let fault = unsafe { (*s).fault };
    let guard = Release(s, fault == Fault::PanicDrop && is_clone);
    // SAFETY: alive while `guard` holds the count.
    unsafe { (*s).on_wake() };
    drop(guard);
}

unsafe fn wake_by_ref(p: *const ()) {
    // SAFETY: the waker holds a count.
    unsafe { (*state(p)).on_wake() };
}

unsafe fn drop_original(p: *const ()) {
    // SAFETY: forwarded.
    unsafe { drop_as(p, false) }
}

unsafe fn drop_clone(p: *const ()) {
    // SAFETY: forwarded.
    unsafe { drop_as(p, true) }
}

unsafe fn drop_as(p: *const (), is_clone: bool) {
    let s = state(p);
    // SAFETY: the dropped waker held this count.
    let fault = unsafe { (*s).fault };
    // SAFETY: as above.
    drop(unsafe { Arc::from_raw(s) });
    if fault == Fault::PanicDrop && is_clone && !std::thread::panicking() {
        panic!("hostile waker: drop");
    }
}

/// A waker over `h` (the test's original: its own drop never panics).
pub(crate) fn hostile(h: &Arc<Hostile>) -> Waker {
    let p = Arc::into_raw(h.clone());
    // SAFETY: the vtable's functions keep the `Arc` counts balanced, as `RawWaker` requires.
    unsafe { Waker::from_raw(RawWaker::new(p.cast(), &VTABLE)) }
}

/// A counting waker with no fault.
pub(crate) fn counting() -> (Arc<Hostile>, Waker) {
    let h = Hostile::new(Fault::None);
    let w = hostile(&h);
    (h, w)
}

/// Polls `f` once with `waker`.
pub(crate) fn poll_with<F: Future + ?Sized>(f: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(waker))
}

/// Polls `f` once with a waker that does nothing.
pub(crate) fn poll_noop<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
    poll_with(f, futures::task::noop_waker_ref())
}
