//! The lanes: the locks that can guard our channel in a run, each with the workload compiled
//! for it.
//!
//! A lane is a name and a function pointer to the workload monomorphized for one strategy
//! when the lane was added ([`Locks::with`]), so that a run on a lock of the user's own costs
//! what a run on ours does: no dispatch per operation. The same call registers the strategy
//! with `locks`, so that `--lock` parses its name as a [`Backend`] like any other. `main_with`
//! installs the binary's [`Locks`] once, before anything is parsed; every run finds its lane
//! by the backend's name ([`run`]).

use crate::error::{usage, Error};
use crate::model::Sample;
use crate::via::spec::Spec;
use crate::via::{lane, Driver};
use locks::{Adaptive, Backend, Raw, SemLock, SpinYield, StdLock, Strategy};
use std::sync::OnceLock;

/// The locks a chantest binary runs on our channel: a registry of lanes, each the workload
/// compiled for one lock strategy.
///
/// [`Locks::builtin`] is what the `chantest` binary runs: `spin`, `sem` and `adaptive`, this
/// project's locks, by default; and, named with `--lock`, `std` (std's mutex,
/// [`locks::StdLock`]) and `parking_lot` (parking_lot's raw mutex through [`locks::Raw`]),
/// each waiting as `adaptive` does, so that only the lock differs. [`Locks::with`] adds a
/// strategy of your own, run by default beside ours:
///
/// ```
/// // A lock of your own: here the semaphore lock under another name, to keep this short.
/// type TicketLock = locks::Raw<locks::SemLock>;
/// let locks = chantest::Locks::builtin().with_as::<TicketLock>("ticket");
/// # drop(locks);
/// // `chantest::main_with(locks)` then takes `--lock ticket,adaptive,std,parking_lot`.
/// ```
#[derive(Debug)]
pub struct Locks {
    lanes: Vec<Lane>,
    /// The first strategy `locks` refused to register, reported by `main_with`.
    refused: Option<String>,
}

/// One lock's lane.
#[derive(Clone, Copy, Debug)]
struct Lane {
    /// The name `--lock` takes, as registered with `locks`.
    name: &'static str,
    /// Run when no `--lock` is given.
    by_default: bool,
    /// The workload compiled for the lane's strategy; `None` if the backend is not of it.
    run: RunLane,
}

type RunLane = fn(&Backend, &Spec<'_>, Driver) -> Option<Result<Sample, Error>>;

/// The workload with `S`'s lock, if `backend` names `S`.
fn run_lane<S: Strategy>(
    backend: &Backend,
    spec: &Spec<'_>,
    driver: Driver,
) -> Option<Result<Sample, Error>> {
    backend
        .params::<S>()
        .map(|params| lane::<S>(params, spec, driver))
}

/// parking_lot's mutex, waiting as `adaptive` does. (Its `send_guard` feature makes its
/// guards `Send`, which `Raw` requires, since a strategy may be unlocked on any thread; it
/// changes nothing else.)
type ParkingLot = Raw<parking_lot::RawMutex>;

impl Locks {
    /// This project's locks (`spin`, `sem`, `adaptive`, run by default) and the peers'
    /// (`std`, `parking_lot`, run when `--lock` names them).
    pub fn builtin() -> Locks {
        Locks {
            lanes: Vec::new(),
            refused: None,
        }
        .lane::<SpinYield>(SpinYield::NAME, true)
        .lane::<SemLock>(SemLock::NAME, true)
        .lane::<Adaptive>(Adaptive::NAME, true)
        .lane::<StdLock>("std", false)
        .lane::<ParkingLot>("parking_lot", false)
    }

    /// Adds the strategy `S` as a lane named `S::NAME`, run by default, and registers it with
    /// `locks` ([`locks::register`]) so that `--lock`, `$LOCKS_BACKEND` and
    /// [`locks::DynLock`] know the name. A name `locks` refuses (taken by another strategy)
    /// makes `main_with` exit 2 saying so; the same strategy twice is one lane.
    pub fn with<S: Strategy>(self) -> Locks {
        self.with_as::<S>(S::NAME)
    }

    /// [`with`](Self::with) under a name of your choosing: for a type whose own name is
    /// generic, such as `locks::Raw<SomeRawMutex>` (`raw`).
    pub fn with_as<S: Strategy>(self, name: &'static str) -> Locks {
        self.lane::<S>(name, true)
    }

    fn lane<S: Strategy>(mut self, name: &'static str, by_default: bool) -> Locks {
        if let Err(e) = locks::register_as::<S>(name) {
            self.refused.get_or_insert(e.to_string());
            return self;
        }
        match self.lanes.iter_mut().find(|l| l.name == name) {
            Some(lane) => lane.by_default |= by_default,
            None => self.lanes.push(Lane {
                name,
                by_default,
                run: run_lane::<S>,
            }),
        }
        self
    }
}

/// The binary's locks, installed by `main_with`.
static INSTALLED: OnceLock<Locks> = OnceLock::new();

/// Makes `locks` the lanes of every run of this process; a strategy `locks` refused is a
/// usage error. A second call keeps the first's lanes (their strategies stay registered).
pub(crate) fn install(locks: Locks) -> Result<(), Error> {
    if let Some(why) = &locks.refused {
        return Err(usage!("{why}"));
    }
    let _ = INSTALLED.set(locks);
    Ok(())
}

/// The installed locks; the built-ins where nothing was installed (the unit tests).
fn installed() -> &'static Locks {
    INSTALLED.get_or_init(Locks::builtin)
}

/// The backends run when `--lock` is not given: the lanes added as run by default.
pub(crate) fn defaults() -> Vec<Backend> {
    installed()
        .lanes
        .iter()
        .filter(|l| l.by_default)
        .filter_map(|l| l.name.parse().ok())
        .collect()
}

/// A usage error unless every backend has a lane: a strategy registered with `locks`
/// directly, not through [`Locks`], parses but has no workload compiled for it.
pub(crate) fn check(backends: &[Backend]) -> Result<(), Error> {
    match backends.iter().find(|b| find(b).is_none()) {
        None => Ok(()),
        Some(b) => {
            let names: Vec<&str> = installed().lanes.iter().map(|l| l.name).collect();
            Err(usage!(
                "--lock {b}: this binary has no lane for it (lanes: {}); add one with \
                 chantest::Locks::with",
                names.join(", ")
            ))
        }
    }
}

fn find(backend: &Backend) -> Option<&'static Lane> {
    installed()
        .lanes
        .iter()
        .find(|l| l.name.eq_ignore_ascii_case(backend.name()))
}

/// One run of the workload on our channel with `backend`'s lock, driven by `driver`.
pub(crate) fn run(backend: &Backend, spec: &Spec<'_>, driver: Driver) -> Result<Sample, Error> {
    find(backend)
        .and_then(|lane| (lane.run)(backend, spec, driver))
        .unwrap_or_else(|| {
            check(std::slice::from_ref(backend)).and(Err(usage!("--lock {backend}: no lane")))
        })
}
