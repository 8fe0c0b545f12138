//! A condition variable over any [`Strategy`]: Plan 9's `Rendez`, with parking_lot's surface.
//!
//! A waiter puts a node on its own stack, holding its mutex's [`Waiter`], and links it into the
//! condvar's queue before it lets go of the mutex. A notify unlinks nodes and signals them, so a
//! thread blocks exactly as its strategy blocks, and a wake-up meant for it cannot be lost: the
//! node is in the queue before the mutex is free, and a notifier that holds the mutex finds it.
//!
//! The queue has a lock of its own, an `S` (a notify may come from a thread that does not hold
//! the mutex). Its critical sections are a few pointer writes; nothing user-written runs under
//! it, and signals are sent after it is released.
//!
//! `notify_all` does not wake every waiter at once to fight over the mutex. It unlinks them all
//! and signals the first; each woken waiter, once it holds the mutex again, signals the next
//! (the nodes stay chained by their `next` links). So at most one woken waiter at a time waits
//! for the mutex, which is what parking_lot's requeue onto the mutex achieves, here without
//! asking the mutex to keep a queue.
//!
//! The condvar remembers which mutex its waiters use while any are queued; a wait with another
//! one panics before anything is changed, with the guard still held.

use crate::strategy::{Strategy, Waiter};
use crate::sync::{yield_now, AtomicU32, Guarded, Ordering::Relaxed};
use std::fmt;
use std::ptr;
use std::time::Instant;

/// Whether a timed wait gave up: what [`Condvar::wait_for`] and its kin return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// `true` if the wait ended because its time ran out, not because of a notify.
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// A waiting thread's entry in the queue. It lives on that thread's stack; every field but the
/// waiter is read and written under the condvar's queue lock, except `next` once the node has
/// been unlinked and signalled (see [`Waiting::finish`]).
struct Node<W> {
    waiter: W,
    /// The next node in the queue; once unlinked by `notify_all`, the next to signal.
    next: Guarded<*const Node<W>>,
    prev: Guarded<*const Node<W>>,
    /// Still in the queue: no notify has taken it.
    linked: Guarded<bool>,
}

/// A condition variable whose waiters block the way the strategy `S` makes them.
///
/// The same calls as parking_lot's `Condvar` (and Plan 9's `Rendez`: `rsleep`, `rwakeup`,
/// `rwakeupall`). There are no spurious wake-ups: a wait returns because of a notify or its
/// deadline. Waiters are woken in the order they began to wait.
///
/// ```
/// use locks::{Condvar, Mutex, SemLock};
/// use std::sync::Arc;
///
/// let pair = Arc::new((Mutex::<SemLock, bool>::new(false), Condvar::<SemLock>::new()));
/// let pair2 = pair.clone();
/// std::thread::spawn(move || {
///     *pair2.0.lock() = true;
///     pair2.1.notify_one();
/// });
/// let mut started = pair.0.lock();
/// pair.1.wait_while(&mut started, |started| !*started);
/// assert!(*started);
/// ```
///
/// One condvar serves one mutex at a time: waiting with a second mutex while threads wait
/// with the first panics (with the guard still held). Once none wait, any mutex may be used.
pub struct Condvar<S: Strategy> {
    /// Guards `head`, `tail`, `mutex` and the nodes' links.
    queue: S,
    /// Nodes queued, for a notify that finds none without taking the lock.
    len: AtomicU32,
    head: Guarded<*const Node<S::Waiter>>,
    tail: Guarded<*const Node<S::Waiter>>,
    /// The address of the mutex the queued waiters hold; 0 while none are queued.
    mutex: Guarded<usize>,
}

// SAFETY: the raw pointers point at nodes on the stacks of threads blocked in a wait, which stay
// there until they are unlinked and signalled; they are read and written only under `queue`.
// The waiters themselves are `Send + Sync` (the `Waiter` bound).
unsafe impl<S: Strategy> Send for Condvar<S> {}
// SAFETY: as for `Send`: every shared access goes through `queue` or an atomic.
unsafe impl<S: Strategy> Sync for Condvar<S> {}

impl<S: Strategy + lock_api::RawMutex> Condvar<S> {
    /// A condvar with no waiters; its queue lock has the strategy's default parameters.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::from_queue(S::INIT)
    }
}

#[cfg(not(loom))]
impl<S: Strategy + lock_api::RawMutex> Default for Condvar<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Strategy> fmt::Debug for Condvar<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar")
            .field("waiters", &self.len.load(Relaxed))
            .finish_non_exhaustive()
    }
}

