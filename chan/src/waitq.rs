//! How a blocked operation registers and is woken.
//!
//! A thread that must block builds a [`Party`] on its stack (its lock strategy's waiter plus
//! a word saying who ended the wait) and one [`Node`] per operation it waits on, linked into the
//! FIFO [`WaitQueue`] of that channel's senders or receivers. A plain send or receive has one
//! node; an alt has one per arm, all pointing at the same context.
//!
//! Whoever completes an operation with a waiting node must first *claim* the node's context by
//! moving its `select` word from [`Selected::Waiting`]: only one channel can win a context that
//! is queued on several, and a waiter that gives up (timeout, or its waiter unwinding) competes
//! in the same way by aborting. For an alt's context, queued on several channels, that takes a
//! compare-and-swap; a plain send or receive waits on one channel and gives up only under its
//! lock ([`Node::bind_alone`]), so the lock the claimer holds decides, and a store does. The
//! claimer moves the value through the node's slot while holding the channel's lock, unlinks
//! the node, releases the lock and only then signals the waiter, through the [`Wake`] that
//! claiming returned.
//!
//! Nodes live on the blocked thread's stack (or in its alt); the queues hold raw pointers to
//! them. That is sound because a node is unlinked, under the channel lock, before its owner can
//! return, and a claimed owner does not return before the claimer's signal: [`Party::block`]
//! trusts the waiter's report only as far as the unsafe [`locks::Waiter`] contract allows, and
//! [`Abandon`] covers a waiter that unwinds.

use crate::sync::{AtomicBool, AtomicUsize, Ordering::*};
use crate::unwind;
use std::cell::{Cell, UnsafeCell};
use std::ptr;
use std::task::Waker;
use std::time::Instant;

/// `ptr::replace` without its `&mut`: a raw read, then a raw write.
///
/// The owner of a context or node and the party that claimed it reach the same memory through
/// pointers of their own (the owner through its pinned future, the claimer through the
/// queue). A `&mut` made by either, even while it is the only one touching the memory, would
/// be a unique reborrow that invalidates the other's pointer under Stacked Borrows (and
/// `ptr::replace` makes one inside). Raw reads and writes assert no uniqueness.
///
/// # Safety
/// `p` must be valid for reads and writes, hold an initialised `T`, and no one else may
/// access it during the call.
#[inline(always)]
unsafe fn replace_raw<T>(p: *mut T, new: T) -> T {
    // SAFETY: forwarded.
    unsafe {
        let old = ptr::read(p);
        ptr::write(p, new);
        old
    }
}

/// Who ended a wait: the value of a context's `select` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Selected {
    /// Nobody yet: the owner still waits.
    Waiting,
    /// The owner gave up (deadline, or its waiter unwound); claimers must pass it by.
    Aborted,
    /// The node with this token completed its operation.
    Operation(usize),
    /// The node with this token was ended by `close`.
    Closed(usize),
}

impl Selected {
    // Encoding: 0 waiting, 1 aborted, then 2(token + 1) for an operation and one more for a
    // close (`WaitQueue::claim` relies on that low bit). Tokens are arm indices, far below
    // `usize::MAX / 2`.
    fn encode(self) -> usize {
        match self {
            Selected::Waiting => 0,
            Selected::Aborted => 1,
            Selected::Operation(t) => (t + 1) << 1,
            Selected::Closed(t) => ((t + 1) << 1) | 1,
        }
    }

    fn decode(word: usize) -> Self {
        match word {
            0 => Selected::Waiting,
            1 => Selected::Aborted,
            w if w & 1 == 0 => Selected::Operation((w >> 1) - 1),
            w => Selected::Closed((w >> 1) - 1),
        }
    }
}

/// A blocked party, thread or task: how to wake it, and who ended its wait. The code calls one
/// its *context* (`ctx`), the name this type had before it made way for `std::task::Context`.
pub(crate) struct Party<W> {
    select: AtomicUsize,
    kind: PartyKind<W>,
}

