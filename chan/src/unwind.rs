//! The one rule for user code that a channel runs on someone's behalf: wakers, and the `Drop`
//! of values and wakers.
//!
//! Such code runs only once the operation, close or drop that calls it has finished every
//! change to the channel's state. Each piece runs caught, and every piece runs even if an
//! earlier one panicked. The first panic is raised again once, at the very end, and never
//! while the thread is already unwinding: a second panic there would abort the process.
//! [`Caught`] carries that panic from the place it was caught to the end.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// What a caught panic carries.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// The first panic of the user code run so far, held until the caller has finished.
#[must_use = "a caught panic is lost unless `finish` raises it"]
pub(crate) struct Caught(Option<Payload>);

impl Caught {
    /// Nothing caught yet.
    #[inline]
    pub(crate) const fn none() -> Self {
        Caught(None)
    }

    /// Runs `f`, catching a panic; the first one is kept, later ones are discarded.
    #[inline]
    pub(crate) fn run(&mut self, f: impl FnOnce()) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
            self.keep(p);
        }
    }

    /// Keeps `p` unless a panic is kept already.
    #[cold]
    pub(crate) fn keep(&mut self, p: Payload) {
        match self.0 {
            None => self.0 = Some(p),
            Some(_) => discard(p),
        }
    }

    /// Keeps `other`'s panic, as [`keep`](Self::keep) does.
    #[inline]
    pub(crate) fn merge(&mut self, other: Caught) {
        if let Some(p) = other.0 {
            self.keep(p);
        }
    }

    /// The kept panic, if any, for a caller that must decide what happens before it goes on.
    #[inline]
    pub(crate) fn into_payload(self) -> Option<Payload> {
        self.0
    }

    /// Raises the kept panic, unless this thread is already unwinding (then it is
    /// discarded: raising it would abort the process).
    #[inline]
    pub(crate) fn finish(self) {
        if let Some(p) = self.0 {
            raise(p);
        }
    }
}

/// Raises `p` again, unless this thread is already unwinding.
#[cold]
#[inline(never)]
pub(crate) fn raise(p: Payload) {
    if std::thread::panicking() {
        discard(p);
    } else {
        resume_unwind(p);
    }
}

/// Drops a panic's payload that will not be raised. A payload's own `Drop` is user code too:
/// should it panic, that payload is leaked rather than dropped while unwinding.
#[cold]
pub(crate) fn discard(p: Payload) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(p))) {
        std::mem::forget(again);
    }
}

/// Runs `f` caught, giving back its panic rather than raising it.
#[inline]
pub(crate) fn caught(f: impl FnOnce()) -> Result<(), Payload> {
    catch_unwind(AssertUnwindSafe(f))
}

/// Runs `f`, which must succeed: a step without which memory that is about to go would stay
/// reachable (taking the lock that lets a cancelled future unlink its node). If `f` panics
/// (a [`Strategy`](locks::Strategy)'s `lock` may), it is run once more, and its panic is kept
/// in `caught` to be raised when the caller is done; should the second run panic too, no safe
/// way on is left and the process aborts.
#[inline]
pub(crate) fn insist<R>(caught: &mut Caught, mut f: impl FnMut() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(&mut f)) {
        Ok(r) => r,
        Err(p) => {
            caught.keep(p);
            again(f)
        }
    }
}

/// [`insist`]'s second run, under a guard that aborts the process if it unwinds.
#[cold]
#[inline(never)]
fn again<R>(f: impl FnOnce() -> R) -> R {
    struct Abort;
    impl Drop for Abort {
        fn drop(&mut self) {
            eprintln!("plan9-chan: a step that cannot be skipped panicked twice; aborting");
            std::process::abort();
        }
    }
    let bomb = Abort;
    let r = f();
    std::mem::forget(bomb);
    r
}
