//! Regression tests for the outside review's defects: hostile waiters, user code that panics
//! or re-enters the channel, alt fairness after blocking, and deadlines at `Duration::MAX`.
//! Each test failed (or hung, or aborted) before its fix. A hang is reported, not waited out:
//! every body runs under [`deadline`].
#![cfg(not(loom))]

use chan::{Alt, Chan, TrySendError};
use locks::{Adaptive, AdaptiveWaiter, NoParams, Strategy, Waiter};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use testkit::{deadline, per_backend};

static MODE: AtomicUsize = AtomicUsize::new(0);
const PANIC_IN_WAIT: usize = 1;
const RETURN_EARLY: usize = 2;
/// The first lock a thread takes after its timed wait ran out panics (once).
const PANIC_GIVING_UP: usize = 3;

thread_local! {
    /// Which of this thread's locks from now on panics: 1 the next, 2 the one after; 0 none.
    /// Set by a timed wait that ran out in `PANIC_GIVING_UP` mode, or by a test.
    static PANIC_AT_LOCK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Makes this thread's `n`th lock from now on panic (once).
fn panic_at_lock(n: u32) {
    PANIC_AT_LOCK.with(|p| p.set(n));
}

/// Panics if this is the lock this thread was set to panic at.
fn maybe_panic_in_lock() {
    let n = PANIC_AT_LOCK.with(|p| p.get());
    if n > 0 {
        PANIC_AT_LOCK.with(|p| p.set(n - 1));
        if n == 1 {
            panic!("hostile lock");
        }
    }
}

struct HostileWaiter {
    inner: AdaptiveWaiter,
    early_returns: AtomicUsize,
}

// SAFETY: forwards to `AdaptiveWaiter`, except that `wait` may panic (allowed) or return
// before the signal (chan must then wait again, going by `is_signalled`, which stays
// truthful).
unsafe impl Waiter for HostileWaiter {
    fn wait(&self) {
        match MODE.load(SeqCst) {
            PANIC_IN_WAIT => panic!("hostile waiter"),
            RETURN_EARLY if self.early_returns.fetch_add(1, SeqCst) < 3 => {}
            _ => self.inner.wait(),
        }
    }
    fn wait_until(&self, deadline: Instant) -> bool {
        let signalled = self.inner.wait_until(deadline);
        if !signalled && MODE.load(SeqCst) == PANIC_GIVING_UP {
            panic_at_lock(1);
        }
        signalled
    }
    fn is_signalled(&self) -> bool {
        self.inner.is_signalled()
    }
    unsafe fn signal(this: *const Self) {
        // SAFETY: forwarded; `inner` lives as long as `*this`.
        unsafe { AdaptiveWaiter::signal(&raw const (*this).inner) }
    }
}

/// A lock strategy whose waiter misbehaves in the ways the `Waiter` contract permits or that
/// chan must survive, and whose `lock` may panic (nothing in `Strategy`'s contract forbids
/// it): `Adaptive` in every other respect.
struct HostileLock(Adaptive);

// SAFETY: mutual exclusion is `Adaptive`'s.
unsafe impl Strategy for HostileLock {
    type Params = NoParams;
    type Waiter = HostileWaiter;
    const NAME: &'static str = "hostile";
    fn with_params(_: NoParams) -> Self {
        HostileLock(Adaptive::new(Default::default()))
    }
    fn params(&self) -> NoParams {
        NoParams
    }
    fn waiter(&self) -> HostileWaiter {
        HostileWaiter {
            inner: self.0.waiter(),
            early_returns: AtomicUsize::new(0),
        }
    }
    fn lock(&self) {
        maybe_panic_in_lock();
        Strategy::lock(&self.0)
    }
    fn try_lock(&self) -> bool {
        maybe_panic_in_lock();
        Strategy::try_lock(&self.0)
    }
    unsafe fn unlock(&self) {
        // SAFETY: forwarded.
        unsafe { Strategy::unlock(&self.0) }
    }
    fn is_locked(&self) -> bool {
        Strategy::is_locked(&self.0)
    }
}

/// Tests that set [`MODE`] run one at a time.
static HOSTILE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn with_mode<R>(mode: usize, f: impl FnOnce() -> R) -> R {
    let _one = HOSTILE.lock().unwrap_or_else(|e| e.into_inner());
    MODE.store(mode, SeqCst);
    let r = catch_unwind(AssertUnwindSafe(f));
    MODE.store(0, SeqCst);
    r.unwrap_or_else(|p| std::panic::resume_unwind(p))
}

#[test]
fn a_waiter_that_panics_leaves_no_node_behind() {
    // Defect 1: the receiver's node stayed linked in the queue after its frame was gone, and
    // the next `nbsend` wrote the value through the dangling pointer (and reported success).
    with_mode(PANIC_IN_WAIT, || {
        let c = Chan::<u64, HostileLock>::new(0);
        let rx = c.clone();
        let r = thread::spawn(move || rx.recv()).join();
        assert!(r.is_err(), "the receiver's waiter panicked");
        assert_eq!(c.nbsend(5), Err(TrySendError::Full(5)), "nobody is waiting");

        // The same for a blocked sender and for an alt.
        let tx = c.clone();
        assert!(thread::spawn(move || tx.send(6)).join().is_err());
        assert_eq!(c.nbrecv(), Err(chan::TryRecvError::Empty));
        let (a, b) = (c.clone(), Chan::<u64, HostileLock>::new(0));
        let r = thread::spawn(move || {
            let (mut x, mut y) = (None, Some(1));
            let mut alt = Alt::new();
            alt.recv(&a, &mut x);
            alt.send(&b, &mut y);
            alt.wait()
        })
        .join();
        assert!(r.is_err());
        assert_eq!(c.nbsend(7), Err(TrySendError::Full(7)));
    });
}

#[test]
fn a_waiter_that_panics_after_being_claimed_waits_out_the_claimer() {
    // The claimer may signal after the waiter's `wait` has unwound: the frame must stay until
    // that signal is done. A value handed over is dropped with the receiver's frame. (A
    // receiver claimed before it reached `wait` never calls it, and receives normally; which
    // happens is up to the scheduler, and either way the value is dropped exactly once.)
    with_mode(PANIC_IN_WAIT, || {
        for _ in 0..if cfg!(miri) { 8 } else { 200 } {
            let c = Chan::<Arc<()>, HostileLock>::new(0);
            let rx = c.clone();
            let r = thread::spawn(move || rx.recv());
            let v = Arc::new(());
            let mut sent = false;
            while !r.is_finished() && !sent {
                sent = c.nbsend(v.clone()).is_ok();
            }
            // An `Err` unwound, before or after being claimed.
            if let Ok(got) = r.join() {
                assert!(sent && got.is_ok(), "a normal receive got the value");
            }
            assert_eq!(
                Arc::strong_count(&v),
                1,
                "the value was dropped exactly once"
            );
        }
    });
}

#[test]
fn a_lock_that_panics_while_a_wait_gives_up_leaves_no_node_behind() {
    // A timed wait that ran out unlinked its node under a lock taken after the wait had
    // disarmed its guard (an alt, after every wait): a `lock` that panicked there left the
    // node linked to a frame that was gone, and the next operation on the channel claimed it
    // through the dangling pointer. (Under Miri: undefined behaviour.)
    with_mode(PANIC_GIVING_UP, || {
        let c = Chan::<u64, HostileLock>::new(0);
        let short = Duration::from_millis(5);
        let rx = c.clone();
        let r = thread::spawn(move || rx.recv_timeout(short)).join();
        assert!(r.is_err(), "the lock taken to give up panicked");
        assert_eq!(c.nbsend(5), Err(TrySendError::Full(5)), "nobody is waiting");

        let tx = c.clone();
        assert!(thread::spawn(move || tx.send_timeout(6, short))
            .join()
            .is_err());
        assert_eq!(c.nbrecv(), Err(chan::TryRecvError::Empty));

        let (a, b) = (c.clone(), Chan::<u64, HostileLock>::new(0));
        let b2 = b.clone();
        let r = thread::spawn(move || {
            let (mut x, mut y) = (None, Some(1));
            let mut alt = Alt::new();
            alt.recv(&a, &mut x);
            alt.send(&b2, &mut y);
            alt.wait_timeout(short)
        })
        .join();
        assert!(r.is_err());
        assert_eq!(c.nbsend(7), Err(TrySendError::Full(7)));
        assert_eq!(b.nbrecv(), Err(chan::TryRecvError::Empty));

        // And the channel still works.
        let rx = c.clone();
        let r = thread::spawn(move || rx.recv());
        assert_eq!(c.send(8), Ok(()));
        assert_eq!(r.join().unwrap(), Ok(8));
    });
}

#[test]
fn a_lock_that_panics_while_a_future_is_dropped_leaves_no_node_behind() {
    // A queued future's drop unlinks its node under the channel's lock: a lock that
    // panicked there left the node linked into memory that went with the future, for the next
    // operation to claim. The lock is now taken again, and its panic goes on afterwards.
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }
    let panic_next_lock = || panic_at_lock(1);

    let c = Chan::<u64, HostileLock>::new(0);
    let mut f = Box::pin(c.recv_async());
    assert!(poll_once(f.as_mut()).is_pending());
    panic_next_lock();
    assert!(
        catch_unwind(AssertUnwindSafe(|| drop(f))).is_err(),
        "the panic goes on"
    );
    assert_eq!(c.nbsend(5), Err(TrySendError::Full(5)), "nobody is waiting");

    let mut f = Box::pin(c.send_async(6));
    assert!(poll_once(f.as_mut()).is_pending());
    panic_next_lock();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(f))).is_err());
    assert_eq!(c.nbrecv(), Err(chan::TryRecvError::Empty));

    let b = Chan::<u64, HostileLock>::new(0);
    let (mut x, mut y) = (None, Some(1));
    let mut alt = Alt::new();
    alt.recv(&c, &mut x);
    alt.send(&b, &mut y);
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_once(f.as_mut()).is_pending());
    panic_next_lock();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(f))).is_err());
    drop(alt);
    assert_eq!(c.nbsend(7), Err(TrySendError::Full(7)));
    assert_eq!(b.nbrecv(), Err(chan::TryRecvError::Empty));
    assert_eq!(y, Some(1), "the unsent value is back in its place");
}

