//! Why some runs of a cell were slow: the footnote under the table that names the runs far
//! above their cell's median and says what each one's own counters show.
//!
//! A median hides a slow run, and on a machine shared with other work one run in five can
//! take several times as long as the rest (`docs/tuning.md`, "Slow processes"). Three causes
//! leave marks that a run's counters, and the probe taken as its process started, can tell
//! apart:
//!
//! - **CPUs far apart.** A cache line's round trip between two of the machine's CPUs, timed
//!   just before the run's process started ([`crate::probe`]), took over [`FAR`] times the
//!   cell's median: in a virtual machine, the host had moved its CPUs apart, and every
//!   hand-off between threads on two of them cost more. Only runs of `--per-process` and
//!   `--against` have the probe.
//! - **Shared a CPU.** The scheduler put the run's threads on one CPU, and they took turns
//!   there: every hand-off is a context switch, which shows as involuntary switches (a
//!   `sched_yield` that hands the CPU over counts as one), at least one in twenty messages.
//! - **Lost its CPU.** The run used as much CPU time per message as its cell's other runs,
//!   but over a longer wall time, with no context switches: for part of the run none of
//!   its threads ran at all. Another process or, in a virtual machine, the host had the CPU,
//!   and the guest may not even count it as steal time.
//!
//! Anything else is left unexplained rather than guessed at.

use crate::model::Sample;
use crate::records::{Cell, Results};

/// A run is slow when it took this many times its cell's median, or more.
pub(crate) const SLOW: f64 = 1.5;

/// A run's CPUs were far apart when the probe's round trip took this many times the cell's
/// median round trip, or more (the host's stretches measured 3-6 times the usual).
const FAR: f64 = 2.0;

/// Involuntary context switches per message from which a run's threads shared a CPU.
const SHARED: f64 = 0.05;

/// A run lost its CPU when the share of the wall time its threads ran fell below this
/// fraction of its cell's median share, with fewer than [`QUIET`] switches per message.
const LOST: f64 = 0.6;

/// Context switches per message below which a run was not switching.
const QUIET: f64 = 0.01;

/// What a slow run's counters say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    FarCpus,
    SharedCpu,
    LostCpu,
    Unexplained,
}

/// The cell's slow runs, if any: how many, the slowest against the median, and why each.
#[derive(Debug, PartialEq)]
struct Slow {
    runs: usize,
    of: usize,
    slowest: f64,
    far: usize,
    shared: usize,
    lost: usize,
}

/// The footnote for every cell with slow runs; empty if none has any. Cells with fewer than
/// three runs are left out: their median is one of the slow ones or next to it.
pub(crate) fn notes(r: &Results) -> String {
    let lines: Vec<String> = r
        .cells
        .iter()
        .filter_map(|c| slow(c).map(|s| line(c, &s)))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "# slow runs, over {SLOW}x their cell's median: CPUs far apart = a cache line's round \
         trip between two CPUs, timed as the run's process started, took over {FAR}x the \
         cell's median (the host had moved the CPUs apart); shared a CPU = the run's threads took \
         turns on one CPU (over {SHARED} involuntary switches a message); lost its CPU = as \
         much CPU time per message as the cell's other runs over a longer wall time, with no \
         switches (another process or the host had the CPU)\n"
    );
    for l in lines {
        out += &format!("#  - {l}\n");
    }
    out
}

fn line(c: &Cell, s: &Slow) -> String {
    let lane = match c.via.as_str() {
        "chan" => c.lock.clone(),
        via if c.lock == crate::records::NO_LOCK => via.to_string(),
        via => format!("{} {via}", c.lock),
    };
    let mut why = Vec::new();
    if s.far > 0 {
        why.push(format!("{} on CPUs far apart", s.far));
    }
    if s.shared > 0 {
        why.push(format!("{} shared a CPU", s.shared));
    }
    if s.lost > 0 {
        why.push(format!("{} lost its CPU", s.lost));
    }
    let other = s.runs - s.far - s.shared - s.lost;
    if other > 0 {
        why.push(format!("{other} unexplained"));
    }
    format!(
        "{lane} O={} M={}: {} of {} runs, the slowest {:.2}x ({})",
        c.nbuf,
        c.senders,
        s.runs,
        s.of,
        s.slowest,
        why.join(", ")
    )
}

/// The slow runs of `c`, if it has any.
fn slow(c: &Cell) -> Option<Slow> {
    if c.samples.len() < 3 {
        return None;
    }
    let msgs = c.messages();
    let median_of = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        crate::records::median_sorted(&v)
    };
    let median = median_of(c.samples.iter().map(|s| s.ns as f64).collect());
    let busy = median_of(c.samples.iter().map(busy).collect());
    // Of the runs that were probed: in-process runs have no probe (0 when none has).
    let trips: Vec<f64> = c
        .samples
        .iter()
        .filter(|s| s.cpu_trip_ns > 0)
        .map(|s| s.cpu_trip_ns as f64)
        .collect();
    let trip = if trips.is_empty() {
        0.0
    } else {
        median_of(trips)
    };
    let slow: Vec<&Sample> = c
        .samples
        .iter()
        .filter(|s| s.ns as f64 >= SLOW * median)
        .collect();
    if slow.is_empty() || median <= 0.0 {
        return None;
    }
    let whys: Vec<Why> = slow.iter().map(|s| why(s, msgs, busy, trip)).collect();
    let count = |w| whys.iter().filter(|&&x| x == w).count();
    Some(Slow {
        runs: slow.len(),
        of: c.samples.len(),
        slowest: slow.iter().map(|s| s.ns).max().unwrap_or(0) as f64 / median,
        far: count(Why::FarCpus),
        shared: count(Why::SharedCpu),
        lost: count(Why::LostCpu),
    })
}

