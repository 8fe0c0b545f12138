//! The values the soak sends: each knows who made it for which channel, and may panic or
//! re-enter a channel when it is dropped.
//!
//! A value records its own drop in the [ledger] before anything else, so that
//! every drop counts, wherever it happens: in a receiver, in a sender that got it back, inside
//! the channel library (an alt overwriting a receive slot, a channel destroyed with values
//! buffered), or during unwinding.

use super::failure::{fail, thread_name};
use super::hostile::{self, Guard};
use super::ledger::{self, Kind, Origin};
use super::plan::MAX_CHANS;
use super::watchdog::{self, Doing, Op};
use chan::Chan;
use locks::Strategy;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The lane of echo values, which no sender owns (so no order is checked for them).
pub(super) const ECHO_LANE: u16 = u16::MAX;
/// Re-entrant drops nest at most this deep: a value received inside a drop may itself
/// re-enter, but a chain of them must end.
const MAX_DEPTH: u32 = 2;

/// The panic a value's drop raises on purpose.
#[derive(Debug)]
pub(super) struct IntentionalPanic;

/// What a re-entrant drop does to the channel it holds.
#[derive(Clone, Copy, Debug)]
pub(super) enum How {
    /// `len`, `closing` and `is_closed`, checked against each other.
    Len,
    /// `nbsend` of a fresh echo value.
    NbSend,
    /// `nbrecv`, accepting whatever comes.
    NbRecv,
    /// All three.
    All,
}

/// The channel a re-entrant value holds a handle to, and what its drop does there.
pub(super) struct Reentry<S: Strategy> {
    /// The handle (a clone, keeping the channel alive).
    pub chan: Chan<Val<S>, S>,
    /// Its index in the round.
    pub index: usize,
    /// What to do.
    pub how: How,
}

/// A value sent through the soak's channels.
pub(super) struct Val<S: Strategy> {
    id: u32,
    seq: u32,
    lane: u16,
    chan: u8,
    panics: bool,
    stale: bool,
    reenter: Option<Reentry<S>>,
}

static PANICKING_DROPS: AtomicU64 = AtomicU64::new(0);
static REENTRANT_DROPS: AtomicU64 = AtomicU64::new(0);

/// Whether the round has tasks that drop receive futures, which may give a value back to its
/// channel after a later value of its sender has been received (see [`late_arrivals`]).
static GIVE_BACKS_POSSIBLE: AtomicBool = AtomicBool::new(false);
/// Per channel: receive futures (and async alts with a receive arm there) dropped while
/// pending, each of which may have given one value back.
static GIVE_BACKS: [AtomicU64; MAX_CHANS] = [const { AtomicU64::new(0) }; MAX_CHANS];
/// Per channel: receive futures leaked (`mem::forget`) while waiting there, each of which
/// may hold one value for ever.
static LEAKS: [AtomicU64; MAX_CHANS] = [const { AtomicU64::new(0) }; MAX_CHANS];
/// Per channel: values that arrived after a later value of their lane (only counted, rather
/// than failed at once, when [`GIVE_BACKS_POSSIBLE`]).
static LATE: [AtomicU64; MAX_CHANS] = [const { AtomicU64::new(0) }; MAX_CHANS];

thread_local! {
    /// Inside the user-side `catch_unwind` of a panicking value (silences the panic hook).
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// The main thread destroying the round's channels.
    static TEARDOWN: Cell<bool> = const { Cell::new(false) };
    /// How many re-entrant drops are running on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Per (lane, channel): one more than the highest sequence number this thread (or the
    /// task it is polling) received.
    static LAST_SEQ: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// The value whose drop [`drop_watching`] watches for, and whether it came.
    static WATCH: Cell<(Option<u32>, bool)> = const { Cell::new((None, false)) };
    /// Inside [`cancel_receive`]: the drop of a receive future or an async alt.
    static CANCELLING: Cell<u32> = const { Cell::new(0) };
}

