//! The results of a sweep: what `--format json` prints, `--save` writes and `--baseline` reads;
//! in wall time ([`Results`]) or, with `--metric instructions`, in instructions ([`Counts`]).
//!
//! The raw samples are the record; every summary (medians, per-message figures, ratios) is
//! derived from them, is recomputed after loading, and is never trusted from a file.

use crate::error::{usage, Error};
use crate::grid::Grid;
use crate::model::{check_size, Bounds, Machine, Placement, Sample, Via, TAG};
use locks::Backend;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// The `format` field that marks a chantest results file.
pub(crate) const FORMAT: &str = "chantest-results";
/// The schema version this build reads and writes. Files from before `--via` and `-S` are
/// still version 1: their missing fields mean `chan` and 8 bytes, which is what they ran.
pub(crate) const VERSION: u32 = 1;
/// The `format` field of a counts document ([`Counts`], `--metric instructions`), which a
/// results file is not.
pub(crate) const COUNTS_FORMAT: &str = "chantest-instructions";
/// The schema version of [`Counts`] this build reads and writes.
pub(crate) const COUNTS_VERSION: u32 = 1;

fn default_vias() -> Vec<String> {
    vec![Via::Chan.name().to_string()]
}

fn default_via() -> String {
    Via::Chan.name().to_string()
}

fn default_size() -> u64 {
    TAG as u64
}

/// The `lock` of a cell whose transport takes no lock backend.
pub(crate) const NO_LOCK: &str = "-";

/// Whether the transport named `via` runs once per lock backend ([`Via::takes_lock`]).
fn takes_lock(via: &str) -> bool {
    via.parse::<Via>().is_ok_and(Via::takes_lock)
}

/// What identifies a cell across runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    /// The backend, as displayed (`-` for transports that take none).
    pub lock: String,
    /// The transport.
    pub via: String,
    /// O.
    pub nbuf: u64,
    /// M.
    pub senders: u64,
    /// N.
    pub per_sender: u64,
    /// S.
    pub size: u64,
    /// Global lock or per-channel locks.
    pub global_lock: bool,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.via != Via::Chan.name() {
            write!(f, "via={} ", self.via)?;
        }
        write!(
            f,
            "lock={} O={} M={} N={}",
            self.lock, self.nbuf, self.senders, self.per_sender
        )?;
        if self.size != default_size() {
            write!(f, " S={}", self.size)?;
        }
        if self.global_lock {
            f.write_str(" --global-lock")?;
        }
        Ok(())
    }
}

/// A sweep's parameters, machine, cells and (for `--baseline`, `--compare`) changes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Results {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// Seconds since the Unix epoch when the sweep finished.
    #[serde(default)]
    pub unix_time: u64,
    /// What was asked for.
    pub params: Params,
    /// Where it ran.
    #[serde(default)]
    pub machine: Machine,
    /// One per lane × O × M, by O, then M, then lane (see [`Results::series`]).
    pub cells: Vec<Cell>,
    /// Comparisons against a baseline or between two backends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
}

/// The sweep's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Params {
    /// Backends `chan` (and `task`, `task-mt`) ran with, as `locks::Backend` displays them.
    pub locks: Vec<String>,
    /// The backend ratios are taken against (when the reference transport takes a lock).
    pub reference: String,
    /// Transports, in report order.
    #[serde(default = "default_vias")]
    pub via: Vec<String>,
    /// Bytes per message.
    #[serde(rename = "S", default = "default_size")]
    pub size: u64,
    /// Channel buffers.
    #[serde(rename = "O")]
    pub nbuf: Vec<u64>,
    /// Senders.
    #[serde(rename = "M")]
    pub senders: Vec<u64>,
    /// Values per sender.
    #[serde(rename = "N")]
    pub per_sender: u64,
    /// Measured repetitions per cell.
    pub reps: usize,
    /// Unmeasured rounds per (O, M) point.
    #[serde(default)]
    pub warmup: usize,
    /// Plan 9's global channel lock.
    #[serde(default)]
    pub global_lock: bool,
    /// Threads pinned to CPUs.
    #[serde(default)]
    pub pin: bool,
    /// With `pin`, the receiver's CPU kept for it alone (`--pin=apart`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub apart: bool,
    /// Whether futex counts were collected (the `stats` feature).
    #[serde(default)]
    pub stats: bool,
}

impl Params {
    /// How the threads were pinned, if they were.
    pub(crate) fn placement(&self) -> Option<Placement> {
        Placement::from_flags(self.pin, self.apart)
    }

