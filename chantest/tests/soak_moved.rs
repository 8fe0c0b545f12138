//! `chantest soak` moved to a crate of its own: the old command says where, in one line, and
//! exits 2.

use std::process::Command;

#[test]
fn chantest_soak_points_to_the_soak_crate() {
    let out = Command::new(env!("CARGO_BIN_EXE_chantest"))
        .args(["soak", "--for", "1s"])
        .output()
        .expect("run chantest");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cargo run --release -p soak --"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
