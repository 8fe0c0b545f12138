//! The benchmark suite's crate. Its code lives in `benches/` (criterion suites), `common/`
//! (the workloads they share), `tests/` (smoke tests) and `examples/grid.rs` (the README's
//! results table); see `benches/README.md`.
