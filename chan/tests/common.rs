//! Helpers shared by the channel tests.
#![allow(dead_code)]

use locks::{Backend, Strategy, Visit};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// A value that counts its drops, to show nothing is leaked or dropped twice.
#[derive(Debug)]
pub struct Tracked {
    pub id: u64,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
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

/// Every backend, plus the adaptive one without its yield phase.
pub fn backends() -> Vec<Backend> {
    let mut v = Backend::ALL.to_vec();
    // The futex path alone (no yielding), where a lost wake-up would hang for good.
    v.push("adaptive:yield_ns=0".parse().unwrap());
    v
}

/// Runs `V` with every backend.
pub fn for_each_backend<V: Visit<Output = ()> + Clone>(v: V) {
    for b in backends() {
        // Captured by the test harness and shown with a failure: which backend it was.
        eprintln!("backend {b}");
        b.visit(v.clone());
    }
}

pub fn name<S: Strategy>(params: S::Params) -> String {
    format!("{}{}", S::NAME, params)
}

/// One `#[test]` per behaviour and backend: `per_backend!(f, g)` makes modules `spin`, `sem`,
/// `adaptive` and `adaptive_futex` (adaptive without its yield phase), each with tests `f`
/// and `g` calling `f::<Backend>(params)`, so a failure names its case and backend.
#[allow(unused_macros)] // every test file but the one that uses it sees it unused
macro_rules! per_backend {
    ($($case:ident),* $(,)?) => {
        $crate::common::per_backend!(@one spin, locks::SpinYield, Default::default(); $($case),*);
        $crate::common::per_backend!(@one sem, locks::SemLock, Default::default(); $($case),*);
        $crate::common::per_backend!(@one adaptive, locks::Adaptive, Default::default(); $($case),*);
        $crate::common::per_backend!(@one adaptive_futex, locks::Adaptive,
            locks::AdaptiveParams { yield_ns: 0, ..locks::AdaptiveParams::DEFAULT }; $($case),*);
    };
    (@one $m:ident, $s:ty, $p:expr; $($case:ident),*) => {
        mod $m {
            $(
                #[test]
                fn $case() {
                    super::$case::<$s>($p)
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use per_backend;
