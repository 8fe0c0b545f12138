//! The chantest workload with tasks instead of threads: M sender tasks each send N u64s down
//! one channel of O buffers to one receiver task, on a tokio current-thread runtime (Plan 9's
//! threads in one proc) and on a multi-thread runtime, with our channel and the async peers.
//!
//! ```text
//! cargo run --release -p benches --example async_grid -- [-N n] [-R r] [--rt current,multi]
//!     [--impl ours,ours-sem,flume,kanal,async-channel,tokio] [-O 0,1,10,100] [-M 1,2,8]
//! ```
//!
//! Every cell runs each implementation R times after one warm-up round, the order rotated
//! by one place per repetition so that drift hits all alike; the table shows the median
//! wall-clock ns per message (start of the first sender to the receiver's last value), and
//! the receiver checks every value arrived once and in order per sender. `async-channel` and
//! `tokio::sync::mpsc` have no rendezvous channel (capacity 0 panics): their O=0 cells are
//! empty.

use chan::Chan;
use std::time::{Duration, Instant};

const BUFFERS: [usize; 4] = [0, 1, 10, 100];
const SENDERS: [usize; 3] = [1, 2, 8];
const IMPLS: [&str; 7] = [
    "ours",
    "ours-sem",
    "ours-spin",
    "flume",
    "kanal",
    "async-channel",
    "tokio",
];

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("async_grid: {msg}");
    std::process::exit(2);
}

/// The receiver's check: `m` senders' values, each `s << 40 | i`, all there once, in order.
struct Check {
    next: Vec<u64>,
}

impl Check {
    fn new(m: usize) -> Self {
        Check { next: vec![0; m] }
    }
    #[inline]
    fn see(&mut self, v: u64) {
        let (s, i) = ((v >> 40) as usize, v & ((1 << 40) - 1));
        if self.next[s] != i {
            fail(format_args!(
                "sender {s}: got {i}, expected {}",
                self.next[s]
            ));
        }
        self.next[s] += 1;
    }
    fn done(&self, n: u64) {
        if self.next.iter().any(|&k| k != n) {
            fail("values lost");
        }
    }
}

macro_rules! workload {
    ($rt:expr, $m:expr, $n:expr, $make:expr, |$tx:ident, $v:ident| $send:expr, |$rx:ident| $recv:expr) => {{
        let (m, n) = ($m, $n);
        $rt.block_on(async move {
            #[allow(unused_mut)] // tokio's receiver takes `&mut self`
            let (tx, mut $rx) = $make;
            let start = Instant::now();
            let mut senders = Vec::with_capacity(m);
            for s in 0..m as u64 {
                let $tx = tx.clone();
                senders.push(tokio::spawn(async move {
                    for i in 0..n {
                        let $v = s << 40 | i;
                        $send;
                    }
                }));
            }
            drop(tx);
            let receiver = tokio::spawn(async move {
                let mut check = Check::new(m);
                for _ in 0..m as u64 * n {
                    check.see($recv);
                }
                check.done(n);
            });
            receiver.await.unwrap();
            let took = start.elapsed();
            for s in senders {
                s.await.unwrap();
            }
            took
        })
    }};
}

/// One run of one cell; `None` where the implementation has no such channel.
fn run(imp: &str, rt: &tokio::runtime::Runtime, o: usize, m: usize, n: u64) -> Option<Duration> {
    Some(match imp {
        "ours" => workload!(
            rt,
            m,
            n,
            Chan::<u64>::new(o).split(),
            |tx, v| tx.send_async(v).await.unwrap(),
            |rx| rx.recv_async().await.unwrap()
        ),
        "ours-sem" => workload!(
            rt,
            m,
            n,
            Chan::<u64, locks::SemLock>::new(o).split(),
            |tx, v| tx.send_async(v).await.unwrap(),
            |rx| rx.recv_async().await.unwrap()
        ),
        "ours-spin" => workload!(
            rt,
            m,
            n,
            Chan::<u64, locks::SpinYield>::new(o).split(),
            |tx, v| tx.send_async(v).await.unwrap(),
            |rx| rx.recv_async().await.unwrap()
        ),
        "flume" => workload!(
            rt,
            m,
            n,
            flume::bounded::<u64>(o),
            |tx, v| tx.send_async(v).await.unwrap(),
            |rx| rx.recv_async().await.unwrap()
        ),
        "kanal" => workload!(
            rt,
            m,
            n,
            kanal::bounded_async::<u64>(o),
            |tx, v| tx.send(v).await.unwrap(),
            |rx| rx.recv().await.unwrap()
        ),
        "async-channel" if o > 0 => workload!(
            rt,
            m,
            n,
            async_channel::bounded::<u64>(o),
            |tx, v| tx.send(v).await.unwrap(),
            |rx| rx.recv().await.unwrap()
        ),
        "tokio" if o > 0 => workload!(
            rt,
            m,
            n,
            tokio::sync::mpsc::channel::<u64>(o),
            |tx, v| tx.send(v).await.unwrap(),
            |rx| rx.recv().await.unwrap()
        ),
        "async-channel" | "tokio" => return None,
        other => fail(format_args!("unknown implementation `{other}`")),
    })
}

