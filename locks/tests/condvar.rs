//! `Condvar` over every strategy: the behaviours std's and parking_lot's condvar tests check,
//! in our words, plus hostile callers (notifies racing time-outs, a panicking predicate, two
//! mutexes) and a producer/consumer stress.
//!
//! Each behaviour runs per backend (`per_backend!`), with `DynLock` over every backend, and
//! with `Toy`, a strategy written outside the crate. The `miri` group is small enough for
//! Miri under `cfg(miri)` (`.ci/miri` runs it, filter `miri::`), with larger counts natively.
#![cfg(not(loom))]

#[path = "toy/mod.rs"]
mod toy;

use locks::lock_api::RawMutex;
use locks::{Backend, Condvar, DynLock, Mutex, Strategy};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use testkit::{count, deadline, per_backend, pick};

per_backend! {
    condvar:
    notify_without_waiters,
    wait_for_times_out_without_a_notify,
    timed_waits_past_the_end_of_time_wait_for_a_notify,
    wait_while_for_checks_first_and_reports_timeouts,
}

per_backend! {
    miri:
    notify_one_wakes_one,
    notify_all_counts_and_wakes_everyone,
    notified_waiters_never_report_a_timeout,
    two_mutexes_at_once_panic,
    a_panicking_predicate_leaves_the_lock_held,
    ping_pong,
    producers_and_consumers_exchange_every_item_once,
}

/// A strategy's mutex and condvar, made from its parameters.
struct Pair<S: Strategy + RawMutex, T> {
    m: Mutex<S, T>,
    cv: Condvar<S>,
}

fn pair<S: Strategy + RawMutex, T>(p: S::Params, value: T) -> Arc<Pair<S, T>> {
    Arc::new(Pair {
        m: Mutex::from_raw(S::with_params(p), value),
        cv: Condvar::with_params(p),
    })
}

fn notify_without_waiters<S: Strategy + RawMutex>(p: S::Params) {
    let c = pair::<S, ()>(p, ());
    assert!(!c.cv.notify_one());
    assert_eq!(c.cv.notify_all(), 0);
    let _ = format!("{:?}", c.cv);
}

fn notify_one_wakes_one<S: Strategy + RawMutex>(p: S::Params) {
    let c = pair::<S, bool>(p, false);
    let c2 = c.clone();
    let mut g = c.m.lock();
    let t = thread::spawn(move || {
        let mut g = c2.m.lock();
        *g = true;
        // We held the mutex until the waiter queued, so it is there to be woken.
        assert!(c2.cv.notify_one());
    });
    c.cv.wait_while(&mut g, |set| !*set);
    drop(g);
    t.join().unwrap();
    assert!(!c.cv.notify_one(), "no waiter left");
}

fn notify_all_counts_and_wakes_everyone<S: Strategy + RawMutex>(p: S::Params) {
    let n = count(8, 3, 2);
    // (waiting, go, woken)
    let c = pair::<S, (usize, bool, usize)>(p, (0, false, 0));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let c = c.clone();
            thread::spawn(move || {
                let mut g = c.m.lock();
                g.0 += 1;
                c.cv.wait_while(&mut g, |s| !s.1);
                g.2 += 1;
            })
        })
        .collect();
    // Once every thread has counted itself, under the mutex, each is queued: it released the
    // mutex only by waiting.
    loop {
        let mut g = c.m.lock();
        if g.0 == n {
            g.1 = true;
            assert_eq!(c.cv.notify_all(), n);
            break;
        }
        drop(g);
        thread::yield_now();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(c.m.lock().2, n);
    assert_eq!(c.cv.notify_all(), 0);
}