/// The share of the wall time that the run's threads ran (above 1 with several CPUs).
fn busy(s: &Sample) -> f64 {
    s.cpu_ns as f64 / s.ns.max(1) as f64
}

fn why(s: &Sample, msgs: f64, usual_busy: f64, usual_trip: f64) -> Why {
    // First: a machine whose CPUs were far apart slows whatever its threads did.
    if s.cpu_trip_ns > 0 && usual_trip > 0.0 && s.cpu_trip_ns as f64 >= FAR * usual_trip {
        return Why::FarCpus;
    }
    if s.ivcsw as f64 / msgs > SHARED {
        return Why::SharedCpu;
    }
    let switches = (s.vcsw + s.ivcsw) as f64 / msgs;
    if s.cpu_ns > 0 && busy(s) < LOST * usual_busy && switches < QUIET {
        return Why::LostCpu;
    }
    Why::Unexplained
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 1000 messages: `ns` of wall time, `cpu` of CPU time, `ivcsw` involuntary
    /// switches.
    fn run(ns: u64, cpu: u64, ivcsw: u64) -> Sample {
        Sample {
            ns,
            cpu_ns: cpu,
            ivcsw,
            ..Sample::default()
        }
    }

    fn cell(samples: Vec<Sample>) -> Cell {
        Cell {
            lock: "adaptive".into(),
            via: "chan".into(),
            nbuf: 0,
            senders: 1,
            per_sender: 1000,
            size: 8,
            global_lock: false,
            summary: Default::default(),
            samples,
        }
    }

    /// Twelve ordinary runs: 200 ns a message, both CPUs busy, no switches.
    fn ordinary() -> Vec<Sample> {
        (0..12).map(|i| run(200_000 + i, 400_000, 0)).collect()
    }

    #[test]
    fn no_slow_run_no_note() {
        assert_eq!(slow(&cell(ordinary())), None);
    }

    #[test]
    fn threads_taking_turns_on_one_cpu_are_named() {
        let mut v = ordinary();
        // 3x slower, one CPU busy, a switch every four messages.
        v.push(run(600_000, 650_000, 250));
        let s = slow(&cell(v)).unwrap();
        assert_eq!((s.runs, s.of, s.far, s.shared, s.lost), (1, 13, 0, 1, 0));
        assert!((s.slowest - 3.0).abs() < 0.01, "{}", s.slowest);
    }

    #[test]
    fn a_run_whose_cpu_was_taken_away_is_named() {
        let mut v = ordinary();
        // 4x slower with the usual CPU time and no switches: it did not run most of the time.
        v.push(run(800_000, 400_000, 0));
        let s = slow(&cell(v)).unwrap();
        assert_eq!((s.runs, s.shared, s.lost), (1, 0, 1));
    }

    #[test]
    fn a_run_on_cpus_far_apart_is_named() {
        // Probed: the usual round trip 60 ns; one slow run's 300, one ordinary run's 300 too
        // (far apart, but not slow: not named), one slow run's 70.
        let mut v: Vec<Sample> = ordinary()
            .into_iter()
            .map(|s| Sample {
                cpu_trip_ns: 60,
                ..s
            })
            .collect();
        v[0].cpu_trip_ns = 300;
        v.push(Sample {
            cpu_trip_ns: 300,
            ..run(800_000, 1_600_000, 0)
        });
        v.push(Sample {
            cpu_trip_ns: 70,
            ..run(800_000, 1_600_000, 0)
        });
        let s = slow(&cell(v)).unwrap();
        assert_eq!((s.runs, s.far, s.shared, s.lost), (2, 1, 0, 0));
        let l = line(&cell(vec![]), &s);
        assert!(l.ends_with("(1 on CPUs far apart, 1 unexplained)"), "{l}");
    }

    #[test]
    fn runs_without_the_probe_are_judged_as_before() {
        let mut v = ordinary();
        v.push(run(800_000, 1_600_000, 0));
        let s = slow(&cell(v)).unwrap();
        assert_eq!((s.runs, s.far), (1, 0));
    }

    #[test]
    fn a_slow_run_with_neither_mark_is_unexplained() {
        let mut v = ordinary();
        // Slower and burning CPU all along: neither shared nor descheduled.
        v.push(run(500_000, 1_000_000, 0));
        let s = slow(&cell(v)).unwrap();
        assert_eq!((s.runs, s.shared, s.lost), (1, 0, 0));
        let l = line(&cell(vec![]), &s);
        assert!(l.ends_with("(1 unexplained)"), "{l}");
    }

    #[test]
    fn two_runs_are_too_few_to_call_one_slow() {
        assert_eq!(slow(&cell(vec![run(100, 200, 0), run(900, 200, 0)])), None);
    }
}
