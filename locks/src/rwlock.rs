//! A readers-writer lock over any [`Strategy`]: Plan 9's `RWLock`, behind `lock_api`.
//!
//! One word says who holds the lock: a count of readers, a writer bit, and a `QUEUED` bit
//! that is set while threads wait in line. Without waiters, taking and releasing are one
//! atomic operation on the word. A thread that has to wait takes the queue's lock (an `S`),
//! links a node from its own stack at the tail, and blocks on its strategy's [`Waiter`].
//!
//! The lock is task-fair. While anyone waits, no newcomer gets in by the fast path (it sees
//! `QUEUED`) and the slow path queues it behind the others: a stream of new readers cannot
//! starve a waiting writer. The releaser that leaves the lock free hands it to the head of
//! the queue directly: a writer alone, or every reader up to the next writer at once. So a
//! writer cannot starve the readers queued before it either, and a woken thread already owns
//! the lock: it never wakes to find it taken again.
//!
//! Invariant, whenever the queue lock is free: `QUEUED` is set exactly when the queue is not
//! empty, and then the lock is held, or its last holder is about to hand it over (the word
//! reads `QUEUED` alone). Only that holder writes the word then; every fast path fails on it.

use crate::strategy::{Strategy, Waiter};
use crate::sync::{fence, yield_now, AtomicU32, Guarded, Ordering::*};
use std::fmt;
use std::ptr;

/// Held by a writer.
const WRITER: u32 = 1;
/// Someone waits in the queue.
const QUEUED: u32 = 2;
/// One reader; the readers are counted above the two flags.
const READER: u32 = 4;

/// A thread waiting in line, on its own stack. Its fields are read and written under the
/// queue lock, until the node is unlinked and signalled.
struct Node<W> {
    waiter: W,
    next: Guarded<*const Node<W>>,
    writer: bool,
}

/// The raw readers-writer lock of [`RwLock`](crate::RwLock) over the strategy `S`: a
/// `lock_api::RawRwLock` for every strategy.
///
/// Waiting threads block the way `S` blocks (its [`Waiter`]), and are served in the order
/// they came, readers that queue together being let in together.
pub struct RawRwLock<S: Strategy> {
    state: AtomicU32,
    /// Guards `head`, `tail` and the queued nodes.
    queue: S,
    head: Guarded<*const Node<S::Waiter>>,
    tail: Guarded<*const Node<S::Waiter>>,
}

// SAFETY: the raw pointers point at nodes on the stacks of threads blocked in a lock call,
// which stay there until they are unlinked and signalled; they are read and written only
// under `queue`. The waiters themselves are `Send + Sync` (the `Waiter` bound).
unsafe impl<S: Strategy> Send for RawRwLock<S> {}
// SAFETY: as for `Send`: every shared access goes through `queue` or the atomic word.
unsafe impl<S: Strategy> Sync for RawRwLock<S> {}

impl<S: Strategy> fmt::Debug for RawRwLock<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Relaxed);
        f.debug_struct("RawRwLock")
            .field("readers", &(s / READER))
            .field("writer", &(s & WRITER != 0))
            .field("queued", &(s & QUEUED != 0))
            .finish()
    }
}

impl<S: Strategy> RawRwLock<S> {
    /// An unlocked lock whose waiters use a strategy with `params` (its queue lock and its
    /// waiters): `RwLock::from_raw(RawRwLock::<DynLock>::with_params(backend), value)`.
    pub fn with_params(params: S::Params) -> Self {
        Self::from_queue(S::with_params(params))
    }

    #[cfg(not(loom))]
    const fn from_queue(queue: S) -> Self {
        RawRwLock {
            state: AtomicU32::new(0),
            queue,
            head: Guarded::new(ptr::null()),
            tail: Guarded::new(ptr::null()),
        }
    }

    #[cfg(loom)]
    fn from_queue(queue: S) -> Self {
        RawRwLock {
            state: AtomicU32::new(0),
            queue,
            head: Guarded::new(ptr::null()),
            tail: Guarded::new(ptr::null()),
        }
    }

