//! A small seeded generator, and how each round's seed derives from the master seed.
//!
//! Hand-rolled (SplitMix64) rather than `rand` so that a printed seed means the same workload
//! whatever version of a dependency a later build picks up.

/// SplitMix64: one 64-bit state, every seed (including 0) a good one.
#[derive(Clone, Debug)]
pub(super) struct Rng(u64);

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl Rng {
    /// A generator whose whole sequence is decided by `seed`.
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        finish(self.0)
    }

    /// Uniform in `0..n` (0 when `n` is 0), by multiply-and-shift: no modulo bias worth
    /// speaking of for the small `n` used here.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `0..n`, as an index.
    pub(super) fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub(super) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `per_1024 / 1024`.
    pub(super) fn chance(&mut self, per_1024: u32) -> bool {
        self.below(1024) < u64::from(per_1024)
    }

    /// An index drawn with the given weights (the last index if they are all zero).
    pub(super) fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut x = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if x < u64::from(w) {
                return i;
            }
            x -= u64::from(w);
        }
        weights.len() - 1
    }
}

/// SplitMix64's output function: a bijection that scatters nearby inputs.
fn finish(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Two numbers into one well-scattered seed.
pub(super) fn mix(a: u64, b: u64) -> u64 {
    finish(a ^ finish(b.wrapping_add(GOLDEN)))
}

/// How many lock configurations the rounds cycle through: the low bits of a round's seed.
pub(super) const CONFIGS: u64 = 8;

/// The seed of round `round` of a run with `master` seed.
///
/// Round 0 *is* the master seed, so that `--seed S` with a round's printed seed S replays
/// that round as the first of a new run. Later rounds are scattered, except that their low
/// bits step through the [`CONFIGS`] lock configurations, so that every run of eight rounds
/// visits each once whatever the master seed.
pub(super) fn round_seed(master: u64, round: u64) -> u64 {
    if round == 0 {
        return master;
    }
    let config = master.wrapping_add(round) % CONFIGS;
    (mix(master, round) & !(CONFIGS - 1)) | config
}

/// A master seed for a run given none: different every run, printed so that it can be
/// replayed.
pub(super) fn from_clock() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // Shortened to 32 bits: a seed is typed back in by hand.
    mix(nanos, u64::from(std::process::id())) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_cycle_through_every_config() {
        for master in [0, 1, 0xdead_beef, u64::MAX] {
            assert_eq!(round_seed(master, 0), master);
            let mut seen: Vec<u64> = (0..CONFIGS)
                .map(|r| round_seed(master, r) % CONFIGS)
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..CONFIGS).collect::<Vec<_>>(), "master {master}");
        }
    }

    #[test]
    fn draws_stay_in_range() {
        let mut r = Rng::new(7);
        for _ in 0..10_000 {
            assert!(r.below(5) < 5);
            assert!((3..=9).contains(&r.between(3, 9)));
            assert_eq!(r.weighted(&[0, 4, 0]), 1);
        }
        assert_eq!(r.below(0), 0);
    }
}
