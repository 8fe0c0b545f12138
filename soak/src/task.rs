//! Workers that are async tasks: the same roles as threads, on a tokio runtime, on the same
//! channels as the round's threads, with `send_async`, `recv_async` (on the `Chan`, now and
//! then on a `Sender` or `Receiver` split from a clone), `Alt::wait_async` and
//! `alt!(async; ..)`, and the hazard only tasks have: a future dropped while it is pending.
//!
//! Each operation waits one of four ways ([`AsyncWait`]): awaited to the end (only where a
//! thread would block: a send, a receive on the receiver's home, an alt that may block),
//! raced against `tokio::time::timeout`, polled a few times with the task's real waker and
//! then dropped, or replaced by its non-blocking form. A dropped future is accounted for by
//! what the library promises (the `chan` crate docs, "Tasks and threads on one channel"):
//! - a send future either sent its value or drops it, once, with itself: the drop runs under
//!   [`drop_watching`], and the value is recorded as given back (not sent) exactly when it was
//!   dropped there, else as sent, so the ledger then finds a value lost, duplicated, dropped
//!   twice or received although given back;
//! - a receive future (or an async alt) that had been handed a value gives it back to its
//!   channel, so the value must still be received, or left in an undrained channel: the
//!   ledger's exactly-once check. The one reordering this allows (another receiver took a
//!   later value of the same sender first) is counted per channel and checked against the
//!   number of such drops ([`Book::late_arrivals`]); a task drains the closed channels when
//!   it finishes, since a value it gave back may have landed in one that every receiver had
//!   already drained;
//! - an async alt dropped while pending leaves every slot as it was, except that one send arm
//!   may have fired (its value sent) and no receive slot may hold a received value
//!   ([`Worker::settle`]).
//!
//! The runtime is current-thread in some rounds and multi-thread in others. `Alt` is not
//! `Send`, so only the tasks on the runtime's local set (every task, on a current-thread
//! runtime) await alts; a task spawned on the runtime's workers uses `Alt::try_wait`. A task
//! never blocks its thread. Whenever it is polled, a task brings in its own watchdog slot
//! ([`Scoped`]), since a thread of a multi-thread runtime polls several tasks.

use super::book::Book;
use super::ctx::{arms_of, Counts, Ctx, Ended, Leaving, Side};
use super::failure::panic_message;
use super::guard::{guarded, Guard, Unwound};
use super::hostile::{self, Polled};
use super::plan::{AsyncWait, Role, LANES};
use super::settings::Fault;
use super::value::{self, accept, check_len, drop_watching, user_drop};
use super::watchdog::{self, Doing, Op, Slot};

/// Of 1024 pending receive futures a task gives up on, how many are leaked (`mem::forget`)
/// rather than dropped: one in 32.
const LEAK_PER_1024: u32 = 32;
use super::worker::Worker;
use chan::{SendError, TryRecvError, TrySendError};
use locks::Strategy;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Runs the round's task workers on a runtime of the kind the plan says, until every one has
/// finished; returns what they counted. Runs on a thread of its own.
pub(super) fn run<S: Strategy>(ctx: Arc<Ctx<S>>) -> Counts {
    let plan = &ctx.plan;
    let Some(tasks) = plan.tasks.as_ref() else {
        return Counts::default();
    };
    let mut builder = match tasks.multi {
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
        None => tokio::runtime::Builder::new_current_thread(),
    };
    let rt = match builder.enable_time().thread_name("soak tasks").build() {
        Ok(rt) => rt,
        Err(e) => {
            ctx.book
                .fail(format!("cannot start the tasks' runtime: {e}"));
            // Count every task out, so that the round ends and reports it.
            for (i, _) in plan
                .roles
                .iter()
                .enumerate()
                .filter(|&(i, _)| tasks.task[i])
            {
                drop(Leaving::new(&ctx, i));
            }
            for c in &ctx.chans {
                c.close();
            }
            return Counts::default();
        }
    };
    let set = tokio::task::LocalSet::new();
    let mut counts = Counts::default();
    set.block_on(&rt, async {
        let mut handles = Vec::new();
        for (i, role) in plan.roles.iter().enumerate() {
            if !tasks.task[i] {
                continue;
            }
            let local = tasks.local[i];
            let name = role.name(i);
            let slot = ctx.watchdog.register_task(name);
            let (ctx, mine) = (Arc::clone(&ctx), Arc::clone(&slot));
            handles.push(match local {
                true => tokio::task::spawn_local(Scoped::new(body::<S, Local>(ctx, i, mine), slot)),
                false => tokio::task::spawn(Scoped::new(body::<S, Spawned>(ctx, i, mine), slot)),
            });
        }
        for h in handles {
            match h.await {
                Ok(c) => counts += c,
                Err(e) if e.is_panic() => {
                    let p = e.into_panic();
                    ctx.book
                        .fail(format!("a task panicked: {}", panic_message(&*p)));
                }
                Err(e) => ctx.book.fail(format!("a task did not finish: {e}")),
            }
        }
    });
    counts
}

