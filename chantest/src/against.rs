//! `--against OLD_CHANTEST`: the same cells run by this build and by another, interleaved.
//!
//! Each repetition of each cell is one fresh process per side: `chantest -O o -M m -N n -R 3
//! --lock L --format json` (plus `--pin`, `--global-lock`, `--via`, `-S` where the plan has
//! them), which runs its own warm-up round and [`ROUNDS`] measured rounds and prints a results
//! document; the repetition's figure is the median of those rounds. The two sides take turns, repetition by repetition, and which side goes first
//! alternates, so that whatever drifts (clock, other load, placement) falls on both alike,
//! and neither side is always the one that runs just after the other.
//!
//! The protocol is the results document itself: its `format` and `version` fields are the
//! handshake. Any chantest build whose `--format json` prints [`FORMAT`] version [`VERSION`]
//! can be compared against, including builds from before `--against` existed; anything else
//! (a different program, an older or newer format, garbage) is refused with exit 2 before a
//! verdict is given. Our own side is run the same way, through `current_exe`, so both sides
//! pay the same start-up and warm-up.
//!
//! With `--budget`, repetitions continue (for the undecided cells only) until every cell is
//! decided or the budget is spent.

use crate::child;
use crate::error::{usage, Error};
use crate::model::{Sample, Via, TAG};
use crate::plan::{Lane, Plan};
use crate::records::{Interval, Verdict};
use crate::records::{Results, FORMAT, VERSION};
use crate::run::Measured;
use crate::verdict::Looks;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Measured rounds in each process; the median is the repetition's sample. One round would
/// leave each sample at the mercy of one preemption on a loaded machine; the median of three
/// shrugs one off, for 1.5x the time. Repetitions stay independent: each is its own process,
/// with its own placement and start-up.
pub(crate) const ROUNDS: usize = 3;

/// Most repetitions a side per cell, budget or not: beyond this the interval narrows too
/// slowly to matter, and a stuck comparison should end.
pub(crate) const MAX_REPS: usize = 400;

/// The least time a process is given to answer before it is taken for hung and killed
/// (without `--budget`; with it, the budget bounds this).
pub(crate) const ANSWER_FLOOR: Duration = Duration::from_secs(60);

/// How long a process may take to answer. Without a budget: [`ANSWER_FLOOR`] or ten times the
/// slowest answer so far, whichever is longer (before the first answer, the floor plus 10 µs
/// per message the process will pass, warm-up included). With one, no longer than that and
/// no longer than the budget, except that once processes have answered, ten times the
/// slowest answer is always allowed: a budget shorter than one process then still ends
/// after the first `-R` repetitions, as it always did, while a binary that never answers is
/// killed when the budget is up.
pub(crate) fn answer_limit(
    budget: Option<Duration>,
    slowest: Option<Duration>,
    messages: f64,
) -> Duration {
    let expected = match slowest {
        Some(s) => ANSWER_FLOOR.max(s * 10),
        None => ANSWER_FLOOR + Duration::from_secs_f64(messages * 10e-6),
    };
    match (budget, slowest) {
        (None, _) => expected,
        (Some(b), None) => b.min(expected),
        (Some(b), Some(s)) => b.max(s * 10).min(expected),
    }
}

/// One side of a comparison: a chantest binary, and optionally an injected lock hold.
#[derive(Clone, Debug)]
pub(crate) struct Side {
    /// The binary.
    pub exe: PathBuf,
    /// `adaptive:hold_ns=N` instead of the plan's lock (calibration's slowed side).
    pub hold_ns: Option<u32>,
    /// The flag that runs it, which its errors name (`--against`, `--per-process`).
    pub flag: &'static str,
}

impl Side {
    /// This build.
    pub(crate) fn this() -> Result<Side, Error> {
        let exe = std::env::current_exe()
            .map_err(|e| usage!("cannot find chantest's own executable: {e}"))?;
        Ok(Side {
            exe,
            hold_ns: None,
            flag: "--against",
        })
    }

    /// This build, run by `flag`, which its errors then name.
    pub(crate) fn this_for(flag: &'static str) -> Result<Side, Error> {
        Ok(Side {
            flag,
            ..Side::this()?
        })
    }

    /// Another build at `path`.
    pub(crate) fn other(path: &Path) -> Side {
        Side {
            exe: path.to_path_buf(),
            hold_ns: None,
            flag: "--against",
        }
    }
}

