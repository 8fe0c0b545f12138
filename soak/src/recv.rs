//! A worker's receives, and how a receiver follows its home channel until every channel is
//! closed and drained.
//!
//! A receiver blocks only in operations that include its home channel, so that every open
//! channel always has a thread that will take its values: a blocked sender is never left
//! waiting on a channel whose receivers all wait elsewhere. When its home closes, the
//! receiver drains it (unless the round leaves it undrained) and moves to another open
//! channel; when none is left it drains every channel and finishes.

use super::ctx::Side;
use super::guard::{guarded, Guard};
use super::value::{accept, check_len};
use super::watchdog::{Doing, Op};
use super::worker::Worker;
use chan::{RecvTimeoutError, TryRecvError};
use locks::Strategy;
use std::time::Instant;

impl<S: Strategy> Worker<'_, S> {
    /// Receives until every channel is closed and drained.
    pub(super) fn recv_loop(&mut self, mut home: usize) {
        while let Some(h) = self.next_home(home) {
            home = h;
            self.maybe_reclone();
            self.recv_op(Some(home));
        }
    }

    /// The home channel for the next receive: `home`, or another if it has closed; `None`
    /// when the receiver is done (every channel closed and drained, or a check failed).
    pub(super) fn next_home(&mut self, mut home: usize) -> Option<usize> {
        loop {
            if self.book().failed() {
                return None;
            }
            if !self.chans[home].is_closed() {
                return Some(home);
            }
            home = self.rehome(home)?;
        }
    }

    /// After home channel `home` closed: drains it (unless the round leaves it undrained) and
    /// returns an open channel for the new home; `None` when every channel is closed, after
    /// draining them all. (Tasks call this too: their drain does not wait, see `drain`.)
    fn rehome(&mut self, home: usize) -> Option<usize> {
        if !self.ctx.plan.abandoned[home] {
            self.drain(home);
        }
        let open: Vec<usize> = (0..self.chans.len())
            .filter(|&c| !self.chans[c].is_closed())
            .collect();
        if open.is_empty() {
            for c in 0..self.chans.len() {
                if !self.ctx.plan.abandoned[c] {
                    self.drain(c);
                }
            }
            return None;
        }
        Some(open[self.rng.index(open.len())])
    }

    /// Receives from closed channel `c` until it reports itself closed and drained.
    ///
    /// A closed channel still waits while a value lent to a receive future may come back
    /// (chan's rule: it is in the channel until that future takes it or gives it back). A
    /// task must not wait for that on its runtime's thread, which the future's own task may
    /// need: it takes what is there without waiting, and its `drain_closed` at the end takes
    /// what came back later.
    fn drain(&mut self, c: usize) {
        self.slot.begin(Doing::op(Op::Drain, Some(c)));
        if tokio::runtime::Handle::try_current().is_ok() {
            while let Ok(v) = self.chans[c].nbrecv() {
                accept(v, c, &mut self.order);
            }
        } else if self.rng.chance(512) {
            for v in self.chans[c].iter() {
                accept(v, c, &mut self.order);
            }
        } else {
            while let Ok(v) = self.chans[c].recv() {
                accept(v, c, &mut self.order);
            }
        }
    }

    /// One receive operation of a kind drawn with the round's weights; blocking kinds only on
    /// `home` (a thread without one uses their timed forms).
    pub(super) fn recv_op(&mut self, home: Option<usize>) {
        let kind = self.rng.weighted(&self.ctx.plan.mix.recv);
        let any = self.recv_chan();
        match (kind, home) {
            // The receives are guarded: a hostile waker they run may panic out of them (see
            // `hostile`), dropping the value they took.
            (0, Some(h)) => {
                self.slot.begin(Doing::op(Op::Recv, Some(h)));
                if let Ok(Ok(v)) = guarded(self.book(), Guard::Recv(h), || self.chans[h].recv()) {
                    accept(v, h, &mut self.order);
                }
            }
            (1, _) => {
                self.slot.begin(Doing::op(Op::NbRecv, Some(any)));
                match guarded(self.book(), Guard::Recv(any), || self.chans[any].nbrecv()) {
                    Ok(Ok(v)) => accept(v, any, &mut self.order),
                    Ok(Err(TryRecvError::Empty | TryRecvError::Closed)) | Err(_) => {}
                }
            }
            (4, Some(h)) => {
                let n = 1 + self.rng.index(8);
                self.slot.begin(Doing::op(Op::Iter, Some(h)));
                let _ = guarded(self.book(), Guard::Recv(h), || {
                    for v in self.chans[h].iter().take(n) {
                        accept(v, h, &mut self.order);
                    }
                });
            }
            // Without a home, the blocking kinds become timed ones.
            (0 | 2 | 3 | 4, _) => {
                let d = self.timeout();
                let r = guarded(self.book(), Guard::Recv(any), || {
                    if kind == 3 {
                        self.slot.begin(Doing::op(Op::RecvDeadline, Some(any)));
                        self.chans[any].recv_deadline(Instant::now() + d)
                    } else {
                        self.slot.begin(Doing::op(Op::RecvTimeout, Some(any)));
                        self.chans[any].recv_timeout(d)
                    }
                });
                match r {
                    Ok(Ok(v)) => accept(v, any, &mut self.order),
                    Ok(Err(RecvTimeoutError::Timeout)) => self.counts.timeouts += 1,
                    Ok(Err(RecvTimeoutError::Closed)) | Err(_) => {}
                }
            }
            (5, _) => {
                let n = 1 + self.rng.index(16);
                self.slot.begin(Doing::op(Op::TryIter, Some(any)));
                let _ = guarded(self.book(), Guard::Recv(any), || {
                    for v in self.chans[any].try_iter().take(n) {
                        accept(v, any, &mut self.order);
                    }
                });
            }
            (6, _) => self.alt_op(match home {
                Some(h) => Side::Recv { home: h },
                None => Side::Mixed,
            }),
            (7, _) => self.macro_op(home, any),
            _ => {
                self.slot.begin(Doing::op(Op::Len, Some(any)));
                check_len(self.book(), &self.chans[any], any);
            }
        }
    }

    /// The `alt!` macro over two receive arms: blocking when one is `home`, else with a
    /// timeout or a default.
    fn macro_op(&mut self, home: Option<usize>, any: usize) {
        let a = home.unwrap_or_else(|| self.recv_chan());
        let b = any;
        let d = self.timeout();
        let how = self.rng.index(3);
        self.counts.alts += 1;
        let arms = [(false, a), (false, b)].into_iter();
        let got = match (how, home) {
            (0, Some(_)) => {
                self.slot.begin(Doing::alt(Op::AltWait, arms));
                chan::alt! {
                    recv(self.chans[a]) -> r => { r.ok().map(|v| (v, a)) },
                    recv(self.chans[b]) -> r => { r.ok().map(|v| (v, b)) },
                }
            }
            (1, _) => {
                self.slot.begin(Doing::alt(Op::AltTryWait, arms));
                chan::alt! {
                    recv(self.chans[a]) -> r => { r.ok().map(|v| (v, a)) },
                    recv(self.chans[b]) -> r => { r.ok().map(|v| (v, b)) },
                    default => { None },
                }
            }
            _ => {
                self.slot.begin(Doing::alt(Op::AltMacro, arms));
                chan::alt! {
                    recv(self.chans[a]) -> r => { r.ok().map(|v| (v, a)) },
                    recv(self.chans[b]) -> r => { r.ok().map(|v| (v, b)) },
                    timeout(d) => {
                        self.counts.timeouts += 1;
                        None
                    },
                }
            }
        };
        if let Some((v, c)) = got {
            accept(v, c, &mut self.order);
        }
    }
}
