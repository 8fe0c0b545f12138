//! The channel: a buffer and two queues of blocked parties behind one lock of type `L`.

use crate::error::*;
use crate::ring::Ring;
use crate::sync::{fence, AtomicU64, AtomicUsize, Ordering::*};
use crate::waitq::{Abandon, Context, Node, WaitQueue, Wake};
use locks::{Adaptive, Strategy};
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

// Async send and receive (`send_async`, `recv_async`, the `stream` feature).
mod future;
#[cfg(feature = "stream")]
pub use self::future::RecvStream;
#[cfg(feature = "sink")]
pub use self::future::SendSink;
pub use self::future::{OwnedRecvFuture, OwnedSendFuture, RecvFuture, SendFuture};

/// A Plan 9 channel: a cloneable handle through which any thread may send and receive.
///
/// `Chan::new(0)` is a rendezvous channel (a send completes only when a receiver has taken
/// the value); `Chan::new(n)` buffers up to `n` values. The lock strategy `L` guards the buffer
/// and the queues of blocked senders and receivers, and blocked parties wait with `L`'s
/// [`Waiter`](locks::Waiter), so `L` decides the channel's whole blocking behaviour.
///
/// ```
/// use chan::Chan;
/// let c: Chan<u64> = Chan::new(0);
/// let tx = c.clone();
/// let t = std::thread::spawn(move || tx.send(42).unwrap());
/// assert_eq!(c.recv(), Ok(42));
/// t.join().unwrap();
/// c.close();
/// assert!(c.recv().is_err());
/// ```
pub struct Chan<T, L: Strategy = Adaptive> {
    pub(crate) shared: Arc<Shared<T, L>>,
    /// Which sides this handle keeps alive: both for a `Chan`, one for a
    /// [`Sender`](crate::Sender) or [`Receiver`](crate::Receiver) (which wrap a `Chan`).
    pub(crate) role: Role,
}

/// The sides a handle counts as: a channel closes when the last handle of either side goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    Both,
    Send,
    Recv,
}

impl Role {
    fn sends(self) -> bool {
        self != Role::Recv
    }
    fn receives(self) -> bool {
        self != Role::Send
    }
}

/// What a lock-free reader may know, published at every unlock.
///
/// Readers (`nbsend`/`nbrecv` failing fast, `len`, `is_closed`, `closing`) issue a SeqCst
/// fence before loading it. Without the fence a thread's earlier operation on another channel
/// need not be ordered before the load, and two threads could each miss the other's send
/// (`a.send(1); b.nbrecv()` against `b.send(1); a.nbrecv()`, both `Empty`: store buffering).
/// With a fence before every such load, two fences order the two threads, so one of them sees
/// the other's value (C++20 [atomics.fences]; `tests/miri.rs` checks it natively and under
/// Miri, `tests/loom.rs` exhaustively). The fence costs the readers; the writers keep a plain
/// Release store, on a cache line the lock has just written anyway.
///
/// The flags sit in the top bits, so that no backlog an unbounded channel can hold in memory
/// reaches them: the count needs no clamping on the hot path.
const LEN: u64 = (1 << 61) - 1;
const SENDERS: u64 = 1 << 61;
const RECEIVERS: u64 = 1 << 62;
const CLOSED: u64 = 1 << 63;
/// The largest bounded capacity (the limit `Chan::new` has always had).
const MAX_CAP: usize = u32::MAX as usize;

/// The capacity of an unbounded channel.
const UNBOUNDED: usize = usize::MAX;
/// Buffer slots allocated up front (at most): a bounded channel's sends then rarely allocate
/// under the lock, and an unbounded channel shrinks back to this once drained.
const RESERVE: usize = 1024;

// `repr(C)`: the fields every operation touches come first, in the order it touches them, so
// that the lock word, the summary and the buffer's bookkeeping share the first cache line of
// the allocation instead of adding lines that bounce between a sender's and a receiver's CPU.
#[repr(C)]
pub(crate) struct Shared<T, L: Strategy> {
    lock: LockRef<L>,
    /// `buf.len()` plus the `SENDERS`, `RECEIVERS` and `CLOSED` flags, as of the last unlock:
    /// lets `nbsend`/`nbrecv` fail and `len`/`is_closed` answer without taking the lock.
    summary: AtomicU64,
    cap: usize,
    state: UnsafeCell<State<T, L::Waiter>>,
    /// Live handles that can send (`Chan`s and `Sender`s) and receive (`Chan`s and
    /// `Receiver`s). When either count reaches zero the channel closes.
    senders: AtomicUsize,
    receivers: AtomicUsize,
    /// How many values lent to receive futures have come back out of their nodes (received
    /// by the future, without the lock); with `State::lent` it tells whether a value handed
    /// to a task may still be given back.
    returned: AtomicU64,
    /// This channel's creation number, its place in alt's lock order under loom (see
    /// `Shared::lock_key`).
    #[cfg(loom)]
    seq: usize,
}

// SAFETY: `state` is only touched while holding `lock`; the raw node pointers in it belong to
// blocked threads that keep the nodes alive while they are linked. Values of `T` move between
// threads, hence `T: Send`.
unsafe impl<T: Send, L: Strategy> Send for Shared<T, L> {}
// SAFETY: as above: all shared mutable state sits behind the lock.
unsafe impl<T: Send, L: Strategy> Sync for Shared<T, L> {}

/// A channel's own lock, or one shared by many channels (Plan 9's single `chanlock`).
#[cfg_attr(loom, allow(dead_code))] // loom builds have no global lock
pub(crate) enum LockRef<L: 'static> {
    Own(L),
    Shared(&'static L),
}

impl<L> LockRef<L> {
    #[inline]
    pub(crate) fn get(&self) -> &L {
        match self {
            LockRef::Own(l) => l,
            LockRef::Shared(l) => l,
        }
    }
}

