//! User code that panics in the middle of the channel's work, and futures leaked holding a
//! value: the third outside review's six defects, one regression test each, on every backend.
//!
//! The rule they check (`chan/src/unwind.rs`): every change to the channel's state finishes
//! before any user code runs; wakers and `Drop`s then run caught, all of them even if one
//! panics; the first panic goes on once, at the end, and never on a thread already
//! unwinding. A value handed to a receive future was received at the claim, so a future
//! leaked with it holds up nothing, and a value given back is dropped instead once somebody
//! has been told "closed and drained".
//!
//! The hostile wakers here panic whenever they are woken, also on a thread that is already
//! unwinding, where a panic that escaped would abort the process. `.ci/miri` runs this file
//! under Stacked and Tree Borrows.
#![cfg(not(loom))]

#[path = "exec/hostile.rs"]
mod hostile;

use chan::{Alt, Chan, RecvError, RecvTimeoutError, SendError, TryRecvError};
use hostile::{hostile, poll_noop, poll_with, Fault, Hostile};
use locks::Strategy;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::Poll;
use std::thread;
use std::time::Duration;
use testkit::{deadline, per_backend, Tracked};

/// A short pause that lets another thread reach its wait (virtual under Miri).
fn settle() {
    thread::sleep(Duration::from_millis(if cfg!(miri) { 5 } else { 50 }));
}

/// A waker that panics on every wake-up, and its count.
fn panicking() -> (Arc<Hostile>, std::task::Waker) {
    let h = Hostile::new(Fault::PanicWake);
    let w = hostile(&h);
    (h, w)
}

per_backend! {
    defects:
    a_leaked_future_holding_a_value_holds_up_no_close,
    a_leaked_future_holding_a_value_holds_up_no_last_sender,
    no_value_reappears_after_closed_and_drained,
    a_dropped_alt_future_keeps_unsent_values_past_a_panicking_waker,
    a_dropped_alt_future_gives_back_past_a_panicking_waker,
    a_stream_survives_another_tasks_panicking_waker,
    a_sink_survives_another_tasks_panicking_waker,
    the_last_sender_dropped_while_unwinding_does_not_abort,
    the_last_receiver_dropped_while_unwinding_does_not_abort,
    a_dropped_chan_leaves_both_sides_counted_out,
    the_last_receiver_discards_its_buffer_past_a_panicking_waker,
}

/// Defect 1: a receive future is handed a value and leaked; `close` still ends every other
/// receiver, blocked or not, and the thread that leaked it can receive without deadlock.
fn a_leaked_future_holding_a_value_holds_up_no_close<S: Strategy>(p: S::Params) {
    deadline("a leaked future and close", move || {
        let c = Chan::<u32, S>::with_params(0, p);
        let mut f = Box::pin(c.recv_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        assert_eq!(c.nbsend(5), Ok(()), "handed to the future");
        std::mem::forget(f);
        let rx = c.clone();
        let waiting = thread::spawn(move || rx.recv_timeout(Duration::from_secs(20)));
        settle();
        assert!(c.close());
        assert_eq!(waiting.join().unwrap(), Err(RecvTimeoutError::Closed));
        assert_eq!(c.iter().count(), 0, "iter ends");
        assert_eq!(
            c.recv(),
            Err(RecvError),
            "the leaking thread is not deadlocked"
        );
        assert_eq!(c.nbrecv(), Err(TryRecvError::Closed));
    });
}

/// Defect 1 by the last `Sender`'s drop instead of `close`.
fn a_leaked_future_holding_a_value_holds_up_no_last_sender<S: Strategy>(p: S::Params) {
    deadline("a leaked future and the last sender", move || {
        let (tx, rx) = Chan::<u32, S>::with_params(0, p).split();
        let mut f = Box::pin(rx.recv_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        assert_eq!(tx.nbsend(5), Ok(()));
        std::mem::forget(f);
        drop(tx);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(20)),
            Err(RecvTimeoutError::Closed)
        );
        assert_eq!(rx.iter().count(), 0);
    });
}