/// Who the party is: a thread, with its strategy's waiter, or an async task.
enum PartyKind<W> {
    Thread(W),
    Task(TaskWait),
}

/// How an async task waits (`crate::future`): its `Waker`, taken by the claimer under the
/// channel lock that let it claim, and a flag the claimer raises once it is done with the
/// context and its nodes (the task's `is_signalled`).
pub(crate) struct TaskWait {
    /// Touched only under the lock of every channel the context is queued on (the owner
    /// replacing it needs them all; a claimer holds the one it claimed through, and only
    /// the claimer that won the `select` word takes it), or by the owner while unqueued.
    waker: UnsafeCell<Option<Waker>>,
    done: AtomicBool,
}

impl<W: locks::Waiter> Party<W> {
    pub(crate) fn new(waiter: W) -> Self {
        Party {
            select: AtomicUsize::new(0),
            kind: PartyKind::Thread(waiter),
        }
    }

    /// A context for an async task (`crate::future`), waking `waker` (if any yet).
    pub(crate) fn task(waker: Option<Waker>) -> Self {
        Party {
            select: AtomicUsize::new(0),
            kind: PartyKind::Task(TaskWait {
                waker: UnsafeCell::new(waker),
                done: AtomicBool::new(false),
            }),
        }
    }

    /// The thread's waiter; contexts made by [`new`](Self::new) only.
    #[inline]
    pub(crate) fn waiter(&self) -> &W {
        match &self.kind {
            PartyKind::Thread(w) => w,
            PartyKind::Task(_) => unreachable!("a task's context has no thread waiter"),
        }
    }

    /// The task's wait; contexts made by [`task`](Self::task) only.
    #[inline]
    fn task_wait(&self) -> &TaskWait {
        match &self.kind {
            PartyKind::Task(t) => t,
            PartyKind::Thread(_) => unreachable!("a thread's context has no waker"),
        }
    }

    /// A task's context, before it is queued again: waiting, not signalled. The caller owns
    /// it (no node of it is linked, and any claimer has signalled).
    pub(crate) fn reset_task(&self) {
        self.select.store(0, Relaxed);
        self.task_wait().done.store(false, Relaxed);
    }

    /// Whether a task's claimer is done with the context and its nodes (Acquire: what it
    /// wrote into them is visible).
    #[inline]
    pub(crate) fn task_signalled(&self) -> bool {
        self.task_wait().done.load(Acquire)
    }

    /// Replaces a task's waker, returning the old one to be dropped outside the lock.
    ///
    /// # Safety
    /// The caller must own the waker slot: hold the lock of every channel the context is
    /// queued on, or have none of its nodes linked.
    pub(crate) unsafe fn swap_waker(&self, w: Option<Waker>) -> Option<Waker> {
        // SAFETY: exclusive access per the contract.
        unsafe { replace_raw(self.task_wait().waker.get(), w) }
    }

    /// Whether the stored waker would wake the same task as `w` (same contract as
    /// [`swap_waker`](Self::swap_waker)).
    pub(crate) unsafe fn waker_will_wake(&self, w: &Waker) -> bool {
        // SAFETY: exclusive access per the contract of `swap_waker`.
        unsafe { &*self.task_wait().waker.get() }
            .as_ref()
            .is_some_and(|old| old.will_wake(w))
    }

    /// Gives up the wait: true if the wait is now aborted (no claimer will touch it once its
    /// nodes are unlinked), false if a claimer won first. A context whose node was bound with
    /// [`Node::bind_alone`] must be aborted only under that channel's lock, and its node
    /// unlinked before the lock goes: its claimers rely on it (`claim_alone`).
    pub(crate) fn abort(&self) -> bool {
        self.try_select(Selected::Aborted)
    }

    /// Moves `select` from waiting to `to`; false if someone else ended the wait first.
    #[inline]
    fn try_select(&self, to: Selected) -> bool {
        self.try_select_word(to.encode())
    }

