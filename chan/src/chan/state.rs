//! The channel's state behind its lock: the buffer and the queues of blocked parties
//! ([`State`]), the lock that guards them ([`Locked`], [`LockRef`]), and what lock-free readers
//! may know of them ([`Summary`]). [`Chan`](super::Chan) is the handle over it.

use crate::ring::Ring;
use crate::sync::{fence, AtomicU64, AtomicUsize, Ordering::*};
use crate::unwind::{self, Caught, Payload};
use crate::waitq::{Node, WaitQueue, Wake};
use locks::Strategy;
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

/// What a lock-free reader may know, published at every unlock: how many values are
/// buffered, whether senders or receivers are queued, whether the channel is closed.
///
/// Readers (`nbsend`/`nbrecv` failing fast, `len`, `is_closed`, `closing`) issue a SeqCst
/// fence before loading it ([`Shared::summary`]). Without the fence a thread's earlier
/// operation on another channel need not be ordered before the load, and two threads could
/// each miss the other's send (`a.send(1); b.nbrecv()` against `b.send(1); a.nbrecv()`, both
/// `Empty`: store buffering). With a fence before every such load, two fences order the two
/// threads, so one of them sees the other's value (C++20 [atomics.fences]; `tests/litmus.rs`
/// checks it natively and under Miri, `tests/loom.rs` exhaustively). The fence costs the
/// readers; the writers keep a plain Release store, on a cache line the lock has just written
/// anyway.
///
/// The word is `buf.len()` with the flags [`SENDERS`], [`RECEIVERS`] and [`CLOSED`] in the
/// top bits, so that no backlog an unbounded channel can hold in memory reaches them: the
/// count needs no clamping on the hot path.
#[derive(Clone, Copy)]
pub(crate) struct Summary(u64);

/// The summary's count of buffered values.
const LEN: u64 = (1 << 61) - 1;
/// Senders are queued (and so the buffer is full).
const SENDERS: u64 = 1 << 61;
/// Receivers are queued (and so the buffer is empty).
const RECEIVERS: u64 = 1 << 62;
/// The channel is closed.
const CLOSED: u64 = 1 << 63;

impl Summary {
    /// How many values are buffered.
    #[inline]
    pub(crate) fn len(self) -> usize {
        (self.0 & LEN) as usize
    }

    /// Whether the channel is closed.
    #[inline]
    pub(crate) fn closed(self) -> bool {
        self.0 & CLOSED != 0
    }

    /// Whether a send on a channel of capacity `cap` would have to wait: open, no receiver
    /// queued, and the buffer full. `nbsend` then fails at once, without the lock.
    ///
    /// `cap` by reference (`&shared.cap`): it is read only once the flags have passed, as
    /// where this test was written out by hand, which keeps the async send's fast path laid
    /// out as it was (read first, the load moved a block and made the path take a jump).
    #[inline]
    pub(crate) fn send_would_wait(self, cap: &usize) -> bool {
        self.0 & (CLOSED | RECEIVERS) == 0 && (self.0 & LEN) as usize >= *cap
    }

    /// Whether a receive would have to wait: nothing buffered, no sender queued, and open.
    /// `nbrecv` then fails at once, without the lock.
    #[inline]
    pub(crate) fn recv_would_wait(self) -> bool {
        self.0 & (LEN | SENDERS | CLOSED) == 0
    }
}

/// Whether a channel of capacity `cap` works by hand-offs: at most one buffer, so that each
/// operation meets its partner or a single slot, and a party that has to wait is served by the
/// partner's very next operation. Such a channel's first waiter and contended lockers may
/// spin (`State::first_in_line`, `Shared::lock_contended`); on a larger buffer the two sides
/// work in batches, which spinning would break (`docs/tuning.md`).
#[inline]
fn hands_off(cap: usize) -> bool {
    cap <= 1
}

/// Buffer slots allocated up front (at most): a bounded channel's sends then rarely allocate
/// under the lock, and an unbounded channel shrinks back to this once drained.
const RESERVE: usize = 1024;

