//! A round's book: everything the round counts and checks, in one place that every worker,
//! value and hostile waker of the round is handed.
//!
//! A value holds an `Arc` of its round's book, because its drop records itself there from
//! wherever it happens: in a receiver, inside the channel library, during unwinding. So
//! each round starts with a fresh book, and nothing is left to reset by hand.

use super::failure::Failures;
use super::ledger::Ledger;
use super::plan::MAX_CHANS;
use super::settings::Settings;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What a round has counted so far.
pub(super) struct Book {
    /// Every value's story. Its storage is the run's, lent to each round in turn: a value held
    /// for good by a leaked future keeps its round's book alive, and that must stay small.
    pub ledger: Arc<Ledger>,
    /// The broken checks.
    pub failures: Failures,
    /// The run's settings.
    pub settings: Settings,
    /// Whether the round has tasks that drop receive futures, which may give a value back to
    /// its channel after a later value of its sender has been received (so late values are
    /// counted, not failed: see [`late`](Self::late)).
    pub give_backs_possible: bool,
    /// What hostile wakers did.
    pub wakers: Wakers,
    /// Per channel: receive futures (and async alts with a receive arm there) dropped while
    /// pending, each of which may have given one value back.
    give_backs: [AtomicU64; MAX_CHANS],
    /// Per channel: receive futures leaked (`mem::forget`) while waiting there, each of which
    /// may hold one value for ever.
    leaks: [AtomicU64; MAX_CHANS],
    /// Per channel: values that arrived after a later value of their lane.
    late: [AtomicU64; MAX_CHANS],
    panicking_drops: AtomicU64,
    reentrant_drops: AtomicU64,
    /// Set while the main thread destroys the round's channels (every other thread is done).
    tearing_down: AtomicBool,
    /// Closes made so far, to run one in four from a drop on an unwinding thread. It starts
    /// where the round's seed says, so that rounds with fewer than four closes get theirs too.
    closes: AtomicU64,
}

impl Book {
    /// A fresh book for the round of `seed`, over `ledger` (reset here: no value of an earlier
    /// round may be alive but those leaked for good).
    pub(super) fn new(
        seed: u64,
        ledger: Arc<Ledger>,
        settings: Settings,
        give_backs_possible: bool,
    ) -> Self {
        ledger.reset();
        Book {
            ledger,
            failures: Failures::default(),
            settings,
            give_backs_possible,
            wakers: Wakers::default(),
            give_backs: Default::default(),
            leaks: Default::default(),
            late: Default::default(),
            panicking_drops: AtomicU64::new(0),
            reentrant_drops: AtomicU64::new(0),
            tearing_down: AtomicBool::new(false),
            closes: AtomicU64::new(seed % 4),
        }
    }

    /// Records a broken check.
    pub(super) fn fail(&self, message: String) {
        self.failures.fail(message);
    }

    /// Whether any check has failed.
    pub(super) fn failed(&self) -> bool {
        self.failures.failed()
    }

    /// A receive future (or async alt with a receive arm) on channel `c` is about to be dropped
    /// while pending: it may give a value back.
    pub(super) fn may_have_given_back(&self, c: usize) {
        self.give_backs[c].fetch_add(1, Relaxed);
    }

    /// Receive futures dropped pending on channel `c` so far.
    pub(super) fn give_backs(&self, c: usize) -> u64 {
        self.give_backs[c].load(Relaxed)
    }

    /// A receive future waiting on channel `c` was leaked: it may hold a value for ever.
    pub(super) fn leaked_receive(&self, c: usize) {
        self.leaks[c].fetch_add(1, Relaxed);
    }

    /// Per channel: receive futures leaked this round.
    pub(super) fn leaks(&self) -> [u64; MAX_CHANS] {
        std::array::from_fn(|c| self.leaks[c].load(Relaxed))
    }

    /// A value arrived on channel `c` after a later value of its sender.
    pub(super) fn late(&self, c: usize) {
        self.late[c].fetch_add(1, Relaxed);
    }

    /// Per channel: values that arrived after a later value of their sender, and dropped
    /// receive futures that may have given one back.
    pub(super) fn late_arrivals(&self) -> [(u64, u64); MAX_CHANS] {
        std::array::from_fn(|c| (self.late[c].load(Relaxed), self.give_backs(c)))
    }

    /// A value's drop panicked on purpose, and was caught.
    pub(super) fn panicking_drop(&self) {
        self.panicking_drops.fetch_add(1, Relaxed);
    }

    /// A value's drop re-entered a channel.
    pub(super) fn reentrant_drop(&self) {
        self.reentrant_drops.fetch_add(1, Relaxed);
    }