impl<S: Strategy> Val<S> {
    /// Makes value `id` and records its birth.
    pub(super) fn new(
        id: u32,
        origin: Origin,
        panics: bool,
        reenter: Option<Reentry<S>>,
    ) -> Val<S> {
        ledger::global().create(id, origin);
        Val {
            id,
            seq: origin.seq,
            lane: origin.lane,
            chan: origin.chan,
            panics,
            stale: origin.kind == Kind::Stale,
            reenter,
        }
    }

    /// The value's id in the ledger.
    pub(super) fn id(&self) -> u32 {
        self.id
    }

    /// Whether this is a stale value (a receiver's own, never sent).
    pub(super) fn is_stale(&self) -> bool {
        self.stale
    }
}

impl<S: Strategy> Drop for Val<S> {
    fn drop(&mut self) {
        // Only the channel's own destruction leaves a value "in the channel"; what a drop
        // does meanwhile (an echo given back) has its own story.
        let teardown = TEARDOWN.with(Cell::get) && DEPTH.with(Cell::get) == 0;
        // Dropped by the library inside the drop of a receive future (or async alt) or inside
        // a receive that gives back what it took: a value it had received, which the library
        // drops rather than give back once the channel has been reported closed and drained.
        let outermost = DEPTH.with(Cell::get) == 0 && !teardown && !self.stale;
        if outermost
            && !std::thread::panicking()
            && (CANCELLING.with(Cell::get) > 0
                || hostile::receive_unwinding_soon(usize::from(self.chan)))
        {
            ledger::global().discarded(self.id);
        }
        ledger::global().dropped(self.id, teardown);
        WATCH.with(|w| {
            if w.get().0 == Some(self.id) {
                w.set((Some(self.id), true));
            }
        });
        // Dropped by a receive that is unwinding from a hostile waker's panic: it had taken
        // this value from its channel. (Not a stale value: an alt's receive arm moves what it
        // got into its slot before the partner's wake-up, and the slot's stale value it
        // displaced is dropped with the `Alt` as that unwinds.)
        if std::thread::panicking() && DEPTH.with(Cell::get) == 0 && !self.stale {
            if let Some(c) = hostile::unwinding_receive(usize::from(self.chan)) {
                check_received(self, c, false);
            }
        }
        if let Some(r) = self.reenter.take() {
            hostile::unguarded(|| reenter(&r, Some(self.id)));
        }
        // A second panic while unwinding would abort the process and hide the first.
        if self.panics && !std::thread::panicking() {
            panic::panic_any(IntentionalPanic);
        }
    }
}

/// What a hostile waker does when it re-enters: as a re-entrant value's drop would.
pub(super) fn reenter_from_waker<S: Strategy>(r: &Reentry<S>) {
    reenter(r, None);
}

/// Re-enters `r`'s channel, from the drop of value `id` (or from a waker, `None`).
fn reenter<S: Strategy>(r: &Reentry<S>, id: Option<u32>) {
    let depth = DEPTH.with(Cell::get);
    if depth >= MAX_DEPTH {
        return;
    }
    DEPTH.with(|d| d.set(depth + 1));
    if id.is_some() {
        REENTRANT_DROPS.fetch_add(1, Relaxed);
    }
    let c = &r.chan;
    let at = Some(r.index);
    if matches!(r.how, How::Len | How::All) {
        let _g = id.map(|id| watchdog::inner(Doing::op(Op::Len, at), id));
        check_len(c, r.index);
    }
    if matches!(r.how, How::NbSend | How::All) {
        let _g = id.map(|id| watchdog::inner(Doing::op(Op::NbSend, at), id));
        echo(c, r.index);
    }
    if matches!(r.how, How::NbRecv | How::All) {
        let _g = id.map(|id| watchdog::inner(Doing::op(Op::NbRecv, at), id));
        if let Ok(v) = c.nbrecv() {
            accept(v, r.index);
        }
    }
    DEPTH.with(|d| d.set(depth));
}