/// Defect 2: a future handed 5; a queued task whose waker panics and a blocked thread. The
/// close tells both "closed and drained" (the panic goes on from `close`), the future then
/// delivers 5 without a panic, and 5 never shows up in the channel again. Dropped instead of
/// polled, the future drops 5: given back, it would rise from the dead.
fn no_value_reappears_after_closed_and_drained<S: Strategy>(p: S::Params) {
    deadline("no resurrection", move || {
        for deliver in [true, false] {
            let drops = Arc::new(AtomicUsize::new(0));
            let c = Chan::<Tracked, S>::with_params(0, p);
            let mut r1 = Box::pin(c.recv_async());
            assert!(poll_noop(r1.as_mut()).is_pending());
            assert!(c.nbsend(Tracked::new(5, &drops)).is_ok());
            let (h, w) = panicking();
            let mut r2 = Box::pin(c.recv_async());
            assert!(poll_with(r2.as_mut(), &w).is_pending());
            let rx = c.clone();
            let r3 = thread::spawn(move || rx.recv().map(|t| t.id));
            settle();
            let closed = catch_unwind(AssertUnwindSafe(|| c.close()));
            assert!(
                closed.is_err(),
                "r2's waker panicked, after everyone was woken"
            );
            assert_eq!(r3.join().unwrap(), Err(RecvError));
            assert_eq!(h.wakes(), 1);
            assert_eq!(
                poll_noop(r2.as_mut()).map(|r| r.is_err()),
                Poll::Ready(true)
            );
            if deliver {
                let got = catch_unwind(AssertUnwindSafe(|| poll_noop(r1.as_mut())));
                let got = got.expect("completing runs nobody's waker");
                assert_eq!(got.map(|r| r.map(|t| t.id)), Poll::Ready(Ok(5)));
                assert_eq!(drops.load(SeqCst), 1);
                drop(r1);
            } else {
                drop(r1);
                assert_eq!(drops.load(SeqCst), 1, "dropped with the future");
            }
            assert!(c.nbrecv().is_err(), "5 does not rise from the dead");
            drop(r2);
            drop(c);
            assert_eq!(drops.load(SeqCst), 1, "dropped once");
        }
    });
}

/// Defect 3: an async alt whose receive arm fired (handed 5) while its send arm still holds
/// 7 is dropped after a close that met a panicking waker. The send arm's 7 is back in its
/// place (it was lost: the panic skipped putting it back), and 5, which somebody was told
/// "closed and drained" after, is dropped once rather than given back.
fn a_dropped_alt_future_keeps_unsent_values_past_a_panicking_waker<S: Strategy>(p: S::Params) {
    deadline("an alt's unsent values", move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let c = Chan::<Tracked, S>::with_params(0, p);
        let d = Chan::<Tracked, S>::with_params(0, p);
        let (mut got, mut out) = (None, Some(Tracked::new(7, &drops)));
        let mut alt = Alt::new();
        alt.recv(&c, &mut got);
        alt.send(&d, &mut out);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        assert!(
            c.nbsend(Tracked::new(5, &drops)).is_ok(),
            "the receive arm fires"
        );
        let calm = Hostile::new(Fault::None);
        let mut r2 = Box::pin(c.recv_async());
        assert!(poll_with(r2.as_mut(), &hostile(&calm)).is_pending());
        let (h, w) = panicking();
        let mut r3 = Box::pin(c.recv_async());
        assert!(poll_with(r3.as_mut(), &w).is_pending());
        let closed = catch_unwind(AssertUnwindSafe(|| c.close()));
        assert!(
            closed.is_err(),
            "r3's waker panicked, once everyone was woken"
        );
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(f)));
        assert!(dropped.is_ok(), "nobody's waker runs: 5 has nowhere to go");
        drop(alt);
        assert!(got.is_none());
        assert_eq!(
            out.as_ref().map(|t| t.id),
            Some(7),
            "7 was not sent, and is back"
        );
        assert_eq!(drops.load(SeqCst), 1, "5 dropped once");
        assert_eq!((calm.wakes(), h.wakes()), (1, 1));
        assert!(matches!(
            poll_noop(r2.as_mut()),
            Poll::Ready(Err(RecvError))
        ));
        assert!(matches!(
            poll_noop(r3.as_mut()),
            Poll::Ready(Err(RecvError))
        ));
        assert!(d.nbrecv().is_err());
    });
}