    /// The transports.
    pub(crate) fn vias(&self) -> Result<Vec<Via>, String> {
        let list = Via::parse_list(&self.via.join(",")).map_err(|e| format!("via: {e}"))?;
        if list.is_empty() {
            return Err("its parameters name no transports".into());
        }
        Ok(list)
    }

    /// The O and M lists.
    pub(crate) fn grids(&self) -> Result<(Grid, Grid), String> {
        Ok((
            Grid::from_values(self.nbuf.clone(), Bounds::NBUF)?,
            Grid::from_values(self.senders.clone(), Bounds::SENDERS)?,
        ))
    }
}

/// One lane (a backend over `chan`, `task` or `task-mt`, or another transport) at one (O, M)
/// point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cell {
    /// The backend, as displayed; `-` for transports that take none.
    pub lock: String,
    /// The transport.
    #[serde(default = "default_via")]
    pub via: String,
    /// Channel buffers.
    #[serde(rename = "O")]
    pub nbuf: u64,
    /// Senders.
    #[serde(rename = "M")]
    pub senders: u64,
    /// Values per sender.
    #[serde(rename = "N")]
    pub per_sender: u64,
    /// Bytes per message.
    #[serde(rename = "S", default = "default_size")]
    pub size: u64,
    /// Plan 9's global channel lock.
    #[serde(default)]
    pub global_lock: bool,
    /// Derived from `samples`; ignored when reading.
    #[serde(skip_deserializing)]
    pub summary: Summary,
    /// Totals of each measured repetition, in run order.
    pub samples: Vec<Sample>,
}

/// The figures the reports print, per message (total ÷ M×N).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Summary {
    /// Repetitions.
    pub reps: usize,
    /// Wall time of the whole run, the figure Plan 9's chantest printed.
    pub ns: Spread,
    /// Wall time per message.
    pub ns_per_msg: Spread,
    /// Median time-stamp counter ticks per message.
    pub cycles_per_msg: f64,
    /// Median CPU time (all threads) per message.
    pub cpu_ns_per_msg: f64,
    /// Median voluntary context switches per message.
    pub vcsw_per_msg: f64,
    /// Median involuntary context switches per message.
    pub ivcsw_per_msg: f64,
    /// Median futex waits per message (with the `stats` feature).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub futex_waits_per_msg: Option<f64>,
    /// Median futex wakes per message (with the `stats` feature).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub futex_wakes_per_msg: Option<f64>,
    /// Median `sched_yield` calls per message (with the `stats` feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yields_per_msg: Option<f64>,
    /// Median contended lock acquisitions per message (with the `stats` feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended_per_msg: Option<f64>,
    /// Median busy-wait turns per message (with the `stats` feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spins_per_msg: Option<f64>,
    /// Median threads moved off a shared CPU per run (with the `stats` feature): a count, not
    /// a rate, since a process moves a few times at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves_per_run: Option<f64>,
    /// Median ns per message divided by the reference's at the same point: the reference
    /// backend over `chan`, or the first transport when `chan` did not run.
    pub ratio_to_ref: f64,
    /// Payload bandwidth at the median: messages × S bytes per second, in MB (10^6 bytes).
    pub mb_per_s: f64,
}

/// Median and range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

/// One cell compared with its counterpart: new against old.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Change {
    /// The new cell's backend.
    pub lock: String,
    /// What it is compared against: `baseline`, the other backend's name, or (`--against`)
    /// the other build named briefly.
    pub against: String,
    /// With `--against`: the other build's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_exe: Option<String>,
    /// Channel buffers.
    #[serde(rename = "O")]
    pub nbuf: u64,
    /// Senders.
    #[serde(rename = "M")]
    pub senders: u64,
    /// Median ns per message of the old cell.
    pub old_ns_per_msg: f64,
    /// Median ns per message of the new cell.
    pub new_ns_per_msg: f64,
    /// New ÷ old, with its confidence interval.
    pub ratio: Interval,
    /// The conclusion.
    pub verdict: Verdict,
    /// Repetitions a side behind the verdict (the fewer of the two sides).
    #[serde(default)]
    pub reps: usize,
    /// Repetitions of the new side (more than the old side's when `--budget` re-ran only the
    /// new side against a saved baseline).
    #[serde(default)]
    pub new_reps: usize,
    /// Repetitions of the old side.
    #[serde(default)]
    pub old_reps: usize,
    /// For an inconclusive verdict: about how many more repetitions a side would likely
    /// decide it (see [`crate::verdict::more_reps`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_reps: Option<usize>,
    /// Why the cell was not judged though it has the repetitions: a side's samples too short
    /// to time (see [`crate::verdict::too_short`]); the verdict is then inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
    /// Index of the new cell in [`Results::cells`].
    #[serde(skip)]
    pub cell: usize,
}