/// Offers a fresh echo value to `c` with `nbsend`.
fn echo<S: Strategy>(c: &Chan<Val<S>, S>, index: usize) {
    let ledger = ledger::global();
    let Some(id) = ledger.reserve(1).next() else {
        return;
    };
    let origin = Origin {
        kind: Kind::Echo,
        lane: ECHO_LANE,
        chan: index as u8,
        seq: 0,
    };
    match c.nbsend(Val::new(id, origin, false, None)) {
        Ok(()) => {
            ledger.sent(id);
            watchdog::tick();
        }
        Err(e) => {
            ledger.returned(id);
            drop(e.into_inner());
        }
    }
}

/// `len`, `closing` and `is_closed` of channel `index`, which must agree with each other and
/// with its capacity (each read is a separate snapshot, so only what no interleaving
/// explains is a failure). A value given back by a dropped receive future goes to the front
/// of the buffer whatever its capacity, so the buffer may exceed it by as many values as
/// receive futures have been dropped there (counted before each drop).
pub(super) fn check_len<S: Strategy>(c: &Chan<Val<S>, S>, index: usize) {
    let cap = c.capacity();
    let len = c.len();
    let bound = || {
        let back = GIVE_BACKS[index].load(Relaxed);
        cap.saturating_add(usize::try_from(back).unwrap_or(usize::MAX))
    };
    if len > cap && len > bound() {
        fail(format!(
            "c{index}: len() = {len}, above its capacity {cap} (plus any values given back)"
        ));
    }
    let closed = c.is_closed();
    match c.closing() {
        Some(n) if n > cap && n > bound() => fail(format!(
            "c{index}: closing() = Some({n}), above capacity {cap} (plus any values given back)"
        )),
        None if closed => fail(format!(
            "c{index}: is_closed() was true, then closing() said open"
        )),
        _ => {}
    }
}

/// A value received from channel `from`: checks it and drops it on the user's side.
pub(super) fn accept<S: Strategy>(v: Val<S>, from: usize) {
    check_received(&v, from, DEPTH.with(Cell::get) == 0);
    user_drop(v);
}

/// Records `v` as received from channel `from` and checks it: never sent twice, on its
/// channel, and (if `ordered`: a plain receive) in its sender's order.
fn check_received<S: Strategy>(v: &Val<S>, from: usize, ordered: bool) {
    let ledger = ledger::global();
    let who = || format!("thread `{}`", thread_name());
    if v.stale {
        fail(format!(
            "{}: c{from} delivered value #{}, a stale value that was never sent",
            who(),
            v.id
        ));
    } else {
        let before = ledger.received(v.id);
        if before > 0 {
            fail(format!(
                "{}: value #{} ({}) arrived again on c{from}",
                who(),
                v.id,
                ledger.origin(v.id)
            ));
        }
        if usize::from(v.chan) != from {
            fail(format!(
                "{}: value #{} ({}) arrived on c{from}",
                who(),
                v.id,
                ledger.origin(v.id)
            ));
        } else if v.lane != ECHO_LANE && ordered {
            // A value received inside a drop (or a waker) cannot be ordered against the
            // receive this thread has in progress (an alt whose fired slot is read after the
            // stale value beside it was dropped), so only the values of plain receives are
            // ordered; so is one a receive dropped while it unwound.
            check_order(v, &who);
        }
        watchdog::tick();
    }
}

