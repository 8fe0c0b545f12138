//! Printing results: an aligned table for people, a markdown table for documents (the README's
//! result tables), CSV and JSON for programs, and Plan 9's bare nanoseconds.

use crate::model::{PeerChan, Placement, Via, HAVE_TSC, TAG};
use crate::records::Results;
use crate::records::Verdict;
use crate::verdict::CONFIDENCE;
use clap::ValueEnum;
use std::fmt::Write;

/// How to print the results on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned columns, medians with their range.
    Table,
    /// One row per lane (backend or transport) × O × M, with a header row.
    Csv,
    /// The same document `--save` writes, raw samples included.
    Json,
    /// A markdown table for documents: one row per O × M, one column per lane, each cell the
    /// median ns per message and its ratio to the reference.
    Markdown,
    /// The total nanoseconds of each run, one per line, like Plan 9's chantest (also
    /// `--plain`)
    Plain,
}

/// The CSV columns, always present in this order.
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "lock",
    "O",
    "M",
    "N",
    "reps",
    "ns_per_msg",
    "ns_per_msg_min",
    "ns_per_msg_max",
    "cycles_per_msg",
    "cpu_ns_per_msg",
    "vcsw_per_msg",
    "ivcsw_per_msg",
    "ratio_to_ref",
    "futex_waits_per_msg",
    "futex_wakes_per_msg",
    "global_lock",
    "ns_total",
    "ns_total_min",
    "ns_total_max",
];

/// Columns added with `--via` and `-S`, always present and always last (after the change
/// columns, when those are present), so that every older column keeps its position.
pub(crate) const CSV_TRANSPORT_COLUMNS: &[&str] = &["via", "size", "mb_per_s"];

/// Extra CSV columns when there are changes; empty on rows that were not compared.
pub(crate) const CSV_CHANGE_COLUMNS: &[&str] = &[
    "vs",
    "vs_ns_per_msg",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "verdict",
];

/// Renders `r` in `format`; `threshold` is quoted in the table's verdict heading.
pub(crate) fn render(r: &Results, format: Format, threshold: f64) -> String {
    match format {
        Format::Table => table(r, threshold),
        Format::Csv => csv(r),
        Format::Json => json(r),
        Format::Markdown => markdown(r, threshold),
        Format::Plain => plain(r),
    }
}

/// The document `--save` writes.
pub(crate) fn json(r: &Results) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        // Serializing plain structs of numbers and strings cannot fail; say so if it does.
        format!("{{\"error\": \"cannot serialize results: {e}\"}}")
    });
    s.push('\n');
    s
}

/// Total nanoseconds of every measured run, one per line, like Plan 9's chantest.
fn plain(r: &Results) -> String {
    r.cells
        .iter()
        .flat_map(|c| &c.samples)
        .fold(String::new(), |mut s, x| {
            let _ = writeln!(s, "{}", x.ns);
            s
        })
}

fn csv(r: &Results) -> String {
    let mut out = CSV_COLUMNS.join(",");
    if !r.changes.is_empty() {
        out = format!("{out},{}", CSV_CHANGE_COLUMNS.join(","));
    }
    out = format!("{out},{}", CSV_TRANSPORT_COLUMNS.join(","));
    out.push('\n');
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for (i, c) in r.cells.iter().enumerate() {
        let s = &c.summary;
        let mut row = vec![
            quote(&c.lock),
            c.nbuf.to_string(),
            c.senders.to_string(),
            c.per_sender.to_string(),
            s.reps.to_string(),
            s.ns_per_msg.median.to_string(),
            s.ns_per_msg.min.to_string(),
            s.ns_per_msg.max.to_string(),
            s.cycles_per_msg.to_string(),
            s.cpu_ns_per_msg.to_string(),
            s.vcsw_per_msg.to_string(),
            s.ivcsw_per_msg.to_string(),
            s.ratio_to_ref.to_string(),
            opt(s.futex_waits_per_msg),
            opt(s.futex_wakes_per_msg),
            c.global_lock.to_string(),
            s.ns.median.to_string(),
            s.ns.min.to_string(),
            s.ns.max.to_string(),
        ];
        if !r.changes.is_empty() {
            match r.changes.iter().find(|ch| ch.cell == i) {
                Some(ch) => row.extend([
                    quote(&ch.against),
                    ch.old_ns_per_msg.to_string(),
                    ch.ratio.estimate.to_string(),
                    ch.ratio.low.to_string(),
                    opt(ch.ratio.high),
                    ch.verdict.key().to_string(),
                ]),
                None => row.extend(std::iter::repeat_n(String::new(), CSV_CHANGE_COLUMNS.len())),
            }
        }
        row.extend([quote(&c.via), c.size.to_string(), s.mb_per_s.to_string()]);
        out += &row.join(",");
        out.push('\n');
    }
    out
}

