//! chantest: erik quanstrom's 2013 Plan 9 channel benchmark, per lock strategy, as a library
//! as well as a binary.
//!
//! The `chantest` binary is [`main_with`] given the built-in locks. A lock author's binary is
//! the same call given theirs too, and gets all of chantest for them: sweeps, tasks,
//! transports, `--against` an older build of that same binary, `--baseline`, `--compare`,
//! `--metric instructions`, `--calibrate`, every value checked:
//!
//! ```no_run
//! # use locks::SemLock as TicketLock;
//! // src/main.rs of a crate that depends on chantest and defines `TicketLock: Strategy`.
//! fn main() -> std::process::ExitCode {
//!     chantest::main_with(chantest::Locks::builtin().with::<TicketLock>())
//! }
//! ```
//!
//! `my-bench --lock ticket,adaptive,std,parking_lot -O 10 -M 8` then runs the ticket lock
//! beside ours and the peers' (std's and parking_lot's mutexes), each guarding this
//! project's channel. See `chantest --help`, the manual in the crate's README, and the
//! repository's `examples/own-lock/`, a complete crate to copy.
//!
//! chantest starts itself again for some runs (`--per-process`, `--against`, instruction
//! counts under valgrind, the two-process transports): a binary that calls `main_with` first
//! thing in `main`, with the same [`Locks`], is started the same way and behaves the same.
//!
//! The workload alone, one run on our channel or a peer's timed and checked, is
//! [`workload`]: for a harness of your own, such as the repository's criterion suites.
#![warn(missing_docs)]

// The modules, in the order a run passes through them:
//
// * `cli` (flags, with `grid` for value lists) makes a `plan::Plan`: what to run, typed, its
//   cells named by `records::Key`;
// * `run` runs the plan's cells, taking turns, over the transports of `via` (which owns every
//   transport, `chan` included, the shape of a run and the record layout), read by the clocks
//   in `measure`, optionally pinned by `affinity`, watched by `progress`; it turns what it
//   measured into `records`. Our channel's lock is a lane of `lanes`, code compiled for each
//   strategy when it was registered. `against` runs the same cells as one process per
//   repetition of this build and of another, interleaved, and `calibrate` repeats that to
//   measure false alarms and detection; `isolate` runs a sweep that way, one process per
//   repetition of each cell (`--per-process`);
// * `records` is the data model: what `--save` writes, `--baseline` reads and another build's
//   `--format json` prints to `--against` (the machine described by `machine`);
// * `verdict` judges new against old; `report` and `plot` print records, never touching
//   running code.
//
// What both sides need (which transport, the limits of a run, a run's `model::Sample`, the
// `model::Machine`, the names of the files) is in `model`, which runs nothing: the records,
// verdicts and reports import from it and from each other, never from `via`, `run`, `measure`
// or any other module that runs something.
//
// `workload` is the one door from outside to `via`'s runner: a run's shape in, its time out.
//
// The two-process transports start chantest again as their peer (`chantest --peer …`, see
// `via::peer`), which is recognised here before any flag is parsed. The stress test under
// hostile conditions is `chansoak`, in `soak/`.

mod affinity;
mod against;
mod calibrate;
mod child;
mod cli;
mod error;
mod grid;
mod instructions;
mod isolate;
mod lanes;
mod machine;
mod measure;
mod model;
mod plan;
mod plot;
mod probe;
mod progress;
mod reaper;
mod records;
mod report;
mod rerun;
mod run;
mod slow;
mod verdict;
mod via;
pub mod workload;

use cli::Mode;
use error::Error;
use records::Results;
use std::io::Write;
use std::process::ExitCode;

pub use lanes::Locks;

/// Runs chantest with `locks` as its lanes, on this process's command line, and returns the
/// exit status (0 ok, 1 regressed, 2 usage, 3 a value lost or a transport failed, 4
/// inconclusive: `chantest --help`).
///
/// Call it first thing in `main`, and once: chantest starts this same binary again for some
/// runs, and the copy must register the same locks. A lock that `locks` refused (a name
/// taken) is a usage error here, exit 2.
pub fn main_with(locks: Locks) -> ExitCode {
    if let Some(code) = via::main_if_peer() {
        return code;
    }
    if let Err(e) = lanes::install(locks) {
        eprintln!("chantest: {e}");
        return e.exit_code();
    }
    // Before any thread starts (see the module).
    reaper::install();
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("chantest: {e}");
            e.exit_code()
        }
    }
}

fn run() -> Result<ExitCode, Error> {
    let setup = cli::parse()?.setup()?;
    let results = match &setup.mode {
        Mode::Calibrate { cal, budget } => {
            let text = calibrate::run(&setup.plan, cal, setup.threshold, *budget)?;
            print(&text)?;
            return Ok(ExitCode::SUCCESS);
        }
        Mode::Instructions { old, budget } => {
            let (counts, text) = instructions::run(
                &setup.plan,
                old.as_ref(),
                setup.threshold,
                setup.format,
                *budget,
            )?;
            if let Some(out) = setup.save {
                out.write(&(serde_json::to_string_pretty(&counts).unwrap_or_default() + "\n"))?;
            }
            print(&text)?;
            return Ok(match counts.status() {
                (true, _) => ExitCode::from(error::REGRESSED),
                (false, true) => ExitCode::from(error::INCONCLUSIVE),
                _ => ExitCode::SUCCESS,
            });
        }
        Mode::Against { old, budget } => {
            let (new, old) = (against::Side::this()?, against::Side::other(old));
            against::compare(&setup.plan, &new, &old, setup.threshold, *budget)?.results
        }
        Mode::Baseline(old) => {
            let runs = rerun::Runs::InProcess;
            rerun::sweep(
                &setup.plan,
                setup.budget,
                rerun::Side::Cell,
                runs,
                |r, looks| r.against_baseline(old, setup.threshold, looks),
            )?
        }
        Mode::Compare => {
            let runs = match setup.per_process {
                true => rerun::Runs::PerProcess,
                false => rerun::Runs::InProcess,
            };
            rerun::sweep(
                &setup.plan,
                setup.budget,
                rerun::Side::Point,
                runs,
                |r, looks| r.between_backends(setup.threshold, looks),
            )?
        }
        Mode::Sweep => {
            let measured = if setup.per_process {
                isolate::sweep(&setup.plan)?
            } else {
                run::sweep(&setup.plan)?
            };
            run::records(&setup.plan, measured, machine::describe())
        }
    };

    if let Some(out) = setup.save {
        out.write(&report::json(&results))?;
    }
    if let Some(out) = setup.plot {
        out.write(&plot::svg(&results))?;
    }
    print(&report::render(&results, setup.format, setup.threshold))?;
    Ok(status(&results))
}

/// Writes `text` to stdout.
fn print(text: &str) -> Result<(), Error> {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A reader that went away (`chantest | head`) has what it wanted.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(error::usage!("cannot write to stdout: {e}"));
        }
    }
    Ok(())
}

/// The exit status of a run that finished: 1 if any cell regressed, else 4 if any is
/// inconclusive, else 0.
fn status(results: &Results) -> ExitCode {
    if results.regressed() {
        ExitCode::from(error::REGRESSED)
    } else if results.inconclusive() {
        ExitCode::from(error::INCONCLUSIVE)
    } else {
        ExitCode::SUCCESS
    }
}
