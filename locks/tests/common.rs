//! Helpers shared by the lock tests (the macro is the one in `chan/tests/common.rs`).
#![allow(dead_code, unused_macros)]

use locks::{Backend, Strategy, Visit};
use std::any::Any;

/// One `#[test]` per behaviour and backend.
///
/// ```ignore
/// per_backend! { mutex: mutual_exclusion_oversubscribed, waiters }
/// fn waiters<S: Strategy>(p: S::Params) { .. }
/// ```
///
/// makes `mutex::spin::waiters`, `mutex::sem::waiters`, `mutex::adaptive::waiters` and
/// `mutex::adaptive_futex::waiters` (the last is `adaptive:yield_ns=0`: the futex path alone,
/// where a lost wake-up hangs for good), and the same for `mutual_exclusion_oversubscribed`.
/// Each calls the function with its strategy and the parameters parsed from the backend's
/// name, so a failure names both, and `cargo test sem::` or `cargo test waiters` picks a
/// slice. A function may ask for more than `Strategy` (say `RawMutex`): the macro names the
/// types. An attribute written before a name (`#[cfg_attr(miri, ignore)] big_stress`) goes on
/// all four of its tests.
macro_rules! per_backend {
    ($group:ident: $($(#[$attr:meta])* $f:ident),+ $(,)?) => {
        mod $group {
            per_backend!(@one spin, ::locks::SpinYield, "spin"; $($(#[$attr])* $f),+);
            per_backend!(@one sem, ::locks::SemLock, "sem"; $($(#[$attr])* $f),+);
            per_backend!(@one adaptive, ::locks::Adaptive, "adaptive"; $($(#[$attr])* $f),+);
            per_backend!(@one adaptive_futex, ::locks::Adaptive, "adaptive:yield_ns=0";
                $($(#[$attr])* $f),+);
        }
    };
    (@one $backend:ident, $S:ty, $spec:literal; $($(#[$attr:meta])* $f:ident),+) => {
        mod $backend {
            $(
                #[test]
                $(#[$attr])*
                fn $f() {
                    super::super::$f::<$S>($crate::common::params::<$S>($spec));
                }
            )+
        }
    };
}

/// The parameters of the backend named `spec`, which must name strategy `S`.
pub(crate) fn params<S: Strategy>(spec: &str) -> S::Params {
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

/// The factor `CHAN_TEST_SCALE` (shared with the `chan` tests; a positive number, default 1) applies to iteration counts, so
/// that slow instrumented runs (ThreadSanitizer) can do less of the same work.
pub(crate) fn scale() -> f64 {
    match std::env::var("CHAN_TEST_SCALE") {
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(f) if f > 0.0 && f.is_finite() => f,
            _ => panic!("CHAN_TEST_SCALE={s:?}: want a positive number such as 0.1"),
        },
        Err(_) => 1.0,
    }
}

/// `n` times [`scale`], but at least `min` (which a statistical check may need) and at least 1.
pub(crate) fn scaled(n: usize, min: usize) -> usize {
    ((n as f64 * scale()).round() as usize).max(min).max(1)
}

/// `native` normally, `miri` when interpreted by Miri (where a step costs some thousand times
/// more), times [`scale`] either way but never below `min`.
pub(crate) fn count(native: usize, miri: usize, min: usize) -> usize {
    scaled(if cfg!(miri) { miri } else { native }, min)
}

/// The backend these parameters of `S` name, for the by-name paths (`Backend::mutex`).
pub(crate) fn backend<S: Strategy>(p: S::Params) -> Backend {
    format!("{}{}", S::NAME, p)
        .parse()
        .expect("a strategy's own name parses")
}
