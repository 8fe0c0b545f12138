//! `--budget` for `--baseline` and `--compare`: more repetitions of what can be re-run.
//!
//! After the plan's sweep the cells are judged; while some are undecided and the budget (which
//! counts from the start of the run) is not spent, each (O, M) point with an undecided cell is
//! run again: one unmeasured warm-up round of the lanes that can be re-run, then [`STEP`]
//! measured rounds of them taking turns, as the sweep did. What can be re-run is this build's
//! side: with `--baseline` the new cell alone (the saved side's samples stay as saved), with
//! `--compare` both backends of the point, so that they keep taking turns. Cells are judged
//! at R, 2R, 4R, ... repetitions ([`Looks`]): a re-run stops at the next look.

use crate::affinity::Cpus;
use crate::against::MAX_REPS;
use crate::error::{usage, Error};
use crate::machine;
use crate::model::Via;
use crate::plan::{Lane, Plan, WARMUP};
use crate::records::Results;
use crate::run::{self, Measured};
use crate::verdict::Looks;
use crate::via;
use crate::via::spec::Spec;
use std::time::{Duration, Instant};

/// Measured rounds added to an undecided point each time round: enough to move an interval,
/// few enough that a decided cell stops soon after it is decided.
pub(crate) const STEP: usize = 2;

/// What a re-run repeats for an undecided cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The cell itself (`--baseline`: the other side is a file).
    Cell,
    /// Every `chan` lane of the cell's point (`--compare`: both backends, taking turns).
    Point,
}

/// Runs the sweep and judges it with `judge`; with a `budget`, re-runs `side` of each
/// undecided cell until every cell is decided or the budget is spent.
pub(crate) fn sweep(
    plan: &Plan,
    budget: Option<Duration>,
    side: Side,
    judge: impl Fn(&mut Results, Looks),
) -> Result<Results, Error> {
    let start = Instant::now();
    let mut measured = run::sweep(plan)?;
    let looks = Looks {
        first: plan.reps,
        sequential: budget.is_some(),
    };
    let results = |m: &[Measured]| {
        let mut r = run::records(plan, m.to_vec(), machine::describe());
        judge(&mut r, looks);
        r
    };
    let Some(budget) = budget else {
        return Ok(results(&measured));
    };
    let cpus = if plan.pin {
        Some(Cpus::current().map_err(|e| usage!("--pin: cannot read the CPU mask: {e}"))?)
    } else {
        None
    };
    let lanes = plan.lanes().len().max(1);
    loop {
        let r = results(&measured);
        let mut todo: Vec<usize> = Vec::new();
        // A verdict between two looks is not acted on: the cell goes on to the next look.
        let settled =
            |c: &&crate::records::Change| c.verdict.decided() && looks.is_look(c.new_reps);
        for c in r.changes.iter().filter(|c| !settled(c)) {
            match side {
                Side::Cell => todo.push(c.cell),
                Side::Point => {
                    let first = c.cell / lanes * lanes;
                    todo.extend(
                        (first..first + lanes).filter(|&i| measured[i].lane.via() == Via::Chan),
                    );
                }
            }
        }
        todo.sort_unstable();
        todo.dedup();
        todo.retain(|&i| measured[i].samples.len() < MAX_REPS);
        if todo.is_empty() || start.elapsed() >= budget {
            return Ok(r);
        }
        // Point by point, in report order.
        for point in todo.chunk_by(|&a, &b| a / lanes == b / lanes) {
            if start.elapsed() >= budget {
                break;
            }
            let (o, m) = (measured[point[0]].nbuf, measured[point[0]].senders);
            let spec = Spec {
                nbuf: o as usize,
                senders: m as usize,
                per_sender: plan.per_sender,
                size: plan.size,
                global_lock: plan.global_lock,
                pin: cpus.as_ref(),
                fault: plan.fault,
            };
            // Up to the next look, not past it.
            let step = point
                .iter()
                .map(|&i| {
                    let reps = measured[i].samples.len();
                    looks.next(reps) - reps
                })
                .min()
                .unwrap_or(STEP)
                .clamp(1, STEP);
            for round in 0..WARMUP + step {
                for &i in point {
                    let sample = match measured[i].lane {
                        Lane::Locked(v, b) => via::run(v, &plan.backends[b], &spec)?,
                        Lane::Via(v) => via::run(v, &locks::Backend::DEFAULT, &spec)?,
                    };
                    if round >= WARMUP {
                        measured[i].samples.push(sample);
                    }
                }
            }
        }
    }
}
