//! `--metric instructions`: instructions per message, counted by callgrind instead of timed.
//!
//! Each cell is run as its own process (`chantest -O o -M m -N n -R 1 --lock L --format
//! json`, the same command `--against` gives another build) under `valgrind --tool=callgrind`,
//! pinned to one CPU, once with N/2 values per sender and once with N; the count is
//!
//! ```text
//! (Ir(N) - Ir(N/2)) / (rounds x messages(N/2)),
//! ```
//!
//! so that start-up, calibration and thread creation, the same in both, cancel (as
//! `benches/callgrind.sh` does for the grid), all but a few thousand instructions a process
//! that differ from run to run (clock reads, the spin calibration; the allocator's arenas are
//! made to repeat, see [`count`]), which a larger N dilutes. `rounds` is what the process ran:
//! its warm-up and its one measured round. Ir counts user-space instructions of every thread,
//! libc included. Valgrind runs one thread at a time and the process is pinned to one CPU, so
//! no lock spins for a thread that cannot run; the counts then repeat (the 12 cells of
//! O=0,1,10,100 and M=1,2,8 with the adaptive lock at the default N, four repetitions, twice:
//! within 0.4 %; 0.5 % for sem, whose waits depend a little on when valgrind switches
//! threads), and a change of 1 % is a change of the code, whatever the machine's load.
//!
//! What this cannot see is everything that costs time without user-space instructions:
//! waiting (futex sleeps, yields), context switches, the kernel's side of a system call,
//! cache misses and contention between CPUs. Only the wall-time mode measures those, and
//! [`UNSEEN`] says so under every table.
//!
//! With `--against OLD` the other build is counted the same way, cell by cell; with
//! `--baseline FILE` the counts come from a file this mode saved (`--save`). A cell is
//! *regressed* when new/old exceeds `1 + threshold` (default 1 %), *improved* when it is below
//! `1 / (1 + threshold)`, else *ok*; with several repetitions (`-R`) a change whose counts
//! overlap between the sides is *inconclusive* instead.

use crate::affinity::{self, Cpus};
use crate::against::{self, Side};
use crate::child;
use crate::error::{usage, Error};
use crate::model::Via;
use crate::plan::{Lane, Plan, WARMUP};
use crate::progress::Progress;
use crate::records::{
    median_sorted, CountCell, CountChange, Counts, Params, Verdict, COUNTS_FORMAT, COUNTS_VERSION,
};
use crate::report::Format;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Default N in this mode: enough messages that the difference dwarfs the noise (a few
/// hundred instructions in tens of millions), few enough that a run takes seconds.
pub(crate) const DEFAULT_PER_SENDER: u64 = 16384;
/// Default R in this mode without a comparison: one count a cell.
pub(crate) const DEFAULT_REPS: u64 = 1;
/// Default R in this mode with `--against` or `--baseline`: a verdict needs each side to
/// show that its counts repeat ([`judge`]).
pub(crate) const DEFAULT_REPS_JUDGED: u64 = 2;
/// Default `--threshold` in this mode.
pub(crate) const DEFAULT_THRESHOLD: f64 = 0.01;

/// What this mode cannot see, printed under every table.
pub(crate) const UNSEEN: &str = "# not seen: waiting (futex sleeps, yields, spinning for another \
     CPU), context switches, the kernel's side of system calls, cache misses and contention \
     between CPUs; only the wall-time mode (--metric time) measures those";

/// The other side of a comparison.
#[derive(Clone, Debug)]
pub(crate) enum Old {
    /// Another build, counted now.
    Build(PathBuf),
    /// Counts saved earlier.
    File(Box<Counts>, PathBuf),
}

/// Whether `valgrind` is an executable file on `PATH`.
fn valgrind_on_path() -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join("valgrind"))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Refuses, before anything runs, what this mode cannot do.
pub(crate) fn check(plan: &Plan) -> Result<(), Error> {
    if let Some(v) = plan
        .vias
        .iter()
        .find(|v| matches!(v, Via::Shm | Via::Signal))
    {
        return Err(usage!(
            "--metric instructions counts one process under callgrind: --via {v} runs two"
        ));
    }
    if !valgrind_on_path() {
        return Err(usage!(
            "--metric instructions runs each cell under valgrind's callgrind, and valgrind is \
             not on PATH (apt-get install valgrind)"
        ));
    }
    Ok(())
}

