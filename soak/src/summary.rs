//! The report at the end: what ran, per lock configuration, and what happened.

use super::book;
use super::ctx::{Counts, Outcome};
use super::plan::{config, Plan};
use super::rng::CONFIGS;
use std::fmt::Write;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Default)]
struct Row {
    rounds: u64,
    messages: u64,
    busy: Duration,
}

/// Totals over the rounds so far.
pub(super) struct Summary {
    master: u64,
    threads: usize,
    started: Instant,
    rows: [Row; CONFIGS as usize],
    rounds: u64,
    data: u64,
    echoes: u64,
    stale: u64,
    messages: u64,
    returned: u64,
    teardown: u64,
    discarded: u64,
    leaked: u64,
    timeouts: u64,
    alts: u64,
    closes: u64,
    mid_run_closes: u64,
    panicking_drops: u64,
    reentrant_drops: u64,
    probe_values: u64,
    task_rounds: u64,
    multi_thread_rounds: u64,
    task_workers: u64,
    counts: Counts,
    late: u64,
    wakers: book::Tally,
}

impl Summary {
    /// An empty summary of a run with `master` seed and at most `threads` workers a round.
    pub(super) fn new(master: u64, threads: usize) -> Summary {
        Summary {
            master,
            threads,
            started: Instant::now(),
            rows: [Row::default(); CONFIGS as usize],
            rounds: 0,
            data: 0,
            echoes: 0,
            stale: 0,
            messages: 0,
            returned: 0,
            teardown: 0,
            discarded: 0,
            leaked: 0,
            timeouts: 0,
            alts: 0,
            closes: 0,
            mid_run_closes: 0,
            panicking_drops: 0,
            reentrant_drops: 0,
            probe_values: 0,
            task_rounds: 0,
            multi_thread_rounds: 0,
            task_workers: 0,
            counts: Counts::default(),
            late: 0,
            wakers: book::Tally::default(),
        }
    }

    /// Adds a finished round.
    pub(super) fn add(&mut self, plan: &Plan, o: &Outcome) {
        let row = &mut self.rows[(plan.seed % CONFIGS) as usize];
        row.rounds += 1;
        row.messages += o.tally.received;
        row.busy += o.elapsed;
        self.rounds += 1;
        self.data += o.tally.data;
        self.echoes += o.tally.echoes;
        self.stale += o.tally.stale;
        self.messages += o.tally.received;
        self.returned += o.tally.returned;
        self.teardown += o.tally.teardown;
        self.discarded += o.tally.discarded;
        self.leaked += o.tally.leaked;
        self.timeouts += o.counts.timeouts;
        self.alts += o.counts.alts;
        self.closes += o.closes;
        self.mid_run_closes += o.mid_run_closes;
        self.panicking_drops += o.panicking_drops;
        self.reentrant_drops += o.reentrant_drops;
        self.probe_values += o.probe_values;
        if let Some(t) = &plan.tasks {
            self.task_rounds += 1;
            self.multi_thread_rounds += u64::from(t.multi.is_some());
            self.task_workers += t.count() as u64;
        }
        self.counts += o.counts;
        self.late += o.late;
        self.wakers += o.wakers;
    }

    /// The report, ending in `ok` or `FAILED`.
    pub(super) fn render(&self, ok: bool) -> String {
        let wall = self.started.elapsed();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "chansoak: seed {:#x}, {:.1} s, {} rounds, up to {} threads",
            self.master,
            wall.as_secs_f64(),
            self.rounds,
            self.threads
        );
        let _ = writeln!(
            s,
            "{:<32} {:>6} {:>10} {:>10}",
            "lock", "rounds", "messages", "msg/s"
        );
        for (i, row) in self.rows.iter().enumerate() {
            let (backend, global) = config(i as u64);
            let name = match global {
                true => format!("{backend}, global lock"),
                false => backend.to_string(),
            };
            let _ = writeln!(
                s,
                "{name:<32} {:>6} {:>10} {:>10}",
                row.rounds,
                row.messages,
                rate(row.messages, row.busy)
            );
        }
        let _ = writeln!(
            s,
            "{:<32} {:>6} {:>10} {:>10}",
            "total",
            self.rounds,
            self.messages,
            rate(self.messages, wall)
        );
        let _ = writeln!(
            s,
            "values {} sent, {} echoed from drops, {} stale in alt slots; {} returned to senders, \
             {} left in closed channels, {} dropped with receive futures after \"closed and \
             drained\", {} held by {} leaked receive futures",
            self.data,
            self.echoes,
            self.stale,
            self.returned,
            self.teardown,
            self.discarded,
            self.leaked,
            self.counts.leaked_recvs
        );
        let _ = writeln!(
            s,
            "timeouts {}, alts {}, closes {} ({} mid-run), panicking drops {}, re-entrant drops {}, \
             probe values {}",
            self.timeouts,
            self.alts,
            self.closes,
            self.mid_run_closes,
            self.panicking_drops,
            self.reentrant_drops,
            self.probe_values
        );
        let c = &self.counts;
        let _ = writeln!(
            s,
            "tasks {} rounds ({} multi-thread), {} task workers, {} async operations; dropped \
             pending: {} sends ({} of them had sent), {} receives, {} alts ({} had sent); {} \
             values given back arrived after a later one of their sender",
            self.task_rounds,
            self.multi_thread_rounds,
            self.task_workers,
            c.async_ops,
            c.cancelled_unsent + c.cancelled_sent,
            c.cancelled_sent,
            c.cancelled_recvs,
            c.cancelled_alts,
            c.cancelled_alt_sends,
            self.late
        );
        let w = &self.wakers;
        let _ = writeln!(
            s,
            "wakers {} panicking, {} re-entrant; {} panics raised, caught by {} sends, {} receives \
             ({} dropped the value they took), {} alts ({} dropped the value they took), {} other \
             calls ({} closes, the rest drops of futures), {} sends had not sent; {} wakes spared \
             outside a guard; {} re-entries",
            w.panicking,
            w.reentrant,
            w.raised,
            w.caught[0],
            w.caught[1],
            w.unwound_received[0],
            w.caught[2],
            w.unwound_received[1],
            w.caught[3],
            w.closes_unwound,
            w.unwound_unsent,
            w.spared,
            w.reentries
        );
        let _ = writeln!(
            s,
            "{} closes from a drop on an unwinding thread; {} waker panics there, discarded",
            w.closes_while_unwinding, w.while_unwinding
        );
        s.push_str(if ok { "ok\n" } else { "FAILED\n" });
        s
    }
}

fn rate(messages: u64, time: Duration) -> u64 {
    match time.as_secs_f64() {
        t if t > 0.0 => (messages as f64 / t) as u64,
        _ => 0,
    }
}