impl Change {
    /// The `reps` column: one count when both sides had as many, else `new/old`.
    pub(crate) fn reps_shown(&self) -> String {
        if self.new_reps == self.old_reps || self.new_reps == 0 || self.old_reps == 0 {
            self.reps.to_string()
        } else {
            format!("{}/{}", self.new_reps, self.old_reps)
        }
    }
}

impl Results {
    /// Reads and checks a file written by `--save`.
    pub(crate) fn load(path: &Path) -> Result<Results, Error> {
        let name = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage!("cannot read baseline {name}: {e}"))?;
        let counts = serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|v| v.get("format").and_then(|f| f.as_str()) == Some(COUNTS_FORMAT));
        if counts {
            return Err(usage!(
                "baseline {name} holds instruction counts: compare with --metric instructions"
            ));
        }
        Results::parse(&text).map_err(|e| usage!("baseline {name}{e}"))
    }

    /// Reads and checks a results document (a `--save` file, or another chantest's
    /// `--format json`). The error starts with `: ` or ` is not …`, to follow a name.
    pub(crate) fn parse(text: &str) -> Result<Results, String> {
        let mut results: Results = serde_json::from_str(text)
            .map_err(|e| format!(" is not a chantest results file: {e}"))?;
        results.validate().map_err(|e| format!(": {e}"))?;
        results.summarize();
        Ok(results)
    }

    /// Checks what serde cannot: the file describes a sweep this build could have run.
    fn validate(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!("format is `{}`, not `{FORMAT}`", self.format));
        }
        if self.version != VERSION {
            return Err(format!(
                "schema version {} (this chantest reads {VERSION})",
                self.version
            ));
        }
        let p = &self.params;
        let in_range = |b: Bounds, v: u64| b.check(v).map_err(|e| format!("{}: {e}", b.flag));
        if p.locks.is_empty() {
            return Err("its parameters name no lock backends".into());
        }
        for lock in &p.locks {
            lock.parse::<Backend>().map_err(|e| e.to_string())?;
        }
        self.vias()?;
        check_size(p.size).map_err(|e| format!("-S: {e}"))?;
        in_range(Bounds::PER_SENDER, p.per_sender)?;
        in_range(Bounds::REPS, p.reps as u64)?;
        self.grids()?;
        for cell in &self.cells {
            let where_ = format!(
                "cell via={} lock={} O={} M={}",
                cell.via, cell.lock, cell.nbuf, cell.senders
            );
            let via = cell
                .via
                .parse::<Via>()
                .map_err(|e| format!("{where_}: {e}"))?;
            if via.takes_lock() {
                cell.lock
                    .parse::<Backend>()
                    .map_err(|e| format!("{where_}: {e}"))?;
            }
            in_range(Bounds::NBUF, cell.nbuf)
                .and(in_range(Bounds::SENDERS, cell.senders))
                .and(in_range(Bounds::PER_SENDER, cell.per_sender))
                .map_err(|e| format!("{where_}: {e}"))?;
            if cell.samples.is_empty() || cell.samples.iter().any(|s| s.ns == 0) {
                return Err(format!("{where_}: no samples, or a sample of 0 ns"));
            }
        }
        for key in self.param_keys() {
            if self.cell(&key).is_none() {
                return Err(format!(
                    "its parameters name cell {key}, but it has no such cell"
                ));
            }
        }
        Ok(())
    }

    /// The parameters' transports.
    pub(crate) fn vias(&self) -> Result<Vec<Via>, String> {
        self.params.vias()
    }

    /// The parameters' O and M lists.
    pub(crate) fn grids(&self) -> Result<(Grid, Grid), String> {
        self.params.grids()
    }

    /// The cells `params` describes.
    fn param_keys(&self) -> Vec<Key> {
        let p = &self.params;
        let series = self.lanes();
        let mut keys = Vec::new();
        for &o in &p.nbuf {
            for &m in &p.senders {
                for (via, lock) in &series {
                    keys.push(Key {
                        lock: lock.clone(),
                        via: via.clone(),
                        nbuf: o,
                        senders: m,
                        per_sender: p.per_sender,
                        size: p.size,
                        global_lock: p.global_lock,
                    });
                }
            }
        }
        keys
    }

    /// (via, lock) of each lane, in the order cells of one point come.
    pub(crate) fn lanes(&self) -> Vec<(String, String)> {
        self.params
            .via
            .iter()
            .flat_map(|via| {
                if takes_lock(via) {
                    self.params
                        .locks
                        .iter()
                        .map(|l| (via.clone(), l.clone()))
                        .collect()
                } else {
                    vec![(via.clone(), NO_LOCK.to_string())]
                }
            })
            .collect()
    }

    /// Whether the run carried messages over `via` (typed, so that reports need not compare
    /// names).
    pub(crate) fn has_via(&self, via: Via) -> bool {
        self.params.via.iter().any(|v| v.parse() == Ok(via))
    }

    /// Whether any transport of the run took a lock backend: ran our channel.
    pub(crate) fn has_locks(&self) -> bool {
        self.params.via.iter().any(|v| takes_lock(v))
    }

    /// Whether the cells show more than `chan`, so that reports name each cell's transport.
    pub(crate) fn has_transports(&self) -> bool {
        self.params.via.iter().any(|v| v != Via::Chan.name())
    }

    /// The name of each line of a plot or legend, in the order cells of one point come: the
    /// backend over `chan` (`chan/backend` beside other transports, `task/backend` and so on
    /// for the task transports), else the transport.
    pub(crate) fn series(&self) -> Vec<String> {
        let mixed = self.has_transports();
        self.lanes()
            .into_iter()
            .map(|(via, lock)| match (takes_lock(&via), mixed) {
                (true, false) => lock,
                (true, true) => format!("{via}/{lock}"),
                (false, _) => via,
            })
            .collect()
    }

    /// What ratios are taken against, for headings: the reference backend, `chan/backend`
    /// beside other transports (`task/backend` when a task transport is the reference), or
    /// the first transport when none that takes a lock is.
    pub(crate) fn reference_name(&self) -> String {
        match self.reference_via() {
            v if takes_lock(&v) && self.has_transports() => {
                format!("{v}/{}", self.params.reference)
            }
            v if takes_lock(&v) => self.params.reference.clone(),
            v => v,
        }
    }

    /// The transport ratios are taken against, by name.
    fn reference_via(&self) -> String {
        let vias: Vec<Via> = self
            .params
            .via
            .iter()
            .filter_map(|v| v.parse().ok())
            .collect();
        Via::reference(&vias, &self.params.reference)
            .name()
            .to_string()
    }

    /// The cell with this key, if any.
    pub(crate) fn cell(&self, key: &Key) -> Option<&Cell> {
        self.cells.iter().find(|c| c.key() == *key)
    }

    /// Recomputes every summary from the samples.
    pub(crate) fn summarize(&mut self) {
        for cell in &mut self.cells {
            cell.summary = Summary::of(cell);
        }
        // The reference cell of each point: same key but for the lane.
        let via = self.reference_via();
        let lock = if takes_lock(&via) {
            self.params.reference.clone()
        } else {
            NO_LOCK.to_string()
        };
        let ratios: Vec<f64> = self
            .cells
            .iter()
            .map(|cell| {
                let key = Key {
                    lock: lock.clone(),
                    via: via.clone(),
                    ..cell.key()
                };
                self.cell(&key).map_or(f64::NAN, |r| {
                    cell.summary.ns_per_msg.median / r.summary.ns_per_msg.median
                })
            })
            .collect();
        for (cell, ratio) in self.cells.iter_mut().zip(ratios) {
            cell.summary.ratio_to_ref = ratio;
        }
    }

    /// Whether any change is a regression.
    pub(crate) fn regressed(&self) -> bool {
        self.changes.iter().any(|c| c.verdict == Verdict::Regressed)
    }

    /// Whether any change is inconclusive.
    pub(crate) fn inconclusive(&self) -> bool {
        self.changes.iter().any(|c| !c.verdict.decided())
    }
}

