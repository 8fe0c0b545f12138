//! Model checks of the channel protocols: rendezvous hand-off, full/empty wake-ups, close, and
//! a timed-out waiter racing its partner.
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p plan9-chan --test loom`
//!
//! Each model is a function generic over the strategy, named in [`loom_models!`]'s list, which
//! makes its test (`models::rendezvous_hand_off`, ...) and checks it with every backend.
#![cfg(loom)]

use chan::{Chan, RecvTimeoutError, SendError};
use locks::Strategy;
use loom::thread;
use std::time::Instant;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.max_branches = 20_000;
    b.check(f);
}

/// One `#[test]` per model, each checking the model with every backend in turn.
///
/// ```ignore
/// loom_models! { models: rendezvous_hand_off, close_wakes_everyone }
/// fn rendezvous_hand_off<S: Strategy>(p: S::Params) { .. }
/// ```
///
/// makes `models::rendezvous_hand_off`, which runs `rendezvous_hand_off::<S>(p)` as a loom
/// model ([`model`]) for each of `Backend::ALL`, with its strategy and parameters, and the same
/// for `close_wakes_everyone`. An attribute written before a name goes on its test.
macro_rules! loom_models {
    ($group:ident: $($(#[$attr:meta])* $f:ident),+ $(,)?) => {
        mod $group {
            $(
                #[test]
                $(#[$attr])*
                fn $f() {
                    struct Model;
                    impl ::locks::Visit for Model {
                        type Output = ();
                        fn visit<S: ::locks::Strategy>(self, p: S::Params) {
                            super::model(move || super::$f::<S>(p));
                        }
                    }
                    for b in ::locks::Backend::ALL {
                        b.visit(Model);
                    }
                    // The adaptive lock without its yields: under loom a yield lets the
                    // partner finish first, so with the default budget most waits end
                    // before the futex sleep that this backend makes every one of them take.
                    super::sleeping_adaptive().visit(Model);
                }
            )+
        }
    };
}

/// The adaptive backend with no yield or spin budget, so that every wait reaches the futex.
fn sleeping_adaptive() -> locks::Backend {
    locks::Backend::Adaptive(
        locks::AdaptiveParams::DEFAULT
            .with_yield_ns(0)
            .with_wait_spin_ns(0),
    )
}

loom_models! {
    models:
    rendezvous_hand_off,
    full_and_empty_wake_ups,
    close_wakes_everyone,
    timeout_races_hand_off,
    alt_is_claimed_by_exactly_one_channel,
    nonblocking_polls_are_not_store_buffered,
    a_waiter_returning_early_is_waited_again,
    async_tasks_meet_blocking_threads,
    a_dropped_recv_future_loses_nothing,
    a_dropped_send_future_sends_at_most_once,
    a_replaced_waker_is_the_one_woken,
    an_async_alt_is_woken_by_a_thread,
    a_handed_value_holds_up_no_receiver,
    a_value_given_back_never_rises_after_drained,
    a_weak_upgrade_races_the_last_sender_drop,
}

fn rendezvous_hand_off<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let tx = c.clone();
    let t = thread::spawn(move || tx.send(7).unwrap());
    assert_eq!(c.recv(), Ok(7));
    t.join().unwrap();
}

fn full_and_empty_wake_ups<S: Strategy>(p: S::Params) {
    // One slot, two values: the sender must block once on full, and the receiver may
    // block on empty; both wake-ups must arrive, in order.
    let c = Chan::<u32, S>::with_params(1, p);
    let tx = c.clone();
    let t = thread::spawn(move || {
        tx.send(1).unwrap();
        tx.send(2).unwrap();
    });
    assert_eq!(c.recv(), Ok(1));
    assert_eq!(c.recv(), Ok(2));
    t.join().unwrap();
}

fn close_wakes_everyone<S: Strategy>(p: S::Params) {
    // A blocked (or about to block) receiver and sender, each woken by close.
    let c = Chan::<u32, S>::with_params(0, p);
    let (rx, tx) = (c.clone(), c.clone());
    let r = thread::spawn(move || rx.recv());
    let s = thread::spawn(move || tx.send(5));
    c.close();
    let (got, sent) = (r.join().unwrap(), s.join().unwrap());
    // Either they met before the close, or both were refused.
    match got {
        Ok(v) => assert_eq!((v, sent), (5, Ok(()))),
        Err(_) => assert_eq!(sent, Err(SendError(5))),
    }
}

fn timeout_races_hand_off<S: Strategy>(p: S::Params) {
    // Under loom a timed wait looks once and times out, so the receiver's cancel
    // races the sender's claim: the value must end up in exactly one place.
    let c = Chan::<u32, S>::with_params(0, p);
    let tx = c.clone();
    let t = thread::spawn(move || tx.send_deadline(9, Instant::now()).is_ok());
    let got = c.recv_deadline(Instant::now());
    let sent = t.join().unwrap();
    match got {
        Ok(v) => assert!(v == 9 && sent),
        Err(RecvTimeoutError::Timeout) => assert!(!sent),
        Err(e) => panic!("{e}"),
    }
}

fn alt_is_claimed_by_exactly_one_channel<S: Strategy>(p: S::Params) {
    // An alt receiving from two rendezvous channels is offered a value on each: by a
    // blocking sender on `a` and a non-blocking one on `b`. Exactly one arm fires, and
    // the other value is neither lost nor delivered twice.
    let a = Chan::<u32, S>::with_params(0, p);
    let b = Chan::<u32, S>::with_params(0, p);
    let (ta, tb) = (a.clone(), b.clone());
    let sa = thread::spawn(move || ta.send(1));
    let sb = thread::spawn(move || tb.nbsend(2).is_ok());
    let (mut x, mut y) = (None, None);
    let mut alt = chan::Alt::new();
    alt.recv(&a, &mut x);
    alt.recv(&b, &mut y);
    let fired = alt.wait();
    drop(alt);
    let b_sent = sb.join().unwrap();
    match fired.index {
        0 => assert_eq!((x, y, b_sent), (Some(1), None, false)),
        _ => {
            assert_eq!((x, y, b_sent), (None, Some(2), true));
            assert_eq!(a.recv(), Ok(1)); // release the blocked sender
        }
    }
    assert_eq!(sa.join().unwrap(), Ok(()));
}

fn nonblocking_polls_are_not_store_buffered<S: Strategy>(p: S::Params) {
    // Each thread sends on its own channel, then polls the other's. Some order of
    // the four operations exists in every execution, so at least one poll must see
    // a value: both `Empty` is the store-buffering outcome that the fast path's
    // fence forbids (loom models `fence(SeqCst)` exactly).
    let a = Chan::<u32, S>::with_params(1, p);
    let b = Chan::<u32, S>::with_params(1, p);
    let (a2, b2) = (a.clone(), b.clone());
    let t = thread::spawn(move || {
        b2.send(1).unwrap();
        a2.nbrecv().is_ok()
    });
    a.send(1).unwrap();
    let mine = b.nbrecv().is_ok();
    let theirs = t.join().unwrap();
    assert!(
        mine || theirs,
        "both non-blocking receives missed a sent value"
    );
}

/// A lock whose waiter's `wait` returns once before any signal: the contract lets chan rely
/// only on `is_signalled`, so chan must wait again rather than take an unfilled node.
///
/// (A waiter that *unwinds* is covered natively and under Miri in `tests/hostile.rs`: loom
/// runs its threads as generators on one OS thread, and switching threads in the middle of
/// an unwind confuses its bookkeeping, which reports a causality violation in any model
/// whose unwinding thread meets another at a scheduling point.)
struct Hasty<S>(S);

struct HastyWaiter<W> {
    inner: W,
    returned_early: loom::sync::atomic::AtomicBool,
}

// SAFETY: forwards to `W`, except that the first `wait` returns at once, which the contract
// allows only because `is_signalled` stays truthful.
unsafe impl<W: locks::Waiter> locks::Waiter for HastyWaiter<W> {
    fn wait(&self) {
        if !self
            .returned_early
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        self.inner.wait()
    }
    fn wait_until(&self, deadline: Instant) -> bool {
        self.inner.wait_until(deadline)
    }
    fn is_signalled(&self) -> bool {
        self.inner.is_signalled()
    }
    unsafe fn signal(this: *const Self) {
        // SAFETY: forwarded.
        unsafe { W::signal(&raw const (*this).inner) }
    }
}

// SAFETY: mutual exclusion is `S`'s.
unsafe impl<S: Strategy> Strategy for Hasty<S> {
    type Params = S::Params;
    type Waiter = HastyWaiter<S::Waiter>;
    const NAME: &'static str = "hasty";
    fn with_params(p: S::Params) -> Self {
        Hasty(S::with_params(p))
    }
    fn params(&self) -> S::Params {
        self.0.params()
    }
    fn waiter(&self) -> Self::Waiter {
        HastyWaiter {
            inner: self.0.waiter(),
            returned_early: loom::sync::atomic::AtomicBool::new(false),
        }
    }
    fn lock(&self) {
        self.0.lock()
    }
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }
    unsafe fn unlock(&self) {
        // SAFETY: forwarded.
        unsafe { self.0.unlock() }
    }
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

fn a_waiter_returning_early_is_waited_again<S: Strategy>(p: S::Params) {
    // A blocked receiver whose waiter returns before the sender's hand-off: it must
    // still receive the value, not report the channel closed.
    let c = Chan::<u32, Hasty<S>>::with_params(0, p);
    let tx = c.clone();
    let t = thread::spawn(move || tx.send(3));
    assert_eq!(c.recv(), Ok(3));
    assert_eq!(t.join().unwrap(), Ok(()));
}

// Async operations: a task's context (waker taken at the claim, put back, `done`) against
// blocking partners, cancellation racing a claim, and a waker replaced while a partner
// claims. The "executor" is the model's main thread polling by hand with a waker that
// raises a loom flag.

mod task {
    use loom::sync::Notify;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    /// A waker that stores a permit (loom's `Notify`): a lost wake-up leaves its task waiting
    /// for ever, which loom reports as a deadlock.
    pub(crate) struct Flag(pub(crate) Notify);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.notify();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.notify();
        }
    }

    pub(crate) fn waker() -> (Arc<Flag>, Waker) {
        let f = Arc::new(Flag(Notify::new()));
        (f.clone(), Waker::from(f))
    }

    pub(crate) fn poll<F: Future + ?Sized>(f: Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(w))
    }

    /// Polls until ready, sleeping on the waker's permit between polls.
    pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
        let (flag, w) = waker();
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = poll(f.as_mut(), &w) {
                return v;
            }
            // A future that woke itself (its partner is between unlock and signal) must
            // let that partner run.
            loom::thread::yield_now();
            flag.0.wait();
        }
    }
}

