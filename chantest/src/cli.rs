//! The command line: flags, their parsers, and turning them into a [`Plan`].
//!
//! Sweep flags are `Option`s rather than carrying clap defaults so that `--baseline` can tell
//! a flag the user gave (which must agree with the baseline's cells) from one left out (which
//! the baseline fills in).

use crate::calibrate::Calibration;
use crate::error::{usage, Error};
use crate::grid::Grid;
use crate::instructions;
use crate::model::{check_size, Bounds, Placement, Via, BUILD_VERSION, TAG};
use crate::plan::Plan;
use crate::records::{Counts, Params, Results};
use crate::report::Format;
use crate::via::shm;
use clap::{ArgGroup, Parser};
use locks::Backend;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Default O: the seed's `Odflt`.
pub(crate) const DEFAULT_NBUF: u64 = 10;
/// Default M: the seed's `Mdflt`.
pub(crate) const DEFAULT_SENDERS: u64 = 1;
/// Default N: 1<<16, a thirty-second of the seed's 1<<21, so that a sweep of all backends
/// takes seconds rather than minutes on a small machine.
pub(crate) const DEFAULT_PER_SENDER: u64 = 1 << 16;
/// Default R.
pub(crate) const DEFAULT_REPS: u64 = 5;
/// Default `--threshold`.
pub(crate) const DEFAULT_THRESHOLD: f64 = 0.10;
/// Default `--hold-ns`: on the 2-vCPU guest this was written on, a slowdown of about 15 % at
/// `-O 10 -M 1` and 5 % at `-O 10 -M 8` as chantest measures it, what a regression check at
/// the default threshold should catch in the first cell; other machines answer differently,
/// which is what `--calibrate` reports.
pub(crate) const DEFAULT_HOLD_NS: u32 = 4;
/// Default `-S`: the seed's ulong.
pub(crate) const DEFAULT_SIZE: u64 = 8;

