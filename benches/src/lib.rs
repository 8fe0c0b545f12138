//! Criterion suites live in `benches/`.
