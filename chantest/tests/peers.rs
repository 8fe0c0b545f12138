//! The peers as transports, as a user runs them: one table with ours, every value checked
//! (a broken peer adapter is exit 3), and the verdicts (`--compare`, `--against`,
//! `--baseline`, `--ref`) on peer lanes. Tiny runs, as in `cli.rs`.
#![cfg(feature = "peers")]

mod common;

use common::{run, run_env, stderr, stdout, BIN};
use serde_json::Value;
use std::process::Command;

/// The test hook that breaks every peer's sending end (it drops each sender's third value).
const BROKEN: (&str, &str) = ("CHANTEST_BROKEN_PEER", "1");

/// How many table rows name `via` in the via column.
fn rows(table: &str, via: &str) -> usize {
    table
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(via))
        .count()
}

#[test]
fn thread_peers_share_one_table_with_chan() {
    let o = run(
        "-N 300 -R 1 -O 0,1 -M 1,2 --lock adaptive --via chan,kanal,crossbeam,flume,std",
        0,
    );
    let out = stdout(&o);
    for via in ["chan", "kanal", "crossbeam", "flume", "std"] {
        assert_eq!(rows(&out, via), 4, "{via} in {out}");
    }
}

#[test]
fn task_peers_share_one_table_with_task() {
    let vias = "task,task-mt,kanal-async,flume-async,async-channel,tokio,kanal-async-mt,\
                flume-async-mt,async-channel-mt,tokio-mt";
    let o = run(
        &format!("-N 300 -R 1 -O 0,1 -M 1,2 --lock adaptive --via {vias}"),
        0,
    );
    let out = stdout(&o);
    for via in vias.split(',') {
        assert_eq!(rows(&out, via), 4, "{via} in {out}");
    }
    assert!(
        out.contains("async-channel, async-channel-mt, tokio, tokio-mt: no rendezvous channel"),
        "{out}"
    );
}

#[test]
fn a_broken_peer_adapter_is_status_3() {
    for via in [
        "kanal",
        "crossbeam",
        "flume",
        "std",
        "flume-async",
        "tokio-mt",
    ] {
        let o = run_env(&format!("-N 300 -R 1 -M 2 --via {via}"), &[BROKEN], 3);
        let err = stderr(&o);
        assert!(
            err.starts_with("chantest: channel check failed: sender ")
                && err.contains("while 2 was expected: 1 value(s) lost"),
            "{via}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{via}: {err}");
    }
    // The hook breaks the peers' adapters only: our channel beside them still passes.
    run_env("-N 300 -R 1 --lock adaptive --via chan,task", &[BROKEN], 0);
    // Fewer values than the lost one's place: nothing is lost, nothing is flagged.
    run_env("-N 2 -R 1 --via kanal", &[BROKEN], 0);
    // The runner's own fault (a duplicate) is caught on a peer too.
    let o = run("-N 300 -R 1 -M 2 --via kanal-async --inject-fault", 3);
    assert!(stderr(&o).contains("arrived again"), "{}", stderr(&o));
}

#[test]
fn ref_names_a_peer() {
    let o = run(
        "-N 300 -R 1 -O 0,10 --lock sem,adaptive --via chan,kanal --ref kanal --format csv",
        0,
    );
    let out = stdout(&o);
    let kanal: Vec<&str> = out.lines().filter(|l| l.contains(",kanal,")).collect();
    assert_eq!(kanal.len(), 2, "{out}");
    // ratio_to_ref is column 13: kanal against itself.
    assert!(
        kanal.iter().all(|l| l.split(',').nth(12) == Some("1")),
        "{out}"
    );
    let o = run(
        "-N 300 -R 1 -O 0,10 --lock adaptive --via chan,kanal --ref kanal --format markdown",
        0,
    );
    let md = stdout(&o);
    assert!(md.starts_with("N=300 values per sender, R=1"), "{md}");
    assert!(md.contains("ratio to kanal"), "{md}");
    assert!(
        md.contains("| O | M | chan/adaptive | kanal | fastest |"),
        "{md}"
    );
    assert!(md.contains("|---|---|---:|---:|---|"), "{md}");
    let body: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| 0 ") || l.starts_with("| 10 "))
        .collect();
    assert_eq!(body.len(), 2, "{md}");
    assert!(body.iter().all(|l| l.contains("(1.00) |")), "{md}");
}

#[test]
fn compare_runs_beside_peer_lanes() {
    // A/A with a ten-thousandfold threshold: ok, whatever the noise; kanal runs in the same turns.
    let o = run(
        "-N 2000 -R 5 -M 1 --via chan,kanal --compare adaptive,adaptive --threshold 10000 --budget 40s",
        0,
    );
    let out = stdout(&o);
    assert_eq!(rows(&out, "kanal"), 1, "{out}");
    assert!(out.contains("# 0 of 1 cells regressed"), "{out}");
    // And a broken peer adapter fails the comparison: every lane is checked.
    run_env(
        "-N 300 -R 5 -M 1 --via chan,kanal --compare adaptive,adaptive",
        &[BROKEN],
        3,
    );
}

