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
