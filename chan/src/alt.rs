//! `alt`: wait for whichever of several sends and receives can happen first.
//!
//! Like Plan 9's `Alt` array, each arm names a channel and a place for the value: a receive
//! arm an `&mut Option<T>` that the received value is written to, a send arm an
//! `&mut Option<T>` the value is taken from (and left in if it was not sent; a send arm with
//! `None` is disabled, Plan 9's `CHANNOP`). Channels of different element types mix freely;
//! they share the lock strategy `L`.
//!
//! The protocol is Go's `select` on Plan 9's channels: lock every channel involved in address
//! order (once each, so channels sharing Plan 9's global lock work), poll the arms, complete a
//! ready one chosen uniformly at random (or the first, when biased); otherwise queue a node on
//! every channel, all pointing at one context, release the locks and sleep. Whoever completes
//! one of our arms claims the context with a single compare-and-swap, so exactly one arm fires;
//! on waking we take the locks again and unlink the other nodes, returning unsent values to
//! their places.

use crate::chan::{wake, State, Wake};
use crate::waitq::{Context, Node, CANCELLED, CLOSED};
use crate::Chan;
use locks::{Adaptive, Strategy};
use rand::Rng;
use std::time::{Duration, Instant};

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
}

enum Poll {
    Ready,
    Closed,
    Pending,
}

/// One operation, type-erased so that arms over different element types share a list.
///
/// Every method but `finish` requires the caller to hold the arm's channel lock.
trait Arm<L: Strategy> {
    fn lock(&self) -> &L;
    unsafe fn poll(&mut self) -> Poll;
    /// Completes the operation now; `Err` if it turned out not to be ready after all.
    unsafe fn fire(&mut self) -> Result<Wake<L::Waiter>, ()>;
    unsafe fn enqueue(&mut self, ctx: &Context<L::Waiter>, token: usize);
    unsafe fn dequeue(&mut self);
    unsafe fn publish(&self);
    /// After the wait, with the node unlinked: move the value to where the caller sees it.
    fn finish(&mut self);
}

/// The part of an arm that does not depend on its direction: the channel, and the node that
/// queues the arm on it while the alt sleeps.
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

    /// # Safety
    /// The caller must hold the channel's lock.
    #[allow(clippy::mut_from_ref)]
    unsafe fn state(&self) -> &mut State<T, L::Waiter> {
        // SAFETY: forwarded.
        unsafe { self.chan.shared.state_locked() }
    }

    /// # Safety
    /// The caller must hold the channel's lock.
    unsafe fn publish(&self) {
        // SAFETY: forwarded.
        self.chan.shared.publish(unsafe { self.state() });
    }

    /// Moves what the node's slot holds to `place`.
    fn finish(&self, place: &mut Option<T>) {
        // SAFETY: unlinked (the caller dequeued it), so the slot is ours again.
        if let Some(v) = unsafe { self.node.take() } {
            *place = Some(v);
        }
    }
}

struct SendArm<'a, T, L: Strategy> {
    port: Port<'a, T, L>,
    src: &'a mut Option<T>,
}

struct RecvArm<'a, T, L: Strategy> {
    port: Port<'a, T, L>,
    dst: &'a mut Option<T>,
}

impl<T, L: Strategy> Arm<L> for SendArm<'_, T, L> {
    fn lock(&self) -> &L {
        self.port.lock()
    }

    unsafe fn poll(&mut self) -> Poll {
        // SAFETY: the caller holds the lock.
        let st = unsafe { self.port.state() };
        match () {
            _ if self.src.is_none() => Poll::Pending,
            _ if st.closed => Poll::Closed,
            _ if st.can_send() => Poll::Ready,
            _ => Poll::Pending,
        }
    }

    unsafe fn fire(&mut self) -> Result<Wake<L::Waiter>, ()> {
        let v = self.src.take().ok_or(())?;
        // SAFETY: the caller holds the lock.
        unsafe { self.port.state() }
            .try_send(v)
            .map_err(|v| *self.src = Some(v))
    }

    unsafe fn enqueue(&mut self, ctx: &Context<L::Waiter>, token: usize) {
        let Some(v) = self.src.take() else { return };
        // SAFETY: the caller holds the lock; the node is not linked, so its slot is ours, and
        // it lives in this boxed arm, which stays put until `dequeue`.
        unsafe {
            self.port.node.put(v);
            self.port.node.bind(ctx, token);
            self.port.state().sendq.push(&self.port.node);
        }
    }

    unsafe fn dequeue(&mut self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.port.state() }.sendq.remove(&self.port.node);
    }

    unsafe fn publish(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.port.publish() }
    }

    fn finish(&mut self) {
        // A value still in the node was not sent.
        self.port.finish(self.src);
    }
}

impl<T, L: Strategy> Arm<L> for RecvArm<'_, T, L> {
    fn lock(&self) -> &L {
        self.port.lock()
    }

    unsafe fn poll(&mut self) -> Poll {
        // SAFETY: the caller holds the lock.
        let st = unsafe { self.port.state() };
        match () {
            _ if st.can_recv() => Poll::Ready,
            _ if st.closed => Poll::Closed,
            _ => Poll::Pending,
        }
    }

    unsafe fn fire(&mut self) -> Result<Wake<L::Waiter>, ()> {
        // SAFETY: the caller holds the lock.
        let (v, w) = unsafe { self.port.state() }.try_recv().ok_or(())?;
        *self.dst = Some(v);
        Ok(w)
    }

    unsafe fn enqueue(&mut self, ctx: &Context<L::Waiter>, token: usize) {
        self.port.node.bind(ctx, token);
        // SAFETY: as for `SendArm::enqueue`.
        unsafe { self.port.state().recvq.push(&self.port.node) };
    }

    unsafe fn dequeue(&mut self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.port.state() }.recvq.remove(&self.port.node);
    }

    unsafe fn publish(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.port.publish() }
    }

    fn finish(&mut self) {
        // A sender may have filled the node.
        self.port.finish(self.dst);
    }
}