/// Counts every cell of `plan` with this build (and with `old`'s build), judges, and returns
/// the document and its rendering in `format`.
///
/// A process that does not answer is killed, as `--against` kills one in wall time: within
/// `budget` when one is given, else after at least [`against::ANSWER_FLOOR`] or ten times the
/// slowest answer so far ([`against::answer_limit`]).
pub(crate) fn run(
    plan: &Plan,
    old: Option<&Old>,
    threshold: f64,
    format: Format,
    budget: Option<Duration>,
) -> Result<(Counts, String), Error> {
    check(plan)?;
    let this = Side::this()?;
    let other = match old {
        Some(Old::Build(p)) => Some(Side::other(p)),
        _ => None,
    };
    let cpu = Cpus::current()
        .map_err(|e| usage!("--metric instructions: cannot read the CPU mask: {e}"))?
        .nth(0);
    let dir = std::env::temp_dir().join(format!("chantest-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| usage!("cannot create {}: {e}", dir.display()))?;
    // Removed when this goes, on every path out, or by the reaper if chantest is stopped.
    let scratch = crate::reaper::scratch(&dir);
    let counted = count_all(plan, &this, other.as_ref(), cpu, &dir, budget);
    drop(scratch);
    let (mut new, theirs) = counted?;
    match (old, theirs) {
        (Some(Old::Build(p)), Some(theirs)) => {
            new.judge(&theirs, &against::brief(p), threshold);
        }
        (Some(Old::File(saved, _)), _) => new.judge(saved, "baseline", threshold),
        _ => {}
    }
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&new).unwrap_or_default() + "\n",
        _ => render(&new, plan, threshold, old),
    };
    Ok((new, text))
}

/// The counts of this build and, if given, of `other`, cell by cell.
fn count_all(
    plan: &Plan,
    this: &Side,
    other: Option<&Side>,
    cpu: usize,
    dir: &Path,
    budget: Option<Duration>,
) -> Result<(Counts, Option<Counts>), Error> {
    let sides: Vec<&Side> = std::iter::once(this).chain(other).collect();
    let cells: Vec<(u64, u64, Lane)> = plan
        .points()
        .flat_map(|(o, m)| plan.lanes().into_iter().map(move |l| (o, m, l)))
        .collect();
    let mut progress = Progress::new(cells.len() * plan.reps * sides.len() * 2);
    let mut out: Vec<Counts> = sides.iter().map(|_| empty(plan, cpu)).collect();
    let mut waits = Waits {
        slowest: None,
        budget,
    };
    let mut seq = 0;
    for (cell, key) in cells.iter().zip(plan.keys()) {
        let mut per_side: Vec<CountCell> = sides
            .iter()
            .map(|_| CountCell {
                lock: key.lock.clone(),
                via: key.via.clone(),
                nbuf: key.nbuf,
                senders: key.senders,
                per_sender: plan.per_sender,
                size: key.size,
                global_lock: key.global_lock,
                rounds: 0,
                ir_half: Vec::new(),
                ir_full: Vec::new(),
            })
            .collect();
        for _ in 0..plan.reps {
            for (k, side) in sides.iter().enumerate() {
                for (n, full) in [(plan.per_sender / 2, false), (plan.per_sender, true)] {
                    seq += 1;
                    let (ir, rounds) = count(
                        plan,
                        *cell,
                        side,
                        n,
                        cpu,
                        &dir.join(seq.to_string()),
                        &mut waits,
                    )?;
                    let c = &mut per_side[k];
                    c.rounds = rounds;
                    if full {
                        c.ir_full.push(ir);
                    } else {
                        c.ir_half.push(ir);
                    }
                    progress.advance(&format_args!(
                        "{} O={} M={}",
                        key.lock, key.nbuf, key.senders
                    ));
                }
            }
        }
        for (k, c) in per_side.into_iter().enumerate() {
            out[k].cells.push(c);
        }
    }
    progress.finish();
    let mut it = out.into_iter();
    let new = it.next().unwrap_or_else(|| empty(plan, cpu));
    Ok((new, it.next()))
}

