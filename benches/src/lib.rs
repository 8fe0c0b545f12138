//! The benchmark suite's crate. Its code lives in `benches/` (criterion suites), `common/`
//! (the workloads they share), `tests/` (smoke tests) and `examples/grid.rs` (the README's
//! results table); see `benches/README.md`.

/// The workspace README, whose examples run as doctests here: this crate depends on both
/// libraries, and is not published (a packaged crate could not reach the file).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