/// The buffer and the queues of blocked parties. The queues are private: every change to them
/// goes through a method here that also brings `flags` up to date.
#[repr(C)] // hot fields first, after `Shared`'s: see there
pub(crate) struct State<T, W> {
    buf: Ring<T>,
    /// The summary's `SENDERS`, `RECEIVERS` and `CLOSED` bits, kept current by every method
    /// that changes the queues or closes, so that publishing is an OR rather than three tests.
    flags: u64,
    recvq: WaitQueue<T, W>,
    sendq: WaitQueue<T, W>,
    cap: usize,
    /// Values handed to waiting receive futures (tasks), counted at the claim and counted
    /// back when one is given back; `Shared::returned` counts those received. A value still
    /// lent is still in the channel: a dropped future gives it back, so until it is received
    /// a closed channel does not read "drained" (see [`Locked::recv_closed`]).
    lent: u64,
}

/// Signals a claimed waiter, if any; call with no channel lock held.
#[inline]
pub(crate) fn wake<W: locks::Waiter>(w: Option<Wake<W>>) {
    if let Some(w) = w {
        w.wake();
    }
}

impl<T, W: locks::Waiter> State<T, W> {
    /// Counts a value just put into a claimed receiver's node, if that receiver is a task
    /// (whose future may yet give it back); a thread always takes what it is handed.
    #[inline]
    pub(crate) fn lend(&mut self, w: &Wake<W>) {
        if w.is_task() {
            self.lent = self.lent.wrapping_add(1);
        }
    }

    /// Recomputes the queue bits of `flags` after a queue changed.
    fn sync_flags(&mut self) {
        let mut f = self.flags & CLOSED;
        if !self.sendq.is_empty() {
            f |= SENDERS;
        }
        if !self.recvq.is_empty() {
            f |= RECEIVERS;
        }
        self.flags = f;
    }

    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.flags & CLOSED != 0
    }

    /// Completes a send now if it can: straight into a waiting receiver, else into the buffer.
    // Always: `send_locked` must keep it inline although the cold `send_after_watching` calls
    // it too (outlined, it cost the blocking path some 20 instructions per message).
    #[inline(always)]
    pub(crate) fn try_send(&mut self, v: T) -> Result<Option<Wake<W>>, T> {
        if self.flags & RECEIVERS != 0 {
            return self.send_to_receiver(v);
        }
        self.buffer(v).map(|()| None)
    }

    /// Appends `v` to the buffer if there is room.
    #[inline]
    fn buffer(&mut self, v: T) -> Result<(), T> {
        if self.buf.len() < self.cap {
            self.buf.push(v);
            return Ok(());
        }
        Err(v)
    }

    /// Hands `v` to the first waiting receiver, or buffers it if every queued one turns out
    /// to have given up. (Inlined: its callers are already off the common path, which
    /// `Chan::send_impl` takes through `buffer_plainly`.)
    #[inline]
    fn send_to_receiver(&mut self, v: T) -> Result<Option<Wake<W>>, T> {
        match self.recvq.claim(false) {
            Some((r, w)) => {
                // SAFETY: we claimed `r` under the lock; its owner waits for our signal.
                unsafe { r.put(v) };
                self.lend(&w);
                self.sync_flags();
                Ok(Some(w))
            }
            None => {
                self.sync_flags();
                self.buffer(v).map(|()| None)
            }
        }
    }

    /// Completes a receive now if it can: from the buffer (refilling it from the first waiting
    /// sender, as Plan 9 does), else straight from a waiting sender.
    #[inline]
    pub(crate) fn try_recv(&mut self) -> Option<(T, Option<Wake<W>>)> {
        if self.flags & SENDERS != 0 {
            return self.recv_with_senders();
        }
        self.take_buffered().map(|v| (v, None))
    }

    /// The common send, which `Chan::send_impl` tries before anything else: open, nobody
    /// waiting (no flags: a queued sender implies a full buffer), room within the capacity
    /// and within the ring's memory. Short enough to compile to a path that keeps to
    /// registers.
    #[inline]
    fn buffer_plainly(&mut self, v: T) -> Result<(), T> {
        if self.flags == 0 && self.buf.len() < self.cap && !self.buf.is_full() {
            self.buf.push(v);
            return Ok(());
        }
        Err(v)
    }

    /// The common receive: a value buffered and no sender queued (which would mean a full
    /// buffer to refill).
    #[inline]
    fn take_buffered(&mut self) -> Option<T> {
        if self.flags & SENDERS != 0 {
            return None;
        }
        let v = self.buf.pop()?;
        if self.buf.is_empty() && self.buf.capacity() > RESERVE {
            // Drained: a backlog's memory goes back.
            self.give_back_memory();
        }
        Some(v)
    }

    /// A receive while senders are queued, which means the buffer is full (or there is
    /// none).
    #[inline]
    fn recv_with_senders(&mut self) -> Option<(T, Option<Wake<W>>)> {
        match self.buf.pop() {
            Some(v) => Some((v, self.refill())),
            None => self.take_from_sender(),
        }
    }

    /// A backlog has drained: give its memory back, keeping [`RESERVE`] slots.
    #[cold]
    #[inline(never)] // keeps the allocator's code out of the receive path
    fn give_back_memory(&mut self) {
        self.buf.shrink_to(RESERVE);
    }

    /// Moves the first waiting sender's value into the slot a receive just freed.
    fn refill(&mut self) -> Option<Wake<W>> {
        if self.buf.len() >= self.cap {
            // Over capacity: a value given back by a dropped receive future (`future.rs`).
            return None;
        }
        let claimed = self.sendq.claim(false).map(|(s, w)| {
            // SAFETY: we claimed `s` under the lock, so its slot is ours.
            if let Some(v) = unsafe { s.take() } {
                self.buf.push(v);
            }
            w
        });
        self.sync_flags();
        claimed
    }

    /// Takes the first waiting sender's value (a rendezvous).
    fn take_from_sender(&mut self) -> Option<(T, Option<Wake<W>>)> {
        // SAFETY: we claim `s` under the lock, so its slot is ours.
        let claimed = self
            .sendq
            .claim(false)
            .map(|(s, w)| (unsafe { s.take() }, w));
        self.sync_flags();
        match claimed? {
            (Some(v), w) => Some((v, Some(w))),
            // A queued sender always holds its value; an empty one would be a bug, answered
            // without a panic.
            (None, w) => {
                w.wake();
                None
            }
        }
    }

    /// Whether a party about to queue (`side`: `SENDERS` or `RECEIVERS`) will be served by
    /// the very next operation of a partner, and should wait as [`Strategy::first_waiter`]
    /// (which may spin). Only on a channel of at most one buffer: with more, a party woken
    /// at once would trade values one at a time with its partner, where a little lateness
    /// lets the buffer fill or drain and the two sides work in batches (two CPUs, O=10 M=1:
    /// 209 ns per message spinning, 97 not).
    ///
    /// [`Strategy::first_waiter`]: locks::Strategy::first_waiter
    fn first_in_line(&self, side: u64) -> bool {
        self.flags & side == 0 && self.cap <= 1
    }

    /// Queues a blocked sender's node.
    ///
    /// # Safety
    /// As for [`WaitQueue::push`].
    pub(crate) unsafe fn queue_sender(&mut self, node: &Node<T, W>) {
        // SAFETY: forwarded.
        unsafe { self.sendq.push(node) };
        self.flags |= SENDERS;
    }

    /// Queues a blocked receiver's node.
    ///
    /// # Safety
    /// As for [`WaitQueue::push`].
    pub(crate) unsafe fn queue_receiver(&mut self, node: &Node<T, W>) {
        // SAFETY: forwarded.
        unsafe { self.recvq.push(node) };
        self.flags |= RECEIVERS;
    }

    /// Unlinks a sender's node if it is still queued.
    pub(crate) fn unqueue_sender(&mut self, node: &Node<T, W>) {
        self.sendq.remove(node);
        self.sync_flags();
    }

    /// Unlinks a receiver's node if it is still queued.
    pub(crate) fn unqueue_receiver(&mut self, node: &Node<T, W>) {
        self.recvq.remove(node);
        self.sync_flags();
    }

    /// Marks the channel closed and claims one blocked party, receivers first, to be woken
    /// with [`Selected::Closed`](crate::waitq::Selected::Closed); `None` once none is left.
    /// Receivers stay queued while `keep_receivers` (a lent value may still come back to
    /// them).
    pub(crate) fn close_one(&mut self, keep_receivers: bool) -> Option<Wake<W>> {
        self.flags |= CLOSED;
        let receiver = match keep_receivers {
            true => None,
            false => self.recvq.claim(true),
        };
        let claimed = match receiver {
            Some((_, w)) => Some(w),
            None => self.sendq.claim(true).map(|(_, w)| w),
        };
        self.sync_flags();
        claimed
    }

    /// Whether a send could complete now (for alt's poll).
    pub(crate) fn can_send(&mut self) -> bool {
        self.buf.len() < self.cap || {
            let waiting = self.recvq.has_waiting();
            self.sync_flags();
            waiting
        }
    }

    /// Whether a receive could complete now (for alt's poll).
    pub(crate) fn can_recv(&mut self) -> bool {
        !self.buf.is_empty() || {
            let waiting = self.sendq.has_waiting();
            self.sync_flags();
            waiting
        }
    }

    #[inline]
    fn summary(&self) -> u64 {
        self.buf.len() as u64 | self.flags
    }
}

