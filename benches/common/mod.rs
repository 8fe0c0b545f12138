//! Workloads shared by the criterion suites and the smoke tests, each written once and run on
//! our locks and channels and on their peers. The channel workload is not here: it is
//! chantest's ([`chantest::workload`]), with its peers, so that the suites measure what the
//! tables of `docs/results.md` do.
//!
//! It is included by path (`#[path = "../common/mod.rs"] mod common;`) rather than being the
//! crate's library, so that the peers stay dev-dependencies: nothing outside the benchmark
//! suite links them.
//!
//! - [`mutex`]: a counter behind a mutex, [`Counter`](mutex::Counter), implemented for our
//!   three strategies and for `std`, `parking_lot` and `spin`;
//!   [`for_each_lock`](mutex::for_each_lock) visits all six.
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

pub(crate) mod sync {
    //! The rest of the lock family: a mutex with two condvars, and a readers-writer lock, on
    //! our three strategies, `std` and `parking_lot`.
    //!
    //! - [`ping_pong`]: two threads take turns, each waiting on a condvar for the other's move.
    //! - [`broadcast`]: one thread wakes `n` waiters with `notify_all` and waits until all have
    //!   seen it.
    //! - [`read_mostly`]: threads read a shared value, writing it once in 16 operations.

    use super::span;
    use std::sync::Barrier;
    use std::thread;
    use std::time::{Duration, Instant};

    /// What the condvar workloads share under the mutex.
    #[derive(Default)]
    pub(crate) struct State {
        turn: u64,
        generation: u64,
        acks: usize,
    }

    /// Whom a [`Condvars::step`] wakes, on which of the two condvars.
    pub(crate) enum Notify {
        Nobody,
        One(usize),
        All(usize),
    }