    /// Claims a context bound alone (see `Node::alone`), under the lock of the channel its
    /// node is queued on. Its owner gives the wait up only under that lock, and unlinks the
    /// node in the same critical section, so a context whose node is still linked is
    /// waiting: nobody can have moved the word, and a store claims it (no locked
    /// instruction, and no look first). The owner learns of the claim through its signal (a
    /// thread's waiter, a task's `done`), not through this store, so it orders nothing.
    #[inline]
    fn claim_alone(&self, to: usize) {
        debug_assert_eq!(
            self.select.load(Relaxed),
            0,
            "a linked node's context waits"
        );
        self.select.store(to, Relaxed);
    }

    /// [`try_select`](Self::try_select) with `to` already encoded.
    #[inline]
    fn try_select_word(&self, to: usize) -> bool {
        // Acquire: a claimer sees the owner's writes to its nodes (a send arm's value).
        self.select
            .compare_exchange(0, to, Acquire, Relaxed)
            .is_ok()
    }

    /// Whether someone has claimed it or its owner has given up (racy outside the lock).
    #[inline]
    pub(crate) fn is_taken(&self) -> bool {
        self.select.load(Relaxed) != 0
    }

    /// Who ended the wait.
    pub(crate) fn selected(&self) -> Selected {
        Selected::decode(self.select.load(Acquire))
    }

    /// Blocks until claimed, or until `deadline`. Returns `false` only if the wait was
    /// aborted at the deadline, in which case no claimer will touch the context again once
    /// the owner has unlinked its nodes. If the waiter unwinds, the panic goes on, and the
    /// caller's [`Abandon`] guard makes the frame safe to leave. This is an alt's wait: its
    /// context is claimed by compare-and-swap, so it gives up without a lock (a single
    /// channel's wait gives up under the lock, through [`block_on`](Self::block_on)).
    // Inline: its callers, off the fast path, have saved their registers already, and the
    // wait inside it ends at the first yield more often than not (see `locks::Waiter`'s
    // implementations), so a frame of its own cost more than the wait's own instructions.
    #[inline(always)]
    pub(crate) fn block(&self, deadline: Option<Instant>) -> bool {
        self.block_on(self.waiter(), deadline, |ctx| {
            ctx.abort();
        })
    }

    /// [`block`](Self::block) given the context's [`waiter`](Self::waiter), looked up by a
    /// caller that has just made the context (after the context's nodes are queued, the
    /// compiler can no longer know what kind of party it is, and would test again: two
    /// instructions every blocking operation), and how to give up at the deadline:
    /// `withdraw` aborts the wait, unless a claimer has won it. A context whose node was
    /// bound with [`Node::bind_alone`] must be aborted under the channel's lock, so its
    /// `withdraw` takes the lock, aborts, and unlinks the node.
    #[inline(always)]
    pub(crate) fn block_on(
        &self,
        waiter: &W,
        deadline: Option<Instant>,
        withdraw: impl FnOnce(&Self),
    ) -> bool {
        debug_assert!(std::ptr::eq(waiter, self.waiter()));
        if let Some(d) = deadline {
            if !waiter.wait_until(d) {
                withdraw(self);
                if self.is_aborted() {
                    return false;
                }
            }
            // Signalled, or claimed while we were giving up: the claimer's signal is on its
            // way, and it may still touch the waiter, so the untimed wait below finishes it.
        }
        // The waiter's contract says `is_signalled` is the truth, so a `wait` that returns
        // early by mistake is simply waited again (`wait_checked` is the two together); and
        // that `wait` returns at once if the signal is in, so there is no look before the
        // first.
        while !waiter.wait_checked() {}
        true
    }

    /// Whether the owner gave the wait up. Only the owner aborts, so the owner's own look
    /// needs no lock.
    fn is_aborted(&self) -> bool {
        self.select.load(Relaxed) == Selected::Aborted.encode()
    }

