//! A worker's sends: blocking, non-blocking, timed, through a temporary clone, or an alt.

use super::ctx::Side;
use super::guard::{guarded, Guard};
use super::plan::LANES;
use super::watchdog::{Doing, Op};
use super::worker::Worker;
use chan::{SendError, SendTimeoutError, TrySendError};
use locks::Strategy;
use std::time::Instant;

impl<S: Strategy> Worker<'_, S> {
    /// One send operation of a kind drawn with the round's weights.
    pub(super) fn send_op(&mut self) {
        let kind = self.rng.weighted(&self.ctx.plan.mix.send);
        if kind == 4 {
            return self.alt_op(Side::Send);
        }
        let Some(c) = self.live_chan() else { return };
        let lane = self.rng.index(LANES);
        let Some(v) = self.take_value(lane, c) else {
            return;
        };
        let id = v.id();
        let at = Some(c);
        // A hostile waker this send runs may panic out of it (see `hostile`).
        let result = guarded(self.book(), Guard::Send(id), || match kind {
            0 => {
                self.slot.begin(Doing::op(Op::Send, at));
                self.chans[c].send(v).map_err(|SendError(v)| (v, true))
            }
            1 => {
                self.slot.begin(Doing::op(Op::NbSend, at));
                self.chans[c].nbsend(v).map_err(|e| match e {
                    TrySendError::Full(v) => (v, false),
                    TrySendError::Closed(v) => (v, true),
                })
            }
            2 | 3 => {
                let d = self.timeout();
                let r = if kind == 2 {
                    self.slot.begin(Doing::op(Op::SendTimeout, at));
                    self.chans[c].send_timeout(v, d)
                } else {
                    self.slot.begin(Doing::op(Op::SendDeadline, at));
                    self.chans[c].send_deadline(v, Instant::now() + d)
                };
                r.map_err(|e| match e {
                    SendTimeoutError::Timeout(v) => {
                        self.counts.timeouts += 1;
                        (v, false)
                    }
                    SendTimeoutError::Closed(v) => (v, true),
                })
            }
            _ => {
                // The handle this send goes through is dropped as soon as it returns: the
                // value must not care which handle carried it.
                let tmp = self.chans[c].clone();
                self.slot.begin(Doing::op(Op::Send, at));
                let r = tmp.send(v).map_err(|SendError(v)| (v, true));
                drop(tmp);
                r
            }
        });
        match result {
            Ok(Ok(())) => self.sent(id),
            Ok(Err((v, true))) => self.closed(c, v),
            Ok(Err((v, false))) => self.put_back(lane, c, v),
            Err(u) => self.sent_unwound(id, u),
        }
    }
}