/// FIFO per sender and channel, as one receiver sees it: sequence numbers only rise. (Across
/// receivers nothing can be checked: which of two receivers records first is a race of its
/// own.)
///
/// A receive future dropped after it was handed a value gives that value back to its channel,
/// where it is the next value received; but another receiver may already have taken a later
/// value of the same sender meanwhile, and then sees the two out of order. That is the
/// documented rule's one reordering, so in rounds with tasks a late value is counted, not
/// failed, and the round's end checks that no channel had more late values than dropped
/// receives that could have given one back ([`late_arrivals`]). The highest sequence number
/// seen is kept, so that each late value counts once.
fn check_order<S: Strategy>(v: &Val<S>, who: &dyn Fn() -> String) {
    let at = usize::from(v.lane) * MAX_CHANS + usize::from(v.chan);
    let previous = LAST_SEQ.with(|last| {
        let mut last = last.borrow_mut();
        if last.len() <= at {
            last.resize(at + 1, 0);
        }
        let previous = last[at];
        last[at] = previous.max(v.seq + 1);
        previous
    });
    if previous > v.seq && GIVE_BACKS_POSSIBLE.load(Relaxed) {
        LATE[usize::from(v.chan)].fetch_add(1, Relaxed);
    } else if previous > v.seq {
        fail(format!(
            "{}: c{} delivered lane {}'s value {} after its value {} (out of order)",
            who(),
            v.chan,
            v.lane,
            v.seq,
            previous - 1
        ));
    }
}

/// Forgets the order this thread has seen (a new round).
pub(super) fn reset_thread() {
    LAST_SEQ.with(|last| last.borrow_mut().clear());
}

/// Swaps the order this thread has seen with `mine`: a task brings its own in while it is
/// polled, since it may run on any of the runtime's threads, and they run other tasks too.
pub(super) fn swap_order(mine: &mut Vec<u32>) {
    LAST_SEQ.with(|last| std::mem::swap(&mut *last.borrow_mut(), mine));
}

/// Starts a round: whether its tasks may give values back (so that late values are counted
/// rather than failed).
pub(super) fn round_begin(give_backs: bool) {
    GIVE_BACKS_POSSIBLE.store(give_backs, Relaxed);
    for leaks in &LEAKS {
        leaks.store(0, Relaxed);
    }
    for c in 0..MAX_CHANS {
        GIVE_BACKS[c].store(0, Relaxed);
        LATE[c].store(0, Relaxed);
    }
}

/// A receive future (or async alt with a receive arm) on channel `c` is about to be dropped
/// while pending: it may give a value back.
pub(super) fn may_have_given_back(c: usize) {
    GIVE_BACKS[c].fetch_add(1, Relaxed);
}

/// A receive future waiting on channel `c` was leaked: it may hold a value for ever.
pub(super) fn leaked_receive(c: usize) {
    LEAKS[c].fetch_add(1, Relaxed);
}

/// Per channel: receive futures leaked this round.
pub(super) fn leaks() -> [u64; MAX_CHANS] {
    std::array::from_fn(|c| LEAKS[c].load(Relaxed))
}

/// Runs `f` from a drop while this thread unwinds from a panic of its own (an intentional one,
/// silenced), as a guard object's drop would. True if that panic, and only it, came out: a
/// panic that `f` let escape would have aborted the process instead.
pub(super) fn while_unwinding(f: impl FnOnce()) -> bool {
    struct RunOnDrop<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for RunOnDrop<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let _run = RunOnDrop(Some(f));
        panic::panic_any(IntentionalPanic);
    }));
    CATCHING.with(|c| c.set(c.get() - 1));
    matches!(result, Err(p) if p.is::<IntentionalPanic>())
}

/// Drops a receive future or an async alt (`f`) that may hold a value it received: the
/// library gives the value back, or drops it if the channel has been reported closed and
/// drained (recorded as discarded by the value's drop). A panic from that value's drop is
/// caught and counted, as in [`user_drop`]; a hostile waker's, as in [`hostile::guarded`].
pub(super) fn cancel_receive(f: impl FnOnce()) -> Result<(), hostile::Unwound> {
    CANCELLING.with(|c| c.set(c.get() + 1));
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(|| hostile::guarded(Guard::Other, f)));
    CATCHING.with(|c| c.set(c.get() - 1));
    CANCELLING.with(|c| c.set(c.get() - 1));
    match result {
        Ok(r) => r,
        Err(p) if p.is::<IntentionalPanic>() => {
            PANICKING_DROPS.fetch_add(1, Relaxed);
            Ok(())
        }
        Err(p) => panic::resume_unwind(p),
    }
}