impl<T, W> Drop for State<T, W> {
    /// Drops what is still buffered one value at a time, so that a `Drop` that panics does
    /// not abort the process by panicking again inside the buffer's own drop: every value is
    /// dropped once, then the first panic goes on from the drop of the last handle (a later
    /// one is discarded). If the last handle is itself dropped while unwinding, a panicking
    /// value aborts, as any panic during unwinding does.
    fn drop(&mut self) {
        drop_each(std::mem::take(&mut self.buf));
    }
}

/// Drops every value, each on its own, so that one panicking `Drop` neither leaks the rest
/// nor aborts the process by panicking again inside the ring's drop; the first panic then
/// goes on (later ones are discarded).
fn drop_each<T>(mut buf: Ring<T>) {
    if !std::mem::needs_drop::<T>() {
        return;
    }
    let mut first = None;
    while let Some(v) = buf.pop() {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| drop(v))) {
            first.get_or_insert(p);
        }
    }
    if let Some(p) = first {
        resume_unwind(p);
    }
}

/// The channel's state, locked; unlocks (publishing the summary first) when dropped.
pub(crate) struct Locked<'a, T, L: Strategy> {
    shared: &'a Shared<T, L>,
    /// `shared.lock` resolved once (it may be the global lock).
    lock: &'a L,
}

impl<T, L: Strategy> Shared<T, L> {
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, T, L> {
        let lock = self.lock.get();
        lock.lock();
        Locked { shared: self, lock }
    }

    /// Where this channel's lock comes in alt's lock order: its address, so that channels
    /// sharing Plan 9's global lock take it once; under loom the channel's creation number,
    /// the same in every modelled execution (loom has no global lock).
    #[inline]
    pub(crate) fn lock_key(&self) -> usize {
        #[cfg(loom)]
        return self.seq;
        #[cfg(not(loom))]
        return self.lock.get() as *const L as usize;
    }

    /// The lock, for alt to order and take several channels' locks itself.
    pub(crate) fn raw_lock(&self) -> &L {
        self.lock.get()
    }