fn wait_for_times_out_without_a_notify<S: Strategy + RawMutex>(p: S::Params) {
    let c = pair::<S, u32>(p, 7);
    let mut g = c.m.lock();
    let start = Instant::now();
    let r = c.cv.wait_for(&mut g, Duration::from_millis(20));
    assert!(r.timed_out());
    // No early return: a timed-out wait has waited its time (a lower bound, not a speed).
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert_eq!(*g, 7, "the guard holds the mutex again");
    assert!(c.cv.wait_until(&mut g, Instant::now()).timed_out());
    assert!(c
        .cv
        .wait_until(&mut g, Instant::now() - Duration::from_millis(1))
        .timed_out());
    drop(g);
    assert!(!c.m.is_locked());
}

fn timed_waits_past_the_end_of_time_wait_for_a_notify<S: Strategy + RawMutex>(p: S::Params) {
    let c = pair::<S, bool>(p, false);
    let c2 = c.clone();
    let t = thread::spawn(move || {
        let mut g = c2.m.lock();
        let r = c2.cv.wait_while_for(&mut g, |set| !*set, Duration::MAX);
        assert!(!r.timed_out());
        let r = c2.cv.wait_for(&mut g, Duration::MAX);
        assert!(!r.timed_out());
    });
    deadline("Duration::MAX waits", move || {
        *c.m.lock() = true;
        // Notify until the second wait, which nothing else ends, has been woken.
        while !t.is_finished() {
            c.cv.notify_all();
            thread::yield_now();
        }
        t.join().unwrap();
    });
}

fn wait_while_for_checks_first_and_reports_timeouts<S: Strategy + RawMutex>(p: S::Params) {
    let c = pair::<S, u32>(p, 0);
    let mut g = c.m.lock();
    // Already false: no wait, one look.
    let r = c.cv.wait_while_for(
        &mut g,
        |n| {
            *n += 1;
            false
        },
        Duration::from_secs(60),
    );
    assert!(!r.timed_out());
    assert_eq!(*g, 1);
    // Never false: times out, having looked once per wake-up (here: once).
    let r = c.cv.wait_while_until(
        &mut g,
        |n| {
            *n += 1;
            true
        },
        Instant::now() + Duration::from_millis(10),
    );
    assert!(r.timed_out());
    assert_eq!(*g, 2);
    drop(g);
    // Made false by another thread: no time-out.
    let c2 = c.clone();
    let t = thread::spawn(move || {
        let mut g = c2.m.lock();
        let r = c2
            .cv
            .wait_while_for(&mut g, |n| *n < 100, Duration::from_secs(60));
        assert!(!r.timed_out());
    });
    while !t.is_finished() {
        let mut g = c.m.lock();
        *g += 1;
        c.cv.notify_one();
        drop(g);
        thread::yield_now();
    }
    t.join().unwrap();
}

/// A notify that says it woke a waiter wakes one that reports no time-out, and a waiter that
/// reports no time-out was woken by a notify that counted it: with waits racing their
/// deadlines and notifies racing both, the counts must agree exactly.
fn notified_waiters_never_report_a_timeout<S: Strategy + RawMutex>(p: S::Params) {
    let rounds = count(300, 6, 2);
    let waiters = 3;
    let c = pair::<S, ()>(p, ());
    let woken = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(waiters));
    let threads: Vec<_> = (0..waiters)
        .map(|i| {
            let (c, woken, running) = (c.clone(), woken.clone(), running.clone());
            thread::spawn(move || {
                let mut g = c.m.lock();
                for r in 0..rounds {
                    let timeout = Duration::from_micros(((i * 37 + r * 11) % 200) as u64);
                    if !c.cv.wait_for(&mut g, timeout).timed_out() {
                        woken.fetch_add(1, SeqCst);
                    }
                }
                running.fetch_sub(1, SeqCst);
            })
        })
        .collect();
    let mut notified = 0;
    let mut i = 0usize;
    while running.load(SeqCst) != 0 {
        notified += match i % 3 {
            0 => c.cv.notify_all(),
            _ => usize::from(c.cv.notify_one()),
        };
        i += 1;
        thread::yield_now();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(notified, woken.load(SeqCst));
    assert!(!c.cv.notify_one());
}

