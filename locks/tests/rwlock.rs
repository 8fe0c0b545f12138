//! `RwLock` over every strategy: the behaviours std's and parking_lot's rwlock tests check, in
//! our words (many readers or one writer, the `try_` forms, `into_inner`, `get_mut`, a panic
//! under a guard, random readers and writers), and the fairness this lock promises: a waiting
//! writer holds back new readers, and readers queued before a writer are not starved by it.
//!
//! Per backend (`per_backend!`), with `DynLock` over every backend, and with `Toy`, a strategy
//! written outside the crate. The `miri` group is small enough for Miri (`.ci/miri`, filter `miri::`).
#![cfg(not(loom))]

#[path = "toy/mod.rs"]
mod toy;

use locks::lock_api::{RawMutex, RwLockWriteGuard};
use locks::{DynLock, RawRwLock, RwLock, Strategy};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use testkit::{count, deadline, per_backend, Tracked};

per_backend! {
    rwlock:
    a_stream_of_readers_does_not_starve_a_writer,
    a_stream_of_writers_does_not_starve_readers,
}

per_backend! {
    miri:
    readers_share_writers_exclude,
    into_inner_get_mut_and_drops,
    random_readers_and_writers,
    a_waiting_writer_holds_back_new_readers,
    downgrade_lets_queued_readers_in,
    a_panic_under_a_guard_releases_it,
    a_forgotten_guard_keeps_the_lock,
}

fn rw<S: Strategy + RawMutex, T>(p: S::Params, value: T) -> RwLock<S, T> {
    RwLock::from_raw(RawRwLock::with_params(p), value)
}

fn readers_share_writers_exclude<S: Strategy + RawMutex>(p: S::Params) {
    let l = rw::<S, u32>(p, 1);
    {
        let a = l.read();
        let b = l.try_read().expect("readers share");
        assert_eq!(*a + *b, 2);
        assert!(l.try_write().is_none());
        assert!(l.is_locked() && !l.is_locked_exclusive());
    }
    {
        let mut w = l.try_write().expect("free");
        *w += 1;
        assert!(l.try_read().is_none());
        assert!(l.try_write().is_none());
        assert!(l.is_locked_exclusive());
    }
    assert!(!l.is_locked());
    // Across threads: a reader elsewhere blocks a writer here, and the reverse.
    let l = Arc::new(l);
    let r = l.read();
    let l2 = l.clone();
    assert!(thread::spawn(move || l2.try_write().is_none())
        .join()
        .unwrap());
    let l2 = l.clone();
    assert!(
        thread::spawn(move || l2.try_read().map(|g| *g))
            .join()
            .unwrap()
            == Some(2)
    );
    drop(r);
    let w = l.write();
    let l2 = l.clone();
    assert!(thread::spawn(move || l2.try_read().is_none())
        .join()
        .unwrap());
    drop(w);
    let _ = format!("{l:?}");
}

fn into_inner_get_mut_and_drops<S: Strategy + RawMutex>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut l = rw::<S, Tracked>(p, Tracked::new(5, &drops));
    l.get_mut().id += 1;
    assert_eq!(l.read().id, 6);
    let v = l.into_inner();
    assert_eq!((v.id, drops.load(SeqCst)), (6, 0));
    drop(v);
    assert_eq!(drops.load(SeqCst), 1);
    let l = rw::<S, Tracked>(p, Tracked::new(1, &drops));
    drop(l);
    assert_eq!(drops.load(SeqCst), 2);
    // Unsized contents.
    let l: &RwLock<S, [u32]> = &rw::<S, [u32; 3]>(p, [1, 2, 3]);
    l.write()[1] = 20;
    assert_eq!(*l.read(), [1, 20, 3]);
}

/// Threads read and write at random; writers keep the two halves of a pair equal, readers
/// check them, and a counter of holders checks that a writer is always alone.
fn random_readers_and_writers<S: Strategy + RawMutex>(p: S::Params) {
    let threads = count(6, 3, 2);
    let ops = count(2000, 15, 2);
    let l = Arc::new(rw::<S, (u64, u64)>(p, (0, 0)));
    let inside = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (l, inside) = (l.clone(), inside.clone());
            thread::spawn(move || {
                let mut x = (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut writes = 0;
                for _ in 0..ops {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x % 5 == 0 {
                        let mut g = l.write();
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "a writer not alone");
                        g.0 += 1;
                        thread::yield_now();
                        g.1 += 1;
                        inside.fetch_sub(1, SeqCst);
                        writes += 1;
                    } else {
                        let g = l.read();
                        inside.fetch_add(1, SeqCst);
                        assert_eq!(g.0, g.1, "a reader saw half a write");
                        inside.fetch_sub(1, SeqCst);
                    }
                }
                writes
            })
        })
        .collect();
    let writes: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(*l.read(), (writes, writes));
    assert!(!l.is_locked());
}

/// Readers hold the lock; a writer comes and waits. From then on a new reader waits too,
/// though only readers hold the lock: `try_read` fails.
fn a_waiting_writer_holds_back_new_readers<S: Strategy + RawMutex>(p: S::Params) {
    let l = Arc::new(rw::<S, u32>(p, 0));
    let r = l.read();
    let l2 = l.clone();
    let writer = thread::spawn(move || *l2.write() += 1);
    // Until the writer queues, new readers still get in.
    while let Some(g) = l.try_read() {
        drop(g);
        thread::yield_now();
    }
    assert!(!writer.is_finished());
    // A reader that comes now queues behind the writer, and sees its write.
    let l3 = l.clone();
    let reader = thread::spawn(move || *l3.read());
    assert!(l.try_read().is_none());
    drop(r);
    writer.join().unwrap();
    assert_eq!(reader.join().unwrap(), 1);
    assert!(!l.is_locked());
}