impl Cell {
    /// This cell's identity.
    pub(crate) fn key(&self) -> Key {
        Key {
            lock: self.lock.clone(),
            via: self.via.clone(),
            nbuf: self.nbuf,
            senders: self.senders,
            per_sender: self.per_sender,
            size: self.size,
            global_lock: self.global_lock,
        }
    }

    /// Messages per run: M×N, or 2N signals for `signal` (see [`Via::messages`]).
    pub(crate) fn messages(&self) -> f64 {
        let via = self.via.parse().unwrap_or(Via::Chan);
        Via::messages(via, self.senders, self.per_sender)
    }

    /// Wall ns per message of each repetition.
    pub(crate) fn ns_per_msg(&self) -> Vec<f64> {
        let msgs = self.messages();
        self.samples.iter().map(|s| s.ns as f64 / msgs).collect()
    }
}

impl Summary {
    fn of(cell: &Cell) -> Summary {
        let msgs = cell.messages();
        let totals = |f: fn(&Sample) -> u64| {
            let mut v: Vec<f64> = cell.samples.iter().map(|s| f(s) as f64).collect();
            v.sort_by(f64::total_cmp);
            Spread::of(&v)
        };
        let per_msg = |f| totals(f).median / msgs;
        let stats = locks::stats::ENABLED.then_some(());
        let ns = totals(|s| s.ns);
        Summary {
            reps: cell.samples.len(),
            ns,
            ns_per_msg: Spread {
                median: ns.median / msgs,
                min: ns.min / msgs,
                max: ns.max / msgs,
            },
            cycles_per_msg: per_msg(|s| s.cycles),
            cpu_ns_per_msg: per_msg(|s| s.cpu_ns),
            vcsw_per_msg: per_msg(|s| s.vcsw),
            ivcsw_per_msg: per_msg(|s| s.ivcsw),
            futex_waits_per_msg: stats.map(|()| per_msg(|s| s.futex_waits)),
            futex_wakes_per_msg: stats.map(|()| per_msg(|s| s.futex_wakes)),
            yields_per_msg: stats.map(|()| per_msg(|s| s.yields)),
            contended_per_msg: stats.map(|()| per_msg(|s| s.contended)),
            spins_per_msg: stats.map(|()| per_msg(|s| s.spins)),
            moves_per_run: stats.map(|()| totals(|s| s.moves).median),
            ratio_to_ref: f64::NAN,
            mb_per_s: msgs * cell.size as f64 / ns.median * 1e3,
        }
    }
}