    /// The state of a channel whose lock the caller already holds (alt).
    ///
    /// # Safety
    /// The caller must hold `raw_lock()` and have no other reference to the state.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn state_locked(&self) -> &mut State<T, L::Waiter> {
        // SAFETY: per the contract, the lock gives exclusive access.
        unsafe { &mut *self.state.get() }
    }

    /// Publishes the summary; call before releasing a lock taken through `raw_lock`.
    #[inline]
    pub(crate) fn publish(&self, st: &State<T, L::Waiter>) {
        self.summary.store(st.summary(), Release);
    }

    /// The summary as of the last unlock, ordered after everything this thread did before
    /// (see [`LEN`] for why the fence).
    #[inline]
    pub(crate) fn summary(&self) -> u64 {
        fence(SeqCst);
        self.summary.load(Acquire)
    }

    /// Hands a received value `v` to its receiver after waking `w`, the sender the receive
    /// claimed (whose value it took, or who refilled the slot it freed). The wake-up is user
    /// code: if it panics, `v` goes back to the channel (to a waiting receiver, else to the
    /// front of the buffer) before the panic goes on, so a value whose send returned `Ok` is
    /// not lost with the unwinding receive.
    #[inline]
    pub(crate) fn deliver(&self, v: T, w: Option<Wake<L::Waiter>>) -> T {
        match w {
            None => v,
            Some(w) => self.deliver_after_wake(v, w),
        }
    }

    #[inline(never)]
    fn deliver_after_wake(&self, v: T, w: Wake<L::Waiter>) -> T {
        match catch_unwind(AssertUnwindSafe(|| w.wake())) {
            Ok(()) => v,
            Err(p) => {
                self.put_back(v, false);
                resume_unwind(p)
            }
        }
    }

    /// Puts a value that a receive had taken back into the channel, for a receive unwinding
    /// from user code: `lent` if it had been lent to a receive future and not yet counted
    /// received. Wakes a receiver it goes to (a second panic there would abort: the first
    /// goes on either way).
    #[cold]
    pub(crate) fn put_back(&self, v: T, lent: bool) {
        let mut st = self.lock();
        let w = match lent {
            true => st.give_back(v),
            false => st.return_value(v),
        };
        drop(st);
        wake(w);
    }

    /// Marks the channel closed (if it was not) and wakes every blocked party that the close
    /// ends: senders, and receivers unless a lent value may still come back to them. One
    /// claim per lock hold, woken outside it: nobody new can queue once the channel is
    /// marked closed. Wakers are user code: one that panics does not stop the rest, and the
    /// first panic goes on once all are woken.
    pub(crate) fn release_closed<'a>(&'a self, mut st: Locked<'a, T, L>) {
        let mut panic = None;
        let kept = loop {
            let keep_receivers = st.lent_out();
            let Some(claimed) = st.close_one(keep_receivers) else {
                break keep_receivers && !st.recvq.is_empty();
            };
            drop(st);
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| claimed.wake())) {
                panic.get_or_insert(p);
            }
            st = self.lock();
        };
        // Publishes the close.
        drop(st);
        if kept {
            // Receivers stay queued for a lent value. Its future may have been counted back
            // (`lent_received`) after we looked and before the close was published, and then
            // not have seen the close: look again now that it is (the fence in `lent_out`
            // pairs with the one in `lent_received`, so one of the two sees the other).
            self.settle_closed();
        }
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// A receive future took the value lent to it out of its node. If the channel is closed
    /// and that was the last value lent, receivers kept waiting for it now see the close.
    #[inline]
    pub(crate) fn lent_received(&self) {
        // SeqCst, and the fence in `summary`, pair with the fence in `Locked::lent_out`:
        // either a receiver deciding whether to wait sees this return, or we see the close
        // it saw and settle the waiters ourselves.
        self.returned.fetch_add(1, SeqCst);
        self.settle_if_closed();
    }

    /// [`settle_closed`](Self::settle_closed) if the channel is closed (a hint without the
    /// lock; a close after it sees the lent count itself).
    #[inline]
    pub(crate) fn settle_if_closed(&self) {
        if self.summary() & CLOSED != 0 {
            self.settle_closed();
        }
    }

    /// After a lent value came back (received, or given back): if the channel is closed and
    /// nothing is lent any more, wake the receivers that waited on it.
    #[cold]
    #[inline(never)]
    pub(crate) fn settle_closed(&self) {
        let st = self.lock();
        if st.is_closed() && !st.lent_out() {
            self.release_closed(st);
        }
    }
}

impl<T, L: Strategy> Locked<'_, T, L> {
    /// Whether a value handed to a receive future may still come back (see `State::lent`).
    #[inline]
    pub(crate) fn lent_out(&self) -> bool {
        self.shared.lent_out(self)
    }

    /// Whether a receive should report "closed and drained": closed, and no lent value can
    /// come back. (The caller has found nothing to receive.)
    #[inline]
    pub(crate) fn recv_closed(&self) -> bool {
        self.is_closed() && !self.lent_out()
    }
}

impl<T, L: Strategy> Shared<T, L> {
    /// [`Locked::lent_out`] for a state locked through `raw_lock` (alt).
    #[inline]
    pub(crate) fn lent_out(&self, st: &State<T, L::Waiter>) -> bool {
        if st.lent == 0 {
            // Nothing lent and not given back (`returned` never passes `lent`): the common
            // case, a channel no task waited on, pays no fence.
            return false;
        }
        // See `lent_received`.
        fence(SeqCst);
        st.lent != self.returned.load(Relaxed)
    }
}

impl<T, L: Strategy> Deref for Locked<'_, T, L> {
    type Target = State<T, L::Waiter>;
    fn deref(&self) -> &Self::Target {
        // SAFETY: we hold the lock.
        unsafe { &*self.shared.state.get() }
    }
}

impl<T, L: Strategy> DerefMut for Locked<'_, T, L> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: we hold the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.shared.state.get() }
    }
}

impl<T, L: Strategy> Drop for Locked<'_, T, L> {
    #[inline]
    fn drop(&mut self) {
        self.shared.publish(self);
        // SAFETY: a `Locked` exists only while its thread holds the lock.
        unsafe { self.lock.unlock() }
    }
}

/// Whether a blocked operation should watch before queueing: on a buffered channel (a
/// rendezvous has no slot to watch for; its first waiter spins once queued instead), with a
/// lock that watches.
#[inline]
fn sh_watches<T, L: Strategy>(st: &Locked<'_, T, L>) -> bool {
    st.cap > 0 && st.lock.watches()
}