fn empty(plan: &Plan, cpu: usize) -> Counts {
    let lock = |i: usize| plan.backends[i].to_string();
    Counts {
        format: COUNTS_FORMAT.into(),
        version: COUNTS_VERSION,
        params: Params {
            locks: (0..plan.backends.len()).map(lock).collect(),
            reference: lock(plan.reference),
            via: plan.vias.iter().map(|v| v.name().to_string()).collect(),
            size: plan.size as u64,
            nbuf: plan.nbuf.values().to_vec(),
            senders: plan.senders.values().to_vec(),
            per_sender: plan.per_sender,
            reps: plan.reps,
            warmup: WARMUP,
            global_lock: plan.global_lock,
            pin: true,
            apart: false,
            stats: locks::stats::ENABLED,
        },
        cpu,
        cells: Vec::new(),
        changes: Vec::new(),
    }
}

/// What decides how long a process may take to answer ([`against::answer_limit`]).
struct Waits {
    /// The slowest answer so far.
    slowest: Option<Duration>,
    /// `--budget`.
    budget: Option<Duration>,
}

/// Ir of one process of `side` running `cell` with `n` values per sender under callgrind,
/// pinned to `cpu`, and the rounds it ran.
fn count(
    plan: &Plan,
    cell: (u64, u64, Lane),
    side: &Side,
    n: u64,
    cpu: usize,
    file: &Path,
    waits: &mut Waits,
) -> Result<(u64, u64), Error> {
    let sized = Plan {
        per_sender: n,
        pin: None,
        ..plan.clone()
    };
    let args = against::args(&sized, cell, side, 1);
    let exe = side.exe.display();
    let shown = || format!("valgrind --tool=callgrind {exe} {}", args.join(" "));
    let mut cmd = Command::new("valgrind");
    // Children traced: a wrapper script's exec of the real binary is counted (what the script
    // ran before it is lost with its image, and cancels in the difference anyway).
    // No gdb server: its pipes in $TMPDIR would outlive a valgrind killed for not answering.
    cmd.args([
        "-q",
        "--tool=callgrind",
        "--trace-children=yes",
        "--vgdb=no",
    ])
    .arg(format!("--callgrind-out-file={}", file.display()))
    .arg(&side.exe)
    .args(&args);
    // One malloc arena. glibc gives a thread a new arena when the main one's lock is busy at
    // its first allocation, which depends on the schedule; a process whose threads then share
    // an arena consolidates its free lists once (some 14,000 instructions) and one whose
    // threads do not, does not. That did not cancel between the two sizes of a cell: at O=100
    // M=1 and the default N, 1.1 % of the count, and a build against itself came out
    // "inconclusive". With one arena, ten processes spread by 4,100 instructions in all where
    // eight had spread by 14,800. A user's own setting is kept.
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        cmd.env("MALLOC_ARENA_MAX", "1");
    }
    let (_, m, lane) = cell;
    let msgs = lane.via().messages(m, n) * 2.0;
    // Callgrind runs a program some fifty times slower than it runs natively.
    let limit = against::answer_limit(waits.budget, waits.slowest, msgs * 10.0);
    let t = Instant::now();
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            // The child inherits this thread's mask: the whole process on one CPU.
            affinity::pin_current(cpu)?;
            child::output_within(&mut cmd, limit)
        })
        .join()
    })
    .map_err(|_| usage!("--metric instructions: the thread that ran valgrind panicked"))?
    .map_err(|e| usage!("--metric instructions: cannot run valgrind: {e}"))?
    .map_err(|why| against::stopped("--metric instructions", &side.exe, why, limit, &shown()))?;
    waits.slowest = waits.slowest.max(Some(t.elapsed()));
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if !out.status.success() {
        return Err(usage!(
            "--metric instructions: `{}` failed ({}){}{first}",
            shown(),
            out.status,
            if first.is_empty() { "" } else { ": " }
        ));
    }
    let doc = against::speaks(&String::from_utf8_lossy(&out.stdout)).map_err(|why| {
        usage!(
            "--metric instructions: {exe} does not speak chantest's results format ({} \
             version {}): {why}",
            crate::records::FORMAT,
            crate::records::VERSION
        )
    })?;
    let rounds = match doc.params.warmup {
        0 => WARMUP,
        w => w,
    } + doc.cells.first().map_or(1, |c| c.samples.len());
    let text = std::fs::read_to_string(file).map_err(|e| {
        usage!(
            "--metric instructions: no callgrind output from `{}`: {e}",
            shown()
        )
    })?;
    let ir = totals(&text).ok_or_else(|| {
        usage!(
            "--metric instructions: callgrind's output {} has no totals",
            file.display()
        )
    })?;
    let _ = std::fs::remove_file(file);
    Ok((ir, rounds as u64))
}

