//! Progress on stderr, for sweeps long enough to wonder about.
//!
//! * On a terminal, a one-line indicator, redrawn in place at most ten times a second once the
//!   sweep has run for a second.
//! * Anywhere (a terminal, a pipe, a CI log): once the run is known to take more than a
//!   minute, one line saying about how long, estimated from the runs so far (re-estimated
//!   after every run, and at the minute: a cheap first run must not make a long sweep look
//!   short, as it did for a 515 s sweep that printed nothing); while the first run is still
//!   going after a minute, a lower bound from it.
//! * Not on a terminal, for such a long run: a progress line every [`LOG_EVERY`], so a log
//!   shows the run is alive and how far it got.
//!
//! Nothing is drawn during a measured run by the measuring thread: the indicator is updated
//! between runs, and the timed lines come from a watcher thread that sleeps in between (a
//! wake-up every half minute at most).

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const QUIET_FOR: Duration = Duration::from_secs(1);
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// A run longer than this gets an estimate up front, and (off a terminal) periodic lines.
pub(crate) const LONG: Duration = Duration::from_secs(60);
/// How often a long run off a terminal says how far it got.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(30);

/// Progress through a known number of runs.
pub(crate) struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    drawn: Option<Instant>,
    enabled: bool,
    watcher: Option<(mpsc::Sender<String>, thread::JoinHandle<()>)>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Progress({}/{})", self.done, self.total)
    }
}

impl Progress {
    /// Progress through `total` runs: the indicator if stderr is a terminal, the estimate and
    /// periodic lines for a long run.
    pub(crate) fn new(total: usize) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let mut p = Progress::with_output(total, terminal);
        let (tx, rx) = mpsc::channel();
        let mut log = Log::new(total, p.started, !terminal);
        let watcher = thread::Builder::new()
            .name("chantest-progress".into())
            .spawn(move || log.watch(&rx));
        p.watcher = watcher.ok().map(|h| (tx, h));
        p
    }

    fn with_output(total: usize, enabled: bool) -> Progress {
        Progress {
            total,
            done: 0,
            started: Instant::now(),
            drawn: None,
            enabled,
            watcher: None,
        }
    }

    /// One more run finished; `what` names it.
    pub(crate) fn advance(&mut self, what: &dyn std::fmt::Display) {
        self.done += 1;
        if let Some((tx, _)) = &self.watcher {
            let _ = tx.send(what.to_string());
        }
        let now = Instant::now();
        let due = self.drawn.is_none_or(|t| now - t >= REDRAW_EVERY);
        if !self.enabled || now - self.started < QUIET_FOR || !due {
            return;
        }
        self.drawn = Some(now);
        let line = line(self.done, self.total, what, now - self.started);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
    }

    /// Erases the indicator, if it was ever drawn, and stops the watcher.
    pub(crate) fn finish(&mut self) {
        if let Some((tx, h)) = self.watcher.take() {
            drop(tx);
            let _ = h.join();
        }
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

/// `chantest: 3/12 runs, 95s, ~4m left; at sem O=10 M=8`.
fn line(done: usize, total: usize, what: &dyn std::fmt::Display, elapsed: Duration) -> String {
    let mut line = format!(
        "chantest: {done}/{total} runs, {}",
        human(elapsed.as_secs_f64())
    );
    if done > 0 && done < total {
        let left = elapsed.as_secs_f64() / done as f64 * (total - done) as f64;
        line += &format!(", ~{} left; at {what}", human(left));
    }
    line
}

/// Seconds as a person reads them: `42s`, `7m`, `2h05m`, `3d`.
pub(crate) fn human(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=99 => format!("{s}s"),
        100..=5999 => format!("{}m", (s + 30) / 60),
        6000..=172_799 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d", (s + 43_200) / 86_400),
    }
}

/// The timed lines: what the watcher thread says, and when. Pure, so that it is tested with
/// made-up times.
struct Log {
    total: usize,
    done: usize,
    started: Instant,
    last: String,
    /// Periodic lines (off a terminal).
    periodic: bool,
    /// The run is known to be long, and the estimate was printed.
    long: bool,
    logged: Option<Instant>,
}

impl Log {
    fn new(total: usize, started: Instant, periodic: bool) -> Log {
        Log {
            total,
            done: 0,
            started,
            last: String::new(),
            periodic,
            long: false,
            logged: None,
        }
    }

