//! A worker thread of a round: its handles, its random stream, and what it sends.
//!
//! Sending keeps, per lane and channel, at most one value in hand (`pending`): a value that
//! timed out, found the channel full or lost an alt is retried before the lane makes its next
//! one for that channel, so per (lane, channel) values are offered in sequence order, and the
//! receivers may check that order. A value given back by a closed channel, or still in hand
//! when the round ends, is abandoned: recorded as returned and dropped on the user's side.

use super::book::Book;
use super::ctx::{Counts, Ctx, Side};
use super::guard::Unwound;
use super::ledger::{Kind, Origin};
use super::plan::{Role, LANES};
use super::rng::Rng;
use super::value::{user_drop, How, Order, Reentry, Val};
use super::watchdog::{Doing, Op, Slot};
use chan::Chan;
use locks::Strategy;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Quota and ids are taken this many at a time, to keep shared counters off the hot path.
const BATCH: u32 = 32;

/// One worker's state.
pub(super) struct Worker<'a, S: Strategy> {
    pub(super) ctx: &'a Ctx<S>,
    pub(super) index: usize,
    /// This thread's own handles (clones), dropped and re-cloned now and then.
    pub(super) chans: Vec<Chan<Val<S>, S>>,
    pub(super) rng: Rng,
    pub(super) slot: Arc<Slot>,
    pub(super) counts: Counts,
    /// The order in which this worker has received each sender's values.
    pub(super) order: Order,
    /// Per lane × channel: the value in hand.
    pending: Vec<Option<Val<S>>>,
    next_seq: Vec<u32>,
    /// Channels this thread has seen closed when sending.
    pub(super) dead: Vec<bool>,
    budget: u64,
    ids: Range<u32>,
    out_of_values: bool,
    ops: u32,
    past_deadline: bool,
    /// A task has planted its `--inject` fault.
    pub(super) fault_planted: bool,
}

impl<'a, S: Strategy> Worker<'a, S> {
    /// Worker `index` of the round `ctx`, with its slot on the watchdog's board.
    pub(super) fn new(ctx: &'a Ctx<S>, index: usize, slot: Arc<Slot>) -> Self {
        let n = ctx.chans.len();
        Worker {
            ctx,
            index,
            chans: ctx.chans.clone(),
            rng: Rng::new(super::rng::mix(ctx.plan.seed, index as u64 + 1)),
            slot,
            counts: Counts::default(),
            order: Order::default(),
            pending: (0..LANES * n).map(|_| None).collect(),
            next_seq: vec![0; LANES * n],
            dead: vec![false; n],
            budget: 0,
            ids: 0..0,
            out_of_values: false,
            ops: 0,
            past_deadline: false,
            fault_planted: false,
        }
    }

