//! The second outside review's defects, one regression test each, and the hostile-executor
//! kit: every public future, stream, sink and the `Alt` driven by wakers that panic, clone
//! badly or re-enter the channel, leaked at every stage, polled from other threads, and
//! cancelled while a close, a claim or the last endpoint's drop races them. A lock whose
//! `unlock` sleeps after releasing widens every window between a claim and its signal.
//!
//! Each body runs natively on every backend and, with small counts, under Miri (`.ci/miri`
//! runs this file under Stacked and Tree Borrows): the use-after-free cases pass natively on
//! the old code and fail only under Miri, the lost and resurrected values fail natively too.
#![cfg(not(loom))]

#[path = "exec/hostile.rs"]
mod hostile;

use chan::{Alt, Chan, RecvError, SendError, TryRecvError, TrySendError};
use hostile::{counting, hostile, poll_noop, poll_with, Fault, Hostile};
use locks::{Strategy, Waiter};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};
use testkit::{deadline, per_backend, Tracked};

/// A short pause that lets another thread reach its wait (virtual under Miri).
fn settle() {
    thread::sleep(Duration::from_millis(if cfg!(miri) { 5 } else { 50 }));
}

thread_local! {
    /// Set on a thread whose unlocks of a [`Slow`] lock should sleep after releasing.
    static SLOW_HERE: Cell<bool> = const { Cell::new(false) };
}

/// `S`, except that `unlock` sleeps after releasing on threads that asked for it: a claimer
/// then sits between its unlock and its signal for a long time, the window in which a
/// cancelled future's drop must wait for it.
struct Slow<S>(S);

// SAFETY: mutual exclusion and waiting are `S`'s; the sleep happens after the release.
unsafe impl<S: Strategy> Strategy for Slow<S> {
    type Params = S::Params;
    type Waiter = S::Waiter;
    const NAME: &'static str = "slow";
    fn with_params(p: S::Params) -> Self {
        Slow(S::with_params(p))
    }
    fn params(&self) -> S::Params {
        self.0.params()
    }
    fn waiter(&self) -> S::Waiter {
        self.0.waiter()
    }
    fn first_waiter(&self) -> S::Waiter {
        self.0.first_waiter()
    }
    fn lock(&self) {
        self.0.lock()
    }
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }
    unsafe fn unlock(&self) {
        // SAFETY: forwarded.
        unsafe { self.0.unlock() };
        if SLOW_HERE.with(Cell::get) {
            thread::sleep(Duration::from_millis(if cfg!(miri) { 20 } else { 100 }));
        }
    }
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

/// Polls `f` (queued) with a counting waker until it reports being claimed but not yet
/// signalled (it wakes itself to be polled again soon); false if it completed instead.
///
/// The claimer is a thread spawned just before, which a loaded machine may not run for a
/// while: the wait is bounded by time, not by a count of polls (10,000 yields once ran out
/// under CI's parallel tests before the claimer was scheduled).
fn until_claimed_unsignalled<F: std::future::Future + ?Sized>(mut f: Pin<&mut F>) -> bool {
    let (h, w) = counting();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        match poll_with(f.as_mut(), &w) {
            Poll::Ready(_) => return false,
            Poll::Pending if h.wakes() > 0 => return true,
            Poll::Pending => thread::yield_now(),
        }
    }
    panic!("never claimed in 30 s");
}

per_backend! {
    defects:
    a_forgotten_alt_future_leaves_no_node_behind,
    a_forgotten_claimed_alt_future_gives_its_value_back,
    a_forgotten_alt_future_is_cancelled_before_the_alt_is_used_again,
    a_panicking_give_back_wake_waits_for_the_claimer_first,
    an_alt_future_with_a_panicking_give_back_wake_waits_too,
    close_wakes_everyone_past_a_panicking_waker,
    a_handed_value_holds_up_no_close,
    a_dropped_future_gives_back_only_until_drained_is_reported,
    an_alt_future_follows_the_same_rule,
    a_future_polled_twice_then_claimed,
    a_send_future_polled_twice_then_claimed,
    a_future_moved_to_another_thread_between_polls,
}

/// Defect 1: a pending `AltFuture` leaked with `mem::forget`; the alt is then dropped. Its
/// nodes must not stay linked in the channel's queue.
fn a_forgotten_alt_future_leaves_no_node_behind<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let mut x = None;
    {
        let mut alt = Alt::new();
        alt.recv(&c, &mut x);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        std::mem::forget(f);
        drop(alt);
    }
    // No receiver waits any more: a rendezvous send cannot complete.
    assert_eq!(c.nbsend(1), Err(TrySendError::Full(1)));
    assert_eq!(x, None);
}

