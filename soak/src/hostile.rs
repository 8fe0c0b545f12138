//! Hostile wakers: the task rounds' futures are polled with wakers that panic in `wake` and
//! `wake_by_ref`, or that re-enter a channel (`len`, `nbsend`, `nbrecv`) from inside them.
//!
//! A waker is user code that the channel runs wherever a partner is claimed: in a thread's
//! `send` or `recv`, in another task's poll, in `close`, in a future's own poll (waking
//! itself), in a cancelled future's drop. A panic there is legal: it unwinds out of whichever
//! channel call ran the wake, and the library must still lose, duplicate or resurrect no
//! value and leave nobody asleep. So:
//! - a panicking waker wakes its task first (the task's real waker: nothing then hangs on the
//!   panic), then panics with [`WakerPanic`], on its first one to three wakes;
//! - it panics only where the soak catches it: inside [`guarded`], which wraps the channel
//!   calls of thread workers (sends, receives, alts, closes) and the polls and drops of task
//!   send and receive futures. Elsewhere (`alt!`, async alts' polls, drains, a value's
//!   re-entrant drop, another hostile waker) the wake is spared and counted, so that no panic
//!   unwinds through code that does not expect one;
//! - what the unwinding call did is accounted for: a send whose value was dropped while it
//!   unwound did not send it (given back), else it sent it; a receive that unwound after
//!   taking a value dropped it (received, and dropped by the unwinding: counted, no order
//!   check); an alt that unwound fired one arm, unreported; a close that unwound still closed;
//!   a future whose poll unwound is dropped as if cancelled. Any other value dropped while
//!   unwinding is reported by the ledger;
//! - a re-entrant waker wakes its task, then re-enters its channel as a re-entrant value's drop
//!   does (bounded depth, values it receives checked, echoes it sends in the ledger).
//!
//! `--hostile-wakers` selects them: `all`, `spare-known` (all, but no panic out of `close()`
//! or out of a cancelled receive future's drop; the default for now, see [`DEFAULT`]),
//! `panic`, `reenter` or `none`; each task round draws how many of its futures get each kind
//! ([`super::plan::Tasks::hostile`]).

use super::value::{self, Reentry};
use chan::Chan;
use locks::Strategy;
use std::cell::Cell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// The panic a hostile waker raises on purpose.
#[derive(Debug)]
pub(super) struct WakerPanic;

/// Which hostile wakers the task rounds get (`--hostile-wakers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Which {
    /// Panicking and re-entrant wakers.
    All,
    /// Panicking and re-entrant wakers, but none panics out of `close()` or out of a
    /// cancelled receive future's drop: the two places issue 18 found unsound in the library
    /// of its day (both fixed since), spared to soak a library from before the fixes.
    SpareKnown,
    /// Panicking wakers only.
    Panic,
    /// Re-entrant wakers only.
    Reenter,
    /// The executor's own wakers only.
    None,
}

/// `--hostile-wakers`'s default: every hostile waker. (`spare-known` spares the two places
/// where issue 18 found the library unsound: a `close()` that stopped at the first panicking
/// waker, and a cancelled receive future's drop that freed memory its claimer still wrote.
/// Both are fixed; the mode stays for comparing against an older library.)
pub(super) const DEFAULT: Which = Which::All;

static WHICH: AtomicU8 = AtomicU8::new(DEFAULT as u8);
static STRICT: AtomicBool = AtomicBool::new(false);

/// `--strict-wakers`: a value that a receive or an alt took and then dropped while it unwound
/// from a waker's panic counts as lost (not as received), for a library that gives such a
/// value back to its channel before the panic goes on.
pub(super) fn strict(on: bool) {
    STRICT.store(on, Relaxed);
}

/// Selects the hostile wakers for the rest of the run.
pub(super) fn select(which: Which) {
    WHICH.store(which as u8, Relaxed);
}

fn which() -> Which {
    match WHICH.load(Relaxed) {
        0 => Which::All,
        1 => Which::SpareKnown,
        2 => Which::Panic,
        3 => Which::Reenter,
        _ => Which::None,
    }
}

/// Whether panicking wakers are on.
pub(super) fn panics_on() -> bool {
    matches!(which(), Which::All | Which::SpareKnown | Which::Panic)
}

/// Whether a panicking waker may panic out of `close()` and out of a cancelled receive
/// future's drop (see [`Which::SpareKnown`]).
pub(super) fn known_panics_on() -> bool {
    matches!(which(), Which::All | Which::Panic)
}

/// Whether re-entrant wakers are on.
pub(super) fn reentry_on() -> bool {
    matches!(which(), Which::All | Which::SpareKnown | Which::Reenter)
}