#[test]
fn a_lock_that_panics_in_a_close_still_closes() {
    // A close whose lock panicked left the channel open and its blocked parties asleep; a last
    // handle's drop cannot be tried again, so they slept for ever. The lock is now taken
    // again, every party is woken, and the panic goes on. (In no `MODE`, but holding its
    // mutex: the other tests' modes would make these waiters panic too.)
    with_mode(0, || {
        deadline("a close past a panicking lock", || {
            // The first lock panics (an explicit close), then the second, the one taken again
            // between two wake-ups (two blocked receivers).
            for (n, receivers) in [(1, 1), (2, 2)] {
                let c = Chan::<u64, HostileLock>::new(0);
                let blocked: Vec<_> = (0..receivers)
                    .map(|_| {
                        let rx = c.clone();
                        thread::spawn(move || rx.recv())
                    })
                    .collect();
                thread::sleep(Duration::from_millis(20));
                panic_at_lock(n);
                assert!(catch_unwind(AssertUnwindSafe(|| c.close())).is_err());
                panic_at_lock(0);
                assert!(c.is_closed());
                for r in blocked {
                    assert_eq!(r.join().unwrap(), Err(chan::RecvError));
                }
            }

            // The last sender's drop.
            let (tx, rx) = Chan::<u64, HostileLock>::new(0).split();
            let r = thread::spawn(move || rx.recv());
            thread::sleep(Duration::from_millis(20));
            panic_at_lock(1);
            assert!(catch_unwind(AssertUnwindSafe(|| drop(tx))).is_err());
            panic_at_lock(0);
            assert_eq!(r.join().unwrap(), Err(chan::RecvError));
        })
    });
}

