//! Is the new figure slower than the old one, beyond noise and beyond a threshold?
//!
//! # Method
//!
//! For each cell we have old samples `x` and new samples `y` (ns per message, one per
//! repetition). We estimate the ratio new/old with a 95% confidence interval from the
//! Mann-Whitney (Wilcoxon rank-sum) test applied to logarithms, i.e. the Hodges-Lehmann
//! interval for a shift of `ln y` against `ln x`:
//!
//! * the `m·n` pairwise differences `d = ln y_i − ln x_j` are sorted;
//! * the estimate is `exp(median d)`;
//! * the interval is `[exp d₍ₖ₎, exp d₍ₘₙ₊₁₋ₖ₎]`, where `k − 1` is the largest `c` with
//!   `P(U ≤ c) ≤ 2.5%` under the exact null distribution of the rank-sum statistic `U`
//!   (normal approximation when `m·n` is large).
//!
//! Why this and not a t-test or a bootstrap: timings are skewed and outlier-prone, with a few
//! samples per cell. The rank interval assumes neither normality nor large samples, keeps its
//! 95% coverage at five samples a side (where a percentile bootstrap is too narrow), is
//! deterministic (no seed), and working on logarithms makes it an interval for a *ratio*, which
//! is what "10% slower" means. Its price: with fewer than four samples a side no interval at
//! 95% exists at all (`P(U = 0) > 2.5%`), and such cells are reported as too few to judge.
//!
//! A cell is **regressed** only when the whole interval lies above 1 (the slowdown is
//! significant) *and* the estimate exceeds `1 + threshold` (it matters); **improved** is the
//! mirror image. The test assumes repetitions are independent; drift between a baseline and
//! today is what the threshold absorbs, and `--compare` interleaves its two sides so that drift
//! hits both alike.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Two-sided confidence level of the interval.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// Above this many pairs, the exact null distribution gives way to the normal approximation.
const EXACT_PAIRS: usize = 2500;

/// An estimate of new/old and its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Interval {
    /// Hodges-Lehmann estimate of the ratio.
    pub estimate: f64,
    /// Lower bound (0 when there are too few samples for any interval).
    pub low: f64,
    /// Upper bound (`None` when there are too few samples, as JSON has no infinity).
    pub high: Option<f64>,
}

impl Interval {
    /// The ratio new/old of two sets of positive samples.
    ///
    /// Both must be non-empty; non-positive samples are clamped to the smallest positive
    /// float so that logarithms stay finite.
    pub(crate) fn ratio(new: &[f64], old: &[f64]) -> Interval {
        assert!(
            !new.is_empty() && !old.is_empty(),
            "Interval::ratio of an empty sample"
        );
        let ln = |v: &f64| v.max(f64::MIN_POSITIVE).ln();
        let (ly, lx): (Vec<f64>, Vec<f64>) =
            (new.iter().map(ln).collect(), old.iter().map(ln).collect());
        let mut d: Vec<f64> = ly
            .iter()
            .flat_map(|y| lx.iter().map(move |x| y - x))
            .collect();
        d.sort_by(f64::total_cmp);
        let estimate = median_sorted(&d).exp();
        match critical_u(new.len(), old.len()) {
            Some(c) => Interval {
                estimate,
                low: d[c].exp(),
                high: Some(d[d.len() - 1 - c].exp()),
            },
            None => Interval {
                estimate,
                low: 0.0,
                high: None,
            },
        }
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.high {
            Some(h) => write!(f, "[{:.3}, {:.3}]", self.low, h),
            None => f.write_str("[0, inf]"),
        }
    }
}

/// What a comparison concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Significantly slower, by more than the threshold.
    Regressed,
    /// Significantly faster, by more than the threshold.
    Improved,
    /// Neither.
    Ok,
    /// Fewer than four samples on a side: no 95% interval exists.
    TooFewReps,
}

impl Verdict {
    /// Applies the rule in the module docs.
    pub(crate) fn judge(iv: &Interval, threshold: f64) -> Verdict {
        match iv.high {
            None => Verdict::TooFewReps,
            Some(_) if iv.low > 1.0 && iv.estimate > 1.0 + threshold => Verdict::Regressed,
            Some(high) if high < 1.0 && iv.estimate < 1.0 / (1.0 + threshold) => Verdict::Improved,
            Some(_) => Verdict::Ok,
        }
    }
}

impl Verdict {
    /// The name JSON and CSV use.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Ok => "ok",
            Verdict::TooFewReps => "too_few_reps",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Improved => "improved",
            Verdict::Ok => "ok",
            Verdict::TooFewReps => "too few reps",
        })
    }
}

/// The median of sorted, non-empty `v`.
pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The largest `c` with `P(U ≤ c) ≤ (1 − CONFIDENCE)/2` for the rank-sum statistic of samples
/// of sizes `m` and `n`, or `None` if even `P(U = 0)` is larger.
fn critical_u(m: usize, n: usize) -> Option<usize> {
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    if m * n > EXACT_PAIRS {
        // U has mean mn/2 and variance mn(m+n+1)/12; P(U ≤ c) ≈ Φ((c + ½ − μ)/σ).
        let (m, n) = (m as f64, n as f64);
        let sd = (m * n * (m + n + 1.0) / 12.0).sqrt();
        let c = (m * n / 2.0 - 0.5 - Z_975 * sd).floor();
        return (c >= 0.0).then_some(c as usize);
    }
    let counts = rank_sum_counts(m, n);
    let total: f64 = counts.iter().sum();
    let mut cumulative = 0.0;
    let mut critical = None;
    for (c, count) in counts.iter().enumerate() {
        cumulative += count;
        // A hair of slack so that exact ties with α (rounding in the sum) count as within.
        if cumulative / total > alpha * (1.0 + 1e-9) {
            break;
        }
        critical = Some(c);
    }
    critical
}

