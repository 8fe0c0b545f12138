//! The chantest binary as a user runs it: formats, exit statuses, baselines.
//!
//! Every run is tiny (a few thousand messages) so that the whole file takes seconds on two
//! cores. These tests run side by side, so a tiny run's time can swing tenfold; nothing here
//! depends on speed except through baselines doctored far beyond such swings.

mod common;

use common::{run, run_args, script, stderr, stdout, Scratch, BIN};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Flags that keep a run short.
const TINY: &str = "-N 300 -R 2";

/// Flags for a verdict between a build and one whose lock holds 20 us longer
/// (`hold_ns=20000`, as [`slow_build`] makes). At about 90 us a message, one sample of the
/// held side takes some 270 ms, far beyond the 20-50 ms a preemption adds to a sample of the
/// other on a loaded machine. With `-N 300` the two met: under three copies of this suite at
/// once a thousandfold change came out "ok" (interval [0.010, 1.036]) or needed a third look.
const HELD: &str = "-N 3000 -R 5 -M 1";

/// A fresh scratch directory for one test, whose path has no spaces (see [`run`]), removed
/// when the returned guard drops.
fn scratch(name: &str) -> Scratch {
    Scratch::new(name)
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("valid JSON")
}

#[test]
fn table_lists_every_cell() {
    let o = run(&format!("{TINY} -O 0,2 -M 1..2"), 0);
    let out = stdout(&o);
    assert!(out.starts_with("# N=300 values per sender, R=2"), "{out}");
    assert!(out.contains("ns/msg") && out.contains("ratio") && out.contains("vcsw/msg"));
    for lock in ["spin", "sem", "adaptive"] {
        let rows = out.lines().filter(|l| l.starts_with(lock)).count();
        assert_eq!(rows, 4, "{lock} in {out}");
    }
    assert!(
        stderr(&o).is_empty(),
        "no progress noise when stderr is not a terminal"
    );
}

#[test]
fn csv_has_the_documented_columns() {
    let o = run(
        &format!("{TINY} --format csv -O 0,1 -M 1,3 --lock sem,adaptive"),
        0,
    );
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "lock,O,M,N,reps,ns_per_msg,ns_per_msg_min,ns_per_msg_max,cycles_per_msg,cpu_ns_per_msg,\
         vcsw_per_msg,ivcsw_per_msg,ratio_to_ref,futex_waits_per_msg,futex_wakes_per_msg,\
         global_lock,ns_total,ns_total_min,ns_total_max,via,size,mb_per_s"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2 * 2 * 2);
    for row in &rows {
        assert_eq!(row.len(), 22, "{row:?}");
        assert_eq!((row[19], row[20]), ("chan", "8"));
        assert_eq!((row[3], row[4]), ("300", "2"));
        let [ns, lo, hi] = [5, 6, 7].map(|i| row[i].parse::<f64>().unwrap());
        assert!(0.0 < lo && lo <= ns && ns <= hi, "{row:?}");
    }
    // The reference is the first backend listed.
    assert!(rows.iter().filter(|r| r[0] == "sem").all(|r| r[12] == "1"));
}

#[test]
fn json_is_the_results_document() {
    let o = run(
        &format!("{TINY} --format json -O 1 -M 1,2 --lock adaptive"),
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    assert_eq!(v["format"], "chantest-results");
    assert_eq!(v["params"]["N"], 300);
    assert_eq!(v["params"]["M"], serde_json::json!([1, 2]));
    assert!(v["machine"]["nproc"].as_u64().unwrap() >= 1);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["samples"].as_array().unwrap().len(), 2);
        assert!(c["summary"]["ns_per_msg"]["median"].as_f64().unwrap() > 0.0);
    }
}

/// `--format plain`, and `--plain`, its older name, which keeps working.
#[test]
fn plain_prints_one_total_per_run() {
    for plain in ["--format plain", "--plain"] {
        let out = stdout(&run(
            &format!("{TINY} {plain} -M 1,2 --lock sem,adaptive"),
            0,
        ));
        let totals: Vec<u64> = out
            .lines()
            .map(|l| l.parse().expect("bare integer"))
            .collect();
        assert_eq!(totals.len(), 2 * 2 * 2, "{plain}: {out}");
        assert!(totals.iter().all(|&t| t > 0));
    }
}