#[test]
fn a_waiter_that_returns_early_is_waited_again() {
    // `recv` took the empty slot of a node nobody had claimed as "closed".
    with_mode(RETURN_EARLY, || {
        deadline("early-returning waiter", || {
            let c = Chan::<u64, HostileLock>::new(0);
            let rx = c.clone();
            let r = thread::spawn(move || rx.recv());
            let tx = c.clone();
            let s = thread::spawn(move || tx.send(9));
            assert_eq!(r.join().unwrap(), Ok(9));
            assert_eq!(s.join().unwrap(), Ok(()));
        })
    });
}

/// A value whose `Drop` does something hostile.
struct Nasty {
    on_drop: Box<dyn Fn() + Send>,
}

impl Drop for Nasty {
    fn drop(&mut self) {
        (self.on_drop)()
    }
}

fn nasty(f: impl Fn() + Send + 'static) -> Nasty {
    Nasty {
        on_drop: Box::new(f),
    }
}

per_backend! {
    hostile:
    alt_drops_the_old_value_after_unlocking,
    alt_survives_a_panicking_drop_of_the_old_value,
    duplicate_send_arms_are_fair_after_blocking,
    duplicate_recv_arms_are_fair_after_blocking,
    duration_max_waits_for_ever,
    buffered_values_with_panicking_drops,
}

