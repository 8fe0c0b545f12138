//! Mutual exclusion and API semantics of every backend, oversubscribed on purpose.
//!
//! The tests in `mod miri` (`miri::mutex::spin::exclusion`, ...,
//! `miri::semlock_unlock_fair`) are Miri's too, each body written once and sized by
//! `count(native, miri, min)` and `pick(native, miri)`: natively their counts are larger
//! (`CHAN_TEST_SCALE` scales them). `cargo +nightly miri test -p plan9-locks --test mutex --
//! miri::` interprets them: a lock that fails to make its unlock *happen before* the next
//! acquisition shows up as a data race on the plain counters they bump, a waiter touched after
//! it was freed as a use-after-free. `.ci/miri` runs them over several seeds under Stacked and
//! Tree Borrows.
#![cfg(not(loom))]

use locks::lock_api::{MutexGuard, RawMutex};
use locks::{
    Adaptive, Backend, DynLock, Mutex, SemLock, Semaphore, SpinYield, Strategy, Visit, Waiter,
};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use testkit::{count, per_backend, pick};

per_backend! {
    mutex:
    mutual_exclusion_oversubscribed,
}

/// What Miri runs too (`.ci/miri` picks `miri::`), small enough for it under `cfg(miri)`.
mod miri {
    use super::*;

    per_backend! {
        mutex:
        exclusion,
        try_lock_across_threads,
        waiters,
    }

    #[test]
    fn semaphore_timeouts_conserve_permits() {
        super::semaphore_timeouts_conserve_permits();
    }

    #[test]
    fn timed_locking_gives_up_and_still_excludes() {
        timed::<SpinYield>();
        timed::<Adaptive>();
    }

    #[test]
    fn semlock_unlock_fair() {
        super::semlock_unlock_fair();
    }
}

/// A counter that is not atomic: only the lock keeps the read-modify-write whole.
fn hammer<R: RawMutex + Send + Sync + 'static>(m: Arc<Mutex<R, u64>>, threads: usize) {
    let iters = testkit::scaled(20_000, 100) as u64;
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..iters {
                    let mut g = m.lock();
                    // Split read and write so a missing exclusion shows up as lost updates.
                    let v = *g;
                    std::hint::black_box(&v);
                    *g = v + 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(
        *m.lock(),
        iters * threads as u64,
        "lost updates with {threads} threads"
    );
}

struct Exclusion(usize);
impl Visit for Exclusion {
    type Output = ();
    fn visit<S: Strategy>(self, params: S::Params) {
        strategy_exclusion::<S>(params, self.0);
    }
}

