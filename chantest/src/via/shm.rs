//! `--via shm`: the workload between two processes over a ring in shared memory (Jesup's
//! "messages over shared memory" on the Amiga, against his pipe).
//!
//! The receiver is chantest itself; the M senders are threads of a peer process (see
//! [`super::peer`]). The ring ([`super::ring`]) lives in a `memfd_create` file that the peer
//! gets as its standard input and maps `MAP_SHARED`; it has O slots of S bytes (O = 0, a
//! rendezvous, has no shared-memory equivalent here and runs with one slot). Each sender
//! writes its message into a buffer of its own, then copies it into a slot; the receiver
//! checks it in place, reading every byte, and frees the slot: one copy, against a pipe's two.
//!
//! If the peer dies mid-run, the receiver's next futex sleep times out within
//! [`super::ring::CHECK_EVERY`], it finds the peer gone (`waitpid(WNOHANG)`) and stops with
//! a transport error (exit 3). A peer whose parent died notices the same way (`getppid()`
//! changed) and exits too, rather than wait forever for a receiver that is gone.

use super::peer::{self, Peer};
use super::record;
use super::ring::{self, Ring, Shape};
use super::spec::Spec;
use crate::affinity::{self, Cpus};
use crate::error::{usage, Error};
use crate::measure::{sample, Stamp, Usage};
use crate::model::{Sample, Via};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Slots for `-O nbuf`.
pub(crate) fn slots(nbuf: usize) -> usize {
    nbuf.max(1)
}

/// One run, receiving in this process.
pub(crate) fn run(spec: &Spec<'_>) -> Result<Sample, Error> {
    let shape = Shape {
        size: spec.size,
        slots: slots(spec.nbuf),
        senders: spec.senders,
        per_sender: spec.per_sender,
        fault: spec.fault,
        pin: spec.pin.map(Cpus::placement),
    };
    let (ring, fd) =
        Ring::create(shape).map_err(|e| usage!("--via shm: cannot make the shared ring: {e}"))?;
    // Started before pinning, so that the peer inherits this process's whole CPU mask.
    let mut peer = Peer::spawn(Via::Shm.name(), &[], Some(fd))?;
    peer.ready()?;
    let _restore = match spec.pin {
        Some(cpus) => Some(affinity::pin_receiver(cpus)?),
        None => None,
    };

    let total = spec.senders as u64 * spec.per_sender;
    let mut tracker = record::Tracker::new(spec.senders);
    let usage0 = Usage::now();
    // Read before the peer is released: after, this thread may be descheduled while the peer
    // fills the ring, and the clock would miss that work.
    let start = Stamp::now();
    ring.start();
    for received in 0..total {
        let tag = ring.recv(&mut || peer.alive(received, total), record::read)??;
        tracker.accept(tag)?;
    }
    let end = Stamp::now();
    let used = Usage::now().since(&usage0).plus(&peer.finish()?);
    if ring.pending() != 0 {
        return Err(Error::Violation(format!(
            "{} message(s) arrived after all {total} had been received",
            ring.pending()
        )));
    }
    Ok(sample(end.since(&start), used))
}

/// The peer: maps the ring from stdin and runs the senders.
pub(crate) fn peer(args: &[String]) -> Result<(), Error> {
    if !args.is_empty() {
        return Err(usage!("unexpected arguments {args:?}"));
    }
    let ring = Ring::open(std::io::stdin().as_fd()).map_err(Error::Transport)?;
    let shape = ring.shape();
    let ring = Arc::new(ring);
    let cpus = shape.pin.map(Cpus::for_pinning).transpose()?;
    let parent = peer::parent();
    let die_after = peer::die_after();
    let sent = Arc::new(AtomicU64::new(0));

    let mut senders = Vec::with_capacity(shape.senders);
    for id in 0..shape.senders {
        let ring = Arc::clone(&ring);
        let sent = Arc::clone(&sent);
        let cpu = cpus.as_ref().map(|c| c.nth(id + 1));
        let spawned = std::thread::Builder::new()
            .name(format!("sender {id}"))
            .spawn(move || -> Result<(), Error> {
                if let Some(cpu) = cpu {
                    // Unpinned is still a valid run, just a noisier one.
                    let _ = affinity::pin_current(cpu);
                }
                let alive = &mut || peer::parent_alive(parent);
                ring.wait_start(alive)?;
                let mut buf = vec![0u8; shape.size];
                for i in 0..shape.per_sender {
                    record::write(&mut buf, record::tag(id, record::seq(shape.fault, id, i)));
                    ring.send(&buf, alive)?;
                    if die_after.is_some() {
                        peer::maybe_die(sent.fetch_add(1, Ordering::Relaxed) + 1, die_after);
                    }
                }
                Ok(())
            });
        match spawned {
            Ok(handle) => senders.push(handle),
            // The parent sees this process exit and reports it.
            Err(e) => return Err(usage!("cannot start sender thread {id}: {e}")),
        }
    }
    peer::say_ready()?;
    let usage0 = Usage::now();
    let mut first_error = None;
    for handle in senders {
        let outcome = handle
            .join()
            .unwrap_or_else(|_| Err(Error::Transport("a sender thread panicked".into())));
        if let Err(e) = outcome {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    peer::say_usage(&Usage::now().since(&usage0))
}

/// The largest ring `-O` and `-S` may ask for.
pub(crate) fn check_ring(nbuf: u64, size: u64) -> Result<(), String> {
    let bytes = (nbuf.max(1)).saturating_mul(size);
    if bytes > ring::MAX_BYTES {
        return Err(format!(
            "--via shm: a ring of {} slots of {size} bytes is {bytes} bytes, more than the {} \
             allowed; lower -O or -S",
            nbuf.max(1),
            ring::MAX_BYTES
        ));
    }
    Ok(())
}