/// Quotes a CSV field if it needs it (backend names may contain `,` only in theory).
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// What a sweep ran, in one line: N, R, the lock setting, pinning, S, the reference.
fn heading(r: &Results) -> String {
    let p = &r.params;
    format!(
        "N={} values per sender, R={} after {} warm-up{}{}{}, ratio to {}",
        p.per_sender,
        p.reps,
        p.warmup,
        match (r.has_locks(), p.global_lock) {
            (false, _) => "",
            (true, true) => ", one global lock",
            (true, false) => ", per-channel locks",
        },
        match p.placement() {
            None => "",
            Some(Placement::Spread) => ", pinned",
            Some(Placement::Apart) => ", pinned with the receiver apart",
        },
        if p.size > TAG as u64 {
            format!(", S={} bytes per message", p.size)
        } else {
            String::new()
        },
        r.reference_name(),
    )
}

fn table(r: &Results, threshold: f64) -> String {
    let p = &r.params;
    let vias = r.has_transports();
    let bandwidth = p.size > TAG as u64;
    let mut out = format!("# {}\n", heading(r));
    let tsc = HAVE_TSC;
    let mut head = vec!["lock"];
    if vias {
        head.push("via");
    }
    head.extend(["O", "M", "total ms", "ns/msg", "min", "max", "ratio"]);
    if tsc {
        head.push("cyc/msg");
    }
    head.extend(["cpu ns/msg", "vcsw/msg", "ivcsw/msg"]);
    if p.stats {
        head.extend([
            "fwait/msg",
            "fwake/msg",
            "yield/msg",
            "cont/msg",
            "spin/msg",
            "moves",
        ]);
    }
    if bandwidth {
        head.push("MB/s");
    }
    let mut rows = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    let mut last_point = None;
    for c in &r.cells {
        let s = &c.summary;
        let point = Some((c.nbuf, c.senders));
        if last_point.is_some() && last_point != point {
            rows.push(Vec::new()); // a blank line between points
        }
        last_point = point;
        let mut row = vec![c.lock.clone()];
        if vias {
            row.push(c.via.clone());
        }
        row.extend([
            c.nbuf.to_string(),
            c.senders.to_string(),
            sig(s.ns.median / 1e6),
            sig(s.ns_per_msg.median),
            sig(s.ns_per_msg.min),
            sig(s.ns_per_msg.max),
            ratio(s.ratio_to_ref),
        ]);
        if tsc {
            row.push(sig(s.cycles_per_msg));
        }
        row.extend([
            sig(s.cpu_ns_per_msg),
            sig(s.vcsw_per_msg),
            sig(s.ivcsw_per_msg),
        ]);
        if p.stats {
            row.push(s.futex_waits_per_msg.map_or_else(String::new, sig));
            row.push(s.futex_wakes_per_msg.map_or_else(String::new, sig));
            row.push(s.yields_per_msg.map_or_else(String::new, sig));
            row.push(s.contended_per_msg.map_or_else(String::new, sig));
            row.push(s.spins_per_msg.map_or_else(String::new, sig));
            row.push(s.moves_per_run.map_or_else(String::new, sig));
        }
        if bandwidth {
            row.push(sig(s.mb_per_s));
        }
        rows.push(row);
    }
    out += &align(&rows);
    out += &notes(r);
    out += &crate::slow::notes(r);

    if !r.changes.is_empty() {
        let _ = writeln!(out, "\n# {}", changes_heading(r, threshold));
        if let Some(exe) = r.changes.iter().find_map(|c| c.against_exe.as_ref()) {
            let _ = writeln!(out, "# vs {}: {exe}", r.changes[0].against);
        }
        out += &align(&change_rows(r));
        let _ = writeln!(out, "# {}", changes_summary(r));
        if let Some(note) = reps_note(r) {
            let _ = writeln!(out, "# {note}");
        }
        if let Some(note) = layout_note(r) {
            let _ = writeln!(out, "# {note}");
        }
    }
    out
}

/// How the verdicts were reached, in one line.
fn changes_heading(r: &Results, threshold: f64) -> String {
    format!(
        "new/old ns per message: Hodges-Lehmann ratio, Mann-Whitney interval at {:.0}% for all \
         {} cells together (Bonferroni); regressed = interval above 1 and ratio above \
         {edge:.2}; ok = interval below {edge:.2}; else inconclusive",
        CONFIDENCE * 100.0,
        r.changes.len(),
        edge = 1.0 + threshold
    )
}

