//! The channel: a buffer and two queues of blocked parties behind one lock of type `L`.
//!
//! [`Chan`] is the handle; the state behind the lock, and the lock itself, are in `state.rs`.

use crate::error::*;
use crate::sync::Ordering::{AcqRel, Relaxed};
use crate::unwind::Caught;
use crate::waitq::{Abandon, Node, Party};
use locks::{Adaptive, Strategy};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

// The buffer, the queues, the lock and the summary.
mod state;
pub(crate) use self::state::{wake, LockRef, Locked, Shared, State};

// Async send and receive (`send_async`, `recv_async`).
mod future;
pub use self::future::{OwnedRecvFuture, OwnedSendFuture, RecvFuture, SendFuture};
// A receiver as a `Stream` (the `stream` feature).
#[cfg(feature = "stream")]
mod stream;
#[cfg(feature = "stream")]
pub use self::stream::RecvStream;
// A sender as a `Sink` (the `sink` feature).
#[cfg(feature = "sink")]
mod sink;
#[cfg(feature = "sink")]
pub use self::sink::SendSink;

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

/// The largest bounded capacity (the limit `Chan::new` has always had).
const MAX_CAP: usize = u32::MAX as usize;

/// The capacity of an unbounded channel.
const UNBOUNDED: usize = usize::MAX;

/// How long an operation may wait.
#[derive(Clone, Copy, PartialEq)]
enum Wait {
    Never,
    Until(Option<Instant>),
}

/// The wait of a plain `send` or `recv`.
const FOREVER: Wait = Wait::Until(None);

/// How long a slow path may wait: a [`Wait`] known only when running, or [`Forever`], known
/// when compiling. The slow paths compile a copy of their own for a plain `send` or `recv`,
/// in which the tests of the deadline fold away and no deadline is passed or kept on the
/// stack: 4-8 instructions fewer per blocking operation (callgrind).
trait HowLong: Copy {
    fn get(self) -> Wait;
}

/// [`FOREVER`] as a type.
#[derive(Clone, Copy)]
struct Forever;

impl HowLong for Forever {
    #[inline(always)]
    fn get(self) -> Wait {
        FOREVER
    }
}

impl HowLong for Wait {
    #[inline(always)]
    fn get(self) -> Wait {
        self
    }
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
            shared: Shared::new(nbuf, lock),
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
    #[inline(always)]
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
    #[inline(always)]
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

    // Always, and so is everything a blocking send and receive call (`send_locked`,
    // `send_blocking` and their receive twins): the whole operation compiles into the
    // caller's loop, as kanal's does. Kept out of line, the slow paths cost a call frame
    // each, pushes and pops of six registers: at O=0, where every send and every receive
    // takes one, 250 instructions a message instead of 177 (callgrind, `chantest --metric
    // instructions`, with the lock and wake-up changes that came with it). Only `send` and
    // `recv` inlined and not their callees, the fast path of a buffered channel spilled
    // registers instead (O=100: 81 to 87). The price is code size at each call site.
    #[inline(always)]
    fn send_impl(&self, v: T, wait: Wait) -> Result<(), Fail<T>> {
        let sh = &*self.shared;
        if wait == Wait::Never && sh.summary().send_would_wait(&sh.cap) {
            return Err(Fail::Full(v));
        }
        let mut st = sh.lock();
        match st.buffer_plainly(v) {
            Ok(()) => {
                drop(st);
                Ok(())
            }
            Err(v) if wait == FOREVER => self.send_locked(st, v, Forever),
            Err(v) => self.send_locked(st, v, wait),
        }
    }