/// How long [`Alt`] may wait.
#[derive(Clone, Copy)]
enum Mode {
    NonBlocking,
    Until(Option<Instant>),
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
        }
    }

    /// Chooses the first ready arm, in the order they were added, instead of a random one.
    pub fn biased(mut self) -> Self {
        self.biased = true;
        self
    }

    /// Adds a receive from `chan` whose value lands in `dst`; returns the arm's index.
    pub fn recv<T: 'a>(&mut self, chan: &'a Chan<T, L>, dst: &'a mut Option<T>) -> usize {
        self.arms.push(Box::new(RecvArm {
            port: Port::new(chan),
            dst,
        }));
        self.arms.len() - 1
    }

    /// Adds a send on `chan` of the value in `src` (which keeps it unless this arm fires;
    /// `None` disables the arm); returns the arm's index.
    pub fn send<T: 'a>(&mut self, chan: &'a Chan<T, L>, src: &'a mut Option<T>) -> usize {
        self.arms.push(Box::new(SendArm {
            port: Port::new(chan),
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
        assert!(!self.arms.is_empty(), "alt with no arms would wait forever");
        self.run(Mode::Until(None)).expect("an untimed alt fires")
    }

    /// Fires an arm that is ready now, or returns `None` at once (Plan 9's `CHANNOBLK`).
    pub fn try_wait(&mut self) -> Option<Fired> {
        self.run(Mode::NonBlocking)
    }

    /// [`wait`](Self::wait), giving up (`None`) after `timeout`.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Fired> {
        self.wait_deadline(Instant::now() + timeout)
    }

    /// [`wait`](Self::wait), giving up (`None`) at `deadline`.
    pub fn wait_deadline(&mut self, deadline: Instant) -> Option<Fired> {
        if self.arms.is_empty() {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            return None;
        }
        self.run(Mode::Until(Some(deadline)))
    }

    /// Arm indices sorted by lock address, one per distinct lock.
    fn lock_order(&self) -> Vec<usize> {
        let addr = |i: &usize| self.arms[*i].lock() as *const L as usize;
        let mut order: Vec<usize> = (0..self.arms.len()).collect();
        order.sort_by_key(addr);
        order.dedup_by_key(|i| addr(i));
        order
    }

    fn lock_all(&self, order: &[usize]) {
        for &i in order {
            self.arms[i].lock().lock();
        }
    }

    fn unlock_all(&self, order: &[usize]) {
        for arm in &self.arms {
            // SAFETY: every arm's lock is held.
            unsafe { arm.publish() };
        }
        for &i in order.iter().rev() {
            // SAFETY: taken by `lock_all`.
            unsafe { self.arms[i].lock().unlock() };
        }
    }

    /// With every lock held: completes a ready arm, or reports a closed one.
    fn poll(&mut self) -> Option<(Fired, Wake<L::Waiter>)> {
        let mut rng = rand::rng();
        loop {
            let (mut ready, mut seen, mut closed) = (None, 0u32, None);
            for (i, arm) in self.arms.iter_mut().enumerate() {
                // SAFETY: every lock is held.
                match unsafe { arm.poll() } {
                    Poll::Ready => {
                        seen += 1;
                        // Reservoir sampling: each ready arm ends up chosen with chance 1/seen.
                        if rng.random_range(0..seen) == 0 {
                            ready = Some(i);
                        }
                        if self.biased {
                            break;
                        }
                    }
                    Poll::Closed => {
                        closed = closed.or(Some(i));
                    }
                    Poll::Pending => {}
                }
            }
            if let Some(index) = ready {
                // SAFETY: every lock is held.
                match unsafe { self.arms[index].fire() } {
                    Ok(w) => {
                        return Some((
                            Fired {
                                index,
                                closed: false,
                            },
                            w,
                        ))
                    }
                    // Its partner was taken by another channel meanwhile; look again.
                    Err(()) => continue,
                }
            }
            return closed.map(|index| {
                (
                    Fired {
                        index,
                        closed: true,
                    },
                    None,
                )
            });
        }
    }

    fn run(&mut self, mode: Mode) -> Option<Fired> {
        let order = self.lock_order();
        self.lock_all(&order);
        if let Some((fired, w)) = self.poll() {
            self.unlock_all(&order);
            wake(w);
            return Some(fired);
        }
        let Mode::Until(deadline) = mode else {
            self.unlock_all(&order);
            return None;
        };

        let ctx = Context::new(self.arms[0].lock().waiter());
        for (i, arm) in self.arms.iter_mut().enumerate() {
            // SAFETY: every lock is held; the arms stay boxed in place until dequeued below,
            // and `ctx` outlives that too.
            unsafe { arm.enqueue(&ctx, i + 1) };
        }
        self.unlock_all(&order);
        let signalled = ctx.block(deadline);

        self.lock_all(&order);
        for arm in self.arms.iter_mut() {
            // SAFETY: every lock is held.
            unsafe { arm.dequeue() };
        }
        self.unlock_all(&order);
        for arm in self.arms.iter_mut() {
            arm.finish();
        }
        let selected = ctx.selected();
        if !signalled || selected == CANCELLED {
            return None;
        }
        Some(Fired {
            index: (selected & !CLOSED) - 1,
            closed: selected & CLOSED != 0,
        })
    }
}
