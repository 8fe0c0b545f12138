//! chantest at its edges: another build that floods or never answers, and chantest stopped
//! by a signal while its children run. Every wait here is bounded by time (tens of seconds,
//! far beyond what a loaded two-core machine needs), and names what never happened.

mod common;

use common::{have_valgrind, script, Scratch, BIN};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Long enough for anything here to happen on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// chantest with `args`, its scratch (`$TMPDIR`) in `tmp`, stdout and stderr captured.
fn start(args: &str, tmp: &Path) -> Child {
    Command::new(BIN)
        .args(args.split_whitespace())
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chantest")
}

/// Waits for `child` for at most `limit`; kills it (and fails) if it is still running.
fn finish(mut child: Child, limit: Duration, what: &str) -> Output {
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: chantest still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Whether process `pid` is gone (a zombie left for init to reap is gone too).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits until `what()` holds, for at most [`PATIENCE`].
fn until<T>(why: &str, mut what: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(x) = what() {
            return x;
        }
        assert!(t.elapsed() < PATIENCE, "never happened: {why}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid a sleeper script wrote to `file`, once it has; fails at once if `chantest` ended
/// first.
fn pid_in(file: &Path, chantest: &mut Child) -> u32 {
    until(&format!("{} written", file.display()), || {
        if let Some(status) = chantest.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            let _ = chantest.stderr.take().unwrap().read_to_string(&mut err);
            panic!("chantest ended ({status}) before the sleeper started: {err}");
        }
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    })
}

/// The pid a sleeper script wrote to `file`.
fn pid_written(file: &Path) -> u32 {
    let text = std::fs::read_to_string(file).expect("the sleeper ran");
    text.trim().parse().unwrap()
}

/// The children of `parent`, read from /proc.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn assert_gone(pid: u32, what: &str) {
    until(&format!("{what} (pid {pid}) gone"), || {
        gone(pid).then_some(())
    });
}

/// Exit 2 with one error line, last (a long run's progress lines may come first).
fn one_line(o: &Output, want: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("chantest: ") && last.contains(want),
        "{want}: {err}"
    );
    assert!(err.lines().all(|l| l.starts_with("chantest: ")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_build_that_prints_without_end_is_refused() {
    let dir = Scratch::new("flood");
    let flood = script(&dir, "flood", "exec yes garbage");
    let c = start(
        &format!("-N 300 -R 2 -M 1 --lock adaptive --against {flood}"),
        &dir,
    );
    let o = finish(c, PATIENCE, "a flooding --against");
    one_line(&o, "printed more than 8 MiB (killed it");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--against: "));
}

#[test]
fn instructions_give_up_on_a_build_that_never_answers() {
    if !have_valgrind() {
        return;
    }
    let dir = Scratch::new("ir-sleeper");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let pidfile = dir.join("pid");
    let sleeper = script(
        &dir,
        "sleeper",
        &format!("echo $$ > {}\nexec sleep 1000", pidfile.display()),
    );
    // --budget bounds the wait as in wall time: the first process (this build, which
    // answers in seconds under callgrind) gets the budget, later ones up to ten times the
    // slowest answer, so this ends in a minute or two even on a loaded machine.
    let c = start(
        &format!(
            "--metric instructions -N 200 -M 1 --lock adaptive --against {sleeper} --budget 20s"
        ),
        &tmp,
    );
    let o = finish(
        c,
        Duration::from_secs(300),
        "instructions against a sleeper",
    );
    one_line(&o, "did not answer within");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--metric instructions: "));
    assert_gone(pid_written(&pidfile), "the sleeper under valgrind");
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch left behind");
}

#[test]
fn a_stopped_chantest_takes_its_against_build_along() {
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let dir = Scratch::new(&format!("stop-against-{sig}"));
        let pidfile = dir.join("pid");
        let sleeper = script(
            &dir,
            "sleeper",
            &format!("echo $$ > {}\nexec sleep 1000", pidfile.display()),
        );
        let mut c = start(
            &format!("-N 300 -R 2 -M 1 --lock adaptive --against {sleeper}"),
            &dir,
        );
        let pid = pid_in(&pidfile, &mut c);
        signal(&c, sig);
        let o = finish(c, PATIENCE, name);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(o.status.signal(), Some(sig), "{name}: {:?}", o.status);
        assert_gone(pid, &format!("the --against build after {name}"));
    }
}

#[test]
fn a_killed_chantest_takes_its_against_build_along() {
    // SIGKILL cannot be caught: the child's parent-death signal ends it.
    let dir = Scratch::new("kill-against");
    let pidfile = dir.join("pid");
    let sleeper = script(
        &dir,
        "sleeper",
        &format!("echo $$ > {}\nexec sleep 1000", pidfile.display()),
    );
    let mut c = start(
        &format!("-N 300 -R 2 -M 1 --lock adaptive --against {sleeper}"),
        &dir,
    );
    let pid = pid_in(&pidfile, &mut c);
    signal(&c, libc::SIGKILL);
    finish(c, PATIENCE, "SIGKILL");
    assert_gone(pid, "the --against build after SIGKILL");
}

#[test]
fn a_stopped_chantest_takes_its_per_process_child_along() {
    let dir = Scratch::new("stop-per-process");
    // A child that runs for minutes: a billion values.
    let c = start(
        "--per-process -N 1000000000 -R 1 -O 10 -M 1 --lock spin",
        &dir,
    );
    let me = c.id();
    let child = until("a --per-process child started", || {
        children(me).first().copied()
    });
    signal(&c, libc::SIGTERM);
    let o = finish(c, PATIENCE, "SIGTERM");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(libc::SIGTERM), "{:?}", o.status);
    assert_gone(child, "the --per-process child");
    assert_eq!(entries(&dir), Vec::<String>::new(), "scratch left behind");
}

#[test]
fn a_stopped_instructions_run_leaves_no_valgrind_or_scratch() {
    if !have_valgrind() {
        return;
    }
    let dir = Scratch::new("stop-ir");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let pidfile = dir.join("pid");
    let sleeper = script(
        &dir,
        "sleeper",
        &format!("echo $$ > {}\nexec sleep 1000", pidfile.display()),
    );
    let mut c = start(
        &format!("--metric instructions -N 200 -M 1 --lock adaptive --against {sleeper}"),
        &tmp,
    );
    // The sleeper runs under valgrind: its pid is valgrind's.
    let pid = pid_in(&pidfile, &mut c);
    assert!(
        entries(&tmp)
            .iter()
            .any(|e| e.starts_with("chantest-callgrind-")),
        "{:?}",
        entries(&tmp)
    );
    signal(&c, libc::SIGTERM);
    finish(c, PATIENCE, "SIGTERM");
    assert_gone(pid, "valgrind");
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch left behind");
}

#[test]
fn per_process_pin_apart_on_one_cpu_names_pin_not_against() {
    // Once, `taskset -c 0 chantest --per-process --pin=apart` blamed --against.
    let o = Command::new("taskset")
        .args([
            "-c",
            "0",
            BIN,
            "--per-process",
            "--pin=apart",
            "-N",
            "300",
            "-R",
            "2",
        ])
        .output();
    let Ok(o) = o else {
        eprintln!("taskset not installed: skipped");
        return;
    };
    one_line(&o, "--pin=apart keeps a CPU for the receiver");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("--against"));
}