    /// A send that found the lock's state other than the common case: closed, a receiver
    /// waiting, or no room.
    #[inline(always)]
    fn send_locked(
        &self,
        mut st: Locked<'_, T, L>,
        v: T,
        wait: impl HowLong,
    ) -> Result<(), Fail<T>> {
        let wait = wait.get();
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
                Wait::Until(deadline) => self.send_blocking(st, v, deadline),
            },
        }
    }

    /// Queues a node holding `v` on the senders' queue and sleeps until a receiver takes the
    /// value, the channel closes, or `deadline` passes.
    // Always: see `send_impl`. (LLVM's own choice here flipped with unrelated changes to
    // the caller's crate: 25 instructions a message, by callgrind.)
    #[inline(always)]
    fn send_blocking(
        &self,
        mut st: Locked<'_, T, L>,
        v: T,
        deadline: Option<Instant>,
    ) -> Result<(), Fail<T>> {
        let sh = &*self.shared;
        let ctx = Party::new(st.sender_waiter());
        let waiter = ctx.waiter();
        let node = Node::new(Some(v));
        node.bind_alone(&ctx);
        // SAFETY: `node` stays on this frame until unlinked: by a claimer, or by `withdraw`
        // (at the deadline, or from the guard if the waiter unwinds).
        unsafe { st.queue_sender(&node) };
        drop(st);
        // Under the lock: the node is bound alone, so its claimers rely on it.
        let withdraw = |ctx: &Party<_>| {
            let mut st = sh.lock();
            ctx.abort();
            st.unqueue_sender(&node);
        };
        let guard = Abandon::arm(&ctx, withdraw);
        let signalled = ctx.block_on(waiter, deadline, withdraw);
        guard.disarm();
        if !signalled {
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

    // Always: see `send_impl`.
    #[inline(always)]
    fn recv_impl(&self, wait: Wait) -> Result<T, RecvFail> {
        let sh = &*self.shared;
        if wait == Wait::Never && sh.summary().recv_would_wait() {
            return Err(RecvFail::Empty);
        }
        let mut st = sh.lock();
        match st.take_buffered() {
            Some(v) => {
                drop(st);
                Ok(v)
            }
            None if wait == FOREVER => self.recv_locked(st, Forever),
            None => self.recv_locked(st, wait),
        }
    }

    /// A receive that found the lock's state other than the common case: nothing buffered,
    /// or a sender waiting.
    #[inline(always)]
    fn recv_locked(&self, mut st: Locked<'_, T, L>, wait: impl HowLong) -> Result<T, RecvFail> {
        let wait = wait.get();
        if let Some((v, w)) = st.try_recv() {
            drop(st);
            return Ok(self.shared.deliver(v, w));
        }
        if st.recv_closed() {
            drop(st);
            return Err(RecvFail::Closed);
        }
        match wait {
            Wait::Never => Err(RecvFail::Empty),
            Wait::Until(deadline) => self.recv_blocking(st, deadline),
        }
    }

    /// Queues an empty node on the receivers' queue and sleeps until a sender fills it, the
    /// channel closes, or `deadline` passes.
    // Always: see `send_impl`. (LLVM's own choice here flipped with unrelated changes to
    // the caller's crate: 25 instructions a message, by callgrind.)
    #[inline(always)]
    fn recv_blocking(
        &self,
        mut st: Locked<'_, T, L>,
        deadline: Option<Instant>,
    ) -> Result<T, RecvFail> {
        let sh = &*self.shared;
        let ctx = Party::new(st.receiver_waiter());
        let waiter = ctx.waiter();
        let node = Node::new(None);
        node.bind_alone(&ctx);
        // SAFETY: `node` stays on this frame until unlinked: by a claimer, or by `withdraw`
        // (at the deadline, or from the guard if the waiter unwinds).
        unsafe { st.queue_receiver(&node) };
        drop(st);
        // Under the lock: the node is bound alone, so its claimers rely on it.
        let withdraw = |ctx: &Party<_>| {
            let mut st = sh.lock();
            ctx.abort();
            st.unqueue_receiver(&node);
        };
        let guard = Abandon::arm(&ctx, withdraw);
        let signalled = ctx.block_on(waiter, deadline, withdraw);
        guard.disarm();
        if !signalled {
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
    /// first panic goes on from here (the channel is closed either way), unless this thread
    /// is already unwinding, when it is discarded rather than abort the process.
    pub fn close(&self) -> bool {
        let (closed, caught) = self.close_caught();
        caught.finish();
        closed
    }

    /// [`close`](Self::close), the wakers' first panic returned rather than raised.
    fn close_caught(&self) -> (bool, Caught) {
        // A close must happen: the parties blocked on the channel wait for it, and a last
        // handle's drop cannot be tried again. A lock that panics is taken again (see
        // `unwind::insist`), and its panic goes on once every party is woken.
        let mut caught = Caught::none();
        let st = self.shared.lock_insisting(&mut caught);
        if st.is_closed() {
            return (false, caught);
        }
        self.shared.release_closed(st, &mut caught);
        (true, caught)
    }

    /// `None` while open; once closed, how many values are still buffered (9front's
    /// `chanclosing`).
    pub fn closing(&self) -> Option<usize> {
        let s = self.shared.summary();
        s.closed().then_some(s.len())
    }

    /// Whether [`close`](Self::close) has been called (or every handle of one side dropped).
    pub fn is_closed(&self) -> bool {
        self.shared.summary().closed()
    }

    /// How many values are buffered.
    pub fn len(&self) -> usize {
        self.shared.summary().len()
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
        self.shared.raw_lock().params()
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
    /// Counts the handle out of both its sides before any user code runs: the close's
    /// wakers and the drops of discarded values come after, each caught, and the first
    /// panic goes on once all have run (see `crate::unwind`).
    fn drop(&mut self) {
        // AcqRel: the last handle of a side closes after every other handle of that side
        // has finished with the channel.
        let last_sender = self.role.sends() && self.shared.senders.fetch_sub(1, AcqRel) == 1;
        let last_receiver = self.role.receives() && self.shared.receivers.fetch_sub(1, AcqRel) == 1;
        if !(last_sender || last_receiver) {
            return;
        }
        let (_, mut caught) = self.close_caught();
        if last_receiver {
            caught.merge(self.shared.discard_buffered());
        }
        caught.finish();
    }
}

impl<T, L: Strategy> fmt::Debug for Chan<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chan")
            .field("lock", &LockName(self.shared.raw_lock()))
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
