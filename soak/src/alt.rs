//! A worker's alts: send and receive arms mixed, several on one channel, over several
//! channels, with stale values in receive slots, waited on in every way.
//!
//! Afterwards every arm's slot is checked against what the alt reported: a send arm that
//! fired has given up its value and the others still hold theirs; a receive arm that fired
//! holds a fresh value and the others hold what they held before (nothing, or their stale
//! value). An alt that unwound from a hostile waker's panic (see [`super::hostile`]) fired
//! one arm, unreported.

use super::ctx::{arms_of, Arm, Drawn, Ended, Side};
use super::guard::{guarded, Guard};
use super::plan::LANES;
use super::value::{accept, user_drop, Val};
use super::watchdog::{thread_name, Doing, Op, MAX_ARMS};
use super::worker::Worker;
use chan::{Alt, Fired};
use locks::Strategy;
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
enum Wait {
    Block,
    Try,
    Timeout(Duration),
    Deadline(Duration),
}

impl<S: Strategy> Worker<'_, S> {
    /// One alt.
    pub(super) fn alt_op(&mut self, side: Side) {
        self.alt_op_with(side, false);
    }

    /// One alt; only `try_wait` when `only_try` (a task that may not block its thread).
    pub(super) fn alt_op_with(&mut self, side: Side, only_try: bool) {
        let Some((arms, mut slots, may_block)) = self.alt_arms(side) else {
            return;
        };
        let wait = match self.rng.below(if may_block { 4 } else { 3 }) {
            _ if only_try => Wait::Try,
            0 => Wait::Try,
            1 => Wait::Timeout(self.timeout()),
            2 => Wait::Deadline(self.timeout()),
            _ => Wait::Block,
        };
        let biased = self.rng.chance(self.ctx.plan.mix.biased);
        self.counts.alts += 1;

        let fired = {
            let alt = self.alt_over(&arms, &mut slots, biased);
            let op = match wait {
                Wait::Block => Op::AltWait,
                Wait::Try => Op::AltTryWait,
                Wait::Timeout(_) => Op::AltWaitTimeout,
                Wait::Deadline(_) => Op::AltWaitDeadline,
            };
            self.slot.begin(Doing::alt(op, arms_of(&arms)));
            let recv_mask = arms
                .iter()
                .filter(|a| !a.send)
                .fold(0u8, |m, a| m | 1 << a.chan);
            // A hostile waker this alt runs may panic out of it: the slots are ours, outside;
            // the `Alt` is dropped inside, while it unwinds (a value its fired arm still held
            // is then dropped as received: see `Guard::Alt`).
            guarded(self.book(), Guard::Alt(recv_mask), move || {
                let mut alt = alt;
                match wait {
                    Wait::Block => Some(alt.wait()),
                    Wait::Try => alt.try_wait(),
                    Wait::Timeout(d) => alt.wait_timeout(d),
                    Wait::Deadline(d) => alt.wait_deadline(Instant::now() + d),
                }
            })
        };
        let (fired, ended) = match fired {
            Ok(fired) => (fired, Ended::Returned),
            Err(u) => (
                None,
                Ended::Unwound {
                    received: u.received,
                },
            ),
        };
        if fired.is_none() && ended == Ended::Returned && !matches!(wait, Wait::Try) {
            self.counts.timeouts += 1;
        }
        self.settle(&arms, slots, fired, ended);
    }

    /// Draws an alt's arms for `side`, with their slots, and whether waiting on them without
    /// a bound is safe; `None` when there is nothing to wait on (a send-only alt with no value
    /// to send is settled here).
    pub(super) fn alt_arms(&mut self, side: Side) -> Option<Drawn<S>> {
        let want = 1 + self.rng.index(MAX_ARMS - 2);
        let mut arms: Vec<Arm> = Vec::with_capacity(want);
        let mut slots: Vec<Option<Val<S>>> = Vec::with_capacity(want);
        if let Side::Recv { home } = side {
            self.add_recv(&mut arms, &mut slots, home);
        }
        while arms.len() < want {
            let send = match side {
                Side::Send => true,
                Side::Recv { .. } => false,
                Side::Mixed => self.rng.chance(512),
            };
            if send {
                if !self.add_send(&mut arms, &mut slots) {
                    break;
                }
            } else {
                // Often a second arm on a channel already there.
                let c = match arms.len() {
                    n if n > 0 && self.rng.chance(384) => arms[self.rng.index(n)].chan,
                    _ => self.recv_chan(),
                };
                self.add_recv(&mut arms, &mut slots, c);
            }
        }
        if arms.is_empty() {
            return None;
        }
        let sending = slots.iter().zip(&arms).any(|(s, a)| a.send && s.is_some());
        if matches!(side, Side::Send) && !sending {
            self.settle(&arms, slots, None, Ended::Returned);
            return None;
        }
        // Waiting without a bound is safe only where some other thread is bound to act: a
        // receiver of our send arm's channel, a sender on our home channel.
        let may_block = sending || matches!(side, Side::Recv { .. });
        Some((arms, slots, may_block))
    }

    /// An alt over `arms`, whose slots are `slots`.
    pub(super) fn alt_over<'s>(
        &'s self,
        arms: &[Arm],
        slots: &'s mut [Option<Val<S>>],
        biased: bool,
    ) -> Alt<'s, S> {
        let mut alt = Alt::new();
        if biased {
            alt = alt.biased();
        }
        for (a, slot) in arms.iter().zip(slots.iter_mut()) {
            if a.send {
                alt.send(&self.chans[a.chan], slot);
            } else {
                alt.recv(&self.chans[a.chan], slot);
            }
        }
        alt
    }

    /// Adds a send arm; false when there is no channel or lane left to add one for.
    fn add_send(&mut self, arms: &mut Vec<Arm>, slots: &mut Vec<Option<Val<S>>>) -> bool {
        let Some(c) = self.live_chan() else {
            return false;
        };
        // Two arms on one channel must come from different lanes: which of them fires is the
        // alt's choice, so their relative order is not the sender's to promise.
        let free: Vec<usize> = (0..LANES)
            .filter(|&l| !arms.iter().any(|a| a.send && a.chan == c && a.lane == l))
            .collect();
        if free.is_empty() {
            return false;
        }
        let lane = free[self.rng.index(free.len())];
        // Out of quota leaves the arm disabled (`None`, Plan 9's CHANNOP).
        let v = self.take_value(lane, c);
        arms.push(Arm {
            send: true,
            chan: c,
            lane,
            id: v.as_ref().map(Val::id),
        });
        slots.push(v);
        true
    }

    fn add_recv(&mut self, arms: &mut Vec<Arm>, slots: &mut Vec<Option<Val<S>>>, c: usize) {
        let v = self.stale_value();
        arms.push(Arm {
            send: false,
            chan: c,
            lane: 0,
            id: v.as_ref().map(Val::id),
        });
        slots.push(v);
    }

    /// Reads every slot after the alt, checking it against `fired` and how the wait `ended`.
    pub(super) fn settle(
        &mut self,
        arms: &[Arm],
        slots: Vec<Option<Val<S>>>,
        fired: Option<Fired>,
        ended: Ended,
    ) {
        let cancelled = ended == Ended::Cancelled;
        let (unwound, dropped_received) = match ended {
            Ended::Unwound { received } => (true, received),
            _ => (false, 0),
        };
        if dropped_received > 1 {
            self.book().fail(format!(
                "thread `{}`: an alt that unwound dropped {dropped_received} received values",
                thread_name()
            ));
        }
        // Arms that fired unreported: at most one.
        let mut sent_unreported = dropped_received;
        let what = || {
            let arms: Vec<String> = arms
                .iter()
                .map(|a| format!("{} c{}", if a.send { "send" } else { "recv" }, a.chan))
                .collect();
            format!("thread `{}`: alt [{}]", thread_name(), arms.join(", "))
        };
        if let Some(f) = fired {
            if f.index >= arms.len() {
                self.book().fail(format!(
                    "{}: fired arm {}, which it does not have",
                    what(),
                    f.index
                ));
            }
        }
        for (i, (a, slot)) in arms.iter().zip(slots).enumerate() {
            let here = fired.filter(|f| f.index == i);
            let completed = here.is_some_and(|f| !f.closed);
            let closed = here.is_some_and(|f| f.closed);
            if a.send {
                match slot {
                    None if completed => match a.id {
                        Some(id) => self.sent(id),
                        None => self
                            .book()
                            .fail(format!("{}: disabled arm {i} fired", what())),
                    },
                    None if (cancelled || unwound) && a.id.is_some() && sent_unreported == 0 => {
                        sent_unreported += 1;
                        if cancelled {
                            self.counts.cancelled_alt_sends += 1;
                        }
                        self.sent(a.id.unwrap_or_default());
                    }
                    None => {
                        if let Some(id) = a.id {
                            self.book().fail(format!(
                                "{}: arm {i} (value #{id}) lost its value without firing{}",
                                what(),
                                match (closed, ended) {
                                    (true, _) => " (reported closed)",
                                    (_, Ended::Cancelled) =>
                                        " (a second send arm of a cancelled alt)",
                                    (_, Ended::Unwound { .. }) => {
                                        " (a second arm of an alt that unwound)"
                                    }
                                    _ => "",
                                }
                            ));
                        }
                    }
                    Some(v) if closed => self.closed(a.chan, v),
                    Some(v) => {
                        if completed {
                            self.book().fail(format!(
                                "{}: arm {i} fired, yet still holds value #{}",
                                what(),
                                v.id()
                            ));
                        }
                        self.put_back(a.lane, a.chan, v);
                    }
                }
            } else {
                match slot {
                    Some(v) if v.is_stale() => {
                        if completed {
                            self.book().fail(format!(
                                "{}: arm {i} fired, yet its slot still holds its stale value",
                                what()
                            ));
                        }
                        self.slot.begin(Doing::op(Op::UserDrop, None));
                        user_drop(v);
                    }
                    Some(v) => {
                        if unwound && sent_unreported == 0 {
                            sent_unreported += 1;
                        } else if !completed {
                            self.book().fail(format!(
                                "{}: value #{} landed in arm {i}, which did not fire{}",
                                what(),
                                v.id(),
                                if unwound {
                                    " (a second arm of an alt that unwound)"
                                } else {
                                    ""
                                }
                            ));
                        }
                        accept(v, a.chan, &mut self.order);
                    }
                    None if completed => {
                        self.book()
                            .fail(format!("{}: arm {i} fired without a value", what()));
                    }
                    None => {
                        if let Some(id) = a.id {
                            self.book().fail(format!(
                                "{}: arm {i} did not fire, yet its stale value #{id} is gone",
                                what()
                            ));
                        }
                    }
                }
            }
        }
    }
}
