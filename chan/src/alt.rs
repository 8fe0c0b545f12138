//! `alt`: wait for whichever of several sends and receives can happen first.
//!
//! Like Plan 9's `Alt` array, each arm names a channel and a place for the value: a receive
//! arm an `&mut Option<T>` that the received value is written to, a send arm an
//! `&mut Option<T>` the value is taken from (and left in if it was not sent; a send arm with
//! `None` is disabled, Plan 9's `CHANNOP`). Channels of different element types mix freely;
//! they share the lock strategy `L`.
//!
//! The protocol is Go's `select` on Plan 9's channels. Before taking any lock, shuffle the arms
//! into a random poll order (Go's `pollorder`; index order when biased). Then lock every
//! channel involved in address order (once each, so channels sharing Plan 9's global lock
//! work), and complete the first ready arm in poll order: uniform among the ready ones.
//! Otherwise queue a node on every channel *in poll order*, so that two arms on one channel
//! are queued in random order too and the partner that takes the queue's head picks one of
//! them uniformly; then release the locks and sleep. Whoever completes one of our arms claims
//! the context with a single compare-and-swap, so exactly one arm fires; on waking we take the
//! locks again and unlink the other nodes.
//!
//! No user code runs under the locks: a received value goes into the arm's own node, and only
//! after every lock is released is it moved to the caller's `Option` (dropping whatever that
//! held), and unsent values moved back to theirs.

use crate::chan::{deadline_after, State};
use crate::unwind::Caught;
use crate::waitq::{Abandon, Node, Party, Selected, Wake};
use crate::{Chan, RecvEnd, SendEnd};
use locks::{Adaptive, Strategy};
use std::ops::DerefMut;
use std::time::{Duration, Instant};

// `Alt::wait_async`.
mod future;
pub use self::future::AltFuture;
// `SendAlt`: an alt of `Send` arms, and its `Send` future.
mod send;
pub use self::send::{SendAlt, SendAltFuture};
// The locks an alt takes, and the proof that they are held.
mod held;
use self::held::{Held, Locks};
// `alt!`'s blocking forms, their arms on the stack.
pub(crate) mod stack;

/// Which arm of an [`Alt`] fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fired {
    /// The arm's index, as returned when it was added.
    pub index: usize,
    /// The arm's channel is closed: a receive arm got no value (closed and drained), a send
    /// arm's value is still in its place. 9front reports a closed arm only when no other arm
    /// can proceed, and so do we.
    pub closed: bool,
}

impl Fired {
    /// The arm a claimer ended a wait with; `None` if none did (the wait is still on, or
    /// was aborted).
    fn from_selected(selected: Selected) -> Option<Fired> {
        match selected {
            Selected::Operation(index) => Some(Fired {
                index,
                closed: false,
            }),
            Selected::Closed(index) => Some(Fired {
                index,
                closed: true,
            }),
            Selected::Waiting | Selected::Aborted => None,
        }
    }
}

/// A set of send and receive operations to wait on together.
///
/// ```
/// use chan::{Alt, Chan};
/// let numbers: Chan<u32> = Chan::new(1);
/// let words: Chan<&str> = Chan::new(1);
/// words.send("hi").unwrap();
///
/// let (mut n, mut w) = (None, None);
/// let mut alt = Alt::new();
/// let a = alt.recv(&numbers, &mut n);
/// let b = alt.recv(&words, &mut w);
/// let fired = alt.wait();
/// assert_eq!((fired.index, fired.closed), (b, false));
/// assert_ne!(a, b);
/// drop(alt);
/// assert_eq!((n, w), (None, Some("hi")));
/// ```
pub struct Alt<'a, L: Strategy = Adaptive> {
    arms: Vec<Box<dyn Arm<L> + 'a>>,
    biased: bool,
    /// Scratch, kept between waits: arm indices in poll order, and one arm per distinct lock
    /// in address order.
    poll_order: Vec<usize>,
    lock_order: Vec<usize>,
    /// The task context of an async wait whose nodes are queued (`future.rs`), null when
    /// none is. The future clears it when the wait ends or it is dropped; if the future is
    /// leaked instead (`mem::forget` of a pinned future: its memory is never freed, so the
    /// pointer stays valid), the alt withdraws the wait itself before it is used again or
    /// dropped, since its arms own the queued nodes.
    pending: *const Party<L::Waiter>,
}

