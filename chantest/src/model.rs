//! The vocabulary that running and reporting share, and nothing that runs: which transport
//! ([`Via`], [`PeerChan`]), the limits of a run's shape ([`Bounds`]) and where its threads
//! run ([`Placement`]), what one run measured ([`Sample`]) and on what ([`Machine`]), the
//! names of the files and of this build. It imports nothing from the rest of chantest.
//!
//! The records ([`crate::records`]), the verdicts ([`crate::verdict`]) and the reports
//! ([`crate::report`], [`crate::plot`]) import these from here, never from the code that runs
//! ([`crate::via`], [`mod@crate::run`], [`crate::measure`], [`crate::machine`]…), which imports
//! them from here too.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// `--version`: the package version and which build this is (see `build.rs`).
pub(crate) const BUILD_VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("CHANTEST_BUILD"), ")");

/// Bits of a value that hold the sender's sequence number; the sender's id sits above them.
pub(crate) const SEQ_BITS: u32 = 40;
/// The most values one sender may send.
pub(crate) const MAX_PER_SENDER: u64 = (1 << SEQ_BITS) - 1;
/// The most senders: a thread each, and far beyond what contention studies need.
pub(crate) const MAX_SENDERS: u64 = 4096;
/// The most channel buffers (the channel may allocate them up front).
pub(crate) const MAX_BUFFERS: u64 = 1 << 20;

/// What one flag accepts: the smallest and largest value, and what to call it in messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// The flag's name as the user types it, e.g. `-O`, for messages about values that did
    /// not come from that flag (a baseline file's).
    pub flag: &'static str,
    /// The smallest value allowed.
    pub min: u64,
    /// The largest value allowed.
    pub max: u64,
}

impl Bounds {
    /// `-O`: channel buffers; 0 is a rendezvous channel.
    pub(crate) const NBUF: Bounds = Bounds {
        flag: "-O",
        min: 0,
        max: MAX_BUFFERS,
    };
    /// `-M`: sending threads.
    pub(crate) const SENDERS: Bounds = Bounds {
        flag: "-M",
        min: 1,
        max: MAX_SENDERS,
    };
    /// `-N`: values per sender.
    pub(crate) const PER_SENDER: Bounds = Bounds {
        flag: "-N",
        min: 1,
        max: MAX_PER_SENDER,
    };
    /// `-R`: measured repetitions.
    pub(crate) const REPS: Bounds = Bounds {
        flag: "-R",
        min: 1,
        max: 10_000,
    };

    /// Whether `v` is within bounds; the error says what is allowed.
    pub(crate) fn check(self, v: u64) -> Result<(), String> {
        let Bounds { min, max, .. } = self;
        if (min..=max).contains(&v) {
            Ok(())
        } else {
            Err(format!("{v} is out of range (allowed: {min} to {max})"))
        }
    }
}

/// Bytes of the tag, the seed's ulong: the smallest message.
pub(crate) const TAG: usize = 8;
/// The largest message: far beyond the socket test's 1 MiB blocks, and small enough that a ring of
/// a few such slots fits in memory.
pub(crate) const MAX_SIZE: u64 = 256 << 20;

/// Whether `size` is a message size chantest can send; the error says what is allowed.
pub(crate) fn check_size(size: u64) -> Result<(), String> {
    match size {
        8 => Ok(()),
        0..8 => Err(format!(
            "{size} bytes is too small: a message carries at least its 8-byte value"
        )),
        9..16 => Err(format!(
            "{size} bytes does not fit the record: a message is 8 bytes (its value alone) or at \
             least 16 (value, checksum, payload)"
        )),
        _ if size > MAX_SIZE => Err(format!(
            "{size} bytes is out of range (allowed: 8, or 16 to {MAX_SIZE})"
        )),
        _ => Ok(()),
    }
}

/// Whether [`cycles`](crate::measure::cycles) counts anything on this architecture.
pub(crate) const HAVE_TSC: bool = cfg!(target_arch = "x86_64");