    /// A mutex guarding a [`State`], with two condvars.
    pub(crate) trait Condvars: Send + Sync + 'static {
        fn new() -> Self;
        /// Locks; waits on condvar `cv` while `cond` holds; runs `then` and notifies as it says.
        fn step(
            &self,
            cv: usize,
            cond: impl FnMut(&mut State) -> bool,
            then: impl FnOnce(&mut State) -> Notify,
        );
    }

    /// Ours (any strategy) and parking_lot's: the same calls.
    macro_rules! lock_api_condvars {
        ($(<$($g:ident: $b:path),*> $t:ty, $cv:ty;)*) => {$(
            impl<$($g: $b),*> Condvars for $t {
                fn new() -> Self {
                    (Default::default(), [<$cv>::new(), <$cv>::new()])
                }
                #[inline]
                fn step(
                    &self,
                    cv: usize,
                    cond: impl FnMut(&mut State) -> bool,
                    then: impl FnOnce(&mut State) -> Notify,
                ) {
                    let mut g = self.0.lock();
                    self.1[cv].wait_while(&mut g, cond);
                    match then(&mut g) {
                        Notify::Nobody => {}
                        Notify::One(c) => drop(self.1[c].notify_one()),
                        Notify::All(c) => drop(self.1[c].notify_all()),
                    }
                }
            }
        )*};
    }

    lock_api_condvars! {
        <S: OurLock> (locks::Mutex<S, State>, [locks::Condvar<S>; 2]), locks::Condvar<S>;
        <> (parking_lot::Mutex<State>, [parking_lot::Condvar; 2]), parking_lot::Condvar;
    }

    /// A strategy of ours as the benchmarks use it.
    pub(crate) trait OurLock: locks::Strategy + lock_api::RawMutex {}
    impl<S: locks::Strategy + lock_api::RawMutex> OurLock for S {}

    impl Condvars for (std::sync::Mutex<State>, [std::sync::Condvar; 2]) {
        fn new() -> Self {
            (Default::default(), Default::default())
        }
        #[inline]
        fn step(
            &self,
            cv: usize,
            cond: impl FnMut(&mut State) -> bool,
            then: impl FnOnce(&mut State) -> Notify,
        ) {
            let g = self.0.lock().unwrap();
            let mut g = self.1[cv].wait_while(g, cond).unwrap();
            match then(&mut g) {
                Notify::Nobody => {}
                Notify::One(c) => self.1[c].notify_one(),
                Notify::All(c) => self.1[c].notify_all(),
            }
        }
    }

    /// A `u64` behind a readers-writer lock.
    pub(crate) trait Rw: Send + Sync + 'static {
        fn new() -> Self;
        fn read(&self) -> u64;
        fn write(&self);
    }

    impl<R: lock_api::RawRwLock + Send + Sync + 'static> Rw for lock_api::RwLock<R, u64> {
        fn new() -> Self {
            lock_api::RwLock::new(0)
        }
        #[inline]
        fn read(&self) -> u64 {
            *lock_api::RwLock::read(self)
        }
        #[inline]
        fn write(&self) {
            *lock_api::RwLock::write(self) += 1;
        }
    }

    impl Rw for std::sync::RwLock<u64> {
        fn new() -> Self {
            std::sync::RwLock::new(0)
        }
        #[inline]
        fn read(&self) -> u64 {
            *std::sync::RwLock::read(self).unwrap()
        }
        #[inline]
        fn write(&self) {
            *std::sync::RwLock::write(self).unwrap() += 1;
        }
    }

    /// Code to run once per implementation, by [`for_each_sync`].
    pub(crate) trait SyncVisitor {
        fn visit<C: Condvars, R: Rw>(&mut self, name: &str);
    }

    /// Calls `v` with ours (`spin`, `sem`, `adaptive`), then `std` and `parking_lot`.
    pub(crate) fn for_each_sync(v: &mut impl SyncVisitor) {
        type Ours<S> = (locks::Mutex<S, State>, [locks::Condvar<S>; 2]);
        v.visit::<Ours<locks::SpinYield>, locks::RwLock<locks::SpinYield, u64>>("spin");
        v.visit::<Ours<locks::SemLock>, locks::RwLock<locks::SemLock, u64>>("sem");
        v.visit::<Ours<locks::Adaptive>, locks::RwLock<locks::Adaptive, u64>>("adaptive");
        v.visit::<(std::sync::Mutex<State>, [std::sync::Condvar; 2]), std::sync::RwLock<u64>>(
            "std",
        );
        v.visit::<(parking_lot::Mutex<State>, [parking_lot::Condvar; 2]), parking_lot::RwLock<u64>>(
            "parking_lot",
        );
    }

    /// Two threads, `rounds` round trips: each waits for its turn on condvar 0 and passes it.
    pub(crate) fn ping_pong<C: Condvars>(rounds: u64) -> Duration {
        let c = C::new();
        let barrier = Barrier::new(2);
        let times: Vec<(Instant, Instant)> = thread::scope(|s| {
            let handles: Vec<_> = (0..2u64)
                .map(|me| {
                    let (c, barrier) = (&c, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let start = Instant::now();
                        for i in 0..rounds {
                            let mine = 2 * i + me;
                            c.step(
                                0,
                                |s| s.turn != mine,
                                |s| {
                                    s.turn += 1;
                                    Notify::One(0)
                                },
                            );
                        }
                        (start, Instant::now())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        span(times.iter().map(|t| t.0), times.iter().map(|t| t.1))
    }

    /// `rounds` broadcasts to `n` waiters: a new generation and `notify_all` on condvar 0,
    /// then a wait on condvar 1 until every waiter has acknowledged it.
    pub(crate) fn broadcast<C: Condvars>(n: usize, rounds: u64) -> Duration {
        let c = C::new();
        let barrier = Barrier::new(n + 1);
        thread::scope(|s| {
            for _ in 0..n {
                let (c, barrier) = (&c, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for g in 1..=rounds {
                        c.step(
                            0,
                            |s| s.generation < g,
                            |s| {
                                s.acks += 1;
                                match s.acks == n {
                                    true => Notify::One(1),
                                    false => Notify::Nobody,
                                }
                            },
                        );
                    }
                });
            }
            barrier.wait();
            let start = Instant::now();
            for _ in 0..rounds {
                c.step(
                    1,
                    |_| false,
                    |s| {
                        s.acks = 0;
                        s.generation += 1;
                        Notify::All(0)
                    },
                );
                c.step(1, |s| s.acks < n, |_| Notify::Nobody);
            }
            start.elapsed()
        })
    }

    /// `threads` threads each make `rounds × per_thread` operations on one value: a write
    /// (an increment) once in 16, otherwise a read.
    pub(crate) fn read_mostly<R: Rw>(threads: usize, per_thread: u64, rounds: u64) -> Duration {
        let rw = R::new();
        let total = per_thread * rounds;
        let barrier = Barrier::new(threads);
        let times: Vec<(Instant, Instant, u64)> = thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        let start = Instant::now();
                        let (mut writes, mut sum) = (0u64, 0u64);
                        for i in 0..total {
                            if i % 16 == 15 {
                                rw.write();
                                writes += 1;
                            } else {
                                sum = sum.wrapping_add(rw.read());
                            }
                        }
                        std::hint::black_box(sum);
                        (start, Instant::now(), writes)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let writes: u64 = times.iter().map(|t| t.2).sum();
        assert_eq!(rw.read(), writes, "lost writes");
        span(times.iter().map(|t| t.0), times.iter().map(|t| t.1))
    }
}