fn strategy_exclusion<S: Strategy>(params: S::Params, threads: usize) {
    // Through the strategy itself (the path `chan` uses), with the parsed parameters.
    let lock = Arc::new((S::with_params(params), std::cell::UnsafeCell::new(0u64)));
    struct Shared<S>(Arc<(S, std::cell::UnsafeCell<u64>)>);
    // SAFETY (test): the cell is only touched while holding the lock.
    unsafe impl<S: Sync> Send for Shared<S> {}
    let iters = testkit::scaled(10_000, 100) as u64;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let s = Shared(lock.clone());
            thread::spawn(move || {
                let s = s;
                for _ in 0..iters {
                    // A third of the threads lock as a task's poll does, a third as a
                    // hand-off's locker, against the others.
                    match t % 3 {
                        0 => s.0 .0.lock(),
                        1 => s.0 .0.lock_in_task(),
                        _ => s.0 .0.lock_in_hand_off(),
                    }
                    // SAFETY: we hold the lock.
                    unsafe { *s.0 .1.get() += 1 };
                    unsafe { s.0 .0.unlock() };
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // SAFETY: all threads joined.
    assert_eq!(unsafe { *lock.1.get() }, iters * threads as u64);
}

/// The typed mutex (`Mutex<S, _>`: `new` for default parameters, else `from_raw`) and the
/// strategy itself (the path `chan` uses), with 2 to 16 threads on however few CPUs.
fn mutual_exclusion_oversubscribed<S: Strategy + RawMutex>(p: S::Params) {
    for threads in [2, 4, 8, 16] {
        let m = if p == S::Params::default() {
            Mutex::<S, u64>::new(0)
        } else {
            Mutex::from_raw(S::with_params(p), 0)
        };
        hammer(Arc::new(m), threads);
        strategy_exclusion::<S>(p, threads);
    }
}

#[test]
fn mutual_exclusion_with_unusual_parameters() {
    for name in [
        "adaptive:yield_ns=0",
        "adaptive:spin_ns=100000",
        "adaptive:task_nap_us=0",
        "adaptive:task_nap_us=1",
        "adaptive:moves=0",
        "adaptive:moves=1:spin_ns=2000",
        #[cfg(feature = "test-aids")]
        "adaptive:hold_ns=200",
        #[cfg(feature = "test-aids")]
        "adaptive:hold_loops=200:hold_ns=100",
        "spin:yields=0:sleep_us=1",
    ] {
        let b: Backend = name.parse().unwrap();
        b.visit(Exclusion(8));
        hammer(Arc::new(b.mutex(0u64)), 4);
    }
}

fn guard_semantics<R: RawMutex>() {
    let m = Mutex::<R, Vec<i32>>::new(vec![1]);
    assert!(!m.is_locked());
    {
        let mut g = m.lock();
        assert!(m.is_locked());
        assert!(m.try_lock().is_none(), "try_lock must fail while held");
        g.push(2);
    }
    assert!(!m.is_locked());
    let g = m.try_lock().expect("free lock");
    assert_eq!(*g, [1, 2]);
    drop(g);
    let mut m = m;
    m.get_mut().push(3);
    assert_eq!(m.into_inner(), [1, 2, 3]);
}

#[test]
fn try_lock_is_locked_and_guards() {
    guard_semantics::<SpinYield>();
    guard_semantics::<SemLock>();
    guard_semantics::<Adaptive>();
    guard_semantics::<locks::DynLock>();
}

/// `unlock_fair` hands the lock over, and the count still adds up.
fn semlock_unlock_fair() {
    let (threads, per) = (pick(4, 3), count(2000, 5, 1) as u32);
    let m = Arc::new(Mutex::<SemLock, u32>::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..per {
                    let mut g = m.lock();
                    *g += 1;
                    MutexGuard::unlock_fair(g);
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(*m.lock(), threads * per);
}

#[test]
fn backend_names_round_trip_and_errors() {
    for b in Backend::ALL {
        assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
        assert_eq!(b.to_string(), b.name());
    }
    let b: Backend = "spin:yields=5:sleep_us=20".parse().unwrap();
    assert_eq!(b.to_string(), "spin:yields=5:sleep_us=20");
    assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
    let b: Backend = "adaptive:moves=0".parse().unwrap();
    assert_eq!(b.to_string(), "adaptive:moves=0");
    assert_eq!(
        b,
        Backend::Adaptive(locks::AdaptiveParams::DEFAULT.with_moves(false))
    );
    let err = |s: &str| s.parse::<Backend>().unwrap_err().to_string();
    assert_eq!(
        err("futex"),
        "unknown lock backend `futex` (valid: spin, sem, adaptive)"
    );
    assert!(err("adaptive:spin=3").contains("unknown parameter `spin`"));
    assert!(err("adaptive:spin_ns").contains("expected key=value"));
    assert!(err("adaptive:spin_ns=-1").contains("wants an integer"));
    assert!(err("sem:x=1").contains("takes none"));
    assert!(err("adaptive:moves=2").contains("moves"));
    assert_eq!(
        "adaptive:moves=1".parse::<Backend>().unwrap().to_string(),
        "adaptive",
        "the default"
    );
    assert_eq!(Backend::parse_list("all").unwrap(), Backend::ALL);
    assert_eq!(
        Backend::parse_list("sem,adaptive:spin_ns=0").unwrap().len(),
        2
    );
    assert!(Backend::parse_list("sem,,spin").is_err());
}

#[test]
fn semaphore_counts_permits() {
    let s = Arc::new(locks::Semaphore::new(2));
    assert!(s.try_acquire() && s.try_acquire() && !s.try_acquire());
    let s2 = s.clone();
    let t = thread::spawn(move || {
        s2.acquire();
        s2.acquire();
    });
    s.release();
    s.release();
    t.join().unwrap();
    assert_eq!(s.permits(), 0);
    assert!(!s.acquire_until(Instant::now() + Duration::from_millis(5)));
    s.release();
    assert!(s.acquire_until(Instant::now() + Duration::from_secs(5)));
}

#[test]
fn semaphore_many_producers_many_consumers() {
    // Every permit released is acquired exactly once: the consumers finish.
    let s = Arc::new(locks::Semaphore::new(0));
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || (0..5000).for_each(|_| s.acquire()))
        })
        .collect();
    let producers: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || (0..5000).for_each(|_| s.release()))
        })
        .collect();
    producers
        .into_iter()
        .chain(consumers)
        .for_each(|h| h.join().unwrap());
    assert_eq!(s.permits(), 0);
}