enum Poll {
    Ready,
    Closed,
    Pending,
}

/// One operation, type-erased so that arms over different element types share a list.
///
/// The methods that take a [`Held`] need the arm's channel lock, which the proof says is held
/// (by the [`Locks`] that lent it); `finish` and `release` run with no lock held.
trait Arm<L: Strategy> {
    fn lock(&self) -> &L;
    /// Where this arm's lock comes in the order every alt takes locks in: the lock's
    /// address (channels sharing the global lock share it), or under loom the channel's
    /// creation number (addresses change from one modelled execution to the next, and a
    /// model must make the same choices every time).
    fn lock_key(&self) -> usize;
    fn poll(&mut self, held: &mut Held) -> Poll;
    /// The alt reports this arm closed (`poll` said `Closed`, and no arm was ready): for a
    /// receive, the channel has now been reported closed and drained.
    fn report_closed(&mut self, _held: &mut Held) {}
    /// Completes the operation now; `None` if it turned out not to be ready after all.
    fn fire(&mut self, held: &mut Held) -> Option<Option<Wake<L::Waiter>>>;
    /// Queues the arm's node on its channel, bound to `ctx` with `token`.
    ///
    /// # Safety
    /// The arm (and so its node) must stay in place, and `ctx` alive, until the node is
    /// unlinked: by [`dequeue`](Self::dequeue), or by a claimer.
    unsafe fn enqueue(&mut self, held: &mut Held, ctx: &Party<L::Waiter>, token: usize);
    fn dequeue(&mut self, held: &mut Held);
    fn publish(&self, held: &mut Held);
    /// With the node unlinked and no lock held: move the node's value to the caller's place.
    fn finish(&mut self);
    /// Drops what `finish` displaced from the caller's place, and a value `give_back` could
    /// not give back (user code: may panic).
    fn release(&mut self);
    /// An async alt dropped after this arm fired (`future.rs`): a received value in the
    /// node goes back to the channel, as for a dropped `RecvFuture`, or is kept for
    /// `release` to drop if the channel has reported itself closed and drained.
    fn give_back(&mut self, _held: &mut Held) -> Option<Wake<L::Waiter>> {
        None
    }
}

/// How an alt holds its arms: boxed, in an [`Alt`] (whose arms may outlive a wait: a leaked
/// [`AltFuture`] leaves its nodes queued in them), or borrowed, by the caller's stack
/// (`alt!`'s blocking forms). The waits are written once, over either.
trait ArmPtr<'a, L: Strategy>: DerefMut<Target = dyn Arm<L> + 'a> {}

impl<'a, L: Strategy, P: DerefMut<Target = dyn Arm<L> + 'a>> ArmPtr<'a, L> for P {}

/// The part of an arm that does not depend on its direction: the channel, and the node that
/// queues the arm on it while the alt sleeps (and holds a received value until `finish`).
struct Port<'a, T, L: Strategy> {
    chan: &'a Chan<T, L>,
    node: Node<T, L::Waiter>,
}

impl<'a, T, L: Strategy> Port<'a, T, L> {
    fn new(chan: &'a Chan<T, L>) -> Self {
        Port {
            chan,
            node: Node::new(None),
        }
    }

    fn lock(&self) -> &L {
        self.chan.shared.raw_lock()
    }

