//! `alt!`'s messages for malformed arms, as compile-fail tests (`tests/ui/*.rs`, each with
//! the compiler's output it expects in a `.stderr` beside it). The outputs are those of
//! stable Rust 1.95; after a deliberate change, `TRYBUILD=overwrite cargo test -p plan9-chan
//! --test ui` rewrites them, and the diff shows what a user now sees.
#![cfg(not(any(loom, miri)))]

use std::process::Command;

/// The compiler release the `.stderr` files were written with. An older one words and lays
/// out its own part of the output differently, so there the test says so and passes (the
/// README's oldest toolchain runs every test in `.ci/publish-check`); a newer one is
/// compared, so that a change in what users see shows up.
const WRITTEN_WITH: (u32, u32) = (1, 95);

/// The version of the `rustc` that trybuild's cargo will run (rustup passes the toolchain
/// of a `cargo +1.85 test` on in `RUSTUP_TOOLCHAIN`).
fn rustc_version() -> Option<(u32, u32)> {
    let out = Command::new("rustc").arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?; // "rustc 1.95.0 (f2d3ce0bd 2026-03-21)"
    let mut parts = text.split_whitespace().nth(1)?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[test]
fn alt_explains_malformed_arms() {
    match rustc_version() {
        Some(v) if v >= WRITTEN_WITH => {}
        v => {
            eprintln!("skipped: the .stderr files are rustc {WRITTEN_WITH:?}'s, this is {v:?}");
            return;
        }
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/alt_*.rs");
}
