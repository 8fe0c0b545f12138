//! The values the soak sends: each knows who made it for which channel, and may panic or
//! re-enter a channel when it is dropped.
//!
//! A value records its own drop in its round's [ledger](super::ledger) before anything else,
//! so that every drop counts, wherever it happens: in a receiver, in a sender that got it
//! back, inside the channel library (an alt overwriting a receive slot, a channel destroyed
//! with values buffered), or during unwinding. It holds the round's book for that.

use super::book::Book;
use super::failure::{panic_message, IntentionalPanic, WakerPanic};
use super::guard::{self, Guard};
use super::ledger::{Kind, Origin};
use super::plan::MAX_CHANS;
use super::watchdog::{self, thread_name, Doing, Op};
use chan::Chan;
use locks::Strategy;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

/// The lane of echo values, which no sender owns (so no order is checked for them).
pub(super) const ECHO_LANE: u16 = u16::MAX;
/// Re-entrant drops nest at most this deep: a value received inside a drop may itself
/// re-enter, but a chain of them must end.
const MAX_DEPTH: u32 = 2;

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
    /// The round's book, where the value records its own drop.
    book: Arc<Book>,
    id: u32,
    seq: u32,
    lane: u16,
    chan: u8,
    panics: bool,
    stale: bool,
    reenter: Option<Reentry<S>>,
}

thread_local! {
    // What this thread is inside, as a value's drop (and the panic hook) must know: each is
    // set by a call and put back when it ends, so none holds anything from one call to the
    // next, let alone from one round to the next. The drop runs where the channel library
    // calls it, with nothing but the value at hand, and the value cannot know the thread.

    /// Inside the user-side `catch_unwind` of a panicking value (silences the panic hook).
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// How many re-entrant drops are running on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Inside [`cancel_receive`]: the drop of a receive future or an async alt.
    static CANCELLING: Cell<u32> = const { Cell::new(0) };
}

/// Per (lane, channel): one more than the highest sequence number one receiver (a worker, or
/// the main thread draining) has received. Each receiver has its own: across receivers
/// nothing can be checked.
#[derive(Debug, Default)]
pub(super) struct Order(Vec<u32>);

