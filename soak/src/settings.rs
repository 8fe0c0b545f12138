//! What the command line sets for the whole run, beyond the workload: which hostile wakers
//! the task rounds get, how strictly their unwinding is accounted for, and a fault planted on
//! purpose. Each round's book carries a copy.

/// Which hostile wakers the task rounds get (`--hostile-wakers`; see [`super::hostile`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Which {
    /// Panicking and re-entrant wakers.
    All,
    /// Panicking and re-entrant wakers, but none panics out of `close()` or out of a
    /// cancelled receive future's drop: the two places a review found unsound in the library
    /// of its day (both fixed since), spared to soak a library from before the fixes.
    SpareKnown,
    /// Panicking wakers only.
    Panic,
    /// Re-entrant wakers only.
    Reenter,
    /// The executor's own wakers only.
    None,
}

/// `--hostile-wakers`'s default: every hostile waker. (`spare-known` spares the two places
/// where a review found the library unsound: a `close()` that stopped at the first panicking
/// waker, and a cancelled receive future's drop that freed memory its claimer still wrote.
/// Both are fixed; the mode stays for comparing against an older library.)
pub(super) const DEFAULT: Which = Which::All;

/// A fault `--inject` plants in the task workers, so that a test can see the soak catch it
/// in task rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Fault {
    /// Each task's first value from a completed `recv_async` is dropped unrecorded, as if a
    /// dropped receive future had lost the value it was handed instead of giving it back:
    /// the ledger must report it lost.
    DropReceived,
    /// The round's first task awaits a receive that nothing will ever complete: the watchdog
    /// must name the stuck task.
    StuckTask,
}

/// The run's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Settings {
    /// Which hostile wakers are on.
    pub wakers: Which,
    /// `--strict-wakers`: a value that a receive or an alt took and then dropped while it
    /// unwound from a waker's panic counts as lost (not as received), for a library that gives
    /// such a value back to its channel before the panic goes on.
    pub strict: bool,
    /// The fault planted in the task workers, if any.
    pub inject: Option<Fault>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            wakers: DEFAULT,
            strict: false,
            inject: None,
        }
    }
}

impl Settings {
    /// Whether panicking wakers are on.
    pub(super) fn panics_on(&self) -> bool {
        matches!(self.wakers, Which::All | Which::SpareKnown | Which::Panic)
    }

    /// Whether a panicking waker may panic out of `close()` and out of a cancelled receive
    /// future's drop (see [`Which::SpareKnown`]).
    pub(super) fn known_panics_on(&self) -> bool {
        matches!(self.wakers, Which::All | Which::Panic)
    }

    /// Whether re-entrant wakers are on.
    pub(super) fn reentry_on(&self) -> bool {
        matches!(self.wakers, Which::All | Which::SpareKnown | Which::Reenter)
    }

    /// Whether `fault` is planted.
    pub(super) fn injected(&self, fault: Fault) -> bool {
        self.inject == Some(fault)
    }

    /// The flags that select these settings, for a replay line; empty for the defaults.
    pub(super) fn flags(&self) -> String {
        let which = match self.wakers {
            w if w == DEFAULT => "",
            Which::All => " --hostile-wakers all",
            Which::SpareKnown => " --hostile-wakers spare-known",
            Which::Panic => " --hostile-wakers panic",
            Which::Reenter => " --hostile-wakers reenter",
            Which::None => " --hostile-wakers none",
        };
        let strict = match self.strict {
            true => " --strict-wakers",
            false => "",
        };
        let inject = match self.inject {
            Some(Fault::DropReceived) => " --inject drop-received",
            Some(Fault::StuckTask) => " --inject stuck-task",
            None => "",
        };
        format!("{which}{strict}{inject}")
    }
}
