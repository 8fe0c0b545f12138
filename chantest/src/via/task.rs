//! `--via task` and `--via task-mt`: erik quanstrom's workload with tasks instead of threads.
//! M sender tasks each send N values down one channel of O buffers to one receiver task, all
//! on one tokio runtime, with `send_async` and `recv_async`:
//!
//! * `task`: a current-thread runtime on the calling thread, so every task runs on one OS
//!   thread, as Plan 9's threads run in one proc: a task switch is a return to the executor,
//!   and the kernel is entered only when the whole thread has nothing to run. With `--pin` the
//!   thread is pinned to the receiver's CPU.
//! * `task-mt`: a multi-thread (work-stealing) runtime, the executor tasks usually run on; the
//!   receiver is a task like the senders, on whichever worker runs it. Worker threads: tokio's
//!   default, one per CPU this process may use (`std::thread::available_parallelism`: the
//!   affinity mask, fewer under a cgroup CPU quota); with `--pin`, one per CPU of the affinity
//!   mask, the i-th pinned to the i-th CPU.
//!
//! Everything else is `--via chan`'s ([`super::chan`]): the channel and its lock (`--lock`,
//! `--global-lock`), the messages (`-S` above 8: boxes that move and come back through a pool),
//! the check of every value on arrival ([`record::Tracker`]), the clocks. The runtime is built
//! before the run and shut down after it, untimed. Every task first reports ready and then
//! waits at a start gate (a channel: closing it wakes every waiting task); the run is timed
//! from the gate's opening to the last value's arrival, as `chan` times from its barrier. CPU
//! time and context switches are the whole process's, every worker thread included.

use super::chan::{
    closed_early, faulty_seqs, one_too_many, Clocks, Drive, Make, Open, SenderGuard,
};
use super::ends::{AsyncRx, AsyncTx};
use super::record;
use super::spec::Spec;
use crate::affinity::{self, Cpus};
use crate::error::{usage, Error};
use crate::model::Sample;
use chan::Chan;
use locks::{Backend, Strategy};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use tokio::runtime::{Builder, Runtime};

/// Which runtime the tasks run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// tokio's current-thread runtime: every task on one thread (`--via task`).
    CurrentThread,
    /// tokio's multi-thread runtime (`--via task-mt`).
    MultiThread,
}

/// Runs the workload once with tasks on a runtime of `flavor` and `backend`'s lock.
pub(crate) fn run(flavor: Flavor, backend: &Backend, spec: &Spec<'_>) -> Result<Sample, Error> {
    crate::lanes::run(backend, spec, super::chan::Driver::Tasks(flavor))
}

/// Sender and receiver tasks on a runtime of this flavor.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tasks(pub(super) Flavor);

impl Drive for Tasks {
    fn drive<T: Send + 'static, S: Strategy>(
        self,
        c: Chan<T, S>,
        spec: &Spec<'_>,
        make: impl Make<T>,
        open: impl Open<T>,
    ) -> Result<Sample, Error> {
        run_on(self.0, SenderGuard::new(c.clone()), c, spec, make, open)
    }
}

/// The workload with tasks on any channel, given as its ends: M sender tasks, each with a
/// clone of `tx`, and a receiver task with `rx`, on a runtime of `flavor` (see
/// [`Drive::drive`]).
pub(super) fn run_on<T: Send + 'static>(
    flavor: Flavor,
    tx: impl AsyncTx<T>,
    rx: impl AsyncRx<T>,
    spec: &Spec<'_>,
    make: impl Make<T>,
    open: impl Open<T>,
) -> Result<Sample, Error> {
    let _restore = match flavor {
        Flavor::CurrentThread => spec.pin.map(affinity::pin_receiver).transpose()?,
        Flavor::MultiThread => None,
    };
    let rt = runtime(flavor, spec.pin)?;
    let outcome = rt.block_on(run_tasks(tx, rx, spec, make, open));
    // Shutting down drops any task still waiting (after a failed check, the senders the
    // receiver left behind; hanging up has already released them).
    drop(rt);
    let (sample, rx, mut open) = outcome?;
    // Every sender has finished, so anything still in the channel is a value too many.
    if let Some(v) = rx.leftover() {
        let total = spec.senders as u64 * spec.per_sender;
        return Err(one_too_many(v, &mut open, total));
    }
    Ok(sample)
}

