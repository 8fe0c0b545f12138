//! One round: its channels and threads, the main thread's part (closing channels mid-run and
//! at the end), and the checks once everything is joined and destroyed.

use super::failure::{self, fail, panic_message};
use super::hostile::{self, guarded, Guard};
use super::ledger::{self, Tally};
use super::plan::{Plan, Role};
use super::probe::Probe;
use super::value::{self, accept, Val};
use super::watchdog::{self, Doing, Op};
use super::worker::{Counts, Worker};
use crate::error::{usage, Error};
use chan::Chan;
use locks::{Strategy, Visit};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How often the main thread looks at the clock and the quota during a round.
const POLL: Duration = Duration::from_micros(500);

/// What the threads of a round share.
pub(super) struct Ctx<S: Strategy> {
    /// The round's plan.
    pub plan: Plan,
    /// The round's channels (the main thread's handles; workers clone their own).
    pub chans: Vec<Chan<Val<S>, S>>,
    /// When senders stop.
    pub deadline: Instant,
    taken: AtomicU64,
    senders_left: AtomicUsize,
    workers_left: AtomicUsize,
}

impl<S: Strategy> Ctx<S> {
    /// Takes up to `n` values of the round's quota; how many were granted.
    pub(super) fn take_quota(&self, n: u64) -> u64 {
        let before = self.taken.fetch_add(n, Relaxed);
        n.min(self.plan.quota.saturating_sub(before))
    }
}

/// What a round came to.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// From the first thread's start to the last value's drop.
    pub elapsed: Duration,
    /// The ledger's count of the round's values.
    pub tally: Tally,
    /// The workers' counts.
    pub counts: Counts,
    /// Closes that closed an open channel.
    pub closes: u64,
    /// Of those, the ones made while values were still being sent.
    pub mid_run_closes: u64,
    /// Drops that panicked on purpose, caught.
    pub panicking_drops: u64,
    /// Drops that re-entered a channel.
    pub reentrant_drops: u64,
    /// Values the linearizability probe checked.
    pub probe_values: u64,
    /// Values that arrived after a later value of their sender, given back by a dropped
    /// receive future (see [`value::late_arrivals`]).
    pub late: u64,
    /// What hostile wakers did.
    pub wakers: hostile::Tally,
    /// The first few failed checks, and how many there were in all.
    pub failures: (Vec<String>, usize),
}

/// Runs the round `plan` (stopping its senders by `end` at the latest); `replay` is the
/// command that replays it, for the watchdog to print.
pub(super) fn run(plan: &Plan, end: Instant, replay: String) -> Result<Outcome, Error> {
    plan.backend.visit(Round { plan, end, replay })
}

struct Round<'a> {
    plan: &'a Plan,
    end: Instant,
    replay: String,
}

impl Visit for Round<'_> {
    type Output = Result<Outcome, Error>;

    fn visit<S: Strategy>(self, params: S::Params) -> Self::Output {
        let plan = self.plan;
        let chans = plan
            .caps
            .iter()
            .map(|&cap| make(plan, cap, params))
            .collect();
        let probe = plan
            .probe
            .map(|(a, b)| (make(plan, a, params), make(plan, b, params)));
        run_with::<S>(plan, chans, probe, self.end, self.replay)
    }
}

/// A channel with the round's kind of lock.
fn make<T, S: Strategy>(plan: &Plan, cap: usize, params: S::Params) -> Chan<T, S> {
    match plan.global {
        true => Chan::with_global_lock(cap, params),
        false => Chan::with_params(cap, params),
    }
}

