//! Our three lock strategies next to `std`, `parking_lot` and `spin` mutexes.
//!
//! - `locks/uncontended`: one `*m.lock() += 1` on one thread; time per lock + unlock.
//! - `locks/contended/T=t`: `t` threads each do `K` increments of one shared counter; time for
//!   all `t × K` (criterion's throughput column gives increments per second).
//! - `locks/chan/O=o,M=m`: the same locks guarding our channel (`chan::Chan<u64, S>`), `m`
//!   senders and one receiver, every value checked: ours, and the peers' mutexes as
//!   strategies (`std`: `locks::StdLock`, `parking_lot`: `locks::Raw<parking_lot::RawMutex>`),
//!   waiting as `adaptive` does, so that only the lock differs. Time per message.
//! - `dispatch`: what choosing the strategy at run time costs. The adaptive lock as its own
//!   type and as a `DynLock` made from the `adaptive` backend: an uncontended lock + unlock,
//!   and a send-receive pair on one thread through a channel of 10 buffers.
//! - `condvar/ping_pong`: two threads take turns through a mutex and a condvar; time per
//!   round trip (two waits, two notifies).
//! - `condvar/notify_all/N=n`: one `notify_all` to `n` waiters, and the wait until all have
//!   woken and acknowledged it; time per broadcast.
//! - `rwlock/read_mostly/T=t`: `t` threads each do `K` operations on one value, a write in
//!   16, otherwise a read; time for all `t × K`.
//!
//! The last three run on ours (`spin`, `sem`, `adaptive`), `std` and `parking_lot`.

#[allow(dead_code)] // each suite uses part of the shared workloads
#[path = "../common/mod.rs"]
mod common;

use chantest::workload::{self, Shape};
use common::mutex::{contended, for_each_lock, Counter, LockVisitor};
use common::sync::{broadcast, for_each_sync, ping_pong, read_mostly, Condvars, Rw, SyncVisitor};
use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput,
};
use locks::{Adaptive, Backend, DynLock, Raw, SemLock, SpinYield, StdLock, Strategy};
use std::time::Duration;

/// Increments per thread per iteration of the contended benchmark.
const K: u64 = 1000;
/// Thread counts of the contended benchmark.
const THREADS: [usize; 5] = [1, 2, 4, 8, 16];

struct Uncontended<'a, 'c>(&'a mut BenchmarkGroup<'c, WallTime>);

impl LockVisitor for Uncontended<'_, '_> {
    fn visit<C: Counter>(&mut self, name: &str) {
        let m = C::new();
        self.0.bench_function(name, |b| b.iter(|| m.incr()));
    }
}

struct Contended<'a, 'c>(&'a mut BenchmarkGroup<'c, WallTime>, usize);

impl LockVisitor for Contended<'_, '_> {
    fn visit<C: Counter>(&mut self, name: &str) {
        let threads = self.1;
        self.0.bench_function(name, |b| {
            b.iter_custom(|rounds| contended::<C>(threads, K, rounds))
        });
    }
}

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("locks/uncontended");
    g.throughput(Throughput::Elements(1));
    for_each_lock(&mut Uncontended(&mut g));
    g.finish();
}

fn contention(c: &mut Criterion) {
    for t in THREADS {
        let mut g = c.benchmark_group(format!("locks/contended/T={t}"));
        g.throughput(Throughput::Elements(t as u64 * K));
        for_each_lock(&mut Contended(&mut g, t));
        g.finish();
    }
}

/// Values each sender sends per round of the channel benchmark.
const PER_SENDER: u64 = 1000;

/// A run of the channel benchmark with one lock: [`chan_with`] for a strategy.
type Lane = fn(Shape) -> Duration;

/// chantest's workload on a fresh `Chan<u64, S>` with default parameters.
fn chan_with<S: Strategy>(shape: Shape) -> Duration {
    workload::ours::<S>(Default::default(), shape)
}

