//! `chansoak`: the channels under hostile conditions, checked (`cargo run --release -p soak --
//! --for 10m`; it was `chantest soak` before it became a crate of its own).
//!
//! A run is a series of rounds until `--for` is spent (or `--messages`, `--rounds`). Each
//! round's seed derives from the master seed ([`rng::round_seed`]) and decides everything
//! about it ([`plan::Plan`]): the lock backend (every one of [`locks::Backend::ALL`] plus
//! `adaptive:yield_ns=0`), a lock per channel or Plan 9's global lock, 1 to 4 channels of
//! capacity 0, 1, 2, 10 or 100, and 2 to `--threads` workers. Senders ([`send`]) use blocking,
//! non-blocking, timed and alt sends, receivers ([`recv`]) the same for receiving, mixed
//! threads alts of send and receive arms ([`alt`]), with several arms on one channel and
//! stale values in receive slots; the main thread ([`round`]) closes channels mid-run, some
//! of which are then left undrained. Workers drop and re-clone their handles. Values
//! ([`value`]) may panic when dropped (caught where the user drops them) or re-enter a channel
//! (`len`, `nbsend`, `nbrecv`) from their drop. In half the rounds a [`probe`] pair of threads
//! checks that `nbsend` and `nbrecv` agree with what another channel has already shown.
//!
//! In about three rounds in eight (`--tasks always` or `never` overrides the seed), some workers
//! are async tasks ([`task`]) on a tokio runtime, current-thread or multi-thread as the seed
//! says, on the same channels as the thread workers: `send_async`, `recv_async`,
//! `Alt::wait_async` and `alt!(async; ..)`, each awaited, raced against a timer, polled a few
//! times and dropped, or replaced by its non-blocking form. A future dropped while pending
//! must keep the library's promise: a send either happened or its value is dropped with the
//! future, once (recorded as given back); a receive (or alt) already handed a value gives it
//! back to its channel, where it must still be received. Those futures are polled with
//! hostile wakers ([`hostile`], `--hostile-wakers`): some panic in `wake` (caught where the
//! channel call that ran the wake unwinds, and accounted for), some re-enter a channel. A
//! hidden `--inject` plants a fault in the task workers (see [`settings::Fault`]), for the tests
//! to see it caught.
//!
//! Checked: every value is received exactly once, or given back to its sender, or left in a
//! channel closed and destroyed undrained, and nothing else ([`ledger`]); one receiver sees
//! each sender's values on a channel in order; every value is dropped exactly once; alts
//! leave their slots as they report (a dropped async alt: as before, but for one send arm that
//! may have fired); `close`, `len` and `closing` agree; the probe's non-blocking operations
//! are linearizable. Dropped receive futures allow exactly two departures, both counted and
//! bounded by the number of such drops on the channel: a value given back goes to the front
//! of the buffer whatever its capacity (so `len` may exceed it), and arrives after any later
//! value of its sender that another receiver took meanwhile (so that receiver sees the two
//! out of order; see [`value`]'s order check). A [`watchdog`] names the thread or task stuck
//! in an operation. Exit status 3 for any of these, with the round's seed:
//! `chansoak --seed SEED --rounds 1 --threads N` runs that round's workload again,
//! tasks included (the interleaving, of course, is the scheduler's).

mod alt;
mod args;
mod book;
mod ctx;
mod error;
mod failure;
mod guard;
mod hostile;
mod ledger;
mod plan;
mod probe;
mod recv;
mod rng;
mod round;
mod send;
mod settings;
mod summary;
mod task;
mod value;
mod watchdog;
mod worker;

use error::Error;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use summary::Summary;

/// The command's name, in its messages and in the replay line a failure prints.
pub(crate) const NAME: &str = "chansoak";

fn main() -> ExitCode {
    match run(std::env::args_os().skip(1).collect()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            e.exit_code()
        }
    }
}

fn run(args: Vec<OsString>) -> Result<ExitCode, Error> {
    let args = args::parse(args)?;
    let master = args.seed.unwrap_or_else(rng::from_clock);
    value::install_panic_hook();
    let settings = settings::Settings {
        wakers: args.hostile_wakers,
        strict: args.strict_wakers,
        inject: args.inject,
    };
    let summary = Arc::new(Mutex::new(Summary::new(master, args.threads)));
    let watchdog = {
        let summary = Arc::clone(&summary);
        watchdog::start(move |reason, note| {
            let s = summary.lock().unwrap_or_else(|e| e.into_inner());
            print(&s.render(false));
            if let Some(note) = note {
                eprintln!("{NAME}: soak: {note}");
            }
            eprintln!("{NAME}: channel check failed: {reason}");
        })
    };
    let lent = round::Lent {
        settings,
        ledger: Arc::new(ledger::Ledger::new()),
        watchdog,
    };
    let end = Instant::now() + args.duration;
    let mut offered = 0;
    for round in 0.. {
        if Instant::now() >= end || args.rounds.is_some_and(|n| round >= n) {
            break;
        }
        let limit = match args.messages {
            Some(m) if offered >= m => break,
            Some(m) => Some(m - offered),
            None => None,
        };
        let seed = rng::round_seed(master, round);
        let plan = plan::Plan::new(seed, args.threads, limit, args.tasks);
        let mut replay = format!(
            "{NAME} --seed {seed:#x} --rounds 1 --threads {}",
            args.threads
        );
        match args.tasks {
            plan::TaskRounds::Some => {}
            plan::TaskRounds::Always => replay += " --tasks always",
            plan::TaskRounds::Never => replay += " --tasks never",
        }
        replay += &settings.flags();
        if let Some(l) = limit {
            replay += &format!(" --messages {l}");
        }
        let out = round::run(&plan, end, replay.clone(), &lent)?;
        offered += out.tally.data;
        summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(&plan, &out);
        let (failures, count) = &out.failures;
        if *count > 0 {
            eprintln!("{NAME}: soak: round {round} failed, {plan}");
            for f in failures {
                eprintln!("  {f}");
            }
            if *count > failures.len() {
                eprintln!("  ... {} failed checks in all", count);
            }
            eprintln!("  replay: {replay}");
            print(
                &summary
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .render(false),
            );
            let first = failures.first().map_or("", String::as_str);
            return Err(Error::Violation(format!(
                "soak round {round} (seed {seed:#x}, {}{}): {first}",
                plan.backend,
                if plan.global { ", global lock" } else { "" }
            )));
        }
    }
    print(
        &summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .render(true),
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes the report to stdout; a reader that went away (`chansoak | head`) is no error.
fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