/// Defect 3, the wake-up in the drop itself: an async alt dropped after its receive arm
/// fired gives 5 back to a queued task whose waker panics. The panic comes out of the drop
/// once the send arm's 7 is back in its place, and 5 reaches that task.
fn a_dropped_alt_future_gives_back_past_a_panicking_waker<S: Strategy>(p: S::Params) {
    deadline("an alt's give-back", move || {
        let (c, d) = (
            Chan::<u32, S>::with_params(0, p),
            Chan::<u32, S>::with_params(0, p),
        );
        let (mut got, mut out) = (None, Some(7));
        let mut alt = Alt::new();
        alt.recv(&c, &mut got);
        alt.send(&d, &mut out);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_noop(f.as_mut()).is_pending());
        assert_eq!(c.nbsend(5), Ok(()), "the alt's receive arm fires");
        let (h, w) = panicking();
        let mut r2 = Box::pin(c.recv_async());
        assert!(poll_with(r2.as_mut(), &w).is_pending());
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(f)));
        assert!(dropped.is_err(), "r2's waker panicked");
        drop(alt);
        assert_eq!((got, out), (None, Some(7)), "7 was not sent, and is back");
        assert_eq!(h.wakes(), 1);
        assert_eq!(poll_noop(r2.as_mut()), Poll::Ready(Ok(5)));
        assert_eq!(d.nbrecv(), Err(TryRecvError::Empty));
    });
}

/// Defect 4, the stream: it takes a queued send future's value, and that future's waker
/// panics. The value goes back, the panic comes out of `poll_next`, and the stream goes on:
/// the next poll receives the value.
#[cfg(feature = "stream")]
fn a_stream_survives_another_tasks_panicking_waker<S: Strategy>(p: S::Params) {
    use futures::Stream;
    let c = Chan::<u32, S>::with_params(0, p);
    let (h, w) = panicking();
    let mut s1 = Box::pin(c.send_async(3));
    assert!(poll_with(s1.as_mut(), &w).is_pending());
    let mut st = Box::pin(c.clone().split().1.into_stream());
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    let first = catch_unwind(AssertUnwindSafe(|| st.as_mut().poll_next(&mut cx)));
    assert!(first.is_err(), "the sender's waker panicked");
    assert_eq!(h.wakes(), 1);
    assert_eq!(st.as_mut().poll_next(&mut cx), Poll::Ready(Some(3)));
    assert_eq!(poll_noop(s1.as_mut()), Poll::Ready(Ok(())));
    assert!(st.as_mut().poll_next(&mut cx).is_pending(), "still usable");
    assert_eq!(c.nbsend(4), Ok(()), "to the stream's queued receive");
    assert_eq!(st.as_mut().poll_next(&mut cx), Poll::Ready(Some(4)));
}

#[cfg(not(feature = "stream"))]
fn a_stream_survives_another_tasks_panicking_waker<S: Strategy>(_: S::Params) {}

/// Defect 4, the sink: its flush hands the item to a queued receive future whose waker
/// panics. The item is delivered, the panic comes out of `poll_flush`, and the sink takes the
/// next item.
#[cfg(feature = "sink")]
fn a_sink_survives_another_tasks_panicking_waker<S: Strategy>(p: S::Params) {
    use futures::Sink;
    let c = Chan::<u32, S>::with_params(0, p);
    let (h, w) = panicking();
    let mut r1 = Box::pin(c.recv_async());
    assert!(poll_with(r1.as_mut(), &w).is_pending());
    let mut sk = Box::pin(c.clone().split().0.into_sink());
    let mut cx = std::task::Context::from_waker(futures::task::noop_waker_ref());
    assert_eq!(sk.as_mut().poll_ready(&mut cx), Poll::Ready(Ok(())));
    sk.as_mut().start_send(3).unwrap();
    let flushed = catch_unwind(AssertUnwindSafe(|| sk.as_mut().poll_flush(&mut cx)));
    assert!(flushed.is_err(), "the receiver's waker panicked");
    assert_eq!(h.wakes(), 1);
    assert_eq!(poll_noop(r1.as_mut()), Poll::Ready(Ok(3)));
    assert_eq!(sk.as_mut().poll_ready(&mut cx), Poll::Ready(Ok(())));
    sk.as_mut().start_send(4).unwrap();
    assert!(
        sk.as_mut().poll_flush(&mut cx).is_pending(),
        "nobody receives yet"
    );
    assert_eq!(c.nbrecv(), Ok(4));
    assert_eq!(sk.as_mut().poll_flush(&mut cx), Poll::Ready(Ok(())));
}

#[cfg(not(feature = "sink"))]
fn a_sink_survives_another_tasks_panicking_waker<S: Strategy>(_: S::Params) {}

/// The message of a panic, for the tests that check which panic came out.
fn message(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<&str>().copied().unwrap_or("?")
}