fn two_mutexes_at_once_panic<S: Strategy + RawMutex>(p: S::Params) {
    // (queued, go)
    let c = pair::<S, (bool, bool)>(p, (false, false));
    let other: Arc<Mutex<S, ()>> = Arc::new(Mutex::from_raw(S::with_params(p), ()));
    let c2 = c.clone();
    let t = thread::spawn(move || {
        let mut g = c2.m.lock();
        g.0 = true;
        c2.cv.wait_while(&mut g, |s| !s.1);
    });
    // It set the flag and let go of the mutex only by queueing; nothing notifies yet, and
    // there are no spurious wake-ups, so it stays queued.
    while !c.m.lock().0 {
        thread::yield_now();
    }
    let mut og = other.lock();
    let err = catch_unwind(AssertUnwindSafe(|| c.cv.wait(&mut og)))
        .expect_err("a second mutex must be refused");
    let msg = err
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| err.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("two different mutexes"), "{msg}");
    // The refused guard still holds its mutex, and releases it.
    assert!(other.is_locked());
    drop(og);
    assert!(!other.is_locked());
    // The first waiter is undisturbed: one notify wakes it.
    let mut g = c.m.lock();
    g.1 = true;
    assert!(c.cv.notify_one());
    drop(g);
    t.join().unwrap();
    // With nobody waiting, the other mutex is welcome.
    let mut og = other.lock();
    assert!(c.cv.wait_for(&mut og, Duration::from_millis(1)).timed_out());
}

fn a_panicking_predicate_leaves_the_lock_held<S: Strategy + RawMutex>(p: S::Params) {
    let c = pair::<S, u32>(p, 0);
    let c2 = c.clone();
    let t = thread::spawn(move || {
        let mut g = c2.m.lock();
        let r = catch_unwind(AssertUnwindSafe(|| {
            c2.cv.wait_while(&mut g, |n| {
                assert!(*n < 1, "predicate gives up");
                true
            })
        }));
        assert!(r.is_err());
        // The guard holds the mutex again, and the value is reachable.
        *g += 10;
    });
    while !t.is_finished() {
        let mut g = c.m.lock();
        *g = g.max(1);
        c.cv.notify_all();
        drop(g);
        thread::yield_now();
    }
    t.join().unwrap();
    assert_eq!(*c.m.lock(), 11);
    assert!(!c.m.is_locked());
    // Nobody left queued, and the condvar still works.
    assert!(!c.cv.notify_one());
    let mut g = c.m.lock();
    assert!(c.cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
}

/// Two threads take turns, each waiting for the other's move.
fn ping_pong<S: Strategy + RawMutex>(p: S::Params) {
    let rounds = count(2000, 20, 2);
    let c = pair::<S, usize>(p, 0);
    let c2 = c.clone();
    let t = thread::spawn(move || {
        for i in 0..rounds {
            let mut g = c2.m.lock();
            c2.cv.wait_while(&mut g, |turn| *turn != 2 * i + 1);
            *g += 1;
            c2.cv.notify_one();
        }
    });
    for i in 0..rounds {
        let mut g = c.m.lock();
        c.cv.wait_while(&mut g, |turn| *turn != 2 * i);
        *g += 1;
        c.cv.notify_one();
    }
    t.join().unwrap();
    assert_eq!(*c.m.lock(), 2 * rounds);
}

fn producers_and_consumers_exchange_every_item_once<S: Strategy + RawMutex>(p: S::Params) {
    let threads = pick(4, 2);
    deadline("producers and consumers", move || {
        producers_and_consumers::<S>(p, threads, threads, count(5000, 4, 2))
    });
}

/// `producers` threads each put `per` numbered items into a bounded `VecDeque` behind a
/// mutex, with one condvar for "not full" and one for "not empty"; `consumers` threads take
/// them out. Every item must come out exactly once.
fn producers_and_consumers<S: Strategy + RawMutex>(
    p: S::Params,
    producers: usize,
    consumers: usize,
    per: usize,
) {
    const CAP: usize = 8;
    struct Q {
        items: VecDeque<usize>,
        producing: usize,
    }
    struct Shared<S: Strategy + RawMutex> {
        q: Mutex<S, Q>,
        not_full: Condvar<S>,
        not_empty: Condvar<S>,
    }
    let s = Arc::new(Shared::<S> {
        q: Mutex::from_raw(
            S::with_params(p),
            Q {
                items: VecDeque::new(),
                producing: producers,
            },
        ),
        not_full: Condvar::with_params(p),
        not_empty: Condvar::with_params(p),
    });
    let made: Vec<_> = (0..producers)
        .map(|id| {
            let s = s.clone();
            thread::spawn(move || {
                for k in 0..per {
                    let mut q = s.q.lock();
                    s.not_full.wait_while(&mut q, |q| q.items.len() == CAP);
                    q.items.push_back(id * per + k);
                    s.not_empty.notify_one();
                }
                let mut q = s.q.lock();
                q.producing -= 1;
                if q.producing == 0 {
                    s.not_empty.notify_all();
                }
            })
        })
        .collect();
    let taken: Vec<_> = (0..consumers)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || {
                let mut got = vec![];
                let mut q = s.q.lock();
                loop {
                    s.not_empty
                        .wait_while(&mut q, |q| q.items.is_empty() && q.producing > 0);
                    match q.items.pop_front() {
                        Some(item) => {
                            got.push(item);
                            s.not_full.notify_one();
                        }
                        None => return got,
                    }
                }
            })
        })
        .collect();
    made.into_iter().for_each(|t| t.join().unwrap());
    let mut all: Vec<usize> = taken.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..producers * per).collect::<Vec<_>>());
}

