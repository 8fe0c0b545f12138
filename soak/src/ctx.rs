//! What a round's workers share and hand back: the round's [`Ctx`], each worker's
//! [`Counts`], the round's [`Outcome`], and the shapes of an alt's arms. The orchestrator
//! ([`super::round`]) and the workers ([`super::worker`], [`super::task`]) both take them
//! from here, so that no worker reaches up to the orchestrator.

use super::book::{self, Book};
use super::ledger::Tally;
use super::plan::{Plan, Role};
use super::value::Val;
use super::watchdog::{self, thread_name, Watchdog};
use chan::Chan;
use locks::Strategy;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the threads and tasks of a round share.
pub(super) struct Ctx<S: Strategy> {
    /// The round's plan.
    pub plan: Plan,
    /// The round's channels (the main thread's handles; workers clone their own).
    pub chans: Vec<Chan<Val<S>, S>>,
    /// When senders stop.
    pub deadline: Instant,
    /// The round's book.
    pub book: Arc<Book>,
    /// The run's watchdog, where each worker takes a slot.
    pub watchdog: Arc<Watchdog>,
    taken: AtomicU64,
    senders_left: AtomicUsize,
    workers_left: AtomicUsize,
}

impl<S: Strategy> Ctx<S> {
    /// The context of round `plan` over `chans`, its senders stopping at `deadline`.
    pub(super) fn new(
        plan: &Plan,
        chans: Vec<Chan<Val<S>, S>>,
        deadline: Instant,
        book: Arc<Book>,
        watchdog: Arc<Watchdog>,
    ) -> Self {
        Ctx {
            plan: plan.clone(),
            chans,
            deadline,
            book,
            watchdog,
            taken: AtomicU64::new(0),
            senders_left: AtomicUsize::new(plan.sending_threads()),
            workers_left: AtomicUsize::new(plan.roles.len()),
        }
    }

    /// Takes up to `n` values of the round's quota; how many were granted.
    pub(super) fn take_quota(&self, n: u64) -> u64 {
        let before = self.taken.fetch_add(n, Relaxed);
        n.min(self.plan.quota.saturating_sub(before))
    }

    /// How much of the quota has been taken.
    pub(super) fn taken(&self) -> u64 {
        self.taken.load(Relaxed)
    }

    /// How many sending workers have not left yet.
    pub(super) fn senders_left(&self) -> usize {
        self.senders_left.load(Relaxed)
    }

    /// How many workers have not left yet.
    pub(super) fn workers_left(&self) -> usize {
        self.workers_left.load(Relaxed)
    }
}

/// Counts a worker (thread or task) out, however it leaves. One that panics closes every
/// channel first, so that no thread waits forever for it: the round then ends and reports the
/// panic.
pub(super) struct Leaving<'a, S: Strategy> {
    ctx: &'a Ctx<S>,
    index: usize,
}

impl<'a, S: Strategy> Leaving<'a, S> {
    /// Worker `index`'s, to be dropped when it leaves.
    pub(super) fn new(ctx: &'a Ctx<S>, index: usize) -> Self {
        Leaving { ctx, index }
    }
}

impl<S: Strategy> Drop for Leaving<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.ctx.book.fail(format!(
                "thread `{}` panicked (message above) during {}",
                thread_name(),
                watchdog::current()
            ));
            for c in &self.ctx.chans {
                c.close();
            }
        }
        if matches!(self.ctx.plan.roles[self.index], Role::Sender | Role::Mixed) {
            self.ctx.senders_left.fetch_sub(1, Relaxed);
        }
        self.ctx.workers_left.fetch_sub(1, Relaxed);
    }
}

/// What a worker counted, handed back when it finishes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    /// Timed operations that timed out.
    pub timeouts: u64,
    /// Alts waited on (builder and macro).
    pub alts: u64,
    /// A task's async operations (`send_async`, `recv_async`, `wait_async`, `alt!(async; ..)`).
    pub async_ops: u64,
    /// Send futures dropped while pending that had not sent: their values dropped with them.
    pub cancelled_unsent: u64,
    /// Send futures dropped while pending that had sent all the same.
    pub cancelled_sent: u64,
    /// Receive futures dropped while pending.
    pub cancelled_recvs: u64,
    /// Pending receive futures leaked (`mem::forget`) rather than dropped.
    pub leaked_recvs: u64,
    /// Async alts dropped while pending.
    pub cancelled_alts: u64,
    /// Of those, alts whose send arm had fired all the same.
    pub cancelled_alt_sends: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.timeouts += o.timeouts;
        self.alts += o.alts;
        self.async_ops += o.async_ops;
        self.cancelled_unsent += o.cancelled_unsent;
        self.cancelled_sent += o.cancelled_sent;
        self.cancelled_recvs += o.cancelled_recvs;
        self.leaked_recvs += o.leaked_recvs;
        self.cancelled_alts += o.cancelled_alts;
        self.cancelled_alt_sends += o.cancelled_alt_sends;
    }
}

/// What a round came to.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// From the first thread's start to the last value's drop.
    pub elapsed: Duration,
    /// The ledger's count of the round's values.
    pub tally: Tally,
    /// The workers' counts.
    pub counts: Counts,
    /// Closes that closed an open channel.
    pub closes: u64,
    /// Of those, the ones made while values were still being sent.
    pub mid_run_closes: u64,
    /// Drops that panicked on purpose, caught.
    pub panicking_drops: u64,
    /// Drops that re-entered a channel.
    pub reentrant_drops: u64,
    /// Values the linearizability probe checked.
    pub probe_values: u64,
    /// Values that arrived after a later value of their sender, given back by a dropped
    /// receive future (see [`Book::late_arrivals`]).
    pub late: u64,
    /// What hostile wakers did.
    pub wakers: book::Tally,
    /// The first few failed checks, and how many there were in all.
    pub failures: (Vec<String>, usize),
}

/// Which arms a worker may add to an alt.
#[derive(Clone, Copy, Debug)]
pub(super) enum Side {
    /// Send arms only.
    Send,
    /// Receive arms, the first on `home` (so that waiting is safe).
    Recv {
        /// The receiver's home channel.
        home: usize,
    },
    /// Both.
    Mixed,
}

/// An arm of an alt, as drawn.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arm {
    /// A send arm (else a receive arm).
    pub send: bool,
    /// Its channel.
    pub chan: usize,
    /// A send arm's lane.
    pub lane: usize,
    /// The value the slot held going in.
    pub id: Option<u32>,
}

/// An alt's arms as drawn, their slots, and whether waiting on them without a bound is safe.
pub(super) type Drawn<S> = (Vec<Arm>, Vec<Option<Val<S>>>, bool);

/// The watchdog's description of an alt's arms.
pub(super) fn arms_of(arms: &[Arm]) -> impl Iterator<Item = (bool, usize)> + '_ {
    arms.iter().map(|a| (a.send, a.chan))
}

/// How the wait on an alt ended, for `Worker::settle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// It returned what fired, if anything.
    Returned,
    /// An async alt's future was dropped while pending: one send arm may have fired
    /// unreported (its value gone, sent); a receive arm that fired gave its value back.
    Cancelled,
    /// The wait unwound from a hostile waker's panic, which a partner's wake raised after the
    /// alt fired: at most one arm fired, unreported (a send arm's value gone, sent; a receive
    /// arm's value in its slot, or `received` of them dropped while the alt unwound: the
    /// library moves the value into the slot only after the wake).
    Unwound {
        /// Values received and dropped while the alt unwound.
        received: u32,
    },
}
