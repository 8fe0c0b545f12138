//! Async send and receive between two tasks on one current-thread tokio runtime: the async
//! work's targets (rendezvous at or below 100 ns per message, O=10 at or below 50 ns), ours next to
//! flume, kanal, async-channel and tokio's mpsc (the last two have no rendezvous channel).
//! The whole grid (M sender tasks, both runtimes) is chantest's (`benches/async_grid.sh`).
//! `ours-stream-sink` is the same channel through `into_sink()`/`into_stream()` (`SinkExt::send`,
//! `StreamExt::next`): what the `Unpin` adapters' one heap-allocated wait costs beside the
//! futures that keep their wait in themselves.
//!
//! `cargo bench -p benches --bench async`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::{Duration, Instant};

const MSGS: u64 = 4096;

/// One sender task and one receiver task pass `MSGS` u64s; the time for all of them.
macro_rules! pair {
    ($rt:expr, $make:expr, |$tx:ident, $v:ident| $send:expr, |$rx:ident| $recv:expr) => {{
        $rt.block_on(async {
            #[allow(unused_mut)]
            let (tx, mut $rx) = $make;
            let start = Instant::now();
            let sender = tokio::spawn(async move {
                #[allow(unused_mut)]
                let mut $tx = tx;
                for $v in 0..MSGS {
                    $send;
                }
            });
            let receiver = tokio::spawn(async move {
                let mut sum = 0u64;
                for _ in 0..MSGS {
                    sum += $recv;
                }
                sum
            });
            assert_eq!(receiver.await.unwrap(), MSGS * (MSGS - 1) / 2);
            sender.await.unwrap();
            start.elapsed()
        })
    }};
}

fn run(imp: &str, rt: &tokio::runtime::Runtime, o: usize) -> Option<Duration> {
    Some(match imp {
        "ours" => pair!(
            rt,
            chan::Chan::<u64>::new(o).split(),
            |tx, v| tx.send_async(v).await.unwrap(),
            |rx| rx.recv_async().await.unwrap()
        ),
        "ours-stream-sink" => pair!(
            rt,
            {
                let (tx, rx) = chan::Chan::<u64>::new(o).split();
                (tx.into_sink(), rx.into_stream())
            },
            |tx, v| futures::SinkExt::send(&mut tx, v).await.unwrap(),
            |rx| futures::StreamExt::next(&mut rx).await.unwrap()
        ),
        "flume" => pair!(
            rt,
            flume::bounded::<u64>(o),
            |tx, v| tx.send_async(v).await.unwrap(),
            |rx| rx.recv_async().await.unwrap()
        ),
        "kanal" => pair!(
            rt,
            kanal::bounded_async::<u64>(o),
            |tx, v| tx.send(v).await.unwrap(),
            |rx| rx.recv().await.unwrap()
        ),
        "async-channel" if o > 0 => pair!(
            rt,
            async_channel::bounded::<u64>(o),
            |tx, v| tx.send(v).await.unwrap(),
            |rx| rx.recv().await.unwrap()
        ),
        "tokio" if o > 0 => pair!(
            rt,
            tokio::sync::mpsc::channel::<u64>(o),
            |tx, v| tx.send(v).await.unwrap(),
            |rx| rx.recv().await.unwrap()
        ),
        _ => return None,
    })
}

fn two_tasks(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for o in [0, 10] {
        let mut g = c.benchmark_group(format!("async_two_tasks_O{o}"));
        g.throughput(Throughput::Elements(MSGS));
        for imp in [
            "ours",
            "ours-stream-sink",
            "flume",
            "kanal",
            "async-channel",
            "tokio",
        ] {
            if run(imp, &rt, o).is_none() {
                continue;
            }
            g.bench_function(BenchmarkId::from_parameter(imp), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| run(imp, &rt, o).unwrap()).sum())
            });
        }
        g.finish();
    }
}

criterion_group!(benches, two_tasks);
criterion_main!(benches);
