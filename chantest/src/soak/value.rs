//! The values the soak sends: each knows who made it for which channel, and may panic or
//! re-enter a channel when it is dropped.
//!
//! A value records its own drop in the [ledger] before anything else, so that
//! every drop counts, wherever it happens: in a receiver, in a sender that got it back, inside
//! the channel library (an alt overwriting a receive slot, a channel destroyed with values
//! buffered), or during unwinding.

use super::failure::{fail, thread_name};
use super::ledger::{self, Kind, Origin};
use super::watchdog::{self, Doing, Op};
use chan::Chan;
use locks::Strategy;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

thread_local! {
    /// Inside the user-side `catch_unwind` of a panicking value (silences the panic hook).
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// The main thread destroying the round's channels.
    static TEARDOWN: Cell<bool> = const { Cell::new(false) };
    /// How many re-entrant drops are running on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Per (lane, channel): one more than the last sequence number this thread received.
    static LAST_SEQ: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
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
        ledger::global().dropped(self.id, teardown);
        if let Some(r) = self.reenter.take() {
            reenter(r, self.id);
        }
        // A second panic while unwinding would abort the process and hide the first.
        if self.panics && !std::thread::panicking() {
            panic::panic_any(IntentionalPanic);
        }
    }
}

fn reenter<S: Strategy>(r: Reentry<S>, id: u32) {
    let depth = DEPTH.with(Cell::get);
    if depth >= MAX_DEPTH {
        return;
    }
    DEPTH.with(|d| d.set(depth + 1));
    REENTRANT_DROPS.fetch_add(1, Relaxed);
    let c = &r.chan;
    let at = Some(r.index);
    if matches!(r.how, How::Len | How::All) {
        let _g = watchdog::inner(Doing::op(Op::Len, at), id);
        check_len(c, r.index);
    }
    if matches!(r.how, How::NbSend | How::All) {
        let _g = watchdog::inner(Doing::op(Op::NbSend, at), id);
        echo(c, r.index);
    }
    if matches!(r.how, How::NbRecv | How::All) {
        let _g = watchdog::inner(Doing::op(Op::NbRecv, at), id);
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
/// explains is a failure).
pub(super) fn check_len<S: Strategy>(c: &Chan<Val<S>, S>, index: usize) {
    let cap = c.capacity();
    let len = c.len();
    if len > cap {
        fail(format!("c{index}: len() = {len}, above its capacity {cap}"));
    }
    let closed = c.is_closed();
    match c.closing() {
        Some(n) if n > cap => fail(format!(
            "c{index}: closing() = Some({n}), above capacity {cap}"
        )),
        None if closed => fail(format!(
            "c{index}: is_closed() was true, then closing() said open"
        )),
        _ => {}
    }
}

/// A value received from channel `from`: checks it and drops it on the user's side.
pub(super) fn accept<S: Strategy>(v: Val<S>, from: usize) {
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
        } else if v.lane != ECHO_LANE && DEPTH.with(Cell::get) == 0 {
            // A value received inside a drop cannot be ordered against the receive this
            // thread has in progress (an alt whose fired slot is read after the stale value
            // beside it was dropped), so only the values of plain receives are ordered.
            check_order(&v, &who);
        }
        watchdog::tick();
    }
    user_drop(v);
}

/// FIFO per sender and channel, as one receiver sees it: sequence numbers only rise. (Across
/// receivers nothing can be checked: which of two receivers records first is a race of its
/// own.)
fn check_order<S: Strategy>(v: &Val<S>, who: &dyn Fn() -> String) {
    let at = usize::from(v.lane) * super::plan::MAX_CHANS + usize::from(v.chan);
    let previous = LAST_SEQ.with(|last| {
        let mut last = last.borrow_mut();
        if last.len() <= at {
            last.resize(at + 1, 0);
        }
        std::mem::replace(&mut last[at], v.seq + 1)
    });
    if previous > v.seq {
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
        let intentional = info.payload().is::<IntentionalPanic>();
        if intentional && CATCHING.try_with(Cell::get).unwrap_or(0) > 0 {
            return;
        }
        if intentional {
            eprintln!(
                "chantest: soak: a value's drop panicked (on purpose) where the user did not \
                 drop it: {}",
                watchdog::current()
            );
        } else {
            default(info);
            eprintln!(
                "chantest: soak: the panic came during {}",
                watchdog::current()
            );
        }
    }));
}