const EXAMPLES: &str = "\
Examples:
  chantest -O 10 -M 8                      the seed's run, every backend side by side
  chantest -N 2097152 -O 0 -M 1            the seed's N (1<<21 values per sender)
  chantest -O 0,1,10,100 -M 1..4,8 --plot chan.svg
  chantest --lock sem,adaptive:spin_ns=0 --ref sem --format csv
  chantest -O 10 -M 1,8 --save before.json
  chantest --baseline before.json          same cells again; exit 1 if any regressed
  chantest --compare spin,adaptive -M 1..4 exit 1 if adaptive is slower than spin
  chantest --compare kanal,adaptive -O 10 -M 8
                                           exit 1 if adaptive (over chan) is slower than kanal
  chantest --compare kanal-async,adaptive -O 0,1 -M 1,8 --per-process --budget 5m
                                           ours with tasks (task, beside kanal-async's runtime)
                                           against kanal, one process per repetition
  chantest --lock adaptive -O 10 -M 1,8 --against ../old/target/release/chantest --budget 60s
                                           this build against another, interleaved
  chantest --lock adaptive --metric instructions --against ../old/target/release/chantest
                                           instructions per message under callgrind, judged
                                           exactly (1%); needs valgrind
  chantest --baseline before.json --budget 60s
                                           re-run this side until decided or 60 s are spent
  chantest --calibrate --runs 40,20 --budget 45s
                                           false-alarm and detection rates on this machine
  chantest --format plain -R 3             bare total ns per run, like Plan 9's chantest
  chantest --via chan,pipe,unix -M 1,2,8   the same workload through the kernel, beside chan
  chantest --via chan,task,task-mt -O 10 -M 8
                                           the channel with threads and with tasks
  chantest --via shm,pipe -S 8k -N 20000   8 KiB messages between two processes (Jesup, 1991)
  chantest --via chan,unix -S 1M -N 500    1 MiB messages, every byte written and read
  chantest --via signal -N 100000          signal ping-pong: ns and cycles per signal
  chantest -O 10 -M 8 --via chan,kanal --ref kanal --lock adaptive
                                           our channel beside kanal's, ratios to kanal
  chantest --via task,kanal-async,tokio -O 1,10 -M 1,8 --format markdown --per-process
                                           tasks, ours beside the async peers, each run in a
                                           fresh process, as markdown (benches/grid.sh)

Transports (--via): chan runs once per --lock backend, and so do task and task-mt: the same
channel, checks and -S, with M sender tasks and one receiver task (send_async, recv_async) on
tokio's current-thread runtime (task: every task on one thread, like Plan 9's threads in one
proc) or on its multi-thread runtime (task-mt: one worker thread per CPU this process may use,
pinned one per CPU with --pin); each run builds its runtime before the clock starts and shuts
it down after. pipe and unix: M threads write S-byte messages into one pipe or one unix stream
socket pair, one thread reads; -O does not apply (the kernel's buffer is the buffer); writers
take turns through a mutex when writes could interleave (unix with M > 1, pipe with M > 1 and
S > 4096). shm: M threads of a second chantest process copy messages into a ring of O slots in
shared memory (O=0 runs with one slot), futex waits. signal: N round trips of a signal between
two processes, figures per signal one way; needs -M 1 and -S 8. The peers (cargo feature
peers, on by default) are other crates' channels through the same runner and check: kanal,
crossbeam, flume and std (sync_channel) as chan runs ours, with threads; kanal-async,
flume-async, async-channel and tokio (mpsc) as task does, and kanal-async-mt, flume-async-mt,
async-channel-mt and tokio-mt as task-mt; -S 8 only; async-channel and tokio have no
rendezvous channel, so O=0 runs them with one buffer. Ratios are to chan with --ref's backend,
to the transport --ref names (--ref kanal), or to the first transport listed when chan is not
(task and task-mt with --ref's backend).

Verdicts (--baseline, --compare, --against): per cell, new/old ns per message is estimated
with an interval (Hodges-Lehmann / Mann-Whitney on logarithms) at 95% for all cells together
(Bonferroni: each of k cells at 1 - 0.05/k, so more cells do not mean more false alarms). A
cell has regressed when the whole interval lies above 1 and the estimate exceeds
1 + --threshold; it is ok only when the interval's upper end lies below 1 + --threshold;
otherwise it is inconclusive, with about how many more repetitions would likely decide it.
--against runs each repetition of each cell as one fresh process of each build, taking turns,
so drift hits both; --baseline compares with a file saved earlier, so drift between then and
now is read as a change. --budget keeps adding repetitions to undecided cells (of both sides,
or of this side against a --baseline) until all are decided or the time is spent, judging them
at R, 2R, 4R, ... repetitions, the j-th look at 1/(j(j+1)) of the error, so that looking
again does not add false alarms.
--metric instructions counts instead of timing: each cell under callgrind on one CPU, the
difference of an N/2 and an N run per message; new/old is judged exactly against
--threshold (default 0.01); it cannot see waiting, context switches, the kernel or
contention between CPUs, which only wall time measures.

Exit status: 0 ok (every compared cell ok), 1 a cell regressed, 2 usage error (including an
--against binary that does not speak chantest's results format), 3 a value was lost,
duplicated, reordered or damaged, or a transport failed mid-run (e.g. its peer process died),
4 no cell regressed but some are inconclusive.";

/// erik quanstrom's channel benchmark (9fans, 2013): M senders each send N values down one
/// channel with O buffers to a single receiver; the figure is the time until all M×N have
/// arrived.
///
/// Every (O, M) point is run with each lock backend, taking turns, after one warm-up round.
/// Reported per cell: median and range of ns per message, TSC cycles, CPU time and context
/// switches per message, and the ratio to a reference backend. Every value is checked to
/// arrive exactly once and in order.
#[derive(Debug, Parser)]
#[command(name = "chantest", version = BUILD_VERSION, after_help = EXAMPLES, max_term_width = 100)]
// The modes that compare or calibrate are one of a kind: clap refuses two of them together.
#[command(group = ArgGroup::new("mode").args(["against", "baseline", "compare", "calibrate"]))]
pub(crate) struct Args {
    /// Channel buffers: a value, a list or a range, e.g. 0,1,10,100 or 1..4,8 [default: 10]
    #[arg(short = 'O', value_name = "NBUF", value_parser = nbuf, allow_negative_numbers = true)]
    pub nbuf: Option<Grid>,

    /// Sending threads (tasks for --via task, task-mt): a value, a list or a range
    /// [default: 1]
    #[arg(
        short = 'M',
        value_name = "SENDERS",
        value_parser = senders,
        allow_negative_numbers = true
    )]
    pub senders: Option<Grid>,

    /// Values each sender sends (the seed used 2097152); round trips for --via signal
    /// [default: 65536]
    #[arg(
        short = 'N',
        value_name = "COUNT",
        value_parser = per_sender,
        allow_negative_numbers = true
    )]
    pub per_sender: Option<u64>,

    /// Measured repetitions per cell, after one warm-up [default: 5]
    #[arg(short = 'R', value_name = "REPS", value_parser = reps, allow_negative_numbers = true)]
    pub reps: Option<u64>,

    /// Lock backends of the channel (chan, task, task-mt): ours (spin, sem, adaptive), the
    /// peers' mutexes (std, parking_lot), any this binary added; with parameters, e.g.
    /// adaptive:spin_ns=0; or all [default: ours and the binary's own]
    #[arg(long, value_name = "LOCKS", value_parser = lock_list, conflicts_with = "compare")]
    pub lock: Option<LockList>,

    /// Backend the others are divided by, or a transport of --via that takes no lock, e.g.
    /// kanal [default: the first of --lock]
    #[arg(long = "ref", value_name = "LOCK|VIA", value_parser = reference, conflicts_with = "compare")]
    pub reference: Option<Reference>,

    /// One lock for all channels, as Plan 9 had, instead of one per channel
    #[arg(long)]
    pub global_lock: bool,

    /// Transports side by side: chan, task, task-mt, pipe, unix, signal, shm, or a peer
    /// (kanal, crossbeam, flume, std; kanal-async, flume-async, async-channel, tokio, each
    /// also -mt), e.g. chan,task,task-mt or chan,kanal,crossbeam [default: chan]
    #[arg(long, value_name = "VIAS", value_parser = via_list)]
    pub via: Option<ViaList>,

    /// Bytes per message: 8 (the value alone) or 16 and up, e.g. 4096, 8k, 1M [default: 8]
    #[arg(short = 'S', value_name = "SIZE", value_parser = size, allow_negative_numbers = true)]
    pub size: Option<u64>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// `--format plain`, by its older name (hidden: `--format` lists it)
    #[arg(
        long,
        hide = true,
        conflicts_with_all = ["format", "against", "baseline", "compare", "calibrate"]
    )]
    pub plain: bool,

    /// Draw ns per message against M as SVG: one line per backend, one panel per O
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Save parameters, raw samples and a machine description as JSON
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,

    /// Re-run the cells of a --save file and flag regressions (exit 1)
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Run backends A and B in alternation and flag B if slower than A (exit 1); A may be a
    /// transport that takes no lock, e.g. kanal,adaptive: is adaptive over chan slower? Over
    /// chan, task or task-mt (the one --via names; an async peer's own by default)
    #[arg(long, value_name = "A,B", value_parser = lock_pair)]
    pub compare: Option<LockPair>,

    /// Run every cell with this build and with another chantest binary, one process per
    /// repetition each, taking turns; flag cells where this build is slower (exit 1)
    #[arg(long, value_name = "OLD_CHANTEST")]
    pub against: Option<PathBuf>,

    /// With --against, --baseline, --compare or --calibrate: keep adding repetitions to
    /// undecided cells until every cell is decided or this much time is spent, e.g. 60s, 2m
    /// (with --metric instructions --against: how long a run may take to answer)
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = duration,
        allow_hyphen_values = true,
        requires = "mode"
    )]
    pub budget: Option<std::time::Duration>,

    /// Measure this machine's false-alarm rate (A/A: adaptive against itself) and detection
    /// rate (A/A': adaptive with --hold-ns against adaptive), each run as --against would
    #[arg(long, conflicts_with_all = ["save", "plot"])]
    pub calibrate: bool,

    /// With --calibrate: the slowdown put into A', ns busy-waited inside every critical section
    /// (the lock parameter hold_ns, a test aid)
    #[arg(
        long,
        value_name = "NS",
        default_value_t = DEFAULT_HOLD_NS,
        value_parser = hold_ns,
        allow_negative_numbers = true,
        requires = "calibrate"
    )]
    pub hold_ns: u32,

    /// With --calibrate: how many A/A and A/A' comparisons
    #[arg(
        long,
        value_name = "AA,AB",
        default_value = "10,10",
        value_parser = run_counts,
        allow_hyphen_values = true,
        requires = "calibrate"
    )]
    pub runs: RunCounts,

    /// Smallest slowdown that counts as a regression, as a fraction (0.10 = 10%)
    /// [default: 0.1; 0.01 with --metric instructions]
    #[arg(
        long,
        value_name = "FRACTION",
        value_parser = threshold,
        allow_negative_numbers = true
    )]
    pub threshold: Option<f64>,

    /// What to measure: wall time (waiting, switches and contention included, judged with
    /// statistics), or instructions per message counted by valgrind's callgrind on one CPU
    /// (deterministic, judged exactly; -N defaults to 16384, -R to 1, or 2 with --against or
    /// --baseline: a verdict needs each side's counts to repeat)
    #[arg(long, value_enum, default_value_t = Metric::Time)]
    pub metric: Metric,

    /// Pin the receiver and senders to CPUs this process may use, round-robin over all of them
    /// (spread, the default), or with the receiver's CPU kept for it alone (apart)
    #[arg(
        long,
        value_enum,
        value_name = "HOW",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "spread"
    )]
    pub pin: Option<Placement>,

    /// Run each repetition of each cell in a fresh chantest process, lanes rotated, as
    /// --against runs each side: no lane shares a process with another (with --compare, A
    /// and B take turns, and --budget adds processes)
    #[arg(
        long,
        conflicts_with_all = ["against", "baseline", "calibrate", "plain", "inject_fault"]
    )]
    pub per_process: bool,

    /// For testing the check: make sender 0 send one value twice (exit 3)
    #[arg(long, hide = true)]
    pub inject_fault: bool,
}