    /// The round's book (borrowed from the round, not from the worker, so that a closure
    /// may take the worker while the book is in use).
    pub(super) fn book(&self) -> &'a Book {
        &self.ctx.book
    }

    /// Runs the worker's role to the end.
    pub(super) fn run(&mut self) {
        match self.ctx.plan.roles[self.index] {
            Role::Sender => {
                while !self.sending_done() {
                    self.maybe_reclone();
                    self.send_op();
                }
                self.finish_sending();
            }
            Role::Receiver { home } => self.recv_loop(home),
            Role::Mixed => {
                while !self.sending_done() {
                    self.maybe_reclone();
                    match self.rng.weighted(&self.ctx.plan.mix.mixed) {
                        0 => self.alt_op(Side::Mixed),
                        1 => self.send_op(),
                        _ => self.recv_op(None),
                    }
                }
                self.finish_sending();
            }
        }
        self.slot.begin(Doing::op(Op::Done, None));
    }

    /// A short timeout drawn from the round's range.
    pub(super) fn timeout(&mut self) -> Duration {
        Duration::from_micros(self.rng.below(self.ctx.plan.mix.timeout_us + 1))
    }

    /// Now and then drops a handle and clones a fresh one from the round's.
    pub(super) fn maybe_reclone(&mut self) {
        if self.rng.chance(self.ctx.plan.mix.reclone) {
            let c = self.rng.index(self.chans.len());
            self.slot.begin(Doing::op(Op::Reclone, Some(c)));
            self.chans[c] = self.ctx.chans[c].clone();
        }
    }

    /// Whether this thread should stop sending: the round's time is up, a check failed, it
    /// has nothing left to send, or every channel it sends on is closed.
    pub(super) fn sending_done(&mut self) -> bool {
        self.ops = self.ops.wrapping_add(1);
        // Reading the clock every time would cost more than some operations.
        if self.ops % 16 == 0 && Instant::now() >= self.ctx.deadline {
            self.past_deadline = true;
        }
        self.past_deadline
            || self.book().failed()
            || self.dead.iter().all(|&d| d)
            || (self.out_of_values && self.pending.iter().all(Option::is_none))
    }

    /// Gives up every value in hand.
    pub(super) fn finish_sending(&mut self) {
        for i in 0..self.pending.len() {
            if let Some(v) = self.pending[i].take() {
                self.abandon(v);
            }
        }
    }

    fn lane_id(&self, lane: usize) -> u16 {
        (self.index * LANES + lane) as u16
    }

    /// The value lane `lane` should offer on channel `c` next: the one in hand, or a new
    /// one; `None` when out of quota.
    pub(super) fn take_value(&mut self, lane: usize, c: usize) -> Option<Val<S>> {
        let k = lane * self.chans.len() + c;
        if let Some(v) = self.pending[k].take() {
            return Some(v);
        }
        if self.budget == 0 {
            self.budget = self.ctx.take_quota(u64::from(BATCH));
        }
        if self.ids.is_empty() {
            self.ids = self.book().ledger.reserve(BATCH);
        }
        let (Some(id), true) = (self.ids.next(), self.budget > 0) else {
            self.out_of_values = true;
            return None;
        };
        self.budget -= 1;
        let seq = self.next_seq[k];
        self.next_seq[k] += 1;
        let mix = &self.ctx.plan.mix;
        let abandoned = &self.ctx.plan.abandoned;
        let panics = !abandoned[c] && self.rng.chance(mix.panic);
        // A value that re-enters holds a handle to its target. Left in a channel that is
        // destroyed undrained, it must not hold that channel (or another such), or the
        // handles would keep each other alive and nothing would ever be dropped.
        let reenter = if self.rng.chance(mix.reenter) {
            let targets: Vec<usize> = (0..self.chans.len())
                .filter(|&t| !abandoned[c] || !abandoned[t])
                .collect();
            (!targets.is_empty()).then(|| {
                let t = targets[self.rng.index(targets.len())];
                self.reentry(t)
            })
        } else {
            None
        };
        let origin = Origin {
            kind: Kind::Data,
            lane: self.lane_id(lane),
            chan: c as u8,
            seq,
        };
        Some(Val::new(&self.ctx.book, id, origin, panics, reenter))
    }

    /// A re-entry into channel `t`, doing something drawn at random.
    pub(super) fn reentry(&mut self, t: usize) -> Reentry<S> {
        let how = [How::Len, How::NbSend, How::NbRecv, How::All][self.rng.index(4)];
        Reentry {
            chan: self.chans[t].clone(),
            index: t,
            how,
        }
    }

    /// A stale value for a receive slot, or none (by the round's odds, or out of ids).
    pub(super) fn stale_value(&mut self) -> Option<Val<S>> {
        let mix = &self.ctx.plan.mix;
        if !self.rng.chance(mix.stale) {
            return None;
        }
        let reenter = self.rng.chance(mix.stale_reenter);
        let id = self.book().ledger.reserve(1).next()?;
        let reenter = reenter.then(|| {
            let t = self.rng.index(self.chans.len());
            self.reentry(t)
        });
        let origin = Origin {
            kind: Kind::Stale,
            lane: 0,
            chan: 0,
            seq: 0,
        };
        Some(Val::new(&self.ctx.book, id, origin, false, reenter))
    }

    /// Keeps `v` in hand for lane `lane` on channel `c`.
    pub(super) fn put_back(&mut self, lane: usize, c: usize, v: Val<S>) {
        let k = lane * self.chans.len() + c;
        debug_assert!(self.pending[k].is_none());
        self.pending[k] = Some(v);
    }

    /// A send of value `id` succeeded.
    pub(super) fn sent(&mut self, id: u32) {
        self.book().ledger.sent(id);
        self.slot.tick();
    }

    /// A send of value `id` unwound from a hostile waker's panic: it sent the value unless it
    /// dropped it.
    pub(super) fn sent_unwound(&mut self, id: u32, u: Unwound) {
        if u.unsent {
            self.book().ledger.returned(id);
        } else {
            self.sent(id);
        }
    }

    /// Channel `c` gave `v` back because it is closed: it and every value in hand for `c` are
    /// abandoned, and this thread sends no more on `c`.
    pub(super) fn closed(&mut self, c: usize, v: Val<S>) {
        self.abandon(v);
        self.dead[c] = true;
        for lane in 0..LANES {
            if let Some(v) = self.pending[lane * self.chans.len() + c].take() {
                self.abandon(v);
            }
        }
    }

    /// Records `v` as given back to its sender and drops it on the user's side.
    pub(super) fn abandon(&mut self, v: Val<S>) {
        self.book().ledger.returned(v.id());
        self.slot.begin(Doing::op(Op::UserDrop, None));
        user_drop(v);
    }

    /// A channel to send on: one not known closed, drawn at random.
    pub(super) fn live_chan(&mut self) -> Option<usize> {
        let live: Vec<usize> = (0..self.chans.len()).filter(|&c| !self.dead[c]).collect();
        (!live.is_empty()).then(|| live[self.rng.index(live.len())])
    }

    /// A channel to receive from: any, except one that is closed and left undrained.
    pub(super) fn recv_chan(&mut self) -> usize {
        let n = self.chans.len();
        let c = self.rng.index(n);
        if self.ctx.plan.abandoned[c] && self.chans[c].is_closed() {
            // Some other channel is fine; if all are abandoned the receiver is leaving anyway.
            return (c + 1) % n;
        }
        c
    }
}