fn async_tasks_meet_blocking_threads<S: Strategy>(p: S::Params) {
    // A task receives from a blocking sender, then sends to a blocking receiver.
    let c = Chan::<u32, S>::with_params(0, p);
    let peer = c.clone();
    let t = thread::spawn(move || {
        peer.send(7).unwrap();
        peer.recv()
    });
    assert_eq!(task::block_on(c.recv_async()), Ok(7));
    task::block_on(c.send_async(8)).unwrap();
    assert_eq!(t.join().unwrap(), Ok(8));
}

fn a_dropped_recv_future_loses_nothing<S: Strategy>(p: S::Params) {
    // A queued receive future dropped while a non-blocking sender hands it a value:
    // the value is delivered, or given back to the channel, never lost.
    let c = Chan::<u32, S>::with_params(0, p);
    let tx = c.clone();
    let t = thread::spawn(move || tx.nbsend(7).is_ok());
    let (_, w) = task::waker();
    let mut got = None;
    {
        let mut f = Box::pin(c.recv_async());
        if let std::task::Poll::Ready(v) = task::poll(f.as_mut(), &w) {
            got = Some(v.unwrap());
        }
    }
    let sent = t.join().unwrap();
    if got.is_none() {
        got = c.nbrecv().ok();
    }
    assert_eq!(sent, got == Some(7));
    assert!(c.nbrecv().is_err());
}