/// `--metric`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Metric {
    /// Wall time per message.
    Time,
    /// Instructions per message, under callgrind.
    Instructions,
}

/// A `--lock` list (a newtype, so that clap takes it as one value, not many).
#[derive(Clone, Debug)]
pub(crate) struct LockList(pub Vec<Backend>);

/// A `--via` list.
#[derive(Clone, Debug)]
pub(crate) struct ViaList(pub Vec<Via>);

/// `--runs`: A/A and A/A' comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunCounts(pub usize, pub usize);

/// `--ref`: a lock backend, or a transport that takes none (a peer, say).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reference {
    /// A backend of `--lock`.
    Lock(Backend),
    /// A transport of `--via`.
    Via(Via),
}

/// A `--compare` pair: A a backend or a transport that takes none, B a backend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LockPair(pub Reference, pub Backend);

fn nbuf(s: &str) -> Result<Grid, String> {
    Grid::parse(s, Bounds::NBUF)
}

fn senders(s: &str) -> Result<Grid, String> {
    Grid::parse(s, Bounds::SENDERS)
}

fn per_sender(s: &str) -> Result<u64, String> {
    Bounds::PER_SENDER.parse_one(s)
}

fn reps(s: &str) -> Result<u64, String> {
    Bounds::REPS.parse_one(s)
}

fn backend(s: &str) -> Result<Backend, String> {
    if s.trim() == "all" {
        return Err("names one backend, and `all` is every backend: give one, e.g. sem".into());
    }
    s.parse()
        .map_err(|e: locks::ParseBackendError| e.to_string())
}

/// `all` alone is every backend; beside others it is a mistake worth naming.
fn no_all_in_list(s: &str, what: &str) -> Result<(), String> {
    let names: Vec<&str> = s.split(',').map(str::trim).collect();
    if names.len() > 1 && names.contains(&"all") {
        return Err(format!(
            "`all` stands for every backend and cannot be listed with others: {what}"
        ));
    }
    Ok(())
}

fn lock_list(s: &str) -> Result<LockList, String> {
    no_all_in_list(s, "give `all` alone, or list backends such as spin,sem")?;
    let list = Backend::parse_list(s).map_err(|e| e.to_string())?;
    for (i, b) in list.iter().enumerate() {
        if list[..i].contains(b) {
            return Err(format!("`{b}` is listed twice"));
        }
    }
    Ok(LockList(list))
}

fn reference(s: &str) -> Result<Reference, String> {
    match s.parse::<Via>() {
        Ok(v) if !v.takes_lock() => Ok(Reference::Via(v)),
        _ => backend(s).map(Reference::Lock),
    }
}

fn lock_pair(s: &str) -> Result<LockPair, String> {
    no_all_in_list(s, "--compare takes two backends, e.g. spin,adaptive")?;
    if s.trim() == "all" {
        return Err("wants two backends, A,B (`all` is not two)".into());
    }
    if let Some((Ok(Reference::Via(a)), b)) = s.split_once(',').map(|(a, b)| (reference(a), b)) {
        return backend(b).map(|b| LockPair(Reference::Via(a), b));
    }
    match Backend::parse_list(s).map_err(|e| e.to_string())?[..] {
        [a, b] => Ok(LockPair(Reference::Lock(a), b)),
        _ => Err("wants two backends, A,B".into()),
    }
}

fn via_list(s: &str) -> Result<ViaList, String> {
    Via::parse_list(s).map(ViaList)
}