impl Spread {
    /// Of sorted, non-empty `v`.
    fn of(v: &[f64]) -> Spread {
        Spread {
            median: median_sorted(v),
            min: v[0],
            max: v[v.len() - 1],
        }
    }
}

/// An estimate of new/old and its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Interval {
    /// Hodges-Lehmann estimate of the ratio.
    pub estimate: f64,
    /// Lower bound (0 when there are too few samples for any interval).
    pub low: f64,
    /// Upper bound (`None` when there are too few samples, as JSON has no infinity).
    pub high: Option<f64>,
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.high {
            Some(h) => write!(f, "[{:.3}, {:.3}]", self.low, h),
            None => f.write_str("[0, inf]"),
        }
    }
}

/// What a comparison concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Significantly slower, by more than the threshold.
    Regressed,
    /// Significantly faster, by more than the threshold.
    Improved,
    /// The interval's upper end lies below `1 + threshold`: no slowdown of that size.
    Ok,
    /// Neither regressed nor ok, including too few samples for any interval. (Files written
    /// before the three-way verdict said `too_few_reps`, read as this.)
    #[serde(alias = "too_few_reps")]
    Inconclusive,
}

impl Verdict {
    /// The name JSON and CSV use.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Ok => "ok",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// Whether more repetitions could change it.
    pub(crate) fn decided(self) -> bool {
        self != Verdict::Inconclusive
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Improved => "improved",
            Verdict::Ok => "ok",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// The results of `--metric instructions`: what `--format json` prints and `--save` writes
/// in that mode, and what `--baseline` reads in it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Counts {
    /// Always [`COUNTS_FORMAT`].
    pub format: String,
    /// Always [`COUNTS_VERSION`].
    pub version: u32,
    /// What was asked for; `N` is the larger run size, `reps` the repetitions.
    pub params: Params,
    /// The CPU the runs were pinned to.
    pub cpu: usize,
    /// One per lane × O × M, in report order.
    pub cells: Vec<CountCell>,
    /// Comparisons, with `--against` or `--baseline`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<CountChange>,
}

/// One cell's counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CountCell {
    /// The backend, or `-`.
    pub lock: String,
    /// The transport.
    pub via: String,
    /// Channel buffers.
    #[serde(rename = "O")]
    pub nbuf: u64,
    /// Senders.
    #[serde(rename = "M")]
    pub senders: u64,
    /// Values per sender of the larger run (the smaller ran half as many).
    #[serde(rename = "N")]
    pub per_sender: u64,
    /// Bytes per message.
    #[serde(rename = "S")]
    pub size: u64,
    /// Plan 9's global channel lock.
    pub global_lock: bool,
    /// Rounds each process ran (warm-up included).
    pub rounds: u64,
    /// Ir of each repetition's smaller run.
    pub ir_half: Vec<u64>,
    /// Ir of each repetition's larger run.
    pub ir_full: Vec<u64>,
}

