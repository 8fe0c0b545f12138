//! `chantest soak` as a user runs it: a short soak passes and says so, bad flags are exit 2.
//!
//! The soak has a watchdog of its own (a stuck thread ends it with exit 3 within seconds);
//! the deadline here only keeps a broken watchdog from stalling CI.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chantest");
const DEADLINE: Duration = Duration::from_secs(120);

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn soak(args: &str) -> Ran {
    let mut child = Command::new(BIN)
        .arg("soak")
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chantest");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chantest") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chantest soak {args} still running after {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut ran = Ran {
        code: status.code(),
        stdout: String::new(),
        stderr: String::new(),
    };
    let _ = child.stdout.take().unwrap().read_to_string(&mut ran.stdout);
    let _ = child.stderr.take().unwrap().read_to_string(&mut ran.stderr);
    ran
}

#[test]
fn a_short_soak_passes_and_reports() {
    let r = soak("--for 2s --seed 1");
    assert_eq!(
        r.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    let out = &r.stdout;
    assert!(
        out.starts_with("chantest soak: seed 0x1, "),
        "the seed to replay comes first:\n{out}"
    );
    for row in [
        "spin ",
        "sem ",
        "adaptive ",
        "adaptive:yield_ns=0 ",
        "global lock",
    ] {
        assert!(out.contains(row), "no `{row}` row:\n{out}");
    }
    let total: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("total"))
        .expect("a total row")
        .split_whitespace()
        .collect();
    let messages: u64 = total[2].parse().expect("total messages");
    assert!(messages > 0, "{out}");
    for field in [
        "timeouts",
        "alts",
        "closes",
        "panicking drops",
        "re-entrant drops",
    ] {
        assert!(out.contains(field), "no `{field}`:\n{out}");
    }
    assert_eq!(out.lines().last(), Some("ok"), "{out}");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    for (args, want) in [
        ("--for banana", "not a duration"),
        ("--for 0s", "out of range"),
        ("--seed -3", "unexpected argument"),
        ("--threads 1", "out of range"),
        ("--messages x", "not a number"),
        ("--frobnicate", "unexpected argument"),
        ("extra", "unexpected argument"),
    ] {
        let r = soak(args);
        assert_eq!(r.code, Some(2), "soak {args}: {}", r.stderr);
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "soak {args}: {}", r.stderr);
        assert!(
            lines[0].starts_with("chantest: soak: ") && lines[0].contains(want),
            "soak {args}: {}",
            lines[0]
        );
        assert!(r.stdout.is_empty(), "soak {args}: {}", r.stdout);
    }
}

#[test]
fn help_lists_the_flags() {
    let r = soak("--help");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for flag in ["--for", "--seed", "--threads", "--messages", "--rounds"] {
        assert!(r.stdout.contains(flag), "{flag}:\n{}", r.stdout);
    }
}