/// A byte count with an optional binary suffix: `8`, `4k`, `1M`, `1G`.
fn size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_lowercase()),
        _ => (t, ' '),
    };
    let shift = match unit {
        ' ' => 0,
        'k' => 10,
        'm' => 20,
        'g' => 30,
        _ => return Err(format!("`{s}` is not a size such as 8, 4096, 8k or 1M")),
    };
    if digits.starts_with('-') {
        return Err(format!(
            "`{s}` is negative: give bytes per message, such as 8, 4096 or 8k"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a size such as 8, 4096, 8k or 1M"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{s}` is out of range"))?;
    check_size(bytes)?;
    Ok(bytes)
}

/// A duration: a number with `ms`, `s`, `m` or `h` (bare: seconds).
fn duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a duration such as 60s, 2m or 500ms");
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.starts_with('-') {
        return Err(format!(
            "`{s}` is negative: it is the time to spend, such as 60s, 2m or 500ms"
        ));
    }
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = n * match unit {
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 7.0 * 86400.0) {
        return Err(format!(
            "`{s}` is out of range (more than 0, at most a week)"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

fn hold_ns(s: &str) -> Result<u32, String> {
    if s.trim().starts_with('-') {
        return Err(format!("`{s}` is negative: give ns from 1 to 1000000"));
    }
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a number of ns from 1 to 1000000")),
    }
}

fn run_counts(s: &str) -> Result<RunCounts, String> {
    let bad = || format!("`{s}` is not two counts AA,AB such as 40,20");
    if s.split(',').any(|x| x.trim().starts_with('-')) {
        return Err(format!(
            "`{s}` has a negative count: give two counts AA,AB such as 40,20"
        ));
    }
    match s
        .split(',')
        .map(|x| x.trim().parse::<usize>())
        .collect::<Vec<_>>()[..]
    {
        [Ok(a), Ok(b)] if a + b > 0 && a <= 10_000 && b <= 10_000 => Ok(RunCounts(a, b)),
        _ => Err(bad()),
    }
}

fn threshold(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("`{s}` is not a fraction such as 0.1 (for 10%)")),
    }
}

/// Parses the command line. Help and version are printed here and exit 0; any other clap
/// error becomes one `Error::Usage` line.
pub(crate) fn parse() -> Result<Args, Error> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    pin_hint(&args)?;
    Args::try_parse().map_err(|e| match e.kind() {
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => e.exit(),
        clap::error::ErrorKind::MissingRequiredArgument => match needs(&args) {
            Some((flag, why)) => usage!("{flag} {why}"),
            None => usage!("{}", one_line(&e.to_string(), "--help")),
        },
        _ => usage!("{}", one_line(&e.to_string(), "--help")),
    })
}

/// The flags that clap refuses without another (their `requires`), and what they go with:
/// clap names only the flag that is missing, not the one of the user's that wanted it.
const NEEDS: &[(&str, &str)] = &[
    (
        "--budget",
        "goes with --against, --baseline, --compare or --calibrate, where it buys repetitions \
         for undecided verdicts (with --metric instructions, only with --against, where it \
         bounds how long the other build may take to answer)",
    ),
    ("--hold-ns", "goes with --calibrate"),
    ("--runs", "goes with --calibrate"),
];

/// The first flag of `args` in [`NEEDS`], and what it goes with.
fn needs(args: &[String]) -> Option<(&'static str, &'static str)> {
    args.iter().find_map(|a| {
        NEEDS.iter().copied().find(|(flag, _)| {
            a.strip_prefix(flag)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
        })
    })
}

/// `--pin apart`: the value of `--pin` is optional, so it must be joined with `=`; clap would
/// only say that `apart` is an unexpected argument.
fn pin_hint(args: &[String]) -> Result<(), Error> {
    for w in args.windows(2) {
        if w[0] == "--pin" && matches!(w[1].as_str(), "spread" | "apart") {
            return Err(usage!(
                "--pin takes its value after `=`: write --pin={} (a bare --pin is --pin=spread; \
                 values: spread, apart)",
                w[1]
            ));
        }
    }
    Ok(())
}

/// Clap's multi-line error as one line: its first, without the `error: ` prefix, and with
/// the pointer to `help` (the command's `--help`) it would have printed below.
pub(crate) fn one_line(message: &str, help: &str) -> String {
    let mut lines = message.lines().skip_while(|l| l.trim().is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut first = first.trim().trim_start_matches("error: ").to_string();
    // A conflict with several flags (a group of them): clap lists them indented below.
    if first.ends_with(':') {
        let listed: Vec<&str> = lines
            .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
            .map(str::trim)
            .collect();
        first = format!("{first} {}", listed.join(", "));
    }
    // A value outside a set: clap lists the set on a line of its own.
    let values = message
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("[possible values:"))
        .map(|l| format!(" {l}"))
        .unwrap_or_default();
    format!("{first}{values} (try {help})")
}

/// What to do, once the flags have been checked.
#[derive(Debug)]
pub(crate) struct Setup {
    /// The sweep.
    pub plan: Plan,
    /// What to compare the results with.
    pub mode: Mode,
    /// How to print the results.
    pub format: Format,
    /// `--per-process`.
    pub per_process: bool,
    /// Regression threshold.
    pub threshold: f64,
    /// `--budget`, for `--baseline` and `--compare` (the other modes carry their own).
    pub budget: Option<std::time::Duration>,
    /// Where `--save` goes, already open.
    pub save: Option<Output>,
    /// Where `--plot` goes, already open.
    pub plot: Option<Output>,
}

/// What the results are compared with.
#[derive(Debug)]
pub(crate) enum Mode {
    /// Nothing.
    Sweep,
    /// A saved run.
    Baseline(Box<Results>),
    /// The second backend with the first.
    Compare,
    /// This build against another binary, interleaved.
    Against {
        /// The other build.
        old: PathBuf,
        /// `--budget`.
        budget: Option<std::time::Duration>,
    },
    /// Instructions per message under callgrind, judged against another build or saved counts.
    Instructions {
        /// What to compare with.
        old: Option<instructions::Old>,
        /// `--budget`: how long a process may take to answer.
        budget: Option<std::time::Duration>,
    },
    /// False-alarm and detection rates.
    Calibrate {
        /// What to run.
        cal: Calibration,
        /// `--budget`.
        budget: Option<std::time::Duration>,
    },
}

