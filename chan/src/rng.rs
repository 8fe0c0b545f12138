//! The random choices of an unbiased alt: cheap, and unable to panic.
//!
//! `rand::rng()` reaches a thread-local that panics once the thread's locals are being torn
//! down, and an alt may run inside a destructor at exactly that time. So each thread keeps its
//! own xorshift state in a const-initialised `Cell`, read with `try_with`; when even that is
//! gone it falls back to one process-wide splitmix stream. Fairness needs uniform choices, not
//! unpredictable ones.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

static STREAM: AtomicU64 = AtomicU64::new(GOLDEN);

thread_local! {
    static STATE: Cell<u64> = const { Cell::new(0) };
}

/// splitmix64's finaliser: a well-mixed value from each step of the shared stream.
fn shared() -> u64 {
    let mut z = STREAM.fetch_add(GOLDEN, Relaxed).wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn next() -> u64 {
    STATE
        .try_with(|s| {
            let mut x = s.get();
            if x == 0 {
                x = shared() | 1; // xorshift must not start at 0
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.set(x);
            x
        })
        .unwrap_or_else(|_| shared())
}

/// A uniform index below `n` (Lemire's multiply-shift; the bias is below 2^-32 for the arm
/// counts an alt has).
fn below(n: usize) -> usize {
    (((next() >> 32) * n as u64) >> 32) as usize
}

/// Puts `v` in a uniformly random order (Fisher-Yates).
///
/// Under loom it leaves `v` as it is: a model must make the same choices in every execution
/// of the same schedule, and this state outlives an execution (loom runs every execution on
/// one OS thread), so shuffling made the alt models non-deterministic, which loom reports as
/// an "unexpected exploration state" or as assertions failing inside its checker.
pub(crate) fn shuffle(v: &mut [usize]) {
    if cfg!(loom) {
        return;
    }
    for i in (1..v.len()).rev() {
        v.swap(i, below(i + 1));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn every_order_of_three_comes_up_about_equally() {
        let mut counts = std::collections::HashMap::new();
        for _ in 0..60_000 {
            let mut v = [0, 1, 2];
            super::shuffle(&mut v);
            *counts.entry(v).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 6);
        // 10,000 expected each; 5 standard deviations is about 450.
        assert!(
            counts.values().all(|&c| (9_500..=10_500).contains(&c)),
            "{counts:?}"
        );
    }
}
