//! `--calibrate`: what a regression check can catch on this machine, measured.
//!
//! It repeats two comparisons, both through [`against::compare`] with this build on both
//! sides, with the plan's N, R, cells, pinning, threshold and budget:
//!
//! * **A/A**: the plan's lock against itself. Any *regressed* verdict is a false alarm.
//! * **A/A'**: the lock with `hold_ns=H` (a busy-wait of H ns inside every critical section,
//!   a known slowdown) against the plain lock. A *regressed* verdict is a detection.
//!
//! The two kinds alternate, run by run, so that a noisy minute falls on both. A run counts as
//! flagged when any of its cells is regressed, since that is what fails a CI job; the
//! slowdown A' really caused is reported as the tool measured it (the median over runs of
//! each cell's ratio estimate), since a given H slows different cells differently.

use crate::against::{self, Side};
use crate::error::{usage, Error};
use crate::plan::Plan;
use crate::records::Change;
use crate::records::{median_sorted, Verdict};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Duration;

/// What to calibrate.
#[derive(Clone, Debug)]
pub(crate) struct Calibration {
    /// A/A runs.
    pub same: usize,
    /// A/A' runs.
    pub slowed: usize,
    /// The injected hold, in ns.
    pub hold_ns: u32,
}

/// One comparison's outcome.
struct Run {
    changes: Vec<Change>,
    wall: Duration,
}

impl Run {
    fn flagged(&self) -> bool {
        self.changes.iter().any(|c| c.verdict == Verdict::Regressed)
    }
    fn inconclusive(&self) -> bool {
        !self.flagged() && self.changes.iter().any(|c| !c.verdict.decided())
    }
}

