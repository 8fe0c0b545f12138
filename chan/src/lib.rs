//! Plan 9 channels over a pluggable lock strategy (in progress).