/// The `summary:` (or `totals:`) Ir of a callgrind output file.
fn totals(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .next_back()
}

/// A count per message, if it is one: the difference of two runs can fall below zero only
/// when the schedule, not the code, decided the counts.
fn a_count(x: f64) -> Option<f64> {
    (x.is_finite() && x > 0.0).then_some(x)
}

/// The verdict of new against old counts per message (repetitions of each), the ratio of
/// the medians, and why nothing was decided when the counts forbid it. Counts are exact only
/// where the schedule is (a lock that spin-waits counts its waiting, and that depends on when
/// valgrind switches threads), so before any ratio is judged each side must show that its
/// counts repeat: at least two counts a side, all of them positive, spread by no more than
/// the threshold. (Before this check, a ticket lock against itself at one count a side was called
/// REGRESSED 1.94x, and a real change printed -589.4 instructions per message.)
pub(crate) fn judge(
    new: &[f64],
    old: &[f64],
    threshold: f64,
) -> (Option<f64>, Verdict, Option<String>) {
    let med = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        median_sorted(&v)
    };
    let lo = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ratio = a_count(med(new)).zip(a_count(med(old))).map(|(a, b)| a / b);
    let mut why = None;
    for (side, v) in [("new", new), ("old", old)] {
        if why.is_some() {
            break;
        }
        why = if v.is_empty() || v.iter().any(|&x| a_count(x).is_none()) {
            Some(format!(
                "the {side} side's counts fell as N doubled: the schedule decides them, not \
                 only the code (a lock that spin-waits?)"
            ))
        } else if v.len() < 2 {
            Some(format!(
                "one count on the {side} side shows nothing about whether counts repeat: \
                 give -R 2 or more"
            ))
        } else if (hi(v) - lo(v)) / med(v) > threshold {
            Some(format!(
                "the {side} side's counts differ by {:.1}% between repetitions, beyond the \
                 threshold: the schedule decides them, not only the code (a lock that \
                 spin-waits?), or N is too small to dilute what each process's start \
                 costs differently (give a larger -N)",
                (hi(v) - lo(v)) / med(v) * 100.0
            ))
        } else {
            None
        };
    }
    let Some(r) = ratio.filter(|_| why.is_none()) else {
        return (ratio, Verdict::Inconclusive, why);
    };
    let apart = lo(new) > hi(old) || hi(new) < lo(old);
    let verdict = if r > 1.0 + threshold {
        if apart {
            Verdict::Regressed
        } else {
            Verdict::Inconclusive
        }
    } else if r < 1.0 / (1.0 + threshold) {
        if apart {
            Verdict::Improved
        } else {
            Verdict::Inconclusive
        }
    } else {
        Verdict::Ok
    };
    (ratio, verdict, None)
}

