//! Workloads shared by the criterion suites and the smoke tests, each written once and run on
//! our locks and channels and on their peers. (chantest runs the channel workload too, with
//! its own checks, clocks and verdicts, for the README's tables: `benches/grid.sh`.)
//!
//! It is included by path (`#[path = "../common/mod.rs"] mod common;`) rather than being the
//! crate's library, so that the peers stay dev-dependencies: nothing outside the benchmark
//! suite links them.
//!
//! - [`mutex`]: a counter behind a mutex, [`Counter`](mutex::Counter), implemented for our
//!   three strategies and for `std`, `parking_lot` and `spin`;
//!   [`for_each_lock`](mutex::for_each_lock) visits all six.
//! - [`mpsc`]: erik quanstrom's channel test (M senders × N values → one receiver, O buffers),
//!   on our channels and on `crossbeam-channel`, `std::sync::mpsc`, `flume` and `kanal`, each
//!   a [`Peer`](mpsc::Peer).
//! - [`select`]: receiving from whichever of k channels has a value, with our [`chan::Alt`] and
//!   with `crossbeam_channel::Select`.
//!
//! Every multi-threaded workload takes a `rounds` count, the `iters` of criterion's
//! `iter_custom`: its threads are spawned once per sample, do `rounds` iterations' worth of
//! work, and only the time from a common start (a barrier) to the last value is reported, so
//! thread creation is not part of the measurement.

use std::time::Instant;

/// A small, fast pseudo-random generator (xorshift64*), so that picking a channel at random
/// costs next to nothing next to the operation measured.
#[derive(Clone, Debug)]
pub(crate) struct XorShift(u64);

impl XorShift {
    /// A generator started from `seed` (zero is replaced, as xorshift would stay at zero).
    pub(crate) fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }

    /// The next value, uniform in `0..n` (up to a negligible bias).
    #[inline]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as usize) % n
    }
}

/// The latest of `ends` less the earliest of `starts`: how long a run took from its first
/// thread's start to its last thread's finish. Every thread reads its own start clock when it
/// leaves the barrier, as the thread that would read "the" start may be scheduled last.
fn span(
    starts: impl IntoIterator<Item = Instant>,
    ends: impl IntoIterator<Item = Instant>,
) -> std::time::Duration {
    let start = starts.into_iter().min().expect("a start");
    let end = ends.into_iter().max().expect("an end");
    end.saturating_duration_since(start)
}

pub(crate) mod mutex {
    //! A `u64` counter behind each of the six mutexes.

    use super::span;
    use std::sync::Barrier;
    use std::thread;
    use std::time::{Duration, Instant};

    /// A counter that every thread may increment under a lock.
    pub(crate) trait Counter: Send + Sync + 'static {
        /// A counter at zero.
        fn new() -> Self;
        /// Takes the lock, adds one, releases the lock: `*m.lock() += 1`.
        fn incr(&self);
        /// The count.
        fn get(&self) -> u64;
    }

    /// Our locks and `parking_lot`'s, all `lock_api` mutexes.
    impl<R: lock_api::RawMutex + Send + Sync + 'static> Counter for lock_api::Mutex<R, u64> {
        fn new() -> Self {
            lock_api::Mutex::new(0)
        }
        #[inline]
        fn incr(&self) {
            *self.lock() += 1;
        }
        fn get(&self) -> u64 {
            *self.lock()
        }
    }

    impl Counter for std::sync::Mutex<u64> {
        fn new() -> Self {
            std::sync::Mutex::new(0)
        }
        #[inline]
        fn incr(&self) {
            *self.lock().unwrap() += 1;
        }
        fn get(&self) -> u64 {
            *self.lock().unwrap()
        }
    }

    impl Counter for spin::Mutex<u64> {
        fn new() -> Self {
            spin::Mutex::new(0)
        }
        #[inline]
        fn incr(&self) {
            *self.lock() += 1;
        }
        fn get(&self) -> u64 {
            *self.lock()
        }
    }

    /// Code to run once per lock type, by [`for_each_lock`].
    pub(crate) trait LockVisitor {
        /// Runs with the counter type `C`, which reports show as `name`.
        fn visit<C: Counter>(&mut self, name: &str);
    }

    /// Calls `v` with each lock, ours first: `spin`, `sem`, `adaptive` (our [`locks::SpinYield`],
    /// [`locks::SemLock`], [`locks::Adaptive`]), then `std`, `parking_lot` and `spin-crate`
    /// (`spin::Mutex`, a pure spin lock).
    pub(crate) fn for_each_lock(v: &mut impl LockVisitor) {
        v.visit::<locks::Mutex<locks::SpinYield, u64>>("spin");
        v.visit::<locks::Mutex<locks::SemLock, u64>>("sem");
        v.visit::<locks::Mutex<locks::Adaptive, u64>>("adaptive");
        v.visit::<std::sync::Mutex<u64>>("std");
        v.visit::<parking_lot::Mutex<u64>>("parking_lot");
        v.visit::<spin::Mutex<u64>>("spin-crate");
    }

    /// `threads` threads each increment one shared counter `rounds × per_thread` times; returns
    /// the time from their common start to the last one's finish, having checked the count.
    pub(crate) fn contended<C: Counter>(threads: usize, per_thread: u64, rounds: u64) -> Duration {
        let counter = C::new();
        let total = per_thread * rounds;
        let barrier = Barrier::new(threads);
        let times: Vec<(Instant, Instant)> = thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        let start = Instant::now();
                        for _ in 0..total {
                            counter.incr();
                        }
                        (start, Instant::now())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(counter.get(), threads as u64 * total, "lost increments");
        span(times.iter().map(|t| t.0), times.iter().map(|t| t.1))
    }
}