/// Runs the calibration and returns its summary; each run's line goes to stdout as it ends,
/// so a long calibration shows its progress.
pub(crate) fn run(
    plan: &Plan,
    cal: &Calibration,
    threshold: f64,
    budget: Option<Duration>,
) -> Result<String, Error> {
    if plan.backends.len() != 1 || plan.backends[0].name() != "adaptive" {
        return Err(usage!(
            "--calibrate injects its slowdown into the adaptive lock: give --lock adaptive (with \
             any parameters but hold_ns), not --lock {}",
            plan.backends
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if plan.backends[0].to_string().contains("hold_ns") {
        return Err(usage!(
            "--calibrate sets hold_ns itself: leave it out of --lock"
        ));
    }
    let this = Side::this_for("--calibrate")?;
    let slowed = Side {
        hold_ns: Some(cal.hold_ns),
        ..this.clone()
    };
    let head = format!(
        "# calibration: {} -O {} -M {} -N {} -R {}{}{}, threshold {threshold}; A/A' adds \
         hold_ns={} to the lock",
        plan.backends[0],
        list(plan.nbuf.values()),
        list(plan.senders.values()),
        plan.per_sender,
        plan.reps,
        budget.map_or(String::new(), |b| format!(" --budget {}s", b.as_secs_f64())),
        plan.pin
            .map_or(String::new(), |how| format!(" {}", how.flag())),
        cal.hold_ns,
    );
    say(&format!(
        "{head}\n# kind run  verdict       wall s  cells (ratio [interval] reps verdict)"
    ));
    let (mut same, mut slow) = (Vec::new(), Vec::new());
    for i in 0..cal.same.max(cal.slowed) {
        for (kind, runs, new, want) in [
            ("A/A ", &mut same, &this, cal.same),
            ("A/A'", &mut slow, &slowed, cal.slowed),
        ] {
            if i >= want {
                continue;
            }
            let out = against::compare(plan, new, &this, threshold, budget)?;
            let run = Run {
                changes: out.results.changes,
                wall: out.wall,
            };
            say(&line(kind, i + 1, &run));
            runs.push(run);
        }
    }
    Ok(summary(&head, &same, &slow, cal))
}

/// Prints one line on stdout at once.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

fn list(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

fn line(kind: &str, n: usize, run: &Run) -> String {
    let verdict = if run.flagged() {
        "REGRESSED"
    } else if run.inconclusive() {
        "inconclusive"
    } else {
        "ok"
    };
    let cells: Vec<String> = run
        .changes
        .iter()
        .map(|c| {
            format!(
                "O={} M={} {:.3} {} {} {}",
                c.nbuf, c.senders, c.ratio.estimate, c.ratio, c.reps, c.verdict
            )
        })
        .collect();
    format!(
        "  {kind} {n:>3}  {verdict:<12} {:>6.1}  {}",
        run.wall.as_secs_f64(),
        cells.join("; ")
    )
}

fn percent(k: usize, n: usize) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * k as f64 / n as f64)
    }
}

/// `met (2 of 40)` or `NOT met (…)`, `-` without runs.
fn meets(k: usize, n: usize, ok: fn(f64) -> bool) -> String {
    if n == 0 {
        return "-".into();
    }
    let met = if ok(k as f64 / n as f64) {
        "met"
    } else {
        "NOT met"
    };
    format!("{met} ({})", percent(k, n))
}

/// For the runs that ended undecided: about what budget would have decided them, from each
/// undecided cell's `more_reps` at the run's own pace (seconds per repetition of a cell, both
/// sides), as `wall + Σ more_reps × pace`. A cell whose estimate sits on the threshold has no
/// `more_reps` (no budget is likely to decide it) and is counted apart.
fn budget_needed(same: &[Run], slow: &[Run]) -> Option<String> {
    let mut need: Vec<f64> = Vec::new();
    let mut hopeless = 0;
    for r in same.iter().chain(slow).filter(|r| r.inconclusive()) {
        let reps: usize = r.changes.iter().map(|c| c.reps).sum();
        let pace = r.wall.as_secs_f64() / reps.max(1) as f64;
        let mut extra = 0.0;
        for c in r.changes.iter().filter(|c| !c.verdict.decided()) {
            match c.more_reps {
                Some(k) => extra += k as f64 * pace,
                None => hopeless += 1,
            }
        }
        need.push(r.wall.as_secs_f64() + extra);
    }
    if need.is_empty() {
        return None;
    }
    need.sort_by(f64::total_cmp);
    Some(format!(
        "undecided runs: {} would likely have been decided with a budget of about {:.0} s \
         (median), {:.0} s (max){}\n",
        need.len(),
        median_sorted(&need),
        need[need.len() - 1],
        if hopeless > 0 {
            format!(
                "; {hopeless} cells sat on the threshold, where no budget is likely to decide them"
            )
        } else {
            String::new()
        }
    ))
}

fn summary(head: &str, same: &[Run], slow: &[Run], cal: &Calibration) -> String {
    let count = |runs: &[Run], f: fn(&Run) -> bool| runs.iter().filter(|r| f(r)).count();
    let cells = |runs: &[Run]| runs.iter().map(|r| r.changes.len()).sum::<usize>();
    let cells_flagged = |runs: &[Run]| {
        runs.iter()
            .flat_map(|r| &r.changes)
            .filter(|c| c.verdict == Verdict::Regressed)
            .count()
    };
    let mut out = format!("{head}\n");
    let (fa, fi) = (count(same, Run::flagged), count(same, Run::inconclusive));
    let _ = writeln!(
        out,
        "false alarms (A/A runs flagged regressed): {fa} of {} runs ({}), {} of {} cells; \
         inconclusive {fi} of {}",
        same.len(),
        percent(fa, same.len()),
        cells_flagged(same),
        cells(same),
        same.len()
    );
    let (d, di) = (count(slow, Run::flagged), count(slow, Run::inconclusive));
    let _ = writeln!(
        out,
        "detection (A/A' runs flagged regressed, hold_ns={}): {d} of {} runs ({}), {} of {} \
         cells; inconclusive {di} of {}",
        cal.hold_ns,
        slow.len(),
        percent(d, slow.len()),
        cells_flagged(slow),
        cells(slow),
        slow.len()
    );
    // The slowdown hold_ns caused, per cell, as the tool measured it.
    if let Some(first) = slow.first() {
        let per_cell: Vec<String> = (0..first.changes.len())
            .map(|i| {
                let mut e: Vec<f64> = slow
                    .iter()
                    .filter_map(|r| r.changes.get(i).map(|c| c.ratio.estimate))
                    .collect();
                e.sort_by(f64::total_cmp);
                let c = &first.changes[i];
                format!("O={} M={} {:.3}x", c.nbuf, c.senders, median_sorted(&e))
            })
            .collect();
        let _ = writeln!(
            out,
            "injected slowdown as measured (median of A/A' estimates): {}",
            per_cell.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "targets: detection at least 90 %: {}; false alarms at most 5 %: {}; A/A inconclusive at \
         most 10 %: {}",
        meets(d, slow.len(), |r| r >= 0.9),
        meets(fa, same.len(), |r| r <= 0.05),
        meets(fi, same.len(), |r| r <= 0.10),
    );
    if let Some(line) = budget_needed(same, slow) {
        out += &line;
    }
    let mut walls: Vec<f64> = same
        .iter()
        .chain(slow)
        .map(|r| r.wall.as_secs_f64())
        .collect();
    walls.sort_by(f64::total_cmp);
    if !walls.is_empty() {
        let mut reps: Vec<f64> = same
            .iter()
            .chain(slow)
            .flat_map(|r| r.changes.iter().map(|c| c.reps as f64))
            .collect();
        reps.sort_by(f64::total_cmp);
        let _ = writeln!(
            out,
            "wall per verdict: median {:.1} s, max {:.1} s; repetitions a side per cell: median \
             {}, max {}",
            median_sorted(&walls),
            walls[walls.len() - 1],
            median_sorted(&reps),
            reps[reps.len() - 1]
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Interval;

    fn run(verdict: Verdict, reps: usize, more: Option<usize>, wall: u64) -> Run {
        Run {
            changes: vec![Change {
                lock: "adaptive".into(),
                against: "adaptive".into(),
                against_exe: None,
                nbuf: 10,
                senders: 8,
                old_ns_per_msg: 100.0,
                new_ns_per_msg: 100.0,
                ratio: Interval {
                    estimate: 1.0,
                    low: 0.8,
                    high: Some(1.2),
                },
                verdict,
                reps,
                new_reps: reps,
                old_reps: reps,
                more_reps: more,
                unmeasured: None,
                cell: 0,
            }],
            wall: Duration::from_secs(wall),
        }
    }

    #[test]
    fn targets_are_checked() {
        assert_eq!(meets(18, 20, |r| r >= 0.9), "met (90.0 %)");
        assert_eq!(meets(1, 6, |r| r <= 0.05), "NOT met (16.7 %)");
        assert_eq!(meets(0, 0, |r| r <= 0.05), "-");
    }

    #[test]
    fn the_budget_that_would_decide_undecided_runs() {
        // 20 repetitions in 60 s: 3 s each; 100 more would take 300 s more.
        let same = [
            run(Verdict::Inconclusive, 20, Some(100), 60),
            run(Verdict::Ok, 20, None, 30),
        ];
        let slow = [run(Verdict::Inconclusive, 10, None, 60)];
        let line = budget_needed(&same, &slow).unwrap();
        assert!(line.starts_with("undecided runs: 2 "), "{line}");
        assert!(line.contains("360 s (max)"), "{line}");
        assert!(line.contains("1 cells sat on the threshold"), "{line}");
        assert_eq!(budget_needed(&same[1..], &[]), None);
    }
}
