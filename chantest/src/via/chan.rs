//! `--via chan`: one run of erik quanstrom's benchmark over this project's channel: M senders
//! each send N values down one channel with O buffers; one receiver takes all M×N.
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
//! channel, as Amiga messages went back with `ReplyMsg` (Jesup, 1991), so that a run measures the
//! channel rather than `malloc` and page faults; a sender allocates only when none is waiting.
//!
//! What is common to every way of running the workload on our channel (building the channel
//! with the spec's lock, the message boxes, the clocks, the sender's close guard) is here;
//! who sends and receives is a [`Drive`]: threads here ([`Threads`]), tasks in
//! [`super::task`]. The thread runner itself, [`run_on`], takes any channel's ends
//! ([`super::ends`]): the peers' threads run through it too.

use super::ends::{AsyncRx, AsyncTx, Rx, Tx};
use super::record;
use super::spec::Spec;
use crate::affinity;
use crate::error::{usage, Error};
use crate::measure::{self, Stamp, StartLine, Usage};
use crate::model::{Sample, TAG};
use chan::Chan;
use locks::{Backend, Strategy, Visit};
use std::sync::{Arc, Barrier};
use std::thread;

/// Runs the workload once with `backend`'s lock and sender threads.
pub(crate) fn run(backend: &Backend, spec: &Spec<'_>) -> Result<Sample, Error> {
    crate::lanes::run(backend, spec, Driver::Threads)
}

/// Who runs the workload on a lane's channel: a [`Drive`] named by value, so that a lane's
/// compiled code ([`lane`]) is one function pointer per strategy, whoever drives it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Driver {
    /// Sender threads, this thread receiving ([`Threads`]).
    Threads,
    /// Tasks on a runtime of this flavor ([`super::task`]).
    Tasks(super::task::Flavor),
}

/// Runs the workload once with the lock `S` and its parameters, monomorphized for `S`: the
/// code of a lane ([`crate::lanes`]), compiled where the lane is added.
pub(crate) fn lane<S: Strategy>(
    params: S::Params,
    spec: &Spec<'_>,
    driver: Driver,
) -> Result<Sample, Error> {
    match driver {
        Driver::Threads => Run(spec, Threads).visit::<S>(params),
        Driver::Tasks(flavor) => Run(spec, super::task::Tasks(flavor)).visit::<S>(params),
    }
}

/// Who sends and receives, on a channel made ready by [`lane`].
pub(super) trait Drive {
    /// Runs the workload on `c`: senders turn each tag into a message with `make`, the
    /// receiver turns each message back into its tag with `open` (which may find it damaged)
    /// and checks it with a [`record::Tracker`]; timed from the senders' start to the last
    /// value's arrival ([`Clocks`]).
    fn drive<T: Send + 'static, S: Strategy>(
        self,
        c: Chan<T, S>,
        spec: &Spec<'_>,
        make: impl Make<T>,
        open: impl Open<T>,
    ) -> Result<Sample, Error>;
}

/// How a sender makes the message of a tag: what any driver may do with it (clone it for
/// each sender, move it to another thread).
pub(super) trait Make<T>: Fn(u64) -> T + Clone + Send + 'static {}

impl<T, F: Fn(u64) -> T + Clone + Send + 'static> Make<T> for F {}

/// How the receiver opens a message back into its tag, finding it damaged or not: what any
/// driver may do with it (move it to another thread).
pub(super) trait Open<T>: FnMut(T) -> Result<u64, Error> + Send + 'static {}

impl<T, G: FnMut(T) -> Result<u64, Error> + Send + 'static> Open<T> for G {}

struct Run<'a, 'b, D>(&'a Spec<'b>, D);

impl<D: Drive> Visit for Run<'_, '_, D> {
    type Output = Result<Sample, Error>;