fn alt_drops_the_old_value_after_unlocking<S: Strategy>(p: S::Params) {
    // Defect 3: the receive arm assigned into `dst` under the channel locks, so the old
    // value's `Drop`, touching the same channel, deadlocked on its own lock.
    deadline("re-entrant Drop in alt", move || {
        let c = Chan::<Nasty, S>::with_params(1, p);
        c.send(nasty(|| {})).unwrap();
        let inner = c.clone();
        let touched = Arc::new(AtomicBool::new(false));
        let t = touched.clone();
        let mut dst = Some(nasty(move || {
            // Takes the lock (the buffer is empty by now, so this lands).
            let _ = inner.nbsend(nasty(|| {}));
            t.store(true, SeqCst);
        }));
        let mut alt = Alt::new();
        alt.recv(&c, &mut dst);
        assert!(!alt.wait().closed);
        drop(alt);
        assert!(touched.load(SeqCst));
        assert_eq!(c.len(), 1);
    });
}

fn alt_survives_a_panicking_drop_of_the_old_value<S: Strategy>(p: S::Params) {
    // The panic used to leave the lock held for ever (and a sender claimed to refill the
    // buffer asleep with its value taken). A buffered value makes the arm fire at poll time,
    // under the locks, whatever the sender's timing.
    deadline("panicking Drop in alt", move || {
        let c = Chan::<Nasty, S>::with_params(1, p);
        c.send(nasty(|| {})).unwrap();
        let tx = c.clone();
        let sender = thread::spawn(move || tx.send(nasty(|| {})).is_ok());
        let mut dst = Some(nasty(|| panic!("old value's Drop")));
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut alt = Alt::new();
            alt.recv(&c, &mut dst);
            alt.wait()
        }));
        assert!(r.is_err(), "the old value's panic reaches the caller");
        assert!(dst.is_some(), "the received value is in place");
        // The channel is usable (its lock was released) and the sender completes.
        assert!(c.recv().is_ok());
        assert!(sender.join().unwrap());
        assert!(c.nbsend(nasty(|| {})).is_ok());
    });
}

