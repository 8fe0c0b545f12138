//! The shape of one run, whatever carries it, and the limits every transport shares.

use crate::affinity::Cpus;

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
    /// M: sending threads.
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