/// The 97.5th percentile of the standard normal distribution.
const Z_975: f64 = 1.959_963_984_540_054;

/// `counts[u]`: how many of the `C(m+n, m)` orderings of two samples have rank-sum statistic
/// `U = u`; these are the coefficients of the Gaussian binomial `[m+n choose m]_q`, built row by
/// row with the q-Pascal rule `[k, j] = [k−1, j−1] + q^j [k−1, j]`.
fn rank_sum_counts(m: usize, n: usize) -> Vec<f64> {
    let mut row: Vec<Vec<f64>> = vec![vec![1.0]];
    for k in 1..=m + n {
        let next = (0..=k.min(m))
            .map(|j| {
                let mut p = vec![0.0; j * (k - j) + 1];
                if let Some(a) = j.checked_sub(1).and_then(|i| row.get(i)) {
                    p.iter_mut().zip(a).for_each(|(p, a)| *p += a);
                }
                if let Some(b) = row.get(j).filter(|_| j < k) {
                    p[j..].iter_mut().zip(b).for_each(|(p, b)| *p += b);
                }
                p
            })
            .collect();
        row = next;
    }
    row.swap_remove(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_distribution_matches_tables() {
        // C(4, 2) = 6 orderings: U = 0, 1, 2, 2, 3, 4.
        assert_eq!(rank_sum_counts(2, 2), [1.0, 1.0, 2.0, 1.0, 1.0]);
        let c = rank_sum_counts(5, 5);
        assert_eq!(c.iter().sum::<f64>(), 252.0);
        assert_eq!(c.len(), 26);
        assert_eq!(rank_sum_counts(3, 7).iter().sum::<f64>(), 120.0);
        // Published two-sided 5% critical values of the Mann-Whitney U.
        assert_eq!(critical_u(3, 3), None);
        assert_eq!(critical_u(4, 4), Some(0));
        assert_eq!(critical_u(5, 5), Some(2));
        assert_eq!(critical_u(6, 6), Some(5));
        assert_eq!(critical_u(10, 10), Some(23));
        assert_eq!(critical_u(20, 20), Some(127));
        assert_eq!(critical_u(5, 8), Some(6));
        // The approximation agrees with the exact values where both apply.
        let (m, n) = (40usize, 40usize);
        let exact = {
            let counts = rank_sum_counts(m, n);
            let total: f64 = counts.iter().sum();
            let mut acc = 0.0;
            counts
                .iter()
                .take_while(|&&x| {
                    acc += x;
                    acc / total <= 0.025
                })
                .count()
                - 1
        };
        assert!(m * n <= EXACT_PAIRS);
        let c = (m as f64 * n as f64 / 2.0
            - 0.5
            - Z_975 * ((m * n) as f64 * (m + n + 1) as f64 / 12.0).sqrt())
        .floor() as usize;
        assert!(exact.abs_diff(c) <= 1, "exact {exact}, normal {c}");
        assert_eq!(critical_u(60, 60), Some(1426)); // normal approximation
    }

    #[test]
    fn same_samples_are_ok() {
        let x = [100.0, 103.0, 99.0, 101.0, 98.0];
        let iv = Interval::ratio(&x, &x);
        assert!((iv.estimate - 1.0).abs() < 1e-12);
        assert!(iv.low < 1.0 && iv.high.unwrap() > 1.0);
        assert_eq!(Verdict::judge(&iv, 0.0), Verdict::Ok);
    }

    #[test]
    fn a_clear_slowdown_is_flagged_only_beyond_the_threshold() {
        let old = [100.0, 103.0, 99.0, 101.0, 98.0];
        let new: Vec<f64> = old.iter().map(|x| x * 1.5).collect();
        let iv = Interval::ratio(&new, &old);
        assert!((iv.estimate - 1.5).abs() < 0.05, "{iv:?}");
        assert!(iv.low > 1.0);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Regressed);
        assert_eq!(Verdict::judge(&iv, 0.6), Verdict::Ok);
        let back = Interval::ratio(&old, &new);
        assert_eq!(Verdict::judge(&back, 0.1), Verdict::Improved);
    }

    #[test]
    fn overlap_is_not_significant() {
        let old = [100.0, 130.0, 90.0, 120.0, 95.0];
        let new = [125.0, 135.0, 100.0, 140.0, 110.0];
        let iv = Interval::ratio(&new, &old);
        assert!(iv.low <= 1.0, "{iv:?}");
        assert_eq!(Verdict::judge(&iv, 0.0), Verdict::Ok);
    }

    #[test]
    fn three_reps_cannot_be_judged() {
        let iv = Interval::ratio(&[10.0, 10.0, 10.0], &[1.0, 1.0, 1.0]);
        assert_eq!(iv.high, None);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::TooFewReps);
        assert_eq!(iv.to_string(), "[0, inf]");
    }

    #[test]
    fn keys_match_json() {
        for v in [
            Verdict::Regressed,
            Verdict::Improved,
            Verdict::Ok,
            Verdict::TooFewReps,
        ] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.key());
        }
    }

    #[test]
    fn median() {
        assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
    }
}
