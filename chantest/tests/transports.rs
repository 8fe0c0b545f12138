//! `--via` and `-S` as a user runs them: every transport moves a small workload intact (the
//! task transports beside the threads, in the same table), a dead peer is an error and not a
//! hang, bad input is exit 2.
//!
//! Every run is a few thousand messages and one or two repetitions. Each is started with a
//! deadline far beyond what it needs (a hang must fail the test, not stall CI) and nothing
//! here depends on speed.

mod common;

use common::{Scratch, BIN};
use serde_json::Value;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long any one run may take before the test calls it hung.
const DEADLINE: Duration = Duration::from_secs(60);

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs chantest with `args` (split at whitespace) and `env`, killing it at [`DEADLINE`].
fn run_env(args: &str, env: &[(&str, &str)]) -> Ran {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(args.split_whitespace())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chantest");
    let (out, err) = (drain(&mut child, true), drain(&mut child, false));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chantest") {
            break status;
        }
        // A hang guard, not a speed check: a run that never ends must fail, not stall CI.
        if Instant::now() > started + DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chantest {args} still running after {DEADLINE:?}: hung");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ran {
        code: status.code(),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
        took: started.elapsed(),
    }
}

/// Reads the child's stdout or stderr on a thread, so that a full pipe cannot block it.
fn drain(child: &mut Child, stdout: bool) -> std::thread::JoinHandle<String> {
    let mut pipe: Box<dyn Read + Send> = if stdout {
        Box::new(child.stdout.take().expect("piped stdout"))
    } else {
        Box::new(child.stderr.take().expect("piped stderr"))
    };
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    })
}

/// Runs chantest and asserts its exit status.
fn run(args: &str, status: i32) -> Ran {
    let r = run_env(args, &[]);
    assert_eq!(
        r.code,
        Some(status),
        "chantest {args}\nstdout: {}\nstderr: {}",
        r.stdout,
        r.stderr
    );
    r
}

/// The rows of a CSV report, by column name.
fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            head.iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// `--lock LOCK` for a transport that takes one of our locks (one backend keeps the run
/// short); nothing for one that takes none, where chantest refuses `--lock`.
fn lock(via: &str, lock: &str) -> String {
    match via {
        "chan" | "task" | "task-mt" => format!("--lock {lock}"),
        _ => String::new(),
    }
}

#[test]
fn every_transport_moves_the_workload_intact() {
    for via in ["chan", "task", "task-mt", "pipe", "unix", "shm"] {
        let r = run(
            &format!(
                "--via {via} -N 2000 -M 1,2 -R 1 {} --format csv",
                lock(via, "adaptive")
            ),
            0,
        );
        let rows = csv_rows(&r.stdout);
        assert_eq!(rows.len(), 2, "{via}: {}", r.stdout);
        for row in &rows {
            assert_eq!(row["via"], via);
            assert!(row["ns_per_msg"].parse::<f64>().unwrap() > 0.0);
        }
    }
    let r = run("--via signal -N 2000 -R 1 --format csv", 0);
    let rows = csv_rows(&r.stdout);
    assert_eq!((rows.len(), rows[0]["via"].as_str()), (1, "signal"));
}

#[test]
fn large_messages_are_written_read_and_counted() {
    for via in ["pipe", "shm", "unix", "chan", "task", "task-mt"] {
        let r = run(
            &format!(
                "--via {via} -S 4096 -N 500 -M 1,2 -O 2 -R 1 {} --format csv",
                lock(via, "sem")
            ),
            0,
        );
        for row in csv_rows(&r.stdout) {
            assert_eq!(row["size"], "4096", "{via}");
            let (ns, mbs): (f64, f64) = (
                row["ns_per_msg"].parse().unwrap(),
                row["mb_per_s"].parse().unwrap(),
            );
            assert!(
                (mbs - 4096.0 / ns * 1e3).abs() < 1e-6 * mbs,
                "{via}: {row:?}"
            );
        }
    }
    // Bigger than PIPE_BUF with several writers: they take turns, and the data survives.
    run("--via pipe,unix -S 8k -N 300 -M 3 -R 1", 0);
    // shm with O=0 runs with one slot.
    let r = run("--via shm -S 16 -O 0 -N 500 -M 2 -R 1", 0);
    assert!(r.stdout.contains("O=0 runs with one slot"), "{}", r.stdout);
}

