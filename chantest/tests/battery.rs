//! A battery of bad invocations, as a new user types them (one trial tried 194): each must
//! end with the documented exit status (2, usage) within a generous time, print one
//! `chantest: ` line that names the flag at fault and, where the flag takes one of a set,
//! the set, and never panic. The table was made by running each line and reading what came
//! back; a change to a message that drops the flag's name or its set fails here.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chantest");

/// No bad invocation should take more than a moment; this only stops a hang from hanging
/// the suite, and is generous for a loaded machine.
const LIMIT: Duration = Duration::from_secs(60);

/// Arguments, the exit status, and what stderr must contain (the flag first).
#[rustfmt::skip]
const BATTERY: &[(&[&str], i32, &[&str])] = &[
    (&["-O", "abc"], 2, &["-O"]),
    (&["-O", "-1"], 2, &["-O"]),
    (&["-O", "1.."], 2, &["-O"]),
    (&["-O", "..3"], 2, &["-O"]),
    (&["-O", "3..1"], 2, &["-O"]),
    (&["-O", "1,,2"], 2, &["-O"]),
    (&["-O", "1.5"], 2, &["-O"]),
    (&["-O", "99999999999999999999"], 2, &["-O"]),
    (&["-O", "0x10"], 2, &["-O"]),
    (&["-O", "1..100000"], 2, &["-O"]),
    (&["-O", "1,1"], 2, &["-O"]),
    (&["-O="], 2, &["-O"]),
    (&["-M", "0"], 2, &["-M"]),
    (&["-M", "-3"], 2, &["-M"]),
    (&["-M", "abc"], 2, &["-M"]),
    (&["-M", "1..0"], 2, &["-M"]),
    (&["-M", "100000"], 2, &["-M"]),
    (&["-M", "1.5"], 2, &["-M"]),
    (&["-M", "2,2"], 2, &["-M"]),
    (&["-M", ","], 2, &["-M"]),
    (&["-N", "0"], 2, &["-N"]),
    (&["-N", "-1"], 2, &["-N"]),
    (&["-N", "abc"], 2, &["-N"]),
    (&["-N", "1e6"], 2, &["-N"]),
    (&["-N", "99999999999999999999"], 2, &["-N"]),
    (&["-N", "1.5"], 2, &["-N"]),
    (&["-N", "1k"], 2, &["-N"]),
    (&["-R", "0"], 2, &["-R"]),
    (&["-R", "-2"], 2, &["-R"]),
    (&["-R", "abc"], 2, &["-R"]),
    (&["-R", "99999999"], 2, &["-R"]),
    (&["-R", "1.5"], 2, &["-R"]),
    (&["--lock", "mcs"], 2, &["--lock", "(valid:", "spin, sem, adaptive"]),
    (&["--lock", "spin,spin"], 2, &["--lock"]),
    (&["--lock", "adaptive:bogus=1"], 2, &["--lock", "(valid:", "spin_ns, wait_spin_ns, yield_ns, task_nap_us, moves"]),
    (&["--lock", "all,spin"], 2, &["--lock"]),
    (&["--lock", "spin,all"], 2, &["--lock"]),
    (&["--lock", "adaptive:spin_ns=x"], 2, &["--lock"]),
    (&["--lock", "adaptive:spin_ns=-1"], 2, &["--lock"]),
    (&["--lock", "adaptive:spin_ns"], 2, &["--lock"]),
    (&["--lock", "sem:spin_ns=1"], 2, &["--lock"]),
    (&["--lock", ","], 2, &["--lock", "(valid:", "spin, sem, adaptive"]),
    (&["--lock", "adaptive:spin_ns=1:spin_ns=2"], 2, &["--lock"]),
    (&["--lock", "spin:yields=1:yields=2"], 2, &["--lock"]),
    (&["--lock", ""], 2, &["--lock", "(valid:", "spin, sem, adaptive"]),
    (&["--lock", "SPIN,spin"], 2, &["--lock"]),
    (&["--ref", "mcs"], 2, &["--ref", "(valid:", "spin, sem, adaptive"]),
    (&["--ref", "all"], 2, &["--ref"]),
    (&["--ref", "adaptive", "--lock", "spin,sem"], 2, &["--ref"]),
    (&["--ref", "pipe"], 2, &["--ref"]),
    (&["--ref", "kanal", "--via", "chan"], 2, &["--ref"]),
    (&["--via", "kanal", "--ref", "sem"], 2, &["--ref", "--via kanal"]),
    (&["--via", "tcp"], 2, &["--via", "expected one of", "chan, task, task-mt, pipe, unix, signal, shm, kanal"]),
    (&["--via", "pipe,pipe"], 2, &["--via"]),
    (&["--via", ","], 2, &["--via", "expected one of"]),
    (&["--via", "chan,"], 2, &["--via", "expected one of"]),
    (&["--via", ""], 2, &["--via", "expected one of"]),
    (&["--via", "signal", "-M", "2"], 2, &["--via"]),
    (&["--via", "signal", "-S", "16"], 2, &["--via"]),
    (&["--via", "shm", "-O", "1000", "-S", "16M"], 2, &["--via"]),
    (&["--via", "kanal", "-S", "16"], 2, &["--via"]),
    (&["--via", "pipe", "--compare", "spin,sem"], 2, &["--compare", "--via"]),
    (&["--via", "task,task-mt", "--compare", "spin,sem"], 2, &["--compare", "--via"]),
    (&["--via", "std", "--lock", "sem"], 2, &["--lock", "--via std"]),
    (&["--via", "kanal", "--global-lock"], 2, &["--global-lock", "--via kanal"]),
    (&["--via", "pipe,unix", "--lock", "spin"], 2, &["--lock", "--via pipe,unix"]),
    (&["--global-lock", "--via", "kanal-async"], 2, &["--global-lock"]),
    (&["-S", "0"], 2, &["-S"]),
    (&["-S", "12"], 2, &["-S"]),
    (&["-S", "4x"], 2, &["-S"]),
    (&["-S", "1G"], 2, &["-S"]),
    (&["-S", "-8"], 2, &["-S", "negative"]),
    (&["-S", "abc"], 2, &["-S"]),
    (&["-S", "1.5k"], 2, &["-S"]),
    (&["-S", ""], 2, &["-S"]),
    (&["--format", "x"], 2, &["--format", "[possible values:", "table, csv, json, markdown, plain"]),
    (&["--format"], 2, &["--format", "[possible values:", "table, csv, json, markdown, plain"]),
    (&["--format", "CSV"], 2, &["--format", "[possible values:", "table, csv, json, markdown, plain"]),
    (&["--metric", "x"], 2, &["--metric", "[possible values:", "time, instructions"]),
    (&["--metric"], 2, &["--metric", "[possible values:", "time, instructions"]),
    (&["--metric", "wall"], 2, &["--metric", "[possible values:", "time, instructions"]),
    (&["--pin", "apart"], 2, &["--pin", "--pin=apart", "spread, apart"]),
    (&["--pin", "spread"], 2, &["--pin", "--pin=spread", "spread, apart"]),
    (&["--pin=x"], 2, &["--pin", "[possible values:", "spread, apart"]),
    (&["--pin="], 2, &["--pin", "[possible values:", "spread, apart"]),
    (&["--pin=APART"], 2, &["--pin", "[possible values:", "spread, apart"]),
    (&["--plain", "--format", "csv"], 2, &["--plain"]),
    (&["--plain", "--baseline", "x.json"], 2, &["--plain"]),
    (&["--plain", "--compare", "spin,sem"], 2, &["--plain"]),
    (&["--format", "plain", "--baseline", "x.json"], 2, &["--format plain", "--baseline", "table, csv, json"]),
    (&["--format", "plain", "--compare", "spin,sem"], 2, &["--format plain", "--compare"]),
    (&["--format", "plain", "--against", "/bin/true"], 2, &["--format plain", "--against"]),
    (&["--format", "plain", "--calibrate"], 2, &["--format plain", "--calibrate"]),
    (&["--format", "plain", "--per-process"], 2, &["--format plain", "--per-process"]),
    (&["--compare", "spin"], 2, &["--compare"]),
    (&["--compare", "all"], 2, &["--compare"]),
    (&["--compare", "all,spin"], 2, &["--compare"]),
    (&["--compare", "spin,sem,adaptive"], 2, &["--compare"]),
    (&["--compare", "mcs,sem"], 2, &["--compare", "(valid:", "spin, sem, adaptive"]),
    (&["--compare", "spin,mcs"], 2, &["--compare", "(valid:", "spin, sem, adaptive"]),
    (&["--compare", "spin,sem", "--lock", "sem"], 2, &["--compare"]),
    (&["--compare", "spin,sem", "--ref", "spin"], 2, &["--compare"]),
    (&["--compare", "spin,sem", "--baseline", "x.json"], 2, &["--compare"]),
    (&["--compare", "kanal,kanal"], 2, &["--compare", "(valid:", "spin, sem, adaptive"]),
    (&["--compare", ","], 2, &["--compare", "(valid:", "spin, sem, adaptive"]),
    (&["--budget", "-5s"], 2, &["--budget"]),
    (&["--budget", "0"], 2, &["--budget"]),
    (&["--budget", "10x"], 2, &["--budget"]),
    (&["--budget", "abc"], 2, &["--budget"]),
    (&["--budget", "1e9s"], 2, &["--budget"]),
    (&["--budget", "nan"], 2, &["--budget"]),
    (&["--budget", "60s"], 2, &["--budget"]),
    (&["--budget", "5s", "--format", "csv"], 2, &["--budget"]),
    (&["--threshold", "-1"], 2, &["--threshold"]),
    (&["--threshold", "abc"], 2, &["--threshold"]),
    (&["--threshold", "nan"], 2, &["--threshold"]),
    (&["--threshold", "inf"], 2, &["--threshold"]),
    (&["--threshold", "1e400"], 2, &["--threshold"]),
    (&["--hold-ns", "5"], 2, &["--hold-ns"]),
    (&["--hold-ns", "0"], 2, &["--hold-ns"]),
    (&["--hold-ns", "-5"], 2, &["--hold-ns"]),
    (&["--hold-ns", "abc"], 2, &["--hold-ns"]),
    (&["--hold-ns", "2000000"], 2, &["--hold-ns"]),
    (&["--runs", "40,20"], 2, &["--runs"]),
    (&["--runs=10,10"], 2, &["--runs", "--calibrate"]),
    (&["--hold-ns=4"], 2, &["--hold-ns", "--calibrate"]),
    (&["--budget=5s", "--per-process"], 2, &["--budget", "--against, --baseline, --compare or --calibrate"]),
    (&["--plain", "--format", "plain"], 2, &["--plain", "--format"]),
    (&["--runs", "40"], 2, &["--runs"]),
    (&["--runs", "0,0"], 2, &["--runs"]),
    (&["--runs", "a,b"], 2, &["--runs"]),
    (&["--runs", "1,2,3"], 2, &["--runs"]),
    (&["--runs", "-1,2"], 2, &["--runs"]),
    (&["--runs", "20000,1"], 2, &["--runs"]),
    (&["--calibrate", "--via", "task"], 2, &["--calibrate"]),
    (&["--calibrate", "--baseline", "x.json"], 2, &["--calibrate"]),
    (&["--calibrate", "--compare", "spin,sem"], 2, &["--calibrate"]),
    (&["--calibrate", "--plain"], 2, &["--calibrate"]),
    (&["--calibrate", "--save", "x.json"], 2, &["--calibrate"]),
    (&["--calibrate", "--plot", "x.svg"], 2, &["--calibrate"]),
    (&["--calibrate", "--against", "/bin/true"], 2, &["--calibrate"]),
    (&["--per-process", "--against", "/bin/true"], 2, &["--per-process"]),
    (&["--per-process", "--calibrate"], 2, &["--per-process"]),
    (&["--per-process", "--plain"], 2, &["--per-process"]),
    (&["--per-process", "--inject-fault"], 2, &["--per-process"]),
    (&["--per-process", "--baseline", "/nonexistent.json"], 2, &["baseline"]),
    (&["--baseline", "/nonexistent.json"], 2, &["baseline"]),
    (&["--baseline", "/etc/passwd"], 2, &["baseline"]),
    (&["--baseline", "/etc"], 2, &["baseline"]),
    (&["--save", "/nonexistent/dir/x.json"], 2, &["--save"]),
    (&["--plot", "/nonexistent/dir/x.svg"], 2, &["--plot"]),
    (&["--against", "/nonexistent"], 2, &["--against"]),
    (&["--against", "/bin/true", "-N", "100", "-R", "2"], 2, &["--against"]),
    (&["--against", "/bin/false", "-N", "100", "-R", "2"], 2, &["--against"]),
    (&["--against", "/etc/passwd", "-N", "100", "-R", "2"], 2, &["--against"]),
    (&["--against", "/etc", "-N", "100", "-R", "2"], 2, &["--against"]),
    (&["--against"], 2, &["--against"]),
    (&["--against", "/bin/true", "--baseline", "x.json"], 2, &["--against"]),
    (&["--against", "/bin/true", "--compare", "spin,sem"], 2, &["--against"]),
    (&["--against", "/bin/true", "--plain"], 2, &["--against"]),
    (&["--metric", "instructions", "--compare", "spin,sem"], 2, &["--metric"]),
    (&["--metric", "instructions", "--calibrate"], 2, &["--metric"]),
    (&["--metric", "instructions", "--plain"], 2, &["--metric"]),
    (&["--metric", "instructions", "--plot", "x.svg"], 2, &["--metric"]),
    (&["--metric", "instructions", "--budget", "10s"], 2, &["--metric"]),
    (&["--metric", "instructions", "--pin"], 2, &["--metric"]),
    (&["--metric", "instructions", "--format", "csv"], 2, &["--metric"]),
    (&["--metric", "instructions", "--via", "shm"], 2, &["--metric"]),
    (&["--metric", "instructions", "--via", "signal"], 2, &["--metric"]),
    (&["--metric", "instructions", "-N", "1"], 2, &["--metric", "-N must be at least 2, not 1"]),
    (&["--metric", "instructions", "--inject-fault"], 2, &["--metric"]),
    (&["--metric", "instructions", "--baseline", "/nonexistent.json"], 2, &["baseline"]),
    (&["--metric", "instructions", "--against", "/nonexistent", "-N", "100"], 2, &["--against"]),
    (&["-X"], 2, &["-X"]),
    (&["--frobnicate"], 2, &["--frobnicate"]),
    (&["extra"], 2, &["extra"]),
    (&["--lock"], 2, &["--lock"]),
    (&["-O"], 2, &["-O"]),
    (&["-M"], 2, &["-M"]),
    (&["-N"], 2, &["-N"]),
    (&["-R"], 2, &["-R"]),
    (&["-S"], 2, &["-S"]),
    (&["--via"], 2, &["--via"]),
    (&["--ref"], 2, &["--ref"]),
    (&["--compare"], 2, &["--compare"]),
    (&["--baseline"], 2, &["--baseline"]),
    (&["--save"], 2, &["--save"]),
    (&["--plot"], 2, &["--plot"]),
    (&["--threshold"], 2, &["--threshold"]),
    (&["--hold-ns"], 2, &["--hold-ns"]),
    (&["--runs"], 2, &["--runs"]),
    (&["--budget"], 2, &["--budget"]),
    (&["soak"], 2, &["soak"]),
];