/// The verdicts' table: a heading row, then one row per change.
fn change_rows(r: &Results) -> Vec<Vec<String>> {
    let mut rows = vec![[
        "lock",
        "vs",
        "O",
        "M",
        "old ns/msg",
        "new ns/msg",
        "ratio",
        "interval",
        "reps",
        "verdict",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for ch in &r.changes {
        rows.push(vec![
            ch.lock.clone(),
            ch.against.clone(),
            ch.nbuf.to_string(),
            ch.senders.to_string(),
            sig(ch.old_ns_per_msg),
            sig(ch.new_ns_per_msg),
            format!("{:.3}", ch.ratio.estimate),
            ch.ratio.to_string(),
            ch.reps_shown(),
            match (ch.verdict, ch.more_reps) {
                _ if ch.unmeasured.is_some() => {
                    format!("inconclusive: {}", ch.unmeasured.as_deref().unwrap_or(""))
                }
                (Verdict::Inconclusive, Some(k)) => format!("inconclusive (~{k} more reps)"),
                (v, _) => v.to_string(),
            },
        ]);
    }
    rows
}

/// "k of n cells regressed, u inconclusive".
fn changes_summary(r: &Results) -> String {
    let regressed = r
        .changes
        .iter()
        .filter(|c| c.verdict == Verdict::Regressed)
        .count();
    let undecided = r.changes.iter().filter(|c| !c.verdict.decided()).count();
    format!(
        "{regressed} of {} cells regressed, {undecided} inconclusive",
        r.changes.len()
    )
}

/// Where a cell of a comparison with another build (`--against`) regressed: that two builds
/// differ in where their code lies as well as in what it does. A change that left a
/// rendezvous' path the same, instruction for instruction, moved a loop's alignment and read
/// REGRESSED at 1.07-1.09; built with every loop aligned, both sides ran level
/// (`docs/tuning.md`, "Layout, not code").
fn layout_note(r: &Results) -> Option<&'static str> {
    r.changes
        .iter()
        .any(|c| c.verdict == Verdict::Regressed && c.against_exe.is_some())
        .then_some(
            "a build can regress by where its code landed, not by what it runs: if \
             --metric instructions --against counts the cell level, time both builds again \
             made with RUSTFLAGS='-C llvm-args=-align-loops=64' (chantest/README.md)",
        )
}

/// Where `--budget` added repetitions to one side only, what the `new/old` reps mean.
fn reps_note(r: &Results) -> Option<&'static str> {
    r.changes
        .iter()
        .any(|c| c.reps_shown().contains('/'))
        .then_some("reps new/old: --budget added repetitions to this run's side only")
}

/// The markdown table: the heading as a paragraph, then one row per (O, M) point and one
/// column per lane, each cell the median wall ns per message with its ratio to the reference
/// in brackets, and the fastest lane; the transports' footnotes and any verdicts follow.
fn markdown(r: &Results, threshold: f64) -> String {
    let series = r.series();
    let lanes = series.len().max(1);
    let mut out = format!(
        "{}; each cell: median wall ns per message (that ratio).\n\n",
        heading(r)
    );
    let mut rows = vec![["O", "M"]
        .into_iter()
        .map(String::from)
        .chain(series.iter().cloned())
        .chain(["fastest".to_string()])
        .collect::<Vec<_>>()];
    for cells in r.cells.chunks(lanes) {
        let Some(first) = cells.first() else { continue };
        let mut row = vec![first.nbuf.to_string(), first.senders.to_string()];
        row.extend(cells.iter().map(|c| {
            let s = &c.summary;
            format!("{} ({})", sig(s.ns_per_msg.median), ratio(s.ratio_to_ref))
        }));
        let fastest = cells
            .iter()
            .zip(&series)
            .min_by(|a, b| {
                let ns = |c: &crate::records::Cell| c.summary.ns_per_msg.median;
                ns(a.0).total_cmp(&ns(b.0))
            })
            .map_or_else(String::new, |(_, name)| name.clone());
        row.push(fastest);
        rows.push(row);
    }
    let last = lanes + 2;
    out += &pipes(&rows, |c| c >= 2 && c < last);
    for note in notes(r).lines() {
        let _ = writeln!(out, "\n{}", note.trim_start_matches("# "));
    }
    if !r.changes.is_empty() {
        let _ = writeln!(out, "\n{}:\n", changes_heading(r, threshold));
        out += &pipes(&change_rows(r), |c| (4..9).contains(&c));
        let _ = writeln!(out, "\n{}.", changes_summary(r));
        if let Some(note) = reps_note(r) {
            let _ = writeln!(out, "\n{note}.");
        }
        if let Some(note) = layout_note(r) {
            let _ = writeln!(out, "\n{note}.");
        }
    }
    out
}

