//! Select over k channels: our `chan::Alt` (one per lock strategy) next to
//! `crossbeam_channel::Select`.
//!
//! - `alt/ready/k=k`: one thread sends a value into one of k one-buffer channels, chosen at
//!   random, then selects over all k and receives it; time per send + select.
//! - `alt/fed/k=k`: a producer thread feeds random channels of `FED_BUFFERS` buffers and the
//!   bench thread selects over all k until it has received `FED_N` values; time per value.

#[allow(dead_code)] // each suite uses part of the shared workloads
#[path = "../common/mod.rs"]
mod common;

use common::select::Selector;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// Channel counts.
const K: [usize; 2] = [2, 4];
/// Values the producer sends per iteration of `alt/fed`.
const FED_N: u64 = 1024;
/// Buffers of each channel in `alt/fed`.
const FED_BUFFERS: usize = 16;

fn ready(c: &mut Criterion) {
    for k in K {
        let mut g = c.benchmark_group(format!("alt/ready/k={k}"));
        g.throughput(Throughput::Elements(1));
        for sel in Selector::all() {
            g.bench_function(sel.name(), |b| b.iter_custom(|rounds| sel.ready(k, rounds)));
        }
        g.finish();
    }
}

fn fed(c: &mut Criterion) {
    for k in K {
        let mut g = c.benchmark_group(format!("alt/fed/k={k}"));
        g.throughput(Throughput::Elements(FED_N));
        for sel in Selector::all() {
            g.bench_function(sel.name(), |b| {
                b.iter_custom(|rounds| sel.fed(k, FED_BUFFERS, FED_N, rounds))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, ready, fed);
criterion_main!(benches);