/// How long an operation may wait.
#[derive(Clone, Copy, PartialEq)]
enum Wait {
    Never,
    Until(Option<Instant>),
}

enum Fail<T> {
    Full(T),
    Closed(T),
    Timeout(T),
}

impl<T, L: Strategy> Chan<T, L> {
    /// A channel buffering `nbuf` values (0: rendezvous), with a lock of its own made with
    /// default parameters; Plan 9's `chancreate`.
    ///
    /// # Panics
    /// If `nbuf` exceeds `u32::MAX`.
    pub fn new(nbuf: usize) -> Self {
        Self::with_params(nbuf, Default::default())
    }

    /// A channel whose own lock is made with `params`.
    pub fn with_params(nbuf: usize, params: L::Params) -> Self {
        Self::with_lock(nbuf, LockRef::Own(L::with_params(params)))
    }

    /// A channel guarded by the process-wide lock of strategy `L` with `params`, shared with
    /// every other channel made this way: Plan 9's arrangement, one `chanlock` for all.
    ///
    /// ```
    /// let a = chan::Chan::<u8, locks::SemLock>::with_global_lock(1, locks::NoParams);
    /// let b = chan::Chan::<u8, locks::SemLock>::with_global_lock(1, locks::NoParams);
    /// a.send(1).unwrap();
    /// b.send(2).unwrap();
    /// assert_eq!((a.recv(), b.recv()), (Ok(1), Ok(2)));
    /// ```
    #[cfg(not(loom))]
    pub fn with_global_lock(nbuf: usize, params: L::Params) -> Self {
        Self::with_lock(nbuf, LockRef::Shared(crate::global::lock::<L>(params)))
    }

    /// An unbounded channel: `send` never waits (memory grows with the backlog, and is given
    /// back once it drains), and [`capacity`](Self::capacity) is `usize::MAX`.
    ///
    /// ```
    /// let c: chan::Chan<u32> = chan::Chan::unbounded();
    /// (0..10_000).for_each(|i| c.send(i).unwrap());
    /// assert_eq!((c.len(), c.capacity()), (10_000, usize::MAX));
    /// assert_eq!(c.try_iter().sum::<u32>(), (0..10_000).sum());
    /// ```
    pub fn unbounded() -> Self {
        Self::unbounded_with_params(Default::default())
    }

    /// [`unbounded`](Self::unbounded), its lock made with `params`.
    pub fn unbounded_with_params(params: L::Params) -> Self {
        Self::build(UNBOUNDED, LockRef::Own(L::with_params(params)))
    }

    fn with_lock(nbuf: usize, lock: LockRef<L>) -> Self {
        // A capacity this large is a mistake (`usize::MAX` included: `unbounded` says it).
        assert!(nbuf <= MAX_CAP, "channel capacity {nbuf} exceeds u32::MAX");
        Self::build(nbuf, lock)
    }

    fn build(nbuf: usize, lock: LockRef<L>) -> Self {
        Chan {
            shared: Arc::new(Shared {
                lock,
                state: UnsafeCell::new(State {
                    // Reserve up front (bounded, so that a huge capacity costs nothing until
                    // used): a send should not allocate while holding the lock.
                    buf: Ring::with_capacity(nbuf.min(RESERVE)),
                    cap: nbuf,
                    flags: 0,
                    sendq: WaitQueue::new(),
                    recvq: WaitQueue::new(),
                    lent: 0,
                }),
                summary: AtomicU64::new(0),
                cap: nbuf,
                senders: AtomicUsize::new(1),
                receivers: AtomicUsize::new(1),
                returned: AtomicU64::new(0),
                #[cfg(loom)]
                seq: {
                    static NEXT: std::sync::atomic::AtomicUsize =
                        std::sync::atomic::AtomicUsize::new(0);
                    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                },
            }),
            role: Role::Both,
        }
    }

    /// Splits the channel into its two ends, each cloneable. When the last [`Sender`] is
    /// dropped the channel closes (receivers drain what is buffered, then see the end); when
    /// the last [`Receiver`] is dropped it closes too (later sends fail, giving their value
    /// back, and buffered values are dropped). A `Chan` handle kept alongside counts as both
    /// ends; plain `Chan`s keep Plan 9's explicit [`close`](Self::close).
    ///
    /// ```
    /// let (tx, rx) = chan::Chan::<u32>::new(4).split();
    /// let producer = std::thread::spawn(move || {
    ///     for i in 0..10 {
    ///         tx.send(i).unwrap();
    ///     }
    ///     // `tx` dropped here: the receiver's loop ends once it has drained the buffer.
    /// });
    /// assert_eq!(rx.iter().count(), 10);
    /// producer.join().unwrap();
    /// ```
    ///
    /// [`Sender`]: crate::Sender
    /// [`Receiver`]: crate::Receiver
    pub fn split(self) -> (crate::Sender<T, L>, crate::Receiver<T, L>) {
        let tx = self.with_role(Role::Send);
        let rx = self.with_role(Role::Recv);
        (crate::Sender(tx), crate::Receiver(rx))
    }

    /// Another handle to this channel, counting as `role`.
    pub(crate) fn with_role(&self, role: Role) -> Self {
        if role.sends() {
            self.shared.senders.fetch_add(1, Relaxed);
        }
        if role.receives() {
            self.shared.receivers.fetch_add(1, Relaxed);
        }
        Chan {
            shared: self.shared.clone(),
            role,
        }
    }