#[test]
fn transports_side_by_side_with_ratios_to_chan() {
    let r = run(
        "--via chan,pipe,unix,shm -N 1000 -M 1,2 -R 1 --lock spin,adaptive --ref adaptive",
        0,
    );
    let out = &r.stdout;
    assert!(out.contains("ratio to chan/adaptive"), "{out}");
    let head = out.lines().nth(1).unwrap();
    assert!(head.starts_with("lock") && head.contains(" via "), "{head}");
    for via in ["pipe", "unix", "shm"] {
        let rows = out
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(via))
            .count();
        assert_eq!(rows, 2, "{via} in {out}");
    }
    let r = run(
        "--via chan,pipe -N 1000 -M 1 -R 1 --lock spin,adaptive --ref adaptive --format csv",
        0,
    );
    let rows = csv_rows(&r.stdout);
    let adaptive = rows.iter().find(|r| r["lock"] == "adaptive").unwrap();
    assert_eq!(adaptive["ratio_to_ref"], "1");
    let pipe = rows.iter().find(|r| r["via"] == "pipe").unwrap();
    assert_eq!(pipe["lock"], "-");
    let want =
        pipe["ns_per_msg"].parse::<f64>().unwrap() / adaptive["ns_per_msg"].parse::<f64>().unwrap();
    let got = pipe["ratio_to_ref"].parse::<f64>().unwrap();
    assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    // Without chan, the first transport listed is the reference.
    let r = run("--via shm,pipe -N 500 -R 1", 0);
    assert!(r.stdout.contains("ratio to shm"), "{}", r.stdout);
}

#[test]
fn the_default_table_is_unchanged() {
    let r = run("-N 300 -R 1 --lock sem", 0);
    let head = r.stdout.lines().nth(1).unwrap();
    let words: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(words[..4], ["lock", "O", "M", "total"], "{head}");
    assert!(!head.contains("via") && !head.contains("MB/s"), "{head}");
    assert_eq!(r.stdout.lines().count(), 3, "{}", r.stdout);
}

