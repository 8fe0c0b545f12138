//! The README's results table: the chantest workload on our channels and on the peers.
//!
//! ```text
//! grid [-N n] [-R r]                           every implementation in this one process
//! grid --one IMPL -O o -M m [-N n] [-W w]      one cell, once, in this process: one line
//! grid --table [FILE]                          the table from `--one` lines (stdin if no FILE)
//! grid --list                                  the implementations' names, one per line
//! ```
//!
//! The first form (`cargo run --release -p benches --example grid -- -N 16384 -R 5`) runs the
//! whole grid, O in {0, 1, 10, 100} x M in {1, 2, 8}, with every implementation in the same
//! process, repetitions interleaved so drift hits all alike, after one warm-up round per cell,
//! and prints a markdown table of median wall ns per message, CPU ns (user + sys) per message
//! in brackets. `benches/grid.sh` runs it (also pinned to one CPU) and writes the tables into
//! README.md.
//!
//! The other forms keep implementations out of each other's process: `--one` runs one
//! implementation on one cell (a warm-up round of W values per sender, default N, then one
//! measured round of N values per sender) and prints one line such as
//! `impl=adaptive O=10 M=1 N=16384 W=16384 msgs=16384 wall_ns=2370114 cpu_ns=2412000 vcsw=0 ivcsw=3`
//! (totals for the measured round: wall time from the common start to the last value's arrival,
//! user + sys CPU time of the whole process, voluntary and involuntary context switches);
//! `--table` turns many such lines into the same table as the first form.
//! `benches/grid.sh --per-process` drives them, one fresh process per run.
//!
//! IMPL is `spin`, `sem` or `adaptive` (our channel with that lock; parameters may follow as
//! in `adaptive:spin_ns=500`), or a peer: `crossbeam`, `std`, `flume`, `kanal`. Bad input
//! prints one `grid: ...` line and exits 2.

#[allow(dead_code)] // the grid uses the channel workloads only
#[path = "../common/mod.rs"]
mod common;

use common::mpsc::{Peer, Spec};
use locks::Backend;
use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

const BUFFERS: [usize; 4] = [0, 1, 10, 100];
const SENDERS: [usize; 3] = [1, 2, 8];

/// Limits on `--one`'s input, so that a typo is an error rather than an allocation failure or
/// a thread-spawning storm. N stays below the workload's 2^40 sequence numbers.
const MAX_BUFFERS: u64 = 1 << 20;
const MAX_SENDERS: u64 = 1024;
const MAX_PER_SENDER: u64 = (1 << 40) - 1;

const USAGE: &str = "usage: grid [-N n] [-R r] | grid --one IMPL -O o -M m [-N n] [-W w] \
                     | grid --table [FILE] | grid --list";

/// Prints `grid: {msg}` and exits 2: the one-line answer to bad input.
fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("grid: {msg}");
    std::process::exit(2);
}

/// What this process has used so far: user + sys CPU time (every thread's, the finished ones
/// included) and voluntary and involuntary context switches.
#[derive(Clone, Copy)]
struct Usage {
    cpu: Duration,
    vcsw: i64,
    ivcsw: i64,
}