/// Defect 5: the last `Sender` goes with a thread that is already unwinding, and the close
/// wakes a task whose waker panics. The process goes on (it aborted: a panic in a destructor
/// during cleanup), the thread's own panic comes out of `join`, and the task sees the close.
fn the_last_sender_dropped_while_unwinding_does_not_abort<S: Strategy>(p: S::Params) {
    deadline("the last sender while unwinding", move || {
        let (tx, rx) = Chan::<u32, S>::with_params(0, p).split();
        let (h, w) = panicking();
        let mut r = Box::pin(rx.recv_async());
        assert!(poll_with(r.as_mut(), &w).is_pending());
        let failing = thread::spawn(move || {
            let _tx = tx;
            panic!("the sender's own failure");
        });
        let p = failing.join().unwrap_err();
        assert_eq!(message(&*p), "the sender's own failure");
        assert_eq!(h.wakes(), 1);
        assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Err(RecvError)));
    });
}

/// A value whose `Drop` panics once `armed`.
struct Bomb(Arc<AtomicUsize>);

impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
        panic!("a buffered value's drop");
    }
}

/// Defect 5 on the other side: the last `Receiver` goes with an unwinding thread, the close
/// wakes a send future whose waker panics, and the buffered values' `Drop`s panic too. No
/// abort; every buffered value is dropped once; the sender sees the close.
fn the_last_receiver_dropped_while_unwinding_does_not_abort<S: Strategy>(p: S::Params) {
    deadline("the last receiver while unwinding", move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = Chan::<Bomb, S>::with_params(2, p).split();
        assert!(tx.nbsend(Bomb(drops.clone())).is_ok());
        assert!(tx.nbsend(Bomb(drops.clone())).is_ok());
        let (h, w) = panicking();
        let mut s = Box::pin(tx.send_async(Bomb(drops.clone())));
        assert!(poll_with(s.as_mut(), &w).is_pending());
        let failing = thread::spawn(move || {
            let _rx = rx;
            panic!("the receiver's own failure");
        });
        let p = failing.join().unwrap_err();
        assert_eq!(message(&*p), "the receiver's own failure");
        assert_eq!(drops.load(SeqCst), 2, "both buffered values dropped");
        assert_eq!(h.wakes(), 1);
        let refused = poll_noop(s.as_mut());
        assert!(matches!(refused, Poll::Ready(Err(SendError(_)))));
        assert!(catch_unwind(AssertUnwindSafe(|| drop(refused))).is_err());
        assert_eq!(drops.load(SeqCst), 3);
    });
}

/// Defect 6: a `Chan` handle, the last sending one, is dropped; its close re-raises a
/// waker's panic. The handle is counted out of the receiving side as well.
fn a_dropped_chan_leaves_both_sides_counted_out<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let (tx, rx) = c.clone().split();
    drop(tx);
    assert_eq!((rx.sender_count(), rx.receiver_count()), (1, 2));
    let (h, w) = panicking();
    let mut r = Box::pin(rx.recv_async());
    assert!(poll_with(r.as_mut(), &w).is_pending());
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(c)));
    assert!(dropped.is_err(), "the close re-raised the waker's panic");
    assert_eq!((rx.sender_count(), rx.receiver_count()), (0, 1));
    assert!(rx.is_closed());
    assert_eq!(h.wakes(), 1);
    assert_eq!(poll_noop(r.as_mut()), Poll::Ready(Err(RecvError)));
}

/// Defect 6, the buffer: the last receiving handle goes, its close meets a panicking waker,
/// and the buffered values are dropped all the same, when the handle goes rather than with
/// the last sender.
fn the_last_receiver_discards_its_buffer_past_a_panicking_waker<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = Chan::<Tracked, S>::with_params(1, p).split();
    assert!(tx.nbsend(Tracked::new(1, &drops)).is_ok());
    let (h, w) = panicking();
    let mut s = Box::pin(tx.send_async(Tracked::new(2, &drops)));
    assert!(poll_with(s.as_mut(), &w).is_pending());
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(rx)));
    assert!(dropped.is_err(), "the close re-raised the waker's panic");
    assert_eq!(
        drops.load(SeqCst),
        1,
        "the buffered value went with the receiver"
    );
    assert_eq!(h.wakes(), 1);
    let refused = poll_noop(s.as_mut());
    assert!(matches!(refused, Poll::Ready(Err(SendError(ref t))) if t.id == 2));
    drop(refused);
    assert_eq!(drops.load(SeqCst), 2);
}