/// Each process of `--per-process` carries the probe of how far apart the CPUs were as it
/// started, where there are two CPUs to probe.
#[test]
fn per_process_samples_carry_the_cpus_round_trip() {
    let r = run(
        "--per-process -O 0 -M 1 -N 300 -R 3 --lock spin --format json",
        0,
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let trips: Vec<u64> = v["cells"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["cpu_trip_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(trips.len(), 3);
    // (With one CPU there is nothing to probe, and every trip is 0: `probe`'s unit tests.)
    if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
        // A probe gives up (0) on a machine too busy to run its partner within 100 ms.
        assert!(trips.iter().any(|&t| t > 0), "{trips:?}");
    }
}

#[test]
fn signal_reports_per_signal() {
    let r = run("--via signal -N 1000 -R 1 --format json", 0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let cell = &v["cells"][0];
    assert_eq!(cell["via"], "signal");
    let ns = cell["samples"][0]["ns"].as_f64().unwrap();
    let per = cell["summary"]["ns_per_msg"]["median"].as_f64().unwrap();
    assert!(
        (per - ns / 2000.0).abs() < 1e-6 * per,
        "1000 round trips are 2000 signals"
    );
}

#[test]
fn a_damaged_or_duplicated_message_is_status_3() {
    for via in ["pipe", "unix", "shm", "signal", "chan", "task", "task-mt"] {
        let r = run(
            &format!(
                "--via {via} -N 300 -R 1 {} --inject-fault",
                lock(via, "sem")
            ),
            3,
        );
        assert!(
            r.stderr.contains("sender 0's value 1 arrived again"),
            "{via}: {}",
            r.stderr
        );
    }
    for via in ["pipe", "shm", "chan", "task", "task-mt"] {
        run(
            &format!(
                "--via {via} -S 100 -M 2 -N 300 -R 1 {} --inject-fault",
                lock(via, "sem")
            ),
            3,
        );
    }
    // Beside the threads, the task transports fail the run the same way.
    let r = run(
        "--via chan,task,task-mt -M 3 -N 300 -R 1 --lock adaptive,sem --inject-fault",
        3,
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn a_dead_peer_is_an_error_not_a_hang() {
    for args in [
        "--via shm -N 20000 -M 2 -R 1",
        "--via shm -N 20000 -M 1 -O 0 -S 8k -R 1",
        "--via signal -N 20000 -R 1",
    ] {
        let r = run_env(args, &[("CHANTEST_PEER_DIE_AFTER", "500")]);
        assert_eq!(r.code, Some(3), "{args}: {}", r.stderr);
        assert!(
            r.stderr.contains("peer") && r.stderr.contains("exited with status 9"),
            "{args}: {}",
            r.stderr
        );
        // It is noticed within one futex timeout (100 ms); allow for a loaded machine.
        assert!(
            r.took < Duration::from_secs(10),
            "{args}: took {:?}",
            r.took
        );
        assert!(r.stdout.is_empty());
    }
}

#[test]
fn bad_input_is_one_line_and_status_2() {
    for (args, want) in [
        ("-S 0", "at least its 8-byte value"),
        ("-S 12", "at least 16"),
        ("-S lots", "not a size"),
        ("--via tcp", "unknown transport `tcp`"),
        ("--via chan,chan", "listed twice"),
        ("--via signal -M 2", "takes -M 1"),
        ("--via pipe,signal -M 1..3", "takes -M 1"),
        ("--via signal -S 4k", "takes -S 8"),
        ("--via shm -O 100 -S 64M", "lower -O or -S"),
        (
            "--via pipe --compare spin,sem",
            "exactly one of chan, task and task-mt, not 0",
        ),
        (
            "--via task,task-mt --compare spin,sem",
            "exactly one of chan, task and task-mt, not 2",
        ),
        (
            "--via chan,task --compare spin,sem",
            "exactly one of chan, task and task-mt, not 2",
        ),
        ("--via task --calibrate", "leave out --via"),
        ("--via task,task", "listed twice"),
        ("--via tasks", "unknown transport `tasks`"),
        ("--via task-mt -S 12", "at least 16"),
    ] {
        let r = run(args, 2);
        assert!(r.stderr.starts_with("chantest: "), "{args}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args}");
    }
}

fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("via-{name}"))
}

/// Runs `args` with `--save` into a fresh scratch directory called `name`; the file's path,
/// what it holds, and the directory (removed when that drops).
fn save(name: &str, args: &str) -> (String, Value, Scratch) {
    let dir = scratch(name);
    let base = dir.join("base.json").display().to_string();
    run(&format!("{args} --save {base}"), 0);
    let saved = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    (base, saved, dir)
}

#[test]
fn baselines_keep_their_transports() {
    let (base, saved, _dir) = save(
        "baseline",
        "--via chan,pipe -S 64 -N 500 -M 1,2 -R 2 --lock sem",
    );
    assert_eq!(saved["params"]["via"], serde_json::json!(["chan", "pipe"]));
    assert_eq!(saved["params"]["S"], 64);
    // Re-running the baseline re-runs its transports and size. (R=2 gives no interval, so
    // the verdict is inconclusive: exit 4.)
    let r = run(&format!("--baseline {base} --threshold 10000"), 4);
    assert!(
        r.stdout.contains("# 0 of 4 cells regressed"),
        "{}",
        r.stdout
    );
    for extra in ["--via chan,unix", "-S 128"] {
        let r = run(&format!("--baseline {base} {extra}"), 2);
        assert!(r.stderr.contains("has no cell"), "{extra}: {}", r.stderr);
    }
}

#[test]
fn files_from_before_transports_still_load() {
    let dir = scratch("old");
    let base = dir.join("base.json");
    run(
        &format!("-N 500 -M 1 -R 4 --lock sem --save {}", base.display()),
        0,
    );
    // Strip what older chantests did not write.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let params = v["params"].as_object_mut().unwrap();
    params.remove("via");
    params.remove("S");
    for cell in v["cells"].as_array_mut().unwrap() {
        let cell = cell.as_object_mut().unwrap();
        cell.remove("via");
        cell.remove("S");
        cell.remove("summary");
    }
    let old = dir.join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let r = run(
        &format!(
            "--baseline {} --threshold 10000 --budget 40s --format csv",
            old.display()
        ),
        0,
    );
    let rows = csv_rows(&r.stdout);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["via"].as_str(), rows[0]["size"].as_str()),
        ("chan", "8")
    );
    assert_eq!(rows[0]["verdict"], "ok");
}

/// The rows of `csv` whose `via` is `via`.
fn rows_of<'a>(
    rows: &'a [std::collections::HashMap<String, String>],
    via: &str,
) -> Vec<&'a std::collections::HashMap<String, String>> {
    rows.iter().filter(|r| r["via"] == via).collect()
}