/// An output file, opened before the sweep so that a bad path fails in a second, not after a
/// long run; its old contents are replaced only when the results are written.
#[derive(Debug)]
pub(crate) struct Output {
    path: PathBuf,
    file: File,
}

impl Output {
    fn open(path: PathBuf, flag: &str) -> Result<Output, Error> {
        match OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
        {
            Ok(file) => Ok(Output { path, file }),
            Err(e) => Err(usage!("cannot write {flag} {}: {e}", path.display())),
        }
    }

    /// Replaces the file's contents with `text`.
    pub(crate) fn write(mut self, text: &str) -> Result<(), Error> {
        let done = self
            .file
            .set_len(0)
            .and_then(|()| self.file.write_all(text.as_bytes()));
        done.map_err(|e| usage!("cannot write {}: {e}", self.path.display()))
    }
}

impl Args {
    /// Checks the flags against each other and the baseline, and opens the outputs.
    pub(crate) fn setup(mut self) -> Result<Setup, Error> {
        // `std` names a transport (std's channel) and a lock (std's mutex): `--ref std` is the
        // transport when `--via` lists it, and else the lock.
        if let Some(Reference::Via(v)) = self.reference {
            let listed = self.via.as_ref().is_some_and(|ViaList(l)| l.contains(&v));
            if let (false, Ok(b)) = (listed, v.name().parse::<Backend>()) {
                self.reference = Some(Reference::Lock(b));
            }
        }
        if self.plain {
            self.format = Format::Plain;
        }
        check_plain(&self)?;
        check_counting(&self)?;
        let counting = self.metric == Metric::Instructions;
        let (baseline, counts) = match self.baseline.as_deref() {
            Some(p) if counting => (None, Some(Counts::load(p)?)),
            Some(p) => (Some(Results::load(p)?), None),
            None => (None, None),
        };
        let from_file = baseline
            .as_ref()
            .map(|b| &b.params)
            .or(counts.as_ref().map(|c| &c.params));
        let plan = self.plan(from_file)?;
        if let Some(exe) = &self.against {
            check_runnable(exe)?;
        }
        if counting {
            return self.counting(plan, counts);
        }
        let mode = match baseline {
            Some(old) => {
                let path = self.baseline.as_deref().unwrap_or(Path::new(""));
                check_cells(&plan, &old, path)?;
                Mode::Baseline(Box::new(old))
            }
            None if self.compare.is_some() => Mode::Compare,
            None if self.calibrate => Mode::Calibrate {
                cal: Calibration {
                    same: self.runs.0,
                    slowed: self.runs.1,
                    hold_ns: self.hold_ns,
                },
                budget: self.budget,
            },
            None => match self.against {
                Some(old) => Mode::Against {
                    old,
                    budget: self.budget,
                },
                None => Mode::Sweep,
            },
        };
        Ok(Setup {
            plan,
            mode,
            format: self.format,
            per_process: self.per_process,
            threshold: self.threshold.unwrap_or(DEFAULT_THRESHOLD),
            budget: self.budget,
            // Opened after the baseline was read: `--save` may name the same file.
            save: self.save.map(|p| Output::open(p, "--save")).transpose()?,
            plot: self.plot.map(|p| Output::open(p, "--plot")).transpose()?,
        })
    }

    /// The sweep: the flags given, else a baseline's parameters (`from_file`), else the
    /// defaults, checked against what the transports can do.
    fn plan(&self, from_file: Option<&Params>) -> Result<Plan, Error> {
        let (backends, reference) = self.lanes(from_file)?;
        crate::lanes::check(&backends)?;
        let (file_nbuf, file_senders) = match from_file {
            Some(p) => p
                .grids()
                .map(|(o, m)| (Some(o), Some(m)))
                .map_err(|e| usage!("baseline: {e}"))?,
            None => (None, None),
        };
        let vias = match (&self.via, from_file) {
            (Some(ViaList(v)), _) => v.clone(),
            (None, Some(p)) => p.vias().map_err(|e| usage!("baseline: {e}"))?,
            (None, None) => match self.compare {
                Some(LockPair(Reference::Via(a), _)) => vec![a.ours(), a],
                _ => vec![Via::Chan],
            },
        };
        let (default_n, default_r) = if self.metric == Metric::Instructions {
            let judged = self.against.is_some() || self.baseline.is_some();
            (
                instructions::DEFAULT_PER_SENDER,
                if judged {
                    instructions::DEFAULT_REPS_JUDGED
                } else {
                    instructions::DEFAULT_REPS
                },
            )
        } else {
            (DEFAULT_PER_SENDER, DEFAULT_REPS)
        };
        let size = self
            .size
            .or(from_file.map(|p| p.size))
            .unwrap_or(DEFAULT_SIZE);
        let plan = Plan {
            backends,
            reference,
            vias,
            size: usize::try_from(size).map_err(|_| usage!("-S {size} is too large"))?,
            nbuf: (self.nbuf.clone().or(file_nbuf)).unwrap_or(Grid::one(DEFAULT_NBUF)),
            senders: (self.senders.clone().or(file_senders)).unwrap_or(Grid::one(DEFAULT_SENDERS)),
            per_sender: self
                .per_sender
                .or(from_file.map(|p| p.per_sender))
                .unwrap_or(default_n),
            reps: self
                .reps
                .or(from_file.map(|p| p.reps as u64))
                .unwrap_or(default_r) as usize,
            global_lock: self.global_lock || from_file.is_some_and(|p| p.global_lock),
            pin: self.pin.or(from_file.and_then(|p| p.placement())),
            fault: self.inject_fault,
            reference_via: match (self.reference.or(self.compare.map(|c| c.0)), from_file) {
                (Some(Reference::Via(v)), _) => Some(v),
                (None, Some(p)) => p.reference.parse().ok().filter(|v: &Via| !v.takes_lock()),
                _ => None,
            },
        };
        check_transports(&plan, self.compare.is_some())?;
        check_lock_flags(
            &plan,
            (
                self.lock.is_some(),
                matches!(self.reference, Some(Reference::Lock(_))),
                self.global_lock,
            ),
        )?;
        if self.calibrate && plan.vias != [Via::Chan] {
            return Err(usage!(
                "--calibrate measures the lock over chan: leave out --via"
            ));
        }
        if self.calibrate && !cfg!(feature = "test-aids") {
            return Err(usage!(
                "--calibrate injects hold_ns, a test aid: build chantest with --features test-aids"
            ));
        }
        Ok(plan)
    }

