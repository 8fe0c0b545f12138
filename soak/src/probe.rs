//! The linearizability probe: can `nbsend` and `nbrecv` be wrong about a channel's state as
//! another channel has already shown it?
//!
//! Two threads own two private channels `a` (buffered) and `b`. The prober sends value `i`
//! on `a` with `nbsend`, then on `b`; the checker receives `i` from `b`, then takes `a` with
//! `nbrecv` and acknowledges. Since nobody else touches `a`, once the checker holds `i` from
//! `b`, value `i` is in `a`: `nbrecv` may not say `Empty`. And the prober knows how many of
//! its values the checker has acknowledged, so `a` holds at most the rest: `nbsend` may not
//! say `Full` below capacity. A lock-free fast path that reads a stale summary breaks these,
//! and the workers' checks could never tell (with several receivers, an `Empty` proves
//! nothing).

use super::book::Book;
use super::plan::{PROBE_A as A, PROBE_B as B};
use super::watchdog::{Doing, Op, Slot};
use chan::{Chan, TryRecvError, TrySendError};
use locks::Strategy;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The probe's shared state.
pub(super) struct Probe<S: Strategy> {
    a: Chan<u64, S>,
    b: Chan<u64, S>,
    /// How many values the checker has taken from `a`.
    acked: AtomicU64,
    deadline: Instant,
    book: Arc<Book>,
}

impl<S: Strategy> Probe<S> {
    /// A probe over `a` (capacity at least 1) and `b`, sending until `deadline`, reporting to
    /// `book`.
    pub(super) fn new(
        a: Chan<u64, S>,
        b: Chan<u64, S>,
        deadline: Instant,
        book: Arc<Book>,
    ) -> Arc<Self> {
        assert!(a.capacity() >= 1, "the probe's `a` must hold a value");
        Arc::new(Probe {
            a,
            b,
            acked: AtomicU64::new(0),
            deadline,
            book,
        })
    }

    /// The prober's thread body, with its watchdog slot (returns 0, to match
    /// [`check`](Self::check)).
    pub(super) fn send(&self, slot: &Slot) -> u64 {
        let cap = self.a.capacity() as u64;
        let mut i = 0u64;
        let mut ops = 0u32;
        loop {
            ops = ops.wrapping_add(1);
            if self.book.failed() || (ops % 16 == 0 && Instant::now() >= self.deadline) {
                break;
            }
            let acked = self.acked.load(Ordering::Acquire);
            slot.begin(Doing::op(Op::NbSend, Some(A)));
            match self.a.nbsend(i) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    if i - acked < cap {
                        self.book.fail(format!(
                            "probe: nbsend on c{A} (capacity {cap}) said full, yet it can hold \
                             at most {} values: the receiver had acknowledged {acked} of the \
                             {i} sent",
                            i - acked
                        ));
                    }
                    std::thread::yield_now();
                    continue;
                }
                Err(TrySendError::Closed(_)) => {
                    self.book.fail(format!(
                        "probe: c{A} said closed; only the prober closes it"
                    ));
                    break;
                }
            }
            slot.begin(Doing::op(Op::Send, Some(B)));
            if self.b.send(i).is_err() {
                self.book.fail(format!(
                    "probe: c{B} said closed; only the prober closes it"
                ));
                break;
            }
            slot.tick();
            i += 1;
        }
        slot.begin(Doing::op(Op::Close, Some(B)));
        self.b.close();
        self.a.close();
        slot.begin(Doing::op(Op::Done, None));
        0
    }

    /// The checker's thread body; returns how many values it checked. It runs until the
    /// prober closes `b`, whatever fails meanwhile, so that the prober's blocking send always
    /// finds it.
    pub(super) fn check(&self, slot: &Slot) -> u64 {
        let mut n = 0u64;
        loop {
            slot.begin(Doing::op(Op::Recv, Some(B)));
            let got = if n % 2 == 0 {
                self.b.recv().ok()
            } else {
                match self.b.nbrecv() {
                    Ok(v) => Some(v),
                    Err(TryRecvError::Empty) => {
                        std::thread::yield_now();
                        continue;
                    }
                    Err(TryRecvError::Closed) => None,
                }
            };
            let Some(i) = got else { break };
            n += 1;
            slot.begin(Doing::op(Op::NbRecv, Some(A)));
            match self.a.nbrecv() {
                Ok(j) if j == i => {}
                Ok(j) => self.book.fail(format!(
                    "probe: c{A} gave value {j} where {i} was due (sent in order by one thread)"
                )),
                Err(e) => {
                    self.book.fail(format!(
                        "probe: nbrecv on c{A} said {e:?} just after value {i} came from c{B}, \
                         though {i} was sent on c{A} first and nobody else receives there \
                         (not linearizable)"
                    ));
                    // Take it anyway, so that one fault is reported once, not at every value
                    // after it.
                    slot.begin(Doing::op(Op::Recv, Some(A)));
                    let _ = self.a.recv();
                }
            }
            self.acked.store(i + 1, Ordering::Release);
            slot.tick();
        }
        slot.begin(Doing::op(Op::Done, None));
        n
    }
}