impl<S: Strategy> Condvar<S> {
    /// A condvar whose queue lock has `params` (say a [`DynLock`](crate::DynLock)'s backend).
    /// Waiters wait with their mutex's waiter either way.
    pub fn with_params(params: S::Params) -> Self {
        Self::from_queue(S::with_params(params))
    }

    #[cfg(not(loom))]
    const fn from_queue(queue: S) -> Self {
        Condvar {
            queue,
            len: AtomicU32::new(0),
            head: Guarded::new(ptr::null()),
            tail: Guarded::new(ptr::null()),
            mutex: Guarded::new(0),
        }
    }

    #[cfg(loom)]
    fn from_queue(queue: S) -> Self {
        Condvar {
            queue,
            len: AtomicU32::new(0),
            head: Guarded::new(ptr::null()),
            tail: Guarded::new(ptr::null()),
            mutex: Guarded::new(0),
        }
    }

    /// Wakes the longest-waiting thread, if any; `true` if one was woken. That thread's wait
    /// then reports no time-out, even if its deadline passes as it wakes.
    #[doc(alias = "rwakeup")]
    #[inline]
    pub fn notify_one(&self) -> bool {
        // A notifier that holds the mutex sees every waiter that queued before it took the
        // mutex: the waiter counted itself before it let the mutex go.
        if self.len.load(Relaxed) == 0 {
            return false;
        }
        self.notify_one_slow()
    }

    #[cold]
    fn notify_one_slow(&self) -> bool {
        self.queue.lock();
        // SAFETY: we hold the queue lock, and a queued node is live.
        let node = unsafe {
            let node = self.head.get();
            if !node.is_null() {
                self.unlink(node);
                // It goes out alone: there is nobody to pass a baton to.
                (*node).next.set(ptr::null());
            }
            node
        };
        // SAFETY: locked above.
        unsafe { self.queue.unlock() };
        if node.is_null() {
            return false;
        }
        // SAFETY: unlinked, so no other notify reaches it; its thread stays until signalled
        // (see `Waiting::finish`), and this is its only signal.
        unsafe { S::Waiter::signal(&raw const (*node).waiter) };
        true
    }

    /// Wakes every waiting thread; returns how many. They take the mutex one after another:
    /// each wakes the next once it holds the mutex, so they do not all contend for it at once.
    #[doc(alias = "rwakeupall")]
    #[inline]
    pub fn notify_all(&self) -> usize {
        if self.len.load(Relaxed) == 0 {
            return 0;
        }
        self.notify_all_slow()
    }

    #[cold]
    fn notify_all_slow(&self) -> usize {
        self.queue.lock();
        let mut n = 0;
        // SAFETY: we hold the queue lock, and queued nodes are live. Their `next` links stay:
        // they are now the chain of batons.
        let first = unsafe {
            let first = self.head.get();
            let mut node = first;
            while !node.is_null() {
                (*node).linked.set(false);
                node = (*node).next.get();
                n += 1;
            }
            self.head.set(ptr::null());
            self.tail.set(ptr::null());
            self.mutex.set(0);
            first
        };
        self.len.store(0, Relaxed);
        // SAFETY: locked above.
        unsafe { self.queue.unlock() };
        if !first.is_null() {
            // SAFETY: unlinked and never signalled; its thread stays until signalled.
            unsafe { S::Waiter::signal(&raw const (*first).waiter) };
        }
        n
    }

    /// Links `node` at the tail, for a waiter holding the mutex at `mutex`.
    ///
    /// # Panics
    /// If waiters of another mutex are queued; nothing has changed then.
    fn enqueue(&self, node: &Node<S::Waiter>, mutex: usize) {
        self.queue.lock();
        // SAFETY: we hold the queue lock.
        let other = unsafe { self.mutex.get() };
        if other != 0 && other != mutex {
            // SAFETY: locked above.
            unsafe { self.queue.unlock() };
            panic!("a Condvar was waited on with two different mutexes at once");
        }
        // SAFETY: we hold the queue lock; the tail, if any, is a live queued node.
        unsafe {
            let tail = self.tail.get();
            node.prev.set(tail);
            node.next.set(ptr::null());
            node.linked.set(true);
            match tail.is_null() {
                true => self.head.set(node),
                false => (*tail).next.set(node),
            }
            self.tail.set(node);
            self.mutex.set(mutex);
        }
        self.len.store(self.len.load(Relaxed) + 1, Relaxed);
        // SAFETY: locked above.
        unsafe { self.queue.unlock() };
    }

