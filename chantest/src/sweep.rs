//! Running every cell of a sweep: which runs, in what order.
//!
//! A cell is one (O, M) point for one backend. Within each (O, M) point the backends take
//! turns, repetition by repetition (A B C A B C …), after one warm-up round: whatever drifts
//! over the sweep (clock frequency, other load, thermal state) then falls on every backend
//! alike, so their ratios and a `--compare` verdict are not biased by run order.

use crate::affinity::Cpus;
use crate::error::{usage, Error};
use crate::grid::Grid;
use crate::measure::Sample;
use crate::progress::Progress;
use crate::workload::{self, Spec};
use locks::Backend;

/// Unmeasured rounds per (O, M) point before the measured ones: they fault in stacks and
/// buffers and let the CPU clock settle.
pub const WARMUP: usize = 1;

/// Everything a sweep needs to know.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The backends, in report order.
    pub backends: Vec<Backend>,
    /// Index into `backends` of the one the others are divided by.
    pub reference: usize,
    /// O: channel buffers.
    pub nbuf: Grid,
    /// M: senders.
    pub senders: Grid,
    /// N: values per sender.
    pub per_sender: u64,
    /// R: measured repetitions per cell.
    pub reps: usize,
    /// Plan 9's global channel lock.
    pub global_lock: bool,
    /// Pin threads to CPUs.
    pub pin: bool,
    /// Make sender 0 send a duplicate (to test the check).
    pub fault: bool,
}

impl Plan {
    /// Every (O, M) point in report order: O outer, M inner, each in the order given.
    pub fn points(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let ms = self.senders.values();
        self.nbuf
            .values()
            .iter()
            .flat_map(move |&o| ms.iter().map(move |&m| (o, m)))
    }

    /// How many runs the sweep makes, warm-ups included.
    pub fn total_runs(&self) -> usize {
        self.points().count() * self.backends.len() * (WARMUP + self.reps)
    }
}

/// The samples of one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Index into the plan's backends.
    pub backend: usize,
    /// O.
    pub nbuf: u64,
    /// M.
    pub senders: u64,
    /// One per measured repetition, in run order.
    pub samples: Vec<Sample>,
}

/// Runs the sweep; cells come back in report order: by point, then by backend.
pub fn run(plan: &Plan) -> Result<Vec<Measured>, Error> {
    let cpus = if plan.pin {
        Some(Cpus::current().map_err(|e| usage!("--pin: cannot read the CPU mask: {e}"))?)
    } else {
        None
    };
    let mut progress = Progress::new(plan.total_runs());
    let mut cells = Vec::new();
    for (o, m) in plan.points() {
        let spec = Spec {
            nbuf: o as usize,
            senders: m as usize,
            per_sender: plan.per_sender,
            global_lock: plan.global_lock,
            pin: cpus.as_ref(),
            fault: plan.fault,
        };
        let first = cells.len();
        cells.extend((0..plan.backends.len()).map(|backend| Measured {
            backend,
            nbuf: o,
            senders: m,
            samples: Vec::with_capacity(plan.reps),
        }));
        for round in 0..WARMUP + plan.reps {
            for (i, backend) in plan.backends.iter().enumerate() {
                let sample = workload::run(backend, &spec)?;
                if round >= WARMUP {
                    cells[first + i].samples.push(sample);
                }
                progress.advance(&format_args!("{backend} O={o} M={m}"));
            }
        }
    }
    progress.finish();
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Bounds;

    #[test]
    fn runs_every_cell_in_order() {
        let b = Bounds {
            flag: "-O",
            min: 0,
            max: 100,
        };
        let plan = Plan {
            backends: vec![Backend::ALL[1], Backend::ALL[2]],
            reference: 0,
            nbuf: Grid::parse("0,4", b).unwrap(),
            senders: Grid::parse("2,1", b).unwrap(),
            per_sender: 100,
            reps: 2,
            global_lock: false,
            pin: false,
            fault: false,
        };
        assert_eq!(plan.total_runs(), 4 * 2 * 3);
        let cells = run(&plan).unwrap();
        let keys: Vec<_> = cells
            .iter()
            .map(|c| (c.nbuf, c.senders, c.backend))
            .collect();
        assert_eq!(
            keys,
            [
                (0, 2, 0),
                (0, 2, 1),
                (0, 1, 0),
                (0, 1, 1),
                (4, 2, 0),
                (4, 2, 1),
                (4, 1, 0),
                (4, 1, 1)
            ]
        );
        assert!(cells.iter().all(|c| c.samples.len() == 2));
    }
}
