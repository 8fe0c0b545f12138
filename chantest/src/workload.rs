//! One run of erik quanstrom's benchmark: M senders each send N values down one channel with O
//! buffers; one receiver takes all M×N.
//!
//! The receiver is the calling thread. Everyone starts together behind a barrier, and the run
//! is timed from the barrier's release to the last value's arrival. Every value is checked on
//! arrival: value = `sender << SEQ_BITS | seq`, and the receiver keeps the next sequence number
//! it expects from each sender, so a lost, duplicated or reordered value is caught at the cost
//! of an index and a compare.

use crate::affinity::{self, Cpus};
use crate::error::{usage, Error};
use crate::measure::{Sample, Stamp, Usage};
use chan::Chan;
use locks::{Backend, Strategy, Visit};
use std::sync::{Arc, Barrier};
use std::thread;

/// Bits of a value that hold the sender's sequence number; the sender's id sits above them.
pub const SEQ_BITS: u32 = 40;
/// The most values one sender may send.
pub const MAX_PER_SENDER: u64 = (1 << SEQ_BITS) - 1;
/// The most senders: a thread each, and far beyond what contention studies need.
pub const MAX_SENDERS: u64 = 4096;
/// The most channel buffers (the channel may allocate them up front).
pub const MAX_BUFFERS: u64 = 1 << 20;

/// The shape of one run.
#[derive(Clone, Debug)]
pub struct Spec<'a> {
    /// O: the channel's buffers (0: rendezvous).
    pub nbuf: usize,
    /// M: sending threads.
    pub senders: usize,
    /// N: values each sender sends.
    pub per_sender: u64,
    /// Plan 9's one lock for all channels instead of a lock per channel.
    pub global_lock: bool,
    /// Where to pin the threads, if anywhere.
    pub pin: Option<&'a Cpus>,
    /// For testing the check: sender 0 sends its value 1 twice, in place of value 2.
    pub fault: bool,
}

/// Runs the workload once with `backend`'s lock, monomorphized for its strategy.
pub fn run(backend: &Backend, spec: &Spec<'_>) -> Result<Sample, Error> {
    backend.visit(Run(spec))
}

struct Run<'a, 'b>(&'a Spec<'b>);

impl Visit for Run<'_, '_> {
    type Output = Result<Sample, Error>;

    fn visit<S: Strategy>(self, params: S::Params) -> Self::Output {
        let spec = self.0;
        let c = if spec.global_lock {
            Chan::<u64, S>::with_global_lock(spec.nbuf, params)
        } else {
            Chan::<u64, S>::with_params(spec.nbuf, params)
        };
        run_on(c, spec)
    }
}

/// Closes the channel if its thread unwinds, so the receiver sees the channel end instead of
/// waiting forever for values that will never come.
struct CloseOnPanic<S: Strategy>(Chan<u64, S>);

impl<S: Strategy> Drop for CloseOnPanic<S> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.close();
        }
    }
}

