//! How a blocked operation registers and is woken.
//!
//! A thread that must block builds a [`Context`] on its stack (its lock strategy's waiter plus
//! a word saying who ended the wait) and one [`Node`] per operation it waits on, linked into the
//! FIFO [`WaitQueue`] of that channel's senders or receivers. A plain send or receive has one
//! node; an alt has one per arm, all pointing at the same context.
//!
//! Whoever completes an operation with a waiting node must first *claim* the node's context by
//! a compare-and-swap of its `select` word from [`WAITING`]: only one channel can win a context
//! that is queued on several, and a waiter that times out competes in the same way by
//! cancelling. The claimer moves the value through the node's slot while holding the channel's
//! lock, unlinks the node, releases the lock and only then signals the waiter.
//!
//! Nodes live on the blocked thread's stack (or in its alt); the queues hold raw pointers to
//! them. That is sound because a node is unlinked, under the channel lock, before its owner can
//! return: either by the claimer, or by the owner itself after waking or cancelling.

use crate::sync::{AtomicUsize, Ordering::*};
use std::cell::{Cell, UnsafeCell};
use std::ptr;

/// `select` while the owner still waits.
pub(crate) const WAITING: usize = 0;
/// `select` after the owner gave up (timeout).
pub(crate) const CANCELLED: usize = usize::MAX;
/// Set in `select` beside a node's token when the node was ended by `close`.
pub(crate) const CLOSED: usize = 1 << (usize::BITS - 2);

/// A blocked thread: its waiter, and who ended its wait.
pub(crate) struct Context<W> {
    pub(crate) waiter: W,
    select: AtomicUsize,
}

impl<W: locks::Waiter> Context<W> {
    pub(crate) fn new(waiter: W) -> Self {
        Context {
            waiter,
            select: AtomicUsize::new(WAITING),
        }
    }

    /// Claims the context for the node with `token`; false if someone else already has.
    #[inline]
    pub(crate) fn try_claim(&self, token: usize) -> bool {
        // Acquire: the owner's writes to its nodes (a send arm's value) are visible to us.
        self.select
            .compare_exchange(WAITING, token, Acquire, Relaxed)
            .is_ok()
    }

    /// The owner gives up; false if a claimer got there first (and will signal).
    pub(crate) fn try_cancel(&self) -> bool {
        self.select
            .compare_exchange(WAITING, CANCELLED, Relaxed, Relaxed)
            .is_ok()
    }

    /// Whether someone has claimed or cancelled it (racy outside the channel lock).
    #[inline]
    pub(crate) fn is_taken(&self) -> bool {
        self.select.load(Relaxed) != WAITING
    }

    /// Who ended the wait: a token, possibly with [`CLOSED`], or [`CANCELLED`].
    pub(crate) fn selected(&self) -> usize {
        self.select.load(Acquire)
    }

    /// Blocks until claimed, or until `deadline`. Returns `false` only if the wait was
    /// cancelled by the timeout, in which case nobody will touch the context again once the
    /// owner has unlinked its nodes.
    pub(crate) fn block(&self, deadline: Option<std::time::Instant>) -> bool {
        match deadline {
            None => self.waiter.wait(),
            Some(d) => {
                if !self.waiter.wait_until(d) {
                    if self.try_cancel() {
                        return false;
                    }
                    // Claimed while we were giving up: the claimer's signal is on its way,
                    // and it may still touch the waiter, so wait for it.
                    self.waiter.wait();
                }
            }
        }
        true
    }

    /// Wakes the owner of a claimed context.
    ///
    /// # Safety
    /// `this` must have been claimed by the caller, with the channel lock since released.
    pub(crate) unsafe fn signal(this: *const Self) {
        // SAFETY: the owner cannot return before this signal, so the context is live; the
        // waiter's `signal` copes with it vanishing right after.
        unsafe { W::signal(ptr::addr_of!((*this).waiter)) }
    }
}

/// One operation of a blocked thread, linked into one channel's queue.
///
/// Every field but `slot`'s contents is touched only under that channel's lock.
pub(crate) struct Node<T, W> {
    prev: Cell<*const Node<T, W>>,
    next: Cell<*const Node<T, W>>,
    linked: Cell<bool>,
    ctx: Cell<*const Context<W>>,
    /// What a claimer stores in the context's `select`: the alt arm index plus one.
    token: Cell<usize>,
    /// A sender's value, or where a receiver's value lands.
    pub(crate) slot: UnsafeCell<Option<T>>,
}