    /// The channel's state, its lock held: for as long as the proof is borrowed, so that no
    /// two states are borrowed through it at once (two arms may share a channel).
    fn state<'s>(&'s self, _held: &'s mut Held) -> &'s mut State<T, L::Waiter> {
        // SAFETY: a `Held` exists only while every lock of the alt's channels is held, this
        // one's among them, and borrowing it mutably for as long as the state makes this the
        // only reference to a locked state meanwhile.
        unsafe { self.chan.shared.state_locked() }
    }

    fn publish(&self, held: &mut Held) {
        self.chan.shared.publish(self.state(held));
    }

    /// What the node's slot holds.
    fn take(&self) -> Option<T> {
        // SAFETY: the caller runs with the node unlinked (`finish`), or holds the channel's
        // lock (`give_back`), under which alone a claimer touches the slot: the slot is ours.
        unsafe { self.node.take() }
    }
}

/// A send arm: its value is taken from `src` when the arm is queued or fires, and put back
/// there unless it was sent. Public only for `alt!` (see `stack.rs`).
pub struct SendArm<'a, T, L: Strategy> {
    port: Port<'a, T, L>,
    src: &'a mut Option<T>,
}

/// A receive arm: its value lands in `dst`. Public only for `alt!` (see `stack.rs`).
pub struct RecvArm<'a, T, L: Strategy> {
    port: Port<'a, T, L>,
    dst: &'a mut Option<T>,
    /// What `dst` held before a value landed there, dropped by `release`.
    displaced: Option<T>,
    /// A received value that could not go back to its channel (`give_back`), dropped by
    /// `release`.
    refused: Option<T>,
}

impl<T, L: Strategy> Arm<L> for SendArm<'_, T, L> {
    fn lock(&self) -> &L {
        self.port.lock()
    }

    fn lock_key(&self) -> usize {
        self.port.chan.shared.lock_key()
    }

    fn poll(&mut self, held: &mut Held) -> Poll {
        let st = self.port.state(held);
        match () {
            _ if self.src.is_none() => Poll::Pending,
            _ if st.is_closed() => Poll::Closed,
            _ if st.can_send() => Poll::Ready,
            _ => Poll::Pending,
        }
    }

    fn fire(&mut self, held: &mut Held) -> Option<Option<Wake<L::Waiter>>> {
        let v = self.src.take()?;
        match self.port.state(held).try_send(v) {
            Ok(w) => Some(w),
            Err(v) => {
                // `src` is `None` now, so nothing is dropped here.
                *self.src = Some(v);
                None
            }
        }
    }

    unsafe fn enqueue(&mut self, held: &mut Held, ctx: &Party<L::Waiter>, token: usize) {
        let Some(v) = self.src.take() else { return };
        let st = self.port.state(held);
        // SAFETY: the node is not linked, so its slot is ours; it lives in this arm, which the
        // caller keeps in place until the node is unlinked.
        unsafe {
            self.port.node.put(v);
            self.port.node.bind(ctx, token);
            st.queue_sender(&self.port.node);
        }
    }

    fn dequeue(&mut self, held: &mut Held) {
        self.port.state(held).unqueue_sender(&self.port.node);
    }

    fn publish(&self, held: &mut Held) {
        self.port.publish(held)
    }

    fn finish(&mut self) {
        // A value still in the node was not sent; `src` was emptied when it was queued.
        if let Some(v) = self.port.take() {
            *self.src = Some(v);
        }
    }

    fn release(&mut self) {}
}