/// The same behaviours with the strategy chosen at run time, over every backend.
#[test]
fn dyn_lock_over_every_backend() {
    for b in testkit::backends() {
        notify_one_wakes_one::<DynLock>(b);
        notify_all_counts_and_wakes_everyone::<DynLock>(b);
        notified_waiters_never_report_a_timeout::<DynLock>(b);
        ping_pong::<DynLock>(b);
        producers_and_consumers_exchange_every_item_once::<DynLock>(b);
    }
}

/// A `Condvar<DynLock>` made with `new` (its queue lock adaptive) serves mutexes of any
/// backend: the waiters wait with their mutex's waiter.
#[test]
fn a_default_dyn_condvar_serves_any_backend() {
    for b in Backend::ALL {
        let m = Arc::new(b.mutex(false));
        let cv = Arc::new(Condvar::<DynLock>::new());
        let (m2, cv2) = (m.clone(), cv.clone());
        let t = thread::spawn(move || {
            let mut g = m2.lock();
            cv2.wait_while(&mut g, |set| !*set);
        });
        *m.lock() = true;
        while !t.is_finished() {
            cv.notify_all();
            thread::yield_now();
        }
        t.join().unwrap();
    }
}

/// A strategy of the user's own.
#[test]
fn a_user_strategy() {
    use locks::NoParams;
    notify_without_waiters::<toy::Toy>(NoParams);
    notify_one_wakes_one::<toy::Toy>(NoParams);
    notify_all_counts_and_wakes_everyone::<toy::Toy>(NoParams);
    notified_waiters_never_report_a_timeout::<toy::Toy>(NoParams);
    two_mutexes_at_once_panic::<toy::Toy>(NoParams);
    producers_and_consumers_exchange_every_item_once::<toy::Toy>(NoParams);
}

#[test]
fn new_is_const_and_default() {
    static CV: Condvar<locks::SemLock> = Condvar::new();
    static M: Mutex<locks::SemLock, u8> = Mutex::new(0);
    assert!(!CV.notify_one());
    let mut g = M.lock();
    assert!(CV.wait_for(&mut g, Duration::ZERO).timed_out());
    let _: Condvar<locks::Adaptive> = Default::default();
}