fn a_dropped_send_future_sends_at_most_once<S: Strategy>(p: S::Params) {
    // A queued send future dropped while a non-blocking receiver takes its value:
    // sent once or not at all, nothing left queued.
    let c = Chan::<u32, S>::with_params(0, p);
    let rx = c.clone();
    let t = thread::spawn(move || rx.nbrecv().ok());
    let (_, w) = task::waker();
    let ready = {
        let mut f = Box::pin(c.send_async(5));
        task::poll(f.as_mut(), &w).is_ready()
    };
    let got = t.join().unwrap();
    if ready {
        assert_eq!(got, Some(5));
    }
    assert!(c.nbrecv().is_err());
}

fn a_replaced_waker_is_the_one_woken<S: Strategy>(p: S::Params) {
    // Re-polled with a new waker while a blocking sender claims the future: the new
    // waker is the one woken (or the second poll already completes).
    let c = Chan::<u32, S>::with_params(0, p);
    let tx = c.clone();
    let t = thread::spawn(move || tx.send(3));
    let (_, a) = task::waker();
    let (bflag, b) = task::waker();
    let mut f = Box::pin(c.recv_async());
    let mut out = task::poll(f.as_mut(), &a);
    if out.is_pending() {
        out = task::poll(f.as_mut(), &b);
    }
    while out.is_pending() {
        loom::thread::yield_now();
        bflag.0.wait();
        out = task::poll(f.as_mut(), &b);
    }
    assert_eq!(out, std::task::Poll::Ready(Ok(3)));
    assert_eq!(t.join().unwrap(), Ok(()));
}