fn chan_locks(c: &mut Criterion) {
    for (nbuf, senders) in [(10, 1), (10, 8)] {
        // Criterion's iterations are rounds of `PER_SENDER`, run as one longer run.
        let shape = |rounds| Shape::new(nbuf, senders, PER_SENDER * rounds);
        let mut g = c.benchmark_group(format!("locks/chan/O={nbuf},M={senders}"));
        g.throughput(Throughput::Elements(shape(1).messages()));
        let lanes: [(&str, Lane); 5] = [
            ("spin", chan_with::<SpinYield>),
            ("sem", chan_with::<SemLock>),
            ("adaptive", chan_with::<Adaptive>),
            ("std", chan_with::<StdLock>),
            ("parking_lot", chan_with::<Raw<parking_lot::RawMutex>>),
        ];
        for (name, run) in lanes {
            g.bench_function(name, |b| b.iter_custom(|rounds| run(shape(rounds))));
        }
        g.finish();
    }
}

fn dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("dispatch");
    let concrete = locks::Mutex::<Adaptive, u64>::new(0);
    let chosen = Backend::DEFAULT.mutex(0u64);
    g.bench_function("lock_unlock/adaptive", |b| {
        b.iter(|| *black_box(&concrete).lock() += 1)
    });
    g.bench_function("lock_unlock/dyn-adaptive", |b| {
        b.iter(|| *black_box(&chosen).lock() += 1)
    });
    let concrete = chan::Chan::<u64, Adaptive>::new(10);
    let chosen = chan::Chan::<u64, DynLock>::with_params(10, Backend::DEFAULT);
    g.bench_function("send_recv_O=10/adaptive", |b| {
        b.iter(|| {
            concrete.send(black_box(1)).unwrap();
            black_box(concrete.recv().unwrap())
        })
    });
    g.bench_function("send_recv_O=10/dyn-adaptive", |b| {
        b.iter(|| {
            chosen.send(black_box(1)).unwrap();
            black_box(chosen.recv().unwrap())
        })
    });
    g.finish();
}

/// Waiters of the `notify_all` benchmark.
const WAITERS: [usize; 2] = [4, 16];

/// Which of the family's workloads a [`Family`] runs.
#[derive(Clone, Copy)]
enum Workload {
    PingPong,
    Broadcast(usize),
    ReadMostly(usize),
}

struct Family<'a, 'c>(&'a mut BenchmarkGroup<'c, WallTime>, Workload);

impl SyncVisitor for Family<'_, '_> {
    fn visit<C: Condvars, R: Rw>(&mut self, name: &str) {
        let w = self.1;
        self.0.bench_function(name, |b| {
            b.iter_custom(|rounds| match w {
                Workload::PingPong => ping_pong::<C>(rounds),
                Workload::Broadcast(n) => broadcast::<C>(n, rounds),
                Workload::ReadMostly(t) => read_mostly::<R>(t, K, rounds),
            })
        });
    }
}

fn family(c: &mut Criterion) {
    let mut g = c.benchmark_group("condvar/ping_pong");
    g.throughput(Throughput::Elements(1));
    for_each_sync(&mut Family(&mut g, Workload::PingPong));
    g.finish();
    for n in WAITERS {
        let mut g = c.benchmark_group(format!("condvar/notify_all/N={n}"));
        g.throughput(Throughput::Elements(1));
        for_each_sync(&mut Family(&mut g, Workload::Broadcast(n)));
        g.finish();
    }
    for t in THREADS {
        let mut g = c.benchmark_group(format!("rwlock/read_mostly/T={t}"));
        g.throughput(Throughput::Elements(t as u64 * K));
        for_each_sync(&mut Family(&mut g, Workload::ReadMostly(t)));
        g.finish();
    }
}

criterion_group!(
    benches,
    uncontended,
    contention,
    chan_locks,
    dispatch,
    family
);
criterion_main!(benches);
