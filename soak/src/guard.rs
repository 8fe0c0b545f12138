//! Guarded channel calls: where a hostile waker's panic may come out, and what a value dropped
//! while such a call unwinds means (see [`super::hostile`] for the wakers themselves).
//!
//! What a thread is inside is kept in thread-locals, because the code that must know it (a
//! waker's `wake`, a value's `drop`) runs on that thread, called by the channel library, with
//! nothing of the soak's at hand. Each is set by a call and put back as it was when the call
//! ends, however it ends: they hold no state from one call to the next, let alone from one
//! round to the next. What is counted goes to the round's book.

use super::book::Book;
use super::failure::WakerPanic;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;

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
    /// [`Guard::Recv`]. See [`super::ctx::Ended::Unwound`].
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
    /// The value whose drop [`watch`] watches for, and whether it came.
    static WATCH: Cell<(Option<u32>, bool)> = const { Cell::new((None, false)) };
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
/// here and counted in `book`, and `Err` says the call unwound. Any other panic goes on up.
pub(super) fn guarded<R>(book: &Book, guard: Guard, f: impl FnOnce() -> R) -> Result<R, Unwound> {
    let previous = GUARD.with(|g| g.replace(guard));
    let before = UNWOUND_HERE.with(|n| n.replace(0));
    let raised_before = RAISED_HERE.with(|n| n.replace(0));
    let watching = match guard {
        Guard::Send(id) => Some(watch(id)),
        _ => None,
    };
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    GUARD.with(|g| g.set(previous));
    let unsent = watching.is_some_and(watched);
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
            book.wakers.caught[kind].fetch_add(raised_here.max(1), Relaxed);
            if unsent {
                book.wakers.unwound_unsent.fetch_add(1, Relaxed);
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

/// The running thread's guard.
pub(super) fn current() -> Guard {
    GUARD.with(Cell::get)
}

/// A hostile waker is about to panic inside this thread's guarded call.
pub(super) fn raising() {
    RAISED_HERE.with(|n| n.set(n.get() + 1));
}

/// A value meant for channel `chan` is being dropped while the thread unwinds, outside any
/// re-entrant drop: the receive channel it was taken from, if the unwinding call is a guarded
/// receive (or alt) there.
pub(super) fn unwinding_receive(book: &Book, chan: usize) -> Option<usize> {
    if book.settings.strict {
        return None;
    }
    let (from, by) = match current() {
        Guard::Recv(c) => (c, 0),
        Guard::Alt(mask) if chan < 8 && mask & 1 << chan != 0 => (chan, 1),
        _ => return None,
    };
    book.wakers.unwound_received[by].fetch_add(1, Relaxed);
    UNWOUND_HERE.with(|n| n.set(n.get() + 1));
    Some(from)
}

/// Whether this thread is inside a guarded receive (or alt) on `chan` in which a waker has
/// already panicked: a value meant for `chan` that the library drops now is one the receive
/// took, and could not give back before the panic goes on.
pub(super) fn receive_unwinding_soon(chan: usize) -> bool {
    let receiving = match current() {
        Guard::Recv(c) => c == chan,
        Guard::Alt(mask) => chan < 8 && mask & 1 << chan != 0,
        _ => false,
    };
    receiving && RAISED_HERE.with(Cell::get) > 0
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

/// Value `id` is being dropped on this thread: noted, if it is the one watched.
pub(super) fn dropping(id: u32) {
    WATCH.with(|w| {
        if w.get().0 == Some(id) {
            w.set((Some(id), true));
        }
    });
}
