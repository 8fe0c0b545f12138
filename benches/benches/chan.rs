//! The chantest workload: M senders × N values → one receiver through a channel of O buffers,
//! on our channels (one per lock strategy) next to every peer chantest runs on threads
//! (crossbeam, std, flume, kanal).
//!
//! One group per (O, M), `chan/O=o/M=m`, holding one function per implementation; one
//! iteration is the receiver taking all M × N values, so the throughput column is messages per
//! second and time / (M × N) is the cost of one message. The runner and its check are
//! chantest's ([`chantest::workload`]), so a peer added there is measured here too.

use chantest::workload::{self, Peer, Shape};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use locks::Backend;

/// N: values each sender sends per iteration.
const N: u64 = 2048;
/// O: channel buffers (0 is a rendezvous channel).
const BUFFERS: [usize; 4] = [0, 1, 10, 100];
/// M: sending threads.
const SENDERS: [usize; 3] = [1, 2, 8];

fn mpsc(c: &mut Criterion) {
    for nbuf in BUFFERS {
        for senders in SENDERS {
            // Criterion's iterations are rounds of N per sender, run as one longer run.
            let shape = |rounds| Shape::new(nbuf, senders, N * rounds);
            let mut g = c.benchmark_group(format!("chan/O={nbuf}/M={senders}"));
            g.throughput(Throughput::Elements(shape(1).messages()));
            for b in Backend::ALL {
                g.bench_function(b.name(), |x| {
                    x.iter_custom(|rounds| workload::ours_with(&b, shape(rounds)))
                });
            }
            for p in Peer::all().filter(|p| !p.on_tasks()) {
                g.bench_function(p.name(), |x| x.iter_custom(|rounds| p.run(shape(rounds))));
            }
            g.finish();
        }
    }
}

criterion_group!(benches, mpsc);
criterion_main!(benches);
