//! The chantest workload: M senders × N values → one receiver through a channel of O buffers,
//! on our channels (one per lock strategy) next to crossbeam, std, flume and kanal.
//!
//! One group per (O, M), `chan/O=o/M=m`, holding one function per implementation; one
//! iteration is the receiver taking all M × N values, so the throughput column is messages per
//! second and time / (M × N) is the cost of one message.

#[allow(dead_code)] // each suite uses part of the shared workloads
#[path = "../common/mod.rs"]
mod common;

use common::mpsc::{Peer, Spec};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// N: values each sender sends per iteration.
const N: u64 = 2048;
/// O: channel buffers (0 is a rendezvous channel).
const BUFFERS: [usize; 4] = [0, 1, 10, 100];
/// M: sending threads.
const SENDERS: [usize; 3] = [1, 2, 8];

fn mpsc(c: &mut Criterion) {
    for nbuf in BUFFERS {
        for senders in SENDERS {
            let spec = Spec {
                nbuf,
                senders,
                per_sender: N,
            };
            let mut g = c.benchmark_group(format!("chan/O={nbuf}/M={senders}"));
            g.throughput(Throughput::Elements(spec.per_round()));
            for peer in Peer::all() {
                g.bench_function(peer.name(), |b| {
                    b.iter_custom(|rounds| peer.run(spec, rounds))
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, mpsc);
criterion_main!(benches);