    /// Panicking drops caught and re-entrant drops run.
    pub(super) fn drop_counts(&self) -> (u64, u64) {
        (
            self.panicking_drops.load(Relaxed),
            self.reentrant_drops.load(Relaxed),
        )
    }

    /// Marks the start and end of the round's teardown.
    pub(super) fn set_tearing_down(&self, on: bool) {
        self.tearing_down.store(on, Relaxed);
    }

    /// Whether the round's channels are being destroyed.
    pub(super) fn tearing_down(&self) -> bool {
        self.tearing_down.load(Relaxed)
    }

    /// Counts a close; whether it is the fourth of four.
    pub(super) fn fourth_close(&self) -> bool {
        self.closes.fetch_add(1, Relaxed) % 4 == 3
    }

    /// For a stuck round: what hostile wakers had done in it so far, if anything.
    pub(super) fn stuck_note(&self) -> Option<String> {
        let w = &self.wakers;
        let (raised, closes) = (w.raised.load(Relaxed), w.closes_unwound.load(Relaxed));
        (raised > 0).then(|| {
            format!(
                "in this round {raised} hostile waker panics so far, {closes} of them out of \
                 close() (a close that stops at a panicking waker leaves the waiters behind it \
                 asleep)"
            )
        })
    }
}

/// What hostile wakers did in a round, counted as it happens: [`Tally`]'s fields, which say
/// what each counts.
#[derive(Debug, Default)]
pub(super) struct Wakers {
    pub panicking: AtomicU64,
    pub reentrant: AtomicU64,
    pub raised: AtomicU64,
    pub caught: [AtomicU64; 4],
    pub spared: AtomicU64,
    pub reentries: AtomicU64,
    pub unwound_received: [AtomicU64; 2],
    pub unwound_unsent: AtomicU64,
    pub closes_unwound: AtomicU64,
    pub closes_while_unwinding: AtomicU64,
    pub while_unwinding: AtomicU64,
}

impl Wakers {
    /// The counts so far.
    pub(super) fn tally(&self) -> Tally {
        let get = |a: &AtomicU64| a.load(Relaxed);
        Tally {
            panicking: get(&self.panicking),
            reentrant: get(&self.reentrant),
            raised: get(&self.raised),
            caught: std::array::from_fn(|i| get(&self.caught[i])),
            spared: get(&self.spared),
            reentries: get(&self.reentries),
            unwound_received: std::array::from_fn(|i| get(&self.unwound_received[i])),
            unwound_unsent: get(&self.unwound_unsent),
            closes_unwound: get(&self.closes_unwound),
            closes_while_unwinding: get(&self.closes_while_unwinding),
            while_unwinding: get(&self.while_unwinding),
        }
    }
}

/// What hostile wakers did in a round.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    /// Futures polled with a panicking waker.
    pub panicking: u64,
    /// Futures polled with a re-entrant waker.
    pub reentrant: u64,
    /// Panics raised by wakers.
    pub raised: u64,
    /// Of those, caught by a guarded call (the rest would have ended the round): by sends
    /// (a thread's, or a send future's poll), receives (a thread's, or a receive future's
    /// poll), threads' alts, and the rest (closes, drops of futures).
    pub caught: [u64; 4],
    /// Wakes of a panicking waker where no guard catches: woken, no panic.
    pub spared: u64,
    /// Wakes that re-entered a channel.
    pub reentries: u64,
    /// Values a receive (and an alt) took and then dropped while unwinding from a waker's
    /// panic.
    pub unwound_received: [u64; 2],
    /// Sends that unwound from a waker's panic without sending.
    pub unwound_unsent: u64,
    /// Closes that unwound from a waker's panic.
    pub closes_unwound: u64,
    /// Closes run from a drop while their thread unwound from a panic of its own.
    pub closes_while_unwinding: u64,
    /// Panics raised by wakers on a thread already unwinding, which the library discarded
    /// (not in `raised`: escaping, they would have aborted the process).
    pub while_unwinding: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.panicking += o.panicking;
        self.reentrant += o.reentrant;
        self.raised += o.raised;
        for (a, b) in self.caught.iter_mut().zip(o.caught) {
            *a += b;
        }
        self.spared += o.spared;
        self.reentries += o.reentries;
        self.unwound_received[0] += o.unwound_received[0];
        self.unwound_received[1] += o.unwound_received[1];
        self.unwound_unsent += o.unwound_unsent;
        self.closes_unwound += o.closes_unwound;
        self.closes_while_unwinding += o.closes_while_unwinding;
        self.while_unwinding += o.while_unwinding;
    }
}
