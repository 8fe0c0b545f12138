//! `chansoak` flags.

use super::plan::TaskRounds;
use super::settings::{Fault, Which};
use crate::error::{one_line, usage, Error};
use crate::NAME;
use clap::Parser;
use std::ffi::OsString;
use std::time::Duration;

/// Default `--for`.
pub(super) const DEFAULT_FOR: &str = "10s";
/// Default `--threads`.
pub(super) const DEFAULT_THREADS: usize = 16;
/// The most `--threads`: far more threads than cores already serialise everything.
pub(super) const MAX_THREADS: usize = 64;

const EXAMPLES: &str = "\
Examples:
  chansoak                             about 10 s, every backend, a fresh seed
  chansoak --for 10m                   rounds until ten minutes are spent
  chansoak --seed 0x1f2e --rounds 1    replay the round a failure printed
  chansoak --threads 4 --messages 100000

From a checkout: cargo run --release -p soak -- --for 10m

Each round draws from its seed: a backend (spin, sem, adaptive, adaptive:yield_ns=0) with a
lock per channel or Plan 9's one global lock, 1-4 channels of capacity 0, 1, 2, 10 or 100, and
2 to --threads senders, receivers and mixed alt threads doing blocking, non-blocking, timed and
alt operations, closing channels mid-run, with values whose drop panics or re-enters a
channel. In some rounds some workers are async tasks on a tokio runtime (send_async,
recv_async, wait_async), mixed with threads on the same channels, dropping futures still
pending to cancel them, polling them with wakers that panic (caught where the channel call
that ran the wake unwinds) or re-enter a channel. Checked: every value arrives exactly once or comes back to its sender,
in order per sender and channel, and is dropped exactly once; a watchdog reports a thread or
task stuck for 5 s.

Exit status: 0 ok, 2 usage error, 3 a check failed or a thread was stuck.";

/// The channels under hostile conditions: a seeded random mix of every operation over every
/// lock backend, checking that no value is lost, duplicated, reordered or dropped twice, and
/// that no thread gets stuck.
#[derive(Debug, Parser)]
#[command(name = NAME, after_help = EXAMPLES, max_term_width = 100)]
pub(super) struct Args {
    /// How long to run: rounds start until this is spent, e.g. 500ms, 10s, 10m, 1h
    #[arg(
        long = "for",
        value_name = "DURATION",
        value_parser = duration,
        default_value = DEFAULT_FOR,
        allow_hyphen_values = true
    )]
    pub duration: Duration,

    /// Master seed, decimal or 0x hex; round 0 runs with it, later rounds derive theirs
    /// [default: from the clock]
    #[arg(long, value_name = "N", value_parser = seed, allow_negative_numbers = true)]
    pub seed: Option<u64>,

    /// Most worker threads in a round; each round draws 2 to this many
    #[arg(
        long,
        value_name = "N",
        value_parser = threads,
        default_value_t = DEFAULT_THREADS,
        allow_negative_numbers = true
    )]
    pub threads: usize,

    /// Stop once this many values have been sent or offered, over all rounds
    #[arg(long, value_name = "N", value_parser = positive, allow_negative_numbers = true)]
    pub messages: Option<u64>,

    /// Stop after this many rounds (`--seed S --rounds 1` replays one round)
    #[arg(long, value_name = "N", value_parser = positive, allow_negative_numbers = true)]
    pub rounds: Option<u64>,

    /// Which rounds run some workers as async tasks: some (as each round's seed decides),
    /// always, never
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = TaskRounds::Some)]
    pub tasks: TaskRounds,

    /// Hostile wakers in task rounds: all (panicking and re-entrant), spare-known (all, but
    /// none panics out of close() or a cancelled receive's drop), panic, reenter, none
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = super::settings::DEFAULT)]
    pub hostile_wakers: Which,

    /// A value a receive or an alt took, then dropped while unwinding from a waker's panic,
    /// counts as lost rather than received (for a library that gives it back first)
    #[arg(long, hide = true)]
    pub strict_wakers: bool,

    /// A fault planted in the task workers, to show that the checks catch it (tests only)
    #[arg(long, value_name = "FAULT", value_enum, hide = true)]
    pub inject: Option<Fault>,
}

