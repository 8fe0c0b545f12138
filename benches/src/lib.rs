//! The benchmark suite's crate. Its code lives in `benches/` (criterion suites), `common/`
//! (the lock and select workloads they share; the channel workload is chantest's), `tests/`
//! (smoke tests) and `examples/dispatch.rs` (for callgrind); see `benches/README.md`. The result tables of `docs/results.md` are
//! chantest's (`benches/grid.sh`).

/// The workspace README, whose examples run as doctests here: this crate depends on both
/// libraries, and is not published (a packaged crate could not reach the file).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
