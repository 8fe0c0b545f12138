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
//! # The three-way verdict
//!
//! * **regressed**: the whole interval lies above 1 (the slowdown is significant) *and* the
//!   estimate exceeds `1 + threshold` (it matters);
//! * **ok**: the interval's upper end lies below `1 + threshold`: the data rule out a
//!   slowdown of that size (**improved** is the ok whose interval lies wholly below 1 with an
//!   estimate below `1 / (1 + threshold)`);
//! * **inconclusive**: neither, e.g. `[0.88, 1.46]`; "no evidence either way" is not "ok".
//!   [`more_reps`] says about how many more repetitions a side would likely decide it.
//!
//! # Many cells
//!
//! A run judges every cell, and with `k` cells at 95 % each the chance that *some* cell of an
//! unchanged build looks regressed would grow with `k`. The interval of each cell is therefore
//! a Bonferroni interval at `1 − 0.05/k` ([`Interval::ratio_among`]): the chance that any of
//! the `k` intervals misses its true ratio is at most 5 %, whatever `k` is, and a false
//! *regressed* also needs the estimate beyond the threshold, so the family-wise false-alarm
//! rate stays below 2.5 %. The price is wider intervals, i.e. more repetitions to decide.
//!
//! # Many looks
//!
//! With `--budget` a comparison judges an undecided cell again as repetitions are added, and
//! stops at the first decided verdict. Every look is another chance for a false verdict: a
//! 95 % interval looked at after each of a hundred repetitions calls an unchanged build
//! regressed far more often than 2.5 % of the time (at `--threshold 0.05` on the 2-vCPU guest,
//! 2 of the first 10 A/A runs were). So a budgeted comparison looks only at R, 2R, 4R, ...
//! repetitions a side ([`Looks`]), and its `j`-th look spends `1/(j(j+1))` of the error, shares
//! that sum to at most 1 however many looks a run takes (a union bound, as for the cells). A
//! verdict the budget cut short between two looks counts as one look more. Without a budget
//! there is one look, with all of the error.
//!
//! The test assumes repetitions are independent. Drift between a saved baseline and today
//! breaks that, which is why `--against` and `--compare` interleave their two sides,
//! repetition by repetition, so that drift hits both alike.

use crate::model::Via;
use crate::records::{median_sorted, Cell, Change, Interval, Results, Verdict};

/// Two-sided confidence level of a run's verdicts, all cells together (see the module docs).
pub(crate) const CONFIDENCE: f64 = 0.95;

/// When a comparison judges its cells: once (no budget), or at R, 2R, 4R, ... repetitions a
/// side while a budget lasts (see "Many looks" in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Looks {
    /// Repetitions a side at the first look (the plan's R).
    pub(crate) first: usize,
    /// Whether more looks may follow the first (a budget was given).
    pub(crate) sequential: bool,
}

impl Looks {
    /// A single look.
    #[cfg(test)]
    pub(crate) const ONE: Looks = Looks {
        first: 1,
        sequential: false,
    };

    /// Whether a comparison looks at its data with `reps` repetitions a side.
    pub(crate) fn is_look(self, reps: usize) -> bool {
        let first = self.first.max(1);
        !self.sequential || (reps % first == 0 && (reps / first).is_power_of_two())
    }

    /// The repetitions a side of the next look after `reps`.
    pub(crate) fn next(self, reps: usize) -> usize {
        let mut at = self.first.max(1);
        while at <= reps {
            at *= 2;
        }
        at
    }

    /// Into how many parts the error is split for a verdict at `reps` repetitions a side:
    /// `j(j+1)` for the `j`-th look, 1 for a single look.
    pub(crate) fn ways(self, reps: usize) -> usize {
        if !self.sequential {
            return 1;
        }
        // The looks up to `reps`: the next one is at first·2^j.
        let mut j = (self.next(reps) / self.first.max(1)).trailing_zeros() as usize;
        if !self.is_look(reps) {
            j += 1; // cut short between two looks: one look more
        }
        let j = j.max(1);
        j * (j + 1)
    }
}

/// Above this many pairs, the exact null distribution gives way to the normal approximation.
const EXACT_PAIRS: usize = 2500;