impl<T, W> Node<T, W> {
    pub(crate) fn new(slot: Option<T>) -> Self {
        Node {
            prev: Cell::new(ptr::null()),
            next: Cell::new(ptr::null()),
            linked: Cell::new(false),
            ctx: Cell::new(ptr::null()),
            token: Cell::new(0),
            slot: UnsafeCell::new(slot),
        }
    }

    /// Points the node at its owner's context, before it is queued.
    pub(crate) fn bind(&self, ctx: &Context<W>, token: usize) {
        self.ctx.set(ctx);
        self.token.set(token);
    }

    /// Takes what the slot holds.
    ///
    /// # Safety
    /// The caller must own the node's slot now: hold the channel lock having claimed the
    /// node, or be the node's owner after it was unlinked.
    pub(crate) unsafe fn take(&self) -> Option<T> {
        // SAFETY: exclusive access per the contract above.
        unsafe { (*self.slot.get()).take() }
    }

    /// Puts a value in the slot (same contract as [`take`](Self::take)).
    pub(crate) unsafe fn put(&self, v: T) {
        // SAFETY: exclusive access per the contract of `take`.
        unsafe { *self.slot.get() = Some(v) }
    }
}

/// A FIFO of nodes, intrusive and allocation-free.
pub(crate) struct WaitQueue<T, W> {
    head: *const Node<T, W>,
    tail: *const Node<T, W>,
}

// SAFETY: the queue only holds pointers to nodes whose owners keep them alive while linked;
// every access happens under the owning channel's lock.
unsafe impl<T: Send, W: Send> Send for WaitQueue<T, W> {}

impl<T, W: locks::Waiter> WaitQueue<T, W> {
    pub(crate) const fn new() -> Self {
        WaitQueue {
            head: ptr::null(),
            tail: ptr::null(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Queues `node` at the back.
    ///
    /// # Safety
    /// `node` must stay alive and in place until it is unlinked.
    pub(crate) unsafe fn push(&mut self, node: &Node<T, W>) {
        debug_assert!(!node.linked.get());
        node.prev.set(self.tail);
        node.next.set(ptr::null());
        node.linked.set(true);
        match self.tail.is_null() {
            true => self.head = node,
            // SAFETY: linked nodes are alive.
            false => unsafe { (*self.tail).next.set(node) },
        }
        self.tail = node;
    }

    /// Unlinks `node` if it is still queued here.
    pub(crate) fn remove(&mut self, node: &Node<T, W>) {
        if !node.linked.replace(false) {
            return;
        }
        let (prev, next) = (node.prev.get(), node.next.get());
        match prev.is_null() {
            true => self.head = next,
            // SAFETY: linked nodes are alive.
            false => unsafe { (*prev).next.set(next) },
        }
        match next.is_null() {
            true => self.tail = prev,
            // SAFETY: linked nodes are alive.
            false => unsafe { (*next).prev.set(prev) },
        }
    }

    /// Whether some queued node could still be claimed (a hint for alt's readiness check;
    /// drops nodes already claimed through another channel or cancelled).
    pub(crate) fn has_waiting(&mut self) -> bool {
        self.purge();
        !self.head.is_null()
    }

    fn purge(&mut self) {
        // SAFETY: linked nodes and their contexts are alive.
        while let Some(n) = unsafe { self.head.as_ref() } {
            if unsafe { !(*n.ctx.get()).is_taken() } {
                break;
            }
            self.remove(n);
        }
    }

    /// Claims the first node whose owner still waits, unlinks it and returns it; nodes
    /// claimed elsewhere or cancelled are dropped on the way.
    ///
    /// The returned node stays alive until its context is signalled.
    pub(crate) fn claim(&mut self, closed: bool) -> Option<&Node<T, W>> {
        // SAFETY: linked nodes and their contexts are alive; once claimed, a node's owner
        // waits for our signal, so the reference outlives the queue link.
        while let Some(n) = unsafe { self.head.as_ref() } {
            self.remove(n);
            let token = n.token.get() | if closed { CLOSED } else { 0 };
            if unsafe { (*n.ctx.get()).try_claim(token) } {
                return Some(n);
            }
        }
        None
    }

    /// The context of a claimed node, to signal after unlocking.
    pub(crate) fn ctx_of(node: &Node<T, W>) -> *const Context<W> {
        node.ctx.get()
    }
}