/// Defect 1, claimed: the leaked future's arm fired, then the alt is dropped; the value
/// goes back to the channel as for a dropped future.
fn a_forgotten_claimed_alt_future_gives_its_value_back<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let mut x = None;
    {
        let mut alt = Alt::new();
        alt.recv(&c, &mut x);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        std::mem::forget(f);
        assert_eq!(c.nbsend(7), Ok(()), "the forgotten alt still waits");
        drop(alt);
    }
    assert_eq!(c.nbrecv(), Ok(7), "given back, not lost");
    assert_eq!(x, None);
}

/// Defect 1, reused: the alt waits again (blocking and async) after its future leaked.
fn a_forgotten_alt_future_is_cancelled_before_the_alt_is_used_again<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let tx = c.clone();
    let mut x = None;
    let mut alt = Alt::new();
    let i = alt.recv(&c, &mut x);
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_noop(f.as_mut()).is_pending());
    std::mem::forget(f);
    assert_eq!(alt.try_wait(), None);
    assert_eq!(tx.nbsend(1), Err(TrySendError::Full(1)));
    let sender = thread::spawn(move || tx.send(2));
    assert_eq!(alt.wait().index, i);
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_noop(f.as_mut()).is_pending());
    std::mem::forget(f);
    drop(alt);
    sender.join().unwrap().unwrap();
    assert_eq!(x, Some(2));
}

/// Defect 2: a claimed receive future is dropped; the value goes back to another queued
/// receiver whose waker panics. The drop must first wait for its own claimer (held up in a
/// slow unlock) to finish signalling, or the claimer writes into freed memory (Miri).
fn a_panicking_give_back_wake_waits_for_the_claimer_first<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, Slow<S>>::with_params(0, p);
    let mut r1 = Box::pin(c.recv_async());
    assert!(poll_noop(r1.as_mut()).is_pending());
    let h = Hostile::new(Fault::PanicWake);
    let w2 = hostile(&h);
    let mut r2 = Box::pin(c.recv_async());
    assert!(poll_with(r2.as_mut(), &w2).is_pending());
    thread::scope(|s| {
        let sender = s.spawn(|| {
            SLOW_HERE.with(|f| f.set(true));
            c.send(1)
        });
        assert!(until_claimed_unsignalled(r1.as_mut()));
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(r1)));
        assert!(dropped.is_err(), "the other receiver's waker panicked");
        assert_eq!(sender.join().unwrap(), Ok(()));
    });
    assert_eq!(h.wakes(), 1);
    assert_eq!(poll_noop(r2.as_mut()), Poll::Ready(Ok(1)), "given to r2");
}

/// Defect 2 for an async alt: the same race through `AltFuture`'s drop.
fn an_alt_future_with_a_panicking_give_back_wake_waits_too<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, Slow<S>>::with_params(0, p);
    let mut x = None;
    let mut alt = Alt::new();
    alt.recv(&c, &mut x);
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_noop(f.as_mut()).is_pending());
    let h = Hostile::new(Fault::PanicWake);
    let w2 = hostile(&h);
    let mut r2 = Box::pin(c.recv_async());
    assert!(poll_with(r2.as_mut(), &w2).is_pending());
    thread::scope(|s| {
        let sender = s.spawn(|| {
            SLOW_HERE.with(|f| f.set(true));
            c.send(1)
        });
        assert!(until_claimed_unsignalled(f.as_mut()));
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(f)));
        assert!(dropped.is_err(), "the other receiver's waker panicked");
        assert_eq!(sender.join().unwrap(), Ok(()));
    });
    drop(alt);
    assert_eq!(x, None, "a cancelled alt's value goes back to the channel");
    assert_eq!(poll_noop(r2.as_mut()), Poll::Ready(Ok(1)));
}