/// A runtime of `flavor`, its workers pinned round-robin over `pin` if given.
fn runtime(flavor: Flavor, pin: Option<&Cpus>) -> Result<Runtime, Error> {
    let built = match flavor {
        Flavor::CurrentThread => Builder::new_current_thread().build(),
        Flavor::MultiThread => {
            let mut b = Builder::new_multi_thread();
            if let Some(cpus) = pin {
                let (cpus, next) = (cpus.clone(), AtomicUsize::new(0));
                b.worker_threads(cpus.count()).on_thread_start(move || {
                    // Unpinned is still a valid run, just a noisier one.
                    let _ = affinity::pin_current(cpus.nth(next.fetch_add(1, Relaxed)));
                });
            }
            b.build()
        }
    };
    built.map_err(|e| usage!("cannot start a tokio runtime: {e}"))
}

/// The workload inside the runtime: spawns the senders and the receiver, opens the gate once
/// all are ready, and returns the run's sample, the receiver's end and `open` (to look for a
/// value too many).
async fn run_tasks<T: Send + 'static, R: AsyncRx<T>, G: Open<T>>(
    tx: impl AsyncTx<T>,
    mut rx: R,
    spec: &Spec<'_>,
    make: impl Make<T>,
    mut open: G,
) -> Result<(Sample, R, G), Error> {
    let (m, n, fault) = (spec.senders, spec.per_sender, spec.fault);
    let total = m as u64 * n;
    // Room for every task's "ready", so that saying it never waits.
    let (ready, gate) = (Chan::<()>::new(m + 1), Chan::<()>::new(0));
    let senders: Vec<_> = (0..m)
        .map(|id| {
            let (tx, make) = (tx.clone(), make.clone());
            let (ready, gate) = (ready.clone(), gate.clone());
            tokio::spawn(async move {
                let _ = ready.send_async(()).await;
                // Nothing is ever sent on the gate: closing it is the start.
                let _ = gate.recv_async().await;
                let base = record::tag(id, 0);
                if fault && id == 0 {
                    send_all(&tx, base, faulty_seqs(id, n), make).await;
                } else {
                    send_all(&tx, base, 0..n, make).await;
                }
                tx.finish();
            })
        })
        .collect();
    // Only the sender tasks hold sending ends now.
    tx.finish();
    let receiver = {
        let (ready, gate) = (ready.clone(), gate.clone());
        tokio::spawn(async move {
            let _ = ready.send_async(()).await;
            let _ = gate.recv_async().await;
            let mut tracker = record::Tracker::new(m);
            for received in 0..total {
                let Some(v) = rx.recv().await else {
                    return Err(closed_early(received, total));
                };
                if let Err(e) = open(v).and_then(|tag| tracker.accept(tag)) {
                    // Hanging up releases the senders still sending; they are not awaited.
                    rx.hang_up();
                    return Err(e);
                }
            }
            Ok((Clocks::end(), rx, open))
        })
    };
    for _ in 0..=m {
        // Never closed, and every task sends its "ready" first thing: this cannot fail.
        let _ = ready.recv_async().await;
    }
    // The time is read before the gate opens: on the multi-thread runtime the receiver may
    // run, even finish, before `close` returns.
    let start = Clocks::start();
    gate.close();
    let (end, rx, open) = match receiver.await {
        Ok(Ok(done)) => done,
        Ok(Err(e)) => return Err(e),
        // Shutting the runtime down drops the senders still waiting.
        Err(_) => return Err(Error::Violation("the receiver task panicked".into())),
    };
    for (id, sender) in senders.into_iter().enumerate() {
        if sender.await.is_err() {
            return Err(Error::Violation(format!("sender {id} panicked")));
        }
    }
    Ok((end.since(&start), rx, open))
}

/// Sends `make(base | seq)` for each `seq`, until done or the receiver hangs up (it has found
/// a fault).
async fn send_all<T>(
    tx: &impl AsyncTx<T>,
    base: u64,
    seqs: impl Iterator<Item = u64>,
    make: impl Fn(u64) -> T,
) {
    for seq in seqs {
        if !tx.send(make(base | seq)).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    //! `chan`'s checks ([`super::super::chan::tests`]), with tasks on each runtime.

    use super::super::chan::tests::{self as checks, Runner};
    use super::*;

    /// Runs `check` with tasks on each flavor of runtime.
    fn on_each_runtime(check: fn(Runner<'_>)) {
        for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
            eprintln!("{flavor:?}");
            check(&|backend, spec| run(flavor, backend, spec));
        }
    }

    #[test]
    fn every_backend_delivers() {
        on_each_runtime(checks::delivers);
    }

    #[test]
    fn global_lock_and_pinning() {
        on_each_runtime(checks::pins_with_the_global_lock);
    }

    #[test]
    fn a_duplicate_is_caught() {
        on_each_runtime(checks::catches_a_duplicate);
    }

    #[test]
    fn boxed_messages_move_intact() {
        on_each_runtime(checks::moves_boxes);
    }
}
