//! Why the soak stopped, and the exit status that says so: 2 for a usage error (bad flags, a
//! thread that cannot start), 3 for a failed check (the watchdog exits 3 by itself).

use std::fmt;
use std::process::ExitCode;

/// A reason to stop, carrying the one line to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// The soak cannot be run as asked (exit 2).
    Usage(String),
    /// A channel broke its contract (exit 3).
    Violation(String),
}

impl Error {
    /// The process exit status for this error.
    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Error::Usage(_) => 2,
            Error::Violation(_) => 3,
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(s) => f.write_str(s),
            Error::Violation(s) => write!(f, "channel check failed: {s}"),
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

/// Clap's multi-line error as one line: its first, without the `error: ` prefix, and with
/// the pointer to `help` it would have printed below.
pub(crate) fn one_line(message: &str, help: &str) -> String {
    let first = message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments");
    let first = first.trim().trim_start_matches("error: ");
    // A value outside a set: clap lists the set on a line of its own.
    let values = message
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("[possible values:"))
        .map(|l| format!(" {l}"))
        .unwrap_or_default();
    format!("{first}{values} (try {help})")
}