// `repr(C)`, in two groups: first what every operation reads and hardly anything writes (the
// lock's address, the capacity, the handle counts), then the lock and what every operation
// writes (the summary, the state). For `Adaptive`, whose hot words come last, the lock word,
// the summary, the ring's bookkeeping and the flags then share one 64-byte line, and the
// first line stays shared between the CPUs instead of bouncing with them (a test below holds
// this). Aligned to 128 bytes, two lines, as crossbeam's `CachePadded` is on x86-64, so that
// every channel has this layout. Unaligned, a channel lay where the allocator put it, and
// that followed from the length of the program's path, which a process copies to the heap
// first: at 0 or 64 bytes past a 128-byte boundary a rendezvous ran 10-14 % slower than at 32
// or 96, and `chantest --against` judged two copies of one binary apart by their paths
// (`docs/tuning.md`).
#[repr(C, align(128))]
pub(crate) struct Shared<T, L: Strategy> {
    /// The lock every operation takes: `owned`'s, or the process-wide one. Resolved once,
    /// when the channel is made ([`Shared::new`]), so that taking it is a load rather than a
    /// test of which `LockRef` it is (three instructions fewer a lock, by callgrind, and
    /// registers the inlined operations need).
    lock: NonNull<L>,
    pub(super) cap: usize,
    /// Live handles that can send (`Chan`s and `Sender`s) and receive (`Chan`s and
    /// `Receiver`s). When either count reaches zero the channel closes.
    pub(super) senders: AtomicUsize,
    pub(super) receivers: AtomicUsize,
    /// This channel's creation number, its place in alt's lock order under loom (see
    /// `Shared::lock_key`).
    #[cfg(loom)]
    seq: usize,
    /// Where the lock lives; `lock` points into it.
    owned: LockRef<L>,
    /// The [`Summary`] as of the last unlock: lets `nbsend`/`nbrecv` fail and
    /// `len`/`is_closed` answer without taking the lock.
    summary: AtomicU64,
    state: UnsafeCell<State<T, L::Waiter>>,
}

// SAFETY: `state` is only touched while holding `lock`; the raw node pointers in it belong to
// blocked threads that keep the nodes alive while they are linked. Values of `T` move between
// threads, hence `T: Send`.
unsafe impl<T: Send, L: Strategy> Send for Shared<T, L> {}
// SAFETY: as above: all shared mutable state sits behind the lock.
unsafe impl<T: Send, L: Strategy> Sync for Shared<T, L> {}

impl<T, L: Strategy> Shared<T, L> {
    /// A channel buffering `nbuf` values (`usize::MAX`: unbounded), guarded by `lock`, with
    /// one handle of each side.
    pub(super) fn new(nbuf: usize, lock: LockRef<L>) -> Arc<Self> {
        let mut shared = Arc::new(Self::unresolved(nbuf, lock));
        let sh = Arc::get_mut(&mut shared).expect("a new Arc is unique");
        // Derived from the unique reference, not from a shared one made and dropped here: a
        // pointer into an allocation that does not move, valid for as long as the `Arc`.
        sh.lock = NonNull::from(sh.owned.get());
        shared
    }