#[test]
fn compare_with_an_async_peer_runs_ours_on_its_runtime() {
    // kanal-async (A) against adaptive over task, the current-thread runtime kanal-async runs
    // on, without --via; one process per repetition, and the budget re-runs both sides.
    let args = "-N 300 -R 3 -O 1 -M 1 --compare kanal-async,adaptive --per-process \
                --threshold 0 --budget 3s --format json";
    let o = Command::new(BIN)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    // Ok, regressed or undecided: a threshold of 0 leaves it to the noise.
    assert!(matches!(o.status.code(), Some(0 | 1 | 4)), "{o:?}");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let vias: Vec<&str> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["via"].as_str().unwrap())
        .collect();
    assert_eq!(vias, ["task", "kanal-async"], "{v}");
    let c = &v["changes"][0];
    assert_eq!(c["against"], "kanal-async (A)", "{c}");
    assert_eq!(c["new_reps"], c["old_reps"], "{c}");
    if c["verdict"] == "inconclusive" {
        assert!(
            c["reps"].as_u64().unwrap() > 3,
            "the budget added repetitions: {c}"
        );
    }
    // The multi-thread peer brings task-mt.
    let o = run(
        "-N 300 -R 5 -O 1 -M 1 --compare kanal-async-mt,adaptive --threshold 10000 --budget 20s",
        0,
    );
    assert_eq!(rows(&stdout(&o), "task-mt"), 1, "{}", stdout(&o));
    // Every lane is checked in its own process too: a broken peer is exit 3.
    run_env(
        "-N 300 -R 3 -M 1 --compare kanal,adaptive --per-process",
        &[BROKEN],
        3,
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-aids"),
    ignore = "needs --features test-aids (hold_ns)"
)]
fn aided_compare_asks_whether_ours_is_slower_than_a_peer() {
    // kanal (A) against adaptive over chan (B), with a ten-thousandfold threshold: ok.
    let o = run(
        "-N 2000 -R 5 -O 10 -M 1,2 --compare kanal,adaptive --threshold 10000 --budget 40s",
        0,
    );
    let out = stdout(&o);
    assert!(out.contains("ratio to kanal"), "{out}");
    assert_eq!(out.matches("kanal (A)").count(), 2, "{out}");
    assert!(out.contains("# 0 of 2 cells regressed"), "{out}");
    // Ours with a 20 us hold in every critical section is a thousandfold slower: regressed
    // (a loaded machine narrows the gap; the budget buys repetitions until it is decided).
    let o = run(
        "-N 3000 -R 5 -O 10 -M 1 --compare kanal,adaptive:hold_ns=20000 --threshold 0.2 \
         --format markdown --budget 60s",
        1,
    );
    let md = stdout(&o);
    assert!(
        md.contains("| adaptive:hold_ns=20000 | kanal (A) | 10 | 1 |"),
        "{md}"
    );
    assert!(md.contains("REGRESSED"), "{md}");
    // Every lane is checked: a broken kanal adapter is exit 3, not a verdict.
    run_env("-N 300 -R 5 --compare kanal,adaptive", &[BROKEN], 3);
}

#[test]
fn against_judges_peer_lanes() {
    let o = run(
        &format!(
            "-N 2000 -R 5 -O 10 -M 1 --lock adaptive --via chan,kanal --ref kanal \
             --against {BIN} --budget 60s --threshold 10000 --format json"
        ),
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["params"]["reference"], "kanal");
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2);
    // One verdict per lane: ours (by its lock), kanal (which takes none).
    let locks: Vec<&str> = changes
        .iter()
        .map(|c| c["lock"].as_str().unwrap())
        .collect();
    assert_eq!(locks, ["adaptive", "-"]);
    assert!(changes.iter().all(|c| c["verdict"] == "ok"), "{changes:?}");
    // Every side's peer is checked: a broken adapter (in both builds here) is exit 3.
    let o = run_env(
        &format!("-N 300 -R 2 -M 1 --via kanal --against {BIN}"),
        &[BROKEN],
        3,
    );
    assert!(stderr(&o).contains("1 value(s) lost"), "{}", stderr(&o));
}

#[test]
fn a_baseline_keeps_its_peer_lanes_and_reference() {
    let dir = std::env::temp_dir().join(format!("chantest-{}-peer-base", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("base.json").display().to_string();
    run(
        &format!("-N 2000 -R 5 -O 10 -M 1 --lock adaptive --via chan,crossbeam --ref crossbeam --save {base}"),
        0,
    );
    let out = stdout(&run(
        &format!("--baseline {base} --threshold 10000 --budget 40s"),
        0,
    ));
    assert!(
        out.starts_with("# N=2000") && out.contains("ratio to crossbeam"),
        "{out}"
    );
    assert!(out.contains("# 0 of 2 cells regressed"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn per_process_runs_each_repetition_alone() {
    let o = run(
        "-N 300 -R 2 -O 0,10 -M 1 --lock adaptive --via chan,kanal --per-process --format json",
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    assert!(
        cells
            .iter()
            .all(|c| c["samples"].as_array().unwrap().len() == 2),
        "{v}"
    );
    // The children inherit the environment: a broken adapter is still caught, exit 3.
    run_env("-N 300 -R 1 --via kanal --per-process", &[BROKEN], 3);
}

#[test]
fn bad_peer_input_is_one_line_and_status_2() {
    for (args, want) in [
        ("--via kanal -S 16", "--via kanal carries 8-byte values"),
        (
            "--via chan --ref kanal",
            "kanal (--ref, or --compare's A) is not among",
        ),
        (
            "--via chan --compare kanal,sem",
            "kanal (--ref, or --compare's A) is not among",
        ),
        ("--compare kanal,tokio", "unknown lock backend `tokio`"),
        (
            "--via kanal --compare kanal,sem",
            "--via must include exactly one of chan",
        ),
        ("--via kanal,kanal", "listed twice"),
        ("--via tokio --ref tokyo", "unknown lock backend"),
        ("--per-process --inject-fault", "cannot be used with"),
    ] {
        let o = run(args, 2);
        let err = stderr(&o);
        assert!(
            err.starts_with("chantest: ") && err.contains(want),
            "{args}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args}: {err}");
        assert!(stdout(&o).is_empty(), "{args}");
    }
}
