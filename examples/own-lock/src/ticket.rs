//! A ticket lock, and a waiter that parks the thread: a lock strategy written outside the
//! `locks` crate, as a lock author writes theirs.
//!
//! A ticket lock serves threads in the order they arrive: each takes a ticket (`next`) and
//! waits until the lock serves that number (`serving`). Fair, and on a machine with fewer
//! CPUs than threads, slow: the next in line may be descheduled when its turn comes, and
//! everyone behind it waits too. That is what chantest's lanes show beside ours.

use locks::{lock_api, NoParams, Strategy, Waiter};
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::thread::{self, Thread};
use std::time::Instant;

/// How many times a waiting thread looks at `serving` before it yields the CPU instead: a
/// lock held for a channel operation is usually handed over within a few hundred
/// nanoseconds.
const SPINS: u32 = 100;

/// A ticket lock.
#[derive(Debug)]
pub struct TicketLock {
    /// The next ticket to hand out.
    next: AtomicU32,
    /// The ticket that holds the lock now (the lock is free when it equals `next`).
    serving: AtomicU32,
}

impl TicketLock {
    /// An unlocked lock.
    pub const fn new() -> Self {
        TicketLock {
            next: AtomicU32::new(0),
            serving: AtomicU32::new(0),
        }
    }
}

impl Default for TicketLock {
    fn default() -> Self {
        TicketLock::new()
    }
}

// SAFETY: a thread holds the lock while `serving` equals its ticket, and tickets are handed
// out once each by `fetch_add` (or by `try_lock`'s compare-exchange, which takes the ticket
// only if nobody holds one), so one thread at a time holds it. `unlock` advances `serving`
// with Release, and the next holder sees it with Acquire: an unlock happens before the next
// acquisition. `unlock` is one atomic add: it cannot unwind, on whatever thread it runs.
// (Tickets wrap after 2^32; four billion threads waiting at once would break it.)
unsafe impl Strategy for TicketLock {
    type Params = NoParams;
    type Waiter = ParkWaiter;
    const NAME: &'static str = "ticket";

    fn with_params(_: NoParams) -> Self {
        TicketLock::new()
    }

    fn params(&self) -> NoParams {
        NoParams
    }

    fn waiter(&self) -> ParkWaiter {
        ParkWaiter::new()
    }

    fn lock(&self) {
        let mine = self.next.fetch_add(1, Relaxed);
        let mut looks = 0;
        while self.serving.load(Acquire) != mine {
            if looks < SPINS {
                looks += 1;
                spin_loop();
            } else {
                thread::yield_now();
            }
        }
    }

    fn try_lock(&self) -> bool {
        // Free when the next ticket is the one being served: take that ticket, unless
        // another thread took it first.
        let now = self.serving.load(Acquire);
        self.next
            .compare_exchange(now, now.wrapping_add(1), Acquire, Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        self.serving.fetch_add(1, Release);
    }

    fn is_locked(&self) -> bool {
        self.next.load(Relaxed) != self.serving.load(Relaxed)
    }
}

// SAFETY: forwards to the `Strategy` impl above, whose contract is mutual exclusion. The lock
// records no owner, so a guard may be released on another thread.
unsafe impl lock_api::RawMutex for TicketLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: TicketLock = TicketLock::new();
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        Strategy::lock(self)
    }

    fn try_lock(&self) -> bool {
        Strategy::try_lock(self)
    }

    unsafe fn unlock(&self) {
        // SAFETY: our caller holds the lock.
        unsafe { Strategy::unlock(self) }
    }

    fn is_locked(&self) -> bool {
        Strategy::is_locked(self)
    }
}

/// A one-shot event for a blocked sender or receiver: the thread parks until signalled.
///
/// It is made by the thread that will wait on it (a channel makes a waiter on the thread
/// that is about to block), which is the thread `signal` unparks.
#[derive(Debug)]
pub struct ParkWaiter {
    signalled: AtomicBool,
    thread: Thread,
}

impl ParkWaiter {
    /// An unsignalled waiter for the current thread.
    pub fn new() -> Self {
        ParkWaiter {
            signalled: AtomicBool::new(false),
            thread: thread::current(),
        }
    }
}

impl Default for ParkWaiter {
    fn default() -> Self {
        ParkWaiter::new()
    }
}

// SAFETY: the `Waiter` contract, clause by clause:
// 1. `wait`, `wait_until` and `is_signalled` report a signal only once they read `true` from
//    `signalled`, and `signal`'s store of `true` is its last access to the waiter (it unparks
//    through its own copy of the thread handle).
// 2. That store is Release, and every read that reports it is Acquire.
// 3. `signal` clones a handle, stores and unparks: it never waits for the waiting thread.
unsafe impl Waiter for ParkWaiter {
    fn wait(&self) {
        // `park` may return without an unpark: look again.
        while !self.is_signalled() {
            thread::park();
        }
    }

    fn wait_until(&self, deadline: Instant) -> bool {
        loop {
            if self.is_signalled() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            thread::park_timeout(deadline - now);
        }
    }

    fn is_signalled(&self) -> bool {
        self.signalled.load(Acquire)
    }

    unsafe fn signal(this: *const Self) {
        // SAFETY: the caller guarantees `*this` is live and not yet signalled, so it stays
        // live until the store below publishes the signal; the handle is copied first.
        let thread = unsafe { (*this).thread.clone() };
        // SAFETY: still live, for the same reason. After this store the waiting thread may
        // return and free the waiter: we touch it no more.
        unsafe { (*this).signalled.store(true, Release) };
        // An unpark that comes after the waiter left only makes that thread's next `park`
        // return at once, which every `park` is ready for.
        thread.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chan::Chan;

    /// Step 1 of the README: the lock in a channel, with threads blocking on both sides.
    #[test]
    fn every_value_arrives_once_through_a_channel() {
        for nbuf in [0, 1, 10] {
            let c: Chan<u64, TicketLock> = Chan::new(nbuf);
            let senders: Vec<_> = (0..4)
                .map(|s| {
                    let c = c.clone();
                    thread::spawn(move || (0..5000).for_each(|i| c.send(s * 5000 + i).unwrap()))
                })
                .collect();
            let mut seen = vec![false; 20000];
            for _ in 0..20000 {
                let v = c.recv().unwrap() as usize;
                assert!(!seen[v], "{v} twice");
                seen[v] = true;
            }
            senders.into_iter().for_each(|t| t.join().unwrap());
        }
    }

    #[test]
    fn a_mutex_counts_exactly() {
        let m = std::sync::Arc::new(locks::Mutex::<TicketLock, u64>::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || (0..10000).for_each(|_| *m.lock() += 1))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*m.lock(), 40000);
    }

    #[test]
    fn a_waiter_is_woken_by_its_signal() {
        let w = std::sync::Arc::new(ParkWaiter::new());
        let signaller = {
            let w = w.clone();
            // SAFETY: live (the Arc), and signalled only here.
            thread::spawn(move || unsafe { Waiter::signal(std::sync::Arc::as_ptr(&w)) })
        };
        w.wait();
        signaller.join().unwrap();
        assert!(w.wait_until(Instant::now()));
    }
}