impl<T, L: Strategy> Arm<L> for RecvArm<'_, T, L> {
    fn lock(&self) -> &L {
        self.port.lock()
    }

    fn lock_key(&self) -> usize {
        self.port.chan.shared.lock_key()
    }

    fn poll(&mut self, held: &mut Held) -> Poll {
        let st = self.port.state(held);
        match () {
            _ if st.can_recv() => Poll::Ready,
            _ if st.is_closed() => Poll::Closed,
            _ => Poll::Pending,
        }
    }

    fn fire(&mut self, held: &mut Held) -> Option<Option<Wake<L::Waiter>>> {
        let (v, w) = self.port.state(held).try_recv()?;
        // Into our own node, not `dst`: assigning to `dst` would drop its old value, which is
        // user code, under the lock. SAFETY: the node is not linked, so its slot is ours.
        unsafe { self.port.node.put(v) };
        Some(w)
    }

    unsafe fn enqueue(&mut self, held: &mut Held, ctx: &Party<L::Waiter>, token: usize) {
        self.port.node.bind(ctx, token);
        // SAFETY: the node lives in this arm, which the caller keeps in place until the node
        // is unlinked.
        unsafe { self.port.state(held).queue_receiver(&self.port.node) };
    }

    fn dequeue(&mut self, held: &mut Held) {
        self.port.state(held).unqueue_receiver(&self.port.node);
    }

    fn publish(&self, held: &mut Held) {
        self.port.publish(held)
    }

    fn finish(&mut self) {
        if let Some(v) = self.port.take() {
            self.displaced = self.dst.replace(v);
        }
    }

    fn report_closed(&mut self, held: &mut Held) {
        let closed = self.port.state(held).recv_closed();
        debug_assert!(closed, "reported closed by `poll`");
    }

    fn release(&mut self) {
        let (displaced, refused) = (self.displaced.take(), self.refused.take());
        // Both dropped even if the first panics: a second panic while unwinding aborts, so
        // the second is caught.
        let mut caught = Caught::none();
        caught.run(|| drop(displaced));
        caught.run(|| drop(refused));
        caught.finish();
    }

    fn give_back(&mut self, held: &mut Held) -> Option<Wake<L::Waiter>> {
        let v = self.port.take()?;
        match self.port.state(held).give_back(v) {
            Ok(w) => w,
            Err(v) => {
                debug_assert!(self.refused.is_none());
                // Not dropped here, under the lock: `release` drops it.
                std::mem::forget(self.refused.replace(v));
                None
            }
        }
    }
}

impl<'a, L: Strategy, A: ArmPtr<'a, L>> Locks<'_, 'a, L, A> {
    /// Completes the first ready arm in `poll_order`, or reports the first closed one when
    /// no arm can proceed.
    fn poll(&mut self, poll_order: &[usize]) -> Option<(Fired, Option<Wake<L::Waiter>>)> {
        let (arms, held) = self.arms();
        loop {
            let (mut ready, mut closed) = (None, None);
            for &i in poll_order {
                match arms[i].poll(held) {
                    Poll::Ready => {
                        ready = Some(i);
                        break;
                    }
                    Poll::Closed => closed = closed.or(Some(i)),
                    Poll::Pending => {}
                }
            }
            let Some(index) = ready else {
                let i = closed?;
                arms[i].report_closed(held);
                return Some((
                    Fired {
                        index: i,
                        closed: true,
                    },
                    None,
                ));
            };
            if let Some(w) = arms[index].fire(held) {
                let closed = false;
                return Some((Fired { index, closed }, w));
            }
            // Its partner was claimed through another channel meanwhile (and dropped from
            // the queue, so this cannot repeat for ever): look again.
        }
    }

    /// Unlinks every arm's node that is still queued.
    fn dequeue_all(&mut self) {
        let (arms, held) = self.arms();
        for arm in arms.iter_mut() {
            arm.dequeue(held);
        }
    }
}

/// How long [`Alt`] may wait.
#[derive(Clone, Copy)]
enum Mode {
    NonBlocking,
    Until(Option<Instant>),
}

/// The ways an alt can wait, written once for every way of holding its arms ([`Alt`]'s, and
/// `alt!`'s on the stack): they differ only in where the arms and the scratch orders live.
trait Waits {
    /// How many arms there are.
    fn arm_count(&self) -> usize;

