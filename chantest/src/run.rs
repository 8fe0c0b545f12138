//! Running every cell of a sweep: which runs, in what order.
//!
//! A cell is one (O, M) point for one lane: a lock backend over our channel (`chan` with
//! threads, `task`/`task-mt` with tasks), or another transport (`--via`). Within each (O, M) point the lanes take turns, repetition by repetition
//! (A B C A B C …), after one warm-up round: whatever drifts over the sweep (clock frequency,
//! other load, thermal state) then falls on every lane alike, so their ratios and a
//! `--compare` verdict are not biased by run order.

use crate::affinity::Cpus;
use crate::error::Error;
use crate::model::{Machine, Placement, Sample, Via};
use crate::plan::{Lane, Plan, WARMUP};
use crate::progress::Progress;
use crate::records::{Cell, Params, Results, Summary, FORMAT, VERSION};
use crate::via;
use crate::via::spec::Spec;

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

impl Measured {
    /// The cells of the point (O, M), one per lane, each with room for `reps` samples.
    pub(crate) fn point(
        lanes: &[Lane],
        (nbuf, senders): (u64, u64),
        reps: usize,
    ) -> impl Iterator<Item = Measured> + '_ {
        lanes.iter().map(move |&lane| Measured {
            lane,
            nbuf,
            senders,
            samples: Vec::with_capacity(reps),
        })
    }
}

/// The workload of `plan`'s point (O, M), for this process's threads.
pub(crate) fn spec<'a>(plan: &Plan, (o, m): (u64, u64), pin: Option<&'a Cpus>) -> Spec<'a> {
    Spec {
        nbuf: o as usize,
        senders: m as usize,
        per_sender: plan.per_sender,
        size: plan.size,
        global_lock: plan.global_lock,
        pin,
        fault: plan.fault,
    }
}

/// One run of `lane` in this process.
pub(crate) fn run_lane(plan: &Plan, lane: Lane, spec: &Spec<'_>) -> Result<Sample, Error> {
    match lane {
        Lane::Locked(v, b) => via::run(v, &plan.backends[b], spec),
        Lane::Via(v) => via::run(v, &locks::Backend::DEFAULT, spec),
    }
}

/// Runs the sweep; cells come back in report order: by point, then by lane.
pub(crate) fn sweep(plan: &Plan) -> Result<Vec<Measured>, Error> {
    if plan.vias.contains(&Via::Signal) {
        // Before any thread starts, so that every thread inherits the block.
        via::signal::block()?;
    }
    let cpus = plan.pin.map(Cpus::for_pinning).transpose()?;
    let lanes = plan.lanes();
    let mut progress = Progress::new(plan.total_runs());
    let mut cells = Vec::new();
    for (o, m) in plan.points() {
        let spec = spec(plan, (o, m), cpus.as_ref());
        let first = cells.len();
        cells.extend(Measured::point(&lanes, (o, m), plan.reps));
        for round in 0..WARMUP + plan.reps {
            for (i, &lane) in lanes.iter().enumerate() {
                let sample = run_lane(plan, lane, &spec)?;
                if round >= WARMUP {
                    cells[first + i].samples.push(sample);
                }
                match lane {
                    Lane::Locked(Via::Chan, b) => {
                        progress.advance(&format_args!("{} O={o} M={m}", plan.backends[b]))
                    }
                    Lane::Locked(v, b) => {
                        progress.advance(&format_args!("{v}/{} O={o} M={m}", plan.backends[b]))
                    }
                    Lane::Via(v) => progress.advance(&format_args!("{v} O={o} M={m}")),
                }
            }
        }
    }
    progress.finish();
    Ok(cells)
}

/// The records of `plan`'s run: what `--save` writes, with every summary computed.
pub(crate) fn records(plan: &Plan, measured: Vec<Measured>, machine: Machine) -> Results {
    let lock = |i: usize| plan.backends[i].to_string();
    let cells = measured
        .into_iter()
        .map(|m| Cell {
            lock: plan.lock_name(m.lane),
            via: m.lane.via().name().to_string(),
            nbuf: m.nbuf,
            senders: m.senders,
            per_sender: plan.per_sender,
            size: plan.size as u64,
            global_lock: plan.global_lock,
            summary: Summary::default(),
            samples: m.samples,
        })
        .collect();
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (pin, apart) = Placement::to_flags(plan.pin);
    let mut results = Results {
        format: FORMAT.to_string(),
        version: VERSION,
        unix_time,
        params: Params {
            locks: (0..plan.backends.len()).map(lock).collect(),
            reference: plan
                .reference_via
                .map_or_else(|| lock(plan.reference), |v| v.name().to_string()),
            via: plan.vias.iter().map(|v| v.name().to_string()).collect(),
            size: plan.size as u64,
            nbuf: plan.nbuf.values().to_vec(),
            senders: plan.senders.values().to_vec(),
            per_sender: plan.per_sender,
            reps: plan.reps,
            warmup: WARMUP,
            global_lock: plan.global_lock,
            pin,
            apart,
            stats: locks::stats::ENABLED,
        },
        machine,
        cells,
        changes: Vec::new(),
    };
    results.summarize();
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;
    use crate::model::Bounds;
    use locks::Backend;

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
            pin: None,
            fault: false,
            reference_via: None,
        };
        assert_eq!(plan.total_runs(), 4 * 2 * 3);
        let cells = sweep(&plan).unwrap();
        let keys: Vec<_> = cells.iter().map(|c| (c.nbuf, c.senders, c.lane)).collect();
        let (a, b) = (Lane::Locked(Via::Chan, 0), Lane::Locked(Via::Chan, 1));
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
            pin: None,
            fault: false,
            reference_via: None,
        };
        let lanes = [
            Lane::Via(Via::Pipe),
            Lane::Locked(Via::Chan, 0),
            Lane::Locked(Via::Chan, 1),
            Lane::Via(Via::Unix),
        ];
        assert_eq!(plan.lanes(), lanes);
        assert_eq!(plan.total_runs(), 4 * 2);
        let cells = sweep(&plan).unwrap();
        assert_eq!(cells.iter().map(|c| c.lane).collect::<Vec<_>>(), lanes);
        let keys = plan.keys();
        assert_eq!((keys[0].lock.as_str(), keys[0].via.as_str()), ("-", "pipe"));
        assert_eq!(
            (keys[1].lock.as_str(), keys[1].via.as_str()),
            ("sem", "chan")
        );
    }
}
