//! `--via chan`: one run of erik quanstrom's benchmark over this project's channel: M senders each send N values down one channel with O
//! buffers; one receiver takes all M×N.
//!
//! The receiver is the calling thread. Everyone starts together behind a barrier, and the run
//! is timed from the barrier's release to the last value's arrival. Every value is checked on
//! arrival ([`record::Tracker`]): value = `sender << SEQ_BITS | seq`, and the receiver keeps
//! the next sequence number it expects from each sender, so a lost, duplicated or reordered
//! value is caught at the cost of an index and a compare.
//!
//! With `-S` above 8 the message is a `Box<[u8]>` of S bytes laid out as a [`record`]: the
//! sender writes every byte before sending, the receiver reads every byte, and the box itself
//! moves by ownership: no byte is copied. Spent boxes go back to the senders through a second
//! channel, as Amiga messages went back with `ReplyMsg` (seed 000), so that a run measures the
//! channel rather than `malloc` and page faults; a sender allocates only when none is waiting.

use super::record;
use super::spec::Spec;
use crate::affinity;
use crate::error::{usage, Error};
use crate::measure::{Sample, Stamp, Usage};
use chan::Chan;
use locks::{Backend, Strategy, Visit};
use std::sync::{Arc, Barrier};
use std::thread;

/// Runs the workload once with `backend`'s lock, monomorphized for its strategy.
pub(crate) fn run(backend: &Backend, spec: &Spec<'_>) -> Result<Sample, Error> {
    backend.visit(Run(spec))
}

struct Run<'a, 'b>(&'a Spec<'b>);

impl Visit for Run<'_, '_> {
    type Output = Result<Sample, Error>;

    fn visit<S: Strategy>(self, params: S::Params) -> Self::Output {
        let spec = self.0;
        if spec.size <= record::TAG {
            let c = new_chan::<u64, S>(spec, spec.nbuf, params);
            return run_on(c, spec, |tag| tag, Ok);
        }
        // Room for every box that can be out at once: O buffered, one per sender, one being
        // read; so returning a box never has to wait.
        let pool = new_chan::<Box<[u8]>, S>(spec, spec.nbuf + spec.senders + 2, params);
        let size = spec.size;
        let make = {
            let pool = pool.clone();
            move |tag| {
                let mut b = pool
                    .nbrecv()
                    .unwrap_or_else(|_| vec![0u8; size].into_boxed_slice());
                record::write(&mut b, tag);
                b
            }
        };
        let open = |b: Box<[u8]>| {
            let tag = record::read(&b);
            let _ = pool.nbsend(b);
            tag
        };
        run_on(
            new_chan::<Box<[u8]>, S>(spec, spec.nbuf, params),
            spec,
            make,
            open,
        )
    }
}

/// A channel of `nbuf` buffers with the spec's kind of lock.
fn new_chan<T, S: Strategy>(spec: &Spec<'_>, nbuf: usize, params: S::Params) -> Chan<T, S> {
    if spec.global_lock {
        Chan::with_global_lock(nbuf, params)
    } else {
        Chan::with_params(nbuf, params)
    }
}

/// Closes the channel if its thread unwinds, so the receiver sees the channel end instead of
/// waiting forever for values that will never come.
struct CloseOnPanic<T, S: Strategy>(Chan<T, S>);

impl<T, S: Strategy> Drop for CloseOnPanic<T, S> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.close();
        }
    }
}

/// Runs the workload on `c`: senders turn each tag into a message with `make`, the receiver
/// turns each message back into its tag with `open` (which may find it damaged).
fn run_on<T, S, F>(
    c: Chan<T, S>,
    spec: &Spec<'_>,
    make: F,
    mut open: impl FnMut(T) -> Result<u64, Error>,
) -> Result<Sample, Error>
where
    T: Send + 'static,
    S: Strategy,
    F: Fn(u64) -> T + Clone + Send + 'static,
{
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
        let make = make.clone();
        let spawned = thread::Builder::new()
            .name(format!("sender {id}"))
            .spawn(move || {
                if let Some(cpu) = cpu {
                    // Unpinned is still a valid run, just a noisier one.
                    let _ = affinity::pin_current(cpu);
                }
                barrier.wait();
                let base = record::tag(id, 0);
                if fault && id == 0 {
                    let seqs = (0..n).map(|i| record::seq(true, id, i));
                    send_all(&c.0, base, seqs, &make);
                } else {
                    send_all(&c.0, base, 0..n, &make);
                }
            });
        match spawned {
            Ok(handle) => senders.push(handle),
            // The threads already spawned wait at a barrier that will never fill. They are
            // left there: the caller reports this and exits, which ends them.
            Err(e) => return Err(usage!("cannot start sender thread {id} of {m}: {e}")),
        }
    }

    let mut tracker = record::Tracker::new(m);
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
        if let Err(e) = open(v).and_then(|tag| tracker.accept(tag)) {
            // The senders are not joined: one that the fault left blocked must not hang us.
            // Closing releases the rest, and the caller exits.
            c.close();
            return Err(e);
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
        let what = open(v).map_or_else(|_| "a damaged value".into(), |t| format!("value {t:#x}"));
        return Err(Error::Violation(format!(
            "{what} arrived after all {total} values had been received"
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

/// Sends `make(base | seq)` for each `seq`, until done or the channel is closed (by the
/// receiver, which has found a fault). Generic so that the fault-injecting sequence costs the
/// normal one nothing.
#[inline]
fn send_all<T, S: Strategy>(
    c: &Chan<T, S>,
    base: u64,
    seqs: impl Iterator<Item = u64>,
    make: &impl Fn(u64) -> T,
) {
    for seq in seqs {
        if c.send(make(base | seq)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affinity::Cpus;

    fn spec(nbuf: usize, senders: usize, per_sender: u64) -> Spec<'static> {
        Spec {
            nbuf,
            senders,
            per_sender,
            size: 8,
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
    fn boxed_messages_move_intact() {
        for backend in Backend::ALL {
            for (o, m, size) in [(0, 1, 16), (2, 3, 100), (1, 2, 5000)] {
                let s = run(
                    &backend,
                    &Spec {
                        size,
                        ..spec(o, m, 300)
                    },
                )
                .unwrap();
                assert!(s.ns > 0, "{backend} O={o} M={m} S={size}");
            }
            let e = run(
                &backend,
                &Spec {
                    fault: true,
                    size: 64,
                    ..spec(1, 2, 300)
                },
            )
            .unwrap_err();
            assert!(e.to_string().contains("arrived again"), "{e}");
        }
    }
}