/// Task worker `i`'s body, doing alts as `A` says.
async fn body<S: Strategy, A: Alts<S>>(ctx: Arc<Ctx<S>>, i: usize, slot: Arc<Slot>) -> Counts {
    let _leaving = Leaving::new(&ctx, i);
    let mut w = Worker::new(&ctx, i, slot);
    if ctx.book.settings.injected(Fault::StuckTask)
        && ctx
            .plan
            .tasks
            .as_ref()
            .and_then(|t| t.task.iter().position(|&t| t))
            == Some(i)
    {
        let never = chan::Chan::<u8>::new(0);
        w.slot.begin(Doing::op(Op::RecvAsync, None));
        let _ = never.recv_async().await;
    }
    w.run_task::<A>().await;
    w.counts
}

/// A task's future, polled with the task's watchdog slot in place of the polling thread's.
struct Scoped<F> {
    fut: Pin<Box<F>>,
    slot: Arc<Slot>,
}

impl<F: Future> Scoped<F> {
    fn new(fut: F, slot: Arc<Slot>) -> Self {
        Scoped {
            fut: Box::pin(fut),
            slot,
        }
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        /// Puts the thread's own back, however the poll ends.
        struct Restore(Option<Option<Arc<Slot>>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                watchdog::swap_mine(self.0.take().flatten());
            }
        }
        let _restore = Restore(Some(watchdog::swap_mine(Some(Arc::clone(&this.slot)))));
        this.fut.as_mut().poll(cx)
    }
}

/// Waits for `fut` as `how` says, polling it with a waker of `kind` under `guard` (see
/// [`Polled`]); `None` if it was still pending when the task gave up on it (it has then been
/// polled at least once, so it may be queued: dropping it cancels), `Some(Err(_))` if a poll
/// unwound from a hostile waker's panic (the future is then to be dropped, as if cancelled).
async fn drive<F: Future, S: Strategy>(
    book: &Arc<Book>,
    fut: Pin<&mut F>,
    how: AsyncWait,
    d: Duration,
    kind: hostile::Kind<S>,
    guard: Guard,
) -> Option<Result<F::Output, Unwound>> {
    let mut fut = std::pin::pin!(Polled::new(book, fut, kind, guard));
    match how {
        AsyncWait::Await | AsyncWait::Try => Some(fut.await),
        AsyncWait::Race => tokio::time::timeout(d, fut).await.ok(),
        AsyncWait::Polls(n) => {
            for i in 0..n {
                if i > 0 {
                    tokio::task::yield_now().await;
                }
                if let Poll::Ready(out) = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await {
                    return Some(out);
                }
            }
            None
        }
    }
}