    /// Takes `node` out of the queue.
    ///
    /// # Safety
    /// The caller holds the queue lock and `node` is queued.
    unsafe fn unlink(&self, node: *const Node<S::Waiter>) {
        // SAFETY: the caller holds the queue lock; queued nodes and their neighbours are live.
        unsafe {
            let prev = (*node).prev.get();
            let next = (*node).next.get();
            match prev.is_null() {
                true => self.head.set(next),
                false => (*prev).next.set(next),
            }
            match next.is_null() {
                true => self.tail.set(prev),
                false => (*next).prev.set(prev),
            }
            (*node).linked.set(false);
        }
        let len = self.len.load(Relaxed) - 1;
        self.len.store(len, Relaxed);
        if len == 0 {
            // SAFETY: as above.
            unsafe { self.mutex.set(0) };
        }
    }

    /// The engine of every wait: queue, release `mutex` with `unlock`, block until notified or
    /// `deadline`, retake it with `lock`. Returns whether the wait timed out.
    ///
    /// # Safety
    /// The caller holds `mutex`, taken with the lock that `unlock` and `lock` operate.
    unsafe fn wait_on(
        &self,
        mutex: &S,
        deadline: Option<Instant>,
        unlock: unsafe fn(&S),
        lock: fn(&S),
    ) -> bool {
        let node = Node {
            waiter: mutex.waiter(),
            next: Guarded::new(ptr::null()),
            prev: Guarded::new(ptr::null()),
            linked: Guarded::new(false),
        };
        self.enqueue(&node, mutex as *const S as usize);
        // From here on the node must not go before it is out of the queue and, if a notify
        // took it, signalled: `waiting` sees to that even if the waiter unwinds.
        let mut waiting = Waiting {
            cv: self,
            node: &node,
            mutex,
            lock,
            done: false,
        };
        // SAFETY: our caller holds the mutex.
        unsafe { unlock(mutex) };
        let signalled = match deadline {
            None => {
                while !node.waiter.wait_checked() {}
                true
            }
            Some(d) => loop {
                if node.waiter.wait_until(d) {
                    break true;
                }
                // A waiter may give up early; only the clock says the time is up.
                if Instant::now() >= d {
                    break false;
                }
            },
        };
        waiting.finish(signalled, false)
    }

    /// Waits for a notify, with the mutex of `mutex` (under loom, which has no `MutexGuard`).
    ///
    /// # Safety
    /// The caller holds `mutex`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub unsafe fn wait_raw(&self, mutex: &S) {
        // SAFETY: forwarded.
        unsafe { self.wait_on(mutex, None, S::unlock, S::lock) };
    }

    /// [`wait_raw`](Self::wait_raw) with a deadline; `true` if it timed out. Under loom time
    /// does not pass: the waiter looks once and gives up.
    ///
    /// # Safety
    /// The caller holds `mutex`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub unsafe fn wait_until_raw(&self, mutex: &S, deadline: Instant) -> bool {
        // SAFETY: forwarded.
        unsafe { self.wait_on(mutex, Some(deadline), S::unlock, S::lock) }
    }
}

/// A queued wait, finished exactly once: normally, or by its `Drop` if the waiter unwinds.
struct Waiting<'a, S: Strategy> {
    cv: &'a Condvar<S>,
    node: &'a Node<S::Waiter>,
    mutex: &'a S,
    lock: fn(&S),
    done: bool,
}