fn main() {
    let mut n: u64 = 16384;
    let mut reps = 5usize;
    let mut rts = vec!["current".to_string(), "multi".to_string()];
    let mut impls: Vec<String> = IMPLS.iter().map(|s| s.to_string()).collect();
    let mut buffers = BUFFERS.to_vec();
    let mut senders = SENDERS.to_vec();
    let list = |v: String| -> Vec<usize> {
        v.split(',')
            .map(|x| x.parse().unwrap_or_else(|_| fail("-O/-M want numbers")))
            .collect()
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| fail(format_args!("{a} wants a value")))
        };
        match a.as_str() {
            "-N" => n = val().parse().unwrap_or_else(|_| fail("-N wants a number")),
            "-R" => reps = val().parse().unwrap_or_else(|_| fail("-R wants a number")),
            "--rt" => rts = val().split(',').map(String::from).collect(),
            "--impl" => impls = val().split(',').map(String::from).collect(),
            "-O" => buffers = list(val()),
            "-M" => senders = list(val()),
            _ => fail(format_args!("unknown argument `{a}`")),
        }
    }
    println!("# N={n} values per sender, R={reps} after 1 warm-up, median ns per message");
    for rt_name in &rts {
        let rt = match rt_name.as_str() {
            "current" => tokio::runtime::Builder::new_current_thread().build(),
            "multi" => tokio::runtime::Builder::new_multi_thread().build(),
            other => fail(format_args!("unknown runtime `{other}` (current, multi)")),
        }
        .unwrap();
        println!("\n{rt_name}-thread runtime\n");
        println!("| O | M | {} | ours / best peer |", impls.join(" | "));
        println!("|---|---|{}---:|", "---:|".repeat(impls.len()));
        for &o in &buffers {
            for &m in &senders {
                let mut samples: Vec<Vec<f64>> = vec![Vec::new(); impls.len()];
                let mut lock_stats = locks::stats::Snapshot::default();
                for r in 0..=reps {
                    for k in 0..impls.len() {
                        let i = (k + r) % impls.len();
                        let before = locks::stats::snapshot();
                        if let Some(d) = run(&impls[i], &rt, o, m, n) {
                            if r > 0 {
                                samples[i].push(d.as_nanos() as f64 / (m as u64 * n) as f64);
                                if impls[i] == "ours" {
                                    let d = locks::stats::snapshot().since(&before);
                                    lock_stats.acquisitions += d.acquisitions;
                                    lock_stats.contended += d.contended;
                                    lock_stats.spins += d.spins;
                                    lock_stats.yields += d.yields;
                                    lock_stats.futex_waits += d.futex_waits;
                                }
                            }
                        }
                    }
                }
                if locks::stats::ENABLED {
                    // Built with `--features locks/stats`: what ours' locks did, per message.
                    let per = |x: u64| x as f64 / (reps as u64 * m as u64 * n) as f64;
                    eprintln!(
                        "{rt_name} O={o} M={m} ours per message: locks {:.2}, contended {:.3}, spins {:.2}, yields {:.3}, futex waits {:.4}",
                        per(lock_stats.acquisitions),
                        per(lock_stats.contended),
                        per(lock_stats.spins),
                        per(lock_stats.yields),
                        per(lock_stats.futex_waits)
                    );
                }
                let med: Vec<Option<f64>> = samples
                    .iter_mut()
                    .map(|s| {
                        s.sort_by(f64::total_cmp);
                        (!s.is_empty()).then(|| s[s.len() / 2])
                    })
                    .collect();
                let ours = impls.iter().position(|s| s == "ours").and_then(|i| med[i]);
                let best_peer = impls
                    .iter()
                    .zip(&med)
                    .filter(|(name, _)| !name.starts_with("ours"))
                    .filter_map(|(_, v)| *v)
                    .min_by(f64::total_cmp);
                let cells: Vec<String> = med
                    .iter()
                    .map(|v| v.map_or("".into(), |v| format!("{v:.1}")))
                    .collect();
                let ratio = match (ours, best_peer) {
                    (Some(a), Some(b)) => format!("{:.2}", a / b),
                    _ => String::new(),
                };
                println!("| {o} | {m} | {} | {ratio} |", cells.join(" | "));
            }
        }
    }
}