/// One cell compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CountChange {
    /// The cell's backend.
    pub lock: String,
    /// The cell's transport.
    pub via: String,
    /// What it is compared against: the other build, briefly, or `baseline`.
    pub against: String,
    /// Channel buffers.
    #[serde(rename = "O")]
    pub nbuf: u64,
    /// Senders.
    #[serde(rename = "M")]
    pub senders: u64,
    /// Old instructions per message (median over repetitions); none when the counts fell as
    /// N doubled, which no count of work can do.
    pub old_per_msg: Option<f64>,
    /// New instructions per message, likewise.
    pub new_per_msg: Option<f64>,
    /// new / old, when both are counts.
    pub ratio: Option<f64>,
    /// The conclusion.
    pub verdict: Verdict,
    /// Why nothing was decided, when the counts themselves forbid it (see [`crate::instructions::judge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl CountCell {
    /// What identifies the cell across runs.
    pub(crate) fn key(&self) -> Key {
        Key {
            lock: self.lock.clone(),
            via: self.via.clone(),
            nbuf: self.nbuf,
            senders: self.senders,
            per_sender: self.per_sender,
            size: self.size,
            global_lock: self.global_lock,
        }
    }

    /// Instructions per message of each repetition.
    pub(crate) fn per_msg(&self) -> Vec<f64> {
        let via = self.via.parse().unwrap_or(Via::Chan);
        let half = via.messages(self.senders, self.per_sender / 2);
        let full = via.messages(self.senders, self.per_sender);
        let msgs = self.rounds.max(1) as f64 * (full - half);
        self.ir_half
            .iter()
            .zip(&self.ir_full)
            .map(|(&a, &b)| (b as f64 - a as f64) / msgs)
            .collect()
    }

    /// The median of [`per_msg`](Self::per_msg), NaN when there are no counts.
    pub(crate) fn median(&self) -> f64 {
        let mut v = self.per_msg();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            f64::NAN
        } else {
            median_sorted(&v)
        }
    }
}

impl Counts {
    /// Reads a file `--save` wrote in this mode.
    pub(crate) fn load(path: &Path) -> Result<Counts, Error> {
        let name = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage!("cannot read baseline {name}: {e}"))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| usage!("baseline {name} is not JSON"))?;
        match v.get("format").and_then(|f| f.as_str()) {
            Some(COUNTS_FORMAT) => {}
            Some(FORMAT) => {
                return Err(usage!(
                    "baseline {name} holds wall times: compare it without --metric \
                     instructions, or save counts with --metric instructions --save"
                ))
            }
            _ => {
                return Err(usage!(
                    "baseline {name} is not a chantest instructions file"
                ))
            }
        }
        let c: Counts = serde_json::from_value(v)
            .map_err(|e| usage!("baseline {name} is not a chantest instructions file: {e}"))?;
        if c.version != COUNTS_VERSION {
            return Err(usage!(
                "baseline {name} has schema version {} (this chantest reads {COUNTS_VERSION})",
                c.version
            ));
        }
        if let Some(bad) = c
            .cells
            .iter()
            .find(|x| x.ir_half.is_empty() || x.ir_half.len() != x.ir_full.len())
        {
            return Err(usage!("baseline {name}: cell {} has no counts", bad.key()));
        }
        Ok(c)
    }

    /// The cell of `key`, if counted.
    pub(crate) fn cell(&self, key: &Key) -> Option<&CountCell> {
        self.cells.iter().find(|c| &c.key() == key)
    }

    /// Whether any cell regressed; whether any is inconclusive.
    pub(crate) fn status(&self) -> (bool, bool) {
        (
            self.changes.iter().any(|c| c.verdict == Verdict::Regressed),
            self.changes.iter().any(|c| !c.verdict.decided()),
        )
    }
}