fn an_async_alt_is_woken_by_a_thread<S: Strategy>(p: S::Params) {
    // An async alt over two channels, one of them fed by a blocking sender.
    let a = Chan::<u32, S>::with_params(0, p);
    let b = Chan::<u32, S>::with_params(0, p);
    let ta = a.clone();
    let t = thread::spawn(move || ta.send(1));
    let (mut x, mut y) = (None, None);
    let mut alt = chan::Alt::new();
    alt.recv(&a, &mut x);
    alt.recv(&b, &mut y);
    let fired = task::block_on(alt.wait_async());
    drop(alt);
    assert_eq!((fired.index, x, y), (0, Some(1), None));
    assert_eq!(t.join().unwrap(), Ok(()));
}

fn a_handed_value_holds_up_no_receiver<S: Strategy>(p: S::Params) {
    // A value handed to a receive future (not yet delivered) while one thread closes and
    // another receives: the value was received at the claim, so the receiver sees the end
    // (no hang), and the future still delivers the value.
    let c = Chan::<u32, S>::with_params(0, p);
    let (_, w) = task::waker();
    let mut f = Box::pin(c.recv_async());
    assert!(task::poll(f.as_mut(), &w).is_pending());
    assert_eq!(c.nbsend(5), Ok(()));
    let closer = c.clone();
    let t1 = thread::spawn(move || closer.close());
    let rx = c.clone();
    let t2 = thread::spawn(move || rx.recv());
    assert_eq!(task::poll(f.as_mut(), &w), std::task::Poll::Ready(Ok(5)));
    assert!(t1.join().unwrap());
    assert_eq!(t2.join().unwrap(), Err(chan::RecvError));
}

fn a_value_given_back_never_rises_after_drained<S: Strategy>(p: S::Params) {
    // The same, the future dropped instead: the value goes back to the receiver if it was
    // waiting before anybody was told "closed and drained", else it is dropped with the
    // future; never received after that report.
    let c = Chan::<u32, S>::with_params(0, p);
    let (_, w) = task::waker();
    let mut f = Box::pin(c.recv_async());
    assert!(task::poll(f.as_mut(), &w).is_pending());
    assert_eq!(c.nbsend(5), Ok(()));
    let closer = c.clone();
    let t1 = thread::spawn(move || closer.close());
    let rx = c.clone();
    let t2 = thread::spawn(move || rx.recv());
    drop(f);
    assert!(t1.join().unwrap());
    let got = t2.join().unwrap();
    assert!(matches!(got, Ok(5) | Err(chan::RecvError)), "{got:?}");
    assert!(c.nbrecv().is_err(), "5 after closed and drained");
}

fn a_weak_upgrade_races_the_last_sender_drop<S: Strategy>(p: S::Params) {
    // A weak sender upgraded while the last strong sender drops: either the upgrade
    // wins, and its value arrives before the end, or it finds the channel closed.
    let (tx, rx) = Chan::<u32, S>::with_params(1, p).split();
    let weak = tx.downgrade();
    let t = thread::spawn(move || match weak.upgrade() {
        Some(tx) => {
            tx.send(7).unwrap();
            true
        }
        None => false,
    });
    drop(tx);
    if t.join().unwrap() {
        assert_eq!(rx.recv(), Ok(7));
    }
    assert_eq!(rx.recv(), Err(chan::RecvError));
    assert_eq!(rx.sender_count(), 0);
}