    /// Plans and runs one wait.
    fn run(&mut self, mode: Mode) -> Option<Fired>;

    /// [`Alt::wait`].
    fn wait(&mut self) -> Fired {
        assert!(self.arm_count() != 0, "alt with no arms would wait forever");
        self.run(Mode::Until(None)).expect("an untimed alt fires")
    }

    /// [`Alt::try_wait`].
    fn try_wait(&mut self) -> Option<Fired> {
        self.run(Mode::NonBlocking)
    }

    /// [`Alt::wait_timeout`].
    fn wait_timeout(&mut self, timeout: Duration) -> Option<Fired> {
        match deadline_after(timeout) {
            Some(deadline) => self.wait_deadline(deadline),
            None => Some(self.wait()),
        }
    }

    /// [`Alt::wait_deadline`].
    fn wait_deadline(&mut self, deadline: Instant) -> Option<Fired> {
        if self.arm_count() == 0 {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            return None;
        }
        self.run(Mode::Until(Some(deadline)))
    }
}

impl<'a, L: Strategy> Default for Alt<'a, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, L: Strategy> Alt<'a, L> {
    /// An empty alt that chooses uniformly at random among ready arms.
    pub fn new() -> Self {
        Alt {
            arms: Vec::new(),
            biased: false,
            poll_order: Vec::new(),
            lock_order: Vec::new(),
            pending: std::ptr::null(),
        }
    }

    /// Chooses the first ready arm, in the order they were added, instead of a random one.
    pub fn biased(mut self) -> Self {
        self.biased = true;
        self
    }

    /// Adds a receive from `chan` (a [`Chan`] or a [`Receiver`](crate::Receiver)) whose value
    /// lands in `dst`; returns the arm's index.
    ///
    /// Whatever `dst` held is dropped when a value lands there, after every lock is released.
    pub fn recv<T: 'a>(
        &mut self,
        chan: &'a (impl RecvEnd<T, L> + ?Sized),
        dst: &'a mut Option<T>,
    ) -> usize {
        self.cancel_leaked();
        self.arms.push(Box::new(RecvArm {
            port: Port::new(chan.chan()),
            dst,
            displaced: None,
            refused: None,
        }));
        self.arms.len() - 1
    }

    /// Adds a send on `chan` (a [`Chan`] or a [`Sender`](crate::Sender)) of the value in `src`
    /// (which keeps it unless this arm fires; `None` disables the arm); returns the arm's index.
    pub fn send<T: 'a>(
        &mut self,
        chan: &'a (impl SendEnd<T, L> + ?Sized),
        src: &'a mut Option<T>,
    ) -> usize {
        self.cancel_leaked();
        self.arms.push(Box::new(SendArm {
            port: Port::new(chan.chan()),
            src,
        }));
        self.arms.len() - 1
    }

    /// How many arms there are.
    pub fn len(&self) -> usize {
        self.arms.len()
    }

    /// Whether there are no arms.
    pub fn is_empty(&self) -> bool {
        self.arms.is_empty()
    }

    /// Waits until one arm fires.
    ///
    /// # Panics
    /// If there are no arms: that wait could never end.
    pub fn wait(&mut self) -> Fired {
        Waits::wait(self)
    }

    /// Fires an arm that is ready now, or returns `None` at once (Plan 9's `CHANNOBLK`).
    pub fn try_wait(&mut self) -> Option<Fired> {
        Waits::try_wait(self)
    }

    /// [`wait`](Self::wait), giving up (`None`) after `timeout`. A timeout too large for an
    /// `Instant` (`Duration::MAX`) waits for ever, as [`Chan::recv_timeout`] does.
    ///
    /// # Panics
    /// If there are no arms and the timeout is for ever.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Fired> {
        Waits::wait_timeout(self, timeout)
    }

    /// [`wait`](Self::wait), giving up (`None`) at `deadline`.
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<Fired> {
        Waits::wait_deadline(self, deadline)
    }

    /// Fills the scratch orders (see [`plan`]); everything that allocates happens here too,
    /// before any lock is taken.
    fn plan(&mut self) {
        let n = self.arms.len();
        self.poll_order.resize(n, 0);
        self.lock_order.resize(n, 0);
        let locks = plan(
            &self.arms,
            self.biased,
            &mut self.poll_order,
            &mut self.lock_order,
        );
        self.lock_order.truncate(locks);
    }

    /// Withdraws the async wait of a leaked [`AltFuture`], if any: its nodes are in our arms.
    fn cancel_leaked(&mut self) {
        if !self.pending.is_null() {
            // SAFETY: `pending` points into a pinned future that was neither dropped (its
            // drop clears the pointer) nor can be used again (it borrowed us mutably, and we
            // are being used): leaked, so its memory stays valid for ever.
            let ctx = unsafe { &*self.pending };
            self.cancel_async(ctx);
        }
    }

    /// Withdraws a queued async wait (the future's drop, or a leaked future's): aborts it
    /// under every lock, or, if an arm fired first, gives a received value back to its
    /// channel (as for a dropped `RecvFuture`); unlinks every node; waits until a claimer is
    /// done with the context; puts unsent values back in their places. Only then does it run
    /// user code (the wake-up of a receiver a value went back to, drops of displaced
    /// values), each piece caught, so that a panic there neither frees what the claimer
    /// still touches nor skips the rest (see `crate::unwind`).
    fn cancel_async(&mut self, ctx: &Party<L::Waiter>) {
        self.pending = std::ptr::null();
        let Alt {
            arms, lock_order, ..
        } = self;
        // The nodes point into this alt, whose memory may go once the drop returns, or
        // unwinds: a lock that panics is taken again.
        let mut caught = Caught::none();
        let mut locks = Locks::lock_insisting(arms, lock_order, &mut caught);
        let aborted = ctx.abort();
        let w = match ctx.selected() {
            Selected::Operation(i) if !aborted => {
                // The fired arm's node is unlinked and was written under its channel's lock.
                let (arms, held) = locks.arms();
                arms[i].give_back(held)
            }
            _ => None,
        };
        locks.dequeue_all();
        drop(locks);
        if !aborted {
            // The claimer may still be about to signal: it must be done with us first.
            while !ctx.task_signalled() {
                crate::sync::yield_now();
            }
        }
        finish_arms(arms);
        caught.wake(w);
        release_arms(arms, &mut caught);
        caught.finish();
    }
}