fn run_on<S: Strategy>(c: Chan<u64, S>, spec: &Spec<'_>) -> Result<Sample, Error> {
    let (m, n) = (spec.senders, spec.per_sender);
    let _restore = match spec.pin {
        Some(cpus) => {
            let restore = affinity::Restore::save().map_err(|e| usage!("--pin: {e}"))?;
            affinity::pin_current(cpus.nth(0)).map_err(|e| usage!("--pin: {e}"))?;
            Some(restore)
        }
        None => None,
    };

    let barrier = Arc::new(Barrier::new(m + 1));
    let mut senders = Vec::with_capacity(m);
    for id in 0..m {
        let c = CloseOnPanic(c.clone());
        let barrier = Arc::clone(&barrier);
        let cpu = spec.pin.map(|cpus| cpus.nth(id + 1));
        let fault = spec.fault;
        let spawned = thread::Builder::new()
            .name(format!("sender {id}"))
            .spawn(move || {
                if let Some(cpu) = cpu {
                    // Unpinned is still a valid run, just a noisier one.
                    let _ = affinity::pin_current(cpu);
                }
                barrier.wait();
                let base = (id as u64) << SEQ_BITS;
                if fault && id == 0 {
                    send_all(&c.0, base, (0..n).map(|seq| if seq == 2 { 1 } else { seq }));
                } else {
                    send_all(&c.0, base, 0..n);
                }
            });
        match spawned {
            Ok(handle) => senders.push(handle),
            // The threads already spawned wait at a barrier that will never fill. They are
            // left there: the caller reports this and exits, which ends them.
            Err(e) => return Err(usage!("cannot start sender thread {id} of {m}: {e}")),
        }
    }

    let mut next = vec![0u64; m];
    let total = m as u64 * n;
    let usage0 = Usage::now();
    let stats0 = locks::stats::snapshot();
    barrier.wait();
    let start = Stamp::now();
    for received in 0..total {
        let Ok(v) = c.recv() else {
            return Err(Error::Violation(format!(
                "the channel closed after {received} of {total} values (did a sender panic?)"
            )));
        };
        let (id, seq) = ((v >> SEQ_BITS) as usize, v & MAX_PER_SENDER);
        match next.get_mut(id) {
            Some(expected) if *expected == seq => *expected += 1,
            // The senders are not joined: one that the fault left blocked must not hang us.
            // Closing releases the rest, and the caller exits.
            slot => {
                c.close();
                return Err(Error::Violation(describe(v, id, seq, slot.copied(), m)));
            }
        }
    }
    let end = Stamp::now();
    let usage1 = Usage::now();
    let stats1 = locks::stats::snapshot();

    for (id, handle) in senders.into_iter().enumerate() {
        if handle.join().is_err() {
            return Err(Error::Violation(format!("sender {id} panicked")));
        }
    }
    // Every sender has finished, so anything still in the channel is a value too many.
    c.close();
    if let Ok(v) = c.recv() {
        return Err(Error::Violation(format!(
            "value {v:#x} arrived after all {total} values had been received"
        )));
    }

    let (ns, cycles) = end.since(&start);
    let used = usage1.since(&usage0);
    let stats = stats1.since(&stats0);
    Ok(Sample {
        ns,
        cycles,
        cpu_ns: used.cpu_ns,
        vcsw: used.vcsw,
        ivcsw: used.ivcsw,
        futex_waits: stats.futex_waits,
        futex_wakes: stats.futex_wakes,
    })
}

/// Sends `base | seq` for each `seq`, until done or the channel is closed (by the receiver,
/// which has found a fault). Generic so that the fault-injecting sequence costs the normal
/// one nothing.
#[inline]
fn send_all<S: Strategy>(c: &Chan<u64, S>, base: u64, seqs: impl Iterator<Item = u64>) {
    for seq in seqs {
        if c.send(base | seq).is_err() {
            return;
        }
    }
}

/// What went wrong with value `v`, which the receiver did not expect.
fn describe(v: u64, id: usize, seq: u64, expected: Option<u64>, senders: usize) -> String {
    match expected {
        None => format!("value {v:#x} names sender {id}, but there are only {senders}"),
        Some(e) if seq < e => format!(
            "sender {id}'s value {seq} arrived again, or out of order, after its value {}",
            e - 1
        ),
        Some(e) => format!(
            "sender {id}'s value {seq} arrived while {e} was expected: {} value(s) lost or \
             reordered",
            seq - e
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(nbuf: usize, senders: usize, per_sender: u64) -> Spec<'static> {
        Spec {
            nbuf,
            senders,
            per_sender,
            global_lock: false,
            pin: None,
            fault: false,
        }
    }

    #[test]
    fn every_backend_delivers() {
        for backend in Backend::ALL {
            for (o, m) in [(0, 1), (0, 3), (4, 1), (4, 3)] {
                let s = run(&backend, &spec(o, m, 500)).unwrap();
                assert!(s.ns > 0, "{backend} O={o} M={m}");
            }
        }
    }

    #[test]
    fn global_lock_and_pinning() {
        let cpus = Cpus::current().unwrap();
        for backend in Backend::ALL {
            let s = Spec {
                global_lock: true,
                pin: Some(&cpus),
                ..spec(2, 3, 300)
            };
            run(&backend, &s).unwrap();
        }
        assert_eq!(
            Cpus::current().unwrap(),
            cpus,
            "the receiver's mask is restored"
        );
    }

    #[test]
    fn a_duplicate_is_caught() {
        for backend in Backend::ALL {
            let e = run(
                &backend,
                &Spec {
                    fault: true,
                    ..spec(1, 3, 1000)
                },
            )
            .unwrap_err();
            assert_eq!(
                e,
                Error::Violation(
                    "sender 0's value 1 arrived again, or out of order, after its value 1".into()
                )
            );
        }
    }

    #[test]
    fn faults_are_described() {
        assert!(describe(5 << SEQ_BITS, 5, 0, None, 2).contains("only 2"));
        assert!(describe(3, 0, 3, Some(4), 1).contains("again"));
        assert!(describe(9, 0, 9, Some(4), 1).contains("5 value(s) lost"));
    }
}