/// Defect 3: `close` wakes every waiter even if some wakers panic, then resumes the first
/// panic; a blocked thread queued behind the panicking task returns.
fn close_wakes_everyone_past_a_panicking_waker<S: Strategy>(p: S::Params) {
    deadline("close past a panicking waker", move || {
        let c = Chan::<u32, S>::with_params(0, p);
        let h = Hostile::new(Fault::PanicWake);
        let w = hostile(&h);
        let mut r = Box::pin(c.recv_async());
        assert!(poll_with(r.as_mut(), &w).is_pending());
        let h2 = Hostile::new(Fault::PanicWake);
        let w2 = hostile(&h2);
        let mut s = Box::pin(c.send_async(9));
        // A receiver waits, so this send completes at once: queue it on another channel's
        // side instead, a second receiver.
        let mut r2 = Box::pin(c.recv_async());
        assert!(poll_with(r2.as_mut(), &w2).is_pending());
        let rx = c.clone();
        let blocked = thread::spawn(move || rx.recv());
        settle();
        let closed = catch_unwind(AssertUnwindSafe(|| c.close()));
        assert!(closed.is_err(), "the first panic goes on");
        assert_eq!(
            blocked.join().unwrap(),
            Err(RecvError),
            "woken despite the panics"
        );
        assert_eq!((h.wakes(), h2.wakes()), (1, 1));
        assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Err(RecvError)));
        assert_eq!(poll_noop(r2.as_mut()), Poll::Ready(Err(RecvError)));
        assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Err(SendError(9))));
        assert!(!c.close(), "closed already");
    });
}

/// The rule for a value handed to a receive future: it was received at the claim, so it
/// holds nothing up. After `close`, the other receivers are told "closed and drained" at
/// once, and the future still delivers the value when polled.
fn a_handed_value_holds_up_no_close<S: Strategy>(p: S::Params) {
    deadline("a handed value and close", move || {
        for cap in [0, 1] {
            let c = Chan::<u32, S>::with_params(cap, p);
            let mut f = Box::pin(c.recv_async());
            assert!(poll_noop(f.as_mut()).is_pending());
            c.send(5).unwrap();
            let rx = c.clone();
            let waiting = thread::spawn(move || rx.recv());
            settle();
            c.close();
            assert_eq!(waiting.join().unwrap(), Err(RecvError));
            assert_eq!(c.nbrecv(), Err(TryRecvError::Closed));
            assert_eq!(poll_noop(f.as_mut()), Poll::Ready(Ok(5)));
            assert_eq!(c.nbrecv(), Err(TryRecvError::Closed));
        }
    });
}

/// A future dropped before it delivers its value gives it back while nobody has been told
/// "closed and drained"; once somebody has, the value is dropped with the future, once, and
/// never received after that report.
fn a_dropped_future_gives_back_only_until_drained_is_reported<S: Strategy>(p: S::Params) {
    deadline("a dropped future's value", move || {
        let drops = Arc::new(AtomicUsize::new(0));
        // Nobody looked: the value comes back, after the close too.
        let c = Chan::<Tracked, S>::with_params(0, p);
        let mut f = Box::pin(c.recv_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        c.send(Tracked::new(5, &drops)).unwrap();
        c.close();
        drop(f);
        assert_eq!(c.nbrecv().map(|t| t.id), Ok(5));
        assert_eq!(c.nbrecv().map(|t| t.id), Err(TryRecvError::Closed));
        assert_eq!(drops.load(SeqCst), 1);
        // Somebody was told: the value goes with the future.
        let c = Chan::<Tracked, S>::with_params(0, p);
        let mut f = Box::pin(c.recv_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        c.send(Tracked::new(6, &drops)).unwrap();
        c.close();
        assert!(c.recv().is_err(), "closed and drained");
        drop(f);
        assert_eq!(drops.load(SeqCst), 2, "dropped with the future");
        assert!(c.nbrecv().is_err(), "not risen from the dead");
        drop(c);
        assert_eq!(drops.load(SeqCst), 2);
    });
}

/// The same rule through an async alt's receive arm: dropped after its arm fired and after a
/// receiver was told "closed and drained", its value is dropped, not given back, and its
/// place stays empty.
fn an_alt_future_follows_the_same_rule<S: Strategy>(p: S::Params) {
    deadline("an alt's handed value", move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let c = Chan::<Tracked, S>::with_params(0, p);
        let mut x = None;
        let mut alt = Alt::new();
        alt.recv(&c, &mut x);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        c.send(Tracked::new(5, &drops)).unwrap();
        c.close();
        assert!(c.nbrecv().is_err(), "closed and drained at once");
        drop(f);
        drop(alt);
        assert!(x.is_none());
        assert_eq!(drops.load(SeqCst), 1);
        assert!(c.recv().is_err());
    });
}

/// Defect 5: a pending receive future polled twice (the second time with another waker),
/// then claimed. Clean under both borrow models in Miri.
fn a_future_polled_twice_then_claimed<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let (h1, w1) = counting();
    let (h2, w2) = counting();
    let mut f = Box::pin(c.recv_async());
    assert!(poll_with(f.as_mut(), &w1).is_pending());
    assert!(poll_with(f.as_mut(), &w1).is_pending());
    assert!(poll_with(f.as_mut(), &w2).is_pending());
    assert_eq!(c.nbsend(1), Ok(()));
    assert_eq!(
        (h1.wakes(), h2.wakes()),
        (0, 1),
        "the latest waker is woken"
    );
    assert_eq!(poll_with(f.as_mut(), &w2), Poll::Ready(Ok(1)));
}