/// This build's `--version` line: the package version and the build's commit (or, outside a
/// git checkout, when it was built), so that two builds in one comparison can be told apart.
pub(crate) fn version_line() -> String {
    format!("chantest {}", crate::model::BUILD_VERSION)
}

/// The other build, named briefly for the `vs` column: the checkout a
/// `…/CHECKOUT/target/{release,debug}/chantest` was built in; for a target directory outside
/// the checkout (`CARGO_TARGET_DIR=/tmp/old`: `/tmp/old/release/chantest`), that directory;
/// else the file's name (the full path is in the report's heading and in JSON's
/// `against_exe`).
pub(crate) fn brief(exe: &Path) -> String {
    let parts: Vec<String> = exe
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match &parts[..] {
        [.., checkout, t, profile, _]
            if t == "target" && !checkout.is_empty() && checkout != "." && checkout != ".." =>
        {
            if profile == "release" {
                checkout.clone()
            } else {
                format!("{checkout} ({profile})")
            }
        }
        [.., dir, profile, _]
            if (profile == "release" || profile == "debug")
                && !["", ".", "..", "/", "target"].contains(&dir.as_str()) =>
        {
            if profile == "release" {
                dir.clone()
            } else {
                format!("{dir} ({profile})")
            }
        }
        [.., file] if !file.is_empty() => file.clone(),
        _ => exe.display().to_string(),
    }
}

/// A finished comparison.
pub(crate) struct Outcome {
    /// The new side's results, with the comparison in `changes`.
    pub results: Results,
    /// How long it took.
    pub wall: Duration,
}

/// Runs `plan`'s cells with `new` and `old`, interleaved, and judges each cell: at least
/// `plan.reps` repetitions a side, then, within `budget`, more for the undecided cells.
pub(crate) fn compare(
    plan: &Plan,
    new: &Side,
    old: &Side,
    threshold: f64,
    budget: Option<Duration>,
) -> Result<Outcome, Error> {
    let start = Instant::now();
    let cells: Vec<(u64, u64, Lane)> = plan
        .points()
        .flat_map(|(o, m)| plan.lanes().into_iter().map(move |l| (o, m, l)))
        .collect();
    let family = cells.len();
    let mut samples: Vec<[Vec<Sample>; 2]> = vec![[Vec::new(), Vec::new()]; family];
    let msgs = |&(_, m, lane): &(u64, u64, Lane)| lane.via().messages(m, plan.per_sender);
    let looks = Looks {
        first: plan.reps,
        sequential: budget.is_some(),
    };
    // Judged only at a look (R, 2R, 4R, ... repetitions a side): in between, a cell goes on.
    let decided = |i: usize, s: &[Vec<Sample>; 2]| {
        let reps = s[0].len();
        if !looks.is_look(reps) {
            return false;
        }
        let per = |v: &Vec<Sample>| -> Vec<f64> {
            v.iter().map(|x| x.ns as f64 / msgs(&cells[i])).collect()
        };
        let iv = Interval::ratio_among(&per(&s[0]), &per(&s[1]), family * looks.ways(reps));
        Verdict::judge(&iv, threshold).decided()
    };
    let out_of_time = || budget.is_none_or(|b| start.elapsed() >= b);
    let mut slowest: Option<Duration> = None;
    // Without a budget the number of processes is known, and a long comparison says so.
    let mut progress = budget
        .is_none()
        .then(|| crate::progress::Progress::new(family * plan.reps * 2));
    let mut round = 0;
    loop {
        let todo: Vec<usize> = (0..family)
            .filter(|&i| round < plan.reps || !decided(i, &samples[i]))
            .collect();
        if todo.is_empty() || round >= MAX_REPS || (round >= plan.reps && out_of_time()) {
            break;
        }
        for i in todo {
            if round >= plan.reps && out_of_time() {
                break;
            }
            // Alternate which side goes first, by repetition and by cell.
            let sides = if (round + i) % 2 == 0 {
                [(0, new), (1, old)]
            } else {
                [(1, old), (0, new)]
            };
            for (k, side) in sides {
                let per_process = msgs(&cells[i]) * (1 + ROUNDS) as f64;
                let limit = answer_limit(budget, slowest, per_process);
                let t = Instant::now();
                let sample = run_one(plan, cells[i], side, limit)?;
                slowest = slowest.max(Some(t.elapsed()));
                samples[i][k].push(sample);
                if let Some(p) = &mut progress {
                    let (o, m, _) = cells[i];
                    p.advance(&format_args!("{} O={o} M={m}", brief(&side.exe)));
                }
            }
        }
        round += 1;
    }
    drop(progress);
    let measured = |k: usize| -> Vec<Measured> {
        cells
            .iter()
            .zip(&samples)
            .map(|(&(nbuf, senders, lane), s)| Measured {
                lane,
                nbuf,
                senders,
                samples: s[k].clone(),
            })
            .collect()
    };
    let machine = crate::machine::describe();
    let mut results = crate::run::records(plan, measured(0), machine.clone());
    let before = crate::run::records(plan, measured(1), machine);
    results.against(
        &before,
        &brief(&old.exe),
        threshold,
        looks,
        crate::verdict::Old::Measured,
    );
    for c in &mut results.changes {
        c.against_exe = Some(old.exe.display().to_string());
    }
    Ok(Outcome {
        results,
        wall: start.elapsed(),
    })
}