#[test]
fn tasks_are_reported_beside_threads_with_the_same_columns() {
    let args = "--via chan,task,task-mt -O 0,2 -N 1000 -R 1 --lock spin,adaptive";
    let r = run(&format!("{args} -M 1,3 --format csv"), 0);
    let rows = csv_rows(&r.stdout);
    // Each transport runs once per backend at each of the four points.
    assert_eq!(rows.len(), 3 * 2 * 4, "{}", r.stdout);
    let head = r.stdout.lines().next().unwrap().split(',').count();
    for via in ["chan", "task", "task-mt"] {
        let mine = rows_of(&rows, via);
        assert_eq!(mine.len(), 8, "{via}");
        for lock in ["spin", "adaptive"] {
            assert_eq!(
                mine.iter().filter(|r| r["lock"] == lock).count(),
                4,
                "{via}"
            );
        }
        for row in mine {
            assert_eq!(row.len(), head, "{via}: every column, {row:?}");
            for col in ["ns_per_msg", "cpu_ns_per_msg", "ratio_to_ref", "ns_total"] {
                let x: f64 = row[col]
                    .parse()
                    .unwrap_or_else(|_| panic!("{col}: {row:?}"));
                assert!(x > 0.0, "{via} {col}: {row:?}");
            }
            // N values from each of M senders, every one of them counted.
            assert_eq!(row["N"], "1000");
        }
    }
    // Ratios are to chan with the first backend, whatever the row.
    let reference = rows
        .iter()
        .find(|r| r["via"] == "chan" && r["lock"] == "spin" && r["O"] == "2" && r["M"] == "3")
        .unwrap();
    assert_eq!(reference["ratio_to_ref"], "1");
    let task = rows
        .iter()
        .find(|r| {
            r["via"] == "task-mt" && r["lock"] == "adaptive" && r["O"] == "2" && r["M"] == "3"
        })
        .unwrap();
    let want = task["ns_per_msg"].parse::<f64>().unwrap()
        / reference["ns_per_msg"].parse::<f64>().unwrap();
    let got = task["ratio_to_ref"].parse::<f64>().unwrap();
    assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");

    // The table: one header, the via column, the task rows and what they mean.
    let r = run(&format!("{args} -M 1"), 0);
    let out = &r.stdout;
    assert!(
        out.contains("ratio to chan/spin") && out.contains("per-channel locks"),
        "{out}"
    );
    for via in ["chan", "task", "task-mt"] {
        let rows = out
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(via))
            .count();
        assert_eq!(rows, 4, "{via} in {out}");
    }
    assert!(out.contains("# task: M sender tasks"), "{out}");

    // Without chan, the first task transport with the first backend is the reference.
    let r = run("--via task-mt,task -N 500 -R 1 --lock sem,adaptive", 0);
    assert!(r.stdout.contains("ratio to task-mt/sem"), "{}", r.stdout);
}

#[test]
fn tasks_run_pinned_and_with_the_global_lock() {
    let r = run(
        "--via task,task-mt -M 3 -O 1 -N 500 -R 1 --lock sem --pin --global-lock --format json",
        0,
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["params"]["via"], serde_json::json!(["task", "task-mt"]));
    assert_eq!(v["params"]["pin"], true);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (cell, via) in cells.iter().zip(["task", "task-mt"]) {
        assert_eq!(
            (cell["via"].as_str(), cell["lock"].as_str()),
            (Some(via), Some("sem"))
        );
        assert_eq!(cell["global_lock"], true);
    }
}

#[test]
fn task_baselines_and_against() {
    let (base, saved, _dir) = save("tasks", "--via chan,task-mt -N 500 -M 1,2 -R 2 --lock sem");
    assert_eq!(
        saved["params"]["via"],
        serde_json::json!(["chan", "task-mt"])
    );
    // Its cells again, task-mt's included (R=2: no interval, so inconclusive, exit 4).
    let r = run(&format!("--baseline {base} --threshold 10000"), 4);
    assert!(
        r.stdout.contains("# 0 of 4 cells regressed"),
        "{}",
        r.stdout
    );
    let r = run(&format!("--baseline {base} --via chan,task"), 2);
    assert!(r.stderr.contains("has no cell via=task "), "{}", r.stderr);
    // This build against itself, over tasks: one process per repetition a side.
    let bin = BIN;
    let r = run(
        &format!(
            "--via task -N 1000 -R 5 -O 10 -M 1 --lock adaptive --against {bin} --threshold 10000 \
             --budget 40s --format json"
        ),
        0,
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["cells"][0]["via"], "task");
    assert_eq!(v["changes"].as_array().unwrap().len(), 1);
    assert_eq!(v["changes"][0]["verdict"], "ok", "{v}");
}