/// Defect 5 for a send future.
fn a_send_future_polled_twice_then_claimed<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let (_, w1) = counting();
    let (h2, w2) = counting();
    let mut f = Box::pin(c.send_async(3));
    assert!(poll_with(f.as_mut(), &w1).is_pending());
    assert!(poll_with(f.as_mut(), &w2).is_pending());
    assert_eq!(c.nbrecv(), Ok(3));
    assert_eq!(h2.wakes(), 1);
    assert_eq!(poll_with(f.as_mut(), &w2), Poll::Ready(Ok(())));
}

/// Defect 5: a future polled on one thread, moved to another and polled there, claimed by a
/// third, dropped on a fourth.
fn a_future_moved_to_another_thread_between_polls<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let mut f = Box::pin(c.recv_async());
    assert!(poll_noop(f.as_mut()).is_pending());
    thread::scope(|s| {
        let mut f = s
            .spawn(move || {
                let (_, w) = counting();
                assert!(poll_with(f.as_mut(), &w).is_pending());
                f
            })
            .join()
            .unwrap();
        s.spawn(|| c.send(4).unwrap()).join().unwrap();
        let got = s.spawn(move || poll_noop(f.as_mut())).join().unwrap();
        assert_eq!(got, Poll::Ready(Ok(4)));
    });
    let mut g = Box::pin(c.recv_async());
    assert!(poll_noop(g.as_mut()).is_pending());
    thread::scope(|s| s.spawn(move || drop(g)).join().unwrap());
    assert_eq!(
        c.nbsend(1),
        Err(TrySendError::Full(1)),
        "the dropped future left"
    );
}

// The hostile-executor kit -----------------------------------------------------------------

per_backend! {
    kit:
    wakers_that_panic_when_a_partner_wakes_them,
    wakers_whose_clone_panics,
    wakers_whose_clones_panic_on_drop,
    wakers_that_reenter_the_channel,
    futures_leaked_at_every_stage,
    futures_polled_after_completion_panic_cleanly,
    cancellation_races_close,
    cancellation_races_a_claim,
    cancellation_races_the_last_endpoint,
    values_are_dropped_once_whatever_the_wakers_do,
    a_receive_whose_wake_panics_gives_its_value_back,
}

/// A receive that wakes a queued sender (refilling the slot it freed, or taking its value)
/// whose waker panics: the panic comes out of the receive, and the value it took goes back to
/// the channel first, so nothing whose send returned `Ok` is lost. An alt's received value
/// reaches its place before the wake-up.
fn a_receive_whose_wake_panics_gives_its_value_back<S: Strategy>(p: S::Params) {
    let h = Hostile::new(Fault::PanicWake);
    let w = hostile(&h);
    for cap in [0, 1] {
        let c = Chan::<u32, S>::with_params(cap, p);
        if cap == 1 {
            c.send(1).unwrap();
        }
        let mut s = Box::pin(c.send_async(2));
        assert!(poll_with(s.as_mut(), &w).is_pending());
        assert!(catch_unwind(AssertUnwindSafe(|| c.recv())).is_err());
        assert_eq!(
            poll_noop(s.as_mut()),
            Poll::Ready(Ok(())),
            "the send happened"
        );
        if cap == 1 {
            assert_eq!(c.nbrecv(), Ok(1), "given back to the front");
        }
        assert_eq!(c.nbrecv(), Ok(2));
        // The async receive.
        let mut s = Box::pin(c.send_async(3));
        if cap == 1 {
            c.send(4).unwrap();
            drop(s);
            s = Box::pin(c.send_async(3));
        }
        assert!(poll_with(s.as_mut(), &w).is_pending());
        let mut r = Box::pin(c.recv_async());
        assert!(catch_unwind(AssertUnwindSafe(|| poll_noop(r.as_mut()))).is_err());
        assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
        let mut got = vec![];
        while let Ok(v) = c.nbrecv() {
            got.push(v);
        }
        assert_eq!(got, if cap == 1 { vec![4, 3] } else { vec![3] });
        // An alt.
        if cap == 1 {
            c.send(6).unwrap();
        }
        let mut s = Box::pin(c.send_async(5));
        assert!(poll_with(s.as_mut(), &w).is_pending());
        let mut x = None;
        let mut alt = Alt::new();
        alt.recv(&c, &mut x);
        assert!(catch_unwind(AssertUnwindSafe(|| alt.try_wait())).is_err());
        drop(alt);
        let first = if cap == 1 { 6 } else { 5 };
        assert_eq!(x, Some(first), "in its place before the wake-up");
        assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
        if cap == 1 {
            assert_eq!(c.nbrecv(), Ok(5));
        }
    }
}