/// The flag that selects what is on, for a replay line; empty for the default.
pub(super) fn flag() -> String {
    let strict = match STRICT.load(Relaxed) {
        true => " --strict-wakers",
        false => "",
    };
    let which = match which() {
        w if w == DEFAULT => "",
        Which::All => " --hostile-wakers all",
        Which::SpareKnown => " --hostile-wakers spare-known",
        Which::Panic => " --hostile-wakers panic",
        Which::Reenter => " --hostile-wakers reenter",
        Which::None => " --hostile-wakers none",
    };
    format!("{which}{strict}")
}

/// What the running thread's guarded channel call is: what a value dropped while it unwinds
/// means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Guard {
    /// No guard: hostile wakers wake without panicking.
    Off,
    /// A send of value `id`: if that value is dropped (at all) during the call, it was not
    /// sent.
    Send(u32),
    /// A receive from channel `c`: a value dropped while the call unwinds had been taken from
    /// the channel (received, then dropped by the unwinding).
    Recv(usize),
    /// A thread's alt with receive arms on the channels of this bit mask: a value of one of
    /// them dropped while the alt unwinds (with the `Alt`, whose arm still held it: the value
    /// goes to the slot only after the partner's wake) had been received, as for
    /// [`Guard::Recv`]. See [`super::alt::Ended::Unwound`].
    Alt(u8),
    /// A call that moves no value of its own (a close, a future's drop): a value dropped while
    /// it unwinds is the ledger's to report.
    Other,
}

thread_local! {
    static GUARD: Cell<Guard> = const { Cell::new(Guard::Off) };
    /// Values received and dropped while this thread's guarded call unwound.
    static UNWOUND_HERE: Cell<u32> = const { Cell::new(0) };
    /// Waker panics raised on this thread during its guarded call: one call may run several
    /// (a `close` wakes every waiter and resumes the first panic; a receive whose wake
    /// panics gives its value back, which may wake another), and all end in its one unwind.
    static RAISED_HERE: Cell<u64> = const { Cell::new(0) };
}

static RAISED: AtomicU64 = AtomicU64::new(0);
/// Caught by guarded sends, receives, alts, and the rest (closes, future drops).
static CAUGHT: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
static SPARED: AtomicU64 = AtomicU64::new(0);
static REENTRANT: AtomicU64 = AtomicU64::new(0);
/// By receives, and by alts.
static UNWOUND_RECEIVED: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
static UNWOUND_UNSENT: AtomicU64 = AtomicU64::new(0);
static WAKERS: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
static CLOSES_UNWOUND: AtomicU64 = AtomicU64::new(0);
static WHILE_UNWINDING: AtomicU64 = AtomicU64::new(0);
static CLOSES_WHILE_UNWINDING: AtomicU64 = AtomicU64::new(0);

/// What hostile wakers did in a round.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    /// Futures polled with a panicking waker.
    pub panicking: u64,
    /// Futures polled with a re-entrant waker.
    pub reentrant: u64,
    /// Panics raised by wakers.
    pub raised: u64,
    /// Of those, caught by a guarded call (the rest would have ended the round): by sends
    /// (a thread's, or a send future's poll), receives (a thread's, or a receive future's
    /// poll), threads' alts, and the rest (closes, drops of futures).
    pub caught: [u64; 4],
    /// Wakes of a panicking waker where no guard catches: woken, no panic.
    pub spared: u64,
    /// Wakes that re-entered a channel.
    pub reentries: u64,
    /// Values a receive (and an alt) took and then dropped while unwinding from a waker's
    /// panic.
    pub unwound_received: [u64; 2],
    /// Sends that unwound from a waker's panic without sending.
    pub unwound_unsent: u64,
    /// Closes that unwound from a waker's panic.
    pub closes_unwound: u64,
    /// Closes run from a drop while their thread unwound from a panic of its own.
    pub closes_while_unwinding: u64,
    /// Panics raised by wakers on a thread already unwinding, which the library discarded
    /// (not in `raised`: escaping, they would have aborted the process).
    pub while_unwinding: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.panicking += o.panicking;
        self.reentrant += o.reentrant;
        self.raised += o.raised;
        for (a, b) in self.caught.iter_mut().zip(o.caught) {
            *a += b;
        }
        self.spared += o.spared;
        self.reentries += o.reentries;
        self.unwound_received[0] += o.unwound_received[0];
        self.unwound_received[1] += o.unwound_received[1];
        self.unwound_unsent += o.unwound_unsent;
        self.closes_unwound += o.closes_unwound;
        self.closes_while_unwinding += o.closes_while_unwinding;
        self.while_unwinding += o.while_unwinding;
    }
}

