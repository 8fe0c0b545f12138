//! What the tests of `plan9-locks` and `plan9-chan` share: [`per_backend!`], which makes one
//! `#[test]` per behaviour and backend, the parameters of a backend by name ([`params`]),
//! iteration counts scaled by `CHAN_TEST_SCALE` and cut down under Miri ([`scaled`],
//! [`count`]; [`pick`] for sizes that do not scale), a value that counts its drops
//! ([`Tracked`]) and the backends every test runs with ([`backends`]).
//!
//! A dev-dependency of both libraries, by path: `use testkit::per_backend;` in a test file.

use locks::{Backend, Strategy, Visit};
use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// The lock crate the macros name, whatever the test crate calls it.
#[doc(hidden)]
pub use locks;

/// One `#[test]` per behaviour and backend.
///
/// ```ignore
/// per_backend! { semantics: close_semantics, timeouts }
/// fn close_semantics<S: Strategy>(p: S::Params) { .. }
/// ```
///
/// makes `semantics::spin::close_semantics`, `semantics::sem::close_semantics`,
/// `semantics::adaptive::close_semantics` and `semantics::adaptive_futex::close_semantics`
/// (the last is `adaptive:yield_ns=0`: the futex path alone, where a lost wake-up hangs for
/// good), and the same for `timeouts`. Each calls the function with its strategy and the
/// parameters parsed from the backend's name, so a failure names both, and
/// `cargo test sem::` or `cargo test close_semantics` picks a slice. A function may ask for
/// more than `Strategy` (say `RawMutex`): the macro names the types. An attribute written
/// before a name (`#[cfg_attr(miri, ignore)] big_stress`) goes on all four of its tests.
#[macro_export]
macro_rules! per_backend {
    ($group:ident: $($(#[$attr:meta])* $f:ident),+ $(,)?) => {
        mod $group {
            $crate::per_backend!(@one spin, $crate::locks::SpinYield, "spin";
                $($(#[$attr])* $f),+);
            $crate::per_backend!(@one sem, $crate::locks::SemLock, "sem";
                $($(#[$attr])* $f),+);
            $crate::per_backend!(@one adaptive, $crate::locks::Adaptive, "adaptive";
                $($(#[$attr])* $f),+);
            $crate::per_backend!(@one adaptive_futex, $crate::locks::Adaptive,
                "adaptive:yield_ns=0"; $($(#[$attr])* $f),+);
        }
    };
    (@one $backend:ident, $S:ty, $spec:literal; $($(#[$attr:meta])* $f:ident),+) => {
        mod $backend {
            $(
                #[test]
                $(#[$attr])*
                fn $f() {
                    $crate::lean_panics_under_miri();
                    super::super::$f::<$S>($crate::params::<$S>($spec));
                }
            )+
        }
    };
}

/// Under Miri, replaces std's panic hook with one that prints the message and where it was
/// raised, and nothing else; natively it does nothing. Many of these tests panic on purpose
/// (hostile wakers, values whose drop panics), and std's hook costs Miri about two seconds a
/// panic: `chan/tests/unwinding.rs`'s spin tests took 26 s with it and 5 s with this one.
/// [`per_backend!`]'s tests and [`deadline`] call it; a failing test still prints its message.
pub fn lean_panics_under_miri() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if cfg!(miri) {
        ONCE.call_once(|| std::panic::set_hook(Box::new(lean_hook)));
    }
}

fn lean_hook(info: &std::panic::PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic whose payload is not a string)");
    match info.location() {
        Some(at) => eprintln!("panicked at {}:{}: {message}", at.file(), at.line()),
        None => eprintln!("panicked: {message}"),
    }
}

/// The parameters of the backend named `spec`, which must name strategy `S`.
pub fn params<S: Strategy>(spec: &str) -> S::Params {
    struct Get;
    impl Visit for Get {
        type Output = (&'static str, Box<dyn Any>);
        fn visit<T: Strategy>(self, p: T::Params) -> Self::Output {
            (T::NAME, Box::new(p))
        }
    }
    let backend: Backend = spec.parse().expect("a valid backend name");
    let (name, p) = backend.visit(Get);
    assert_eq!(
        name,
        S::NAME,
        "backend `{spec}` is not strategy {}",
        S::NAME
    );
    *p.downcast().expect("the strategy's own parameter type")
}

/// The factor `CHAN_TEST_SCALE` (a positive number, default 1) applies to iteration counts, in
/// the tests of both crates, so that slow instrumented runs (ThreadSanitizer) can do less of
/// the same work.
pub fn scale() -> f64 {
    match std::env::var("CHAN_TEST_SCALE") {
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => f,
            _ => panic!("CHAN_TEST_SCALE={s:?}: want a positive number such as 0.1"),
        },
        Err(_) => 1.0,
    }
}

/// `n` times [`scale`], but at least `min` (which a statistical check may need) and at least 1.
pub fn scaled(n: usize, min: usize) -> usize {
    ((n as f64 * scale()).round() as usize).max(min).max(1)
}

/// `native` normally, `miri` when interpreted by Miri (where a step costs some thousand times
/// more), times [`scale`] either way but never below `min`.
pub fn count(native: usize, miri: usize, min: usize) -> usize {
    scaled(if cfg!(miri) { miri } else { native }, min)
}

/// `native` normally, `miri` when interpreted by Miri, unscaled: for what is not an iteration
/// count (how many threads, how long a timeout), where one body serves both runs.
pub fn pick<T>(native: T, miri: T) -> T {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}

/// A value that counts its drops, to show nothing is leaked or dropped twice.
#[derive(Debug)]
pub struct Tracked {
    /// Which value this is.
    pub id: u64,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
    /// Value `id`, counting its drop in `drops`.
    pub fn new(id: u64, drops: &Arc<AtomicUsize>) -> Self {
        Tracked {
            id,
            drops: drops.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

/// Every backend, plus the adaptive one without its yield phase: the four `per_backend!` runs.
pub fn backends() -> Vec<Backend> {
    let mut v = Backend::ALL.to_vec();
    // The futex path alone (no yielding), where a lost wake-up would hang for good.
    v.push("adaptive:yield_ns=0".parse().unwrap());
    v
}

/// The name of the backend these parameters of `S` make, as `Backend` displays it.
pub fn name<S: Strategy>(params: S::Params) -> String {
    format!("{}{}", S::NAME, params)
}

/// The backend these parameters of `S` name, for the by-name paths (`Backend::mutex`).
pub fn backend<S: Strategy>(p: S::Params) -> Backend {
    name::<S>(p).parse().expect("a strategy's own name parses")
}

/// Runs `f` on a thread of its own and fails, naming `what`, if it has not finished in 30 s:
/// a lock left held or a wake-up lost shows up as a named failure, not a hung suite. A panic
/// in `f` goes on from here. Under Miri, whose clock is virtual and whose steps are slow, it
/// simply runs `f`.
pub fn deadline<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
    use std::time::Duration;
    if cfg!(miri) {
        lean_panics_under_miri();
        return f();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(f));
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(()) => t.join().unwrap().unwrap_or_else(|p| resume_unwind(p)),
        Err(_) => panic!("{what}: still running after 30 s (deadlock or lost wake-up)"),
    }
}