/// A markdown table of `rows` (the first is the heading), the columns that are `numeric`
/// right-aligned.
fn pipes(rows: &[Vec<String>], numeric: impl Fn(usize) -> bool) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let _ = writeln!(out, "| {} |", row.join(" | ").replace('\n', " "));
        if i == 0 {
            let rule: Vec<&str> = (0..row.len())
                .map(|c| if numeric(c) { "---:" } else { "---" })
                .collect();
            let _ = writeln!(out, "|{}|", rule.join("|"));
        }
    }
    out
}

/// A ratio with two decimals, or `-` where there was nothing to divide by.
fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "-".into()
    }
}

/// Footnotes for the transports that bend the table's meaning.
fn notes(r: &Results) -> String {
    let has = |v| r.has_via(v);
    let mut out = String::new();
    if has(Via::Task) {
        out += "# task: M sender tasks and one receiver task, all on one thread (tokio's \
                current-thread runtime)\n";
    }
    if has(Via::TaskMt) {
        out += "# task-mt: M sender tasks and one receiver task on tokio's multi-thread \
                runtime\n";
    }
    if has(Via::Signal) {
        out += "# signal: N round trips between two processes; per msg = per signal, one way\n";
    }
    if has(Via::Pipe) || has(Via::Unix) {
        out += "# pipe, unix: -O does not apply (the kernel's buffer is the buffer)\n";
    }
    if has(Via::Shm) && r.params.nbuf.contains(&0) {
        out += "# shm: O=0 runs with one slot\n";
    }
    let peers = |pick: fn(PeerChan) -> bool| -> Vec<&str> {
        PeerChan::ALL
            .into_iter()
            .filter(|&p| pick(p) && has(Via::Peer(p)))
            .map(PeerChan::name)
            .collect()
    };
    let tasks = peers(|p| p.on_tasks());
    if !tasks.is_empty() {
        out += &format!(
            "# {}: M sender tasks and one receiver task as for task (names ending -mt: as for \
             task-mt)\n",
            tasks.join(", ")
        );
    }
    let one = peers(PeerChan::no_rendezvous);
    if !one.is_empty() && r.params.nbuf.contains(&0) {
        out += &format!(
            "# {}: no rendezvous channel; O=0 runs with one buffer\n",
            one.join(", ")
        );
    }
    out
}

/// Left-aligns the first column, right-aligns the rest; an empty row is a blank line.
fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 0 {
                let _ = write!(line, "{cell:<w$}", w = width[i]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = width[i]);
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// Four significant digits, without an exponent: 1234, 123.4, 1.234, 0.01234.
pub(crate) fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let digits = x.abs().log10().floor() as i32;
    let decimals = (3 - digits).clamp(0, 6) as usize;
    let s = format!("{x:.decimals$}");
    // 0.99996 rounds up to 1.0000: one digit too many.
    if decimals > 0 && s.trim_start_matches(['-', '0', '.']).len() > 5 {
        return format!("{x:.0$}", decimals - 1);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(123456.7), "123457");
        assert_eq!(sig(1234.56), "1235");
        assert_eq!(sig(123.456), "123.5");
        assert_eq!(sig(1.0), "1.000");
        assert_eq!(sig(0.012345), "0.01235");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(0.99996), "1.000");
        assert_eq!(sig(9.99996), "10.00");
        assert_eq!(sig(1e-9), "0.000000");
        assert_eq!(sig(f64::NAN), "-");
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(1.0), "1.00");
        assert_eq!(ratio(f64::NAN), "-");
    }

    #[test]
    fn csv_quoting() {
        assert_eq!(quote("spin"), "spin");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn markdown_tables() {
        let rows = vec![
            vec!["O".to_string(), "ns".to_string(), "lane".to_string()],
            vec!["10".to_string(), "1.5".to_string(), "kanal".to_string()],
        ];
        assert_eq!(
            pipes(&rows, |c| c == 1),
            "| O | ns | lane |\n|---|---:|---|\n| 10 | 1.5 | kanal |\n"
        );
    }

    #[test]
    fn alignment() {
        let rows = vec![
            vec!["lock".to_string(), "ns".to_string()],
            vec![],
            vec!["adaptive".to_string(), "1.5".to_string()],
        ];
        assert_eq!(align(&rows), "lock       ns\n\nadaptive  1.5\n");
    }
}
