//! `--budget` for `--baseline` and `--compare`: more repetitions of what can be re-run.
//!
//! After the plan's sweep the cells are judged; while some are undecided and the budget (which
//! counts from the start of the run) is not spent, each (O, M) point with an undecided cell is
//! run again: one unmeasured warm-up round of the lanes that can be re-run, then [`STEP`]
//! measured rounds of them taking turns, as the sweep did. What can be re-run is this build's
//! side: with `--baseline` the new cell alone (the saved side's samples stay as saved), with
//! `--compare` both sides of the point, so that they keep taking turns. Cells are judged
//! at R, 2R, 4R, ... repetitions ([`Looks`]): a re-run stops at the next look.
//!
//! `--compare --per-process` runs every repetition of each side as a fresh process instead, as
//! [`isolate`] does for a sweep: the sweep first, then, for an undecided
//! point, the two sides one process each in turn, the side that goes first alternating (each
//! process runs its own warm-up).

use crate::affinity::Cpus;
use crate::against::{self, MAX_REPS};
use crate::error::Error;
use crate::isolate;
use crate::machine;
use crate::model::Via;
use crate::plan::{Plan, WARMUP};
use crate::records::Results;
use crate::run::{self, Measured};
use crate::verdict::Looks;
use std::time::{Duration, Instant};

/// Measured rounds added to an undecided point each time round: enough to move an interval,
/// few enough that a decided cell stops soon after it is decided.
pub(crate) const STEP: usize = 2;

/// What a re-run repeats for an undecided cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The cell itself (`--baseline`: the other side is a file).
    Cell,
    /// Both compared lanes of the cell's point (`--compare`: two backends over our
    /// transport, or one and the reference transport), taking turns.
    Point,
}

/// How the repetitions are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// Rounds in this process, as a sweep runs them.
    InProcess,
    /// One fresh process per repetition (`--per-process`).
    PerProcess,
}

/// Runs the sweep and judges it with `judge`; with a `budget`, re-runs `side` of each
/// undecided cell until every cell is decided or the budget is spent.
pub(crate) fn sweep(
    plan: &Plan,
    budget: Option<Duration>,
    side: Side,
    runs: Runs,
    judge: impl Fn(&mut Results, Looks),
) -> Result<Results, Error> {
    let start = Instant::now();
    let mut measured = match runs {
        Runs::InProcess => run::sweep(plan)?,
        Runs::PerProcess => isolate::sweep(plan)?,
    };
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
    let cpus = plan.pin.map(Cpus::for_pinning).transpose()?;
    let lanes = plan.lanes().len().max(1);
    // Only a per-process re-run needs our own executable.
    let me = match runs {
        Runs::PerProcess => Some(against::Side::this_for("--per-process")?),
        Runs::InProcess => None,
    };
    let mut slowest = None;
    loop {
        let r = results(&measured);
        let mut todo: Vec<usize> = Vec::new();
        // A verdict between two looks is not acted on: the cell goes on to the next look.
        let settled =
            |c: &&crate::records::Change| c.verdict.decided() && looks.is_look(c.new_reps);
        // A cell too short to time stays so however often it is re-run.
        for c in r
            .changes
            .iter()
            .filter(|c| !settled(c) && c.unmeasured.is_none())
        {
            match side {
                Side::Cell => todo.push(c.cell),
                Side::Point => {
                    let first = c.cell / lanes * lanes;
                    let compared = |v: Via| v.takes_lock() || Some(v) == plan.reference_via;
                    todo.extend(
                        (first..first + lanes).filter(|&i| compared(measured[i].lane.via())),
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
            if let Some(me) = &me {
                // Each process runs its own warm-up.
                for _ in 0..step {
                    let reps = measured[point[0]].samples.len();
                    // Which side goes first alternates, repetition by repetition.
                    for k in 0..point.len() {
                        let i = point[(reps + k) % point.len()];
                        // Our own build answers: the limit only stops one that hangs (the
                        // budget is looked at between processes).
                        let limit = against::answer_limit(None, slowest, 0.0);
                        let t = Instant::now();
                        let cell = (o, m, measured[i].lane);
                        let sample = against::run_one(plan, cell, me, limit)?;
                        slowest = slowest.max(Some(t.elapsed()));
                        measured[i].samples.push(sample);
                    }
                }
                continue;
            }
            let spec = run::spec(plan, (o, m), cpus.as_ref());
            for round in 0..WARMUP + step {
                for &i in point {
                    let sample = run::run_lane(plan, measured[i].lane, &spec)?;
                    if round >= WARMUP {
                        measured[i].samples.push(sample);
                    }
                }
            }
        }
    }
}