    /// The lock backends and the index of the reference among them.
    fn lanes(&self, from_file: Option<&Params>) -> Result<(Vec<Backend>, usize), Error> {
        if let Some(LockPair(a, b)) = self.compare {
            return Ok(match a {
                Reference::Lock(a) => (vec![a, b], 0),
                Reference::Via(_) => (vec![b], 0),
            });
        }
        let backends = match (&self.lock, from_file) {
            (Some(LockList(l)), _) => l.clone(),
            (None, Some(p)) => p
                .locks
                .iter()
                .map(|l| l.parse())
                .collect::<Result<_, _>>()
                .map_err(|e| usage!("baseline: {e}"))?,
            // Calibration injects its slowdown into the adaptive lock.
            (None, None) if self.calibrate => vec![Backend::DEFAULT],
            (None, None) => crate::lanes::defaults(),
        };
        let reference = match (self.reference, from_file) {
            (Some(Reference::Lock(r)), _) => find(&backends, &r)?,
            (Some(Reference::Via(_)), _) => 0,
            (None, Some(p)) => backends
                .iter()
                .position(|b| b.to_string() == p.reference)
                .unwrap_or(0),
            (None, None) => 0,
        };
        Ok((backends, reference))
    }

    /// `--metric instructions`: what to count, and what to judge the counts against.
    fn counting(self, plan: Plan, counts: Option<Counts>) -> Result<Setup, Error> {
        if plan.per_sender < 2 {
            return Err(usage!(
                "--metric instructions counts a run of N/2 and one of N values per sender: \
                 -N must be at least 2, not {}",
                plan.per_sender
            ));
        }
        instructions::check(&plan)?;
        let old = match (counts, self.baseline, self.against) {
            (Some(c), Some(path), _) => {
                instructions::check_cells(&plan, &c, &path)?;
                Some(instructions::Old::File(Box::new(c), path))
            }
            (_, _, Some(exe)) => Some(instructions::Old::Build(exe)),
            _ => None,
        };
        Ok(Setup {
            plan,
            mode: Mode::Instructions {
                old,
                budget: self.budget,
            },
            format: self.format,
            per_process: false,
            threshold: self.threshold.unwrap_or(instructions::DEFAULT_THRESHOLD),
            budget: None,
            save: self.save.map(|p| Output::open(p, "--save")).transpose()?,
            plot: None,
        })
    }
}

/// The `--against` build must be a file we may run: said before this build's side runs
/// (under callgrind, that is minutes).
fn check_runnable(exe: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    // A bare name is looked up on PATH when it runs, as a shell would.
    if exe.components().count() == 1 && !exe.as_os_str().is_empty() && !exe.exists() {
        return Ok(());
    }
    let shown = exe.display();
    let meta = std::fs::metadata(exe).map_err(|e| usage!("--against: cannot run {shown}: {e}"))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(usage!(
            "--against: cannot run {shown}: not an executable file"
        ));
    }
    Ok(())
}

/// What `--format plain` does not go with: the bare totals show no verdict and no rate, and
/// `--plain` says the same through clap.
fn check_plain(a: &Args) -> Result<(), Error> {
    if a.format != Format::Plain || a.plain {
        return Ok(());
    }
    let other = [
        (a.baseline.is_some(), "--baseline"),
        (a.compare.is_some(), "--compare"),
        (a.against.is_some(), "--against"),
        (a.calibrate, "--calibrate"),
        (a.per_process, "--per-process"),
    ];
    match other.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(usage!(
            "--format plain prints bare totals and does not go with {flag} (use table, csv, json \
             or markdown)"
        )),
        None => Ok(()),
    }
}

/// What `--metric instructions` does not go with.
fn check_counting(a: &Args) -> Result<(), Error> {
    if a.metric != Metric::Instructions {
        return Ok(());
    }
    let other = [
        (a.compare.is_some(), "--compare"),
        (a.calibrate, "--calibrate"),
        (a.plain, "--plain"),
        (a.plot.is_some(), "--plot"),
        (
            a.budget.is_some() && a.against.is_none(),
            "--budget without --against (counts need no repetitions to decide; with --against \
             it bounds how long the other build may take to answer)",
        ),
        (
            a.pin.is_some(),
            "--pin (every run is pinned to one CPU already)",
        ),
        (a.inject_fault, "--inject-fault"),
        (a.format == Format::Csv, "--format csv (use table or json)"),
        (
            a.format == Format::Plain,
            "--format plain (use table or json)",
        ),
    ];
    match other.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(usage!("--metric instructions does not go with {flag}")),
        None => Ok(()),
    }
}

/// The index of `r` in `backends`: an exact match, or else the only one of that name.
fn find(backends: &[Backend], r: &Backend) -> Result<usize, Error> {
    if let Some(i) = backends.iter().position(|b| b == r) {
        return Ok(i);
    }
    let mut same_name = backends
        .iter()
        .enumerate()
        .filter(|(_, b)| b.name() == r.name());
    match (same_name.next(), same_name.next()) {
        (Some((i, _)), None) if r.to_string() == r.name() => Ok(i),
        _ => {
            let listed: Vec<String> = backends.iter().map(Backend::to_string).collect();
            Err(usage!(
                "--ref {r} is not among the backends ({})",
                listed.join(", ")
            ))
        }
    }
}