impl<S: Strategy> Val<S> {
    /// Makes value `id` and records its birth in `book`.
    pub(super) fn new(
        book: &Arc<Book>,
        id: u32,
        origin: Origin,
        panics: bool,
        reenter: Option<Reentry<S>>,
    ) -> Val<S> {
        book.ledger.create(id, origin);
        Val {
            book: Arc::clone(book),
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
        let book = &*self.book;
        let teardown = book.tearing_down() && DEPTH.with(Cell::get) == 0;
        // Dropped by the library inside the drop of a receive future (or async alt) or inside
        // a receive that gives back what it took: a value it had received, which the library
        // drops rather than give back once the channel has been reported closed and drained.
        let outermost = DEPTH.with(Cell::get) == 0 && !teardown && !self.stale;
        if outermost
            && !std::thread::panicking()
            && (CANCELLING.with(Cell::get) > 0
                || guard::receive_unwinding_soon(usize::from(self.chan)))
        {
            book.ledger.discarded(self.id);
        }
        book.ledger.dropped(self.id, teardown);
        guard::dropping(self.id);
        // Dropped by a receive that is unwinding from a hostile waker's panic: it had taken
        // this value from its channel. (Not a stale value: an alt's receive arm moves what it
        // got into its slot before the partner's wake-up, and the slot's stale value it
        // displaced is dropped with the `Alt` as that unwinds.)
        if std::thread::panicking() && DEPTH.with(Cell::get) == 0 && !self.stale {
            if let Some(c) = guard::unwinding_receive(book, usize::from(self.chan)) {
                check_received(self, c, None);
            }
        }
        if let Some(r) = self.reenter.take() {
            guard::unguarded(|| reenter(&self.book, &r, Some(self.id)));
        }
        // A second panic while unwinding would abort the process and hide the first.
        if self.panics && !std::thread::panicking() {
            panic::panic_any(IntentionalPanic);
        }
    }
}

/// What a hostile waker does when it re-enters: as a re-entrant value's drop would.
pub(super) fn reenter_from_waker<S: Strategy>(book: &Arc<Book>, r: &Reentry<S>) {
    reenter(book, r, None);
}

/// Re-enters `r`'s channel, from the drop of value `id` (or from a waker, `None`).
fn reenter<S: Strategy>(book: &Arc<Book>, r: &Reentry<S>, id: Option<u32>) {
    let depth = DEPTH.with(Cell::get);
    if depth >= MAX_DEPTH {
        return;
    }
    DEPTH.with(|d| d.set(depth + 1));
    if id.is_some() {
        book.reentrant_drop();
    }
    let c = &r.chan;
    let at = Some(r.index);
    if matches!(r.how, How::Len | How::All) {
        let _g = id.map(|id| watchdog::inner(Doing::op(Op::Len, at), id));
        check_len(book, c, r.index);
    }
    if matches!(r.how, How::NbSend | How::All) {
        let _g = id.map(|id| watchdog::inner(Doing::op(Op::NbSend, at), id));
        echo(book, c, r.index);
    }
    if matches!(r.how, How::NbRecv | How::All) {
        let _g = id.map(|id| watchdog::inner(Doing::op(Op::NbRecv, at), id));
        if let Ok(v) = c.nbrecv() {
            check_received(&v, r.index, None);
            user_drop(v);
        }
    }
    DEPTH.with(|d| d.set(depth));
}

/// Offers a fresh echo value to `c` with `nbsend`.
fn echo<S: Strategy>(book: &Arc<Book>, c: &Chan<Val<S>, S>, index: usize) {
    let ledger = &book.ledger;
    let Some(id) = ledger.reserve(1).next() else {
        return;
    };
    let origin = Origin {
        kind: Kind::Echo,
        lane: ECHO_LANE,
        chan: index as u8,
        seq: 0,
    };
    match c.nbsend(Val::new(book, id, origin, false, None)) {
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
pub(super) fn check_len<S: Strategy>(book: &Book, c: &Chan<Val<S>, S>, index: usize) {
    let cap = c.capacity();
    let len = c.len();
    let bound = || {
        let back = book.give_backs(index);
        cap.saturating_add(usize::try_from(back).unwrap_or(usize::MAX))
    };
    if len > cap && len > bound() {
        book.fail(format!(
            "c{index}: len() = {len}, above its capacity {cap} (plus any values given back)"
        ));
    }
    let closed = c.is_closed();
    match c.closing() {
        Some(n) if n > cap && n > bound() => book.fail(format!(
            "c{index}: closing() = Some({n}), above capacity {cap} (plus any values given back)"
        )),
        None if closed => book.fail(format!(
            "c{index}: is_closed() was true, then closing() said open"
        )),
        _ => {}
    }
}

/// A value received from channel `from` by a receiver whose order so far is `order`: checks
/// it and drops it on the user's side.
pub(super) fn accept<S: Strategy>(v: Val<S>, from: usize, order: &mut Order) {
    let ordered = DEPTH.with(Cell::get) == 0;
    check_received(&v, from, ordered.then_some(order));
    user_drop(v);
}

/// Records `v` as received from channel `from` and checks it: never sent twice, on its
/// channel, and (given its receiver's `order`: a plain receive) in its sender's order.
fn check_received<S: Strategy>(v: &Val<S>, from: usize, order: Option<&mut Order>) {
    let book = &*v.book;
    let ledger = &book.ledger;
    let fail = |m| book.fail(m);
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
        } else if let Some(order) = order.filter(|_| v.lane != ECHO_LANE) {
            // A value received inside a drop (or a waker) cannot be ordered against the
            // receive this thread has in progress (an alt whose fired slot is read after the
            // stale value beside it was dropped), so only the values of plain receives are
            // ordered; so is one a receive dropped while it unwound.
            check_order(v, order, &who);
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
/// receives that could have given one back ([`Book::late_arrivals`]). The highest sequence number
/// seen is kept, so that each late value counts once.
fn check_order<S: Strategy>(v: &Val<S>, order: &mut Order, who: &dyn Fn() -> String) {
    let at = usize::from(v.lane) * MAX_CHANS + usize::from(v.chan);
    let last = &mut order.0;
    if last.len() <= at {
        last.resize(at + 1, 0);
    }
    let previous = last[at];
    last[at] = previous.max(v.seq + 1);
    if previous > v.seq && v.book.give_backs_possible {
        v.book.late(usize::from(v.chan));
    } else if previous > v.seq {
        v.book.fail(format!(
            "{}: c{} delivered lane {}'s value {} after its value {} (out of order)",
            who(),
            v.chan,
            v.lane,
            v.seq,
            previous - 1
        ));
    }
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
/// caught and counted, as in [`user_drop`]; a hostile waker's, as in [`guard::guarded`].
pub(super) fn cancel_receive(book: &Book, f: impl FnOnce()) -> Result<(), guard::Unwound> {
    CANCELLING.with(|c| c.set(c.get() + 1));
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(|| guard::guarded(book, Guard::Other, f)));
    CATCHING.with(|c| c.set(c.get() - 1));
    CANCELLING.with(|c| c.set(c.get() - 1));
    match result {
        Ok(r) => r,
        Err(p) if p.is::<IntentionalPanic>() => {
            book.panicking_drop();
            Ok(())
        }
        Err(p) => panic::resume_unwind(p),
    }
}

/// Runs `f` (the drop of a send future that did not complete, which holds value `id` unless
/// it sent it) and says whether value `id` was dropped meanwhile on this thread: whether the
/// future dropped it, unsent. A panic from the value's drop is caught and counted, as in
/// [`user_drop`].
///
/// A hostile waker the drop runs may panic; that is caught too (as [`Guard::Other`]: the value
/// was dropped unsent if it was dropped at all).
pub(super) fn drop_watching(book: &Book, id: u32, f: impl FnOnce()) -> bool {
    let watching = guard::watch(id);
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = guard::guarded(book, Guard::Other, f);
    }));
    CATCHING.with(|c| c.set(c.get() - 1));
    let dropped = guard::watched(watching);
    match result {
        Err(p) if p.is::<IntentionalPanic>() => {
            book.panicking_drop();
        }
        Err(p) => panic::resume_unwind(p),
        Ok(()) => {}
    }
    dropped
}

/// Drops `v` as a user would: a panic from its drop is caught here and counted.
pub(super) fn user_drop<S: Strategy>(v: Val<S>) {
    if !v.panics {
        drop(v);
        return;
    }
    let book = Arc::clone(&v.book);
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(move || drop(v)));
    CATCHING.with(|c| c.set(c.get() - 1));
    match result {
        Err(p) if p.is::<IntentionalPanic>() => {
            book.panicking_drop();
        }
        // Something else panicked inside the drop (a re-entered channel operation): that is
        // the channel's panic, not the value's, and it goes on up.
        Err(p) => panic::resume_unwind(p),
        Ok(()) => {}
    }
}

/// Runs `f` (the round's destruction of its channels, once every other thread of the round
/// is done) with drops counted as teardown in `book`, and catches any panic from it: the
/// message, if one came.
pub(super) fn teardown(book: &Book, f: impl FnOnce()) -> Option<String> {
    book.set_tearing_down(true);
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    book.set_tearing_down(false);
    result.err().map(|p| panic_message(&*p))
}

/// Silences the panics values raise on purpose where the soak catches them, and says which
/// operation a thread was in when anything else panicked.
pub(super) fn install_panic_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        // A hostile waker panics only inside a guarded call, which catches it.
        if info.payload().is::<WakerPanic>() {
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
