//! Lock and waiter checks small enough for Miri, which also run natively with larger counts.
//!
//! `cargo +nightly miri test -p plan9-locks --test miri` interprets them: a lock that fails to make
//! its unlock *happen before* the next acquisition shows up as a data race on the plain
//! counters below, a waiter touched after it was freed as a use-after-free. `.ci/miri` runs
//! them over several seeds under Stacked and Tree Borrows. Every behaviour runs with every
//! backend (`miri::spin::exclusion`, ..., `miri::adaptive_futex::exclusion`).
#![cfg(not(loom))]

use testkit::per_backend;

use locks::lock_api::{MutexGuard, RawMutex};
use locks::{Adaptive, Mutex, SemLock, Semaphore, SpinYield, Strategy, Waiter};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use testkit::count;

per_backend! {
    miri:
    exclusion,
    try_lock_across_threads,
    waiters,
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
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let (shared, typed, named) = (shared.clone(), typed.clone(), named.clone());
            thread::spawn(move || {
                for i in 0..iters {
                    Strategy::lock(&shared.0);
                    // SAFETY: we hold the lock.
                    unsafe { *shared.1.get() += 1 };
                    unsafe { Strategy::unlock(&shared.0) };
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
    assert_eq!((*typed.lock(), *named.lock()), (3 * iters, 3 * iters));
    assert!(!Strategy::is_locked(&shared.0) && !typed.is_locked() && !named.is_locked());
}

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
}

/// A waiter's address, sent to the signalling thread with its provenance (Miri warns about
/// pointers made from integers).
struct Ptr<T>(*const T);
// SAFETY (test): the pointee is a `Sync` waiter that outlives every use, as `waiters` shows.
unsafe impl<T: Sync> Send for Ptr<T> {}

/// Signalled before the wait, after a timed-out wait, and from another thread while the
/// waiter's owner frees it as soon as `wait` returns (the signaller's last touch of the waiter
/// must come before that).
fn waiters<S: Strategy>(p: S::Params) {
    let lock = S::with_params(p);
    let w = lock.waiter();
    assert!(!w.is_signalled());
    // SAFETY: live, signalled once.
    unsafe { S::Waiter::signal(&w) };
    w.wait();
    assert!(w.is_signalled() && w.wait_until(Instant::now()));

    let w = lock.waiter();
    assert!(!w.wait_until(Instant::now() + Duration::from_micros(50)));
    // SAFETY: live, signalled once.
    unsafe { S::Waiter::signal(&w) };
    w.wait();

    for round in 0..count(500, 3, 1) {
        // On the heap, so that Miri sees a use after free if the signaller touches it late.
        let w = Box::new(lock.waiter());
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
        if round % 2 == 0 {
            w.wait();
        } else {
            while !w.wait_until(Instant::now() + Duration::from_micros(round as u64 % 7)) {}
        }
        assert!(w.is_signalled());
        drop(w);
        assert_eq!(data.load(SeqCst), round as u64 + 1);
        t.join().unwrap();
    }
}

#[test]
fn semaphore_timeouts_conserve_permits() {
    let per = count(1000, 4, 1) as u64;
    let s = Arc::new(Semaphore::new(0));
    let taken = Arc::new(AtomicU64::new(0));
    let acquirers: Vec<_> = (0..2u64)
        .map(|i| {
            let (s, taken) = (s.clone(), taken.clone());
            thread::spawn(move || {
                for k in 0..per {
                    let wait = Duration::from_micros((k * 7 + i) % 20);
                    if s.acquire_until(Instant::now() + wait) {
                        taken.fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    let releaser = {
        let s = s.clone();
        thread::spawn(move || (0..per).for_each(|_| s.release()))
    };
    releaser.join().unwrap();
    acquirers.into_iter().for_each(|a| a.join().unwrap());
    assert_eq!(taken.load(SeqCst) + s.permits() as u64, per);
    // Blocking acquirers take what is left, and one more released for each.
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

fn timed<R: locks::lock_api::RawMutexTimed<Duration = Duration> + Send + Sync + 'static>() {
    let m = Arc::new(Mutex::<R, u64>::new(0));
    let g = m.lock();
    let m2 = m.clone();
    let gave_up = thread::spawn(move || m2.try_lock_for(Duration::from_micros(20)).is_none());
    assert!(
        gave_up.join().unwrap(),
        "a held lock cannot be taken in time"
    );
    drop(g);
    assert!(m.try_lock_for(Duration::MAX).is_some());
    // Timed and untimed lockers together still exclude each other.
    let per = count(1000, 6, 1) as u64;
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let (m, done) = (m.clone(), done.clone());
            thread::spawn(move || {
                for k in 0..per {
                    let guard = if t == 0 {
                        Some(m.lock())
                    } else {
                        m.try_lock_for(Duration::from_micros((k * 13 + t) % 10))
                    };
                    if let Some(mut g) = guard {
                        *g += 1;
                        done.fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*m.lock(), done.load(SeqCst));
}

#[test]
fn spin_timed_locking() {
    timed::<SpinYield>();
}

#[test]
fn adaptive_timed_locking() {
    timed::<Adaptive>();
}

#[test]
fn semlock_unlock_fair_hands_over() {
    let per = count(1000, 5, 1) as u32;
    let m = Arc::new(Mutex::<SemLock, u32>::new(0));
    let threads: Vec<_> = (0..3)
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
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*m.lock(), 3 * per);
}
