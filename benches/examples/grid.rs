//! The README's results table: the chantest workload on our channels and on the peers, every
//! implementation measured in the same run, repetitions interleaved so drift hits all alike.
//!
//! `cargo run --release -p benches --example grid -- [-N values-per-sender] [-R reps]`
//! prints a markdown table of median wall ns per message, CPU ns (user + sys) per message in
//! brackets, for O in {0, 1, 10, 100} x M in {1, 2, 8}. `benches/grid.sh` runs it (also pinned
//! to one CPU) and writes the tables into README.md.

#[allow(dead_code)] // the grid uses the channel workloads only
#[path = "../common/mod.rs"]
mod common;

use common::mpsc::{Peer, Spec};
use std::time::Duration;

const BUFFERS: [usize; 4] = [0, 1, 10, 100];
const SENDERS: [usize; 3] = [1, 2, 8];

/// User plus system CPU time this process has used.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we hand it.
    let ru = unsafe {
        let mut ru = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn arg(args: &[String], flag: &str, default: u64) -> u64 {
    match args.iter().position(|a| a == flag) {
        None => default,
        Some(i) => match args.get(i + 1).and_then(|v| v.parse().ok()) {
            Some(v) if v > 0 => v,
            _ => {
                eprintln!("grid: {flag} wants a positive integer");
                std::process::exit(2);
            }
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let per_sender = arg(&args, "-N", 16384);
    let reps = arg(&args, "-R", 5) as usize;
    let peers = Peer::all();
    println!(
        "| O | M | {} | best peer | adaptive / best peer |",
        peers.iter().map(Peer::name).collect::<Vec<_>>().join(" | ")
    );
    println!("|---|---|{}---|---|", "---|".repeat(peers.len()));
    for nbuf in BUFFERS {
        for senders in SENDERS {
            let spec = Spec {
                nbuf,
                senders,
                per_sender,
            };
            let msgs = spec.per_round() as f64;
            let mut wall = vec![Vec::new(); peers.len()];
            let mut cpu = vec![Vec::new(); peers.len()];
            for rep in 0..=reps {
                for (i, p) in peers.iter().enumerate() {
                    let c0 = cpu_time();
                    let t = p.run(spec, 1);
                    let c = cpu_time() - c0;
                    if rep > 0 {
                        // Round 0 warms up caches, allocator and the spin clock.
                        wall[i].push(t.as_nanos() as f64 / msgs);
                        cpu[i].push(c.as_nanos() as f64 / msgs);
                    }
                }
            }
            let wall: Vec<f64> = wall.iter_mut().map(|v| median(v)).collect();
            let cpu: Vec<f64> = cpu.iter_mut().map(|v| median(v)).collect();
            let cells: Vec<String> = (0..peers.len())
                .map(|i| format!("{:.0} ({:.0})", wall[i], cpu[i]))
                .collect();
            let adaptive = peers
                .iter()
                .position(|p| p.name() == "adaptive")
                .expect("adaptive is one of ours");
            let (best, _) = peers
                .iter()
                .enumerate()
                .filter(|(_, p)| !matches!(p, Peer::Ours(_)))
                .min_by(|a, b| wall[a.0].total_cmp(&wall[b.0]))
                .expect("at least one peer");
            println!(
                "| {nbuf} | {senders} | {} | {} | {:.2} (cpu {:.2}) |",
                cells.join(" | "),
                peers[best].name(),
                wall[adaptive] / wall[best],
                cpu[adaptive] / cpu[best],
            );
        }
    }
}
