//! `--per-process`: a sweep in which every repetition of every cell is a fresh chantest
//! process, as `--against` runs each side ([`against::run_one`]), so that no lane shares a
//! process's allocator, thread stacks, lock calibration or warmed caches with another.
//!
//! Within each (O, M) point the lanes take turns, repetition by repetition, in an order
//! rotated by one place per repetition (the rotation carrying on across points), so that no
//! lane always runs first or always runs just after the same other one. Each process runs its
//! own warm-up round and [`against::ROUNDS`] measured rounds; the repetition's sample is the
//! median of those. The cells come back as [`run::sweep`](crate::run::sweep)'s do, so every
//! report and verdict works on them unchanged.

use crate::against::{self, Side};
use crate::error::Error;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::run::Measured;

/// Runs `plan`'s sweep one process per repetition of each cell; cells come back in report
/// order: by point, then by lane.
pub(crate) fn sweep(plan: &Plan) -> Result<Vec<Measured>, Error> {
    // Refused here, in the words an in-process run would use, rather than by the first child.
    if let Some(how) = plan.pin {
        crate::affinity::Cpus::for_pinning(how)?;
    }
    let me = Side::this_for("--per-process")?;
    let lanes = plan.lanes();
    let mut progress = Progress::new(plan.points().count() * lanes.len() * plan.reps);
    let mut cells = Vec::new();
    let mut slot = 0;
    let mut slowest = None;
    for (o, m) in plan.points() {
        let first = cells.len();
        cells.extend(Measured::point(&lanes, (o, m), plan.reps));
        for _ in 0..plan.reps {
            for k in 0..lanes.len() {
                let i = (slot + k) % lanes.len();
                // Our own build answers; the limit only stops one that hangs.
                let limit = against::answer_limit(None, slowest, 0.0);
                let t = std::time::Instant::now();
                let sample = against::run_one(plan, (o, m, lanes[i]), &me, limit)?;
                slowest = slowest.max(Some(t.elapsed()));
                cells[first + i].samples.push(sample);
                progress.advance(&format_args!("{} O={o} M={m}", plan.lock_name(lanes[i])));
            }
            slot += 1;
        }
    }
    progress.finish();
    Ok(cells)
}