fn run_with<S: Strategy>(
    plan: &Plan,
    chans: Vec<Chan<Val<S>, S>>,
    probe: Option<(Chan<u64, S>, Chan<u64, S>)>,
    end: Instant,
    replay: String,
) -> Result<Outcome, Error> {
    ledger::global().reset();
    failure::take();
    value::take_drop_counts();
    hostile::take();
    value::reset_thread();
    value::round_begin(plan.tasks.is_some());
    let start = Instant::now();
    watchdog::round_begin(plan.to_string(), replay, plan.length);
    let main = watchdog::register("main".into());
    let ctx = Arc::new(Ctx {
        plan: plan.clone(),
        chans,
        deadline: (start + plan.length).min(end),
        taken: AtomicU64::new(0),
        senders_left: AtomicUsize::new(plan.sending_threads()),
        workers_left: AtomicUsize::new(plan.roles.len()),
    });

    let mut probes = Vec::new();
    if let Some((a, b)) = probe {
        let p = Probe::new(a, b, ctx.deadline);
        for sends in [true, false] {
            let p = Arc::clone(&p);
            let name = if sends { "probe send" } else { "probe recv" };
            let spawned = thread::Builder::new().name(name.into()).spawn(move || {
                if sends {
                    p.send()
                } else {
                    p.check()
                }
            });
            match spawned {
                Ok(h) => probes.push(h),
                Err(e) => {
                    // The checker runs until the prober closes its channels; without a
                    // prober it would never end, so it is left to the process's exit.
                    watchdog::round_end();
                    return Err(usage!("soak: cannot start thread `{name}`: {e}"));
                }
            }
        }
    }

    let mut handles = Vec::with_capacity(plan.roles.len());
    let tasks = match plan.tasks {
        Some(_) => {
            let shared = Arc::clone(&ctx);
            let spawned = thread::Builder::new()
                .name("soak tasks".into())
                .spawn(move || super::task::run(shared));
            match spawned {
                Ok(h) => Some(h),
                Err(e) => {
                    watchdog::round_end();
                    return Err(usage!("soak: cannot start the tasks' thread: {e}"));
                }
            }
        }
        None => None,
    };
    for (i, role) in plan.roles.iter().enumerate() {
        if plan.is_task(i) {
            continue;
        }
        let name = role.name(i);
        let shared = Arc::clone(&ctx);
        let spawned = thread::Builder::new()
            .name(name.clone())
            .spawn(move || work(&shared, i, name));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                // Closing lets the threads already started finish, so that none is left
                // blocked on a partner that was never born.
                ctx.chans.iter().for_each(|c| {
                    c.close();
                });
                handles.into_iter().for_each(|h| drop(h.join()));
                tasks.into_iter().for_each(|h| drop(h.join()));
                watchdog::round_end();
                return Err(usage!(
                    "soak: cannot start thread {i} of {}: {e}",
                    plan.roles.len()
                ));
            }
        }
    }

    let mut out = Outcome::default();
    let mut closed_mid_run = vec![false; plan.caps.len()];
    let mut due = vec![true; plan.closes.len()];
    let mut closed_all = false;
    main.begin(Doing::op(Op::Wait, None));
    while ctx.workers_left.load(Relaxed) > 0 {
        thread::sleep(POLL);
        let (elapsed, taken) = (start.elapsed(), ctx.taken.load(Relaxed));
        for (close, due) in plan.closes.iter().zip(due.iter_mut()) {
            let at = close.at_permille;
            if !*due
                || closed_all
                || (taken * 1000 < plan.quota * at && elapsed * 1000 < plan.length * at as u32)
            {
                continue;
            }
            *due = false;
            let c = close.chan;
            main.begin(Doing::op(Op::Close, Some(c)));
            // A hostile waker `close` runs may panic out of it; it closed all the same (and
            // must still have woken everyone else).
            if close_guarded(&ctx.chans[c]).unwrap_or(true) {
                out.closes += 1;
                out.mid_run_closes += 1;
                closed_mid_run[c] = true;
                main.tick();
            } else {
                fail(format!(
                    "c{c}: close() said it was already closed; nobody had closed it"
                ));
            }
            main.begin(Doing::op(Op::Wait, None));
        }
        if !closed_all && (ctx.senders_left.load(Relaxed) == 0 || failure::failed()) {
            closed_all = true;
            out.closes += close_all(&ctx.chans, &closed_mid_run);
            main.tick();
            main.begin(Doing::op(Op::Wait, None));
        }
    }
    if !closed_all {
        close_all(&ctx.chans, &closed_mid_run);
    }

    main.begin(Doing::op(Op::Join, None));
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(counts) => out.counts += counts,
            Err(p) => fail(format!("worker {i} panicked: {}", panic_message(&*p))),
        }
    }
    if let Some(h) = tasks {
        match h.join() {
            Ok(counts) => out.counts += counts,
            Err(p) => fail(format!(
                "the tasks' thread panicked: {}",
                panic_message(&*p)
            )),
        }
    }
    for h in probes {
        match h.join() {
            Ok(n) => out.probe_values += n,
            Err(p) => fail(format!("a probe thread panicked: {}", panic_message(&*p))),
        }
    }

    // Every receiver drained every channel not left undrained before it finished; anything
    // still there was missed (unless a failure sent the receivers home early).
    let clean = !failure::failed();
    main.begin(Doing::op(Op::Drain, None));
    for (c, chan) in ctx.chans.iter().enumerate() {
        if plan.abandoned[c] {
            continue;
        }
        while let Ok(v) = chan.nbrecv() {
            if clean {
                fail(format!(
                    "c{c}: value #{} was still buffered after every receiver had drained the \
                     closed channel to its end",
                    v.id()
                ));
            }
            accept(v, c);
        }
    }

    main.begin(Doing::op(Op::Teardown, None));
    if let Some(msg) = value::teardown(move || drop(ctx)) {
        fail(format!("destroying the round's channels panicked: {msg}"));
    }
    out.elapsed = start.elapsed();
    for (c, (late, give_backs)) in value::late_arrivals().into_iter().enumerate() {
        out.late += late;
        if late > give_backs {
            fail(format!(
                "c{c}: {late} values arrived after a later value of their sender, more than the \
                 {give_backs} receive futures dropped pending there could have given back"
            ));
        }
    }
    let (tally, problems) = ledger::global().check(&plan.abandoned, &value::leaks());
    out.tally = tally;
    problems.into_iter().for_each(fail);
    (out.panicking_drops, out.reentrant_drops) = value::take_drop_counts();
    out.wakers = hostile::take();
    let caught: u64 = out.wakers.caught.iter().sum();
    if out.wakers.raised != caught {
        fail(format!(
            "{} hostile waker panics raised, {caught} caught",
            out.wakers.raised
        ));
    }
    out.failures = failure::take();
    watchdog::round_end();
    Ok(out)
}