/// What hostile wakers did since the last call.
pub(super) fn take() -> Tally {
    Tally {
        panicking: WAKERS[0].swap(0, Relaxed),
        reentrant: WAKERS[1].swap(0, Relaxed),
        raised: RAISED.swap(0, Relaxed),
        caught: std::array::from_fn(|i| CAUGHT[i].swap(0, Relaxed)),
        spared: SPARED.swap(0, Relaxed),
        reentries: REENTRANT.swap(0, Relaxed),
        unwound_received: std::array::from_fn(|i| UNWOUND_RECEIVED[i].swap(0, Relaxed)),
        unwound_unsent: UNWOUND_UNSENT.swap(0, Relaxed),
        closes_unwound: CLOSES_UNWOUND.swap(0, Relaxed),
        closes_while_unwinding: CLOSES_WHILE_UNWINDING.swap(0, Relaxed),
        while_unwinding: WHILE_UNWINDING.swap(0, Relaxed),
    }
}

/// A `close` unwound from a waker's panic.
pub(super) fn close_unwound() {
    CLOSES_UNWOUND.fetch_add(1, Relaxed);
}

/// A `close` ran from a drop on an unwinding thread.
pub(super) fn closed_while_unwinding() {
    CLOSES_WHILE_UNWINDING.fetch_add(1, Relaxed);
}

/// For a stuck round: what hostile wakers had done in it so far, if anything.
pub(super) fn stuck_note() -> Option<String> {
    let (raised, closes) = (RAISED.load(Relaxed), CLOSES_UNWOUND.load(Relaxed));
    (raised > 0).then(|| {
        format!(
            "in this round {raised} hostile waker panics so far, {closes} of them out of close() \
             (a close that stops at a panicking waker leaves the waiters behind it asleep)"
        )
    })
}

/// A guarded call unwound from a waker's panic.
#[derive(Clone, Copy, Debug)]
pub(super) struct Unwound {
    /// For [`Guard::Send`]: its value was dropped during the call, so it was not sent.
    pub unsent: bool,
    /// For [`Guard::Recv`] and [`Guard::Alt`]: values the call had received and dropped while
    /// it unwound.
    pub received: u32,
}

/// Runs the channel call `f` so that a hostile waker it runs may panic: the panic is caught
/// here and counted, and `Err` says the call unwound. Any other panic goes on up.
pub(super) fn guarded<R>(guard: Guard, f: impl FnOnce() -> R) -> Result<R, Unwound> {
    let previous = GUARD.with(|g| g.replace(guard));
    let before = UNWOUND_HERE.with(|n| n.replace(0));
    let raised_before = RAISED_HERE.with(|n| n.replace(0));
    let watch = match guard {
        Guard::Send(id) => Some(value::watch(id)),
        _ => None,
    };
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    GUARD.with(|g| g.set(previous));
    let unsent = watch.is_some_and(value::watched);
    let received = UNWOUND_HERE.with(|n| n.replace(before));
    let raised_here = RAISED_HERE.with(|n| n.replace(raised_before));
    match result {
        Ok(r) => Ok(r),
        Err(p) if p.is::<WakerPanic>() => {
            let kind = match guard {
                Guard::Send(_) => 0,
                Guard::Recv(_) => 1,
                Guard::Alt(_) => 2,
                _ => 3,
            };
            CAUGHT[kind].fetch_add(raised_here.max(1), Relaxed);
            if unsent {
                UNWOUND_UNSENT.fetch_add(1, Relaxed);
            }
            Err(Unwound { unsent, received })
        }
        Err(p) => panic::resume_unwind(p),
    }
}

/// Runs `f` with no guard: hostile wakers it runs wake without panicking (a re-entrant drop,
/// another hostile waker's re-entry).
pub(super) fn unguarded<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Guard);
    impl Drop for Restore {
        fn drop(&mut self) {
            GUARD.with(|g| g.set(self.0));
        }
    }
    let _restore = Restore(GUARD.with(|g| g.replace(Guard::Off)));
    f()
}

/// A value meant for channel `chan` is being dropped while the thread unwinds, outside any
/// re-entrant drop: the receive channel it was taken from, if the unwinding call is a guarded
/// receive (or alt) there.
pub(super) fn unwinding_receive(chan: usize) -> Option<usize> {
    if STRICT.load(Relaxed) {
        return None;
    }
    let (from, by) = match GUARD.with(Cell::get) {
        Guard::Recv(c) => (c, 0),
        Guard::Alt(mask) if chan < 8 && mask & 1 << chan != 0 => (chan, 1),
        _ => return None,
    };
    UNWOUND_RECEIVED[by].fetch_add(1, Relaxed);
    UNWOUND_HERE.with(|n| n.set(n.get() + 1));
    Some(from)
}

/// Whether this thread is inside a guarded receive (or alt) on `chan` in which a waker has
/// already panicked: a value meant for `chan` that the library drops now is one the receive
/// took, and could not give back before the panic goes on.
pub(super) fn receive_unwinding_soon(chan: usize) -> bool {
    let receiving = match GUARD.with(Cell::get) {
        Guard::Recv(c) => c == chan,
        Guard::Alt(mask) => chan < 8 && mask & 1 << chan != 0,
        _ => false,
    };
    receiving && RAISED_HERE.with(Cell::get) > 0
}