    /// The channel, its `lock` not yet pointing at `owned`'s lock.
    fn unresolved(nbuf: usize, lock: LockRef<L>) -> Self {
        Shared {
            lock: NonNull::dangling(),
            owned: lock,
            state: UnsafeCell::new(State::new(nbuf)),
            summary: AtomicU64::new(0),
            cap: nbuf,
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            #[cfg(loom)]
            seq: {
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    /// Drops what is buffered, outside the lock (the last receiver has gone, so nothing can
    /// receive it); every value is dropped, and the first panic of their `Drop`s is returned.
    pub(super) fn discard_buffered(&self) -> Caught {
        let mut st = self.lock();
        let buf = std::mem::take(&mut st.buf);
        st.sync_limit();
        drop(st);
        drop_each(buf)
    }
}

/// A channel's own lock, or one shared by many channels (Plan 9's single `chanlock`).
#[cfg_attr(loom, allow(dead_code))] // loom builds have no global lock
pub(crate) enum LockRef<L: 'static> {
    Own(L),
    Shared(&'static L),
}

impl<L> LockRef<L> {
    fn get(&self) -> &L {
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
    /// How many values the buffer may hold before a send must look past
    /// [`buffer_plainly`](State::buffer_plainly): the capacity or the ring's capacity, the
    /// smaller (and within the summary's count). Every change to the ring's memory brings it
    /// up to date, so that one comparison tests for both, and the push need not test again.
    limit: u64,
    recvq: WaitQueue<T, W>,
    sendq: WaitQueue<T, W>,
    cap: usize,
    /// Whether some receive has reported the channel closed and drained. From then on a
    /// value that a receive future gives back (dropped after it was handed the value) is
    /// dropped instead: put back, it would be received after "closed and drained", a value
    /// risen from the dead ([`give_back`](State::give_back)).
    drained: bool,
}

/// Signals a claimed waiter, if any; call with no channel lock held.
#[inline]
pub(crate) fn wake<W: locks::Waiter>(w: Option<Wake<W>>) {
    if let Some(w) = w {
        w.wake();
    }
}

impl<T, W: locks::Waiter> State<T, W> {
    /// An empty, open state for a channel of capacity `nbuf`.
    fn new(nbuf: usize) -> Self {
        let mut st = State {
            // Reserve up front (bounded, so that a huge capacity costs nothing until
            // used): a send should not allocate while holding the lock.
            buf: Ring::with_capacity(nbuf.min(RESERVE)),
            cap: nbuf,
            flags: 0,
            limit: 0,
            sendq: WaitQueue::new(),
            recvq: WaitQueue::new(),
            drained: false,
        };
        st.sync_limit();
        st
    }

    /// Clears `RECEIVERS` if the receivers' queue has emptied (after a claim from it: the
    /// senders' queue did not change, so its bit stands).
    #[inline]
    fn receiver_left(&mut self) {
        if self.recvq.is_empty() {
            self.store_flags(self.flags & !RECEIVERS);
        }
    }

    /// Clears `SENDERS` if the senders' queue has emptied (after a claim from it).
    #[inline]
    fn sender_left(&mut self) {
        if self.sendq.is_empty() {
            self.store_flags(self.flags & !SENDERS);
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
        self.store_flags(f);
    }

    /// What [`limit`](State::limit) must be, from the capacity and the ring.
    #[inline]
    fn limit_due(&self) -> u64 {
        (self.cap.min(self.buf.capacity()) as u64).min(LEN)
    }

    /// Brings `limit` up to date after the ring's memory changed.
    #[inline]
    fn sync_limit(&mut self) {
        self.limit = self.limit_due();
    }

    /// Appends `v` to the buffer, growing the ring if it must (which gives plain sends
    /// more room).
    #[inline(always)]
    fn push(&mut self, v: T) {
        let grows = self.buf.is_full();
        self.buf.push(v);
        if grows {
            self.sync_limit();
        }
    }

    /// Writes `flags` as one whole word, never narrower.
    ///
    /// Every change to the flags is followed, before the unlock, by a load of the whole word
    /// (the summary that `Shared::publish` stores). Left to itself the compiler turns
    /// `flags |= SENDERS` into a one-byte OR of the byte that holds the bit, and a load that
    /// spans a narrower store still in flight cannot take its value from the store buffer: it
    /// waits for the store to reach the cache. A volatile store is never narrowed. (Measured
    /// on a task's rendezvous: 5-7 % of the time per message, O = 0 and 1, M = 1, 2, 8.)
    #[inline(always)]
    fn store_flags(&mut self, f: u64) {
        // SAFETY: the place of a `&mut`: valid, aligned and ours.
        unsafe { std::ptr::write_volatile(&mut self.flags, f) };
    }

    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.flags & CLOSED != 0
    }

    /// Completes a send now if it can: straight into a waiting receiver, else into the buffer.
    // Always: inline in `send_locked`/`recv_locked` as they were before the move into this
    // module; outlined by the inliner's budget, the rendezvous cost some 30 instructions more
    // per message (calls and spills, by callgrind).
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
            self.push(v);
            return Ok(());
        }
        Err(v)
    }

    /// Hands `v` to the first waiting receiver, or buffers it if every queued one turns out
    /// to have given up. (Inlined: its callers are already off the common path, which
    /// `Chan::send_impl` takes through `buffer_plainly`.)
    #[inline]
    fn send_to_receiver(&mut self, v: T) -> Result<Option<Wake<W>>, T> {
        match self.hand_to_receiver(v) {
            Ok(w) => Ok(Some(w)),
            Err(v) => self.buffer(v).map(|()| None),
        }
    }

    /// Claims the first receiver still waiting and puts `v` in its node; `v` back if every
    /// queued one had given up. Only the receivers' queue changes, so only its bit.
    #[inline]
    fn hand_to_receiver(&mut self, v: T) -> Result<Wake<W>, T> {
        let Some((r, w)) = self.recvq.claim(false) else {
            self.receiver_left();
            return Err(v);
        };
        // SAFETY: we claimed `r` under the lock; its owner waits for our signal.
        unsafe { r.put(v) };
        self.receiver_left();
        Ok(w)
    }

    /// Completes a receive now if it can: from the buffer (refilling it from the first waiting
    /// sender, as Plan 9 does), else straight from a waiting sender.
    // Always: inline in `send_locked`/`recv_locked` as they were before the move into this
    // module; outlined by the inliner's budget, the rendezvous cost some 30 instructions more
    // per message (calls and spills, by callgrind).
    #[inline(always)]
    pub(crate) fn try_recv(&mut self) -> Option<(T, Option<Wake<W>>)> {
        if self.flags & SENDERS != 0 {
            return self.recv_with_senders();
        }
        self.take_buffered().map(|v| (v, None))
    }

    /// The common send, which `Chan::send_impl` tries before anything else: open, nobody
    /// waiting (no flags: a queued sender implies a full buffer), room within the capacity
    /// and within the ring's memory, the last two in one comparison (see `limit`). The flags
    /// come first: at O=0 a receiver is queued on most sends, and the test stops there.
    #[inline]
    pub(super) fn buffer_plainly(&mut self, v: T) -> Result<(), T> {
        if self.flags == 0 && (self.buf.len() as u64) < self.limit {
            // SAFETY: `limit` is at most the ring's capacity, and the length is below it.
            unsafe { self.buf.push_unchecked(v) };
            return Ok(());
        }
        Err(v)
    }

    /// The common receive: a value buffered and no sender queued (which would mean a full
    /// buffer to refill).
    #[inline]
    pub(super) fn take_buffered(&mut self) -> Option<T> {
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
    // Always: inline in `send_locked`/`recv_locked` as they were before the move into this
    // module; outlined by the inliner's budget, the rendezvous cost some 30 instructions more
    // per message (calls and spills, by callgrind).
    #[inline(always)]
    fn recv_with_senders(&mut self) -> Option<(T, Option<Wake<W>>)> {
        match self.buf.pop() {
            Some(v) => Some((v, self.refill())),
            None => self.take_from_sender(),
        }
    }

    /// A backlog has drained: give its memory back, keeping [`RESERVE`] slots.
    #[inline]
    fn give_back_memory(&mut self) {
        shrink_ring(&mut self.buf);
        self.sync_limit();
    }

    /// Moves the first waiting sender's value into the slot a receive just freed.
    // Always: a receive from a full buffer with senders queued takes this path (most
    // receives at O=1, and at O=10 with eight senders), and out of line, LLVM's choice, it
    // cost a call frame: six registers pushed and popped, and its result returned through
    // memory. 8-22 instructions a message at O=1, 7.6 at O=10
    // M=8, 10-26 for tasks (callgrind; `docs/tuning.md`, "The refill in line").
    #[inline(always)]
    fn refill(&mut self) -> Option<Wake<W>> {
        if self.buf.len() >= self.cap {
            // Over capacity: a value given back by a dropped receive future (`future.rs`).
            return None;
        }
        let (v, w) = match self.sendq.claim(false) {
            // SAFETY: we claimed `s` under the lock, so its slot is ours.
            Some((s, w)) => (unsafe { s.take() }, Some(w)),
            None => (None, None),
        };
        if let Some(v) = v {
            self.push(v);
        }
        self.sender_left();
        w
    }

    /// Takes the first waiting sender's value (a rendezvous).
    #[inline(always)]
    fn take_from_sender(&mut self) -> Option<(T, Option<Wake<W>>)> {
        // SAFETY: we claim `s` under the lock, so its slot is ours.
        let claimed = self
            .sendq
            .claim(false)
            .map(|(s, w)| (unsafe { s.take() }, w));
        self.sender_left();
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
        self.flags & side == 0 && hands_off(self.cap)
    }

    /// Queues a blocked sender's node.
    ///
    /// # Safety
    /// As for [`WaitQueue::push`].
    pub(crate) unsafe fn queue_sender(&mut self, node: &Node<T, W>) {
        // SAFETY: forwarded.
        unsafe { self.sendq.push(node) };
        self.store_flags(self.flags | SENDERS);
    }

    /// Queues a blocked receiver's node.
    ///
    /// # Safety
    /// As for [`WaitQueue::push`].
    pub(crate) unsafe fn queue_receiver(&mut self, node: &Node<T, W>) {
        // SAFETY: forwarded.
        unsafe { self.recvq.push(node) };
        self.store_flags(self.flags | RECEIVERS);
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
    /// A queued receiver means an empty buffer, so it is told "closed and drained".
    pub(crate) fn close_one(&mut self) -> Option<Wake<W>> {
        self.store_flags(self.flags | CLOSED);
        let claimed = match self.recvq.claim(true) {
            Some((_, w)) => {
                self.drained = true;
                Some(w)
            }
            None => self.sendq.claim(true).map(|(_, w)| w),
        };
        self.sync_flags();
        claimed
    }

    /// Whether a receive that found nothing to take should report "closed and drained"; if
    /// so, that is now known to have been said (see `drained`).
    #[inline]
    pub(crate) fn recv_closed(&mut self) -> bool {
        if self.is_closed() {
            self.drained = true;
            return true;
        }
        false
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

impl<T, W: locks::Waiter> State<T, W> {
    /// Puts back a value that a receive had taken but could not deliver: a receive future
    /// dropped after it was handed the value, or a receive unwinding from its partner's
    /// wake-up. It goes to the first waiting receiver (woken by the caller, with no lock
    /// held), else to the front of the buffer, whatever the capacity, so that it is received
    /// next.
    ///
    /// Unless a receive has already reported the channel closed and drained: then the value
    /// comes back (`Err`), for the caller to drop with no lock held. Received after that
    /// report, it would have risen from the dead; dropping it is what the receive that was
    /// handed it would have done, had its owner dropped the value at once.
    pub(crate) fn give_back(&mut self, v: T) -> Result<Option<Wake<W>>, T> {
        if self.drained {
            return Err(v);
        }
        match self.hand_to_receiver(v) {
            Ok(w) => Ok(Some(w)),
            Err(v) => {
                self.buf.push_front(v);
                self.sync_limit();
                Ok(None)
            }
        }
    }
}

impl<T, W> Drop for State<T, W> {
    /// Drops what is still buffered one value at a time, so that a `Drop` that panics does
    /// not abort the process by panicking again inside the buffer's own drop: every value is
    /// dropped once, then the first panic goes on from the drop of the last handle (a later
    /// one is discarded; so is the first if that handle is dropped while its thread unwinds).
    fn drop(&mut self) {
        drop_each(std::mem::take(&mut self.buf)).finish();
    }
}

/// Shrinks a drained backlog's ring to [`RESERVE`] slots. Out of line and cold, to keep the
/// allocator's code out of the receive path; `extern "C"`, so that the compiler knows it
/// cannot unwind (an unwind out of it would abort the process instead: it could come only
/// from the allocator failing, which aborts anyway). Knowing that, the receive path needs no
/// unwinding landing pad for its lock guard, which it otherwise spills to the stack on every
/// receive.
#[cold]
#[inline(never)]
extern "C" fn shrink_ring<T>(buf: &mut Ring<T>) {
    buf.shrink_to(RESERVE);
}

/// Drops every value, each on its own, so that one panicking `Drop` neither leaks the rest
/// nor aborts the process by panicking again inside the ring's drop; the first panic comes
/// back to the caller.
fn drop_each<T>(mut buf: Ring<T>) -> Caught {
    let mut caught = Caught::none();
    if std::mem::needs_drop::<T>() {
        while let Some(v) = buf.pop() {
            caught.run(|| drop(v));
        }
    }
    caught
}

/// The channel's state, locked; unlocks (publishing the summary first) when dropped.
pub(crate) struct Locked<'a, T, L: Strategy> {
    shared: &'a Shared<T, L>,
    /// `shared.lock` resolved once (it may be the global lock).
    lock: &'a L,
}

impl<T, L: Strategy> Shared<T, L> {
    /// Takes the channel's lock for a thread.
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, T, L> {
        let lock = self.raw_lock();
        if !lock.try_lock() {
            self.lock_contended(lock);
        }
        Locked { shared: self, lock }
    }

    /// [`lock`](Self::lock) for a step that must happen and cannot be tried again (a close, a
    /// value put back, a queued future's drop): a lock that panics is taken once more, its
    /// panic kept in `caught` (see [`unwind::insist`]).
    #[inline]
    pub(crate) fn lock_insisting(&self, caught: &mut Caught) -> Locked<'_, T, L> {
        unwind::insist(caught, || self.lock())
    }

    /// A contended lock: on a channel of at most one buffer, taken with the strategy's
    /// [`lock_in_hand_off`](Strategy::lock_in_hand_off), which may spin (the holder there is
    /// a partner mid-exchange); otherwise with `lock`, which lets a contended party step aside
    /// while the other works through the buffer. Out of line, so that the choice costs the
    /// uncontended path nothing (inline, the two paths cost every message 25 instructions
    /// more, by callgrind).
    #[cold]
    #[inline(never)]
    fn lock_contended(&self, lock: &L) {
        match hands_off(self.cap) {
            true => lock.lock_in_hand_off(),
            false => lock.lock(),
        }
    }

    /// [`lock`](Self::lock) for an async operation, polled on an executor's worker: the
    /// strategy's [`lock_in_task`](Strategy::lock_in_task), which may keep a contended worker
    /// off the lock for longer than a thread.
    #[inline]
    pub(crate) fn lock_in_task(&self) -> Locked<'_, T, L> {
        let lock = self.raw_lock();
        lock.lock_in_task();
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
        return self.lock.as_ptr() as usize;
    }

    /// The lock, for alt to order and take several channels' locks itself.
    #[inline(always)]
    pub(crate) fn raw_lock(&self) -> &L {
        // SAFETY: `lock` points at `owned`'s lock, inside this allocation, or at a `'static`
        // one (see `new`), and nothing takes a `&mut` to either while `self` is borrowed.
        unsafe { self.lock.as_ref() }
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
        debug_assert_eq!(st.limit, st.limit_due(), "`limit` behind the ring");
        self.summary.store(st.summary(), Release);
    }

    /// The summary as of the last unlock, ordered after everything this thread did before
    /// (see [`Summary`] for why the fence).
    #[inline]
    pub(crate) fn summary(&self) -> Summary {
        fence(SeqCst);
        Summary(self.summary.load(Acquire))
    }

    /// The summary as a hint: loaded without the fence that makes it exact, for an operation
    /// that only chooses how to start with it (an async one that looks bound to wait gets its
    /// waker before locking).
    #[inline]
    pub(crate) fn summary_hint(&self) -> Summary {
        Summary(self.summary.load(Relaxed))
    }

    /// Hands a received value `v` to its receiver after waking `w`, the sender the receive
    /// claimed (whose value it took, or who refilled the slot it freed). The wake-up is user
    /// code: if it panics, `v` goes back to the channel (see [`State::give_back`]) before the
    /// panic goes on, so a value whose send returned `Ok` is not lost with the unwinding
    /// receive. On a thread that is already unwinding the panic cannot go on, and the
    /// receive returns `v` as if the waker had not panicked.
    #[inline]
    pub(crate) fn deliver(&self, v: T, w: Option<Wake<L::Waiter>>) -> T {
        match w {
            None => v,
            Some(w) => self.deliver_after_wake(v, w),
        }
    }

    #[inline]
    fn deliver_after_wake(&self, v: T, w: Wake<L::Waiter>) -> T {
        match w.signal() {
            Ok(()) => v,
            Err(p) => self.put_back_and_unwind(v, p),
        }
    }

    /// [`deliver`](Self::deliver) for an async receive that also drops a clone of its waker
    /// it turned out not to need (it looked bound to wait, and then did not): both are user
    /// code and both run; if either panics, `v` goes back as there.
    pub(crate) fn deliver_dropping(
        &self,
        v: T,
        w: Option<Wake<L::Waiter>>,
        unused: std::task::Waker,
    ) -> T {
        let mut caught = Caught::none();
        caught.wake(w);
        caught.run(|| drop(unused));
        match caught.into_payload() {
            None => v,
            Some(p) => self.put_back_and_unwind(v, p),
        }
    }

    #[cold]
    #[inline(never)]
    fn put_back_and_unwind(&self, v: T, p: Payload) -> T {
        if std::thread::panicking() {
            unwind::discard(p);
            return v;
        }
        let mut caught = Caught::none();
        caught.keep(p);
        self.put_back(v, &mut caught);
        caught.finish();
        unreachable!("a kept panic goes on from a thread that is not unwinding")
    }

    /// Puts a value that a receive had taken back into the channel ([`State::give_back`]),
    /// then runs the user code that follows, caught into `caught`: the wake-up of a receiver
    /// it went to, or the value's drop if it could not go back.
    #[cold]
    pub(crate) fn put_back(&self, v: T, caught: &mut Caught) {
        // Received, so it must not be lost to a lock that panics: taken again.
        let back = self.lock_insisting(caught).give_back(v);
        match back {
            Ok(w) => caught.wake(w),
            Err(v) => caught.run(|| drop(v)),
        }
    }

    /// Marks the channel closed (if it was not) and wakes every blocked party: senders, and
    /// receivers, who are told "closed and drained". One claim per lock hold, woken outside
    /// it: nobody new can queue once the channel is marked closed. Wakers are user code: one
    /// that panics does not stop the rest, and the first panic is kept in `caught`; so is a
    /// panic of the lock, which is taken again (every party must be woken).
    pub(crate) fn release_closed<'a>(&'a self, mut st: Locked<'a, T, L>, caught: &mut Caught) {
        while let Some(claimed) = st.close_one() {
            drop(st);
            caught.wake(Some(claimed));
            st = self.lock_insisting(caught);
        }
    }
}

impl<T, L: Strategy> Locked<'_, T, L> {
    /// The waiter a sender about to queue blocks with: the strategy's
    /// [`first_waiter`](Strategy::first_waiter) if it is first in line (see
    /// [`State::first_in_line`]), else a plain one.
    #[inline(always)]
    pub(super) fn sender_waiter(&self) -> L::Waiter {
        self.waiter_for(SENDERS)
    }

    /// [`sender_waiter`](Self::sender_waiter) for a receiver about to queue.
    #[inline(always)]
    pub(super) fn receiver_waiter(&self) -> L::Waiter {
        self.waiter_for(RECEIVERS)
    }

    // Always, these three: the match was written out in `Chan::send_blocking` and
    // `recv_blocking`, and with plain `#[inline]` the blocking paths compiled differently
    // (both waiters built on the stack, then one chosen); so they compile as before.
    #[inline(always)]
    fn waiter_for(&self, side: u64) -> L::Waiter {
        match self.first_in_line(side) {
            true => self.lock.first_waiter(),
            false => self.lock.waiter(),
        }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Chan;

    /// Which 64-byte line of `Shared<u64, Adaptive>` holds each of the words a send and a
    /// receive write: one line, the second (see `Shared`). Found from offsets alone: the
    /// lock's by the address `raw_lock` resolves to, its hot words (the lock word and the
    /// sleeper count) being its last 8 bytes, which a test in `locks` holds.
    #[test]
    #[cfg(target_pointer_width = "64")] // the offsets below are a 64-bit target's
    fn an_adaptive_channels_hot_words_share_one_line() {
        use std::mem::{align_of, offset_of, size_of};
        type S = Shared<u64, locks::Adaptive>;
        type St = State<u64, locks::AdaptiveWaiter>;
        assert_eq!(align_of::<S>(), 128);
        let c = Chan::<u64, locks::Adaptive>::new(10);
        let sh: &S = &c.shared;
        let lock = sh.raw_lock() as *const locks::Adaptive as usize - sh as *const S as usize;
        let lock_tail = lock + size_of::<locks::Adaptive>() - 8;
        let line = |at: usize| at / 64;
        let state = offset_of!(S, state);
        let ring = state + offset_of!(St, buf);
        let flags = state + offset_of!(St, flags);
        let hot = [
            lock_tail,
            lock_tail + 7,
            offset_of!(S, summary),
            ring,
            flags + size_of::<u64>() - 1,
        ];
        assert!(
            hot.iter().all(|&at| line(at) == 1),
            "the lock's hot words, the summary, the ring and the flags at {hot:?}"
        );
        let read_mostly = [
            offset_of!(S, lock),
            offset_of!(S, cap),
            offset_of!(S, receivers),
        ];
        assert!(read_mostly.iter().all(|&at| line(at) == 0));
    }

    /// `limit` follows the ring as it grows past [`RESERVE`] and shrinks back, so that
    /// every send within the capacity keeps to `buffer_plainly` (the debug assertion in
    /// `publish` checks it at every unlock as well). The capacity lies between two sizes of
    /// the ring, so that the grown ring outsizes it. Under Miri (the ring buffer's step in
    /// `.ci/miri`), one round: two took 42 s of Tree Borrows.
    #[test]
    fn the_plain_send_limit_follows_the_ring() {
        let cap = RESERVE + RESERVE / 2;
        let c = Chan::<u64>::new(cap);
        let limit = |c: &Chan<u64>| c.shared.lock().limit;
        assert_eq!(limit(&c), RESERVE as u64);
        for round in 0..if cfg!(miri) { 1 } else { 2 } {
            (0..cap as u64).for_each(|i| c.nbsend(i).unwrap());
            assert!(c.nbsend(0).is_err(), "round {round}: full at the capacity");
            assert_eq!(limit(&c), cap as u64, "round {round}: grown");
            (0..cap as u64).for_each(|i| assert_eq!(c.nbrecv().unwrap(), i));
            assert_eq!(limit(&c), RESERVE as u64, "round {round}: shrunk back");
        }
        let unbuffered = Chan::<u64>::new(0);
        assert_eq!(limit(&unbuffered), 0);
    }

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
