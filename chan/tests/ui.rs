//! `alt!`'s messages for malformed arms, as compile-fail tests (`tests/ui/*.rs`, each with
//! the compiler's output it expects in a `.stderr` beside it). The outputs are those of
//! stable Rust 1.95; after a deliberate change, `TRYBUILD=overwrite cargo test -p plan9-chan
//! --test ui` rewrites them, and the diff shows what a user now sees.
#![cfg(not(any(loom, miri)))]

use std::process::Command;

/// The compiler release the `.stderr` files were written with. An older one words and lays
/// out its own part of the output differently, so there the test says so and passes (a user
/// may run the tests on the README's oldest toolchain, which `.ci/publish-check` type-checks
/// them with), and so does a nightly
/// (whose output is a moving target, and whose `.ci/tsan` run sets flags that the
/// compile-fail builds would not share); a newer stable release is compared, so that a
/// change in what users see shows up.
const WRITTEN_WITH: (u32, u32) = (1, 95);

/// The version of the `rustc` that trybuild's cargo will run (rustup passes the toolchain
/// of a `cargo +1.85 test` on in `RUSTUP_TOOLCHAIN`), if it is a stable release.
fn stable_rustc() -> Result<(u32, u32), String> {
    let out = Command::new("rustc").arg("--version").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let text = text.map_err(|e| format!("no rustc: {e}"))?; // "rustc 1.95.0 (f2d3ce0bd ..)"
    let release = text.split_whitespace().nth(1).unwrap_or_default();
    let mut parts = release.split('.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(major), Some(minor), Some(patch)) if !patch.contains('-') => {
            let major = major.parse().map_err(|_| text.clone())?;
            let minor = minor.parse().map_err(|_| text.clone())?;
            Ok((major, minor))
        }
        _ => Err(text.trim().to_string()),
    }
}

#[test]
fn alt_explains_malformed_arms() {
    match stable_rustc() {
        Ok(v) if v >= WRITTEN_WITH => {}
        v => {
            eprintln!(
                "skipped: the .stderr files are stable rustc {WRITTEN_WITH:?}'s, this is {v:?}"
            );
            return;
        }
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/alt_*.rs");
    // `Send`-ness: an alt's future is `Send` only through `SendAlt`, not through `Alt`.
    t.compile_fail("tests/ui/send_alt_*.rs");
}