/// What some transports cannot do, said before anything runs.
fn check_transports(plan: &Plan, compare: bool) -> Result<(), Error> {
    let has = |v| plan.vias.contains(&v);
    if has(Via::Signal) {
        if let Some(m) = plan.senders.values().iter().find(|&&m| m != 1) {
            return Err(usage!(
                "--via signal ping-pongs between two processes: it takes -M 1, not -M {m}"
            ));
        }
        if plan.size != TAG {
            return Err(usage!(
                "--via signal carries one 8-byte value per signal: it takes -S 8, not -S {}",
                plan.size
            ));
        }
    }
    if has(Via::Shm) {
        for &o in plan.nbuf.values() {
            shm::check_ring(o, plan.size as u64).map_err(Error::Usage)?;
        }
    }
    if let Some(v) = plan.reference_via.filter(|&v| !has(v)) {
        return Err(usage!(
            "{v} (--ref, or --compare's A) is not among the transports of --via"
        ));
    }
    if let Some(v) = plan.vias.iter().find(|v| matches!(v, Via::Peer(_))) {
        if plan.size != TAG {
            return Err(usage!(
                "--via {v} carries 8-byte values: it takes -S 8, not -S {}",
                plan.size
            ));
        }
    }
    let locked = plan.vias.iter().filter(|v| v.takes_lock()).count();
    if compare && locked != 1 {
        return Err(usage!(
            "--compare compares lock backends over one transport (or one with a transport that \
             takes no lock): --via must include exactly one of chan, task and task-mt, not {locked}"
        ));
    }
    Ok(())
}

/// Flags that apply only to the transports that take a lock (chan, task, task-mt), refused
/// when `--via` has none, rather than silently ignored (once, `--via kanal --ref sem`
/// printed "ratio to kanal").
fn check_lock_flags(
    plan: &Plan,
    (lock, lock_ref, global_lock): (bool, bool, bool),
) -> Result<(), Error> {
    if plan.vias.iter().any(|v| v.takes_lock()) {
        return Ok(());
    }
    let vias: Vec<&str> = plan.vias.iter().map(|v| v.name()).collect();
    let vias = vias.join(",");
    let flag = if lock {
        "--lock"
    } else if lock_ref {
        "--ref with a lock backend"
    } else if global_lock {
        "--global-lock"
    } else {
        return Ok(());
    };
    Err(usage!(
        "{flag} applies to the transports that take one of our locks (chan, task, task-mt), \
         and --via {vias} has none: add chan to --via, or leave {} out",
        flag.split(' ').next().unwrap_or(flag)
    ))
}