/// What one run of the workload cost, in totals (not per message): made from the clocks by
/// [`crate::measure::sample`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sample {
    /// Wall time from the start barrier to the last value received.
    pub ns: u64,
    /// Time-stamp counter ticks over the same interval (0 without a TSC).
    #[serde(default)]
    pub cycles: u64,
    /// CPU time of all threads, user plus system.
    #[serde(default)]
    pub cpu_ns: u64,
    /// Voluntary context switches.
    #[serde(default)]
    pub vcsw: u64,
    /// Involuntary context switches.
    #[serde(default)]
    pub ivcsw: u64,
    /// Futex waits by the locks and waiters (0 without the `stats` feature).
    #[serde(default)]
    pub futex_waits: u64,
    /// Futex wakes by the locks and waiters (0 without the `stats` feature).
    #[serde(default)]
    pub futex_wakes: u64,
    /// `sched_yield` calls by the locks and waiters (0 without the `stats` feature).
    #[serde(default)]
    pub yields: u64,
    /// Lock acquisitions that found the lock held (0 without the `stats` feature).
    #[serde(default)]
    pub contended: u64,
    /// Busy-wait turns (PAUSE-hinted loads) by the locks and waiters (0 without the `stats`
    /// feature).
    #[serde(default)]
    pub spins: u64,
    /// Threads moved off a shared CPU by the adaptive lock (0 without the `stats` feature).
    #[serde(default)]
    pub moves: u64,
    /// The round trip of a cache line between two of the machine's CPUs, in nanoseconds,
    /// timed just before this run's process started ([`crate::probe`]; `--per-process` and
    /// `--against`); 0 where not measured.
    #[serde(default)]
    pub cpu_trip_ns: u64,
}

/// The machine a run was made on: read by [`crate::machine::describe`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu: String,
    /// CPUs this process may use.
    pub nproc: usize,
    /// CPUs online.
    pub online_cpus: usize,
    /// `uname -srv`.
    pub kernel: String,
    /// `uname -m`.
    pub arch: String,
}

/// How `--pin` deals CPUs out to the receiver (thread 0) and the senders (threads 1..=M).
/// (The variants' first lines are `--help`'s.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Placement {
    /// Round-robin over every CPU, the receiver's included
    ///
    /// `--pin`: with more threads than CPUs, some senders share the receiver's CPU.
    #[default]
    Spread,
    /// The receiver alone on the first CPU, the senders round-robin over the rest (two CPUs
    /// or more)
    ///
    /// `--pin=apart`: blocked senders cannot take the receiver's CPU from it, which on a
    /// small machine is most of what many senders cost (`docs/tuning.md`).
    Apart,
}

impl Placement {
    /// From the two flags a saved file or the shm ring keeps: whether pinned, and whether
    /// apart (meaningless unless pinned).
    pub(crate) fn from_flags(pin: bool, apart: bool) -> Option<Placement> {
        match (pin, apart) {
            (false, _) => None,
            (true, false) => Some(Placement::Spread),
            (true, true) => Some(Placement::Apart),
        }
    }

    /// The two flags of [`from_flags`](Self::from_flags): `(pin, apart)`.
    pub(crate) fn to_flags(pin: Option<Placement>) -> (bool, bool) {
        (pin.is_some(), pin == Some(Placement::Apart))
    }

    /// The flag that asks for this placement, bare for the default, so that builds from
    /// before `--pin=` took a value still understand it.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Placement::Spread => "--pin",
            Placement::Apart => "--pin=apart",
        }
    }
}

/// What carries the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Via {
    /// This project's channel, once per lock backend: M sender threads, the receiver on this
    /// thread.
    Chan,
    /// The same channel, once per lock backend, with tasks: M sender tasks and one receiver
    /// task on a tokio current-thread runtime (one OS thread: Plan 9's threads in one proc).
    Task,
    /// As [`Via::Task`], on a tokio multi-thread (work-stealing) runtime.
    TaskMt,
    /// One pipe.
    Pipe,
    /// One unix stream socket pair.
    Unix,
    /// A signal ping-pong between two processes.
    Signal,
    /// A ring in memory shared with a second process.
    Shm,
    /// Another crate's channel, run by the same workload and check as ours (see
    /// [`crate::via::peers`]; needs the `peers` feature).
    Peer(PeerChan),
}