    /// The owner leaves without a normal wake-up (its waiter, or a lock it took to give up,
    /// unwound), and has withdrawn the wait: if a claimer got there first, let it finish
    /// signalling before the frame can go.
    ///
    /// Polls `is_signalled` rather than waiting on the waiter, which has just shown it cannot
    /// be trusted to wait; a claimer signals right after releasing the channel lock, so the
    /// poll is short.
    fn await_claimer(&self) {
        if self.is_aborted() {
            return;
        }
        while !self.waiter().is_signalled() {
            std::thread::yield_now();
        }
    }

    /// What waking the owner of a context just claimed takes: for a task, its waker, moved
    /// out now, under the lock that let us claim (so no re-registration races with it).
    ///
    /// # Safety
    /// The caller must have just claimed `this`, and hold the channel lock it claimed under.
    #[inline]
    unsafe fn claimed(this: *const Self) -> Wake<W> {
        // SAFETY: a claimed context stays alive until signalled.
        match unsafe { &(*this).kind } {
            // The waiter itself, not the context: the wake-up then needs no second look at
            // which kind of party this is.
            PartyKind::Thread(w) => Wake(Signal::Thread(w)),
            // SAFETY: we hold the lock, and won the select word: the waker slot is ours (and
            // taken through the raw pointer, as in `swap_waker`).
            PartyKind::Task(t) => {
                // SAFETY: as above: the slot is ours while we hold the lock we claimed under.
                Wake(Signal::Task(unsafe { replace_raw(t.waker.get(), None) }, t))
            }
        }
    }
}

/// Where an async operation stands: a channel's send or receive future (`chan/future.rs`,
/// and the streams and sinks that reuse one), or an alt's (`alt/future.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Not queued: the next poll tries the operation (a send future's value is in its
    /// `value`).
    Idle,
    /// The wait is set up and its nodes queued: a future's one node on its channel, an alt's
    /// one per arm.
    Queued,
    /// Finished; polling again panics (a stream or sink goes back to `Idle` instead).
    Done,
}

/// Unwinding protection for a blocked owner: while armed, dropping it (because the waiter
/// panicked, or a lock taken to give up the wait did) runs `withdraw`, which aborts the wait
/// unless a claimer has won it and unlinks the owner's nodes, and then waits for the
/// claimer's signal if there was one ([`Party::await_claimer`]). Disarmed once the wait has
/// ended and the nodes are unlinked.
pub(crate) struct Abandon<'c, W: locks::Waiter, F: FnMut(&Party<W>)> {
    ctx: &'c Party<W>,
    withdraw: F,
}

impl<'c, W: locks::Waiter, F: FnMut(&Party<W>)> Abandon<'c, W, F> {
    pub(crate) fn arm(ctx: &'c Party<W>, withdraw: F) -> Self {
        Abandon { ctx, withdraw }
    }

    /// The wait ended normally and the caller's nodes are unlinked.
    pub(crate) fn disarm(self) {
        std::mem::forget(self);
    }

    /// The wait ended normally: runs `withdraw` (whose abort then fails, harmlessly) to
    /// unlink what is still linked, armed all the while, then disarms.
    pub(crate) fn finish(mut self) {
        (self.withdraw)(self.ctx);
        self.disarm();
    }
}

impl<W: locks::Waiter, F: FnMut(&Party<W>)> Drop for Abandon<'_, W, F> {
    fn drop(&mut self) {
        (self.withdraw)(self.ctx);
        self.ctx.await_claimer();
    }
}

/// A claimed waiter, to be signalled once the channel lock is released.
///
/// Signalling under the lock would let the woken thread run straight into the lock we hold;
/// dropping a `Wake` without [`wake`](Self::wake) would leave its owner asleep for ever.
#[must_use = "a claimed waiter sleeps until woken: call `wake` after unlocking"]
pub(crate) struct Wake<W: locks::Waiter>(Signal<W>);

