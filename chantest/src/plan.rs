//! What to run, typed: the one source of a cell's identity.
//!
//! A [`Plan`] is what the command line (or a baseline's parameters) asks for; its [`Plan::keys`]
//! name every cell the run will make, in report order, and a [`Key`] is how a cell is found
//! again in a saved file or another build's output. Nothing here runs anything.

use crate::grid::Grid;
use crate::model::{Placement, Via};
use crate::records::{Key, NO_LOCK};
use locks::Backend;

/// Unmeasured rounds per (O, M) point before the measured ones: they fault in stacks and
/// buffers and let the CPU clock settle.
pub(crate) const WARMUP: usize = 1;

/// Everything a sweep needs to know.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The backends `chan`, `task` and `task-mt` run with, in report order.
    pub backends: Vec<Backend>,
    /// Index into `backends` of the one the others are divided by.
    pub reference: usize,
    /// The transports, in report order; `chan`, `task` and `task-mt` each stand for every
    /// backend.
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
    /// Pin threads to CPUs, and how (`--pin`).
    pub pin: Option<Placement>,
    /// Make sender 0 send a duplicate (to test the check).
    pub fault: bool,
    /// The transport ratios are taken against when it takes no lock (`--ref kanal`);
    /// otherwise `reference` names the backend.
    pub reference_via: Option<Via>,
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

    /// The lanes of every point, in report order: `--via`'s order, with each transport that
    /// takes a lock (`chan`, `task`, `task-mt`) standing for each backend in turn.
    pub(crate) fn lanes(&self) -> Vec<Lane> {
        self.vias
            .iter()
            .flat_map(|&via| {
                if via.takes_lock() {
                    (0..self.backends.len())
                        .map(|b| Lane::Locked(via, b))
                        .collect()
                } else {
                    vec![Lane::Via(via)]
                }
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
            Lane::Locked(_, i) => self.backends[i].to_string(),
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

/// What one cell runs on: a lock backend over our channel (`chan`, `task`, `task-mt`), or
/// another transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// A transport that takes a lock ([`Via::takes_lock`]), with the backend at this index of
    /// the plan's backends.
    Locked(Via, usize),
    /// A transport that takes none.
    Via(Via),
}

impl Lane {
    /// The transport.
    pub(crate) fn via(self) -> Via {
        match self {
            Lane::Locked(v, _) | Lane::Via(v) => v,
        }
    }
}