impl Usage {
    fn now() -> Usage {
        // SAFETY: getrusage only writes the struct we hand it.
        let ru = unsafe {
            let mut ru = std::mem::zeroed::<libc::rusage>();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Usage {
            cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
            vcsw: ru.ru_nvcsw,
            ivcsw: ru.ru_nivcsw,
        }
    }
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

/// An implementation named on the command line: a peer by its crate's name, or ours by its
/// backend (with any parameters).
fn parse_impl(s: &str) -> Result<Peer, String> {
    if let Some(p) = Peer::all()
        .into_iter()
        .find(|p| !matches!(p, Peer::Ours(_)) && p.name() == s)
    {
        return Ok(p);
    }
    match s.parse::<Backend>() {
        Ok(b) => Ok(Peer::Ours(b)),
        Err(_) if !s.contains(':') => {
            let names: Vec<_> = Peer::all().iter().map(Peer::name).collect();
            Err(format!(
                "unknown implementation `{s}` (valid: {})",
                names.join(", ")
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// How reports name an implementation: ours with any non-default parameters
/// (`adaptive:spin_ns=500`), so that a tuned backend is not mistaken for the default one.
fn label(p: &Peer) -> String {
    match p {
        Peer::Ours(b) => b.to_string(),
        _ => p.name().to_owned(),
    }
}

/// Where a label's column goes: [`Peer::all`]'s order by base name, unknown names last.
fn column_key(label: &str) -> (usize, String) {
    let base = label.split(':').next().unwrap_or_default();
    let pos = Peer::all().iter().position(|p| p.name() == base);
    (pos.unwrap_or(usize::MAX), label.to_owned())
}

/// One (O, M) cell's samples: per implementation label, ns per message, wall and CPU.
struct Cell {
    nbuf: usize,
    senders: usize,
    samples: BTreeMap<(usize, String), (Vec<f64>, Vec<f64>)>,
}

/// Prints the markdown table of `cells` (ordered by O, then M) and, under it, how many cells
/// the adaptive backend is at or below the fastest peer in.
fn print_table(cells: &mut [Cell]) {
    cells.sort_by_key(|c| (c.nbuf, c.senders));
    let mut columns: Vec<(usize, String)> = cells
        .iter()
        .flat_map(|c| c.samples.keys().cloned())
        .collect();
    columns.sort();
    columns.dedup();
    let is_ours = |label: &str| label.parse::<Backend>().is_ok();
    println!(
        "| O | M | {} | best peer | adaptive / best peer |",
        columns
            .iter()
            .map(|c| c.1.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|---|{}---|---|", "---|".repeat(columns.len()));
    let (mut compared, mut wall_wins, mut cpu_wins) = (0, 0, 0);
    let mut runs: Vec<usize> = vec![];
    for cell in cells.iter_mut() {
        // Medians per column: (wall, cpu), None where this cell has no samples.
        let med: Vec<Option<(f64, f64)>> = columns
            .iter()
            .map(|col| {
                cell.samples.get_mut(col).map(|(w, c)| {
                    runs.push(w.len());
                    (median(w), median(c))
                })
            })
            .collect();
        let shown: Vec<String> = med
            .iter()
            .map(|m| match m {
                Some((w, c)) => format!("{w:.0} ({c:.0})"),
                None => "-".to_owned(),
            })
            .collect();
        let best = (0..columns.len())
            .filter(|&i| !is_ours(&columns[i].1))
            .filter_map(|i| med[i].map(|m| (i, m)))
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0));
        let adaptive = columns
            .iter()
            .position(|c| c.1 == "adaptive")
            .and_then(|i| med[i]);
        let (best_name, ratio) = match (best, adaptive) {
            (Some((i, (bw, bc))), Some((aw, ac))) => {
                compared += 1;
                wall_wins += usize::from(aw <= bw);
                cpu_wins += usize::from(ac <= bc);
                (
                    columns[i].1.as_str(),
                    format!("{:.2} (cpu {:.2})", aw / bw, ac / bc),
                )
            }
            (Some((i, _)), None) => (columns[i].1.as_str(), "-".to_owned()),
            (None, _) => ("-", "-".to_owned()),
        };
        println!(
            "| {} | {} | {} | {best_name} | {ratio} |",
            cell.nbuf,
            cell.senders,
            shown.join(" | ")
        );
    }
    if compared > 0 {
        let (lo, hi) = (
            runs.iter().min().copied().unwrap_or(0),
            runs.iter().max().copied().unwrap_or(0),
        );
        let runs = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}-{hi}")
        };
        println!(
            "\nadaptive at or below the best peer: wall {wall_wins} of {compared} cells, \
             CPU {cpu_wins} of {compared} (CPU against the same peer); runs per implementation and cell: {runs}."
        );
    }
}

/// Parsed command-line flags: each at most once.
#[derive(Default)]
struct Flags {
    one: Option<String>,
    table: Option<Option<String>>,
    list: bool,
    o: Option<u64>,
    m: Option<u64>,
    n: Option<u64>,
    r: Option<u64>,
    w: Option<u64>,
}

fn parse_flags(args: &[String]) -> Flags {
    let mut f = Flags::default();
    let mut it = args.iter().peekable();
    let once = |slot: bool, flag: &str| {
        if slot {
            fail(format!("{flag} given twice"));
        }
    };
    while let Some(a) = it.next() {
        let mut value = |flag: &str| -> String {
            it.next()
                .cloned()
                .unwrap_or_else(|| fail(format!("{flag} wants a value")))
        };
        let number = |flag: &str, v: String| -> u64 {
            v.parse()
                .unwrap_or_else(|_| fail(format!("{flag} wants a non-negative integer, not `{v}`")))
        };
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--one" => {
                once(f.one.is_some(), a);
                f.one = Some(value(a));
            }
            "--table" => {
                once(f.table.is_some(), a);
                let file = it.next_if(|v| !v.starts_with('-') || v.as_str() == "-");
                f.table = Some(file.cloned());
            }
            "--list" => {
                once(f.list, a);
                f.list = true;
            }
            "-O" | "-M" | "-N" | "-R" | "-W" => {
                let v = number(a, value(a));
                let slot = match a.as_str() {
                    "-O" => &mut f.o,
                    "-M" => &mut f.m,
                    "-N" => &mut f.n,
                    "-R" => &mut f.r,
                    _ => &mut f.w,
                };
                once(slot.is_some(), a);
                *slot = Some(v);
            }
            _ => fail(format!("unexpected argument `{a}` ({USAGE})")),
        }
    }
    f
}

/// Fails unless `v` lies in `lo..=hi`.
fn within(flag: &str, v: u64, lo: u64, hi: u64) -> u64 {
    if !(lo..=hi).contains(&v) {
        fail(format!("{flag} must be in {lo}..={hi}, not {v}"));
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let f = parse_flags(&args);
    let modes = usize::from(f.one.is_some()) + usize::from(f.table.is_some()) + usize::from(f.list);
    if modes > 1 {
        fail("--one, --table and --list exclude one another");
    }
    if let Some(name) = &f.one {
        if f.r.is_some() {
            fail("--one runs once: -R does not apply");
        }
        let peer = parse_impl(name).unwrap_or_else(|e| fail(e));
        let o = f.o.unwrap_or_else(|| fail("--one wants -O"));
        let m = f.m.unwrap_or_else(|| fail("--one wants -M"));
        let spec = Spec {
            nbuf: within("-O", o, 0, MAX_BUFFERS) as usize,
            senders: within("-M", m, 1, MAX_SENDERS) as usize,
            per_sender: within("-N", f.n.unwrap_or(16384), 1, MAX_PER_SENDER),
        };
        let warm = within("-W", f.w.unwrap_or(spec.per_sender), 0, MAX_PER_SENDER);
        one(peer, spec, warm);
    } else if let Some(file) = f.table {
        if f.o.is_some() || f.m.is_some() || f.n.is_some() || f.r.is_some() || f.w.is_some() {
            fail("--table takes no -O, -M, -N, -R or -W");
        }
        table(file.as_deref());
    } else if f.list {
        if f.o.is_some() || f.m.is_some() || f.n.is_some() || f.r.is_some() || f.w.is_some() {
            fail("--list takes no -O, -M, -N, -R or -W");
        }
        for p in Peer::all() {
            println!("{}", p.name());
        }
    } else {
        if f.o.is_some() || f.m.is_some() || f.w.is_some() {
            fail("-O, -M and -W belong to --one");
        }
        let n = within("-N", f.n.unwrap_or(16384), 1, MAX_PER_SENDER);
        let r = within("-R", f.r.unwrap_or(5), 1, 1_000_000);
        grid(n, r as usize);
    }
}

/// `--one`: a warm-up round of `warm` values per sender, then one measured round, reported
/// as one line of `key=value` totals.
fn one(peer: Peer, spec: Spec, warm: u64) {
    if warm > 0 {
        peer.run(
            Spec {
                per_sender: warm,
                ..spec
            },
            1,
        );
    }
    let u0 = Usage::now();
    let t = peer.run(spec, 1);
    let u1 = Usage::now();
    println!(
        "impl={} O={} M={} N={} W={warm} msgs={} wall_ns={} cpu_ns={} vcsw={} ivcsw={}",
        label(&peer),
        spec.nbuf,
        spec.senders,
        spec.per_sender,
        spec.per_round(),
        t.as_nanos(),
        (u1.cpu - u0.cpu).as_nanos(),
        u1.vcsw - u0.vcsw,
        u1.ivcsw - u0.ivcsw,
    );
}

/// `--table`: reads `--one` lines (blank lines and `#` comments skipped) and prints the
/// table of their medians per implementation and cell.
fn table(file: Option<&str>) {
    let mut text = String::new();
    let read = match file {
        None | Some("-") => std::io::stdin().read_to_string(&mut text),
        Some(path) => std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text)),
    };
    if let Err(e) = read {
        fail(format!("cannot read {}: {e}", file.unwrap_or("stdin")));
    }
    let mut cells: BTreeMap<(usize, usize), Cell> = BTreeMap::new();
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| -> ! { fail(format!("line {}: {why}: `{line}`", lineno + 1)) };
        let fields: BTreeMap<&str, &str> = line
            .split_whitespace()
            .map(|kv| kv.split_once('=').unwrap_or_else(|| bad("not key=value")))
            .collect();
        let get = |key: &str| *fields.get(key).unwrap_or_else(|| bad(&format!("no {key}")));
        let num = |key: &str| -> u64 {
            get(key)
                .parse()
                .unwrap_or_else(|_| bad(&format!("{key} is not an integer")))
        };
        let peer = parse_impl(get("impl")).unwrap_or_else(|e| bad(&e));
        let (nbuf, senders, msgs) = (num("O") as usize, num("M") as usize, num("msgs"));
        if msgs == 0 {
            bad("msgs=0");
        }
        let cell = cells.entry((nbuf, senders)).or_insert_with(|| Cell {
            nbuf,
            senders,
            samples: BTreeMap::new(),
        });
        let (wall, cpu) = cell.samples.entry(column_key(&label(&peer))).or_default();
        wall.push(num("wall_ns") as f64 / msgs as f64);
        cpu.push(num("cpu_ns") as f64 / msgs as f64);
    }
    if cells.is_empty() {
        fail("no runs to tabulate");
    }
    print_table(&mut cells.into_values().collect::<Vec<_>>());
}

/// The first form: every implementation in this process, repetitions interleaved.
fn grid(per_sender: u64, reps: usize) {
    let peers = Peer::all();
    let mut cells = vec![];
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
                    let u0 = Usage::now();
                    let t = p.run(spec, 1);
                    let c = Usage::now().cpu - u0.cpu;
                    if rep > 0 {
                        // Round 0 warms up caches, allocator and the spin clock.
                        wall[i].push(t.as_nanos() as f64 / msgs);
                        cpu[i].push(c.as_nanos() as f64 / msgs);
                    }
                }
            }
            let samples = peers
                .iter()
                .zip(wall.into_iter().zip(cpu))
                .map(|(p, s)| (column_key(&label(p)), s))
                .collect();
            cells.push(Cell {
                nbuf,
                senders,
                samples,
            });
        }
    }
    print_table(&mut cells);
}