impl<S: Strategy> Waiting<'_, S> {
    /// Leaves the queue (if no notify took the node first), or waits for the notify's signal
    /// (if one did); then retakes the mutex and passes on the `notify_all` baton. Returns
    /// whether the wait timed out: only if no notify took the node.
    fn finish(&mut self, signalled: bool, unwinding: bool) -> bool {
        self.done = true;
        let node = self.node;
        let mut timed_out = false;
        if !signalled {
            let cv = self.cv;
            cv.queue.lock();
            // SAFETY: we hold the queue lock, and a linked node is queued.
            unsafe {
                if node.linked.get() {
                    cv.unlink(node);
                    timed_out = true;
                }
            }
            // SAFETY: locked above.
            unsafe { cv.queue.unlock() };
            if !timed_out {
                // A notify took the node and will signal it (at once, or, after a
                // `notify_all`, once the waiter before it holds the mutex): the node must
                // stay until then. While unwinding, poll rather than call into a waiter
                // that has just unwound.
                match unwinding {
                    true => {
                        while !node.waiter.is_signalled() {
                            yield_now();
                        }
                    }
                    false => while !node.waiter.wait_checked() {},
                }
            }
        }
        (self.lock)(self.mutex);
        if !timed_out {
            // Signalled: nobody writes `next` any more, and the signal's Release (seen with
            // Acquire by the waiter) orders the notify's writes before this read.
            // SAFETY: as just said.
            let next = unsafe { node.next.get() };
            if !next.is_null() {
                // SAFETY: `next` was unlinked by the same `notify_all` and waits for exactly
                // this signal, so it is live and unsignalled.
                unsafe { S::Waiter::signal(&raw const (*next).waiter) };
            }
        }
        timed_out
    }
}

impl<S: Strategy> Drop for Waiting<'_, S> {
    fn drop(&mut self) {
        if !self.done {
            // The waiter unwound: leave the queue and hold the mutex again, as the guard that
            // is about to be dropped expects.
            self.finish(false, true);
        }
    }
}

#[cfg(not(loom))]
mod guarded {
    use super::*;
    use crate::MutexGuard;
    use lock_api::RawMutex;
    use std::time::Duration;

    /// The waits, on a [`MutexGuard`](crate::MutexGuard) of a mutex with the same strategy.
    impl<S: Strategy + RawMutex> Condvar<S> {
        /// Releases the guard's mutex, blocks until notified, and takes the mutex again.
        ///
        /// # Panics
        /// If threads are waiting on this condvar with another mutex.
        #[doc(alias = "rsleep")]
        pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, S, T>) {
            self.wait_guarded(guard, None);
        }

        /// Waits as long as `condition` holds, checking it first, with the mutex held.
        ///
        /// If `condition` panics, the guard holds the mutex, and this condvar is as it was.
        pub fn wait_while<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            mut condition: F,
        ) {
            while condition(&mut **guard) {
                self.wait(guard);
            }
        }

        /// [`wait`](Self::wait), giving up at `deadline`.
        pub fn wait_until<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            deadline: Instant,
        ) -> WaitTimeoutResult {
            WaitTimeoutResult(self.wait_guarded(guard, Some(deadline)))
        }

        /// [`wait`](Self::wait), giving up after `timeout`. A timeout past the end of time
        /// (such as `Duration::MAX`) is no timeout.
        pub fn wait_for<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            timeout: Duration,
        ) -> WaitTimeoutResult {
            WaitTimeoutResult(self.wait_guarded(guard, deadline(timeout)))
        }

        /// [`wait_while`](Self::wait_while), giving up at `deadline`. As parking_lot's, it
        /// reports a time-out without checking `condition` again.
        pub fn wait_while_until<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            condition: F,
            deadline: Instant,
        ) -> WaitTimeoutResult {
            self.wait_while_guarded(guard, condition, Some(deadline))
        }

        /// [`wait_while`](Self::wait_while), giving up after `timeout` (none past the end of
        /// time).
        pub fn wait_while_for<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            condition: F,
            timeout: Duration,
        ) -> WaitTimeoutResult {
            self.wait_while_guarded(guard, condition, deadline(timeout))
        }

        fn wait_while_guarded<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            mut condition: F,
            deadline: Option<Instant>,
        ) -> WaitTimeoutResult {
            while condition(&mut **guard) {
                if self.wait_guarded(guard, deadline) {
                    return WaitTimeoutResult(true);
                }
            }
            WaitTimeoutResult(false)
        }

        /// `true` if it timed out.
        fn wait_guarded<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, S, T>,
            deadline: Option<Instant>,
        ) -> bool {
            // SAFETY: only to release and retake the lock the guard holds, leaving it held
            // when the guard is next used.
            let raw = unsafe { MutexGuard::mutex(guard).raw() };
            // SAFETY: the guard holds `raw`, taken through `RawMutex`, whose `unlock` and
            // `lock` these are.
            unsafe {
                self.wait_on(
                    raw,
                    deadline,
                    <S as RawMutex>::unlock,
                    <S as RawMutex>::lock,
                )
            }
        }
    }

    /// The deadline `timeout` from now; none if that is past what `Instant` can hold.
    fn deadline(timeout: Duration) -> Option<Instant> {
        Instant::now().checked_add(timeout)
    }
}