enum Signal<W> {
    /// A thread's waiter, inside its claimed context.
    Thread(*const W),
    /// A task's waker (moved out of its context at the claim) and its context's wait.
    Task(Option<Waker>, *const TaskWait),
}

impl<W: locks::Waiter> Wake<W> {
    /// Signals the claimed owner. A task's waker is user code: if it panics, the panic goes
    /// on from here once the owner is signalled, unless this thread is already unwinding
    /// (see `crate::unwind`).
    ///
    /// Call with no channel lock held.
    #[inline]
    pub(crate) fn wake(self) {
        if let Err(p) = self.signal() {
            unwind::raise(p);
        }
    }

    /// Signals the claimed owner, giving back the panic of a task's waker instead of raising
    /// it: for a caller with more to do first (more parties to wake, values to give back).
    ///
    /// Call with no channel lock held.
    #[inline]
    pub(crate) fn signal(self) -> Result<(), unwind::Payload> {
        match self.0 {
            // SAFETY: `Wake`s are made only by claiming, which keeps the owner waiting (and
            // its context, the waiter in it, alive) until this signal; the caller has
            // released the lock. The waiter's `signal` copes with it vanishing right after.
            Signal::Thread(w) => unsafe { W::signal(w) },
            Signal::Task(waker, tw) => {
                // SAFETY: the task's future neither completes nor goes away before `done`
                // (its drop waits for it), so the flag is live; once it is stored we touch
                // nothing of the context, only the waker we moved out of it.
                unsafe { (*tw).done.store(true, Release) };
                // User code, and no lock held. By value: the waker's reference goes to the
                // wake-up (one reference count operation fewer than waking by reference
                // and dropping it; the task's next wait clones it again).
                if let Some(w) = waker {
                    return unwind::caught(|| w.wake());
                }
            }
        }
        Ok(())
    }
}

impl unwind::Caught {
    /// Signals `w`'s owner, if any, keeping a panic of its waker (see [`Wake::signal`]).
    #[inline]
    pub(crate) fn wake<W: locks::Waiter>(&mut self, w: Option<Wake<W>>) {
        if let Some(Err(p)) = w.map(Wake::signal) {
            self.keep(p);
        }
    }
}

/// One operation of a blocked thread, linked into one channel's queue.
///
/// Every field but `slot`'s contents is touched only under that channel's lock.
pub(crate) struct Node<T, W> {
    prev: Cell<*const Node<T, W>>,
    next: Cell<*const Node<T, W>>,
    linked: Cell<bool>,
    ctx: Cell<*const Party<W>>,
    /// What a claim by an operation stores in the context's `select`: `Selected::Operation`
    /// of the alt arm index, encoded when the node is bound so that a claim only loads it (a
    /// claim by `close` sets its low bit, which makes it `Selected::Closed` of the same arm).
    selects: Cell<usize>,
    /// Whether its context waits on this node alone and gives up only under this channel's
    /// lock (a thread's send or receive, `chan.rs`, and a task's future, `chan/future.rs`), so
    /// that a claim, which holds that lock too, can take the context with a plain store: a
    /// locked instruction fewer inside the lock on every hand-off to a blocked party. An alt's
    /// contexts are claimed through several channels: theirs take the compare-and-swap.
    alone: Cell<bool>,
    /// A sender's value, or where a receiver's value lands.
    slot: UnsafeCell<Option<T>>,
}

impl<T, W> Node<T, W> {
    pub(crate) fn new(slot: Option<T>) -> Self {
        Node {
            prev: Cell::new(ptr::null()),
            next: Cell::new(ptr::null()),
            linked: Cell::new(false),
            ctx: Cell::new(ptr::null()),
            selects: Cell::new(Selected::Operation(0).encode()),
            alone: Cell::new(false),
            slot: UnsafeCell::new(slot),
        }
    }

    /// Points the node at its owner's context, before it is queued.
    pub(crate) fn bind(&self, ctx: &Party<W>, token: usize) {
        self.ctx.set(ctx);
        self.selects.set(Selected::Operation(token).encode());
    }

