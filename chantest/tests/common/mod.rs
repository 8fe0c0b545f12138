//! What chantest's test files share: running the binary, reading what it printed, scripts and
//! scratch directories. Each test file compiles its own copy and uses only some of it.
#![allow(dead_code)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The chantest binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_chantest");

/// Runs chantest with `args` (split at whitespace) and `env`, and asserts its exit status.
pub(crate) fn run_env(args: &str, env: &[(&str, &str)], status: i32) -> Output {
    run_args_env(&args.split_whitespace().collect::<Vec<_>>(), env, status)
}

/// Runs chantest with `args` (split at whitespace) and asserts its exit status.
pub(crate) fn run(args: &str, status: i32) -> Output {
    run_env(args, &[], status)
}

/// Runs chantest with `args`, each one argument, and asserts its exit status.
pub(crate) fn run_args(args: &[&str], status: i32) -> Output {
    run_args_env(args, &[], status)
}

fn run_args_env(args: &[&str], env: &[(&str, &str)], status: i32) -> Output {
    let o = chantest_args(args, env);
    assert_eq!(
        o.status.code(),
        Some(status),
        "chantest {args:?} {env:?}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Runs chantest with `args` (split at whitespace), whatever its exit status.
pub(crate) fn chantest(args: &str) -> Output {
    chantest_args(&args.split_whitespace().collect::<Vec<_>>(), &[])
}

fn chantest_args(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run chantest")
}

/// What a run printed on stdout.
pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

/// What a run printed on stderr.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// Writes an executable bash script into `dir` and returns its path.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Whether valgrind is installed; a test that needs it says it skipped when it is not.
pub(crate) fn have_valgrind() -> bool {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("valgrind not installed: skipped");
    }
    ok
}

/// A fresh scratch directory for one test, removed when this is dropped (a failed assertion
/// unwinds through the drop too), so that the suite leaves no `/tmp/chantest-*` behind. Its
/// path has no spaces, so that tests may split command lines at whitespace.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// `$TMPDIR/chantest-<pid>-<name>`: the pid keeps two copies of the suite apart.
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("chantest-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        assert!(!dir.display().to_string().contains(char::is_whitespace));
        Scratch(dir)
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
