//! chantest with one more lane: the ticket lock of [`ticket`], by the name `ticket`.
//!
//! `own-lock --lock ticket,adaptive,std,parking_lot -O 10 -M 8` runs it beside ours and the
//! peers'; `own-lock --help` lists everything else (`--against`, `--baseline`, `--metric
//! instructions`, ...). Keep `main` this short: chantest starts this binary again for some
//! runs, and each copy must register the same locks before it does anything else.

mod ticket;

fn main() -> std::process::ExitCode {
    chantest::main_with(chantest::Locks::builtin().with::<ticket::TicketLock>())
}