impl Counts {
    /// Each cell against the same cell of `old`, called `name`.
    fn judge(&mut self, old: &Counts, name: &str, threshold: f64) {
        self.changes = self
            .cells
            .iter()
            .filter_map(|new| {
                let before = old.cell(&new.key())?;
                let (ratio, verdict, why) = judge(&new.per_msg(), &before.per_msg(), threshold);
                Some(CountChange {
                    lock: new.lock.clone(),
                    via: new.via.clone(),
                    against: name.to_string(),
                    nbuf: new.nbuf,
                    senders: new.senders,
                    old_per_msg: a_count(before.median()),
                    new_per_msg: a_count(new.median()),
                    ratio,
                    verdict,
                    why,
                })
            })
            .collect();
    }
}

/// Every cell of `plan` must be in the saved counts.
pub(crate) fn check_cells(plan: &Plan, old: &Counts, path: &Path) -> Result<(), Error> {
    for key in plan.keys() {
        if old.cell(&key).is_none() {
            return Err(usage!(
                "baseline {} has no cell {key}; leave out -O/-M/-N/-S/--via/--lock/--global-lock \
                 to count its own cells",
                path.display()
            ));
        }
    }
    Ok(())
}

fn render(c: &Counts, plan: &Plan, threshold: f64, old: Option<&Old>) -> String {
    let n = plan.per_sender;
    let rounds = c.cells.first().map_or(2, |x| x.rounds);
    let mut out = format!(
        "# instructions per message: callgrind Ir (user space, every thread, libc included), \
         (Ir(N={n}) - Ir(N={})) / ({rounds} rounds x messages of N={}), pinned to CPU {}, median \
         of {}; {}\n",
        n / 2,
        n / 2,
        c.cpu,
        plan.reps,
        against::version_line(),
    );
    match old {
        Some(Old::Build(p)) => {
            let _ = writeln!(out, "# vs {}: {}", against::brief(p), p.display());
        }
        Some(Old::File(_, p)) => {
            let _ = writeln!(out, "# vs baseline {}", p.display());
        }
        None => {}
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    if c.changes.is_empty() {
        rows.push(
            ["lock", "via", "O", "M", "instr/msg", "range"]
                .map(String::from)
                .to_vec(),
        );
        for cell in &c.cells {
            let mut v = cell.per_msg();
            v.sort_by(f64::total_cmp);
            rows.push(vec![
                cell.lock.clone(),
                cell.via.clone(),
                cell.nbuf.to_string(),
                cell.senders.to_string(),
                shown(a_count(cell.median()), 1),
                match (v.first(), v.last()) {
                    (Some(a), Some(b)) if v.len() > 1 && *a > 0.0 => format!("{a:.1}-{b:.1}"),
                    _ => "-".into(),
                },
            ]);
        }
    } else {
        rows.push(
            [
                "lock",
                "via",
                "vs",
                "O",
                "M",
                "old instr/msg",
                "new instr/msg",
                "ratio",
                "verdict",
            ]
            .map(String::from)
            .to_vec(),
        );
        for ch in &c.changes {
            rows.push(vec![
                ch.lock.clone(),
                ch.via.clone(),
                ch.against.clone(),
                ch.nbuf.to_string(),
                ch.senders.to_string(),
                shown(ch.old_per_msg, 1),
                shown(ch.new_per_msg, 1),
                shown(ch.ratio, 4),
                ch.verdict.to_string(),
            ]);
        }
    }
    out += &align(&rows);
    for ch in &c.changes {
        if let Some(why) = &ch.why {
            let _ = writeln!(
                out,
                "# {} {} O={} M={} inconclusive: {why}",
                ch.lock, ch.via, ch.nbuf, ch.senders
            );
        }
    }
    if !c.changes.is_empty() {
        let regressed = c
            .changes
            .iter()
            .filter(|x| x.verdict == Verdict::Regressed)
            .count();
        let undecided = c.changes.iter().filter(|x| !x.verdict.decided()).count();
        let _ = writeln!(
            out,
            "# {regressed} of {} cells regressed, {undecided} inconclusive (exact counts: \
             regressed above {:.3}, improved below {:.3})",
            c.changes.len(),
            1.0 + threshold,
            1.0 / (1.0 + threshold)
        );
    }
    out += UNSEEN;
    out.push('\n');
    out
}

/// A figure to `places` decimals, or `-` for none.
fn shown(x: Option<f64>, places: usize) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.places$}"))
}

fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i < 3 {
                    format!("{s:<w$}", w = width[i])
                } else {
                    format!("{s:>w$}", w = width[i])
                }
            })
            .collect();
        out += line.join("  ").trim_end();
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrind_totals() {
        let text = "events: Ir\nfn=main\n1 5\nsummary: 3365528\ntotals: 3365528\n";
        assert_eq!(totals(text), Some(3365528));
        assert_eq!(totals("events: Ir\n"), None);
    }

    #[test]
    fn exact_verdicts() {
        let t = 0.01;
        assert_eq!(judge(&[101.5; 2], &[100.0; 2], t).1, Verdict::Regressed);
        assert_eq!(judge(&[100.9; 2], &[100.0; 2], t).1, Verdict::Ok);
        assert_eq!(judge(&[99.2; 2], &[100.0; 2], t).1, Verdict::Ok);
        assert_eq!(judge(&[98.0; 2], &[100.0; 2], t).1, Verdict::Improved);
        // Repetitions that overlap across the sides do not decide a change beyond the threshold.
        assert_eq!(
            judge(&[99.0, 103.0, 104.0], &[100.0, 98.5, 101.0], t).1,
            Verdict::Inconclusive
        );
        assert_eq!(
            judge(&[103.0, 103.1], &[100.0, 100.1], t).1,
            Verdict::Regressed
        );
    }

    #[test]
    fn counts_that_do_not_repeat_decide_nothing() {
        let t = 0.01;
        // One count a side: a user's ticket lock against itself, called REGRESSED 1.94x.
        let (r, v, why) = judge(&[194.0], &[100.0], t);
        assert_eq!((r, v), (Some(1.94), Verdict::Inconclusive));
        assert!(why.unwrap().contains("-R 2"));
        // A side that disagrees with itself beyond the threshold.
        let (_, v, why) = judge(&[194.0, 100.0], &[100.0, 100.0], t);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(why.unwrap().contains("new side's counts differ by 63.9%"));
        let (_, v, why) = judge(&[100.0, 100.2], &[100.0, 105.0], t);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(why.unwrap().contains("old side's counts differ"));
        // Counts that fell as N doubled are no counts: no ratio, no negative figure.
        let (r, v, why) = judge(&[-589.4, 130.0], &[130.0, 130.1], t);
        assert_eq!((r, v), (None, Verdict::Inconclusive));
        assert!(why.unwrap().contains("fell as N doubled"));
        // Within the threshold on each side, the verdict stands.
        assert_eq!(
            judge(&[110.0, 110.5], &[100.0, 100.4], t),
            (Some(110.25 / 100.2), Verdict::Regressed, None)
        );
    }

    #[test]
    fn per_message_is_the_difference_of_two_sizes() {
        let c = CountCell {
            lock: "adaptive".into(),
            via: "chan".into(),
            nbuf: 10,
            senders: 2,
            per_sender: 1000,
            size: 8,
            global_lock: false,
            rounds: 2,
            ir_half: vec![1_000_000],
            ir_full: vec![1_200_000],
        };
        // 200000 instructions over 2 rounds x 2 senders x 500 values.
        assert_eq!(c.per_msg(), [100.0]);
    }
}