/// A partner's send or receive that runs a panicking waker: the operation itself has
/// happened (the panic comes out of the partner's call), nothing is lost or stuck.
fn wakers_that_panic_when_a_partner_wakes_them<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let h = Hostile::new(Fault::PanicWake);
    let w = hostile(&h);
    // A receive future woken by a send.
    let mut r = Box::pin(c.recv_async());
    assert!(poll_with(r.as_mut(), &w).is_pending());
    assert!(catch_unwind(AssertUnwindSafe(|| c.send(1))).is_err());
    assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(1)));
    // A send future woken by a receive.
    let mut s = Box::pin(c.send_async(2));
    assert!(poll_with(s.as_mut(), &w).is_pending());
    assert!(catch_unwind(AssertUnwindSafe(|| c.recv())).is_err());
    assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
    // The receive unwound: the value it took went back to the channel.
    assert_eq!(c.nbrecv(), Ok(2));
    // An alt woken by a send.
    let mut x = None;
    let mut alt = Alt::new();
    let i = alt.recv(&c, &mut x);
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_with(f.as_mut(), &w).is_pending());
    assert!(catch_unwind(AssertUnwindSafe(|| c.send(3))).is_err());
    assert_eq!(poll_noop(f.as_mut()).map(|f| f.index), Poll::Ready(i));
    drop(f);
    drop(alt);
    assert_eq!(x, Some(3));
    // `wake_by_ref` panicking, from a re-poll of a claimed-but-unsignalled future, comes
    // out of that poll only; covered by `Waker` semantics: the future stays queued.
    assert_eq!(h.wakes(), 3);
}

/// A waker whose `clone` panics: the poll that clones it fails, and the operation is as if
/// never started (a send's value is dropped with the future, once).
fn wakers_whose_clone_panics<S: Strategy>(p: S::Params) {
    let c = Chan::<Tracked, S>::with_params(0, p);
    let drops = Arc::new(AtomicUsize::new(0));
    let h = Hostile::new(Fault::PanicClone);
    let w = hostile(&h);
    let mut r = Box::pin(c.recv_async());
    assert!(catch_unwind(AssertUnwindSafe(|| poll_with(r.as_mut(), &w))).is_err());
    drop(r);
    let mut s = Box::pin(c.send_async(Tracked::new(1, &drops)));
    assert!(catch_unwind(AssertUnwindSafe(|| poll_with(s.as_mut(), &w))).is_err());
    drop(s);
    assert_eq!(drops.load(SeqCst), 1, "dropped once");
    let mut x = None;
    let mut alt = Alt::new();
    alt.recv(&c, &mut x);
    let mut f = Box::pin(alt.wait_async());
    assert!(catch_unwind(AssertUnwindSafe(|| poll_with(f.as_mut(), &w))).is_err());
    drop(f);
    drop(alt);
    assert!(matches!(
        c.nbsend(Tracked::new(2, &drops)),
        Err(TrySendError::Full(_))
    ));
    assert_eq!(drops.load(SeqCst), 2);
}

/// A waker whose clones panic when dropped: the future holds a clone and drops it when it
/// completes, is woken, or is re-polled with another waker.
fn wakers_whose_clones_panic_on_drop<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let h = Hostile::new(Fault::PanicDrop);
    let w = hostile(&h);
    // Replaced by a re-poll with another waker: the old clone's drop panics out of the poll.
    let mut r = Box::pin(c.recv_async());
    assert!(poll_with(r.as_mut(), &w).is_pending());
    let (_, other) = counting();
    let _ = catch_unwind(AssertUnwindSafe(|| poll_with(r.as_mut(), &other)));
    assert_eq!(c.nbsend(1), Ok(()));
    assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(1)));
    // Woken by value (the clone consumed in `wake`): the partner's call carries the panic.
    let mut r = Box::pin(c.recv_async());
    assert!(poll_with(r.as_mut(), &w).is_pending());
    let _ = catch_unwind(AssertUnwindSafe(|| c.send(2)));
    assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(2)));
    // Cancelled: the clone is dropped with the future.
    let mut r = Box::pin(c.recv_async());
    assert!(poll_with(r.as_mut(), &w).is_pending());
    assert!(catch_unwind(AssertUnwindSafe(|| drop(r))).is_err());
    assert_eq!(
        c.nbsend(3),
        Err(TrySendError::Full(3)),
        "the cancelled future left"
    );
}