/// How a task does its alts: awaited on the local set, only `try_wait` elsewhere (a future that
/// holds an `Alt` across an await is not `Send`, so the two are different future types).
trait Alts<S: Strategy> {
    /// An alt of `side`'s arms.
    fn alt(w: &mut Worker<'_, S>, side: Side) -> impl Future<Output = ()>;
    /// `alt!` over receive arms, one on `home` if there is one.
    fn macro_alt(w: &mut Worker<'_, S>, home: Option<usize>) -> impl Future<Output = ()>;
}

/// A task on the runtime's local set.
struct Local;
/// A task spawned on the runtime's workers.
struct Spawned;

impl<S: Strategy> Alts<S> for Local {
    fn alt(w: &mut Worker<'_, S>, side: Side) -> impl Future<Output = ()> {
        w.alt_task(side)
    }
    fn macro_alt(w: &mut Worker<'_, S>, home: Option<usize>) -> impl Future<Output = ()> {
        w.macro_task(home)
    }
}

impl<S: Strategy> Alts<S> for Spawned {
    fn alt(w: &mut Worker<'_, S>, side: Side) -> impl Future<Output = ()> {
        w.alt_op_with(side, true);
        std::future::ready(())
    }
    fn macro_alt(w: &mut Worker<'_, S>, home: Option<usize>) -> impl Future<Output = ()> {
        // A receiver's alts have receive arms only: it never sends.
        w.alt_op_with(home.map_or(Side::Mixed, |home| Side::Recv { home }), true);
        std::future::ready(())
    }
}

/// Counts a dropped alt's receive channels as places a value may go back to (each once: an
/// alt fires one arm).
fn gave_back_maybe(book: &Book, chans: impl Iterator<Item = usize>) {
    let mut seen = [false; super::plan::MAX_CHANS];
    for c in chans {
        if !std::mem::replace(&mut seen[c], true) {
            book.may_have_given_back(c);
        }
    }
}

impl<S: Strategy> Worker<'_, S> {
    /// Runs the worker's role as a task to the end, doing alts as `A` says.
    async fn run_task<A: Alts<S>>(&mut self) {
        match self.ctx.plan.roles[self.index] {
            Role::Receiver { home } => self.recv_loop_task::<A>(home).await,
            role => {
                while !self.sending_done() {
                    self.maybe_reclone();
                    let what = match role {
                        Role::Mixed => self.rng.weighted(&self.ctx.plan.mix.mixed),
                        _ => 1,
                    };
                    match what {
                        0 => A::alt(self, Side::Mixed).await,
                        1 => self.send_task::<A>().await,
                        _ => self.recv_task::<A>(None).await,
                    }
                    // Operations that complete at once never yield by themselves.
                    tokio::task::yield_now().await;
                }
                self.finish_sending();
            }
        }
        self.drain_closed();
        self.slot.begin(Doing::op(Op::Done, None));
    }

    /// How the next async operation waits.
    fn how(&mut self) -> AsyncWait {
        let Some(t) = self.ctx.plan.tasks.as_ref() else {
            return AsyncWait::Try;
        };
        match self.rng.weighted(&t.wait) {
            0 => AsyncWait::Await,
            1 => AsyncWait::Race,
            2 => AsyncWait::Polls(1 + self.rng.below(u64::from(t.polls)) as u32),
            _ => AsyncWait::Try,
        }
    }

    /// The waker the next async operation's future is polled with: the task's own, or (as the
    /// round's odds and `--hostile-wakers` say) one that panics or re-enters a channel: mostly
    /// `own`, the channel the future waits on, whose waker is being run.
    fn waker_kind(&mut self, own: Option<usize>) -> hostile::Kind<S> {
        let Some(t) = self.ctx.plan.tasks.as_ref() else {
            return hostile::Kind::Plain;
        };
        let [panics, reenters] = t.hostile;
        let settings = &self.book().settings;
        if settings.panics_on() && self.rng.chance(panics) {
            return hostile::Kind::Panics(1 + self.rng.below(3) as u32);
        }
        if settings.reentry_on() && self.rng.chance(reenters) {
            let target = match own {
                Some(c) if self.rng.below(4) > 0 => c,
                _ => self.rng.index(self.chans.len()),
            };
            return hostile::Kind::Reenter(self.reentry(target));
        }
        hostile::Kind::Plain
    }

    /// The timer of a raced operation: the round's short timeouts, or a millisecond or two
    /// (tokio's timer resolution).
    fn race_timeout(&mut self) -> Duration {
        match self.rng.chance(256) {
            true => Duration::from_millis(1 + self.rng.below(2)),
            false => self.timeout(),
        }
    }

    /// One send of a kind drawn with the round's weights, as a task.
    async fn send_task<A: Alts<S>>(&mut self) {
        if self.rng.weighted(&self.ctx.plan.mix.send) == 4 {
            return A::alt(self, Side::Send).await;
        }
        let Some(c) = self.live_chan() else { return };
        let lane = self.rng.index(LANES);
        let Some(v) = self.take_value(lane, c) else {
            return;
        };
        let id = v.id();
        let how = self.how();
        if how == AsyncWait::Try {
            self.slot.begin(Doing::op(Op::NbSend, Some(c)));
            return match guarded(self.book(), Guard::Send(id), || self.chans[c].nbsend(v)) {
                Ok(Ok(())) => self.sent(id),
                Ok(Err(TrySendError::Full(v))) => self.put_back(lane, c, v),
                Ok(Err(TrySendError::Closed(v))) => self.closed(c, v),
                Err(u) => self.sent_unwound(id, u),
            };
        }
        let d = self.race_timeout();
        // Now and then through a `Sender` of a split clone (its `Receiver` dropped at once: the
        // round's handles keep the channel open).
        let (chan, tx) = (self.chans[c].clone(), self.chans[c].clone().split().0);
        let via_sender = self.rng.chance(256);
        let kind = self.waker_kind(Some(c));
        self.counts.async_ops += 1;
        self.slot.begin(Doing::op(Op::SendAsync, Some(c)));
        let mut fut = Box::pin(match via_sender {
            true => tx.send_async(v),
            false => chan.send_async(v),
        });
        match drive(&self.ctx.book, fut.as_mut(), how, d, kind, Guard::Send(id)).await {
            Some(Ok(Ok(()))) => self.sent(id),
            Some(Ok(Err(SendError(v)))) => self.closed(c, v),
            gave_up => {
                // Pending, or its poll unwound from a waker's panic (having dropped the value
                // unsent, or not): dropped as if cancelled.
                let unsent = matches!(gave_up, Some(Err(Unwound { unsent: true, .. })));
                self.slot.begin(Doing::op(Op::Cancel, Some(c)));
                if drop_watching(self.book(), id, || drop(fut)) || unsent {
                    self.book().ledger.returned(id);
                    self.counts.cancelled_unsent += 1;
                } else {
                    self.sent(id);
                    self.counts.cancelled_sent += 1;
                }
            }
        }
    }

    /// One receive of a kind drawn with the round's weights, as a task; awaited to the end
    /// only on `home`.
    async fn recv_task<A: Alts<S>>(&mut self, home: Option<usize>) {
        match self.rng.weighted(&self.ctx.plan.mix.recv) {
            6 => {
                let side = home.map_or(Side::Mixed, |home| Side::Recv { home });
                return A::alt(self, side).await;
            }
            7 => return A::macro_alt(self, home).await,
            8 => {
                let c = self.recv_chan();
                self.slot.begin(Doing::op(Op::Len, Some(c)));
                return check_len(self.book(), &self.chans[c], c);
            }
            _ => {}
        }
        let (c, how) = match (self.how(), home) {
            (AsyncWait::Await, Some(h)) => (h, AsyncWait::Await),
            (AsyncWait::Await, None) => (self.recv_chan(), AsyncWait::Race),
            (how, _) => (self.recv_chan(), how),
        };
        if how == AsyncWait::Try {
            self.slot.begin(Doing::op(Op::NbRecv, Some(c)));
            return match guarded(self.book(), Guard::Recv(c), || self.chans[c].nbrecv()) {
                Ok(Ok(v)) => accept(v, c, &mut self.order),
                Ok(Err(TryRecvError::Empty | TryRecvError::Closed)) | Err(_) => {}
            };
        }
        let d = self.race_timeout();
        let (chan, rx) = (self.chans[c].clone(), self.chans[c].clone().split().1);
        let via_receiver = self.rng.chance(256);
        let kind = self.waker_kind(Some(c));
        self.counts.async_ops += 1;
        self.slot.begin(Doing::op(Op::RecvAsync, Some(c)));
        let mut fut = Box::pin(match via_receiver {
            true => rx.recv_async(),
            false => chan.recv_async(),
        });
        match drive(&self.ctx.book, fut.as_mut(), how, d, kind, Guard::Recv(c)).await {
            Some(Ok(Ok(v)))
                if self.book().settings.injected(Fault::DropReceived) && !self.fault_planted =>
            {
                self.fault_planted = true;
                user_drop(v);
            }
            Some(Ok(Ok(v))) => accept(v, c, &mut self.order),
            Some(Ok(Err(_))) => {}
            // Still pending: now and then leaked rather than dropped. A value handed to it
            // stays in it for ever, and must hold up nobody (chan's rule for leaked futures).
            None if self.rng.chance(LEAK_PER_1024) => {
                self.slot.begin(Doing::op(Op::Cancel, Some(c)));
                self.book().leaked_receive(c);
                std::mem::forget(fut);
                self.counts.leaked_recvs += 1;
            }
            // Pending, or its poll unwound from a waker's panic (a value it had taken then
            // dropped with the unwinding, counted): dropped as if cancelled.
            None | Some(Err(_)) => {
                self.slot.begin(Doing::op(Op::Cancel, Some(c)));
                // Counted first: `len` may show the value given back at once.
                self.book().may_have_given_back(c);
                // A value it gives back may wake a hostile waker, which may panic: the value
                // must be in the channel by then (and nothing may still write to the future).
                // One it may not give back is dropped, and its drop may panic too.
                let _ = value::cancel_receive(self.book(), || drop(fut));
                self.counts.cancelled_recvs += 1;
            }
        }
    }

    /// An alt as a task on the local set: awaited (or raced, or polled and dropped).
    async fn alt_task(&mut self, side: Side) {
        let Some((arms, mut slots, may_block)) = self.alt_arms(side) else {
            return;
        };
        let how = match self.how() {
            AsyncWait::Await if !may_block => AsyncWait::Race,
            how => how,
        };
        let d = self.race_timeout();
        let biased = self.rng.chance(self.ctx.plan.mix.biased);
        let kind = self.waker_kind(arms.first().map(|a| a.chan));
        self.counts.alts += 1;
        let mut cancelled = false;
        let fired = {
            let mut alt = self.alt_over(&arms, &mut slots, biased);
            if how == AsyncWait::Try {
                self.slot.begin(Doing::alt(Op::AltTryWait, arms_of(&arms)));
                alt.try_wait()
            } else {
                self.slot.begin(Doing::alt(Op::AltAsync, arms_of(&arms)));
                let mut fut = Box::pin(alt.wait_async());
                // Unguarded: the alt's own poll spares its hostile waker (and any partner's).
                let fired = drive(&self.ctx.book, fut.as_mut(), how, d, kind, Guard::Off)
                    .await
                    .and_then(Result::ok);
                if fired.is_none() {
                    self.slot.begin(Doing::alt(Op::Cancel, arms_of(&arms)));
                    gave_back_maybe(self.book(), arms.iter().filter(|a| !a.send).map(|a| a.chan));
                    let _ = value::cancel_receive(self.book(), || drop(fut));
                    cancelled = true;
                }
                fired
            }
        };
        if how != AsyncWait::Try {
            self.counts.async_ops += 1;
        }
        if cancelled {
            self.counts.cancelled_alts += 1;
        }
        let ended = match cancelled {
            true => Ended::Cancelled,
            false => Ended::Returned,
        };
        self.settle(&arms, slots, fired, ended);
    }

    /// `alt!(async; ..)` over two receive arms: awaited when one is `home`, else raced or
    /// polled and dropped.
    async fn macro_task(&mut self, home: Option<usize>) {
        let a = home.unwrap_or_else(|| self.recv_chan());
        let b = self.recv_chan();
        let how = match (self.how(), home) {
            (AsyncWait::Await, None) | (AsyncWait::Try, _) => AsyncWait::Race,
            (how, _) => how,
        };
        let d = self.race_timeout();
        let kind = self.waker_kind(Some(a));
        self.counts.alts += 1;
        self.counts.async_ops += 1;
        let arms = [(false, a), (false, b)];
        self.slot.begin(Doing::alt(Op::AltAsync, arms.into_iter()));
        let (ca, cb) = (self.chans[a].clone(), self.chans[b].clone());
        let mut fut = Box::pin(async move {
            chan::alt! { async;
                recv(ca) -> r => { r.ok().map(|v| (v, a)) },
                recv(cb) -> r => { r.ok().map(|v| (v, b)) },
            }
        });
        match drive(&self.ctx.book, fut.as_mut(), how, d, kind, Guard::Off)
            .await
            .and_then(Result::ok)
        {
            Some(Some((v, c))) => accept(v, c, &mut self.order),
            Some(None) => {}
            None => {
                self.slot.begin(Doing::alt(Op::Cancel, arms.into_iter()));
                gave_back_maybe(self.book(), [a, b].into_iter());
                let _ = value::cancel_receive(self.book(), || drop(fut));
                self.counts.cancelled_alts += 1;
            }
        }
    }

    /// A receiver's loop (see [`super::recv`]) as a task.
    async fn recv_loop_task<A: Alts<S>>(&mut self, mut home: usize) {
        while let Some(h) = self.next_home(home) {
            home = h;
            self.maybe_reclone();
            self.recv_task::<A>(Some(home)).await;
            tokio::task::yield_now().await;
        }
    }

    /// Takes what is left in every closed channel not left undrained: a value this task's
    /// dropped receive gave back may have landed there after every receiver had drained it.
    fn drain_closed(&mut self) {
        for c in 0..self.chans.len() {
            if self.ctx.plan.abandoned[c] || !self.chans[c].is_closed() {
                continue;
            }
            self.slot.begin(Doing::op(Op::Drain, Some(c)));
            while let Ok(v) = self.chans[c].nbrecv() {
                accept(v, c, &mut self.order);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chan::Chan;
    use std::future::{poll_fn, Future};
    use std::task::Poll;

    /// The reordering the soak allows, shown on its own: a receive future handed value 1 and
    /// dropped after another receiver took value 2 gives 1 back, and that receiver then sees
    /// the sender's values out of order. No value is lost or duplicated.
    #[test]
    fn a_dropped_receive_gives_back_after_a_later_value() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let c = Chan::<u32>::new(1);
        rt.block_on(async {
            let mut f = Box::pin(c.recv_async());
            let first = poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx))).await;
            assert!(first.is_pending());
            c.nbsend(1).expect("handed to the waiting receive future");
            c.nbsend(2).expect("buffered");
            assert_eq!(c.nbrecv(), Ok(2));
            drop(f);
            assert_eq!(c.nbrecv(), Ok(1));
        });
    }
}