    fn visit<S: Strategy>(self, params: S::Params) -> Self::Output {
        let Run(spec, drive) = self;
        if spec.size <= TAG {
            let c = new_chan::<u64, S>(spec, spec.nbuf, params);
            return drive.drive(c, spec, |tag| tag, Ok);
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
        let open = move |b: Box<[u8]>| {
            let tag = record::read(&b);
            let _ = pool.nbsend(b);
            tag
        };
        let c = new_chan::<Box<[u8]>, S>(spec, spec.nbuf, params);
        drive.drive(c, spec, make, open)
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

/// A sender's handle on the channel, which closes it if the sender stops before it has
/// finished (a thread that unwinds, a task that panics and is dropped), so that the receiver
/// sees the channel end instead of waiting forever for values that will never come: our
/// channel's [`Tx`] and [`AsyncTx`].
pub(super) struct SenderGuard<T, S: Strategy> {
    chan: Chan<T, S>,
    done: bool,
}

impl<T, S: Strategy> SenderGuard<T, S> {
    /// Guards a handle on `chan`.
    pub(super) fn new(chan: Chan<T, S>) -> Self {
        SenderGuard { chan, done: false }
    }
}

impl<T, S: Strategy> Clone for SenderGuard<T, S> {
    /// Another sender's guard, unfinished.
    fn clone(&self) -> Self {
        SenderGuard::new(self.chan.clone())
    }
}

impl<T, S: Strategy> Drop for SenderGuard<T, S> {
    fn drop(&mut self) {
        if !self.done {
            self.chan.close();
        }
    }
}

impl<T: Send + 'static, S: Strategy> Tx<T> for SenderGuard<T, S> {
    #[inline(always)]
    fn send(&self, v: T) -> bool {
        self.chan.send(v).is_ok()
    }

    fn finish(mut self) {
        self.done = true;
    }
}

impl<T: Send + 'static, S: Strategy> AsyncTx<T> for SenderGuard<T, S> {
    #[inline]
    async fn send(&self, v: T) -> bool {
        self.chan.send_async(v).await.is_ok()
    }

    fn finish(mut self) {
        self.done = true;
    }
}

/// Our channel's receiving end: closing it is hanging up, and what it still holds once
/// closed is left over.
impl<T: Send + 'static, S: Strategy> Rx<T> for Chan<T, S> {
    #[inline(always)]
    fn recv(&mut self) -> Option<T> {
        Chan::recv(self).ok()
    }

    fn hang_up(self) {
        self.close();
    }

    fn leftover(self) -> Option<T> {
        self.close();
        Chan::recv(&self).ok()
    }
}

impl<T: Send + 'static, S: Strategy> AsyncRx<T> for Chan<T, S> {
    #[inline]
    async fn recv(&mut self) -> Option<T> {
        self.recv_async().await.ok()
    }

    fn hang_up(self) {
        self.close();
    }

    fn leftover(self) -> Option<T> {
        Rx::leftover(self)
    }
}

/// The clocks a run reads at its start and end: wall time and TSC, the process's usage (all
/// threads), the locks' futex counts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clocks {
    stamp: Stamp,
    usage: Usage,
    stats: locks::stats::Snapshot,
}

impl Clocks {
    /// The start of a run: the usage and counts, then the time.
    pub(super) fn start() -> Clocks {
        Clocks::start_after(Stamp::now)
    }

    /// The start of a run whose receiver cannot receive before `release` (which lets the
    /// senders go) returns: the usage and counts, then `release`, which gives the time the
    /// run started (the first thread past the release reads it, see [`StartLine`]).
    pub(super) fn start_after(release: impl FnOnce() -> Stamp) -> Clocks {
        let (usage, stats) = (Usage::now(), locks::stats::snapshot());
        let stamp = release();
        Clocks {
            stamp,
            usage,
            stats,
        }
    }

    /// The time first, right at the last value's arrival, then the usage and counts.
    pub(super) fn end() -> Clocks {
        let stamp = Stamp::now();
        Clocks {
            stamp,
            usage: Usage::now(),
            stats: locks::stats::snapshot(),
        }
    }

    /// What the run from `start` to `self` cost.
    pub(super) fn since(&self, start: &Clocks) -> Sample {
        let used = self.usage.since(&start.usage);
        let stats = self.stats.since(&start.stats);
        Sample {
            futex_waits: stats.futex_waits,
            futex_wakes: stats.futex_wakes,
            yields: stats.yields,
            contended: stats.contended,
            spins: stats.spins,
            moves: stats.moves,
            ..measure::sample(self.stamp.since(&start.stamp), used)
        }
    }
}

/// The error of a receiver whose channel closed before every value arrived.
pub(super) fn closed_early(received: u64, total: u64) -> Error {
    Error::Violation(format!(
        "the channel closed after {received} of {total} values (did a sender panic?)"
    ))
}

/// The error of a value found in the channel after all of them had been received.
pub(super) fn one_too_many<T>(
    v: T,
    open: &mut impl FnMut(T) -> Result<u64, Error>,
    total: u64,
) -> Error {
    let what = open(v).map_or_else(|_| "a damaged value".into(), |t| format!("value {t:#x}"));
    Error::Violation(format!(
        "{what} arrived after all {total} values had been received"
    ))
}

/// The values each sender sends, with the fault (`--inject-fault`) in sender 0's: see
/// [`record::seq`].
pub(super) fn faulty_seqs(id: usize, n: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |i| record::seq(true, id, i))
}

/// Sender threads, the receiver on the calling thread: `--via chan`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Threads;

impl Drive for Threads {
    fn drive<T: Send + 'static, S: Strategy>(
        self,
        c: Chan<T, S>,
        spec: &Spec<'_>,
        make: impl Make<T>,
        mut open: impl Open<T>,
    ) -> Result<Sample, Error> {
        run_on(SenderGuard::new(c.clone()), c, spec, make, &mut open)
    }
}

