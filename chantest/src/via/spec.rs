//! What the transports share: which one ([`Via`]), the shape of one run ([`Spec`]), the
//! limits, and the liveness check a blocked party calls ([`Alive`]). The transports import
//! these from here rather than from `via` itself, which imports each of them.

use crate::affinity::Cpus;
use crate::error::Error;
use std::fmt;
use std::str::FromStr;

/// Bits of a value that hold the sender's sequence number; the sender's id sits above them.
pub(crate) const SEQ_BITS: u32 = 40;
/// The most values one sender may send.
pub(crate) const MAX_PER_SENDER: u64 = (1 << SEQ_BITS) - 1;
/// The most senders: a thread each, and far beyond what contention studies need.
pub(crate) const MAX_SENDERS: u64 = 4096;
/// The most channel buffers (the channel may allocate them up front).
pub(crate) const MAX_BUFFERS: u64 = 1 << 20;

/// The shape of one run.
#[derive(Clone, Debug)]
pub(crate) struct Spec<'a> {
    /// O: the channel's buffers (0: rendezvous).
    pub nbuf: usize,
    /// M: senders (threads, or tasks for `task` and `task-mt`).
    pub senders: usize,
    /// N: values each sender sends.
    pub per_sender: u64,
    /// S: bytes per message (8: the value alone).
    pub size: usize,
    /// Plan 9's one lock for all channels instead of a lock per channel.
    pub global_lock: bool,
    /// Where to pin the threads, if anywhere.
    pub pin: Option<&'a Cpus>,
    /// For testing the check: sender 0 sends its value 1 twice, in place of value 2.
    pub fault: bool,
}

/// A liveness check that a blocked party calls every so often; an error ends its wait.
pub(crate) type Alive<'a> = &'a mut dyn FnMut() -> Result<(), Error>;

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
    /// [`super::peers`]; needs the `peers` feature).
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
        !matches!(
            self,
            PeerChan::Kanal | PeerChan::Crossbeam | PeerChan::Flume | PeerChan::Std
        )
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
