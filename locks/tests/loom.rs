//! Model checks of every lock protocol and every waiter, with the futex mocked on loom.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p plan9-locks --test loom`.
#![cfg(loom)]

use locks::{Adaptive, AdaptiveParams, Backend, SemLock, Semaphore, SpinParams, SpinYield};
use locks::{Strategy, Visit, Waiter};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// `threads` threads each take the lock once and bump a counter that loom checks for data
/// races: a missing happens-before edge or a second holder fails the model.
/// The first thread locks as an async task's poll does (`lock_in_task`), the others as
/// threads.
fn exclusion<S: Strategy>(make: fn() -> S, threads: usize) {
    exclusion_locking(make, threads, S::lock);
}

/// [`exclusion`], the threads after the first locking with `lock`.
fn exclusion_locking<S: Strategy>(make: fn() -> S, threads: usize, lock: fn(&S)) {
    let mut model = loom::model::Builder::new();
    // A polling lock makes every failed attempt a branch; give such models room.
    model.max_branches = 10_000;
    model.check(move || {
        let shared = Arc::new((make(), UnsafeCell::new(0usize)));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let shared = shared.clone();
                thread::spawn(move || {
                    match t {
                        0 => shared.0.lock_in_task(),
                        _ => lock(&shared.0),
                    }
                    shared.1.with_mut(|v| unsafe { *v += 1 });
                    // SAFETY: locked just above.
                    unsafe { shared.0.unlock() };
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(shared.1.with(|v| unsafe { *v }), threads);
        assert!(!shared.0.is_locked());
    });
}

#[test]
fn spin_yield_exclusion() {
    exclusion(|| SpinYield::new(SpinParams::DEFAULT), 2);
}

#[test]
fn semlock_exclusion() {
    exclusion(SemLock::new, 2);
    exclusion(SemLock::new, 3);
}

#[test]
fn adaptive_exclusion() {
    exclusion(|| Adaptive::new(AdaptiveParams::DEFAULT), 2);
    exclusion(
        || {
            Adaptive::new(
                AdaptiveParams::DEFAULT
                    .with_spin_ns(1000)
                    .with_wait_spin_ns(1000)
                    .with_yield_ns(1000),
            )
        },
        2,
    );
    exclusion(
        || {
            Adaptive::new(
                AdaptiveParams::DEFAULT
                    .with_spin_ns(0)
                    .with_wait_spin_ns(0)
                    .with_yield_ns(0),
            )
        },
        3,
    );
    // A task's locker that waits as a thread's does.
    exclusion(
        || Adaptive::new(AdaptiveParams::DEFAULT.with_task_nap_us(0)),
        2,
    );
    // A hand-off's locker, which spins (for `wait_spin_ns`) where a thread's does not.
    exclusion_locking(
        || Adaptive::new(AdaptiveParams::DEFAULT),
        2,
        Adaptive::lock_in_hand_off,
    );
}

#[test]
fn try_lock_never_admits_two() {
    loom::model(|| {
        let l = Arc::new(SemLock::new());
        let l2 = l.clone();
        let t = thread::spawn(move || {
            let got = l2.try_lock();
            if got {
                unsafe { l2.unlock() };
            }
        });
        l.lock();
        unsafe { l.unlock() };
        t.join().unwrap();
    });
}

/// One thread signals, another waits (untimed, or timed then untimed): the wait must return
/// (loom reports a deadlock if a wake-up is lost) and see the signaller's write.
struct SignalModel {
    timed: bool,
}

impl Visit for SignalModel {
    type Output = ();
    fn visit<S: Strategy>(self, params: S::Params) {
        let timed = self.timed;
        loom::model(move || {
            let lock = S::with_params(params);
            let shared = Arc::new((lock.waiter(), UnsafeCell::new(0u32)));
            let s2 = shared.clone();
            let t = thread::spawn(move || {
                s2.1.with_mut(|v| unsafe { *v = 7 });
                // SAFETY: the waiter lives in the Arc, signalled once.
                unsafe { S::Waiter::signal(&s2.0) };
            });
            // Untimed, the wait is chan's: `wait_checked` until it says yes.
            if !timed {
                while !shared.0.wait_checked() {}
            } else if !shared.0.wait_until(std::time::Instant::now()) {
                shared.0.wait();
            }
            assert!(shared.0.is_signalled());
            assert_eq!(shared.1.with(|v| unsafe { *v }), 7);
            t.join().unwrap();
        });
    }
}

#[test]
fn waiters_lose_no_wake_up() {
    for b in Backend::ALL {
        b.visit(SignalModel { timed: false });
        b.visit(SignalModel { timed: true });
    }
}

/// The adaptive waiter without yields, so that it reaches its futex sleep: under loom a yield
/// lets the signaller run to the end first, and with the default budget the sleep is never
/// explored (a signal that never made its futex wake passed `waiters_lose_no_wake_up`; this
/// model fails it).
#[test]
fn adaptive_sleepers_lose_no_wake_up() {
    let params = AdaptiveParams::DEFAULT
        .with_wait_spin_ns(0)
        .with_yield_ns(0);
    SignalModel { timed: false }.visit::<Adaptive>(params);
    SignalModel { timed: true }.visit::<Adaptive>(params);
}

#[test]
fn semaphore_hands_over_every_permit() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0));
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.acquire())
            })
            .collect();
        s.release();
        s.release();
        for c in consumers {
            c.join().unwrap();
        }
        assert_eq!(s.permits(), 0);
    });
}
