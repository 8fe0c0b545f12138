//! Model checks of every lock protocol and every waiter, with the futex mocked on loom.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p plan9-locks --test loom`.
#![cfg(loom)]

use locks::{Adaptive, AdaptiveParams, Backend, Condvar, RawRwLock, SemLock, Semaphore};
use locks::{SpinParams, SpinYield};
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

/// The condvar's wait and notify: a waiter and a notifier (`notify_one`, or `notify_all` to
/// `waiters` waiters, which then wake one another in turn), each waiting for a flag set under
/// the mutex. A lost wake-up is a deadlock, which loom reports; the flag's cell checks that
/// the mutex still excludes.
struct CondvarModel {
    waiters: usize,
    all: bool,
}

impl Visit for CondvarModel {
    type Output = ();
    fn visit<S: Strategy>(self, params: S::Params) {
        let CondvarModel { waiters, all } = self;
        let mut model = loom::model::Builder::new();
        model.max_branches = 10_000;
        model.check(move || {
            let shared = Arc::new((
                S::with_params(params),
                Condvar::<S>::with_params(params),
                UnsafeCell::new(false),
            ));
            let threads: Vec<_> = (0..waiters)
                .map(|_| {
                    let s = shared.clone();
                    thread::spawn(move || {
                        s.0.lock();
                        while !s.2.with(|v| unsafe { *v }) {
                            // SAFETY: we hold the mutex.
                            unsafe { s.1.wait_raw(&s.0) };
                        }
                        // SAFETY: locked above, and again by every wait.
                        unsafe { s.0.unlock() };
                    })
                })
                .collect();
            shared.0.lock();
            shared.2.with_mut(|v| unsafe { *v = true });
            match all {
                true => drop(shared.1.notify_all()),
                false => drop(shared.1.notify_one()),
            }
            // SAFETY: locked above.
            unsafe { shared.0.unlock() };
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert!(!shared.1.notify_one(), "nobody left queued");
        });
    }
}

fn condvar_params() -> [Backend; 2] {
    [
        Backend::Sem(Default::default()),
        Backend::Adaptive(
            AdaptiveParams::DEFAULT
                .with_wait_spin_ns(0)
                .with_yield_ns(0),
        ),
    ]
}

#[test]
fn condvar_notify_one_is_never_lost() {
    for b in condvar_params() {
        b.visit(CondvarModel {
            waiters: 1,
            all: false,
        });
    }
}

#[test]
fn condvar_notify_all_wakes_every_waiter_in_turn() {
    for b in condvar_params() {
        b.visit(CondvarModel {
            waiters: 2,
            all: true,
        });
    }
}

/// A timed wait (loom has no time: it looks once and gives up) racing a `notify_one`: the
/// notify says it woke someone exactly when the wait reports no time-out.
struct CondvarTimeoutModel;

impl Visit for CondvarTimeoutModel {
    type Output = ();
    fn visit<S: Strategy>(self, params: S::Params) {
        let mut model = loom::model::Builder::new();
        model.max_branches = 10_000;
        model.check(move || {
            let shared = Arc::new((S::with_params(params), Condvar::<S>::with_params(params)));
            let s = shared.clone();
            let waiter = thread::spawn(move || {
                s.0.lock();
                // SAFETY: we hold the mutex.
                let timed_out = unsafe { s.1.wait_until_raw(&s.0, std::time::Instant::now()) };
                // SAFETY: held again after the wait.
                unsafe { s.0.unlock() };
                timed_out
            });
            let woke = shared.1.notify_one();
            let timed_out = waiter.join().unwrap();
            assert_eq!(woke, !timed_out);
            assert!(!shared.0.is_locked());
        });
    }
}

#[test]
fn condvar_notify_agrees_with_a_timeout() {
    for b in condvar_params() {
        b.visit(CondvarTimeoutModel);
    }
}

/// Readers and writers of the rwlock: a writer's update is never seen half done, nor made
/// beside another holder (the cell checks), and nobody is left waiting (loom reports a
/// deadlock). `readers` readers against `writers` writers, plus one writer that downgrades.
struct RwModel {
    readers: usize,
    writers: usize,
}

impl Visit for RwModel {
    type Output = ();
    fn visit<S: Strategy>(self, params: S::Params) {
        let RwModel { readers, writers } = self;
        let mut model = loom::model::Builder::new();
        model.max_branches = 10_000;
        model.check(move || {
            let shared = Arc::new((RawRwLock::<S>::with_params(params), UnsafeCell::new(0u32)));
            let mut threads: Vec<_> = (0..writers)
                .map(|_| {
                    let s = shared.clone();
                    thread::spawn(move || {
                        s.0.write();
                        s.1.with_mut(|v| unsafe { *v += 1 });
                        // SAFETY: locked above.
                        unsafe { s.0.unlock_write() };
                    })
                })
                .collect();
            threads.extend((0..readers).map(|_| {
                let s = shared.clone();
                thread::spawn(move || {
                    s.0.read();
                    let v = s.1.with(|v| unsafe { *v });
                    assert!(v as usize <= writers);
                    // SAFETY: locked above.
                    unsafe { s.0.unlock_read() };
                })
            }));
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(shared.1.with(|v| unsafe { *v }) as usize, writers);
            assert!(!shared.0.is_locked());
        });
    }
}

#[test]
fn rwlock_writer_and_reader() {
    for b in condvar_params() {
        b.visit(RwModel {
            readers: 1,
            writers: 1,
        });
    }
}

#[test]
fn rwlock_two_writers_and_a_reader() {
    for b in condvar_params() {
        b.visit(RwModel {
            readers: 1,
            writers: 2,
        });
    }
}

#[test]
fn rwlock_writer_and_two_readers() {
    for b in condvar_params() {
        b.visit(RwModel {
            readers: 2,
            writers: 1,
        });
    }
}