    /// Sends `v`, waiting while the channel is full (rendezvous: until a receiver takes it).
    /// Gives `v` back if the channel is or becomes closed.
    #[inline]
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        self.send_impl(v, Wait::Until(None)).map_err(|f| match f {
            Fail::Closed(v) | Fail::Full(v) | Fail::Timeout(v) => SendError(v),
        })
    }

    /// Sends `v` only if that can be done without waiting. On a rendezvous channel that means
    /// a receiver is already waiting. [`try_send`](Self::try_send) is the same.
    #[doc(alias = "try_send")]
    #[inline]
    pub fn nbsend(&self, v: T) -> Result<(), TrySendError<T>> {
        self.send_impl(v, Wait::Never).map_err(|f| match f {
            Fail::Full(v) | Fail::Timeout(v) => TrySendError::Full(v),
            Fail::Closed(v) => TrySendError::Closed(v),
        })
    }

    /// [`nbsend`](Self::nbsend) under the name crossbeam, flume and std use.
    ///
    /// ```
    /// let c = chan::Chan::<u8>::new(1);
    /// assert_eq!(c.try_send(1), Ok(()));
    /// assert!(c.try_send(2).unwrap_err().is_full());
    /// ```
    #[doc(alias = "nbsend")]
    #[inline]
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.nbsend(v)
    }

    /// [`send`](Self::send), giving up after `timeout`; a timeout too large for an `Instant`
    /// (`Duration::MAX`) waits for ever.
    pub fn send_timeout(&self, v: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.send_until(v, deadline_after(timeout))
    }

    /// [`send`](Self::send), giving up at `deadline`.
    pub fn send_deadline(&self, v: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.send_until(v, Some(deadline))
    }

    fn send_until(&self, v: T, deadline: Option<Instant>) -> Result<(), SendTimeoutError<T>> {
        self.send_impl(v, Wait::Until(deadline))
            .map_err(|f| match f {
                Fail::Full(v) | Fail::Timeout(v) => SendTimeoutError::Timeout(v),
                Fail::Closed(v) => SendTimeoutError::Closed(v),
            })
    }

    /// Receives a value, waiting while the channel is empty; fails once it is closed and
    /// drained.
    #[inline]
    pub fn recv(&self) -> Result<T, RecvError> {
        self.recv_impl(Wait::Until(None)).map_err(|_| RecvError)
    }

    /// Receives a value only if one is there without waiting. On a rendezvous channel that
    /// means a sender is already waiting. [`try_recv`](Self::try_recv) is the same.
    #[doc(alias = "try_recv")]
    #[inline]
    pub fn nbrecv(&self) -> Result<T, TryRecvError> {
        self.recv_impl(Wait::Never).map_err(|f| match f {
            RecvFail::Empty => TryRecvError::Empty,
            RecvFail::Closed => TryRecvError::Closed,
        })
    }

    /// [`nbrecv`](Self::nbrecv) under the name crossbeam, flume and std use.
    ///
    /// ```
    /// let c = chan::Chan::<u8>::new(1);
    /// assert!(c.try_recv().unwrap_err().is_empty());
    /// c.send(1).unwrap();
    /// c.close();
    /// assert_eq!(c.try_recv(), Ok(1));
    /// assert!(c.try_recv().unwrap_err().is_closed());
    /// ```
    #[doc(alias = "nbrecv")]
    #[inline]
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.nbrecv()
    }

    /// [`recv`](Self::recv), giving up after `timeout`; a timeout too large for an `Instant`
    /// (`Duration::MAX`) waits for ever.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.recv_until(deadline_after(timeout))
    }

    /// [`recv`](Self::recv), giving up at `deadline`.
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_until(Some(deadline))
    }

    fn recv_until(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        self.recv_impl(Wait::Until(deadline)).map_err(|f| match f {
            RecvFail::Empty => RecvTimeoutError::Timeout,
            RecvFail::Closed => RecvTimeoutError::Closed,
        })
    }

    #[inline]
    fn send_impl(&self, v: T, wait: Wait) -> Result<(), Fail<T>> {
        let sh = &*self.shared;
        if wait == Wait::Never {
            let s = sh.summary();
            if s & (CLOSED | RECEIVERS) == 0 && (s & LEN) as usize >= sh.cap {
                return Err(Fail::Full(v));
            }
        }
        let mut st = sh.lock();
        match st.buffer_plainly(v) {
            Ok(()) => Ok(()),
            Err(v) => self.send_locked(st, v, wait),
        }
    }

    /// A send that found the lock's state other than the common case: closed, a receiver
    /// waiting, or no room.
    #[inline(never)]
    fn send_locked(&self, mut st: Locked<'_, T, L>, v: T, wait: Wait) -> Result<(), Fail<T>> {
        if st.is_closed() {
            drop(st);
            return Err(Fail::Closed(v));
        }
        match st.try_send(v) {
            Ok(w) => {
                drop(st);
                wake(w);
                Ok(())
            }
            Err(v) => match wait {
                Wait::Never => {
                    drop(st);
                    Err(Fail::Full(v))
                }
                Wait::Until(deadline) => {
                    let (st, v) = match sh_watches(&st) {
                        false => (st, v),
                        true => match self.send_after_watching(st, v) {
                            Ok(sent) => return sent,
                            Err(again) => again,
                        },
                    };
                    self.send_blocking(st, v, deadline)
                }
            },
        }
    }

    /// A send that found a buffered channel full, on a lock that watches
    /// ([`Strategy::watches`]): watch without the lock for the receiver to free a slot, then
    /// try once more; `Err` hands back the lock, held, and the value, to queue. The receiver,
    /// running on another CPU, frees a slot within a few hundred nanoseconds; a sender that
    /// queued would have to be handed the slot and then scheduled to go on.
    #[cold]
    #[inline(never)]
    #[allow(clippy::type_complexity)]
    fn send_after_watching<'a>(
        &'a self,
        st: Locked<'a, T, L>,
        v: T,
    ) -> Result<Result<(), Fail<T>>, (Locked<'a, T, L>, T)> {
        let sh = &*self.shared;
        let lock = st.lock;
        drop(st);
        lock.watch(|| {
            let s = sh.summary.load(Relaxed);
            s & (CLOSED | RECEIVERS) != 0 || ((s & LEN) as usize) < sh.cap
        });
        let mut st = sh.lock();
        if st.is_closed() {
            drop(st);
            return Ok(Err(Fail::Closed(v)));
        }
        match st.try_send(v) {
            Ok(w) => {
                drop(st);
                wake(w);
                Ok(Ok(()))
            }
            Err(v) => Err((st, v)),
        }
    }

    /// Queues a node holding `v` on the senders' queue and sleeps until a receiver takes the
    /// value, the channel closes, or `deadline` passes.
    // Inlined into `send_locked`, itself out of the fast path: one call frame less for
    // every operation that blocks.
    #[inline]
    fn send_blocking(
        &self,
        mut st: Locked<'_, T, L>,
        v: T,
        deadline: Option<Instant>,
    ) -> Result<(), Fail<T>> {
        let sh = &*self.shared;
        let ctx = Context::new(match st.first_in_line(SENDERS) {
            true => st.lock.first_waiter(),
            false => st.lock.waiter(),
        });
        let node = Node::new(Some(v));
        node.bind(&ctx, 0);
        // SAFETY: `node` stays on this frame until unlinked: by a claimer, or below (also if
        // the waiter unwinds, by the guard).
        unsafe { st.queue_sender(&node) };
        drop(st);
        let guard = Abandon::arm(&ctx, || sh.lock().unqueue_sender(&node));
        let signalled = ctx.block(deadline);
        guard.disarm();
        if !signalled {
            sh.lock().unqueue_sender(&node);
            // SAFETY: unlinked and aborted: the node is ours alone again.
            let v = unsafe { node.take() };
            return Err(Fail::Timeout(
                v.expect("an unsent value is still in its node"),
            ));
        }
        // SAFETY: claimed and signalled, so unlinked and ours again. A receiver empties the
        // slot; `close` leaves the value in it.
        match unsafe { node.take() } {
            None => Ok(()),
            Some(v) => Err(Fail::Closed(v)),
        }
    }

    #[inline]
    fn recv_impl(&self, wait: Wait) -> Result<T, RecvFail> {
        let sh = &*self.shared;
        if wait == Wait::Never {
            let s = sh.summary();
            if s & (LEN | SENDERS | CLOSED) == 0 {
                return Err(RecvFail::Empty);
            }
        }
        let mut st = sh.lock();
        match st.take_buffered() {
            Some(v) => Ok(v),
            None => self.recv_locked(st, wait),
        }
    }

    /// A receive that found the lock's state other than the common case: nothing buffered,
    /// or a sender waiting.
    #[inline(never)]
    fn recv_locked(&self, mut st: Locked<'_, T, L>, wait: Wait) -> Result<T, RecvFail> {
        if let Some((v, w)) = st.try_recv() {
            drop(st);
            return Ok(self.shared.deliver(v, w));
        }
        if st.recv_closed() {
            return Err(RecvFail::Closed);
        }
        match wait {
            Wait::Never => Err(RecvFail::Empty),
            Wait::Until(deadline) => {
                let st = match sh_watches(&st) {
                    false => st,
                    true => match self.recv_after_watching(st) {
                        Ok(received) => return received,
                        Err(st) => st,
                    },
                };
                self.recv_blocking(st, deadline)
            }
        }
    }

    /// A receive that found a buffered channel empty, on a lock that watches: as
    /// [`send_after_watching`](Self::send_after_watching), for a sender to fill a slot.
    #[cold]
    #[inline(never)]
    #[allow(clippy::type_complexity)]
    fn recv_after_watching<'a>(
        &'a self,
        st: Locked<'a, T, L>,
    ) -> Result<Result<T, RecvFail>, Locked<'a, T, L>> {
        let sh = &*self.shared;
        let lock = st.lock;
        drop(st);
        lock.watch(|| sh.summary.load(Relaxed) & (LEN | SENDERS | CLOSED) != 0);
        let mut st = sh.lock();
        if let Some((v, w)) = st.try_recv() {
            drop(st);
            return Ok(Ok(sh.deliver(v, w)));
        }
        if st.recv_closed() {
            return Ok(Err(RecvFail::Closed));
        }
        Err(st)
    }

    /// Queues an empty node on the receivers' queue and sleeps until a sender fills it, the
    /// channel closes, or `deadline` passes.
    // Inlined into `recv_locked`, itself out of the fast path: one call frame less for
    // every operation that blocks.
    #[inline]
    fn recv_blocking(
        &self,
        mut st: Locked<'_, T, L>,
        deadline: Option<Instant>,
    ) -> Result<T, RecvFail> {
        let sh = &*self.shared;
        let ctx = Context::new(match st.first_in_line(RECEIVERS) {
            true => st.lock.first_waiter(),
            false => st.lock.waiter(),
        });
        let node = Node::new(None);
        node.bind(&ctx, 0);
        // SAFETY: `node` stays on this frame until unlinked: by a claimer, or below (also if
        // the waiter unwinds, by the guard).
        unsafe { st.queue_receiver(&node) };
        drop(st);
        let guard = Abandon::arm(&ctx, || sh.lock().unqueue_receiver(&node));
        let signalled = ctx.block(deadline);
        guard.disarm();
        if !signalled {
            sh.lock().unqueue_receiver(&node);
            return Err(RecvFail::Empty);
        }
        // SAFETY: claimed and signalled, so unlinked and ours again. A sender fills the
        // slot; `close` leaves it empty.
        unsafe { node.take() }.ok_or(RecvFail::Closed)
    }

    /// Closes the channel: later sends fail, receives drain what is buffered and then fail,
    /// and every blocked sender, receiver and alt is woken. False if it was already closed.
    ///
    /// A waker that panics does not stop the others: every blocked party is woken, then the
    /// first panic goes on from here (the channel is closed either way).
    pub fn close(&self) -> bool {
        let st = self.shared.lock();
        if st.is_closed() {
            return false;
        }
        self.shared.release_closed(st);
        true
    }

    /// `None` while open; once closed, how many values are still buffered (9front's
    /// `chanclosing`).
    pub fn closing(&self) -> Option<usize> {
        let s = self.shared.summary();
        (s & CLOSED != 0).then_some((s & LEN) as usize)
    }

    /// Whether [`close`](Self::close) has been called (or every handle of one side dropped).
    pub fn is_closed(&self) -> bool {
        self.shared.summary() & CLOSED != 0
    }

    /// How many values are buffered.
    pub fn len(&self) -> usize {
        (self.shared.summary() & LEN) as usize
    }

    /// Drops what is buffered, outside the lock (the last receiver has gone, so nothing can
    /// receive it); a panicking `Drop` is handled as in the channel's own drop.
    fn discard_buffered(&self) {
        let buf = std::mem::take(&mut self.shared.lock().buf);
        drop_each(buf);
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer is full (always true for a rendezvous channel).
    pub fn is_full(&self) -> bool {
        self.len() >= self.shared.cap
    }

    /// How many values the channel buffers; `usize::MAX` for an unbounded channel.
    pub fn capacity(&self) -> usize {
        self.shared.cap
    }

    /// How many live handles can send: [`Sender`](crate::Sender)s and `Chan`s (a `Chan`
    /// counts as both ends). The channel closes when this reaches zero. Other threads may
    /// change it at any time, so it is a snapshot.
    ///
    /// ```
    /// let (tx, rx) = chan::bounded::<u8>(1);
    /// let tx2 = tx.clone();
    /// assert_eq!((tx.sender_count(), rx.receiver_count()), (2, 1));
    /// drop((tx, tx2));
    /// assert_eq!(rx.sender_count(), 0);
    /// assert!(rx.is_closed());
    /// ```
    pub fn sender_count(&self) -> usize {
        self.shared.senders.load(Relaxed)
    }

    /// How many live handles can receive: [`Receiver`](crate::Receiver)s and `Chan`s. The
    /// channel closes when this reaches zero. A snapshot, as
    /// [`sender_count`](Self::sender_count).
    pub fn receiver_count(&self) -> usize {
        self.shared.receivers.load(Relaxed)
    }

    /// The parameters of the channel's lock (its own, or the global one it shares). For a
    /// `Chan<T, DynLock>` they are the [`Backend`](locks::Backend) it was made with, which
    /// [`backend`](Chan::backend) also gives.
    pub fn lock_params(&self) -> L::Params {
        self.shared.lock.get().params()
    }

    /// Whether two handles refer to the same channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// A blocking iterator over received values, ending when the channel is closed and
    /// drained.
    pub fn iter(&self) -> crate::Iter<'_, T, L> {
        crate::Iter { chan: self }
    }

    /// An iterator over the values that can be received without waiting.
    pub fn try_iter(&self) -> crate::TryIter<'_, T, L> {
        crate::TryIter { chan: self }
    }
}