pub(crate) mod mpsc {
    //! M senders × N values → one receiver, through a channel of O buffers.

    use super::span;
    use chan::Chan;
    use locks::{Backend, Strategy, Visit};
    use std::sync::Barrier;
    use std::thread;
    use std::time::{Duration, Instant};

    /// Bits of a value holding the sender's sequence number; the sender's id sits above them.
    const SEQ_BITS: u32 = 40;

    /// The sending half of a channel of `u64`s, as the workload uses it.
    pub(crate) trait Tx: Clone + Send + 'static {
        /// Sends `v`, waiting for room; panics if the channel is gone.
        fn put(&self, v: u64);
    }

    /// The receiving half of a channel of `u64`s, as the workload uses it.
    pub(crate) trait Rx {
        /// Receives a value, waiting for one; panics if the channel is gone.
        fn take(&self) -> u64;
    }

    /// Every implementation spells sending and receiving `send(v)` and `recv()`, each
    /// returning a `Result`; only the types differ.
    macro_rules! halves {
        ($(<$($g:ident: $b:path),*> $tx:ty, $rx:ty;)*) => {$(
            impl<$($g: $b),*> Tx for $tx {
                #[inline]
                fn put(&self, v: u64) {
                    self.send(v).expect("channel closed");
                }
            }
            impl<$($g: $b),*> Rx for $rx {
                #[inline]
                fn take(&self) -> u64 {
                    self.recv().expect("channel closed")
                }
            }
        )*};
    }

    halves! {
        <L: Strategy> Chan<u64, L>, Chan<u64, L>;
        <> crossbeam_channel::Sender<u64>, crossbeam_channel::Receiver<u64>;
        <> std::sync::mpsc::SyncSender<u64>, std::sync::mpsc::Receiver<u64>;
        <> flume::Sender<u64>, flume::Receiver<u64>;
        <> kanal::Sender<u64>, kanal::Receiver<u64>;
    }

    /// The shape of one run.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Spec {
        /// O: the channel's buffers (0: rendezvous).
        pub nbuf: usize,
        /// M: sending threads.
        pub senders: usize,
        /// N: values each sender sends per round.
        pub per_sender: u64,
    }

    impl Spec {
        /// Values the receiver takes per round: M × N.
        pub(crate) fn per_round(&self) -> u64 {
            self.senders as u64 * self.per_sender
        }
    }

    /// A channel implementation, ours (with one of our lock strategies) or a peer's.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Peer {
        /// [`chan::Chan`] with the backend's lock strategy.
        Ours(Backend),
        /// `crossbeam_channel::bounded`.
        Crossbeam,
        /// `std::sync::mpsc::sync_channel`.
        Std,
        /// `flume::bounded`.
        Flume,
        /// `kanal::bounded`.
        Kanal,
    }

    impl Peer {
        /// Ours with every backend (in [`Backend::ALL`]'s order), then the peers.
        pub(crate) fn all() -> Vec<Peer> {
            Backend::ALL
                .into_iter()
                .map(Peer::Ours)
                .chain([Peer::Crossbeam, Peer::Std, Peer::Flume, Peer::Kanal])
                .collect()
        }

        /// The name reports show: the backend's for ours (`spin`, `sem`, `adaptive`), else the
        /// crate's (`crossbeam`, `std`, `flume`, `kanal`).
        pub(crate) fn name(&self) -> &'static str {
            match self {
                Peer::Ours(b) => b.name(),
                Peer::Crossbeam => "crossbeam",
                Peer::Std => "std",
                Peer::Flume => "flume",
                Peer::Kanal => "kanal",
            }
        }

        /// Runs `rounds` rounds of `spec` on a fresh channel of this kind: every sender sends
        /// `rounds × N` values, the calling thread receives all of them and checks that each
        /// sender's values arrive complete and in order. Returns the time from the common
        /// start to the last value's arrival.
        pub(crate) fn run(&self, spec: Spec, rounds: u64) -> Duration {
            let n = spec.nbuf;
            match self {
                Peer::Ours(b) => b.visit(OursRun(spec, rounds)),
                Peer::Crossbeam => {
                    let (tx, rx) = crossbeam_channel::bounded(n);
                    run_on(tx, rx, spec, rounds)
                }
                Peer::Std => {
                    let (tx, rx) = std::sync::mpsc::sync_channel(n);
                    run_on(tx, rx, spec, rounds)
                }
                Peer::Flume => {
                    let (tx, rx) = flume::bounded(n);
                    run_on(tx, rx, spec, rounds)
                }
                Peer::Kanal => {
                    let (tx, rx) = kanal::bounded(n);
                    run_on(tx, rx, spec, rounds)
                }
            }
        }
    }

    struct OursRun(Spec, u64);

    impl Visit for OursRun {
        type Output = Duration;
        fn visit<S: Strategy>(self, params: S::Params) -> Duration {
            let c = Chan::<u64, S>::with_params(self.0.nbuf, params);
            run_on(c.clone(), c, self.0, self.1)
        }
    }

    /// The workload on one channel given as its two halves.
    pub(crate) fn run_on(tx: impl Tx, rx: impl Rx, spec: Spec, rounds: u64) -> Duration {
        let per_sender = spec.per_sender * rounds;
        assert!(per_sender < 1 << SEQ_BITS, "too many values per sender");
        let barrier = Barrier::new(spec.senders + 1);
        thread::scope(|s| {
            let senders: Vec<_> = (0..spec.senders as u64)
                .map(|id| {
                    let tx = tx.clone();
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        let start = Instant::now();
                        for seq in 0..per_sender {
                            tx.put(id << SEQ_BITS | seq);
                        }
                        start
                    })
                })
                .collect();
            drop(tx);
            let mut next = vec![0u64; spec.senders];
            barrier.wait();
            let start = Instant::now();
            for _ in 0..spec.per_round() * rounds {
                let v = rx.take();
                let (id, seq) = ((v >> SEQ_BITS) as usize, v & ((1 << SEQ_BITS) - 1));
                assert_eq!(seq, next[id], "sender {id}: value lost or out of order");
                next[id] += 1;
            }
            let end = Instant::now();
            let starts = senders.into_iter().map(|h| h.join().unwrap());
            span(starts.chain([start]), [end])
        })
    }
}