/// Per channel: values that arrived after a later value of their sender, and dropped receive
/// futures that may have given one back.
pub(super) fn late_arrivals() -> [(u64, u64); MAX_CHANS] {
    std::array::from_fn(|c| (LATE[c].load(Relaxed), GIVE_BACKS[c].load(Relaxed)))
}

/// Runs `f` (the drop of a send future that did not complete, which holds value `id` unless
/// it sent it) and says whether value `id` was dropped meanwhile on this thread: whether the
/// future dropped it, unsent. A panic from the value's drop is caught and counted, as in
/// [`user_drop`].
///
/// A hostile waker the drop runs may panic; that is caught too (as [`Guard::Other`]: the value
/// was dropped unsent if it was dropped at all).
pub(super) fn drop_watching(id: u32, f: impl FnOnce()) -> bool {
    let watching = watch(id);
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = hostile::guarded(Guard::Other, f);
    }));
    CATCHING.with(|c| c.set(c.get() - 1));
    let dropped = watched(watching);
    match result {
        Err(p) if p.is::<IntentionalPanic>() => {
            PANICKING_DROPS.fetch_add(1, Relaxed);
        }
        Err(p) => panic::resume_unwind(p),
        Ok(()) => {}
    }
    dropped
}

/// Watches for value `id`'s drop on this thread until [`watched`].
pub(super) fn watch(id: u32) -> Watch {
    Watch(WATCH.with(|w| w.replace((Some(id), false))))
}

/// What [`watch`] replaced.
#[derive(Debug)]
pub(super) struct Watch((Option<u32>, bool));

/// Stops watching; whether the value was dropped meanwhile.
pub(super) fn watched(w: Watch) -> bool {
    WATCH.with(|x| x.replace(w.0)).1
}

/// Drops `v` as a user would: a panic from its drop is caught here and counted.
pub(super) fn user_drop<S: Strategy>(v: Val<S>) {
    if !v.panics {
        drop(v);
        return;
    }
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(move || drop(v)));
    CATCHING.with(|c| c.set(c.get() - 1));
    match result {
        Err(p) if p.is::<IntentionalPanic>() => {
            PANICKING_DROPS.fetch_add(1, Relaxed);
        }
        // Something else panicked inside the drop (a re-entered channel operation): that is
        // the channel's panic, not the value's, and it goes on up.
        Err(p) => panic::resume_unwind(p),
        Ok(()) => {}
    }
}

/// Runs `f` (the round's destruction of its channels) with drops counted as teardown, and
/// catches any panic from it: the message, if one came.
pub(super) fn teardown(f: impl FnOnce()) -> Option<String> {
    TEARDOWN.with(|t| t.set(true));
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    TEARDOWN.with(|t| t.set(false));
    result.err().map(|p| super::failure::panic_message(&*p))
}

/// Panicking drops caught and re-entrant drops run since the last call.
pub(super) fn take_drop_counts() -> (u64, u64) {
    (
        PANICKING_DROPS.swap(0, Relaxed),
        REENTRANT_DROPS.swap(0, Relaxed),
    )
}

/// Silences the panics values raise on purpose where the soak catches them, and says which
/// operation a thread was in when anything else panicked.
pub(super) fn install_panic_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        // A hostile waker panics only inside a guarded call, which catches it.
        if hostile::is_waker_panic(info.payload()) {
            return;
        }
        let intentional = info.payload().is::<IntentionalPanic>();
        if intentional && CATCHING.try_with(Cell::get).unwrap_or(0) > 0 {
            return;
        }
        if intentional {
            eprintln!(
                "chansoak: soak: a value's drop panicked (on purpose) where the user did not \
                 drop it: {}",
                watchdog::current()
            );
        } else {
            default(info);
            eprintln!(
                "chansoak: soak: the panic came during {}",
                watchdog::current()
            );
        }
    }));
}
