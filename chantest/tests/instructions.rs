//! `--metric instructions`: counts under callgrind, judged exactly. Each run is a few small
//! processes under valgrind (seconds); the tests that need valgrind say so and pass without
//! it, the refusal when it is missing is tested with a PATH that lacks it.

mod common;

use common::{chantest, have_valgrind, run, script, stderr, stdout, Scratch, BIN};
use serde_json::Value;
use std::process::{Command, Output};

/// A few seconds a process for a debug build under callgrind. Each process's own start
/// differs by some ten thousand instructions from run to run (the allocator consolidates in
/// one run and not the next), which the difference of two processes does not cancel: 0.1-0.7 %
/// of the counts at N=2000 (CI once saw 1.1 %, past the 1 % threshold, and called the build
/// against itself inconclusive), 0.1-0.25 % at N=8000.
const SMALL: &str = "--metric instructions -N 8000 -O 10 -M 1 --lock adaptive";

fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("ir-{name}"))
}

fn one_line_usage_error(o: &Output, want: &str) {
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = stderr(o);
    assert!(
        err.starts_with("chantest: ") && err.contains(want),
        "{want}: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(o.stdout.is_empty(), "{o:?}");
}

#[test]
fn refuses_without_valgrind() {
    let empty = scratch("no-valgrind");
    let o = Command::new(BIN)
        .args(SMALL.split_whitespace())
        .env("PATH", &*empty)
        .output()
        .unwrap();
    one_line_usage_error(&o, "valgrind is not on PATH");
}

#[test]
fn refuses_what_it_cannot_count() {
    for (extra, want) in [
        ("--compare spin,sem", "does not go with --compare"),
        ("--budget 10s", "--budget goes with"),
        (
            "--baseline x.json --budget 10s",
            "does not go with --budget",
        ),
        ("--format csv", "does not go with --format csv"),
        ("--plain", "does not go with --plain"),
        ("--format plain", "does not go with --format plain"),
        ("--calibrate", "does not go with --calibrate"),
        ("--via shm", "--via shm runs two"),
        ("--metric cycles", "invalid value 'cycles'"),
    ] {
        let args = format!("--metric instructions {extra}")
            .replace("--metric instructions --metric", "--metric");
        let o = chantest(&args);
        one_line_usage_error(&o, want);
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-aids"),
    ignore = "needs --features test-aids (hold_ns)"
)]
fn aided_against_exit_statuses() {
    if !have_valgrind() {
        return;
    }
    let dir = scratch("against");
    // Itself: the same counts within a fraction of a percent, ok (0).
    let o = run(&format!("{SMALL} --against {BIN} --format json"), 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ch = &v["changes"][0];
    assert_eq!(ch["verdict"], "ok", "{ch}");
    assert!((ch["ratio"].as_f64().unwrap() - 1.0).abs() < 0.01, "{ch}");
    // A build whose lock busy-waits in every critical section runs many more instructions:
    // against the build without the wait it has regressed (1). (Improved, exit 0, is tested
    // against a doctored baseline below.) The wait is counted in loop turns: `hold_ns` times
    // its loop once per process, and under a loaded machine's callgrind two processes then
    // count differently, which makes the verdict inconclusive instead.
    let fast = script(
        &dir,
        "fast-chantest",
        &format!(r#"exec {BIN} "${{@/%:hold_loops=100/}}""#),
    );
    let o = run(
        &format!("--metric instructions -N 8000 -O 10 -M 1 --lock adaptive:hold_loops=100 --against {fast}"),
        1,
    );
    let out = stdout(&o);
    assert!(
        out.contains("REGRESSED") && out.contains("fast-chantest"),
        "{out}"
    );
    // A binary that is not chantest is refused in one line.
    let o = chantest(&format!("{SMALL} --against /bin/true"));
    one_line_usage_error(&o, "does not speak chantest's results format");
}

#[test]
fn counts_that_do_not_repeat_decide_nothing() {
    if !have_valgrind() {
        return;
    }
    let dir = scratch("no-repeat");
    // An "old build" whose second larger run sends twice the values asked for: its counts
    // per message do not repeat, as a lock that spin-waits under valgrind's thread switching
    // may not. It is still chantest answering, so only the check of repetition catches it.
    // (Another lock on the later runs was not enough: sem and adaptive count alike here.)
    let calls = dir.join("calls");
    let old = script(
        &dir,
        "wobbly-chantest",
        &format!(
            r#"n=$(($(cat {c} 2>/dev/null || echo 0) + 1)); echo $n > {c}
if [ $n -eq 4 ]; then exec {BIN} "${{@/#8000/16000}}"; fi
exec {BIN} "$@""#,
            c = calls.display()
        ),
    );
    let o = run(&format!("{SMALL} -R 2 --against {old} --format json"), 4);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ch = &v["changes"][0];
    assert_eq!(ch["verdict"], "inconclusive", "{ch}");
    assert!(
        ch["why"].as_str().unwrap().contains("old side's counts"),
        "{ch}"
    );
}

#[test]
fn baseline_exit_statuses() {
    if !have_valgrind() {
        return;
    }
    let dir = scratch("baseline");
    let base = dir.join("counts.json");
    let base_s = base.display().to_string();
    // Two counts, as a verdict needs from each side.
    let out = stdout(&run(&format!("{SMALL} -R 2 --save {base_s}"), 0));
    assert!(out.contains("instr/msg"), "{out}");
    assert!(out.contains("# not seen: waiting"), "{out}");
    // The same build against its saved counts: ok (0).
    let out = stdout(&run(
        &format!("--metric instructions --baseline {base_s}"),
        0,
    ));
    assert!(out.contains("baseline") && out.contains("ok"), "{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let doctor = |name: &str, f: &dyn Fn(&mut Value)| {
        let mut w = v.clone();
        f(&mut w["cells"][0]);
        let p = dir.join(name);
        std::fs::write(&p, w.to_string()).unwrap();
        p.display().to_string()
    };
    let (half, full) = (
        v["cells"][0]["ir_half"][0].as_u64().unwrap(),
        v["cells"][0]["ir_full"][0].as_u64().unwrap(),
    );
    assert_eq!(v["format"], "chantest-instructions");
    assert!(full > half, "{v}");
    let per = full - half;
    // Saved counts 5 % lower per message: today's build regressed (1).
    let lower = doctor("lower.json", &|c| {
        c["ir_half"] = Value::from(vec![half; 2]);
        c["ir_full"] = Value::from(vec![half + per * 95 / 100; 2]);
    });
    let out = stdout(&run(
        &format!("--metric instructions --baseline {lower}"),
        1,
    ));
    assert!(out.contains("REGRESSED"), "{out}");
    // Saved counts 5 % higher: improved (0).
    let higher = doctor("higher.json", &|c| {
        c["ir_half"] = Value::from(vec![half; 2]);
        c["ir_full"] = Value::from(vec![half + per * 105 / 100; 2]);
    });
    run(&format!("--metric instructions --baseline {higher}"), 0);
    // Saved repetitions that straddle today's count, beyond the threshold: inconclusive (4).
    let spread = doctor("spread.json", &|c| {
        c["ir_half"] = Value::from(vec![half; 3]);
        c["ir_full"] = Value::from(vec![
            half + per * 90 / 100,
            half + per * 105 / 100,
            half + per * 120 / 100,
        ]);
    });
    let out = stdout(&run(
        &format!("--metric instructions --baseline {spread} -R 2"),
        4,
    ));
    assert!(out.contains("old side's counts differ by"), "{out}");
    // Counts that fell as N doubled (a lock that spin-waits can do that): no verdict, and
    // no negative figure anywhere (a run once printed -589.4 instructions per message).
    let fell = doctor("fell.json", &|c| {
        c["ir_half"] = Value::from(vec![half; 2]);
        c["ir_full"] = Value::from(vec![half - per, half + per]);
    });
    let o = run(&format!("--metric instructions --baseline {fell}"), 4);
    let out = stdout(&o);
    assert!(out.contains("old side's counts fell as N doubled"), "{out}");
    let negative = |w: &str| {
        w.strip_prefix('-')
            .is_some_and(|d| d.starts_with(|c: char| c.is_ascii_digit()))
    };
    assert!(!out.split_whitespace().any(negative), "{out}");
    // One count a side decides nothing.
    let out = stdout(&run(&format!("{SMALL} -R 1 --baseline {base_s}"), 4));
    assert!(out.contains("give -R 2 or more"), "{out}");
    // A wall-time file is not counts, and counts are not a wall-time file.
    let times = dir.join("times.json").display().to_string();
    run(
        &format!("-N 300 -R 2 -M 1 --lock adaptive --save {times}"),
        0,
    );
    one_line_usage_error(
        &chantest(&format!("--metric instructions --baseline {times}")),
        "holds wall times",
    );
    one_line_usage_error(
        &chantest(&format!("--baseline {base_s}")),
        "--metric instructions",
    );
    // Cells the file does not have.
    one_line_usage_error(
        &chantest(&format!("--metric instructions --baseline {base_s} -M 2")),
        "has no cell",
    );
}
