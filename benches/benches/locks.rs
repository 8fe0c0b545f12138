//! Our three lock strategies next to `std`, `parking_lot` and `spin` mutexes.
//!
//! - `locks/uncontended`: one `*m.lock() += 1` on one thread; time per lock + unlock.
//! - `locks/contended/T=t`: `t` threads each do `K` increments of one shared counter; time for
//!   all `t × K` (criterion's throughput column gives increments per second).

#[allow(dead_code)] // each suite uses part of the shared workloads
#[path = "../common/mod.rs"]
mod common;

use common::mutex::{contended, for_each_lock, Counter, LockVisitor};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

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

criterion_group!(benches, uncontended, contention);
criterion_main!(benches);