/// `close()`, guarded: `None` if it unwound from a hostile waker's panic. One close in four
/// runs from a drop while its thread unwinds: there no waker's panic may come out (it would
/// abort the process), and the close must still close.
fn close_guarded<S: Strategy>(c: &Chan<Val<S>, S>) -> Option<bool> {
    static TURN: AtomicU64 = AtomicU64::new(0);
    if !hostile::known_panics_on() {
        // Unguarded: a hostile waker wakes without panicking here.
        return Some(c.close());
    }
    if TURN.fetch_add(1, Relaxed) % 4 == 3 {
        let closed = std::cell::Cell::new(None);
        let own = guarded(Guard::Other, || {
            value::while_unwinding(|| closed.set(Some(c.close())))
        });
        if !matches!(own, Ok(true)) {
            fail("close() from a drop on an unwinding thread let out another panic".into());
        }
        hostile::closed_while_unwinding();
        return closed.get();
    }
    let closed = guarded(Guard::Other, || c.close()).ok();
    if closed.is_none() {
        hostile::close_unwound();
    }
    closed
}

/// Closes every channel at the round's end; closes of channels already closed must say so.
/// Returns how many were still open.
fn close_all<S: Strategy>(chans: &[Chan<Val<S>, S>], closed_mid_run: &[bool]) -> u64 {
    let mut closed = 0;
    for (c, chan) in chans.iter().enumerate() {
        let was_closed = closed_mid_run[c];
        match (close_guarded(chan).unwrap_or(!was_closed), was_closed) {
            (true, false) => closed += 1,
            (false, true) => {}
            (true, true) => fail(format!("c{c}: a second close() said it closed the channel")),
            (false, false) => fail(format!(
                "c{c}: close() said it was already closed; nobody had closed it"
            )),
        }
        if !chan.is_closed() || chan.closing().is_none() {
            fail(format!("c{c}: still reported open after close()"));
        }
    }
    closed
}

/// A worker thread's body.
fn work<S: Strategy>(ctx: &Ctx<S>, index: usize, name: String) -> Counts {
    let slot = watchdog::register(name);
    value::reset_thread();
    let _leaving = Leaving::new(ctx, index);
    let mut w = Worker::new(ctx, index, slot);
    w.run();
    w.counts
}

/// Counts a worker (thread or task) out, however it leaves. One that panics closes every
/// channel first, so that no thread waits forever for it: the round then ends and reports the
/// panic.
pub(super) struct Leaving<'a, S: Strategy> {
    ctx: &'a Ctx<S>,
    index: usize,
}

impl<'a, S: Strategy> Leaving<'a, S> {
    /// Worker `index`'s, to be dropped when it leaves.
    pub(super) fn new(ctx: &'a Ctx<S>, index: usize) -> Self {
        Leaving { ctx, index }
    }
}

impl<S: Strategy> Drop for Leaving<'_, S> {
    fn drop(&mut self) {
        if thread::panicking() {
            fail(format!(
                "thread `{}` panicked (message above) during {}",
                failure::thread_name(),
                watchdog::current()
            ));
            for c in &self.ctx.chans {
                c.close();
            }
        }
        if matches!(self.ctx.plan.roles[self.index], Role::Sender | Role::Mixed) {
            self.ctx.senders_left.fetch_sub(1, Relaxed);
        }
        self.ctx.workers_left.fetch_sub(1, Relaxed);
    }
}