    /// Runs until the sender hangs up, printing what [`Log::on_done`] and [`Log::on_tick`]
    /// say.
    fn watch(&mut self, rx: &mpsc::Receiver<String>) {
        let say = |l: String| {
            let _ = writeln!(std::io::stderr().lock(), "{l}");
        };
        loop {
            let wait = self.next_tick(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(what) => self.on_done(Instant::now(), what).into_iter().for_each(say),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.on_tick(Instant::now()).into_iter().for_each(say);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn next_tick(&self, now: Instant) -> Duration {
        let elapsed = now - self.started;
        if !self.long && elapsed < LONG {
            return (LONG - elapsed).max(Duration::from_millis(100));
        }
        match self.logged {
            Some(t) => (t + LOG_EVERY).saturating_duration_since(now),
            None => LOG_EVERY,
        }
        .max(Duration::from_millis(100))
    }

    /// The estimate, once the runs so far say the whole will take more than [`LONG`] (or it
    /// already has); `None` while it looks short.
    fn estimate(&mut self, now: Instant) -> Option<String> {
        let elapsed = now - self.started;
        let per = elapsed.as_secs_f64() / self.done.max(1) as f64;
        let whole = per * self.total as f64;
        if self.done == 0 || (whole <= LONG.as_secs_f64() && elapsed < LONG) {
            return None;
        }
        self.long = true;
        self.logged = Some(now);
        Some(if self.done == 1 {
            format!(
                "chantest: {} runs at about {} each: this will take about {}",
                self.total,
                human(per),
                human(whole)
            )
        } else {
            format!(
                "chantest: {}/{} runs in {}: this will take about {} in all",
                self.done,
                self.total,
                human(elapsed.as_secs_f64()),
                human(whole)
            )
        })
    }

    /// A run finished.
    fn on_done(&mut self, now: Instant, what: String) -> Option<String> {
        self.done += 1;
        self.last = what;
        if self.long {
            return self.periodic_line(now);
        }
        self.estimate(now)
    }

    /// Time passed with no run finishing.
    fn on_tick(&mut self, now: Instant) -> Option<String> {
        let elapsed = now - self.started;
        if !self.long && self.done == 0 && elapsed >= LONG {
            self.long = true;
            self.logged = Some(now);
            return Some(format!(
                "chantest: the first of {} runs has taken {} so far: this will take at least {}",
                self.total,
                human(elapsed.as_secs_f64()),
                human(elapsed.as_secs_f64() * self.total as f64)
            ));
        }
        if !self.long {
            return self.estimate(now);
        }
        self.periodic_line(now)
    }

    fn periodic_line(&mut self, now: Instant) -> Option<String> {
        let due = self.logged.is_none_or(|t| now - t >= LOG_EVERY);
        if !(self.periodic && self.long && due && self.done < self.total) {
            return None;
        }
        self.logged = Some(now);
        Some(line(self.done, self.total, &self.last, now - self.started))
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
        let l = line(1, 4, &"sem O=10 M=8", Duration::from_secs(2));
        assert_eq!(l, "chantest: 1/4 runs, 2s, ~6s left; at sem O=10 M=8");
    }

    #[test]
    fn durations_read_easily() {
        assert_eq!(human(42.4), "42s");
        assert_eq!(human(420.0), "7m");
        assert_eq!(human(7500.0), "2h05m");
        assert_eq!(human(3.0 * 86400.0), "3d");
    }

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_short_run_says_nothing() {
        let t0 = Instant::now();
        let mut log = Log::new(10, t0, true);
        for i in 1..=10 {
            assert_eq!(log.on_done(t0 + S(2 * i), "a".into()), None);
        }
    }

    #[test]
    fn a_long_run_is_estimated_from_its_first_run_then_logged() {
        let t0 = Instant::now();
        let mut log = Log::new(12, t0, true);
        let first = log.on_done(t0 + S(10), "sem O=10 M=8".into()).unwrap();
        assert_eq!(
            first,
            "chantest: 12 runs at about 10s each: this will take about 2m"
        );
        // Nothing until the period is up, then one line.
        assert_eq!(log.on_done(t0 + S(20), "x".into()), None);
        let l = log.on_tick(t0 + S(40)).unwrap();
        assert_eq!(l, "chantest: 2/12 runs, 40s, ~3m left; at x");
        assert_eq!(log.on_tick(t0 + S(50)), None);
        // On a terminal the estimate still comes, the periodic lines do not.
        let mut log = Log::new(12, t0, false);
        assert!(log.on_done(t0 + S(10), "a".into()).is_some());
        assert_eq!(log.on_tick(t0 + S(100)), None);
    }

    #[test]
    fn a_cheap_first_run_does_not_silence_a_long_sweep() {
        // Once, a 515 s sweep to a file printed nothing until its table, the first run
        // (M=1) having been cheap. Here the first of 40 runs takes 1 s, then each 20 s.
        let t0 = Instant::now();
        let mut log = Log::new(40, t0, true);
        assert_eq!(log.on_done(t0 + S(1), "adaptive O=10 M=1".into()), None);
        let l = log.on_done(t0 + S(21), "adaptive O=10 M=8".into()).unwrap();
        assert_eq!(
            l,
            "chantest: 2/40 runs in 21s: this will take about 7m in all"
        );
        // Then a line every 30 s off a terminal.
        assert_eq!(log.on_done(t0 + S(41), "x".into()), None);
        let l = log.on_tick(t0 + S(51)).unwrap();
        assert!(l.starts_with("chantest: 3/40 runs, 51s, ~"), "{l}");
        assert_eq!(log.on_tick(t0 + S(60)), None);
        assert!(log.on_tick(t0 + S(81)).is_some());
    }

    #[test]
    fn a_run_that_reaches_the_minute_is_long_whatever_it_estimated() {
        // Three runs of ten, quick at first: the estimate looked short, but a minute passed.
        let t0 = Instant::now();
        let mut log = Log::new(10, t0, true);
        for (t, w) in [(1, "a"), (2, "b"), (3, "c")] {
            assert_eq!(log.on_done(t0 + S(t), w.into()), None);
        }
        assert_eq!(log.next_tick(t0 + S(3)), S(57));
        let l = log.on_tick(t0 + S(60)).unwrap();
        assert_eq!(
            l,
            "chantest: 3/10 runs in 60s: this will take about 3m in all"
        );
        assert!(log.on_tick(t0 + S(90)).is_some());
    }

    #[test]
    fn a_first_run_that_never_ends_gives_a_lower_bound() {
        // `-N 1000000000000 -M 8`: the first run alone takes days.
        let t0 = Instant::now();
        let mut log = Log::new(6, t0, true);
        assert_eq!(log.on_tick(t0 + S(30)), None);
        let l = log.on_tick(t0 + S(60)).unwrap();
        assert_eq!(
            l,
            "chantest: the first of 6 runs has taken 60s so far: this will take at least 6m"
        );
        let l = log.on_tick(t0 + S(90)).unwrap();
        assert!(l.starts_with("chantest: 0/6 runs, 90s"), "{l}");
    }
}
