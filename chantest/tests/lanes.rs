//! The lanes registry: the peers' locks, std's and parking_lot's mutexes, guard
//! our channel as lanes beside ours, through every driver and in child processes; the
//! default lanes stay ours. Tiny runs, as in `cli.rs`. (A lane of a user's own lock, through
//! `chantest::main_with`, is `examples/own-lock/`, which CI builds and runs.)

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_chantest");

/// Runs chantest with `args` (split at whitespace) and asserts its exit status.
fn run(args: &str, status: i32) -> Output {
    let o = Command::new(BIN)
        .args(args.split_whitespace())
        .env_remove("LOCKS_BACKEND")
        .output()
        .expect("run chantest");
    assert_eq!(
        o.status.code(),
        Some(status),
        "chantest {args}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The first word of each row of the table that starts with a lock's name.
fn lanes(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("lock"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_peers_locks_run_beside_ours() {
    let o = run("--lock adaptive,std,parking_lot -O 10 -M 2 -N 2000 -R 1", 0);
    assert_eq!(lanes(&o), ["adaptive", "std", "parking_lot"]);
}

#[test]
fn the_peers_locks_run_with_tasks_too() {
    let o = run(
        "--lock std,parking_lot --via task,task-mt -O 1 -M 2 -N 1000 -R 1",
        0,
    );
    assert_eq!(lanes(&o).len(), 4, "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn a_child_process_finds_the_same_lanes() {
    let o = run(
        "--lock parking_lot,std --per-process -O 1 -M 1 -N 500 -R 1",
        0,
    );
    assert_eq!(lanes(&o), ["parking_lot", "std"]);
}

#[test]
fn the_default_lanes_are_ours_and_all_adds_the_peers() {
    let ours = run("-O 1 -M 1 -N 500 -R 1", 0);
    assert_eq!(lanes(&ours), ["spin", "sem", "adaptive"]);
    let all = run("--lock all -O 1 -M 1 -N 500 -R 1", 0);
    assert_eq!(
        lanes(&all),
        ["spin", "sem", "adaptive", "std", "parking_lot"]
    );
}

#[test]
fn ref_std_is_the_lock_unless_via_lists_the_channel() {
    let o = run("--lock adaptive,std --ref std -O 1 -M 1 -N 500 -R 1", 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("ratio to std"), "{text}");
}

#[test]
fn an_unknown_lock_lists_the_peers_locks() {
    let o = run("--lock mcs", 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("spin, sem, adaptive, std, parking_lot"),
        "{err}"
    );
}