/// The median of sorted, non-empty `v`.
pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Lane, Plan};
    use crate::run::Measured;

    fn plan(backends: Vec<Backend>) -> Plan {
        Plan {
            backends,
            reference: 0,
            vias: vec![Via::Chan],
            size: 8,
            nbuf: Grid::from_values(vec![10], Bounds::NBUF).unwrap(),
            senders: Grid::from_values(vec![1, 2], Bounds::SENDERS).unwrap(),
            per_sender: 100,
            reps: 5,
            global_lock: false,
            pin: None,
            fault: false,
            reference_via: None,
        }
    }

    /// Cells whose samples are `ns[backend] + rep`, for two points and `ns.len()` backends.
    fn results(ns: &[u64]) -> Results {
        let backends = Backend::ALL[..ns.len()].to_vec();
        let p = plan(backends);
        let measured = p
            .points()
            .flat_map(|(o, m)| {
                ns.iter().enumerate().map(move |(backend, &base)| Measured {
                    lane: Lane::Locked(Via::Chan, backend),
                    nbuf: o,
                    senders: m,
                    samples: (0..5)
                        .map(|rep| Sample {
                            ns: (base + rep) * m * 100,
                            ..Sample::default()
                        })
                        .collect(),
                })
            })
            .collect();
        crate::run::records(&p, measured, Machine::default())
    }

    #[test]
    fn summaries_and_ratios() {
        let r = results(&[100, 300]);
        let s = &r.cells[1].summary;
        assert_eq!(s.reps, 5);
        assert_eq!(
            s.ns_per_msg,
            Spread {
                median: 302.0,
                min: 300.0,
                max: 304.0
            }
        );
        assert_eq!(s.ns.median, 30200.0, "M=1, N=100");
        assert_eq!(r.cells[0].summary.ratio_to_ref, 1.0);
        assert!((s.ratio_to_ref - 302.0 / 102.0).abs() < 1e-12);
        assert_eq!(r.params.locks, ["spin", "sem"]);
    }

    #[test]
    fn survives_a_round_trip() {
        let r = results(&[100, 300]);
        let path = std::env::temp_dir().join(format!("chantest-rt-{}.json", std::process::id()));
        std::fs::write(&path, crate::report::json(&r)).unwrap();
        let back = Results::load(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(back.cells, r.cells, "summaries recomputed alike");
        assert_eq!(back.params, r.params);
    }

    #[test]
    fn rejects_what_it_could_not_have_written() {
        type Spoil = fn(&mut Results);
        let bad: [(&str, Spoil); 8] = [
            ("format is", |r| r.format = "x".into()),
            ("schema version", |r| r.version = 99),
            ("no lock backends", |r| r.params.locks.clear()),
            ("-R: 0 is out of range", |r| r.params.reps = 0),
            ("-M: 1 appears more than once", |r| {
                r.params.senders = vec![1, 1]
            }),
            ("unknown lock backend", |r| r.cells[0].lock = "mcs".into()),
            ("no samples", |r| r.cells[0].samples[2].ns = 0),
            ("has no such cell", |r| {
                r.cells.remove(0);
            }),
        ];
        for (want, spoil) in bad {
            let mut r = results(&[100]);
            assert_eq!(r.validate(), Ok(()));
            spoil(&mut r);
            let e = r.validate().unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    /// Two backends over chan, then pipe, at two points; pipe is `ns[2]`.
    fn mixed(ns: [u64; 3]) -> Results {
        let mut p = plan(Backend::ALL[..2].to_vec());
        p.vias = vec![Via::Chan, Via::Pipe];
        p.size = 64;
        let lanes = p.lanes();
        let measured = p
            .points()
            .flat_map(|(o, m)| {
                lanes.iter().zip(ns).map(move |(&lane, base)| Measured {
                    lane,
                    nbuf: o,
                    senders: m,
                    samples: vec![Sample {
                        ns: base * m * 100,
                        ..Sample::default()
                    }],
                })
            })
            .collect();
        crate::run::records(&p, measured, Machine::default())
    }

    #[test]
    fn transports_are_cells_with_ratios_to_chan() {
        let r = mixed([100, 300, 400]);
        assert_eq!(r.series(), ["chan/spin", "chan/sem", "pipe"]);
        assert_eq!(r.reference_name(), "chan/spin");
        let pipe = &r.cells[2];
        assert_eq!(
            (pipe.lock.as_str(), pipe.via.as_str(), pipe.size),
            ("-", "pipe", 64)
        );
        assert_eq!(pipe.summary.ratio_to_ref, 4.0);
        // 64 bytes every 400 ns: 160 MB/s.
        assert!((pipe.summary.mb_per_s - 160.0).abs() < 1e-9);
        assert_eq!(r.validate(), Ok(()));
        let mut bad = r.clone();
        bad.cells[2].via = "tcp".into();
        assert!(bad.validate().unwrap_err().contains("unknown transport"));
        let mut compared = r.clone();
        compared.between_backends(0.1, crate::verdict::Looks::ONE);
        assert_eq!(compared.changes.len(), 2, "chan's two backends, per point");
        assert_eq!(compared.changes[1].cell, 4);
    }

    #[test]
    fn task_transports_are_cells_per_backend() {
        let mut p = plan(Backend::ALL[..2].to_vec());
        p.vias = vec![Via::Task, Via::Chan, Via::TaskMt];
        let lanes = p.lanes();
        assert_eq!(lanes.len(), 6, "each of three transports once per backend");
        let measured = p
            .points()
            .flat_map(|(o, m)| {
                lanes.iter().zip(1..).map(move |(&lane, k)| Measured {
                    lane,
                    nbuf: o,
                    senders: m,
                    samples: vec![Sample {
                        ns: k * 100 * m * 100,
                        ..Sample::default()
                    }],
                })
            })
            .collect();
        let r = crate::run::records(&p, measured, Machine::default());
        assert_eq!(
            r.series(),
            [
                "task/spin",
                "task/sem",
                "chan/spin",
                "chan/sem",
                "task-mt/spin",
                "task-mt/sem"
            ]
        );
        assert_eq!(r.reference_name(), "chan/spin", "chan is the reference");
        let task_sem = &r.cells[1];
        assert_eq!(
            (task_sem.via.as_str(), task_sem.lock.as_str()),
            ("task", "sem")
        );
        assert_eq!(task_sem.summary.ratio_to_ref, 2.0 / 3.0);
        assert_eq!(r.validate(), Ok(()));
        let back = Results::parse(&crate::report::json(&r)).unwrap();
        assert_eq!(back.cells, r.cells);
        // A task cell names its backend, as a chan cell does.
        let mut bad = r.clone();
        bad.cells[4].lock = NO_LOCK.into();
        assert!(bad.validate().unwrap_err().contains("via=task-mt"));
        // Without chan, the first transport with the reference backend.
        let mut tasks = r.clone();
        tasks.params.via = vec!["task".into(), "task-mt".into()];
        tasks.cells.retain(|c| c.via != "chan");
        assert_eq!(tasks.validate(), Ok(()));
        tasks.summarize();
        assert_eq!(tasks.reference_name(), "task/spin");
        let ratios: Vec<f64> = tasks.cells[..4]
            .iter()
            .map(|c| c.summary.ratio_to_ref)
            .collect();
        assert_eq!(ratios, [1.0, 2.0, 5.0, 6.0]);
    }

    #[test]
    fn files_without_transports_are_chan_at_8_bytes() {
        let r = results(&[100]);
        let mut v = serde_json::to_value(&r).unwrap();
        v["params"].as_object_mut().unwrap().remove("via");
        v["params"].as_object_mut().unwrap().remove("S");
        for c in v["cells"].as_array_mut().unwrap() {
            c.as_object_mut().unwrap().remove("via");
            c.as_object_mut().unwrap().remove("S");
            c.as_object_mut().unwrap().remove("summary");
        }
        let mut back: Results = serde_json::from_value(v).unwrap();
        assert_eq!(back.validate(), Ok(()));
        back.summarize();
        assert_eq!(back.params.via, ["chan"]);
        assert_eq!(
            (back.cells[0].via.as_str(), back.cells[0].size),
            ("chan", 8)
        );
        assert_eq!(back.cells, r.cells);
    }

    #[test]
    fn changes() {
        let mut r = results(&[100, 300]);
        r.between_backends(0.1, crate::verdict::Looks::ONE);
        assert_eq!(r.changes.len(), 2);
        assert!(r.changes.iter().all(|c| c.verdict == Verdict::Regressed));
        assert_eq!(r.changes[1].cell, 3);
        assert!(r.regressed());

        let old = results(&[100, 300]);
        let mut new = results(&[100, 300]);
        new.against_baseline(&old, 0.1, crate::verdict::Looks::ONE);
        assert_eq!(new.changes.len(), 4);
        assert!(new
            .changes
            .iter()
            .all(|c| c.verdict == Verdict::Ok && c.ratio.estimate == 1.0));
        assert!(!new.regressed());
    }
}