/// Repeats an alt over two arms on one channel whose partner arrives only after the alt has
/// (very likely) blocked, and returns how often each arm fired.
fn blocked_alt_counts<S: Strategy>(p: S::Params, send_arms: bool) -> [u32; 2] {
    const ROUNDS: u32 = 600;
    let c = Chan::<u32, S>::with_params(0, p);
    let started = Arc::new(AtomicUsize::new(0));
    let partner = {
        let (c, started) = (c.clone(), started.clone());
        thread::spawn(move || {
            for round in 1..=ROUNDS as usize {
                while started.load(SeqCst) < round {
                    thread::yield_now();
                }
                // Let the alt queue its nodes first.
                (0..20).for_each(|_| thread::yield_now());
                match send_arms {
                    true => drop(c.recv().unwrap()),
                    false => c.send(0).unwrap(),
                }
            }
        })
    };
    let mut counts = [0; 2];
    for _ in 0..ROUNDS {
        let (mut a, mut b) = match send_arms {
            true => (Some(0), Some(1)),
            false => (None, None),
        };
        let mut alt = Alt::new();
        match send_arms {
            true => {
                alt.send(&c, &mut a);
                alt.send(&c, &mut b);
            }
            false => {
                alt.recv(&c, &mut a);
                alt.recv(&c, &mut b);
            }
        }
        started.fetch_add(1, SeqCst);
        counts[alt.wait().index] += 1;
    }
    partner.join().unwrap();
    counts
}

fn duplicate_send_arms_are_fair_after_blocking<S: Strategy>(p: S::Params) {
    // Defect 4 (Go's TestPseudoRandomSend): the first arm's node was always queued first, so
    // the partner always took it.
    let counts = blocked_alt_counts::<S>(p, true);
    assert!(counts.iter().all(|&n| n >= 200), "{counts:?} of 600");
}

fn duplicate_recv_arms_are_fair_after_blocking<S: Strategy>(p: S::Params) {
    let counts = blocked_alt_counts::<S>(p, false);
    assert!(counts.iter().all(|&n| n >= 200), "{counts:?} of 600");
}

fn duration_max_waits_for_ever<S: Strategy>(p: S::Params) {
    // Defect 6: `Instant::now() + Duration::MAX` panicked in the alt, not in the channel.
    let c = Chan::<u32, S>::with_params(1, p);
    c.send(1).unwrap();
    let mut v = None;
    let mut alt = Alt::new();
    alt.recv(&c, &mut v);
    assert!(alt.wait_timeout(Duration::MAX).is_some());
    drop(alt);
    assert_eq!(v, Some(1));
    c.send(2).unwrap();
    let got = chan::alt! {
        recv(c) -> v => { v.ok() },
        timeout(Duration::MAX) => { None },
    };
    assert_eq!(got, Some(2));
    c.send(3).unwrap();
    assert_eq!(c.recv_timeout(Duration::MAX), Ok(3));
    assert_eq!(c.send_timeout(4, Duration::MAX), Ok(()));
    // And it really waits: a partner arriving later is met.
    let tx = c.clone();
    let t = thread::spawn(move || {
        (0..50).for_each(|_| thread::yield_now());
        tx.send(5)
    });
    assert_eq!(c.recv(), Ok(4));
    assert_eq!(c.recv_timeout(Duration::MAX), Ok(5));
    t.join().unwrap().unwrap();
}

fn buffered_values_with_panicking_drops<S: Strategy>(p: S::Params) {
    // Dropping a channel whose buffer held two values with panicking `Drop`s panicked twice
    // and aborted the process. Now every value is dropped once and the first panic goes on.
    let dropped = Arc::new(AtomicUsize::new(0));
    let c = Chan::<Nasty, S>::with_params(4, p);
    for i in 0..4 {
        let d = dropped.clone();
        c.send(nasty(move || {
            d.fetch_add(1, SeqCst);
            if i % 2 == 0 {
                panic!("value {i}");
            }
        }))
        .unwrap();
    }
    let r = catch_unwind(AssertUnwindSafe(|| drop(c)));
    let msg = r.expect_err("the first panic goes on");
    assert_eq!(
        msg.downcast_ref::<String>().map(|s| s.as_str()),
        Some("value 0")
    );
    assert_eq!(dropped.load(SeqCst), 4);
}