/// The peers: other crates' channels, each run as `chan` (threads) or `task` and `task-mt`
/// (tasks) run ours. Named here, where every build can parse and print them; built and run
/// only with the `peers` feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PeerChan {
    /// `kanal::bounded`, sender threads.
    Kanal,
    /// `crossbeam_channel::bounded`, sender threads.
    Crossbeam,
    /// `flume::bounded`, sender threads.
    Flume,
    /// `std::sync::mpsc::sync_channel`, sender threads.
    Std,
    /// `kanal::bounded_async`, tasks on the current-thread runtime.
    KanalAsync,
    /// `kanal::bounded_async`, tasks on the multi-thread runtime.
    KanalAsyncMt,
    /// `flume::bounded` with `send_async` and `recv_async`, current-thread runtime.
    FlumeAsync,
    /// `flume::bounded` with `send_async` and `recv_async`, multi-thread runtime.
    FlumeAsyncMt,
    /// `async_channel::bounded`, current-thread runtime.
    AsyncChannel,
    /// `async_channel::bounded`, multi-thread runtime.
    AsyncChannelMt,
    /// `tokio::sync::mpsc::channel`, current-thread runtime.
    Tokio,
    /// `tokio::sync::mpsc::channel`, multi-thread runtime.
    TokioMt,
}

impl PeerChan {
    /// Every peer, in the order `--help` lists them.
    pub(crate) const ALL: [PeerChan; 12] = [
        PeerChan::Kanal,
        PeerChan::Crossbeam,
        PeerChan::Flume,
        PeerChan::Std,
        PeerChan::KanalAsync,
        PeerChan::KanalAsyncMt,
        PeerChan::FlumeAsync,
        PeerChan::FlumeAsyncMt,
        PeerChan::AsyncChannel,
        PeerChan::AsyncChannelMt,
        PeerChan::Tokio,
        PeerChan::TokioMt,
    ];

    /// The name `--via` and the reports use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            PeerChan::Kanal => "kanal",
            PeerChan::Crossbeam => "crossbeam",
            PeerChan::Flume => "flume",
            PeerChan::Std => "std",
            PeerChan::KanalAsync => "kanal-async",
            PeerChan::KanalAsyncMt => "kanal-async-mt",
            PeerChan::FlumeAsync => "flume-async",
            PeerChan::FlumeAsyncMt => "flume-async-mt",
            PeerChan::AsyncChannel => "async-channel",
            PeerChan::AsyncChannelMt => "async-channel-mt",
            PeerChan::Tokio => "tokio",
            PeerChan::TokioMt => "tokio-mt",
        }
    }

    /// Whether it runs with tasks (as `task` and `task-mt` do) rather than threads.
    pub(crate) fn on_tasks(self) -> bool {
        self.ours() != Via::Chan
    }

    /// Our transport that runs the same way: `chan` for a peer on threads, `task` or
    /// `task-mt` for one on tasks, on the same runtime (`--compare kanal-async,adaptive`).
    pub(crate) fn ours(self) -> Via {
        match self {
            PeerChan::Kanal | PeerChan::Crossbeam | PeerChan::Flume | PeerChan::Std => Via::Chan,
            PeerChan::KanalAsync
            | PeerChan::FlumeAsync
            | PeerChan::AsyncChannel
            | PeerChan::Tokio => Via::Task,
            PeerChan::KanalAsyncMt
            | PeerChan::FlumeAsyncMt
            | PeerChan::AsyncChannelMt
            | PeerChan::TokioMt => Via::TaskMt,
        }
    }

    /// Whether it has no rendezvous channel (a capacity of 0 panics), so that `-O 0` runs it
    /// with one buffer, as the reports say.
    pub(crate) fn no_rendezvous(self) -> bool {
        matches!(
            self,
            PeerChan::AsyncChannel | PeerChan::AsyncChannelMt | PeerChan::Tokio | PeerChan::TokioMt
        )
    }
}

