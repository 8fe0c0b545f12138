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
//! or out of a cancelled receive future's drop; see [`super::settings::Which`]),
//! `panic`, `reenter` or `none`; each task round draws how many of its futures get each kind
//! ([`super::plan::Tasks::hostile`]). The guards are [`super::guard`]'s; what the wakers do
//! is counted in the round's book.

use super::book::Book;
use super::failure::WakerPanic;
use super::guard::{self, guarded, unguarded, Guard, Unwound};
use super::value::{self, Reentry};
use chan::Chan;
use locks::Strategy;
use std::future::Future;
use std::panic;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

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
    book: Arc<Book>,
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
        let w = &self.book.wakers;
        if let Some(r) = &self.reenter {
            if !std::thread::panicking() {
                w.reentries.fetch_add(1, Relaxed);
                unguarded(|| value::reenter_from_waker(&self.book, r));
            }
        }
        if self.panics.load(Relaxed) == 0 {
            return;
        }
        let guard = guard::current();
        if guard == Guard::Off {
            w.spared.fetch_add(1, Relaxed);
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
                w.while_unwinding.fetch_add(1, Relaxed);
                panic::panic_any(WakerPanic);
            }
            return;
        }
        if self
            .panics
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok()
        {
            w.raised.fetch_add(1, Relaxed);
            guard::raising();
            if let Guard::Recv(c) = guard {
                // The receive running this wake gives the value it took back to its channel
                // before the panic goes on: counted now, before the value is visible there.
                self.book.may_have_given_back(c);
            }
            panic::panic_any(WakerPanic);
        }
    }
}

/// A future polled with a hostile waker (or the task's own), each poll guarded as `guard`
/// says: `Ready(Err(_))` when a poll unwound from a waker's panic (the future must then be
/// dropped, not polled again).
pub(super) struct Polled<'a, F, S: Strategy> {
    book: Arc<Book>,
    fut: Pin<&'a mut F>,
    kind: Kind<S>,
    guard: Guard,
    waker: Option<(Waker, Waker)>,
}

impl<'a, F: Future, S: Strategy> Polled<'a, F, S> {
    /// `fut`, to be polled with a waker of `kind`, under `guard` ([`Guard::Off`]: unguarded),
    /// counted in `book`.
    pub(super) fn new(book: &Arc<Book>, fut: Pin<&'a mut F>, kind: Kind<S>, guard: Guard) -> Self {
        match &kind {
            Kind::Plain => {}
            Kind::Panics(_) => {
                book.wakers.panicking.fetch_add(1, Relaxed);
            }
            Kind::Reenter(_) => {
                book.wakers.reentrant.fetch_add(1, Relaxed);
            }
        }
        Polled {
            book: Arc::clone(book),
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
                book: Arc::clone(&self.book),
                task: task.clone(),
                panics: AtomicU32::new(*n),
                reenter: None,
            })),
            Kind::Reenter(r) => Waker::from(Arc::new(Hostile {
                book: Arc::clone(&self.book),
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
        match guarded(&this.book, this.guard, || this.fut.as_mut().poll(&mut cx)) {
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