/// Wakers that send or receive on the very channel from inside `wake`: the wake runs with
/// no lock held, so this neither deadlocks nor loses a value.
fn wakers_that_reenter_the_channel<S: Strategy>(p: S::Params) {
    deadline("re-entrant wakers", move || {
        let c = Arc::new(Chan::<u32, S>::with_params(1, p));
        let c2 = c.clone();
        let h = Hostile::reentrant(move || {
            let _ = c2.nbsend(100);
            let _ = c2.nbrecv();
            let _ = c2.nbsend(101);
        });
        let w = hostile(&h);
        let mut r = Box::pin(c.recv_async());
        assert!(poll_with(r.as_mut(), &w).is_pending());
        c.send(1).unwrap();
        assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(1)));
        assert_eq!(c.nbrecv(), Ok(101), "the wake's own sends went through");
        // A send future woken by a receive, the wake filling the slot just freed.
        c.send(2).unwrap();
        let mut s = Box::pin(c.send_async(3));
        assert!(poll_with(s.as_mut(), &w).is_pending());
        assert_eq!(c.recv(), Ok(2));
        assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
        let mut got = vec![];
        while let Ok(v) = c.nbrecv() {
            got.push(v);
        }
        got.sort();
        assert_eq!(got, [101], "the wake took 3 and sent 101");
        // Close from inside a wake.
        let c3 = c.clone();
        let closer = Hostile::reentrant(move || {
            c3.close();
        });
        let w = hostile(&closer);
        let mut r = Box::pin(c.recv_async());
        assert!(poll_with(r.as_mut(), &w).is_pending());
        c.send(4).unwrap();
        assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(4)));
        assert!(c.is_closed());
        drop(r);
        drop(h);
    });
}

/// Futures leaked at every stage (never polled, queued, claimed, completed), then everything
/// they borrowed dropped: nothing dangles, and what they held is leaked, never freed twice.
fn futures_leaked_at_every_stage<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let c = Chan::<Tracked, S>::with_params(0, p);
    // Never polled.
    std::mem::forget(c.send_async(Tracked::new(0, &drops)));
    std::mem::forget(c.recv_async());
    // Completed.
    let mut s = Box::pin(c.send_async(Tracked::new(1, &drops)));
    let mut r = Box::pin(c.recv_async());
    assert!(poll_noop(r.as_mut()).is_pending());
    assert!(poll_noop(s.as_mut()).is_ready());
    assert!(matches!(poll_noop(r.as_mut()), Poll::Ready(Ok(_))));
    std::mem::forget(s);
    std::mem::forget(r);
    // Queued, and claimed while leaked: a receive future's value is leaked with it.
    let mut r = Box::pin(c.recv_async());
    assert!(poll_noop(r.as_mut()).is_pending());
    std::mem::forget(r);
    assert!(c.nbsend(Tracked::new(2, &drops)).is_ok());
    let mut s = Box::pin(c.send_async(Tracked::new(3, &drops)));
    assert!(poll_noop(s.as_mut()).is_pending());
    std::mem::forget(s);
    assert_eq!(c.nbrecv().map(|t| t.id), Ok(3));
    // Queued and leaked, then the channel goes: its queue holds nodes in leaked memory.
    let mut r = Box::pin(c.recv_async());
    assert!(poll_noop(r.as_mut()).is_pending());
    std::mem::forget(r);
    // Streams and sinks leaked while queued.
    stream_and_sink_leaks(&c, &drops);
    drop(c);
    assert_eq!(
        drops.load(SeqCst),
        2,
        "1 received and dropped, 3 received and dropped"
    );
}

#[cfg(all(feature = "stream", feature = "sink"))]
fn stream_and_sink_leaks<S: Strategy>(c: &Chan<Tracked, S>, drops: &Arc<AtomicUsize>) {
    use futures::{Sink, Stream};
    let mut st = Box::pin(c.stream());
    assert!(st
        .as_mut()
        .poll_next(&mut std::task::Context::from_waker(
            futures::task::noop_waker_ref()
        ))
        .is_pending());
    std::mem::forget(st);
    let mut sk = Box::pin(c.sink());
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    assert!(sk.as_mut().poll_ready(&mut cx).is_ready());
    sk.as_mut().start_send(Tracked::new(9, drops)).unwrap();
    // A receiver (the leaked stream) waits: the flush hands it the value at once.
    assert!(sk.as_mut().poll_flush(&mut cx).is_ready());
    std::mem::forget(sk);
}