#[cfg(not(loom))]
impl<T> Chan<T, locks::DynLock> {
    /// The backend this channel's lock was chosen as (name and parameters), which its
    /// `Debug` shows too.
    ///
    /// ```
    /// use locks::{Backend, DynLock};
    /// let backend: Backend = "spin:yields=10".parse().unwrap();
    /// let c = chan::Chan::<u8, DynLock>::with_params(1, backend);
    /// assert_eq!(c.backend(), backend);
    /// assert_eq!(c.backend().to_string(), "spin:yields=10");
    /// assert!(format!("{c:?}").contains("lock: dyn(spin:yields=10)"));
    /// // `new` makes the default backend, the adaptive lock.
    /// assert_eq!(chan::Chan::<u8, DynLock>::new(1).backend(), Backend::DEFAULT);
    /// ```
    pub fn backend(&self) -> locks::Backend {
        self.lock_params()
    }
}

impl<T, L: Strategy> Shared<T, L> {
    /// Counts one more sending handle, unless none is left (then the channel has closed for
    /// good, since only a sending handle makes another): `WeakSender::upgrade`.
    pub(crate) fn add_sender_if_any(&self) -> bool {
        let mut n = self.senders.load(Relaxed);
        while n != 0 {
            // Once zero, the count stays zero: every increment but this one clones a live
            // sending handle. So a CAS from a non-zero count never revives a closed channel.
            match self
                .senders
                .compare_exchange_weak(n, n + 1, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }
}

enum RecvFail {
    Empty,
    Closed,
}

/// The deadline `timeout` from now; `None`, meaning "never", when it lies beyond what an
/// `Instant` can hold (`Duration::MAX`). One rule for channels and alts alike.
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

impl<T, L: Strategy> Clone for Chan<T, L> {
    fn clone(&self) -> Self {
        self.with_role(self.role)
    }
}

impl<T, L: Strategy> Drop for Chan<T, L> {
    fn drop(&mut self) {
        // AcqRel: the last handle of a side closes after every other handle of that side
        // has finished with the channel.
        if self.role.sends() && self.shared.senders.fetch_sub(1, AcqRel) == 1 {
            self.close();
        }
        if self.role.receives() && self.shared.receivers.fetch_sub(1, AcqRel) == 1 {
            self.close();
            self.discard_buffered();
        }
    }
}

impl<T, L: Strategy> fmt::Debug for Chan<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chan")
            .field("lock", &LockName(self.shared.lock.get()))
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Debug of a channel's lock: its name and parameters (see [`Strategy::fmt_name`]).
struct LockName<'a, L>(&'a L);

impl<L: Strategy> fmt::Debug for LockName<'_, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_name(f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_unbounded_channel_gives_memory_back_as_it_drains() {
        let c = Chan::<u64>::unbounded();
        (0..1 << 16).for_each(|i| c.send(i).unwrap());
        let grown = c.shared.lock().buf.capacity();
        assert!(grown >= 1 << 16);
        while c.nbrecv().is_ok() {}
        let drained = c.shared.lock().buf.capacity();
        assert!(
            drained <= 4 * RESERVE,
            "{grown} slots, still {drained} after draining"
        );
    }
}