impl Via {
    /// Every transport, in the order `--help` lists them, the peers last.
    pub(crate) const ALL: [Via; 19] = {
        let mut all = [Via::Chan; 19];
        let ours = [
            Via::Chan,
            Via::Task,
            Via::TaskMt,
            Via::Pipe,
            Via::Unix,
            Via::Signal,
            Via::Shm,
        ];
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < ours.len() {
                ours[i]
            } else {
                Via::Peer(PeerChan::ALL[i - ours.len()])
            };
            i += 1;
        }
        all
    };

    /// The name `--via` and the reports use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Via::Chan => "chan",
            Via::Task => "task",
            Via::TaskMt => "task-mt",
            Via::Pipe => "pipe",
            Via::Unix => "unix",
            Via::Signal => "signal",
            Via::Shm => "shm",
            Via::Peer(p) => p.name(),
        }
    }

    /// Our transport to set beside this one in a comparison: a peer's own
    /// ([`PeerChan::ours`]), else `chan`.
    pub(crate) fn ours(self) -> Via {
        match self {
            Via::Peer(p) => p.ours(),
            _ => Via::Chan,
        }
    }

    /// Whether it runs this project's channel, and so once per lock backend (`--lock`): `chan`
    /// with threads, `task` and `task-mt` with tasks.
    pub(crate) fn takes_lock(self) -> bool {
        matches!(self, Via::Chan | Via::Task | Via::TaskMt)
    }

    /// Parses a comma-separated list without repeats.
    pub(crate) fn parse_list(s: &str) -> Result<Vec<Via>, String> {
        let mut list = Vec::new();
        for item in s.split(',') {
            let via: Via = item.trim().parse()?;
            if list.contains(&via) {
                return Err(format!("`{via}` is listed twice"));
            }
            list.push(via);
        }
        Ok(list)
    }

    /// Messages in one run of M senders × N values: M×N, except for `signal`, whose N round
    /// trips are 2N signals, so that its figures are per signal, one way.
    pub(crate) fn messages(self, senders: u64, per_sender: u64) -> f64 {
        let per_sender = if self == Via::Signal {
            2.0 * per_sender as f64
        } else {
            per_sender as f64
        };
        senders as f64 * per_sender
    }

    /// The transport that ratios are taken against: the one `reference` names if it is in
    /// `vias` and takes no lock (`--ref kanal`; otherwise `reference` names a lock backend),
    /// else `chan` if it is in `vias`, else the first.
    pub(crate) fn reference(vias: &[Via], reference: &str) -> Via {
        if let Some(&v) = vias
            .iter()
            .find(|v| !v.takes_lock() && v.name() == reference)
        {
            v
        } else if vias.contains(&Via::Chan) {
            Via::Chan
        } else {
            vias.first().copied().unwrap_or(Via::Chan)
        }
    }
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Via {
    type Err = String;

    fn from_str(s: &str) -> Result<Via, String> {
        let found = Via::ALL.into_iter().find(|v| v.name() == s);
        if let (Some(Via::Peer(_)), false) = (found, cfg!(feature = "peers")) {
            return Err(format!(
                "`{s}` is a peer: this chantest was built without the `peers` feature"
            ));
        }
        found.ok_or_else(|| {
            let names: Vec<&str> = Via::ALL.iter().map(|v| v.name()).collect();
            format!(
                "unknown transport `{s}` (expected one of {})",
                names.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(check_size(8), Ok(()));
        assert_eq!(check_size(16), Ok(()));
        assert_eq!(check_size(MAX_SIZE), Ok(()));
        assert!(check_size(0)
            .unwrap_err()
            .contains("at least its 8-byte value"));
        assert!(check_size(12).unwrap_err().contains("or at least 16"));
        assert!(check_size(MAX_SIZE + 1)
            .unwrap_err()
            .contains("out of range"));
    }

    #[test]
    fn names_round_trip() {
        for v in Via::ALL {
            match v {
                Via::Peer(_) if !cfg!(feature = "peers") => {
                    assert!(v
                        .name()
                        .parse::<Via>()
                        .unwrap_err()
                        .contains("`peers` feature"))
                }
                _ => assert_eq!(v.name().parse::<Via>(), Ok(v)),
            }
        }
        assert!(Via::parse_list("chan,tcp")
            .unwrap_err()
            .contains("unknown transport `tcp`"));
        assert!(Via::parse_list("pipe,pipe")
            .unwrap_err()
            .contains("listed twice"));
        assert_eq!(Via::parse_list("shm, pipe").unwrap(), [Via::Shm, Via::Pipe]);
    }

    #[test]
    fn reference_and_messages() {
        assert_eq!(Via::reference(&[Via::Pipe, Via::Chan], "sem"), Via::Chan);
        assert_eq!(Via::reference(&[Via::Shm, Via::Pipe], "sem"), Via::Shm);
        let kanal = Via::Peer(PeerChan::Kanal);
        assert_eq!(Via::reference(&[Via::Chan, kanal], "kanal"), kanal);
        assert_eq!(Via::reference(&[Via::Chan, kanal], "adaptive"), Via::Chan);
        assert_eq!(Via::reference(&[Via::Chan], "kanal"), Via::Chan);
        assert_eq!(Via::Signal.messages(1, 10), 20.0);
        assert_eq!(Via::Pipe.messages(3, 10), 30.0);
    }
}