/// Every cell the plan will run must be in the baseline.
fn check_cells(plan: &Plan, old: &Results, path: &Path) -> Result<(), Error> {
    for key in plan.keys() {
        if old.cell(&key).is_none() {
            return Err(usage!(
                "baseline {} has no cell {key}; leave out -O/-M/-N/-S/--via/--lock/--global-lock \
                 to re-run its own cells",
                path.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PeerChan;
    use clap::CommandFactory;

    #[test]
    fn clap_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn help_states_the_defaults() {
        let help = Args::command().render_long_help().to_string();
        for default in [
            DEFAULT_NBUF,
            DEFAULT_SENDERS,
            DEFAULT_PER_SENDER,
            DEFAULT_REPS,
        ] {
            assert!(help.contains(&format!("[default: {default}]")), "{default}");
        }
        assert!(help.contains(&format!("[default: {DEFAULT_THRESHOLD};")));
        assert!(help.contains("Examples:") && !help.contains("inject"));
    }

    fn args(line: &str) -> Result<Args, String> {
        Args::try_parse_from(line.split_whitespace())
            .map_err(|e| one_line(&e.to_string(), "--help"))
    }

    #[test]
    fn flags_parse() {
        let a = args("chantest -O 0,1,10 -M 1..3 -N 1000 -R 2 --lock sem,adaptive --ref adaptive")
            .unwrap();
        assert_eq!(a.nbuf.unwrap().values(), [0, 1, 10]);
        assert_eq!(a.senders.unwrap().values(), [1, 2, 3]);
        assert_eq!((a.per_sender, a.reps), (Some(1000), Some(2)));
        let s = args("chantest --lock sem,adaptive --ref adaptive")
            .unwrap()
            .setup()
            .unwrap();
        assert_eq!(s.plan.reference, 1);
        assert_eq!(s.plan.nbuf.values(), [DEFAULT_NBUF]);
        assert_eq!(s.plan.backends.len(), 2);
        let s = args("chantest").unwrap().setup().unwrap();
        assert_eq!(s.plan.backends, Backend::ALL);
        assert_eq!(
            (s.plan.per_sender, s.plan.reps),
            (DEFAULT_PER_SENDER, DEFAULT_REPS as usize)
        );
    }

    #[test]
    fn bad_flags_are_one_line() {
        for (line, want) in [
            ("chantest -O abc", "`abc` is not a number"),
            ("chantest -O -1", "negative"),
            ("chantest -M 0", "out of range"),
            ("chantest -N 0", "out of range"),
            ("chantest -R 0", "out of range"),
            ("chantest -M 8..1", "empty"),
            ("chantest --lock mcs", "unknown lock backend"),
            ("chantest --lock spin,spin", "listed twice"),
            ("chantest --lock adaptive:bogus=1", "bogus"),
            (
                "chantest --lock adaptive:spin_ns=1:spin_ns=2",
                "`spin_ns` is given twice",
            ),
            ("chantest --compare spin", "two backends"),
            ("chantest --lock all,spin", "cannot be listed with others"),
            ("chantest --lock spin,all", "give `all` alone"),
            ("chantest --compare all,spin", "two backends, e.g."),
            ("chantest --compare all", "`all` is not two"),
            ("chantest --ref all", "`all` is every backend"),
            ("chantest --budget -5s", "`-5s` is negative"),
            ("chantest --budget -5s --against x", "--budget <DURATION>"),
            ("chantest --threshold -1", "fraction"),
            ("chantest --via tcp", "unknown transport `tcp`"),
            ("chantest --via pipe,pipe", "listed twice"),
            ("chantest -S 0", "at least its 8-byte value"),
            ("chantest -S 12", "at least 16"),
            ("chantest -S 4x", "not a size"),
            ("chantest -S 1G", "out of range"),
            ("chantest --plain --format csv", "cannot be used with"),
            ("chantest --plain --format plain", "cannot be used with"),
            (
                "chantest --compare spin,sem --lock sem",
                "cannot be used with",
            ),
            ("chantest -X", "unexpected argument"),
        ] {
            let e = args(line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: {e}");
        }
    }

    /// Clap refuses each flag of [`NEEDS`] alone, so that what `parse` says of it is said.
    #[test]
    fn needs_names_what_clap_requires() {
        for (flag, _) in NEEDS {
            let value = if *flag == "--runs" { "1,1" } else { "5" };
            let e = Args::try_parse_from(["chantest", flag, value]).unwrap_err();
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::MissingRequiredArgument,
                "{flag}: {e}"
            );
            let given = [format!("{flag}=5s")];
            assert_eq!(needs(&given).map(|n| n.0), Some(*flag));
        }
        assert_eq!(needs(&["--budgets".to_string()]), None);
    }

    /// The modes are one of a kind, whichever two are given.
    #[test]
    fn modes_exclude_each_other() {
        let modes = [
            "--against /bin/true",
            "--baseline x.json",
            "--compare spin,sem",
            "--calibrate",
        ];
        for (i, a) in modes.iter().enumerate() {
            for b in &modes[i + 1..] {
                let e = args(&format!("chantest {a} {b}")).unwrap_err();
                assert!(e.contains("cannot be used with"), "{a} {b}: {e}");
            }
        }
    }

    #[test]
    fn sizes_and_transports() {
        for (text, bytes) in [
            ("8", 8),
            ("16", 16),
            ("4k", 4096),
            ("8K", 8192),
            ("1M", 1 << 20),
        ] {
            assert_eq!(size(text), Ok(bytes), "{text}");
        }
        let s = args("chantest --via chan,task,task-mt -S 4k --lock sem,spin")
            .unwrap()
            .setup()
            .unwrap();
        assert_eq!(s.plan.vias, [Via::Chan, Via::Task, Via::TaskMt]);
        assert_eq!((s.plan.lanes().len(), s.plan.size), (6, 4096));
        let a = args("chantest --via shm,chan -S 4k").unwrap();
        assert_eq!(a.via.unwrap().0, [Via::Shm, Via::Chan]);
        assert_eq!(a.size, Some(4096));
        let s = args("chantest").unwrap().setup().unwrap();
        assert_eq!((s.plan.vias.as_slice(), s.plan.size), (&[Via::Chan][..], 8));
        // --compare with a peer sets ours beside it on the same runtime, unless --via says.
        for (line, want) in [
            (
                "chantest --compare kanal,sem",
                [Via::Chan, Via::Peer(PeerChan::Kanal)],
            ),
            (
                "chantest --compare kanal-async,sem",
                [Via::Task, Via::Peer(PeerChan::KanalAsync)],
            ),
            (
                "chantest --compare tokio-mt,sem",
                [Via::TaskMt, Via::Peer(PeerChan::TokioMt)],
            ),
            (
                "chantest --compare kanal-async,sem --via task-mt,kanal-async",
                [Via::TaskMt, Via::Peer(PeerChan::KanalAsync)],
            ),
        ] {
            let s = args(line).unwrap().setup().unwrap();
            assert_eq!(s.plan.vias, want, "{line}");
        }
        let s = args("chantest --compare spin,sem --per-process")
            .unwrap()
            .setup()
            .unwrap();
        assert!(s.per_process && matches!(s.mode, Mode::Compare));
        for (line, want) in [
            ("chantest --via signal -M 1,2", "takes -M 1, not -M 2"),
            ("chantest --via chan,signal -S 16", "takes -S 8"),
            ("chantest --via shm -O 1000 -S 16M", "lower -O or -S"),
            (
                "chantest --via pipe --compare spin,sem",
                "exactly one of chan, task and task-mt, not 0",
            ),
            (
                "chantest --via task,task-mt --compare spin,sem",
                "exactly one of chan, task and task-mt, not 2",
            ),
            ("chantest --via task --calibrate", "leave out --via"),
            (
                "chantest --via kanal --ref sem",
                "--ref with a lock backend applies to",
            ),
            (
                "chantest --global-lock --via kanal",
                "--global-lock applies to",
            ),
            ("chantest --via std --lock sem", "--lock applies to"),
            (
                "chantest --via pipe,unix --lock sem",
                "--via pipe,unix has none",
            ),
        ] {
            let e = args(line).unwrap().setup().unwrap_err();
            assert!(e.to_string().contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn durations_and_run_counts() {
        use std::time::Duration;
        for (text, want) in [
            ("60s", Duration::from_secs(60)),
            ("60", Duration::from_secs(60)),
            ("2m", Duration::from_secs(120)),
            ("500ms", Duration::from_millis(500)),
            ("1.5s", Duration::from_millis(1500)),
            ("1h", Duration::from_secs(3600)),
        ] {
            assert_eq!(duration(text), Ok(want), "{text}");
        }
        for bad in ["", "s", "-1s", "0", "10x", "1e9s", "nan"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(run_counts("40,20"), Ok(RunCounts(40, 20)));
        assert_eq!(run_counts("0,5"), Ok(RunCounts(0, 5)));
        for bad in ["40", "0,0", "a,b", "1,2,3"] {
            assert!(run_counts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ref_must_be_listed() {
        let e = args("chantest --lock spin,sem --ref adaptive")
            .unwrap()
            .setup()
            .unwrap_err();
        assert!(e.to_string().contains("--ref adaptive is not among"), "{e}");
        let s = args("chantest --lock spin,adaptive:spin_ns=0 --ref adaptive")
            .unwrap()
            .setup();
        assert_eq!(
            s.unwrap().plan.reference,
            1,
            "a bare name picks the only one of that name"
        );
    }
}