    /// [`bind`](Self::bind) for a context that waits on this node alone and is aborted only
    /// under the lock of the channel the node is queued on (see `alone`).
    pub(crate) fn bind_alone(&self, ctx: &Party<W>) {
        self.bind(ctx, 0);
        self.alone.set(true);
    }

    /// Takes what the slot holds.
    ///
    /// # Safety
    /// The caller must own the node's slot now: hold the channel lock having claimed the
    /// node, or be the node's owner while it is not linked.
    pub(crate) unsafe fn take(&self) -> Option<T> {
        // SAFETY: exclusive access per the contract above.
        unsafe { replace_raw(self.slot.get(), None) }
    }

    /// Puts a value in an empty slot (same contract as [`take`](Self::take)); never drops
    /// anything, so no user code runs.
    pub(crate) unsafe fn put(&self, v: T) {
        // SAFETY: exclusive access per the contract of `take`.
        let old = unsafe { replace_raw(self.slot.get(), Some(v)) };
        debug_assert!(old.is_none(), "a node's slot is filled once");
        std::mem::forget(old);
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

    #[inline]
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

    /// Unlinks `head`, the first node: [`remove`](Self::remove) for the node a claim takes,
    /// with the tests that a node at the front needs no more.
    #[inline]
    fn pop_front(&mut self, head: &Node<T, W>) {
        debug_assert!(ptr::eq(self.head, head) && head.linked.get());
        head.linked.set(false);
        let next = head.next.get();
        self.head = next;
        match next.is_null() {
            true => self.tail = ptr::null(),
            // SAFETY: linked nodes are alive.
            false => unsafe { (*next).prev.set(ptr::null()) },
        }
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
    /// drops nodes already claimed through another channel or aborted).
    pub(crate) fn has_waiting(&mut self) -> bool {
        // SAFETY: linked nodes and their contexts are alive.
        while let Some(n) = unsafe { self.head.as_ref() } {
            // SAFETY: as above: a linked node's context outlives its link.
            if unsafe { !(*n.ctx.get()).is_taken() } {
                return true;
            }
            self.remove(n);
        }
        false
    }

    /// Claims the first node whose owner still waits, unlinks it and returns it with the
    /// wake-up its owner needs; nodes claimed elsewhere or aborted are dropped on the way.
    /// `closed`: the claim ends the wait by closing the channel, not by an operation.
    ///
    /// The returned node stays alive until the `Wake` is used.
    #[inline]
    pub(crate) fn claim(&mut self, closed: bool) -> Option<(&Node<T, W>, Wake<W>)> {
        // SAFETY: linked nodes and their contexts are alive; once claimed, a node's owner
        // waits for our signal, so the reference outlives the queue link.
        while let Some(n) = unsafe { self.head.as_ref() } {
            self.pop_front(n);
            let to = n.selects.get() | usize::from(closed);
            let ctx = n.ctx.get();
            // SAFETY: as above: a linked node's context outlives its link.
            let won = unsafe {
                match n.alone.get() {
                    true => {
                        (*ctx).claim_alone(to);
                        true
                    }
                    false => (*ctx).try_select_word(to),
                }
            };
            if won {
                // SAFETY: just claimed, under the lock.
                return Some((n, unsafe { Party::claimed(ctx) }));
            }
        }
        None
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Selected;

    #[test]
    fn selected_round_trips() {
        for s in [
            Selected::Waiting,
            Selected::Aborted,
            Selected::Operation(0),
            Selected::Operation(7),
            Selected::Closed(0),
            Selected::Closed(7),
        ] {
            assert_eq!(Selected::decode(s.encode()), s);
        }
        // `WaitQueue::claim` makes a close of an arm by setting the low bit of its operation.
        for t in [0, 7] {
            assert_eq!(
                Selected::Operation(t).encode() | 1,
                Selected::Closed(t).encode()
            );
        }
    }
}