/// Whether a panic is a hostile waker's.
pub(super) fn is_waker_panic(p: &(dyn std::any::Any + Send)) -> bool {
    p.is::<WakerPanic>()
}

/// What a future's waker does.
pub(super) enum Kind<S: Strategy> {
    /// The executor's own waker.
    Plain,
    /// Wakes, then panics on this many wakes (where a guard catches it).
    Panics(u32),
    /// Wakes, then re-enters a channel.
    Reenter(Reentry<S>),
}

struct Hostile<S: Strategy> {
    task: Waker,
    panics: AtomicU32,
    reenter: Option<Reentry<S>>,
}

impl<S: Strategy> Wake for Hostile<S> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The task first: whatever follows, it is polled again.
        self.task.wake_by_ref();
        if let Some(r) = &self.reenter {
            if !std::thread::panicking() {
                REENTRANT.fetch_add(1, Relaxed);
                unguarded(|| value::reenter_from_waker(r));
            }
        }
        if self.panics.load(Relaxed) == 0 {
            return;
        }
        let armed = GUARD.with(Cell::get) != Guard::Off;
        if !armed {
            SPARED.fetch_add(1, Relaxed);
            return;
        }
        if std::thread::panicking() {
            // Run by a close (or drop) on a thread that is already unwinding: the panic is
            // legal there too, and the library must discard it, not let it abort the process.
            if self
                .panics
                .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                WHILE_UNWINDING.fetch_add(1, Relaxed);
                panic::panic_any(WakerPanic);
            }
            return;
        }
        if self
            .panics
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok()
        {
            RAISED.fetch_add(1, Relaxed);
            RAISED_HERE.with(|n| n.set(n.get() + 1));
            if let Guard::Recv(c) = GUARD.with(Cell::get) {
                // The receive running this wake gives the value it took back to its channel
                // before the panic goes on: counted now, before the value is visible there.
                value::may_have_given_back(c);
            }
            panic::panic_any(WakerPanic);
        }
    }
}

/// A future polled with a hostile waker (or the task's own), each poll guarded as `guard`
/// says: `Ready(Err(_))` when a poll unwound from a waker's panic (the future must then be
/// dropped, not polled again).
pub(super) struct Polled<'a, F, S: Strategy> {
    fut: Pin<&'a mut F>,
    kind: Kind<S>,
    guard: Guard,
    waker: Option<(Waker, Waker)>,
}

impl<'a, F: Future, S: Strategy> Polled<'a, F, S> {
    /// `fut`, to be polled with a waker of `kind`, under `guard` ([`Guard::Off`]: unguarded).
    pub(super) fn new(fut: Pin<&'a mut F>, kind: Kind<S>, guard: Guard) -> Self {
        match &kind {
            Kind::Plain => {}
            Kind::Panics(_) => {
                WAKERS[0].fetch_add(1, Relaxed);
            }
            Kind::Reenter(_) => {
                WAKERS[1].fetch_add(1, Relaxed);
            }
        }
        Polled {
            fut,
            kind,
            guard,
            waker: None,
        }
    }

    /// The waker to poll with when the task's is `task`.
    fn waker(&mut self, task: &Waker) -> Waker {
        if let Some((t, w)) = &self.waker {
            if t.will_wake(task) {
                return w.clone();
            }
        }
        let w = match &self.kind {
            Kind::Plain => task.clone(),
            Kind::Panics(n) => Waker::from(Arc::new(Hostile::<S> {
                task: task.clone(),
                panics: AtomicU32::new(*n),
                reenter: None,
            })),
            Kind::Reenter(r) => Waker::from(Arc::new(Hostile {
                task: task.clone(),
                panics: AtomicU32::new(0),
                reenter: Some(r.clone()),
            })),
        };
        self.waker = Some((task.clone(), w.clone()));
        w
    }
}

impl<F: Future, S: Strategy> Future for Polled<'_, F, S> {
    type Output = Result<F::Output, Unwound>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let waker = this.waker(cx.waker());
        let mut cx = Context::from_waker(&waker);
        if this.guard == Guard::Off {
            return unguarded(|| this.fut.as_mut().poll(&mut cx)).map(Ok);
        }
        match guarded(this.guard, || this.fut.as_mut().poll(&mut cx)) {
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(u) => Poll::Ready(Err(u)),
        }
    }
}

/// A re-entry for a waker, or for anything else that holds one.
impl<S: Strategy> Clone for Reentry<S> {
    fn clone(&self) -> Self {
        Reentry {
            chan: Chan::clone(&self.chan),
            index: self.index,
            how: self.how,
        }
    }
}