    /// Takes a read lock if that needs no waiting and nobody waits in line.
    #[inline]
    pub fn try_read(&self) -> bool {
        let mut s = self.state.load(Relaxed);
        while s & (WRITER | QUEUED) == 0 {
            // Acquire: the last writer's writes, published by its Release, are visible.
            match self
                .state
                .compare_exchange_weak(s, add_reader(s), Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Takes a read lock, waiting in line behind any writer that holds or waits for it.
    #[doc(alias = "rlock")]
    #[inline]
    pub fn read(&self) {
        if !self.try_read() {
            self.read_slow();
        }
    }

    /// Takes the write lock if it is free.
    #[inline]
    pub fn try_write(&self) -> bool {
        self.state
            .compare_exchange(0, WRITER, Acquire, Relaxed)
            .is_ok()
    }

    /// Takes the write lock, waiting in line.
    #[doc(alias = "wlock")]
    #[inline]
    pub fn write(&self) {
        if !self.try_write() {
            self.write_slow();
        }
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// The caller holds a read lock.
    #[doc(alias = "runlock")]
    #[inline]
    pub unsafe fn unlock_read(&self) {
        if self.state.fetch_sub(READER, Release) == READER | QUEUED {
            // The last reader out, with others waiting: the lock is ours to hand over.
            // Acquire: every reader's Release decrement happens before the next owner.
            fence(Acquire);
            self.hand_over(0);
        }
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The caller holds the write lock.
    #[doc(alias = "wunlock")]
    #[inline]
    pub unsafe fn unlock_write(&self) {
        if self
            .state
            .compare_exchange(WRITER, 0, Release, Relaxed)
            .is_err()
        {
            // QUEUED: nobody else writes the word until we have handed the lock over.
            self.hand_over(0);
        }
    }

    /// Turns the write lock into a read lock, letting in the readers at the head of the queue.
    ///
    /// # Safety
    /// The caller holds the write lock.
    pub unsafe fn downgrade(&self) {
        if self
            .state
            .compare_exchange(WRITER, READER, Release, Relaxed)
            .is_err()
        {
            self.hand_over(READER);
        }
    }

    /// Whether the lock is held (a racy hint).
    pub fn is_locked(&self) -> bool {
        self.state.load(Relaxed) & !QUEUED != 0
    }

    /// Whether a writer holds the lock (a racy hint).
    pub fn is_locked_exclusive(&self) -> bool {
        self.state.load(Relaxed) & WRITER != 0
    }

    #[cold]
    fn read_slow(&self) {
        self.queue.lock();
        let mut s = self.state.load(Relaxed);
        loop {
            if s & (WRITER | QUEUED) == 0 {
                let Some(next) = s.checked_add(READER) else {
                    // SAFETY: locked above; the panic must not leave the queue locked.
                    unsafe { self.queue.unlock() };
                    too_many_readers();
                };
                match self.state.compare_exchange_weak(s, next, Acquire, Relaxed) {
                    Ok(_) => {
                        // SAFETY: locked above.
                        unsafe { self.queue.unlock() };
                        return;
                    }
                    Err(now) => s = now,
                }
            } else if self.mark_queued(&mut s) {
                break;
            }
        }
        self.wait_in_line(false);
    }

    #[cold]
    fn write_slow(&self) {
        self.queue.lock();
        let mut s = self.state.load(Relaxed);
        loop {
            if s == 0 {
                match self
                    .state
                    .compare_exchange_weak(0, WRITER, Acquire, Relaxed)
                {
                    Ok(_) => {
                        // SAFETY: locked above.
                        unsafe { self.queue.unlock() };
                        return;
                    }
                    Err(now) => s = now,
                }
            } else if self.mark_queued(&mut s) {
                break;
            }
        }
        self.wait_in_line(true);
    }

    /// With the queue locked and the lock held as `*s` says, sets `QUEUED`; `false` (with
    /// `*s` updated) if the word changed first. Once it is set, a holder that lets go takes
    /// the slow path, and so finds the node we are about to queue.
    fn mark_queued(&self, s: &mut u32) -> bool {
        if *s & QUEUED != 0 {
            // Only a hand-over, under the queue lock we hold, clears it.
            return true;
        }
        match self
            .state
            .compare_exchange_weak(*s, *s | QUEUED, Relaxed, Relaxed)
        {
            Ok(_) => true,
            Err(now) => {
                *s = now;
                false
            }
        }
    }

    /// With the queue locked and `QUEUED` set: queues a node, unlocks the queue, and blocks
    /// until a releaser hands the lock over.
    fn wait_in_line(&self, writer: bool) {
        let node = Node {
            waiter: self.queue.waiter(),
            next: Guarded::new(ptr::null()),
            writer,
        };
        // SAFETY: we hold the queue lock; the tail, if any, is a live queued node.
        unsafe {
            let tail = self.tail.get();
            match tail.is_null() {
                true => self.head.set(&node),
                false => (*tail).next.set(&node),
            }
            self.tail.set(&node);
            self.queue.unlock();
        }
        let mut in_line = InLine {
            lock: self,
            node: &node,
            done: false,
        };
        while !node.waiter.wait_checked() {}
        in_line.done = true;
    }

    /// Hands the lock to the head of the queue: a writer, or every reader before the next
    /// writer, along with `readers` already counted (a downgrading writer's). The caller
    /// releases the lock with `QUEUED` set, so no other thread writes the word meanwhile.
    #[cold]
    fn hand_over(&self, readers: u32) {
        self.queue.lock();
        // SAFETY: we hold the queue lock; `QUEUED` was set, so the queue holds live nodes.
        let (first, n, state) = unsafe {
            let first = self.head.get();
            let mut state = readers;
            let mut n = 0;
            let mut node = first;
            if (*first).writer && readers == 0 {
                state = WRITER;
                n = 1;
                node = (*first).next.get();
            } else {
                while !node.is_null() && !(*node).writer {
                    state = add_reader(state);
                    n += 1;
                    node = (*node).next.get();
                }
            }
            self.head.set(node);
            if node.is_null() {
                self.tail.set(ptr::null());
            } else {
                state |= QUEUED;
            }
            (first, n, state)
        };
        // Release: what we wrote while holding the lock is visible to whoever takes it next
        // by the fast path; the new owners get it through their signals.
        self.state.store(state, Release);
        // SAFETY: locked above.
        unsafe { self.queue.unlock() };
        let mut node = first;
        for _ in 0..n {
            // SAFETY: the `n` nodes from `first` were unlinked above and wait for exactly
            // this signal; `next` is read before it, since the node may go right after.
            unsafe {
                let next = (*node).next.get();
                S::Waiter::signal(&raw const (*node).waiter);
                node = next;
            }
        }
    }
}

/// `s` with one more reader.
///
/// # Panics
/// If the count is full (a thousand million readers: a leak of read guards). A hand-over
/// never fills it: that would take as many threads queued.
#[inline]
fn add_reader(s: u32) -> u32 {
    match s.checked_add(READER) {
        Some(next) => next,
        None => too_many_readers(),
    }
}

#[cold]
#[track_caller]
fn too_many_readers() -> ! {
    panic!("too many readers of an RwLock (read guards leaked?)")
}

/// A node in line. If its waiter unwinds, the node must stay until it is handed the lock,
/// which its `Drop` waits for and then gives back.
struct InLine<'a, S: Strategy> {
    lock: &'a RawRwLock<S>,
    node: &'a Node<S::Waiter>,
    done: bool,
}

impl<S: Strategy> Drop for InLine<'_, S> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Polls rather than calling into a waiter that has just unwound.
        while !self.node.waiter.is_signalled() {
            yield_now();
        }
        // SAFETY: signalled means handed the lock, of the kind the node asked for.
        unsafe {
            match self.node.writer {
                true => self.lock.unlock_write(),
                false => self.lock.unlock_read(),
            }
        }
    }
}

#[cfg(not(loom))]
// SAFETY: a writer holds the word's WRITER bit alone (taken from 0, or handed over with no
// readers counted); readers are counted and no writer is admitted while any are; Acquire on
// every acquisition pairs with the Release of every release (directly, or through a hand-over
// and the waiter's signal).
unsafe impl<S: Strategy + lock_api::RawMutex> lock_api::RawRwLock for RawRwLock<S> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::from_queue(S::INIT);
    // No owner is recorded: any thread may release.
    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock_shared(&self) {
        self.read()
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.try_read()
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: our caller holds a read lock.
        unsafe { self.unlock_read() }
    }

    #[inline]
    fn lock_exclusive(&self) {
        self.write()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.try_write()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: our caller holds the write lock.
        unsafe { self.unlock_write() }
    }

    fn is_locked(&self) -> bool {
        RawRwLock::is_locked(self)
    }

    fn is_locked_exclusive(&self) -> bool {
        RawRwLock::is_locked_exclusive(self)
    }
}

#[cfg(not(loom))]
// SAFETY: the write lock becomes one read lock in one step, with no moment unheld.
unsafe impl<S: Strategy + lock_api::RawMutex> lock_api::RawRwLockDowngrade for RawRwLock<S> {
    #[inline]
    unsafe fn downgrade(&self) {
        // SAFETY: our caller holds the write lock.
        unsafe { RawRwLock::downgrade(self) }
    }
}