impl Interval {
    /// The ratio new/old of two sets of positive samples.
    ///
    /// Both must be non-empty; non-positive samples are clamped to the smallest positive
    /// float so that logarithms stay finite.
    #[cfg(test)]
    pub(crate) fn ratio(new: &[f64], old: &[f64]) -> Interval {
        Interval::ratio_among(new, old, 1)
    }

    /// The ratio new/old of one of `cells` cells judged together: a Bonferroni interval at
    /// `1 − (1 − CONFIDENCE)/cells`, so that all `cells` intervals hold together at
    /// [`CONFIDENCE`].
    pub(crate) fn ratio_among(new: &[f64], old: &[f64], cells: usize) -> Interval {
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
        match critical_u(new.len(), old.len(), alpha(cells)) {
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

impl Verdict {
    /// Applies the rule in the module docs.
    pub(crate) fn judge(iv: &Interval, threshold: f64) -> Verdict {
        match iv.high {
            None => Verdict::Inconclusive,
            Some(_) if iv.low > 1.0 && iv.estimate > 1.0 + threshold => Verdict::Regressed,
            Some(high) if high < 1.0 && iv.estimate < 1.0 / (1.0 + threshold) => Verdict::Improved,
            Some(high) if high < 1.0 + threshold => Verdict::Ok,
            Some(_) => Verdict::Inconclusive,
        }
    }
}

/// Where the old side of a comparison comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Old {
    /// Measured in this run (`--compare`, `--against`): its samples are checked as the new
    /// side's are ([`too_short`]).
    Measured,
    /// A file (`--baseline`), taken as it was saved.
    Saved,
}

impl Results {
    /// Each new cell against the same cell of `old`.
    pub(crate) fn against_baseline(&mut self, old: &Results, threshold: f64, looks: Looks) {
        self.against(old, "baseline", threshold, looks, Old::Saved);
    }

    /// Each new cell against the same cell of `old`, which is called `name`; every cell is
    /// one of the family the verdicts hold for together.
    pub(crate) fn against(
        &mut self,
        old: &Results,
        name: &str,
        threshold: f64,
        looks: Looks,
        measured: Old,
    ) {
        let family = self
            .cells
            .iter()
            .filter(|c| old.cell(&c.key()).is_some())
            .count();
        self.changes = self
            .cells
            .iter()
            .enumerate()
            .filter_map(|(i, new)| {
                let old = old.cell(&new.key())?;
                Some(Change::new(
                    (i, new),
                    (old, measured),
                    name.into(),
                    threshold,
                    family,
                    looks,
                ))
            })
            .collect();
    }

    /// The second backend against the first over our one transport (`chan`, `task` or
    /// `task-mt`), at each point; or, when the reference is a transport that takes no lock
    /// (`--compare kanal,adaptive`), the one backend over ours against that transport.
    pub(crate) fn between_backends(&mut self, threshold: f64, looks: Looks) {
        let n = self.lanes().len().max(1);
        let ours = self
            .params
            .vias()
            .ok()
            .and_then(|v| v.into_iter().find(|v| v.takes_lock()))
            .unwrap_or(Via::Chan);
        let chan = ours.name();
        let reference = self.params.reference.clone();
        let family = self.cells.len() / n;
        self.changes = self
            .cells
            .chunks(n)
            .enumerate()
            .filter_map(|(point, cells)| {
                let mut sides = cells
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.via == chan || c.via == reference);
                match (sides.next(), sides.next(), sides.next()) {
                    (Some(x), Some(y), None) => {
                        // A is the reference transport if there is one, else the first.
                        let ((_, a), (j, b)) = if y.1.via == reference { (y, x) } else { (x, y) };
                        let name = if a.via == chan { &a.lock } else { &a.via };
                        Some(Change::new(
                            (point * n + j, b),
                            (a, Old::Measured),
                            format!("{name} (A)"),
                            threshold,
                            family,
                            looks,
                        ))
                    }
                    _ => None,
                }
            })
            .collect();
    }
}

impl Change {
    /// `new` (at index `cell`) against `old`, one of `family` comparisons judged together, at
    /// the look its repetitions make it (the new side's count: the side that grows).
    fn new(
        (cell, new): (usize, &Cell),
        (old, measured): (&Cell, Old),
        against: String,
        threshold: f64,
        family: usize,
        looks: Looks,
    ) -> Change {
        let family = family * looks.ways(new.samples.len());
        let ratio = Interval::ratio_among(&new.ns_per_msg(), &old.ns_per_msg(), family);
        let unmeasured = too_short(new)
            .map(|why| format!("new side {why}"))
            .or_else(|| {
                let now = measured == Old::Measured;
                too_short(old)
                    .filter(|_| now)
                    .map(|why| format!("old side {why}"))
            });
        let verdict = match unmeasured {
            Some(_) => Verdict::Inconclusive,
            None => Verdict::judge(&ratio, threshold),
        };
        let reps = new.samples.len().min(old.samples.len());
        Change {
            lock: new.lock.clone(),
            against,
            against_exe: None,
            nbuf: new.nbuf,
            senders: new.senders,
            old_ns_per_msg: old.summary.ns_per_msg.median,
            new_ns_per_msg: new.summary.ns_per_msg.median,
            verdict,
            reps,
            new_reps: new.samples.len(),
            old_reps: old.samples.len(),
            more_reps: (!verdict.decided() && unmeasured.is_none())
                .then(|| more_reps(&ratio, reps, threshold, family))
                .flatten(),
            unmeasured,
            ratio,
            cell,
        }
    }
}

/// Below this a run's wall time is mostly the clock and the scheduler, not the work.
pub(crate) const MIN_SAMPLE_NS: u64 = 5_000;

/// Why `cell`'s samples cannot be judged, if they cannot: their median wall time is under
/// [`MIN_SAMPLE_NS`], or their CPU time is far beyond what M senders and a receiver can spend
/// in that wall time (twice M + 2 CPUs' worth), which means the clock missed work (a
/// pipe's run timed at 6.9 µs of wall for 403 µs of CPU, once). A higher -N cures both.
pub(crate) fn too_short(cell: &Cell) -> Option<String> {
    let mut walls: Vec<u64> = cell.samples.iter().map(|s| s.ns).collect();
    let mut cpu_per_wall: Vec<f64> = cell
        .samples
        .iter()
        .map(|s| s.cpu_ns as f64 / s.ns.max(1) as f64)
        .collect();
    if walls.is_empty() {
        return None;
    }
    walls.sort_unstable();
    cpu_per_wall.sort_by(f64::total_cmp);
    let wall = walls[(walls.len() - 1) / 2];
    let busy = cpu_per_wall[(cpu_per_wall.len() - 1) / 2];
    let most = 2.0 * (cell.senders + 2) as f64;
    if wall < MIN_SAMPLE_NS {
        Some(format!(
            "too short to time ({:.1} µs a run; raise -N)",
            wall as f64 / 1e3
        ))
    } else if busy > most {
        Some(format!(
            "not timed whole (CPU {busy:.0}x its wall time; raise -N)"
        ))
    } else {
        None
    }
}

/// One tail's share of the error of one of `cells` intervals: `(1 − CONFIDENCE)/2/cells`.
fn alpha(cells: usize) -> f64 {
    (1.0 - CONFIDENCE) / 2.0 / cells.max(1) as f64
}

/// How many more repetitions a side would likely turn an inconclusive cell into a decided
/// one, given its interval from `reps` repetitions a side: the log-interval's half-width
/// shrinks about as `1/√reps`, and it must shrink until the interval clears 1 (when the
/// estimate is beyond the threshold) or `1 + threshold` (when it is below). `None` when the
/// estimate sits on the threshold itself, where no number of repetitions is likely to decide.
pub(crate) fn more_reps(iv: &Interval, reps: usize, threshold: f64, cells: usize) -> Option<usize> {
    let Some(high) = iv.high else {
        // No interval yet: the fewest repetitions a side for which one exists.
        let least = (reps + 1..=64).find(|&r| critical_u(r, r, alpha(cells)).is_some())?;
        return Some(least - reps);
    };
    if iv.low <= 0.0 || !iv.estimate.is_finite() || iv.estimate <= 0.0 {
        return None;
    }
    let half = (high.ln() - iv.low.ln()) / 2.0;
    let (est, edge) = (iv.estimate.ln(), (1.0 + threshold).ln());
    let room = if est > edge { est } else { edge - est };
    if room <= 1e-3 || half <= 0.0 {
        return None;
    }
    let want = reps as f64 * (half / room).powi(2);
    let more = (want - reps as f64).ceil().max(1.0);
    // Beyond a few thousand the estimate means "not in this run", not a number to plan by.
    (more <= 10_000.0).then_some(more as usize)
}

/// The largest `c` with `P(U ≤ c) ≤ alpha` for the rank-sum statistic of samples of sizes `m`
/// and `n`, or `None` if even `P(U = 0)` is larger.
fn critical_u(m: usize, n: usize, alpha: f64) -> Option<usize> {
    if m * n > EXACT_PAIRS {
        // U has mean mn/2 and variance mn(m+n+1)/12; P(U ≤ c) ≈ Φ((c + ½ − μ)/σ).
        let (m, n) = (m as f64, n as f64);
        let sd = (m * n * (m + n + 1.0) / 12.0).sqrt();
        let c = (m * n / 2.0 - 0.5 - normal_quantile(1.0 - alpha) * sd).floor();
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
#[cfg(test)]
const Z_975: f64 = 1.959_963_984_540_054;

/// The `p` quantile of the standard normal distribution, `0.5 < p < 1` (Acklam's rational
/// approximation, relative error below 1.2e-9: far finer than a rank interval needs).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(0.5, 1.0 - 1e-15);
    if p <= 0.97575 {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

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

    fn cell(senders: u64, samples: &[(u64, u64)]) -> Cell {
        Cell {
            lock: "-".into(),
            via: "pipe".into(),
            nbuf: 10,
            senders,
            per_sender: 2000,
            size: 8,
            global_lock: false,
            summary: Default::default(),
            samples: samples
                .iter()
                .map(|&(ns, cpu_ns)| crate::model::Sample {
                    ns,
                    cpu_ns,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn samples_the_clock_missed_are_not_judged() {
        // Once: --compare pipe,adaptive -N 2000, a pipe sample of 6.9 us of wall for
        // 403 us of CPU, judged a 762x regression of adaptive.
        let pipe = cell(1, &[(6_900, 403_000); 5]);
        assert!(too_short(&pipe).unwrap().contains("not timed whole"));
        let missed = cell(1, &[(40_000, 403_000); 5]);
        assert!(too_short(&missed).unwrap().contains("not timed whole"));
        let tiny = cell(1, &[(3_000, 3_000); 5]);
        assert!(too_short(&tiny)
            .unwrap()
            .contains("too short to time (3.0 µs"));
        // Honest samples: a run with CPU time up to its threads' worth, long enough.
        assert_eq!(too_short(&cell(1, &[(400_000, 700_000); 5])), None);
        assert_eq!(too_short(&cell(8, &[(400_000, 3_000_000); 5])), None);
        // The median decides, not one odd sample.
        let one_odd = cell(
            1,
            &[(6_900, 403_000), (400_000, 400_000), (410_000, 400_000)],
        );
        assert_eq!(too_short(&one_odd), None);
        // A comparison with such a side is inconclusive, saying why, however far apart.
        let adaptive = Cell {
            lock: "adaptive".into(),
            via: "chan".into(),
            ..cell(1, &[(5_000_000, 5_000_000); 5])
        };
        let looks = Looks {
            first: 5,
            sequential: false,
        };
        let c = Change::new(
            (1, &adaptive),
            (&pipe, Old::Measured),
            "pipe (A)".into(),
            0.1,
            1,
            looks,
        );
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c
            .unmeasured
            .unwrap()
            .starts_with("old side not timed whole"));
        let honest = cell(1, &[(400_000, 400_000); 5]);
        let c = Change::new(
            (1, &adaptive),
            (&honest, Old::Measured),
            "pipe (A)".into(),
            0.1,
            1,
            looks,
        );
        assert_eq!((c.verdict, c.unmeasured), (Verdict::Regressed, None));
    }

    #[test]
    fn null_distribution_matches_tables() {
        // C(4, 2) = 6 orderings: U = 0, 1, 2, 2, 3, 4.
        assert_eq!(rank_sum_counts(2, 2), [1.0, 1.0, 2.0, 1.0, 1.0]);
        let c = rank_sum_counts(5, 5);
        assert_eq!(c.iter().sum::<f64>(), 252.0);
        assert_eq!(c.len(), 26);
        assert_eq!(rank_sum_counts(3, 7).iter().sum::<f64>(), 120.0);
        // Published two-sided 5% critical values of the Mann-Whitney U.
        assert_eq!(critical_u(3, 3, alpha(1)), None);
        assert_eq!(critical_u(4, 4, alpha(1)), Some(0));
        assert_eq!(critical_u(5, 5, alpha(1)), Some(2));
        assert_eq!(critical_u(6, 6, alpha(1)), Some(5));
        assert_eq!(critical_u(10, 10, alpha(1)), Some(23));
        assert_eq!(critical_u(20, 20, alpha(1)), Some(127));
        assert_eq!(critical_u(5, 8, alpha(1)), Some(6));
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
        assert_eq!(critical_u(60, 60, alpha(1)), Some(1426)); // normal approximation
    }

    #[test]
    fn same_samples_are_ok() {
        let x = [100.0, 103.0, 99.0, 101.0, 98.0];
        let iv = Interval::ratio(&x, &x);
        assert!((iv.estimate - 1.0).abs() < 1e-12);
        assert!(iv.low < 1.0 && iv.high.unwrap() > 1.0);
        assert!(iv.high.unwrap() < 1.1, "{iv:?}");
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Ok);
        // With no threshold an interval that straddles 1 rules nothing out.
        assert_eq!(Verdict::judge(&iv, 0.0), Verdict::Inconclusive);
    }

    #[test]
    fn a_clear_slowdown_is_flagged_only_beyond_the_threshold() {
        let old = [100.0, 103.0, 99.0, 101.0, 98.0];
        let new: Vec<f64> = old.iter().map(|x| x * 1.5).collect();
        let iv = Interval::ratio(&new, &old);
        assert!((iv.estimate - 1.5).abs() < 0.05, "{iv:?}");
        assert!(iv.low > 1.0);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Regressed);
        // Beyond the estimate but not beyond the interval's upper end: not ruled out.
        assert_eq!(Verdict::judge(&iv, 0.52), Verdict::Inconclusive);
        assert_eq!(Verdict::judge(&iv, 0.9), Verdict::Ok);
        let back = Interval::ratio(&old, &new);
        assert_eq!(Verdict::judge(&back, 0.1), Verdict::Improved);
    }

    #[test]
    fn overlap_is_not_significant() {
        let old = [100.0, 130.0, 90.0, 120.0, 95.0];
        let new = [125.0, 135.0, 100.0, 140.0, 110.0];
        let iv = Interval::ratio(&new, &old);
        assert!(iv.low <= 1.0, "{iv:?}");
        assert_eq!(Verdict::judge(&iv, 0.0), Verdict::Inconclusive);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Inconclusive);
        let more = more_reps(&iv, 5, 0.1, 1).unwrap();
        assert!((1..1000).contains(&more), "{more}");
    }

    /// Synthetic samples: `base` times a spread of ±`noise` (deterministic, evenly spaced).
    fn noisy(base: f64, noise: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| base * (1.0 + noise * (2.0 * i as f64 / (n - 1) as f64 - 1.0)))
            .collect()
    }

    #[test]
    fn the_three_verdicts() {
        let old = noisy(100.0, 0.02, 8);
        // Clearly regressed: 30 % slower, 2 % noise.
        let iv = Interval::ratio(&noisy(130.0, 0.02, 8), &old);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Regressed, "{iv:?}");
        // Clearly ok: the same, 2 % noise, interval well inside 1.10.
        let iv = Interval::ratio(&noisy(101.0, 0.02, 8), &old);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Ok, "{iv:?}");
        assert!(Verdict::Ok.decided());
        // Inconclusive: 8 % slower with 30 % noise; more repetitions would likely decide.
        let wide = noisy(100.0, 0.3, 8);
        let iv = Interval::ratio(&noisy(108.0, 0.3, 8), &wide);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Inconclusive, "{iv:?}");
        assert!(!Verdict::Inconclusive.decided());
        let more = more_reps(&iv, 8, 0.1, 1).unwrap();
        assert!(more >= 1, "{more}");
        // Too few for any interval: the fewest that would give one.
        let iv = Interval::ratio(&[2.0, 2.0], &[1.0, 1.0]);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Inconclusive);
        assert_eq!(
            more_reps(&iv, 2, 0.1, 1),
            Some(2),
            "4 a side give a 95 % interval"
        );
        assert_eq!(more_reps(&iv, 2, 0.1, 2), Some(3), "2 cells need 5 a side");
    }

    #[test]
    fn looks_double_and_split_the_error() {
        assert!(Looks::ONE.is_look(7));
        assert_eq!(Looks::ONE.ways(7), 1);
        let seq = Looks {
            first: 5,
            sequential: true,
        };
        let at: Vec<usize> = (1..=45).filter(|&r| seq.is_look(r)).collect();
        assert_eq!(at, [5, 10, 20, 40]);
        assert_eq!([5, 7, 10, 39].map(|r| seq.next(r)), [10, 10, 20, 40]);
        assert_eq!([5, 10, 20, 40].map(|r| seq.ways(r)), [2, 6, 12, 20]);
        assert_eq!(
            seq.ways(13),
            12,
            "cut short after the second look: the third"
        );
        let spent: f64 = (0..40).map(|k| 1.0 / seq.ways(5 << k) as f64).sum();
        assert!(spent < 1.0, "{spent}");
    }

    /// Unchanged builds (both sides from one distribution, 20 % noise), judged as a budget
    /// judges them: the old way, after every added repetition at the one-look level, calls
    /// far more of them regressed than the error allows; at the looks' levels, no more than it.
    #[test]
    fn many_looks_at_one_level_inflate_false_alarms() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut normal = move || {
            let mut uniform = || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 11) as f64 / (1u64 << 53) as f64 + 1e-12
            };
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let seq = Looks {
            first: 5,
            sequential: true,
        };
        let (runs, most, threshold) = (300, 20, 0.02);
        let (mut every, mut scheduled) = (0, 0);
        for _ in 0..runs {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            let (mut flagged_every, mut flagged_scheduled) = (false, false);
            for reps in 1..=most {
                x.push(100.0 * (0.2 * normal()).exp());
                y.push(100.0 * (0.2 * normal()).exp());
                if reps < 5 {
                    continue;
                }
                let regressed = |ways| {
                    Verdict::judge(&Interval::ratio_among(&y, &x, ways), threshold)
                        == Verdict::Regressed
                };
                flagged_every |= regressed(1);
                if seq.is_look(reps) {
                    flagged_scheduled |= regressed(seq.ways(reps));
                }
            }
            every += usize::from(flagged_every);
            scheduled += usize::from(flagged_scheduled);
        }
        eprintln!("false alarms of {runs}: looking every time {every}, at the looks {scheduled}");
        assert!(
            every > 2 * runs / 40,
            "looking every time: {every} of {runs}"
        );
        assert!(
            scheduled <= runs / 40,
            "at the looks: {scheduled} of {runs}"
        );
    }

    #[test]
    fn more_cells_widen_each_interval() {
        let (old, new) = (noisy(100.0, 0.1, 10), noisy(104.0, 0.1, 10));
        let one = Interval::ratio_among(&new, &old, 1);
        let many = Interval::ratio_among(&new, &old, 20);
        assert!(many.low <= one.low && many.high.unwrap() >= one.high.unwrap());
        assert!(many.high.unwrap() - many.low > one.high.unwrap() - one.low);
        assert_eq!(one.estimate, many.estimate);
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - Z_975).abs() < 1e-8);
        assert!((normal_quantile(0.995) - 2.575_829_303_548_901).abs() < 1e-8);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
    }

    #[test]
    fn three_reps_cannot_be_judged() {
        let iv = Interval::ratio(&[10.0, 10.0, 10.0], &[1.0, 1.0, 1.0]);
        assert_eq!(iv.high, None);
        assert_eq!(Verdict::judge(&iv, 0.1), Verdict::Inconclusive);
        assert_eq!(iv.to_string(), "[0, inf]");
    }

    #[test]
    fn keys_match_json() {
        for v in [
            Verdict::Regressed,
            Verdict::Improved,
            Verdict::Ok,
            Verdict::Inconclusive,
        ] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.key());
        }
        let old: Verdict = serde_json::from_str("\"too_few_reps\"").unwrap();
        assert_eq!(old, Verdict::Inconclusive);
    }

    #[test]
    fn median() {
        assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), 3.0);
    }
}
