//! A one-line progress indicator on stderr, for sweeps long enough to wonder about.
//!
//! It appears only when stderr is a terminal (never in pipes, logs or tests) and only once
//! the sweep has run for a second, and it is redrawn at most ten times a second so that
//! drawing costs nothing measurable. It is updated between runs, never during one.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const QUIET_FOR: Duration = Duration::from_secs(1);
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// Progress through a known number of runs.
pub(crate) struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    drawn: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// Progress through `total` runs, shown if stderr is a terminal.
    pub(crate) fn new(total: usize) -> Progress {
        Progress::with_output(total, std::io::stderr().is_terminal())
    }

    fn with_output(total: usize, enabled: bool) -> Progress {
        Progress {
            total,
            done: 0,
            started: Instant::now(),
            drawn: None,
            enabled,
        }
    }

    /// One more run finished; `what` names it.
    pub(crate) fn advance(&mut self, what: &dyn std::fmt::Display) {
        self.done += 1;
        let now = Instant::now();
        let due = self.drawn.is_none_or(|t| now - t >= REDRAW_EVERY);
        if !self.enabled || now - self.started < QUIET_FOR || !due {
            return;
        }
        self.drawn = Some(now);
        let line = self.line(what, now - self.started);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
    }

    fn line(&self, what: &dyn std::fmt::Display, elapsed: Duration) -> String {
        let mut line = format!(
            "chantest: {}/{} runs, {:.0}s",
            self.done,
            self.total,
            elapsed.as_secs_f64()
        );
        if self.done > 0 && self.done < self.total {
            let left = elapsed.as_secs_f64() / self.done as f64 * (self.total - self.done) as f64;
            line += &format!(", ~{left:.0}s left; at {what}");
        }
        line
    }

    /// Erases the indicator, if it was ever drawn.
    pub(crate) fn finish(&mut self) {
        if self.drawn.take().is_some() {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_when_not_a_terminal() {
        let mut p = Progress::with_output(3, false);
        p.advance(&"x");
        assert!(p.drawn.is_none());
    }

    #[test]
    fn line_estimates_the_rest() {
        let mut p = Progress::with_output(4, false);
        p.done = 1;
        let l = p.line(&"sem O=10 M=8", Duration::from_secs(2));
        assert_eq!(l, "chantest: 1/4 runs, 2s, ~6s left; at sem O=10 M=8");
    }
}
