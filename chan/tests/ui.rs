//! `alt!`'s messages for malformed arms, as compile-fail tests (`tests/ui/*.rs`, each with
//! the compiler's output it expects in a `.stderr` beside it). The outputs are those of the
//! stable toolchain; after a deliberate change, `TRYBUILD=overwrite cargo test -p plan9-chan
//! --test ui` rewrites them, and the diff shows what a user now sees.
#![cfg(not(any(loom, miri)))]

#[test]
fn alt_explains_malformed_arms() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/alt_*.rs");
}
