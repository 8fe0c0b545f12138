//! The workload as one call, for a harness of your own: M senders each send N `u64`s through
//! one channel of O buffers, one receiver takes all M × N and checks every value. The call
//! returns the time from the common start to the last value's arrival.
//!
//! It is the runner and the check of `chantest --via chan` and `--via <peer>`, so a peer that
//! chantest gains is measured here too. A criterion suite hands it `iter_custom`'s count as
//! rounds of N: the threads start once per sample, and their start is not timed.
//!
//! ```
//! use chantest::workload::{self, Peer, Shape};
//! use std::time::Duration;
//!
//! // O = 10 buffers, M = 2 senders, N = 1000 values each.
//! let shape = Shape::new(10, 2, 1000);
//! let ours: Duration = workload::ours::<locks::Adaptive>(Default::default(), shape);
//! let kanal = Peer::all().find(|p| p.name() == "kanal").unwrap().run(shape);
//! println!("{:?} a message, kanal {:?}", ours / 2000, kanal / 2000);
//! ```

use crate::error::Error;
use crate::model::{Sample, MAX_BUFFERS, MAX_PER_SENDER, MAX_SENDERS, TAG};
use crate::via::spec::Spec;
use crate::via::{lane, Driver};
use locks::{Backend, Strategy, Visit};
use std::time::Duration;

/// The shape of one run: O buffers, M senders, N values per sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Shape {
    /// O: the channel's buffers (0: rendezvous).
    pub buffers: usize,
    /// M: sending threads (tasks, for a peer on tasks).
    pub senders: usize,
    /// N: values each sender sends.
    pub per_sender: u64,
}

impl Shape {
    /// O buffers, M senders, N values each.
    ///
    /// # Panics
    ///
    /// Beyond chantest's limits (`chantest --help`): M outside 1 to 4096, O above 2^20, N
    /// at or above 2^40, where a value's sequence number would overflow into its sender's id.
    pub fn new(buffers: usize, senders: usize, per_sender: u64) -> Shape {
        assert!(
            (1..=MAX_SENDERS).contains(&(senders as u64)),
            "{senders} senders: from 1 to {MAX_SENDERS}"
        );
        assert!(
            buffers as u64 <= MAX_BUFFERS,
            "{buffers} buffers: at most {MAX_BUFFERS}"
        );
        assert!(
            per_sender <= MAX_PER_SENDER,
            "{per_sender} values per sender: at most {MAX_PER_SENDER}"
        );
        Shape {
            buffers,
            senders,
            per_sender,
        }
    }

    /// M × N: the values the receiver takes.
    pub fn messages(&self) -> u64 {
        self.senders as u64 * self.per_sender
    }

    fn spec(&self) -> Spec<'static> {
        Spec {
            nbuf: self.buffers,
            senders: self.senders,
            per_sender: self.per_sender,
            size: TAG,
            global_lock: false,
            pin: None,
            fault: false,
        }
    }
}

/// One run on this project's channel guarded by the lock `S` with `params`: sender threads,
/// the calling thread receiving. The code is compiled for `S`, as a lane of
/// [`Locks::with`](crate::Locks::with) is.
///
/// # Panics
///
/// If a value is lost, duplicated or reordered, or a thread cannot start.
pub fn ours<S: Strategy>(params: S::Params, shape: Shape) -> Duration {
    elapsed(lane::<S>(params, &shape.spec(), Driver::Threads), S::NAME)
}

/// [`ours`] with the lock `backend` names, at its parameters. A strategy registered with
/// `locks` at run time is reached through [`locks::DynLock`] ([`Backend::visit`]).
///
/// # Panics
///
/// As [`ours`].
pub fn ours_with(backend: &Backend, shape: Shape) -> Duration {
    struct Ours(Shape);
    impl Visit for Ours {
        type Output = Duration;
        fn visit<S: Strategy>(self, params: S::Params) -> Duration {
            ours::<S>(params, self.0)
        }
    }
    backend.visit(Ours(shape))
}

/// Another crate's channel, as `chantest --via` names it: `kanal`, `crossbeam`, `flume` and
/// `std` with sender threads; `kanal-async`, `flume-async`, `async-channel` and `tokio` with
/// tasks on tokio's current-thread runtime, each with an `-mt` twin on its multi-thread one.
/// Needs the `peers` feature, on by default.
#[cfg(feature = "peers")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Peer(crate::model::PeerChan);

#[cfg(feature = "peers")]
impl Peer {
    /// Every peer, in the order `chantest --help` lists them: those on threads first.
    pub fn all() -> impl Iterator<Item = Peer> {
        crate::model::PeerChan::ALL.into_iter().map(Peer)
    }

    /// The name `--via` takes and the reports show.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// Whether its senders and receiver are tasks rather than threads.
    pub fn on_tasks(self) -> bool {
        self.0.on_tasks()
    }

    /// One run on a fresh channel of this peer's. `async-channel` and `tokio` have no
    /// rendezvous channel: at O = 0 they run with one buffer.
    ///
    /// # Panics
    ///
    /// As [`ours`].
    pub fn run(self, shape: Shape) -> Duration {
        elapsed(crate::via::peers::run(self.0, &shape.spec()), self.name())
    }
}

/// The wall time of a run, which must have passed the check.
fn elapsed(run: Result<Sample, Error>, name: &str) -> Duration {
    match run {
        Ok(sample) => Duration::from_nanos(sample.ns),
        Err(e) => panic!("chantest workload on {name}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lock_and_peer_delivers() {
        for o in [0, 3] {
            let shape = Shape::new(o, 3, 200);
            for b in Backend::ALL {
                assert!(ours_with(&b, shape) > Duration::ZERO, "{b} O={o}");
            }
            #[cfg(feature = "peers")]
            for p in Peer::all() {
                assert!(p.run(shape) > Duration::ZERO, "{} O={o}", p.name());
            }
        }
    }

    #[test]
    #[should_panic(expected = "at most")]
    fn a_sequence_number_too_wide_is_refused() {
        Shape::new(1, 1, MAX_PER_SENDER + 1);
    }
}