#[test]
fn pinned_global_lock_runs() {
    let o = run(&format!("{TINY} --pin --global-lock -M 3"), 0);
    assert!(stdout(&o).contains("one global lock, pinned"));
}

/// `--pin=apart` runs where the mask holds two CPUs, and a baseline saved with it runs the same
/// way again; where the mask holds one, it is a usage error, not a silent spread.
#[test]
fn pinned_apart_keeps_the_receivers_cpu_and_is_remembered() {
    let dir = scratch("apart");
    let path = dir.join("apart.json");
    let path = path.display();
    let o = Command::new(BIN)
        .args(format!("{TINY} -M 3 --lock adaptive --pin=apart --save {path}").split(' '))
        .output()
        .expect("run chantest");
    match o.status.code() {
        Some(0) => {
            assert!(stdout(&o).contains("pinned with the receiver apart"));
            let saved = json(dir.join("apart.json").as_path());
            assert_eq!(saved["params"]["pin"], true);
            assert_eq!(saved["params"]["apart"], true);
            // Two repetitions decide nothing (exit 4); the header says how it ran.
            let again = run(&format!("--baseline {path} --threshold 10000"), 4);
            assert!(stdout(&again).contains("pinned with the receiver apart"));
        }
        Some(2) => assert!(stderr(&o).contains("needs two or more"), "{}", stderr(&o)),
        other => panic!("exit {other:?}: {}", stderr(&o)),
    }
    // One CPU, for certain, where taskset is there to say so.
    if let Ok(o) = Command::new("taskset")
        .args(["-c", "0", BIN, "-N", "300", "-R", "1", "--pin=apart"])
        .output()
    {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--pin=apart keeps a CPU for the receiver"));
    }
    // Spread, the bare flag's meaning, saves no `apart` at all (files stay as they were).
    let spread = dir.join("spread.json");
    run(
        &format!("{TINY} -M 1 --lock spin --pin --save {}", spread.display()),
        0,
    );
    let saved = json(&spread);
    assert_eq!(saved["params"]["pin"], true);
    assert!(saved["params"].get("apart").is_none(), "{saved}");
    run(&format!("{TINY} --pin apart"), 2);
}

