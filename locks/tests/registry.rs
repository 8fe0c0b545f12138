//! Strategies of one's own by name: registered once, they parse, print, list and lock as
//! the built-ins do, through `Backend` and `DynLock`. The tests in `mod miri` are sized for
//! Miri too (`.ci/miri` runs them, filter `miri::`): the boxed waiter's raw-pointer signal, and
//! `StdLock`'s guard.

use locks::{
    register, register_as, Adaptive, Backend, NoParams, Params, Raw, SemLock, SemWaiter, StdLock,
    Strategy, Waiter,
};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A lock with a knob: the adaptive lock under another name, whose parameter is kept only to
/// see it parsed, printed and compared.
struct Knobbed {
    inner: Adaptive,
    knob: Knob,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Knob {
    n: u32,
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.n {
            0 => Ok(()),
            n => write!(f, ":n={n}"),
        }
    }
}

impl Params for Knob {
    const KEYS: &'static [&'static str] = &["n"];
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "n" => value
                .parse()
                .map(|n| self.n = n)
                .map_err(|_| format!("`n` wants a number, not `{value}`")),
            _ => Err(format!("unknown parameter `{key}`")),
        }
    }
}

// SAFETY: every lock operation is the inner adaptive lock's.
unsafe impl Strategy for Knobbed {
    type Params = Knob;
    type Waiter = locks::AdaptiveWaiter;
    const NAME: &'static str = "knobbed";

    fn with_params(knob: Knob) -> Self {
        Knobbed {
            inner: Adaptive::with_params(Default::default()),
            knob,
        }
    }
    fn params(&self) -> Knob {
        self.knob
    }
    fn waiter(&self) -> Self::Waiter {
        self.inner.waiter()
    }
    fn lock(&self) {
        self.inner.lock()
    }
    fn try_lock(&self) -> bool {
        self.inner.try_lock()
    }
    unsafe fn unlock(&self) {
        // SAFETY: our caller holds the lock, which is the inner one.
        unsafe { self.inner.unlock() }
    }
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

#[test]
fn a_registered_strategy_parses_prints_and_compares() {
    register::<Knobbed>().unwrap();
    register::<Knobbed>().unwrap(); // once more is a no-op
    let b: Backend = "Knobbed:n=5".parse().unwrap();
    assert_eq!(b.name(), "knobbed");
    assert_eq!(b.to_string(), "knobbed:n=5");
    assert_eq!(b.params::<Knobbed>(), Some(Knob { n: 5 }));
    assert_eq!(b.params::<Adaptive>(), None);
    assert_eq!(b, "knobbed:n=5".parse().unwrap());
    assert_ne!(b, "knobbed".parse().unwrap());
    assert_eq!("knobbed".parse::<Backend>().unwrap().to_string(), "knobbed");
    // Its own parameters, checked by its own `Params::set`.
    let bad = "knobbed:n=x".parse::<Backend>().unwrap_err().to_string();
    assert!(bad.contains("`n` wants a number"), "{bad}");
    assert!(Backend::all().contains(&"knobbed".parse().unwrap()));
    assert!(Backend::parse_list("all").unwrap().len() > Backend::ALL.len());
    let unknown = "mcs".parse::<Backend>().unwrap_err().to_string();
    assert!(unknown.contains("knobbed"), "{unknown}");
}

#[test]
fn names_are_checked_at_registration() {
    for bad in ["", "all", "a:b", "a,b", "a=b", "a b"] {
        assert!(
            register_as::<Raw<SemLock, SemWaiter>>(bad).is_err(),
            "{bad:?}"
        );
    }
    // A built-in's name, and a built-in under another name.
    assert!(register_as::<Raw<SemLock, SemWaiter>>("SEM").is_err());
    assert!(register_as::<SemLock>("sem2").is_err());
    assert_eq!(register::<SemLock>(), Ok(()));
    // A type has one name, and a name one type.
    register_as::<Raw<Adaptive, SemWaiter>>("raw_adaptive").unwrap();
    assert!(register_as::<Raw<Adaptive, SemWaiter>>("raw_adaptive2").is_err());
    assert!(register_as::<Raw<SemLock, SemWaiter>>("RAW_adaptive").is_err());
    // `DynLock` is every strategy, not one of its own.
    assert!(register::<locks::DynLock>().is_err());
}

/// Threads take turns on a mutex of the backend named `name`.
fn counts_exactly(name: &str) {
    let backend: Backend = name.parse().unwrap();
    let per_thread = testkit::count(2000, 20, 2) as u64;
    let m = Arc::new(backend.mutex(0u64));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || (0..per_thread).for_each(|_| *m.lock() += 1))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*m.lock(), 4 * per_thread, "{name}");
}

/// What Miri runs too (`.ci/miri` picks `miri::`), small enough for it under `cfg(miri)`.
mod miri {
    use super::*;

    #[test]
    fn a_dyn_lock_runs_a_registered_strategy() {
        register::<Knobbed>().unwrap();
        register::<StdLock>().unwrap();
        register_as::<Raw<Adaptive, SemWaiter>>("raw_adaptive").unwrap();
        for name in ["knobbed:n=1", "std", "raw_adaptive"] {
            counts_exactly(name);
        }
    }

    #[test]
    fn a_registered_waiter_is_signalled_from_another_thread() {
        register::<StdLock>().unwrap();
        let lock = locks::DynLock::with_params("std".parse().unwrap());
        assert_eq!(lock.to_string(), "std");
        for _ in 0..testkit::pick(100, 3) {
            let w = Arc::new(lock.first_waiter());
            assert!(!w.is_signalled());
            let signaller = {
                let w = w.clone();
                std::thread::spawn(move || {
                    // SAFETY: live (the Arc), and signalled only here.
                    unsafe { Waiter::signal(Arc::as_ptr(&w)) }
                })
            };
            assert!(w.wait_checked());
            signaller.join().unwrap();
        }
        let w = lock.waiter();
        assert!(!w.wait_until(Instant::now() + Duration::from_millis(1)));
    }

    #[test]
    fn a_std_lock_is_exclusive_and_survives_a_move_while_held() {
        let lock: StdLock<SemWaiter> = StdLock::with_params(NoParams);
        assert!(lock.try_lock());
        assert!(lock.is_locked());
        let moved = lock; // the guard borrows the boxed mutex, which does not move
        assert!(!moved.try_lock());
        // SAFETY: locked above, on this thread.
        unsafe { moved.unlock() };
        assert!(!moved.is_locked());
        moved.lock();
        drop(moved); // dropped held, on the locking thread: unlocked, then freed
    }
}