#[cfg(not(all(feature = "stream", feature = "sink")))]
fn stream_and_sink_leaks<S: Strategy>(_: &Chan<Tracked, S>, _: &Arc<AtomicUsize>) {}

/// Polling a completed future panics with a message, and leaves the channel sound.
fn futures_polled_after_completion_panic_cleanly<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(1, p);
    let mut s = Box::pin(c.send_async(1));
    assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
    assert!(catch_unwind(AssertUnwindSafe(|| poll_noop(s.as_mut()))).is_err());
    let mut r = Box::pin(c.recv_async());
    assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Ok(1)));
    assert!(catch_unwind(AssertUnwindSafe(|| poll_noop(r.as_mut()))).is_err());
    let mut x = None;
    let mut alt = Alt::new();
    alt.recv(&c, &mut x);
    c.send(2).unwrap();
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_noop(f.as_mut()).is_ready());
    assert!(catch_unwind(AssertUnwindSafe(|| poll_noop(f.as_mut()))).is_err());
    drop(f);
    drop(alt);
    assert_eq!(x, Some(2));
    drop((s, r));
    assert_eq!(c.nbrecv(), Err(TryRecvError::Empty));
}

fn rounds() -> usize {
    testkit::count(200, 4, 2)
}

/// A queued future dropped on one thread while another closes the channel: each value
/// ends up exactly once (received, given back and received, or dropped with its sender's
/// future), never after a receiver saw the channel drained.
fn cancellation_races_close<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    for round in 0..rounds() {
        let c = Chan::<Tracked, S>::with_params(round % 2, p);
        let mut r = Box::pin(c.recv_async());
        assert!(poll_noop(r.as_mut()).is_pending());
        let mut s = Box::pin(c.send_async(Tracked::new(round as u64, &drops)));
        let sent = poll_noop(s.as_mut());
        thread::scope(|sc| {
            sc.spawn(|| c.close());
            sc.spawn(move || drop((r, s)));
        });
        let _ = sent;
        // Whatever was given back is still receivable; then the channel reads drained.
        while c.nbrecv().is_ok() {}
        assert_eq!(c.nbrecv().map(|_| ()), Err(TryRecvError::Closed));
    }
    assert_eq!(drops.load(SeqCst), rounds(), "every value dropped once");
}

/// A queued receive future dropped while a sender claims it: the value is received by it,
/// given back, or never sent; never two of those, never none.
fn cancellation_races_a_claim<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut sent = 0;
    for round in 0..rounds() {
        let c = Chan::<Tracked, S>::with_params(0, p);
        let mut r = Box::pin(c.recv_async());
        assert!(poll_noop(r.as_mut()).is_pending());
        let ok = thread::scope(|sc| {
            let tx = sc.spawn(|| c.nbsend(Tracked::new(round as u64, &drops)).is_ok());
            sc.spawn(move || drop(r));
            tx.join().unwrap()
        });
        if ok {
            sent += 1;
            // Given back: the value is buffered (over the capacity) until received.
            assert_eq!(c.nbrecv().map(|t| t.id), Ok(round as u64));
        }
        assert!(c.nbrecv().is_err());
    }
    assert_eq!(
        drops.load(SeqCst),
        rounds(),
        "each value dropped once ({sent} sent)"
    );
}

/// Endpoints: a queued receive future, handed a value, dropped while the last `Sender`
/// goes (closing the channel): the value comes back and is received, then the end is seen.
fn cancellation_races_the_last_endpoint<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    for round in 0..rounds() {
        let (tx, rx) = Chan::<Tracked, S>::with_params(round % 2, p).split();
        let rx2 = rx.clone();
        let mut r = Box::pin(rx2.recv_async());
        assert!(poll_noop(r.as_mut()).is_pending());
        assert!(tx.nbsend(Tracked::new(round as u64, &drops)).is_ok());
        thread::scope(|sc| {
            sc.spawn(move || drop(tx));
            sc.spawn(move || drop(r));
        });
        drop(rx2);
        assert_eq!(rx.recv().map(|t| t.id), Ok(round as u64));
        assert!(rx.recv().is_err());
    }
    assert_eq!(drops.load(SeqCst), rounds(), "each value dropped once");
}

