//! One round: its channels and threads, the main thread's part (closing channels mid-run and
//! at the end), and the checks once everything is joined and destroyed.

use super::book::Book;
use super::ctx::{Counts, Ctx, Leaving, Outcome};
use super::failure::panic_message;
use super::guard::{guarded, Guard};
use super::ledger::Ledger;
use super::plan::Plan;
use super::probe::Probe;
use super::settings::Settings;
use super::value::{self, accept, Order, Val};
use super::watchdog::{Doing, Op, Watchdog};
use super::worker::Worker;
use crate::error::{usage, Error};
use chan::Chan;
use locks::{Strategy, Visit};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How often the main thread looks at the clock and the quota during a round.
const POLL: Duration = Duration::from_micros(500);

/// What a run lends each of its rounds in turn.
pub(super) struct Lent {
    /// The run's settings.
    pub settings: Settings,
    /// The ledger's storage, reset by each round's book.
    pub ledger: Arc<Ledger>,
    /// The run's watchdog.
    pub watchdog: Arc<Watchdog>,
}

/// Runs the round `plan` (stopping its senders by `end` at the latest) with what the run
/// `lent` it; `replay` is the command that replays it, for the watchdog to print.
pub(super) fn run(
    plan: &Plan,
    end: Instant,
    replay: String,
    lent: &Lent,
) -> Result<Outcome, Error> {
    plan.backend.visit(Round {
        plan,
        end,
        replay,
        lent,
    })
}

struct Round<'a> {
    plan: &'a Plan,
    end: Instant,
    replay: String,
    lent: &'a Lent,
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
        run_with::<S>(plan, chans, probe, self.end, self.replay, self.lent)
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
    lent: &Lent,
) -> Result<Outcome, Error> {
    let book = Arc::new(Book::new(
        plan.seed,
        Arc::clone(&lent.ledger),
        lent.settings,
        plan.tasks.is_some(),
    ));
    let watchdog = &lent.watchdog;
    let start = Instant::now();
    watchdog.round_begin(Arc::clone(&book), plan.to_string(), replay, plan.length);
    let main = watchdog.register("main".into());
    let ctx = Arc::new(Ctx::new(
        plan,
        chans,
        (start + plan.length).min(end),
        Arc::clone(&book),
        Arc::clone(watchdog),
    ));
    let fail = |m| book.fail(m);

    let mut probes = Vec::new();
    if let Some((a, b)) = probe {
        let p = Probe::new(a, b, ctx.deadline, Arc::clone(&book));
        for sends in [true, false] {
            let (p, dog) = (Arc::clone(&p), Arc::clone(watchdog));
            let name = if sends { "probe send" } else { "probe recv" };
            let spawned = thread::Builder::new().name(name.into()).spawn(move || {
                let slot = dog.register(name.into());
                if sends {
                    p.send(&slot)
                } else {
                    p.check(&slot)
                }
            });
            match spawned {
                Ok(h) => probes.push(h),
                Err(e) => {
                    // The checker runs until the prober closes its channels; without a
                    // prober it would never end, so it is left to the process's exit.
                    watchdog.round_end();
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
                    watchdog.round_end();
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
                watchdog.round_end();
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
    while ctx.workers_left() > 0 {
        thread::sleep(POLL);
        let (elapsed, taken) = (start.elapsed(), ctx.taken());
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
            if close_guarded(&book, &ctx.chans[c]).unwrap_or(true) {
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
        if !closed_all && (ctx.senders_left() == 0 || book.failed()) {
            closed_all = true;
            out.closes += close_all(&book, &ctx.chans, &closed_mid_run);
            main.tick();
            main.begin(Doing::op(Op::Wait, None));
        }
    }
    if !closed_all {
        close_all(&book, &ctx.chans, &closed_mid_run);
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
    let clean = !book.failed();
    let mut order = Order::default();
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
            accept(v, c, &mut order);
        }
    }

    main.begin(Doing::op(Op::Teardown, None));
    if let Some(msg) = value::teardown(&book, move || drop(ctx)) {
        fail(format!("destroying the round's channels panicked: {msg}"));
    }
    out.elapsed = start.elapsed();
    for (c, (late, give_backs)) in book.late_arrivals().into_iter().enumerate() {
        out.late += late;
        if late > give_backs {
            fail(format!(
                "c{c}: {late} values arrived after a later value of their sender, more than the \
                 {give_backs} receive futures dropped pending there could have given back"
            ));
        }
    }
    let (tally, problems) = book.ledger.check(&plan.abandoned, &book.leaks());
    out.tally = tally;
    problems.into_iter().for_each(fail);
    (out.panicking_drops, out.reentrant_drops) = book.drop_counts();
    out.wakers = book.wakers.tally();
    let caught: u64 = out.wakers.caught.iter().sum();
    if out.wakers.raised != caught {
        fail(format!(
            "{} hostile waker panics raised, {caught} caught",
            out.wakers.raised
        ));
    }
    out.failures = book.failures.messages();
    watchdog.round_end();
    Ok(out)
}

/// `close()`, guarded: `None` if it unwound from a hostile waker's panic. One close in four
/// runs from a drop while its thread unwinds: there no waker's panic may come out (it would
/// abort the process), and the close must still close.
fn close_guarded<S: Strategy>(book: &Book, c: &Chan<Val<S>, S>) -> Option<bool> {
    if !book.settings.known_panics_on() {
        // Unguarded: a hostile waker wakes without panicking here.
        return Some(c.close());
    }
    if book.fourth_close() {
        let closed = std::cell::Cell::new(None);
        let own = guarded(book, Guard::Other, || {
            value::while_unwinding(|| closed.set(Some(c.close())))
        });
        if !matches!(own, Ok(true)) {
            book.fail("close() from a drop on an unwinding thread let out another panic".into());
        }
        book.wakers.closes_while_unwinding.fetch_add(1, Relaxed);
        return closed.get();
    }
    let closed = guarded(book, Guard::Other, || c.close()).ok();
    if closed.is_none() {
        book.wakers.closes_unwound.fetch_add(1, Relaxed);
    }
    closed
}

/// Closes every channel at the round's end; closes of channels already closed must say so.
/// Returns how many were still open.
fn close_all<S: Strategy>(book: &Book, chans: &[Chan<Val<S>, S>], closed_mid_run: &[bool]) -> u64 {
    let fail = |m| book.fail(m);
    let mut closed = 0;
    for (c, chan) in chans.iter().enumerate() {
        let was_closed = closed_mid_run[c];
        match (close_guarded(book, chan).unwrap_or(!was_closed), was_closed) {
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
    let slot = ctx.watchdog.register(name);
    let _leaving = Leaving::new(ctx, index);
    let mut w = Worker::new(ctx, index, slot);
    w.run();
    w.counts
}
