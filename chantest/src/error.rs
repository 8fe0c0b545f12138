//! Why chantest stopped, and the exit status that says so.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | ran; nothing regressed (every compared cell ok: its interval rules out a slowdown beyond `--threshold`) |
//! | 1 | ran; a cell regressed (`--baseline`, `--compare`, `--against`) |
//! | 2 | usage: bad flags, unreadable or mismatched baseline, unwritable output, no threads |
//! | 3 | a channel or transport lost, duplicated, reordered or corrupted a value, or a transport failed mid-run (its peer process died, a read failed) |
//! | 4 | ran; no cell regressed, but at least one is inconclusive: the data neither show a regression nor rule one out (more repetitions, or a `--budget`, may decide) |

use std::fmt;
use std::process::ExitCode;

/// Exit status when a cell regressed.
pub(crate) const REGRESSED: u8 = 1;
/// Exit status when no cell regressed but some are inconclusive. (Not 3, which already means
/// a broken channel.)
pub(crate) const INCONCLUSIVE: u8 = 4;

/// A reason to stop, carrying the one line to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// The command cannot be carried out as given (exit 2).
    Usage(String),
    /// The channel broke its contract: the benchmark's figures would be meaningless (exit 3).
    Violation(String),
    /// A transport broke down mid-run (its peer process died, a read or write failed): the
    /// values did not all arrive, so this too is exit 3, but nobody's contract was broken.
    Transport(String),
}

impl Error {
    /// The process exit status for this error.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Error::Usage(_) => 2,
            Error::Violation(_) | Error::Transport(_) => 3,
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(s) => f.write_str(s),
            Error::Violation(s) => write!(f, "channel check failed: {s}"),
            Error::Transport(s) => write!(f, "transport failed: {s}"),
        }
    }
}

/// `Error::Usage(format!(...))`.
macro_rules! usage {
    ($($arg:tt)*) => {
        $crate::error::Error::Usage(format!($($arg)*))
    };
}
pub(crate) use usage;