/// The flags that make `side` run one repetition of one cell: a process of `rounds` measured
/// rounds after its warm-up.
pub(crate) fn args(
    plan: &Plan,
    (o, m, lane): (u64, u64, Lane),
    side: &Side,
    rounds: usize,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "-O".into(),
        o.to_string(),
        "-M".into(),
        m.to_string(),
        "-N".into(),
        plan.per_sender.to_string(),
        "-R".into(),
        rounds.to_string(),
        "--format".into(),
        "json".into(),
    ]
    .into();
    if let Lane::Locked(_, b) = lane {
        let lock = match side.hold_ns {
            Some(h) => format!("{}:hold_ns={h}", plan.backends[b]),
            None => plan.backends[b].to_string(),
        };
        a.extend(["--lock".into(), lock]);
    }
    // Only what differs from the defaults, so that builds from before a flag still run.
    if lane.via() != Via::Chan {
        a.extend(["--via".into(), lane.via().name().into()]);
    }
    if plan.size != TAG {
        a.extend(["-S".into(), plan.size.to_string()]);
    }
    if plan.global_lock {
        a.push("--global-lock".into());
    }
    if let Some(how) = plan.pin {
        a.push(how.flag().into());
    }
    a
}

/// One process of `side`: one repetition of one cell; the median of its measured rounds.
pub(crate) fn run_one(
    plan: &Plan,
    cell: (u64, u64, Lane),
    side: &Side,
    limit: Duration,
) -> Result<Sample, Error> {
    let args = args(plan, cell, side, ROUNDS);
    // How far apart the CPUs are as the process starts: what a slow run is judged against
    // (`slow`).
    let cpu_trip_ns = crate::probe::cpu_round_trip_ns().unwrap_or(0);
    let exe = side.exe.display();
    let flag = side.flag;
    let shown = || format!("{exe} {}", args.join(" "));
    let out = child::output_within(command(&side.exe).args(&args), limit)
        .map_err(|e| usage!("{flag}: cannot run {exe}: {e}"))?
        .map_err(|why| stopped(flag, &side.exe, why, limit, &args.join(" ")))?;
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match out.status.code() {
        Some(0) => {}
        Some(2) => {
            return Err(usage!(
                "{flag}: {exe} refused `{}`: {first}",
                args.join(" ")
            ))
        }
        Some(3) => return Err(Error::Transport(format!("{}: {first}", shown()))),
        _ => {
            return Err(usage!(
                "{flag}: `{}` failed ({}){}{first}",
                shown(),
                out.status,
                if first.is_empty() { "" } else { ": " }
            ))
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let doc = speaks(&text).map_err(|why| {
        usage!(
            "{flag}: {exe} does not speak chantest's results format ({FORMAT} version \
             {VERSION}): {why}"
        )
    })?;
    let (o, m, lane) = cell;
    match &doc.cells[..] {
        [c] if c.nbuf == o
            && c.senders == m
            && c.per_sender == plan.per_sender
            && c.via == lane.via().name()
            && !c.samples.is_empty() =>
        {
            let mut rounds = c.samples.clone();
            rounds.sort_by_key(|x| x.ns);
            Ok(Sample {
                cpu_trip_ns,
                ..rounds[(rounds.len() - 1) / 2]
            })
        }
        _ => Err(usage!(
            "{flag}: {exe} answered `{}` with other cells than the one asked for",
            args.join(" ")
        )),
    }
}

/// The command that runs `exe`, under the same `argv[0]` whatever its path.
///
/// A process copies its arguments to the heap before anything else, so the length of its
/// path moves every allocation after them by that much. A channel of a build from before
/// `chan` aligned its state ran 10-14 % faster or slower by where that put it, so two copies
/// of one binary at paths of different lengths were judged apart (`docs/tuning.md`).
fn command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::arg0(&mut cmd, "chantest");
    cmd
}

/// The error for a child that `flag` ran and [`child::output_within`] stopped.
pub(crate) fn stopped(
    flag: &str,
    exe: &Path,
    why: child::Stopped,
    limit: Duration,
    command: &str,
) -> Error {
    let exe = exe.display();
    match why {
        child::Stopped::Late => usage!(
            "{flag}: {exe} did not answer within {} (killed it): `{command}`",
            child::secs(limit)
        ),
        child::Stopped::Flooded => usage!(
            "{flag}: {exe} printed more than {} MiB (killed it; a chantest results document \
             is a few kB): `{command}`",
            child::MAX_OUTPUT >> 20
        ),
    }
}

/// The results document another chantest printed, or why it is not one.
pub(crate) fn speaks(text: &str) -> Result<Results, String> {
    if text.trim().is_empty() {
        return Err("it printed nothing".into());
    }
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|_| "its output is not JSON".to_string())?;
    match (v.get("format").and_then(|f| f.as_str()), v.get("version")) {
        (Some(FORMAT), Some(ver)) if ver.as_u64() == Some(u64::from(VERSION)) => {}
        (Some(FORMAT), Some(ver)) => return Err(format!("it writes version {ver}")),
        (Some(f), _) => return Err(format!("its output is a `{f}` document")),
        (None, _) => return Err("its output has no format field".into()),
    }
    Results::parse(text).map_err(|e| format!("its document{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_builds_are_named_briefly() {
        for (path, want) in [
            ("../old/target/release/chantest", "old"),
            ("/work/wt-x/target/debug/chantest", "wt-x (debug)"),
            ("/tmp/slow-chantest", "slow-chantest"),
            ("chantest", "chantest"),
            ("target/release/chantest", "chantest"),
            ("/tmp/shared-target/debug/chantest", "shared-target (debug)"),
            ("/tmp/old/release/chantest", "old"),
            ("/release/chantest", "chantest"),
        ] {
            assert_eq!(brief(Path::new(path)), want, "{path}");
        }
    }

    /// Every side runs as `chantest`, so the length of its path cannot move its heap.
    #[test]
    #[cfg(target_os = "linux")]
    fn every_side_runs_under_one_name() {
        let out = command(Path::new("/bin/cat"))
            .arg("/proc/self/cmdline")
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"chantest\0/proc/self/cmdline\0");
    }

    #[test]
    fn answer_limits() {
        let s = Duration::from_secs;
        // Before any answer: the floor plus 10 us a message.
        assert_eq!(answer_limit(None, None, 1e6), s(70));
        // After: ten times the slowest, at least the floor; never more than the budget.
        assert_eq!(answer_limit(None, Some(s(1)), 1e6), ANSWER_FLOOR);
        assert_eq!(answer_limit(None, Some(s(30)), 1e6), s(300));
        assert_eq!(answer_limit(Some(s(2)), None, 1e6), s(2));
        assert_eq!(
            answer_limit(Some(s(2)), Some(Duration::from_millis(50)), 1e6),
            s(2)
        );
        // A budget shorter than one process does not kill the processes that answer.
        assert_eq!(answer_limit(Some(s(1)), Some(s(3)), 1e6), s(30));
        assert_eq!(answer_limit(Some(s(600)), Some(s(30)), 1e6), s(300));
    }

    #[test]
    fn refuses_what_is_not_a_results_document() {
        for (text, want) in [
            ("", "printed nothing"),
            ("hello", "not JSON"),
            ("{}", "no format field"),
            (r#"{"format": "other", "version": 1}"#, "`other` document"),
            (
                r#"{"format": "chantest-results", "version": 7}"#,
                "version 7",
            ),
            (
                r#"{"format": "chantest-results", "version": 1}"#,
                "its document is not",
            ),
        ] {
            let e = speaks(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