/// Runs `args` with a time limit: the exit status and stderr, or `None` if it hung.
fn run(args: &[&str]) -> Option<(Option<i32>, String, String)> {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chantest");
    // Drained on threads of their own, so that a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Some((status.code(), out.join().unwrap(), err.join().unwrap()))
}

#[test]
fn the_battery_is_large_enough() {
    assert!(BATTERY.len() >= 150, "{}", BATTERY.len());
}

#[test]
fn every_bad_invocation_is_one_clear_line() {
    let mut failures = Vec::new();
    for &(args, code, wants) in BATTERY {
        let line = args.join(" ");
        let Some((status, out, err)) = run(args) else {
            failures.push(format!("`{line}`: still running after {LIMIT:?}"));
            continue;
        };
        let mut why = Vec::new();
        if status != Some(code) {
            why.push(format!("exit {status:?}, not {code}"));
        }
        if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
            why.push("a panic".into());
        }
        // Progress lines may come first on a long run; the error is the last line.
        let last = err.lines().last().unwrap_or("");
        if !last.starts_with("chantest: ") {
            why.push("no `chantest: ` line last".into());
        }
        if err.lines().any(|l| !l.starts_with("chantest: ")) {
            why.push("a line that is not chantest's".into());
        }
        for want in wants {
            if !last.contains(want) {
                why.push(format!("no `{want}`"));
            }
        }
        if !out.is_empty() {
            why.push("output on stdout".into());
        }
        if !why.is_empty() {
            failures.push(format!("`{line}`: {}: {err}", why.join(", ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