/// A writer downgrades to a reader: readers queued behind it come in at once, while it still
/// reads; a writer queued behind them waits for all of them.
fn downgrade_lets_queued_readers_in<S: Strategy + RawMutex>(p: S::Params) {
    let l = Arc::new(rw::<S, u32>(p, 0));
    let mut w = l.write();
    *w = 1;
    let in_together = Arc::new(AtomicBool::new(false));
    let (l2, flag) = (l.clone(), in_together.clone());
    let reader = thread::spawn(move || {
        let g = l2.read();
        // The downgraded guard is still held while we read: we share it.
        flag.store(true, SeqCst);
        *g
    });
    // Until the reader queues behind the write lock.
    while !queued(&l) {
        thread::yield_now();
    }
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(*r, 1);
    assert_eq!(reader.join().unwrap(), 1);
    assert!(in_together.load(SeqCst));
    drop(r);
    assert!(!l.is_locked());
}

/// Whether a waiter is queued on `l` (held for writing by the caller): its Debug says so.
fn queued<S: Strategy + RawMutex, T: ?Sized>(l: &RwLock<S, T>) -> bool {
    // SAFETY (test): only to read the raw lock's Debug.
    format!("{:?}", unsafe { l.raw() }).contains("queued: true")
}

fn a_panic_under_a_guard_releases_it<S: Strategy + RawMutex>(p: S::Params) {
    let l = Arc::new(rw::<S, u32>(p, 1));
    let l2 = l.clone();
    let r = catch_unwind(AssertUnwindSafe(move || {
        let mut w = l2.write();
        *w = 2;
        panic!("under a write guard");
    }));
    assert!(r.is_err());
    // No poisoning: the write happened, and the lock is free.
    assert_eq!(*l.try_write().expect("released"), 2);
    let l2 = l.clone();
    let r = catch_unwind(AssertUnwindSafe(move || {
        let _g = l2.read();
        panic!("under a read guard");
    }));
    assert!(r.is_err());
    assert!(l.try_write().is_some());
}

fn a_forgotten_guard_keeps_the_lock<S: Strategy + RawMutex>(p: S::Params) {
    let l = rw::<S, u32>(p, 1);
    std::mem::forget(l.read());
    assert!(l.try_write().is_none());
    assert_eq!(*l.read(), 1, "readers still share it");
    // SAFETY (test): the forgotten guard's read lock is still held, and released once.
    unsafe { l.force_unlock_read() };
    std::mem::forget(l.write());
    assert!(l.try_read().is_none());
    // SAFETY (test): as above, for the write lock.
    unsafe { l.force_unlock_write() };
    assert!(l.try_write().is_some());
}

/// Readers that keep overlapping (so that without fairness the lock would never be free)
/// and a writer that must still get in.
fn a_stream_of_readers_does_not_starve_a_writer<S: Strategy + RawMutex>(p: S::Params) {
    deadline("writer among readers", move || {
        let l = Arc::new(rw::<S, u64>(p, 0));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (l, stop) = (l.clone(), stop.clone());
                thread::spawn(move || {
                    while !stop.load(SeqCst) {
                        let g = l.read();
                        thread::yield_now();
                        drop(g);
                    }
                })
            })
            .collect();
        for _ in 0..count(200, 5, 2) {
            *l.write() += 1;
            thread::yield_now();
        }
        stop.store(true, SeqCst);
        readers.into_iter().for_each(|r| r.join().unwrap());
    });
}

/// Writers that take turns without a pause, and a reader that must still get in.
fn a_stream_of_writers_does_not_starve_readers<S: Strategy + RawMutex>(p: S::Params) {
    deadline("reader among writers", move || {
        let l = Arc::new(rw::<S, u64>(p, 0));
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let (l, stop) = (l.clone(), stop.clone());
                thread::spawn(move || {
                    while !stop.load(SeqCst) {
                        let mut g = l.write();
                        *g += 1;
                        thread::yield_now();
                        drop(g);
                    }
                })
            })
            .collect();
        let mut last = 0;
        for _ in 0..count(200, 5, 2) {
            let now = *l.read();
            assert!(now >= last);
            last = now;
        }
        stop.store(true, SeqCst);
        writers.into_iter().for_each(|w| w.join().unwrap());
    });
}

#[test]
fn dyn_lock_over_every_backend() {
    for b in testkit::backends() {
        readers_share_writers_exclude::<DynLock>(b);
        random_readers_and_writers::<DynLock>(b);
        a_waiting_writer_holds_back_new_readers::<DynLock>(b);
        downgrade_lets_queued_readers_in::<DynLock>(b);
    }
}

#[test]
fn a_user_strategy() {
    use locks::NoParams;
    readers_share_writers_exclude::<toy::Toy>(NoParams);
    random_readers_and_writers::<toy::Toy>(NoParams);
    a_waiting_writer_holds_back_new_readers::<toy::Toy>(NoParams);
    a_stream_of_readers_does_not_starve_a_writer::<toy::Toy>(NoParams);
}

#[test]
fn new_is_const() {
    static CONFIG: RwLock<locks::SemLock, &str> = RwLock::new("plan9");
    assert_eq!(*CONFIG.read(), "plan9");
    *CONFIG.write() = "9front";
    assert_eq!(*CONFIG.read(), "9front");
}
