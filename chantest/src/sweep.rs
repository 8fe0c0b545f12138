//! Running every cell of a sweep: which runs, in what order.
//!
//! A cell is one (O, M) point for one lane: a lock backend over `chan`, or another transport
//! (`--via`). Within each (O, M) point the lanes take turns, repetition by repetition
//! (A B C A B C …), after one warm-up round: whatever drifts over the sweep (clock frequency,
//! other load, thermal state) then falls on every lane alike, so their ratios and a
//! `--compare` verdict are not biased by run order.

use crate::affinity::Cpus;
use crate::error::{usage, Error};
use crate::grid::Grid;
use crate::measure::Sample;
use crate::progress::Progress;
use crate::results::Key;
use crate::via::{self, Via};
use crate::workload::{self, Spec};
use locks::Backend;

/// Unmeasured rounds per (O, M) point before the measured ones: they fault in stacks and
/// buffers and let the CPU clock settle.
pub(crate) const WARMUP: usize = 1;

/// Everything a sweep needs to know.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The backends `chan` runs with, in report order.
    pub backends: Vec<Backend>,
    /// Index into `backends` of the one the others are divided by.
    pub reference: usize,
    /// The transports, in report order; `chan` stands for every backend.
    pub vias: Vec<Via>,
    /// S: bytes per message.
    pub size: usize,
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
    pub(crate) fn points(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let ms = self.senders.values();
        self.nbuf
            .values()
            .iter()
            .flat_map(move |&o| ms.iter().map(move |&m| (o, m)))
    }

    /// The lanes of every point, in report order: `--via`'s order, with `chan` standing for
    /// each backend in turn.
    pub(crate) fn lanes(&self) -> Vec<Lane> {
        self.vias
            .iter()
            .flat_map(|&via| match via {
                Via::Chan => (0..self.backends.len()).map(Lane::Chan).collect(),
                other => vec![Lane::Via(other)],
            })
            .collect()
    }

    /// How many runs the sweep makes, warm-ups included.
    pub(crate) fn total_runs(&self) -> usize {
        self.points().count() * self.lanes().len() * (WARMUP + self.reps)
    }

    /// The name a lane's cells carry in the `lock` column.
    pub(crate) fn lock_name(&self, lane: Lane) -> String {
        match lane {
            Lane::Chan(i) => self.backends[i].to_string(),
            Lane::Via(_) => NO_LOCK.to_string(),
        }
    }

    /// The key of every cell the sweep makes, in report order.
    pub(crate) fn keys(&self) -> Vec<Key> {
        let lanes = self.lanes();
        self.points()
            .flat_map(|(o, m)| {
                lanes.iter().map(move |&lane| Key {
                    lock: self.lock_name(lane),
                    via: lane.via().name().to_string(),
                    nbuf: o,
                    senders: m,
                    per_sender: self.per_sender,
                    size: self.size as u64,
                    global_lock: self.global_lock,
                })
            })
            .collect()
    }
}

/// The `lock` of a cell whose transport takes no lock backend.
pub(crate) const NO_LOCK: &str = "-";

/// What one cell runs on: a lock backend over `chan`, or another transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// `chan` with the backend at this index of the plan's backends.
    Chan(usize),
    /// Another transport.
    Via(Via),
}

impl Lane {
    /// The transport.
    pub(crate) fn via(self) -> Via {
        match self {
            Lane::Chan(_) => Via::Chan,
            Lane::Via(v) => v,
        }
    }
}

/// The samples of one cell.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measured {
    /// What it ran on.
    pub lane: Lane,
    /// O.
    pub nbuf: u64,
    /// M.
    pub senders: u64,
    /// One per measured repetition, in run order.
    pub samples: Vec<Sample>,
}

/// Runs the sweep; cells come back in report order: by point, then by lane.
pub(crate) fn run(plan: &Plan) -> Result<Vec<Measured>, Error> {
    if plan.vias.contains(&Via::Signal) {
        // Before any thread starts, so that every thread inherits the block.
        via::signal::block()?;
    }
    let cpus = if plan.pin {
        Some(Cpus::current().map_err(|e| usage!("--pin: cannot read the CPU mask: {e}"))?)
    } else {
        None
    };
    let lanes = plan.lanes();
    let mut progress = Progress::new(plan.total_runs());
    let mut cells = Vec::new();
    for (o, m) in plan.points() {
        let spec = Spec {
            nbuf: o as usize,
            senders: m as usize,
            per_sender: plan.per_sender,
            size: plan.size,
            global_lock: plan.global_lock,
            pin: cpus.as_ref(),
            fault: plan.fault,
        };
        let first = cells.len();
        cells.extend(lanes.iter().map(|&lane| Measured {
            lane,
            nbuf: o,
            senders: m,
            samples: Vec::with_capacity(plan.reps),
        }));
        for round in 0..WARMUP + plan.reps {
            for (i, &lane) in lanes.iter().enumerate() {
                let sample = match lane {
                    Lane::Chan(b) => workload::run(&plan.backends[b], &spec)?,
                    Lane::Via(v) => via::run(v, &spec)?,
                };
                if round >= WARMUP {
                    cells[first + i].samples.push(sample);
                }
                match lane {
                    Lane::Chan(b) => {
                        progress.advance(&format_args!("{} O={o} M={m}", plan.backends[b]))
                    }
                    Lane::Via(v) => progress.advance(&format_args!("{v} O={o} M={m}")),
                }
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
            vias: vec![Via::Chan],
            size: 8,
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
        let keys: Vec<_> = cells.iter().map(|c| (c.nbuf, c.senders, c.lane)).collect();
        let (a, b) = (Lane::Chan(0), Lane::Chan(1));
        assert_eq!(
            keys,
            [
                (0, 2, a),
                (0, 2, b),
                (0, 1, a),
                (0, 1, b),
                (4, 2, a),
                (4, 2, b),
                (4, 1, a),
                (4, 1, b)
            ]
        );
        assert!(cells.iter().all(|c| c.samples.len() == 2));
    }

    #[test]
    fn transports_are_lanes() {
        let plan = Plan {
            backends: vec![Backend::ALL[1], Backend::ALL[2]],
            reference: 0,
            vias: vec![Via::Pipe, Via::Chan, Via::Unix],
            size: 8,
            nbuf: Grid::one(1),
            senders: Grid::one(2),
            per_sender: 200,
            reps: 1,
            global_lock: false,
            pin: false,
            fault: false,
        };
        let lanes = [
            Lane::Via(Via::Pipe),
            Lane::Chan(0),
            Lane::Chan(1),
            Lane::Via(Via::Unix),
        ];
        assert_eq!(plan.lanes(), lanes);
        assert_eq!(plan.total_runs(), 4 * 2);
        let cells = run(&plan).unwrap();
        assert_eq!(cells.iter().map(|c| c.lane).collect::<Vec<_>>(), lanes);
        let keys = plan.keys();
        assert_eq!((keys[0].lock.as_str(), keys[0].via.as_str()), ("-", "pipe"));
        assert_eq!(
            (keys[1].lock.as_str(), keys[1].via.as_str()),
            ("sem", "chan")
        );
    }
}