impl<L: Strategy> Waits for Alt<'_, L> {
    fn arm_count(&self) -> usize {
        self.arms.len()
    }

    fn run(&mut self, mode: Mode) -> Option<Fired> {
        self.cancel_leaked();
        self.plan();
        run(&mut self.arms, &self.poll_order, &self.lock_order, mode)
    }
}

/// Fills the scratch orders for `arms` (each as long as `arms`): `poll_order` with the arms in
/// the order to poll them, shuffled unless `biased`, and the front of `lock_order` with one arm
/// per distinct lock, in lock order (see [`Arm::lock_key`]); returns how many that is.
/// Everything that draws random numbers happens here, before any lock is taken.
fn plan<'a, L: Strategy, A: ArmPtr<'a, L>>(
    arms: &[A],
    biased: bool,
    poll_order: &mut [usize],
    lock_order: &mut [usize],
) -> usize {
    for (i, slot) in poll_order.iter_mut().enumerate() {
        *slot = i;
    }
    if !biased {
        crate::rng::shuffle(poll_order);
    }
    let key = |i: &usize| arms[*i].lock_key();
    for (i, slot) in lock_order.iter_mut().enumerate() {
        *slot = i;
    }
    lock_order.sort_by_key(key);
    // Keeps the first arm of every run with one key (as `Vec::dedup_by_key`).
    let mut locks = 0;
    for j in 0..lock_order.len() {
        let i = lock_order[j];
        if locks == 0 || key(&lock_order[locks - 1]) != key(&i) {
            lock_order[locks] = i;
            locks += 1;
        }
    }
    locks
}

