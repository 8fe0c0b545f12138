//! Transports: the chantest workload over the operating system's ways of moving data, so that
//! each seed's question ("shared memory or a pipe?", "a socket or memcpy?", "how dear is a
//! signal?") is answered on today's machine beside our channel.
//!
//! | `--via` | senders | receiver | `-O` | `-M` | `-S` |
//! |---|---|---|---|---|---|
//! | `chan` | threads | this thread | channel buffers | any | 8: a `u64`; more: a `Box<[u8]>`, moved |
//! | `task` | tasks, one thread | a task | channel buffers | any | as `chan` |
//! | `task-mt` | tasks, worker threads | a task | channel buffers | any | as `chan` |
//! | `pipe` | threads | this thread | ignored | any | copied through the kernel |
//! | `unix` | threads | this thread | ignored | any | copied through the kernel |
//! | `shm` | threads of a peer process | this thread | ring slots (0 runs as 1) | any | copied into the ring |
//! | `signal` | a peer process | this thread | ignored | 1 only | 8 only |
//! | `kanal`, `crossbeam`, `flume`, `std` | threads | this thread | channel buffers | any | 8 only |
//! | `kanal-async`, `flume-async`, `async-channel`, `tokio` (`-mt`: multi-thread) | tasks | a task | channel buffers (0: 1 for `async-channel`, `tokio`) | any | 8 only |
//!
//! Every transport carries the same records ([`record`]) and the receiver checks them the
//! same way: per-sender order, and for `-S` above 8 a checksum over every byte. What differs,
//! and what the figures show, is the mechanism. Every transport lives here, `chan` included
//! ([`chan`], and with tasks [`task`]); the peers, other crates' channels ([`peers`], behind
//! the `peers` feature), run through the same thread and task runners as `chan` and `task`,
//! by way of their channels' ends ([`ends`]). [`spec::Spec`] is the shape of one run, whatever
//! carries it.

mod chan;
mod ends;
mod futex;
pub(crate) mod peer;
#[cfg(feature = "peers")]
pub(crate) mod peers;
pub(crate) mod record;
mod ring;
pub(crate) mod shm;
pub(crate) mod signal;
pub(crate) mod spec;
mod stream;
mod task;

pub(crate) use chan::{lane, Driver};

use crate::error::{usage, Error};
use crate::model::{Sample, Via};
use locks::Backend;
use spec::Spec;
use std::ffi::OsStr;
use std::process::ExitCode;

/// One run over `via`; `backend` is the lock of our channel (`chan`, `task`, `task-mt`; the
/// other transports take none).
pub(crate) fn run(via: Via, backend: &Backend, spec: &Spec<'_>) -> Result<Sample, Error> {
    match via {
        Via::Chan => chan::run(backend, spec),
        Via::Task => task::run(task::Flavor::CurrentThread, backend, spec),
        Via::TaskMt => task::run(task::Flavor::MultiThread, backend, spec),
        Via::Pipe => stream::run(stream::Kind::Pipe, spec),
        Via::Unix => stream::run(stream::Kind::Unix, spec),
        Via::Signal => signal::run(spec),
        Via::Shm => shm::run(spec),
        #[cfg(feature = "peers")]
        Via::Peer(p) => peers::run(p, spec),
        // Not reached: without the feature a peer's name does not parse.
        #[cfg(not(feature = "peers"))]
        Via::Peer(p) => Err(usage!(
            "--via {}: built without the `peers` feature",
            p.name()
        )),
    }
}

/// If this process was started as a peer (`chantest --peer VIA …`, see [`peer`]), runs the
/// peer and returns its exit status; otherwise `None`, and chantest runs as usual.
pub(crate) fn main_if_peer() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(peer::FLAG)) {
        return None;
    }
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let (name, rest) = args
        .split_first()
        .map_or(("", &[][..]), |(n, r)| (n.as_str(), r));
    let result = match name.parse::<Via>() {
        Ok(Via::Shm) => shm::peer(rest),
        Ok(Via::Signal) => signal::peer(rest),
        _ => Err(usage!("`{name}` has no peer process")),
    };
    Some(match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chantest: {name} peer: {e}");
            e.exit_code()
        }
    })
}