/// Parses the arguments (without the program's name). Help is printed here and exits 0; any other problem is
/// one `Error::Usage` line.
pub(super) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Args, Error> {
    let argv = std::iter::once(OsString::from(NAME)).chain(args);
    Args::try_parse_from(argv).map_err(|e| match e.kind() {
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => e.exit(),
        _ => usage!(
            "soak: {}",
            one_line(&e.to_string(), &format!("{NAME} --help"))
        ),
    })
}

/// `500ms`, `10s`, `1.5s`, `10m`, `1h`; a bare number is seconds.
fn duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration such as 500ms, 10s, 10m or 1h");
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "`{s}` is negative: give how long to run, such as 500ms, 10s, 10m or 1h"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let seconds = match unit.trim() {
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let n: f64 = number.parse().map_err(|_| bad())?;
    let total = n * seconds;
    // A week is far beyond any soak; the bound keeps `Instant` arithmetic from overflowing.
    if !(total > 0.0 && total <= 7.0 * 24.0 * 3600.0) {
        return Err(format!(
            "`{s}` is out of range (more than 0, at most a week)"
        ));
    }
    Ok(Duration::from_secs_f64(total))
}

fn seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "`{s}` is negative: a seed is a 64-bit number from 0, decimal or 0x hex"
        ));
    }
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a seed (a 64-bit number, decimal or 0x hex)"))
}

fn threads(s: &str) -> Result<usize, String> {
    if s.trim().starts_with('-') {
        return Err(format!("`{s}` is negative: give 2 to {MAX_THREADS}"));
    }
    match s.trim().parse::<usize>() {
        Ok(n) if (2..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(_) => Err(format!(
            "`{s}` is out of range (2 to {MAX_THREADS}: a sender and a receiver at least)"
        )),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn positive(s: &str) -> Result<u64, String> {
    if s.trim().starts_with('-') {
        return Err(format!("`{s}` is negative: give a count from 1"));
    }
    match s.trim().parse::<u64>() {
        Ok(0) => Err(format!("`{s}` is out of range (at least 1)")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Args, String> {
        parse(line.split_whitespace().map(OsString::from)).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_values() {
        let a = args("").unwrap();
        assert_eq!(a.duration, Duration::from_secs(10));
        assert_eq!(
            (a.seed, a.threads, a.messages, a.rounds, a.tasks),
            (None, 16, None, None, TaskRounds::Some)
        );
        let a = args("--for 10m --seed 0x1F --threads 4 --messages 9 --rounds 2 --tasks always")
            .unwrap();
        assert_eq!(a.tasks, TaskRounds::Always);
        assert_eq!(a.hostile_wakers, super::super::settings::DEFAULT);
        assert_eq!(
            args("--hostile-wakers reenter").unwrap().hostile_wakers,
            Which::Reenter
        );
        assert_eq!(a.duration, Duration::from_secs(600));
        assert_eq!(
            (a.seed, a.threads, a.messages, a.rounds),
            (Some(31), 4, Some(9), Some(2))
        );
        for (text, ms) in [
            ("500ms", 500),
            ("1.5s", 1500),
            ("2", 2000),
            ("1h", 3_600_000),
        ] {
            assert_eq!(duration(text).unwrap(), Duration::from_millis(ms), "{text}");
        }
    }

    #[test]
    fn bad_flags_are_one_line() {
        for (line, want) in [
            ("--for 0s", "out of range"),
            ("--for 3x", "not a duration"),
            ("--for s", "not a duration"),
            ("--seed banana", "not a seed"),
            ("--threads 1", "out of range"),
            ("--threads 65", "out of range"),
            ("--messages 0", "out of range"),
            ("--rounds -1", "`-1` is negative"),
            ("--for -1s", "`-1s` is negative"),
            ("--seed -5", "`-5` is negative"),
            ("--bogus", "unexpected argument"),
            ("--tasks sometimes", "invalid value"),
            ("--hostile-wakers maybe", "invalid value"),
        ] {
            let e = args(line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
            assert!(e.starts_with("soak: ") && !e.contains('\n'), "{line}: {e}");
        }
    }
}