/// One wait on `arms`, planned (`poll_order`, and `lock_order` one arm per distinct lock):
/// lock every channel, complete the first ready arm, or else (unless `mode` says not to wait)
/// queue a node on every channel and sleep until one fires, the deadline passes, or the
/// waiter unwinds.
fn run<'a, L: Strategy, A: ArmPtr<'a, L>>(
    arms: &mut [A],
    poll_order: &[usize],
    lock_order: &[usize],
    mode: Mode,
) -> Option<Fired> {
    let mut locks = Locks::lock(arms, lock_order);
    if let Some((fired, w)) = locks.poll(poll_order) {
        drop(locks);
        complete_ready(&mut *arms[fired.index], w);
        return Some(fired);
    }
    let Mode::Until(deadline) = mode else {
        return None;
    };

    let (held_arms, held) = locks.arms();
    let ctx = Party::new(held_arms[0].lock().waiter());
    for &i in poll_order.iter() {
        // SAFETY: the arms stay in place (boxed, or borrowed for the whole wait) until
        // dequeued below (or by the guard), and `ctx` outlives that too.
        unsafe { held_arms[i].enqueue(held, &ctx, i) };
    }
    drop(locks);
    let guard = Abandon::arm(&ctx, |ctx| {
        ctx.abort();
        dequeue_all(arms, lock_order);
    });
    let signalled = ctx.block(deadline);
    // The abort finds the wait ended already; the dequeue takes every channel's lock, and a
    // lock that unwinds there must leave the guard armed, or nodes would stay linked to a
    // frame that is gone.
    guard.finish();
    finish_arms(arms);
    let mut caught = Caught::none();
    release_arms(arms, &mut caught);
    caught.finish();
    match ctx.selected() {
        _ if !signalled => None,
        selected => Fired::from_selected(selected),
    }
}

/// An arm that fired at once, its locks released: the value to the caller's place first,
/// then the partner's wake-up and the drop of what the place held, user code that runs
/// caught, both of it, after the value is delivered.
fn complete_ready<L: Strategy>(arm: &mut (dyn Arm<L> + '_), w: Option<Wake<L::Waiter>>) {
    arm.finish();
    let mut caught = Caught::none();
    caught.wake(w);
    caught.run(|| arm.release());
    caught.finish();
}

/// After a wait, every node unlinked: values to (and unsent values back to) the arms'
/// places. No user code.
fn finish_arms<'a, L: Strategy, A: ArmPtr<'a, L>>(arms: &mut [A]) {
    for arm in arms.iter_mut() {
        arm.finish();
    }
}

/// Drops what [`finish_arms`] displaced: user code, every arm's caught into `caught`.
fn release_arms<'a, L: Strategy, A: ArmPtr<'a, L>>(arms: &mut [A], caught: &mut Caught) {
    for arm in arms.iter_mut() {
        caught.run(|| arm.release());
    }
}

/// Takes every lock and unlinks every arm's node that is still queued.
fn dequeue_all<'a, L: Strategy, A: ArmPtr<'a, L>>(arms: &mut [A], lock_order: &[usize]) {
    Locks::lock(arms, lock_order).dequeue_all();
}

impl<L: Strategy> Drop for Alt<'_, L> {
    fn drop(&mut self) {
        self.cancel_leaked();
    }
}

impl<L: Strategy> std::fmt::Debug for Alt<'_, L> {
    /// The number of arms, whether the alt is biased, and the lock strategy.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alt")
            .field("arms", &self.arms.len())
            .field("biased", &self.biased)
            .field("lock", &L::NAME)
            .finish_non_exhaustive()
    }
}