#[test]
fn plot_draws_svg() {
    let dir = scratch("plot");
    let svg = dir.join("chan.svg");
    run(
        &format!("{TINY} -O 0,10 -M 1..3 --plot {}", svg.display()),
        0,
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    assert!(text.contains("M (senders)") && text.contains("ns per message"));
    assert!(text.contains("O = 0") && text.contains("O = 10"));
    assert_eq!(
        text.matches("<polyline").count(),
        2 * 3,
        "one line per backend per panel"
    );
}

#[test]
fn bad_input_is_one_line_and_status_2() {
    let dir = scratch("bad");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{ not json").unwrap();
    let wrong = dir.join("wrong.json");
    std::fs::write(&wrong, r#"{"format": "something-else", "version": 1}"#).unwrap();
    let (garbage, wrong, dir) = (garbage.display(), wrong.display(), dir.display());
    for (args, want) in [
        (vec!["-O", "abc"], "`abc` is not a number"),
        (vec!["-O", "-1"], "negative"),
        (vec!["-M", "0"], "out of range"),
        (vec!["-N", "0"], "out of range"),
        (vec!["-R", "0"], "out of range"),
        (vec!["-M", "8..1"], "empty"),
        (vec!["-O", ""], "wants a value"),
        (vec!["--lock", "mcs"], "unknown lock backend `mcs`"),
        (vec!["--lock", "adaptive:spin_ns=x"], "spin_ns"),
        (
            vec!["--lock", "spin,sem", "--ref", "adaptive"],
            "--ref adaptive",
        ),
        (vec!["--compare", "spin"], "two backends"),
        (vec!["--threshold", "x"], "fraction"),
        (vec!["--bogus"], "unexpected argument"),
    ] {
        check_usage_error(&args, want);
    }
    for (args, want) in [
        (
            format!("--baseline {dir}/missing.json"),
            "cannot read baseline",
        ),
        (
            format!("--baseline {garbage}"),
            "not a chantest results file",
        ),
        (format!("--baseline {wrong}"), "not a chantest results file"),
        (
            format!("--save {dir}/no/such/dir/out.json"),
            "cannot write --save",
        ),
        (format!("--plot {dir}"), "cannot write --plot"),
    ] {
        check_usage_error(&args.split_whitespace().collect::<Vec<_>>(), want);
    }
}

fn check_usage_error(args: &[&str], want: &str) {
    let o = run_args(args, 2);
    let err = stderr(&o);
    assert!(err.starts_with("chantest: "), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(stdout(&o).is_empty(), "{args:?}");
}

#[test]
fn a_lost_or_duplicated_value_is_status_3() {
    let err = stderr(&run(&format!("{TINY} --inject-fault -M 2"), 3));
    assert!(
        err.starts_with("chantest: channel check failed: sender 0's value 1"),
        "{err}"
    );
}

/// Saves a tiny baseline of two backends at two points, R=5 so that intervals exist.
fn save_baseline(dir: &Path) -> String {
    let path = dir.join("base.json").display().to_string();
    run(
        &format!("-N 2000 -R 5 -O 10 -M 1,2 --lock sem,adaptive --save {path}"),
        0,
    );
    path
}

#[test]
fn baseline_round_trip_passes() {
    let dir = scratch("roundtrip");
    let base = save_baseline(&dir);
    // Only a ten-thousandfold slowdown would count (a CI machine loaded with Miri has made a
    // repetition 250 times slower than its baseline). With five repetitions a side the
    // interval runs from the extreme ratios, so one stalled repetition leaves it undecided:
    // the budget buys repetitions until it is.
    let out = stdout(&run(
        &format!("--baseline {base} --threshold 10000 --budget 40s"),
        0,
    ));
    assert!(out.contains("new/old ns per message"), "{out}");
    assert!(
        out.contains("# 0 of 4 cells regressed, 0 inconclusive"),
        "{out}"
    );
    // The same cells named explicitly are accepted, and so is a subset; two repetitions
    // cannot give an interval, so that is inconclusive (exit 4), never ok.
    let o = run(
        &format!("--baseline {base} --threshold 10000 -M 2 --lock adaptive -R 2"),
        4,
    );
    assert!(stdout(&o).contains("inconclusive (~"), "{}", stdout(&o));
    let csv = stdout(&run(
        &format!("--baseline {base} --threshold 10000 --format csv --budget 40s"),
        0,
    ));
    let header = csv.lines().next().unwrap();
    // The change columns keep their old places; the transport columns come last.
    assert!(
        header.ends_with(
            ",ns_total_max,vs,vs_ns_per_msg,ratio,ratio_ci_low,ratio_ci_high,verdict,via,size,\
             mb_per_s"
        ),
        "{header}"
    );
}

#[test]
fn baseline_cells_must_match() {
    let dir = scratch("mismatch");
    let base = save_baseline(&dir);
    for extra in ["-O 0", "-M 3", "-N 1000", "--lock spin", "--global-lock"] {
        let o = run(&format!("--baseline {base} {extra}"), 2);
        assert!(
            stderr(&o).contains("has no cell"),
            "{extra}: {}",
            stderr(&o)
        );
    }
}

/// Writes `path` to `out` with every stored `ns` replaced by `f(ns)`.
fn doctor(path: &str, out: &Path, f: impl Fn(u64) -> u64) {
    let mut v = json(Path::new(path));
    for cell in v["cells"].as_array_mut().unwrap() {
        for sample in cell["samples"].as_array_mut().unwrap() {
            let ns = sample["ns"].as_u64().unwrap();
            sample["ns"] = Value::from(f(ns).max(1));
        }
    }
    std::fs::write(out, v.to_string()).unwrap();
}

#[test]
fn a_doctored_baseline_is_a_regression() {
    let dir = scratch("doctored");
    let base = save_baseline(&dir);
    // Stored times divided by a thousand: today's run looks a thousand times slower. Halving
    // would do on a quiet machine, but not beside the other tests, where a tiny run's time
    // can swing tenfold; no swing comes near a thousandfold.
    let fast = dir.join("fast.json");
    doctor(&base, &fast, |ns| ns / 1000);
    // --budget: under load one preempted repetition can leave even a thousandfold gap
    // undecided at five (it once read "ok"); more are added until it is decided,
    // so the verdict, not the time, is tested.
    let o = run(
        &format!("--baseline {} --threshold 0.2 --budget 40s", fast.display()),
        1,
    );
    let out = stdout(&o);
    assert_eq!(out.matches("REGRESSED").count(), 4, "{out}");
    // One build against its own saved run: no layout to differ.
    assert!(!out.contains("align-loops"), "{out}");
    // And a baseline a thousand times slower is an improvement, not a regression.
    let slow = dir.join("slow.json");
    doctor(&base, &slow, |ns| ns * 1000);
    let o = run(
        &format!(
            "--baseline {} --threshold 0.2 --budget 40s --format json",
            slow.display()
        ),
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 4);
    assert!(
        changes.iter().all(|c| c["verdict"] == "improved"),
        "{changes:?}"
    );
}

#[test]
fn a_malformed_baseline_is_status_2() {
    let dir = scratch("malformed");
    let base = save_baseline(&dir);
    let mut v = json(Path::new(&base));
    v["cells"][0]["samples"] = Value::Array(vec![]);
    let bad = dir.join("bad.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let o = run(&format!("--baseline {}", bad.display()), 2);
    assert!(stderr(&o).contains("no samples"), "{}", stderr(&o));
}

#[test]
fn save_may_overwrite_its_baseline() {
    let dir = scratch("overwrite");
    let base = save_baseline(&dir);
    run(
        &format!("--baseline {base} --save {base} --threshold 10000 -R 2"),
        4,
    );
    assert_eq!(json(Path::new(&base))["params"]["reps"], 2);
}

#[test]
fn compare_reports_b_against_a() {
    let o = run(
        "-N 2000 -R 5 -M 1,2 --compare adaptive,adaptive --threshold 10000 --budget 40s",
        0,
    );
    let out = stdout(&o);
    assert!(out.contains("adaptive (A)"), "{out}");
    assert!(out.contains("# 0 of 2 cells regressed"), "{out}");
    let o = run(&format!("{TINY} --compare sem,adaptive --format json"), 4);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["changes"][0]["verdict"], "inconclusive",
        "2 reps a side cannot reach 95%"
    );
    assert_eq!(v["changes"][0]["reps"], 2);
    assert!(v["changes"][0]["more_reps"].as_u64().unwrap() >= 2);
}

#[test]
fn against_itself_runs_both_sides_interleaved() {
    // The other build is this one, reached through a checkout-shaped path of the test's own
    // making, so that the name it is given does not depend on where cargo put the target
    // directory (CARGO_TARGET_DIR may be anywhere).
    let dir = scratch("against-itself");
    let profile = dir.join("ck/target/debug");
    std::fs::create_dir_all(&profile).unwrap();
    let other = profile.join("chantest");
    std::os::unix::fs::symlink(BIN, &other).unwrap();
    let other = other.display().to_string();
    // Itself, with a ten-thousandfold threshold: the verdict cannot be "regressed", and
    // once the budget has bought enough repetitions past any stalled one, every interval
    // lies below 10001.
    let o = run(
        &format!("-N 2000 -R 5 -O 10 -M 1,2 --lock adaptive --against {other} --threshold 10000 --budget 40s --format json"),
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2);
    for c in changes {
        assert_eq!(c["verdict"], "ok", "{c}");
        assert!(c["reps"].as_u64().unwrap() >= 5, "{c}");
        assert_eq!(c["against_exe"], other);
        // The vs column names the other build briefly: the checkout it was built in.
        assert_eq!(c["against"], "ck (debug)", "{c}");
    }
    assert!(v["cells"][0]["samples"].as_array().unwrap().len() >= 5);
}

#[test]
#[cfg_attr(
    not(feature = "test-aids"),
    ignore = "needs --features test-aids (hold_ns)"
)]
fn aided_against_exit_statuses() {
    let dir = scratch("against-status");
    // Too few repetitions for any interval: inconclusive, exit 4.
    let o = run(
        &format!("-N 500 -R 2 -M 1 --lock adaptive --against {BIN}"),
        4,
    );
    assert!(stdout(&o).contains("inconclusive"), "{}", stdout(&o));
    // A build whose lock holds 20 us longer per acquisition is a thousandfold slower: this
    // build against it is an improvement (exit 0) ...
    // (`--budget`: on a loaded machine five repetitions can leave even a thousandfold gap
    // undecided; more are added until it is decided, so the verdict, not the time, is tested.)
    let slow = slow_build(&dir);
    let o = run(
        &format!("{HELD} --lock adaptive --budget 60s --against {slow} --format json"),
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["changes"][0]["verdict"], "improved", "{v}");
    // ... and the other way round, regressed (exit 1): this build runs the held lock, the
    // "old" one a wrapper that drops the hold.
    let fast = script(
        &dir,
        "fast-chantest",
        &format!(r#"exec {BIN} "${{@/%:hold_ns=20000/}}""#),
    );
    let o = run(
        &format!("{HELD} --lock adaptive:hold_ns=20000 --budget 60s --against {fast}"),
        1,
    );
    assert!(stdout(&o).contains("REGRESSED"), "{}", stdout(&o));
    // Two builds: the verdict says that where the code lies can be the difference.
    assert!(stdout(&o).contains("align-loops=64"), "{}", stdout(&o));
}

#[test]
fn against_refuses_what_is_not_chantest() {
    let dir = scratch("against-refuse");
    let garbage = script(&dir, "garbage", "echo 'hello, world'");
    let other = script(
        &dir,
        "other-format",
        r#"echo '{"format": "other", "version": 1}'"#,
    );
    let future = script(
        &dir,
        "future",
        r#"echo '{"format": "chantest-results", "version": 2}'"#,
    );
    let refuses = script(
        &dir,
        "refuses",
        "echo 'error: unexpected argument' >&2; exit 2",
    );
    for (old, want) in [
        ("/bin/true".to_string(), "printed nothing"),
        (garbage, "not JSON"),
        (other, "`other` document"),
        (future, "version 2"),
        (refuses, "refused"),
        (format!("{}/missing", dir.display()), "cannot run"),
    ] {
        let o = run(&format!("-N 300 -R 2 --lock adaptive --against {old}"), 2);
        let err = stderr(&o);
        assert!(err.contains(want), "{old}: {err}");
        assert!(err.contains("chantest"), "{old}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{old}: {err}");
    }
}

#[test]
fn against_a_binary_that_never_answers_is_killed() {
    let dir = scratch("against-sleeps");
    // A child of the script holds the pipes open: killing the script alone would not do.
    let sleeper = script(&dir, "sleeper", "sleep 1000; echo late");
    let t = std::time::Instant::now();
    let o = run(
        &format!("-N 300 -R 2 --lock adaptive --against {sleeper} --budget 2s"),
        2,
    );
    let err = stderr(&o);
    // Within the 2 s budget, or within ten times this build's slowest answer if that is
    // longer (`answer_limit`): a loaded machine made it 2.2 s once, so the figure is not
    // pinned here; the elapsed-time bound below is what matters.
    assert!(
        err.starts_with(&format!(
            "chantest: --against: {sleeper} did not answer within "
        )) && err.contains("(killed it)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(stdout(&o).is_empty());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn budget_adds_repetitions_until_decided_or_spent() {
    // A/A with no threshold can hardly ever be decided (ok would need the interval wholly
    // below 1), so repetitions go on until the two-second budget is spent.
    let o = Command::new(BIN)
        .args([
            "-N",
            "300",
            "-R",
            "4",
            "-M",
            "1",
            "--lock",
            "adaptive",
            "--against",
            BIN,
        ])
        .args(["--threshold", "0", "--budget", "2s", "--format", "json"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1 | 4)), "{o:?}");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let reps = v["changes"][0]["reps"].as_u64().unwrap();
    // (On a loaded machine drift between the first four processes a side can decide even A/A
    // at the first look; an undecided cell must have had more.)
    if v["changes"][0]["verdict"] == "inconclusive" {
        assert!(reps > 4, "the budget added repetitions: {reps}");
    }
    assert_eq!(
        v["cells"][0]["samples"].as_array().unwrap().len() as u64,
        reps
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-aids"),
    ignore = "needs --features test-aids (hold_ns)"
)]
fn aided_budget_stops_once_every_cell_is_decided() {
    let dir = scratch("budget-decided");
    let slow = slow_build(&dir);
    // A hundredfold difference is decided at the first look (R = 5) or the second (2R): the
    // run stops there (counted, not timed, so a slow machine cannot fail it; a 24 ms
    // preemption of one sample beside a background calibration once cost a look), far from
    // the hundreds 60 s would buy.
    let o = run(
        &format!("{HELD} --lock adaptive --against {slow} --budget 60s --format json"),
        0,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let reps = v["changes"][0]["reps"].as_u64().unwrap();
    assert!(reps == 5 || reps == 10, "{v}");
}

/// A "build" whose adaptive lock busy-waits 20 us in every critical section: this chantest
/// with `hold_ns=20000` added to its `--lock adaptive`.
/// Runs against it use [`HELD`].
fn slow_build(dir: &Path) -> String {
    script(
        dir,
        "slow-chantest",
        &format!(r#"exec {BIN} "${{@/#adaptive/adaptive:hold_ns=20000}}""#),
    )
}

#[test]
fn budget_re_runs_this_side_of_a_baseline() {
    let dir = scratch("budget-baseline");
    let saved = save_baseline(&dir);
    // A baseline whose five samples spread a millionfold, from a thousand times faster to a
    // thousand times slower than they were: no number of new samples narrows the interval
    // to a decision (however loaded the machine is today), so the whole budget is spent on
    // the new side, and the baseline's five samples stay five.
    let mut v = json(Path::new(&saved));
    for cell in v["cells"].as_array_mut().unwrap() {
        for (i, sample) in cell["samples"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            let ns = sample["ns"].as_u64().unwrap();
            sample["ns"] = Value::from([ns / 1000, ns / 1000, ns, ns * 1000, ns * 1000][i].max(1));
        }
    }
    let base = dir.join("wide.json").display().to_string();
    std::fs::write(&base, v.to_string()).unwrap();
    let o = run_args(
        &[
            "--baseline",
            &base,
            "-M",
            "1",
            "--lock",
            "adaptive",
            "--budget",
            "10s",
            "--format",
            "json",
        ],
        4,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let c = &v["changes"][0];
    assert_eq!(c["old_reps"], 5, "{c}");
    assert!(c["new_reps"].as_u64().unwrap() > 5, "{c}");
    assert!(c["reps"].as_u64().unwrap() >= 5, "{c}");
    assert_eq!(
        v["cells"][0]["samples"].as_array().unwrap().len() as u64,
        c["new_reps"].as_u64().unwrap()
    );
    // The table says how many each side had.
    let o = run_args(
        &[
            "--baseline",
            &base,
            "-M",
            "1",
            "--lock",
            "adaptive",
            "--budget",
            "10s",
        ],
        4,
    );
    let out = stdout(&o);
    assert!(
        out.contains("/5 ") && out.contains("# reps new/old"),
        "{out}"
    );
}

#[test]
fn budget_exit_statuses_with_a_baseline() {
    let dir = scratch("budget-baseline-status");
    let base = save_baseline(&dir);
    // A thousand times faster baseline: regressed (1), decided at the first look that can
    // decide: R, or 2R when R repetitions give no interval at the error the first of a
    // budget's looks may spend (half of it, split over the cells).
    let fast = dir.join("fast.json");
    doctor(&base, &fast, |ns| ns / 1000);
    let fast = fast.display();
    let o = run(
        &format!("--baseline {fast} --threshold 0.2 --budget 60s --format json"),
        1,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["new_reps"] == 5 || c["new_reps"] == 10),
        "{v}"
    );
    // A thousand times slower: improved (0).
    let slow = dir.join("slow.json");
    doctor(&base, &slow, |ns| ns * 1000);
    run(
        &format!("--baseline {} --threshold 0.2 --budget 60s", slow.display()),
        0,
    );
    // Undecidable within a tiny budget (no threshold, the same build): inconclusive (4) or,
    // rarely, decided either way; never a usage error.
    let o = Command::new(BIN)
        .args(["--baseline", &base, "--threshold", "0", "--budget", "500ms"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1 | 4)), "{o:?}");
}

#[test]
fn a_spent_budget_leaves_undecided_cells_inconclusive() {
    // A budget spent before the first look: the first -R repetitions stand, and two a side
    // (or two against the file's five) are too few for any interval: exit 4, deterministically.
    let dir = scratch("budget-spent");
    let base = save_baseline(&dir);
    let o = run(
        &format!("--baseline {base} -R 2 --budget 1ms --format json"),
        4,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for c in v["changes"].as_array().unwrap() {
        assert_eq!(
            (c["new_reps"].as_u64(), c["old_reps"].as_u64()),
            (Some(2), Some(5)),
            "{c}"
        );
        assert_eq!(c["verdict"], "inconclusive", "{c}");
    }
    run(&format!("{TINY} --compare spin,sem --budget 1ms"), 4);
}

#[test]
#[cfg_attr(
    not(feature = "test-aids"),
    ignore = "needs --features test-aids (hold_ns)"
)]
fn aided_budget_re_runs_both_backends_of_a_compare() {
    // A backend against itself with no threshold: the budget adds rounds to both sides alike.
    let o = Command::new(BIN)
        .args([
            "-N",
            "300",
            "-R",
            "4",
            "-M",
            "1",
            "--compare",
            "adaptive,adaptive",
        ])
        .args(["--threshold", "0", "--budget", "2s", "--format", "json"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1 | 4)), "{o:?}");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let c = &v["changes"][0];
    // (Drift on a loaded machine can decide even A/A at the first look; an undecided cell
    // must have had more rounds.)
    if c["verdict"] == "inconclusive" {
        assert!(c["reps"].as_u64().unwrap() > 4, "{c}");
    }
    assert_eq!(c["new_reps"], c["old_reps"], "{c}");
    // A hold of 20 us per acquisition against none: decided at once, regressed (1) ...
    let o = run(
        &format!("{HELD} --compare adaptive,adaptive:hold_ns=20000 --budget 60s --format json"),
        1,
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["changes"][0]["verdict"], "regressed", "{v}");
    // ... and the other way round, improved (0).
    run(
        &format!("{HELD} --compare adaptive:hold_ns=20000,adaptive --budget 60s"),
        0,
    );
}

#[test]
fn version_names_the_build() {
    // Two builds in an --against run must be told apart: the commit (with `+changes` and the
    // build time when the tree differed), or outside a git checkout the build time.
    let out = stdout(&run("--version", 0));
    assert!(
        out.starts_with(concat!("chantest ", env!("CARGO_PKG_VERSION"), " (")),
        "{out}"
    );
    assert!(out.contains("(commit ") || out.contains("(built "), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn a_short_run_off_a_terminal_prints_nothing_on_stderr() {
    // The estimate and the periodic lines are for runs over a minute (tested in progress.rs
    // with made-up times); a short run stays quiet.
    let o = run(TINY, 0);
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

#[test]
#[cfg_attr(
    not(feature = "test-aids"),
    ignore = "needs --features test-aids (hold_ns)"
)]
fn aided_budget_and_calibrate_flags_are_checked() {
    for (args, want) in [
        (
            "--budget 10s",
            "--budget goes with --against, --baseline, --compare or --calibrate",
        ),
        ("--budget 10x --calibrate", "not a duration"),
        ("--budget 0s --calibrate", "out of range"),
        ("--hold-ns 50", "--hold-ns goes with --calibrate"),
        ("--calibrate --lock spin", "adaptive lock"),
        ("--calibrate --lock adaptive:hold_ns=5", "leave it out"),
        ("--calibrate --runs 1", "two counts"),
        ("--calibrate --via pipe", "leave out --via"),
        (
            "--against /bin/true --baseline x.json",
            "cannot be used with",
        ),
    ] {
        check_usage_error(&args.split_whitespace().collect::<Vec<_>>(), want);
    }
}
