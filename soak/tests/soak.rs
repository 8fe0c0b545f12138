//! `chansoak` as a user runs it: a short soak passes and says so, so does one whose every
//! round has async task workers (with hostile wakers, panicking and re-entrant), faults planted
//! in task workers are caught (exit 3), bad flags are exit 2.
//!
//! The soak has a watchdog of its own (a stuck thread ends it with exit 3 within seconds);
//! the deadline here only keeps a broken watchdog from stalling CI.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chansoak");
const DEADLINE: Duration = Duration::from_secs(120);

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn soak(args: &str) -> Ran {
    let mut child = Command::new(BIN)
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chansoak");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chansoak") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chansoak {args} still running after {DEADLINE:?}");
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

/// The soak exited 0, said `ok` last and nothing on stderr.
fn assert_passed(r: &Ran) {
    assert_eq!(
        r.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(r.stdout.lines().last(), Some("ok"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn a_short_soak_passes_and_reports() {
    let r = soak("--for 2s --seed 1");
    assert_passed(&r);
    let out = &r.stdout;
    assert!(
        out.starts_with("chansoak: seed 0x1, "),
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
        "dropped pending",
    ] {
        assert!(out.contains(field), "no `{field}`:\n{out}");
    }
}

/// The number before `word` in `line`.
fn count_before(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_end_matches([',', ';', '(']) == word)
        .unwrap_or_else(|| panic!("no `{word}` in {line}"));
    words[at - 1]
        .trim_start_matches('(')
        .parse()
        .unwrap_or_else(|_| panic!("no number before `{word}` in {line}"))
}

#[test]
fn a_short_soak_of_task_rounds_passes() {
    let r = soak("--for 2s --seed 2 --tasks always");
    assert_passed(&r);
    let out = &r.stdout;
    let rounds = count_before(out.lines().next().expect("a first line"), "rounds");
    let tasks = out
        .lines()
        .find(|l| l.starts_with("tasks "))
        .unwrap_or_else(|| panic!("no tasks line:\n{out}"));
    assert_eq!(count_before(tasks, "rounds"), rounds, "{tasks}");
    assert!(count_before(tasks, "async") > 0, "{tasks}");
    // Every round drops pending futures by the hundred; one drop of each kind is certain.
    for kind in ["sends", "receives", "alts"] {
        assert!(count_before(tasks, kind) > 0, "{kind}: {tasks}");
    }

    let r = soak("--for 1s --seed 2 --tasks never");
    assert_passed(&r);
    assert!(r.stdout.contains("\ntasks 0 rounds"), "{}", r.stdout);
}

/// The `wakers` line of a report.
fn wakers_line(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("wakers "))
        .unwrap_or_else(|| panic!("no wakers line:\n{out}"))
}

#[test]
fn hostile_wakers_panic_and_reenter_and_every_panic_is_caught() {
    let r = soak("--for 2s --seed 3 --tasks always");
    assert_passed(&r);
    let w = wakers_line(&r.stdout);
    assert!(count_before(w, "panicking") > 0, "{w}");
    assert!(count_before(w, "re-entrant") > 0, "{w}");
    let raised = count_before(w, "panics");
    assert!(raised > 0, "{w}");
    // Caught by sends, receives, alts and other calls: every one raised (the round checks it
    // too).
    let caught = count_before(w, "sends")
        + count_before(w, "receives")
        + count_before(w, "alts")
        + count_before(w, "other");
    assert_eq!(caught, raised, "{w}");
    // The default (`all`) lets close() meet panicking wakers too (its old stop at the first one
    // is fixed), so closes may or may not have caught one in two seconds: no count is asserted.
    assert!(count_before(w, "re-entries") > 0, "{w}");

    let r = soak("--for 1s --seed 3 --tasks always --hostile-wakers none");
    assert_passed(&r);
    let w = wakers_line(&r.stdout);
    assert!(
        w.starts_with("wakers 0 panicking, 0 re-entrant; 0 panics raised"),
        "{w}"
    );

    let r = soak("--for 1s --seed 3 --tasks always --hostile-wakers reenter");
    assert_passed(&r);
    let w = wakers_line(&r.stdout);
    assert_eq!(count_before(w, "panics"), 0, "{w}");
    assert!(count_before(w, "re-entries") > 0, "{w}");
}

/// `close()` with a panicking waker among its waiters must still wake every other waiter and
/// then let the panic go on (a defect once: it used to stop at the first panicking
/// waker, and every short soak with `all` hung).
///
/// Whether a close meets a panicking waker at all is up to the schedule: alone, a 5 s run
/// catches 5-6 such panics, but four copies of this suite at once once caught none. So
/// further seeds run, each of which must pass, until one close has caught a panic.
#[test]
fn panicking_wakers_in_close_leave_nobody_asleep() {
    const TRIES: u32 = 6;
    let mut outputs = Vec::new();
    for seed in 1..=TRIES {
        let r = soak(&format!(
            "--for 5s --seed {seed} --tasks always --hostile-wakers all"
        ));
        assert_passed(&r);
        if count_before(wakers_line(&r.stdout), "closes") > 0 {
            return;
        }
        outputs.push(r.stdout);
    }
    panic!(
        "in {TRIES} runs no close met a panicking waker:\n{}",
        outputs.join("\n")
    );
}

/// A receive (or an alt) whose wake of a partner panics must not lose the value it took: a
/// receive gives it back to its channel before the panic goes on, an alt moves it into its
/// slot before the wake. `--strict-wakers` counts a value dropped by such an unwinding as
/// lost (the rule: "no value whose send returned Ok may be lost while a receiver exists").
#[test]
fn receives_that_unwind_from_a_wakers_panic_lose_nothing() {
    assert_passed(&soak("--for 5s --seed 4 --tasks always --strict-wakers"));
}

/// Runs the soak with `args`, which must fail with exit 3 saying each of `wants` on stderr.
fn assert_caught(args: &str, wants: &[&str]) -> Ran {
    let r = soak(args);
    assert_eq!(
        r.code,
        Some(3),
        "soak {args}\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    for want in wants {
        assert!(
            r.stderr.contains(want),
            "soak {args}: no `{want}`:\n{}",
            r.stderr
        );
    }
    r
}

#[test]
fn faults_planted_in_task_workers_are_caught() {
    // A value a receive future was handed, dropped instead of given back: the ledger.
    let r = assert_caught(
        "--for 10s --seed 2 --tasks always --inject drop-received",
        &[
            "was lost",
            "replay: chansoak --seed ",
            "--inject drop-received",
        ],
    );
    assert_eq!(r.stdout.lines().last(), Some("FAILED"), "{}", r.stdout);

    // A task that never completes: the watchdog names it.
    assert_caught(
        "--rounds 1 --seed 2 --tasks always --inject stuck-task",
        &[
            "chansoak: soak: stuck: ",
            "async task workers unfinished",
            "seed 0x2: ",
            // The round's first task waits on a channel of its own, hence no channel named.
            ": recv_async for ",
            "  <- an async task",
            "replay: chansoak --seed 0x2 --rounds 1 --threads 16 --tasks always",
        ],
    );
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    for (args, want) in [
        ("--for banana", "not a duration"),
        ("--for 0s", "out of range"),
        ("--seed -3", "`-3` is negative"),
        ("--seed -5", "`-5` is negative"),
        ("--for -1s", "`-1s` is negative"),
        ("--threads -4", "`-4` is negative"),
        ("--rounds -1", "`-1` is negative"),
        ("--threads 1", "out of range"),
        ("--messages x", "not a number"),
        ("--frobnicate", "unexpected argument"),
        ("--tasks maybe", "[possible values: some, always, never]"),
        (
            "--hostile-wakers sometimes",
            "[possible values: all, spare-known, panic, reenter, none]",
        ),
        ("extra", "unexpected argument"),
    ] {
        let r = soak(args);
        assert_eq!(r.code, Some(2), "soak {args}: {}", r.stderr);
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "soak {args}: {}", r.stderr);
        assert!(
            lines[0].starts_with("chansoak: soak: ") && lines[0].contains(want),
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
    // The help once said today's library had a use-after-free (fixed long since).
    assert!(!r.stdout.contains("use-after-free"), "{}", r.stdout);
    for flag in [
        "--for",
        "--seed",
        "--threads",
        "--messages",
        "--rounds",
        "--tasks",
        "--hostile-wakers",
    ] {
        assert!(r.stdout.contains(flag), "{flag}:\n{}", r.stdout);
    }
}