/// The workload with threads on any channel, given as its ends: M sender threads, each with a
/// clone of `tx`, the receiver on the calling thread with `rx` (see [`Drive::drive`]).
pub(super) fn run_on<T: Send + 'static>(
    tx: impl Tx<T>,
    mut rx: impl Rx<T>,
    spec: &Spec<'_>,
    make: impl Make<T>,
    open: &mut impl FnMut(T) -> Result<u64, Error>,
) -> Result<Sample, Error> {
    let (m, n) = (spec.senders, spec.per_sender);
    let _restore = spec.pin.map(affinity::pin_receiver).transpose()?;

    let barrier = Arc::new(Barrier::new(m + 1));
    let line = Arc::new(StartLine::default());
    let mut senders = Vec::with_capacity(m);
    for id in 0..m {
        let tx = tx.clone();
        let barrier = Arc::clone(&barrier);
        let line = Arc::clone(&line);
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
                line.mark();
                let base = record::tag(id, 0);
                if fault && id == 0 {
                    send_all(&tx, base, faulty_seqs(id, n), &make);
                } else {
                    send_all(&tx, base, 0..n, &make);
                }
                tx.finish();
            });
        match spawned {
            Ok(handle) => senders.push(handle),
            // The threads already spawned wait at a barrier that will never fill. They are
            // left there: the caller reports this and exits, which ends them.
            Err(e) => return Err(usage!("cannot start sender thread {id} of {m}: {e}")),
        }
    }
    // Only the senders hold sending ends now.
    tx.finish();

    let mut tracker = record::Tracker::new(m);
    let total = m as u64 * n;
    // The receiver is this thread, which receives nothing before it is past the barrier.
    let start = Clocks::start_after(|| {
        barrier.wait();
        line.mark()
    });
    for received in 0..total {
        let Some(v) = rx.recv() else {
            return Err(closed_early(received, total));
        };
        if let Err(e) = open(v).and_then(|tag| tracker.accept(tag)) {
            // The senders are not joined: one that the fault left blocked must not hang us.
            // Hanging up releases the rest, and the caller exits.
            rx.hang_up();
            return Err(e);
        }
    }
    let end = Clocks::end();

    for (id, handle) in senders.into_iter().enumerate() {
        if handle.join().is_err() {
            return Err(Error::Violation(format!("sender {id} panicked")));
        }
    }
    // Every sender has finished, so anything still in the channel is a value too many.
    if let Some(v) = rx.leftover() {
        return Err(one_too_many(v, open, total));
    }
    Ok(end.since(&start))
}

/// Sends `make(base | seq)` for each `seq`, until done or the receiver hangs up (it has found
/// a fault). Generic so that the fault-injecting sequence costs the normal one nothing.
#[inline]
fn send_all<T>(
    tx: &impl Tx<T>,
    base: u64,
    seqs: impl Iterator<Item = u64>,
    make: &impl Fn(u64) -> T,
) {
    for seq in seqs {
        if !tx.send(make(base | seq)) {
            return;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! The checks every driver of the channel workload passes, run here with threads and in
    //! [`super::super::task`] with tasks.

    use super::*;
    use crate::affinity::Cpus;

    /// One run of the workload with a driver: `run`, or a task flavor's.
    pub(in crate::via) type Runner<'a> = &'a dyn Fn(&Backend, &Spec<'_>) -> Result<Sample, Error>;

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

    /// Every backend, rendezvous and buffered, one sender and several.
    pub(in crate::via) fn delivers(run: Runner<'_>) {
        for backend in Backend::ALL {
            for (o, m) in [(0, 1), (0, 3), (4, 1), (4, 3)] {
                let s = run(&backend, &spec(o, m, 500)).unwrap();
                assert!(s.ns > 0, "{backend} O={o} M={m}");
            }
        }
    }

    /// The global lock and `--pin`; the caller's CPU mask is restored.
    pub(in crate::via) fn pins_with_the_global_lock(run: Runner<'_>) {
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

    /// `--inject-fault`'s duplicate is a violation, named.
    pub(in crate::via) fn catches_a_duplicate(run: Runner<'_>) {
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
                ),
                "{backend}"
            );
        }
    }

    /// `-S` above 8: boxes move intact, and a duplicate among them is caught.
    pub(in crate::via) fn moves_boxes(run: Runner<'_>) {
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

    #[test]
    fn every_backend_delivers() {
        delivers(&run);
    }

    #[test]
    fn global_lock_and_pinning() {
        pins_with_the_global_lock(&run);
    }

    #[test]
    fn a_duplicate_is_caught() {
        catches_a_duplicate(&run);
    }

    #[test]
    fn boxed_messages_move_intact() {
        moves_boxes(&run);
    }
}
