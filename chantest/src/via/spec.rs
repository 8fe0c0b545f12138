//! What the transports share: the shape of one run ([`Spec`]) and the liveness check a blocked
//! party calls ([`Alive`]). The transports import these from here rather than from `via`
//! itself, which imports each of them; which transport ([`Via`](crate::model::Via)) and the
//! limits are [`crate::model`]'s, shared with the records and reports.

use crate::affinity::Cpus;
use crate::error::Error;

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