pub(crate) mod select {
    //! Receiving from whichever of k channels holds a value.

    use super::{span, XorShift};
    use chan::{Alt, Chan};
    use crossbeam_channel::{Receiver, Select, Sender};
    use locks::{Backend, Strategy, Visit};
    use std::thread;
    use std::time::{Duration, Instant};

    /// A select implementation: our [`Alt`] with one of our lock strategies, or crossbeam's.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Selector {
        /// [`chan::Alt`] over [`chan::Chan`]s with the backend's lock strategy.
        Ours(Backend),
        /// `crossbeam_channel::Select`.
        Crossbeam,
    }

    impl Selector {
        /// Ours with every backend, then crossbeam.
        pub(crate) fn all() -> Vec<Selector> {
            Backend::ALL
                .into_iter()
                .map(Selector::Ours)
                .chain([Selector::Crossbeam])
                .collect()
        }

        /// `spin`, `sem`, `adaptive` or `crossbeam`.
        pub(crate) fn name(&self) -> &'static str {
            match self {
                Selector::Ours(b) => b.name(),
                Selector::Crossbeam => "crossbeam",
            }
        }

        /// `rounds` times on one thread: send a value into one of `k` one-buffer channels,
        /// chosen at random, then select over all `k` and receive it. Returns the total time.
        pub(crate) fn ready(&self, k: usize, rounds: u64) -> Duration {
            match self {
                Selector::Ours(b) => b.visit(OursReady(k, rounds)),
                Selector::Crossbeam => {
                    let (txs, rxs): (Vec<_>, Vec<_>) =
                        (0..k).map(|_| crossbeam_channel::bounded(1)).unzip();
                    let mut rng = XorShift::new(k as u64);
                    let start = Instant::now();
                    for round in 0..rounds {
                        let i = rng.below(k);
                        txs[i].send(round).unwrap();
                        assert_eq!(crossbeam_select(&rxs), (i, round));
                    }
                    start.elapsed()
                }
            }
        }

        /// A producer thread sends `rounds × per_round` values, each to one of `k` channels of
        /// `nbuf` buffers chosen at random; the calling thread selects over the `k` channels
        /// until it has received them all. Returns the time from the common start to the last
        /// value's arrival.
        pub(crate) fn fed(&self, k: usize, nbuf: usize, per_round: u64, rounds: u64) -> Duration {
            let total = per_round * rounds;
            match self {
                Selector::Ours(b) => b.visit(OursFed { k, nbuf, total }),
                Selector::Crossbeam => {
                    let (txs, rxs): (Vec<_>, Vec<_>) =
                        (0..k).map(|_| crossbeam_channel::bounded(nbuf)).unzip();
                    fed_run(
                        txs,
                        |tx: &Sender<u64>, v| tx.send(v).unwrap(),
                        total,
                        || crossbeam_select(&rxs).1,
                    )
                }
            }
        }
    }

    /// Selects over `rxs`, receives from the channel that fired: (its index, the value).
    fn crossbeam_select(rxs: &[Receiver<u64>]) -> (usize, u64) {
        let mut sel = Select::new();
        for rx in rxs {
            sel.recv(rx);
        }
        let op = sel.select();
        let i = op.index();
        (i, op.recv(&rxs[i]).unwrap())
    }

    /// Alts over `chans`, receiving into one slot per channel: (the arm that fired, its value).
    fn ours_select<L: Strategy>(chans: &[Chan<u64, L>]) -> (usize, u64) {
        let mut slots = [None; 8];
        let mut alt = Alt::new();
        for (c, slot) in chans.iter().zip(slots.iter_mut()) {
            alt.recv(c, slot);
        }
        let fired = alt.wait();
        assert!(!fired.closed, "channel closed");
        drop(alt);
        (fired.index, slots[fired.index].take().unwrap())
    }

    /// The channels of a select: at most 8, the slots [`ours_select`] keeps on its stack.
    fn chans<L: Strategy>(k: usize, nbuf: usize, params: L::Params) -> Vec<Chan<u64, L>> {
        assert!((1..=8).contains(&k), "select over 1 to 8 channels");
        (0..k).map(|_| Chan::with_params(nbuf, params)).collect()
    }

    struct OursReady(usize, u64);

    impl Visit for OursReady {
        type Output = Duration;
        fn visit<S: Strategy>(self, params: S::Params) -> Duration {
            let OursReady(k, rounds) = self;
            let chans = chans::<S>(k, 1, params);
            let mut rng = XorShift::new(k as u64);
            let start = Instant::now();
            for round in 0..rounds {
                let i = rng.below(k);
                chans[i].send(round).unwrap();
                assert_eq!(ours_select(&chans), (i, round));
            }
            start.elapsed()
        }
    }

    struct OursFed {
        k: usize,
        nbuf: usize,
        total: u64,
    }

    impl Visit for OursFed {
        type Output = Duration;
        fn visit<S: Strategy>(self, params: S::Params) -> Duration {
            let chans = chans::<S>(self.k, self.nbuf, params);
            fed_run(
                chans.clone(),
                |c: &Chan<u64, S>, v| c.send(v).unwrap(),
                self.total,
                || ours_select(&chans).1,
            )
        }
    }

    /// A producer thread puts `0..total` on random channels of `txs` with `send`; this thread
    /// gets them with `select`. Values may overtake one another across channels, so the check
    /// is on their sum rather than their order.
    fn fed_run<T: Sync>(
        txs: Vec<T>,
        send: impl Fn(&T, u64) + Send,
        total: u64,
        mut select: impl FnMut() -> u64,
    ) -> Duration {
        let barrier = std::sync::Barrier::new(2);
        // The producer borrows the senders, so no channel is disconnected (and ready, for
        // crossbeam's select) until the receiver is done.
        let txs = &txs;
        thread::scope(|s| {
            let barrier = &barrier;
            let producer = s.spawn(move || {
                let mut rng = XorShift::new(txs.len() as u64);
                barrier.wait();
                let start = Instant::now();
                for v in 0..total {
                    send(&txs[rng.below(txs.len())], v);
                }
                start
            });
            barrier.wait();
            let start = Instant::now();
            let mut sum = 0u64;
            for _ in 0..total {
                sum = sum.wrapping_add(select());
            }
            let end = Instant::now();
            // 0 + 1 + … + (total - 1), modulo 2^64 as the wrapping sum is.
            let want = (u128::from(total) * u128::from(total.saturating_sub(1)) / 2) as u64;
            assert_eq!(sum, want, "values lost or duplicated");
            span([start, producer.join().unwrap()], [end])
        })
    }
}