/// Many rounds of the above with panicking and re-entrant wakers mixed in: every value is
/// dropped exactly once.
fn values_are_dropped_once_whatever_the_wakers_do<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let made = rounds() * 3;
    for round in 0..rounds() {
        let c = Arc::new(Chan::<Tracked, S>::with_params(round % 3, p));
        let c2 = c.clone();
        let reenter = Hostile::reentrant(move || drop(c2.nbrecv()));
        let panicky = Hostile::new(Fault::PanicWake);
        let (wr, wp) = (hostile(&reenter), hostile(&panicky));
        let mut futs: Vec<Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>> = vec![];
        for k in 0..3u64 {
            let v = Tracked::new(k, &drops);
            let cc = &*c;
            futs.push(Box::pin(async move {
                let _ = cc.send_async(v).await;
            }));
            futs.push(Box::pin(async move {
                let _ = cc.recv_async().await;
            }));
        }
        for (i, f) in futs.iter_mut().enumerate() {
            let w = if i % 2 == 0 { &wr } else { &wp };
            let _ = catch_unwind(AssertUnwindSafe(|| poll_with(f.as_mut(), w)));
        }
        thread::scope(|sc| {
            let (a, b) = futs.split_at_mut(3);
            sc.spawn(|| {
                for f in a {
                    let _ = catch_unwind(AssertUnwindSafe(|| poll_noop(f.as_mut())));
                }
            });
            sc.spawn(|| {
                for f in b {
                    let _ = catch_unwind(AssertUnwindSafe(|| poll_noop(f.as_mut())));
                }
            });
        });
        drop(futs);
        let _ = catch_unwind(AssertUnwindSafe(|| c.close()));
        drop(c);
    }
    assert_eq!(drops.load(SeqCst), made, "every value dropped exactly once");
}

// A `Waiter` that is still used by the kit's `Slow` lock must stay `Send + Sync`.
const _: fn() = || {
    fn waiter<W: Waiter>() {}
    waiter::<<locks::Adaptive as Strategy>::Waiter>();
};

// `SendAlt` inside `tokio::spawn` on the multi-thread runtime (tokio's default; an alt in a spawned
// task): the same protocol, its future `Send`.

per_backend! {
    send_alt:
    #[cfg_attr(miri, ignore)] send_alt_in_spawned_tasks,
}

fn send_alt_in_spawned_tasks<S: Strategy>(p: S::Params) {
    fn assert_send<F: Send>(_: &F) {}
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let n = testkit::count(2000, 10, 10) as u32;
    let a = Arc::new(Chan::<u32, S>::with_params(0, p));
    let b = Arc::new(Chan::<u32, S>::with_params(1, p));
    let out = Arc::new(Chan::<u32, S>::with_params(0, Default::default()));
    let got = rt.block_on(async {
        let (a2, b2, out2) = (a.clone(), b.clone(), out.clone());
        let relay = tokio::spawn(async move {
            // Values received and not yet forwarded, oldest first; the send arm offers the
            // oldest, so each source's order survives the relay.
            let mut buf = std::collections::VecDeque::new();
            let mut forwarded = 0;
            while forwarded < 2 * n {
                let (mut x, mut y) = (None, None);
                let mut send = buf.pop_front();
                let mut alt = chan::SendAlt::new();
                let ai = alt.recv(&*a2, &mut x);
                let bi = alt.recv(&*b2, &mut y);
                let si = alt.send(&*out2, &mut send);
                let f = alt.wait_async();
                assert_send(&f);
                let fired = f.await;
                drop(alt);
                assert!(!fired.closed);
                if fired.index == si {
                    forwarded += 1;
                } else if let Some(v) = send {
                    buf.push_front(v);
                }
                match fired.index {
                    i if i == ai => buf.push_back(x.unwrap()),
                    i if i == bi => buf.push_back(y.unwrap()),
                    _ => {}
                }
            }
        });
        let pa = tokio::spawn({
            let a = a.clone();
            async move {
                for i in 0..n {
                    a.send_async(i).await.unwrap();
                }
            }
        });
        let pb = tokio::spawn({
            let b = b.clone();
            async move {
                for i in 0..n {
                    b.send_async(n + i).await.unwrap();
                }
            }
        });
        let mut got = vec![];
        for _ in 0..2 * n {
            got.push(out.recv_async().await.unwrap());
        }
        relay.await.unwrap();
        pa.await.unwrap();
        pb.await.unwrap();
        got
    });
    let (mut from_a, mut from_b): (Vec<u32>, Vec<u32>) = got.iter().partition(|&&v| v < n);
    assert_eq!(
        from_a,
        (0..n).collect::<Vec<_>>(),
        "a's values in order, each once"
    );
    assert_eq!(
        from_b,
        (n..2 * n).collect::<Vec<_>>(),
        "b's values in order, each once"
    );
    from_a.clear();
    from_b.clear();
}