#[test]
fn waiters_spinning_before_the_futex() {
    // PAUSE-spinning (the first in line), then straight to the futex (the futex alone is
    // `miri::mutex::adaptive_futex::waiters`).
    waiters::<Adaptive>(testkit::params::<Adaptive>(
        "adaptive:wait_spin_ns=5000:yield_ns=0",
    ));
}

#[test]
fn stats_are_zero_cost_or_counting() {
    let before = locks::stats::snapshot();
    let m = Mutex::<Adaptive, _>::new(0);
    for _ in 0..10 {
        *m.lock() += 1;
    }
    let d = locks::stats::snapshot().since(&before);
    if locks::stats::ENABLED {
        assert!(d.acquisitions >= 10);
    } else {
        assert_eq!(d, Default::default());
    }
}

/// Acquirers that give up race releasers; every permit released is either taken once or still
/// there at the end, however the timeouts fall. Then blocking acquirers take what is left, and
/// one more released for each.
fn semaphore_timeouts_conserve_permits() {
    let (acquirers, releasers) = (pick(4, 2), pick(2, 1));
    let (tries, releases) = (count(3000, 4, 1) as u64, count(5000, 8, 1) as u64);
    let longest = pick(50, 20);
    let s = Arc::new(Semaphore::new(0));
    let taken = Arc::new(AtomicU64::new(0));
    let acquirers: Vec<_> = (0..acquirers)
        .map(|i| {
            let (s, taken) = (s.clone(), taken.clone());
            thread::spawn(move || {
                for k in 0..tries {
                    let wait = Duration::from_micros((k * 7 + i) % longest);
                    if s.acquire_until(Instant::now() + wait) {
                        taken.fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    let releasers: Vec<_> = (0..releasers)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || {
                for k in 0..releases {
                    s.release();
                    if k % 64 == 0 {
                        thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let released = releasers.len() as u64 * releases;
    releasers
        .into_iter()
        .chain(acquirers)
        .for_each(|h| h.join().unwrap());
    assert_eq!(taken.load(SeqCst) + s.permits() as u64, released);
    let left = s.permits();
    let consumer = {
        let s = s.clone();
        thread::spawn(move || (0..left + 2).for_each(|_| s.acquire()))
    };
    s.release();
    s.release();
    consumer.join().unwrap();
    assert_eq!(s.permits(), 0);
}

/// A timed lock gives up on a held lock, takes a free one, and timed and untimed lockers
/// together still exclude each other, whatever the timeouts.
fn timed<R: locks::lock_api::RawMutexTimed<Duration = Duration> + Send + Sync + 'static>() {
    let m = Arc::new(Mutex::<R, u64>::new(0));
    let g = m.lock();
    let m2 = m.clone();
    // Under Miri a spinning wait costs steps for every microsecond it waits.
    let patience = Duration::from_micros(pick(2000, 20));
    let gave_up = thread::spawn(move || m2.try_lock_for(patience).is_none());
    assert!(
        gave_up.join().unwrap(),
        "a held lock cannot be taken in time"
    );
    drop(g);
    assert!(m.try_lock_for(Duration::from_secs(5)).is_some());
    assert!(
        m.try_lock_for(Duration::MAX).is_some(),
        "no deadline at all"
    );

    let (threads, per, longest) = (pick(6, 3), count(3000, 6, 1) as u64, pick(40, 10));
    let done = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (m, done) = (m.clone(), done.clone());
            thread::spawn(move || {
                for k in 0..per {
                    let guard = if t % 2 == 1 {
                        Some(m.lock())
                    } else {
                        m.try_lock_for(Duration::from_micros((k * 13 + t) % longest))
                    };
                    if let Some(mut g) = guard {
                        let v = *g;
                        std::hint::black_box(&v);
                        *g = v + 1;
                        done.fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(*m.lock(), done.load(SeqCst));
}

/// Without the `test-aids` feature the shipped lock has no hold branch, and the name says how
/// to get it.
#[test]
#[cfg(not(feature = "test-aids"))]
fn hold_ns_needs_the_test_aids_feature() {
    for key in ["hold_ns", "hold_loops"] {
        let e = format!("adaptive:{key}=30").parse::<Backend>().unwrap_err();
        assert!(e.to_string().contains("test-aids"), "{e}");
        assert!(e.to_string().contains(key), "{e}");
        assert!(!<locks::AdaptiveParams as locks::Params>::KEYS.contains(&key));
    }
}

#[test]
#[cfg(feature = "test-aids")]
fn hold_ns_is_a_parameter_that_holds_the_lock() {
    let b: Backend = "adaptive:hold_ns=30".parse().unwrap();
    assert_eq!(b.to_string(), "adaptive:hold_ns=30");
    assert_eq!(
        "adaptive".parse::<Backend>().unwrap().to_string(),
        "adaptive",
        "hold_ns=0 is the default and not shown"
    );
    let e = "adaptive:hold_ns=2000000".parse::<Backend>().unwrap_err();
    assert!(e.to_string().contains("hold_ns"), "{e}");
    let b: Backend = "adaptive:hold_loops=30:hold_ns=5".parse().unwrap();
    assert_eq!(b.to_string(), "adaptive:hold_ns=5:hold_loops=30");
    let e = "adaptive:hold_loops=2000000"
        .parse::<Backend>()
        .unwrap_err();
    assert!(e.to_string().contains("hold_loops"), "{e}");
    // Held 100 us per acquisition: ten acquisitions cannot take much less than 1 ms (a lower
    // bound only, which load cannot break).
    let m = "adaptive:hold_ns=100000"
        .parse::<Backend>()
        .unwrap()
        .mutex(0u32);
    let start = std::time::Instant::now();
    for _ in 0..10 {
        *m.lock() += 1;
    }
    assert!(start.elapsed() >= std::time::Duration::from_micros(500));
    assert_eq!(*m.lock(), 10);
}

/// A plain (non-atomic) counter behind the lock, bumped by three threads through the strategy
/// itself, the typed mutex and the by-name mutex: Miri reports a race if an unlock does not
/// happen before the next lock.
fn exclusion<S: Strategy + RawMutex>(p: S::Params) {
    let iters = count(5000, 8, 1) as u64;
    struct Shared<S>(S, UnsafeCell<u64>);
    // SAFETY (test): the cell is only touched while holding the lock.
    unsafe impl<S: Sync> Sync for Shared<S> {}
    let shared = Arc::new(Shared(S::with_params(p), UnsafeCell::new(0)));
    let typed = Arc::new(Mutex::<S, u64>::from_raw(S::with_params(p), 0));
    let named = Arc::new(testkit::backend::<S>(p).mutex(0u64));
    let dynamic = Arc::new(Shared(
        DynLock::with_params(testkit::backend::<S>(p)),
        UnsafeCell::new(0),
    ));
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let (shared, typed, named) = (shared.clone(), typed.clone(), named.clone());
            let dynamic = dynamic.clone();
            thread::spawn(move || {
                for i in 0..iters {
                    // One thread locks as a task's poll does, against the other two.
                    match t {
                        0 => Strategy::lock_in_task(&shared.0),
                        _ => Strategy::lock(&shared.0),
                    }
                    // SAFETY: we hold the lock.
                    unsafe { *shared.1.get() += 1 };
                    unsafe { Strategy::unlock(&shared.0) };
                    // The by-name lock forwards `lock_in_task` and `lock_in_hand_off` to its
                    // backend's.
                    match (t + i as usize) % 3 {
                        0 => Strategy::lock_in_task(&dynamic.0),
                        1 => Strategy::lock_in_hand_off(&dynamic.0),
                        _ => Strategy::lock(&dynamic.0),
                    }
                    // SAFETY: we hold the lock.
                    unsafe { *dynamic.1.get() += 1 };
                    unsafe { Strategy::unlock(&dynamic.0) };
                    *typed.lock() += 1;
                    if i % 2 == 0 {
                        *named.lock() += 1;
                    } else if let Some(mut g) = named.try_lock() {
                        *g += 1;
                    } else {
                        *named.lock() += 1;
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    // SAFETY: every thread joined.
    assert_eq!(unsafe { *shared.1.get() }, 3 * iters);
    // SAFETY: as above.
    assert_eq!(unsafe { *dynamic.1.get() }, 3 * iters);
    assert_eq!((*typed.lock(), *named.lock()), (3 * iters, 3 * iters));
    assert!(!Strategy::is_locked(&shared.0) && !typed.is_locked() && !named.is_locked());
}

/// A lock held by one thread: `try_lock` fails on another until it is released, through the
/// strategy itself and through the by-name mutex.
fn try_lock_across_threads<S: Strategy>(p: S::Params) {
    let lock = Arc::new(S::with_params(p));
    lock.lock();
    assert!(lock.is_locked());
    let l2 = lock.clone();
    assert!(!thread::spawn(move || l2.try_lock()).join().unwrap());
    // SAFETY: locked above.
    unsafe { lock.unlock() };
    let l2 = lock.clone();
    assert!(thread::spawn(move || {
        let got = l2.try_lock();
        // SAFETY: just taken.
        unsafe { l2.unlock() };
        got
    })
    .join()
    .unwrap());
    assert!(!lock.is_locked());

    let m = Arc::new(testkit::backend::<S>(p).mutex(()));
    let g = m.lock();
    let m2 = m.clone();
    assert!(thread::spawn(move || m2.try_lock().is_none())
        .join()
        .unwrap());
    drop(g);
    let m2 = m.clone();
    assert!(thread::spawn(move || m2.try_lock().is_some())
        .join()
        .unwrap());
}

/// A waiter's address, sent to the signalling thread with its provenance (Miri warns about
/// pointers made from integers).
struct Ptr<T>(*const T);
// SAFETY (test): the pointee is a `Sync` waiter that outlives every use, as `waiters_made_by` shows.
unsafe impl<T: Sync> Send for Ptr<T> {}

/// Both kinds of waiter (one further back, and one first in line, which may spin first).
fn waiters<S: Strategy>(p: S::Params) {
    let lock = S::with_params(p);
    waiters_made_by(&lock, S::waiter);
    waiters_made_by(&lock, S::first_waiter);
}

/// Signalled before the wait, after a timed-out wait, and from another thread while the
/// waiter's owner frees it as soon as `wait` returns (the signaller's last touch of the waiter
/// must come before that).
fn waiters_made_by<S: Strategy>(lock: &S, new: fn(&S) -> S::Waiter) {
    let w = new(lock);
    assert!(!w.is_signalled());
    // SAFETY: live, signalled once.
    unsafe { S::Waiter::signal(&w) };
    w.wait();
    assert!(w.is_signalled() && w.wait_until(Instant::now()));
    assert!(
        w.wait_checked(),
        "a signalled waiter's checked wait says so"
    );

    let w = new(lock);
    assert!(!w.wait_until(Instant::now() + Duration::from_micros(pick(2000, 50))));
    // SAFETY: live, signalled once.
    unsafe { S::Waiter::signal(&w) };
    w.wait();

    for round in 0..count(2000, 3, 1) {
        // On the heap, so that Miri sees a use after free if the signaller touches it late.
        let w = Box::new(new(lock));
        let data = Arc::new(AtomicU64::new(0));
        let ptr = Ptr(&*w as *const S::Waiter);
        let d = data.clone();
        let t = thread::spawn(move || {
            let ptr = ptr;
            d.store(round as u64 + 1, SeqCst);
            // SAFETY: the owner does not free the waiter before `wait` returns, which it
            // cannot do before this signal.
            unsafe { S::Waiter::signal(ptr.0) }
        });
        match round % 3 {
            0 => w.wait(),
            1 => while !w.wait_checked() {},
            _ => while !w.wait_until(Instant::now() + Duration::from_micros(round as u64 % 7)) {},
        }
        assert!(w.is_signalled());
        drop(w);
        assert_eq!(data.load(SeqCst), round as u64 + 1);
        t.join().unwrap();
    }
}
