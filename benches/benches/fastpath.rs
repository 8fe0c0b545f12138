//! What the non-blocking fast path costs: a poll that must fail (`nbrecv` on an empty channel,
//! `nbsend` on a full one), `len`, and a send-receive pair on one thread, ours next to
//! crossbeam's `try_recv`/`try_send`/`len`. The fast path reads a summary word after a SeqCst
//! fence (see `chan`'s `LEN` docs for why); these figures are what that fence costs.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use locks::{Adaptive, SemLock, SpinYield, Strategy};

fn ours<S: Strategy>(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("fastpath/{}", S::NAME));
    let empty = chan::Chan::<u64, S>::new(10);
    g.bench_function("nbrecv_empty", |b| b.iter(|| black_box(empty.nbrecv())));
    let full = chan::Chan::<u64, S>::new(1);
    full.send(0).unwrap();
    g.bench_function("nbsend_full", |b| b.iter(|| black_box(full.nbsend(1))));
    g.bench_function("len", |b| b.iter(|| black_box(full.len())));
    let c10 = chan::Chan::<u64, S>::new(10);
    g.bench_function("send_recv", |b| {
        b.iter(|| {
            c10.send(black_box(1)).unwrap();
            black_box(c10.recv().unwrap())
        })
    });
    g.finish();
}

fn crossbeam(c: &mut Criterion) {
    let mut g = c.benchmark_group("fastpath/crossbeam");
    let (_tx, empty) = crossbeam_channel::bounded::<u64>(10);
    g.bench_function("nbrecv_empty", |b| b.iter(|| black_box(empty.try_recv())));
    let (full, _rx) = crossbeam_channel::bounded::<u64>(1);
    full.send(0).unwrap();
    g.bench_function("nbsend_full", |b| b.iter(|| black_box(full.try_send(1))));
    g.bench_function("len", |b| b.iter(|| black_box(full.len())));
    let (tx, rx) = crossbeam_channel::bounded::<u64>(10);
    g.bench_function("send_recv", |b| {
        b.iter(|| {
            tx.send(black_box(1)).unwrap();
            black_box(rx.recv().unwrap())
        })
    });
    g.finish();
}

fn all(c: &mut Criterion) {
    ours::<SpinYield>(c);
    ours::<SemLock>(c);
    ours::<Adaptive>(c);
    crossbeam(c);
}

criterion_group!(benches, all);
criterion_main!(benches);
