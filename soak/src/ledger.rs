//! What became of every value: created, sent, received, returned, dropped, each counted.
//!
//! One entry per value, indexed by the value's id, holding small counters packed in one
//! atomic word, so that recording costs one atomic add on a line nobody else is likely to
//! touch. The round's end reads every entry and names each value whose story does not add up.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// The most values (sent, stale and echoed together) one round may create.
pub(super) const CAPACITY: u32 = 1 << 18;

/// What a value is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Made by a sender to be sent; carries a sequence number.
    Data,
    /// Made inside a re-entrant drop and offered with `nbsend`.
    Echo,
    /// Put by a receiver into an alt receive slot, to be overwritten or kept: never sent.
    Stale,
}

// Five-bit counters in the state word.
const RECEIVED: u32 = 1;
const DROPPED: u32 = 1 << 5;
const RETURNED: u32 = 1 << 10;
const TEARDOWN: u32 = 1 << 15;
const SENT: u32 = 1 << 20;
const CREATED: u32 = 1 << 25;
const FIELD: u32 = 31;
/// A two-bit counter in the top bits: dropped by the library, received by a receive future
/// that was then dropped after its channel was reported closed and drained.
const DISCARDED: u32 = 1 << 30;

fn field(state: u32, unit: u32) -> u32 {
    match unit {
        DISCARDED => state >> 30,
        _ => (state / unit) & FIELD,
    }
}

/// Where a value came from, as the checks describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Origin {
    /// What it is for.
    pub kind: Kind,
    /// Its logical sender (a lane of a sending thread).
    pub lane: u16,
    /// The channel it is meant for.
    pub chan: u8,
    /// Its place among `lane`'s values on `chan`.
    pub seq: u32,
}

impl Origin {
    fn pack(&self) -> u64 {
        let kind = match self.kind {
            Kind::Data => 0,
            Kind::Echo => 1,
            Kind::Stale => 2,
        };
        u64::from(self.seq) | u64::from(self.lane) << 32 | u64::from(self.chan) << 48 | kind << 56
    }

    fn unpack(w: u64) -> Origin {
        Origin {
            kind: match w >> 56 {
                0 => Kind::Data,
                1 => Kind::Echo,
                _ => Kind::Stale,
            },
            lane: (w >> 32) as u16,
            chan: (w >> 48) as u8,
            seq: w as u32,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Data => write!(
                f,
                "lane {}'s value {} for c{}",
                self.lane, self.seq, self.chan
            ),
            Kind::Echo => write!(f, "an echo for c{} made in a re-entrant drop", self.chan),
            Kind::Stale => f.write_str("a stale value a receiver put in an alt slot"),
        }
    }
}

struct Entry {
    state: AtomicU32,
    origin: AtomicU64,
}

/// Every value's story, for one round at a time.
pub(super) struct Ledger {
    next: AtomicU32,
    entries: Box<[Entry]>,
}

/// What the values of a round came to, counted at its end.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    /// Values made to be sent.
    pub data: u64,
    /// Echo values made in re-entrant drops.
    pub echoes: u64,
    /// Stale values put in receive slots.
    pub stale: u64,
    /// Values received (data and echoes).
    pub received: u64,
    /// Values given back to their sender (closed channel, abandoned at the end).
    pub returned: u64,
    /// Values still buffered in a closed channel when it was destroyed.
    pub teardown: u64,
    /// Values a receive future had been handed, dropped with that future after the channel
    /// was reported closed and drained (chan's rule: given back, they would have risen from
    /// the dead).
    pub discarded: u64,
    /// Values handed to receive futures that were leaked (`mem::forget`), never dropped.
    pub leaked: u64,
}

impl Ledger {
    /// An empty ledger, room for [`CAPACITY`] values. Made once per run (3 MiB) and lent to
    /// every round's book, which [`reset`](Self::reset)s it first.
    pub(super) fn new() -> Ledger {
        Ledger {
            next: AtomicU32::new(0),
            entries: (0..CAPACITY)
                .map(|_| Entry {
                    state: AtomicU32::new(0),
                    origin: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// Forgets the last round. Call only when no value of it is alive.
    pub(super) fn reset(&self) {
        let used = self.next.swap(0, Relaxed).min(CAPACITY);
        for e in &self.entries[..used as usize] {
            e.state.store(0, Relaxed);
            e.origin.store(0, Relaxed);
        }
    }

    /// Up to `n` fresh ids; fewer (or none) once the ledger is full.
    pub(super) fn reserve(&self, n: u32) -> Range<u32> {
        let first = self.next.fetch_add(n, Relaxed).min(CAPACITY);
        first..first.saturating_add(n).min(CAPACITY)
    }

    /// Records the birth of value `id`.
    pub(super) fn create(&self, id: u32, origin: Origin) {
        let e = &self.entries[id as usize];
        e.origin.store(origin.pack(), Relaxed);
        e.state.fetch_add(CREATED, Relaxed);
    }

    /// Value `id` was received; returns how many times it had been before.
    pub(super) fn received(&self, id: u32) -> u32 {
        field(
            self.entries[id as usize].state.fetch_add(RECEIVED, Relaxed),
            RECEIVED,
        )
    }

    /// Value `id`'s send succeeded.
    pub(super) fn sent(&self, id: u32) {
        self.entries[id as usize].state.fetch_add(SENT, Relaxed);
    }

    /// Value `id` came back to its sender, which gave up on it.
    pub(super) fn returned(&self, id: u32) {
        self.entries[id as usize].state.fetch_add(RETURNED, Relaxed);
    }

    /// Value `id`, received by a receive future dropped after its channel was reported
    /// closed and drained, is being dropped by the library (see [`Tally::discarded`]).
    pub(super) fn discarded(&self, id: u32) {
        self.entries[id as usize]
            .state
            .fetch_add(DISCARDED, Relaxed);
    }

    /// Value `id` is being dropped (by the round's teardown if `teardown`).
    pub(super) fn dropped(&self, id: u32, teardown: bool) {
        let unit = if teardown {
            DROPPED + TEARDOWN
        } else {
            DROPPED
        };
        self.entries[id as usize].state.fetch_add(unit, Relaxed);
    }

    /// Where value `id` came from.
    pub(super) fn origin(&self, id: u32) -> Origin {
        Origin::unpack(self.entries[id as usize].origin.load(Relaxed))
    }

    /// Reads every value of the round; `abandoned[c]` says whether channel `c` may be
    /// destroyed with values in it, `leaks[c]` how many receive futures were leaked waiting
    /// on it (each may hold one value for ever). Call when the round's threads are joined and
    /// its channels destroyed. Returns the tally and one line per value whose story does not
    /// add up.
    pub(super) fn check(&self, abandoned: &[bool], leaks: &[u64]) -> (Tally, Vec<String>) {
        let mut leaks = leaks.to_vec();
        let mut t = Tally::default();
        let mut problems = Vec::new();
        let used = self.next.load(Relaxed).min(CAPACITY);
        for (id, e) in self.entries[..used as usize].iter().enumerate() {
            let s = e.state.load(Relaxed);
            if field(s, CREATED) == 0 {
                continue;
            }
            let o = Origin::unpack(e.origin.load(Relaxed));
            let [received, dropped, returned, teardown, sent, discarded] =
                [RECEIVED, DROPPED, RETURNED, TEARDOWN, SENT, DISCARDED].map(|u| field(s, u));
            match o.kind {
                Kind::Data => t.data += 1,
                Kind::Echo => t.echoes += 1,
                Kind::Stale => t.stale += 1,
            }
            t.received += u64::from(received);
            t.returned += u64::from(returned);
            t.teardown += u64::from(teardown);
            t.discarded += u64::from(discarded);
            let fates = [received, dropped, returned, teardown, sent, discarded];
            let budget = leaks.get_mut(o.chan as usize);
            if let Some(n) = budget.filter(|n| **n > 0 && held_by_a_leak(o.kind, fates)) {
                *n -= 1;
                t.leaked += 1;
                continue;
            }
            if let Some(what) = story(o.kind, fates) {
                problems.push(format!("value #{id} ({o}) {what}"));
            } else if teardown > 0 && !abandoned.get(o.chan as usize).copied().unwrap_or(false) {
                problems.push(format!(
                    "value #{id} ({o}) was still in c{} when it was destroyed, although every \
                     receiver had drained it to the end",
                    o.chan
                ));
            }
        }
        (t, problems)
    }
}

/// Whether a value's story is that of one handed to a receive future that was leaked: sent,
/// then nothing, not even its drop.
fn held_by_a_leak(
    kind: Kind,
    [received, dropped, returned, teardown, sent, discarded]: [u32; 6],
) -> bool {
    kind != Kind::Stale && sent == 1 && received + dropped + returned + teardown + discarded == 0
}

/// What is wrong with a value's counters, if anything.
fn story(
    kind: Kind,
    [received, dropped, returned, teardown, sent, discarded]: [u32; 6],
) -> Option<String> {
    let times = |n: u32| {
        if n == 1 {
            "once".into()
        } else {
            format!("{n} times")
        }
    };
    if dropped == 0 {
        return Some("was never dropped (leaked)".into());
    }
    if dropped > 1 {
        return Some(format!("was dropped {}", times(dropped)));
    }
    if kind == Kind::Stale {
        return (received + sent + returned + teardown + discarded > 0)
            .then(|| "was never sent, yet a channel delivered or kept it".into());
    }
    let fates = received + returned + teardown + discarded;
    if fates == 0 {
        return Some(format!(
            "was lost: {}, never received, not given back, not left in a closed channel",
            if sent > 0 {
                "its send succeeded"
            } else {
                "its send never completed"
            }
        ));
    }
    if received > 1 {
        return Some(format!("was received {}", times(received)));
    }
    if fates > 1 {
        return Some(format!(
            "has two fates: received {}, given back to its sender {}, left in a channel {}, \
             dropped with a receive future after \"closed and drained\" {}",
            times(received),
            times(returned),
            times(teardown),
            times(discarded)
        ));
    }
    if discarded > 0 && sent == 0 {
        return Some("was dropped as received although its send never succeeded".into());
    }
    if sent > 1 {
        return Some(format!("was reported sent {}", times(sent)));
    }
    if returned > 0 && sent > 0 {
        return Some("was given back to its sender although its send had succeeded".into());
    }
    if (received > 0 || teardown > 0) && sent == 0 {
        return Some("arrived although its sender was told the send failed or timed out".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stories() {
        assert_eq!(story(Kind::Data, [1, 1, 0, 0, 1, 0]), None);
        assert_eq!(story(Kind::Data, [0, 1, 1, 0, 0, 0]), None);
        assert_eq!(story(Kind::Data, [0, 1, 0, 1, 1, 0]), None);
        assert_eq!(story(Kind::Data, [0, 1, 0, 0, 1, 1]), None);
        assert_eq!(story(Kind::Stale, [0, 1, 0, 0, 0, 0]), None);
        for (s, want) in [
            ([1, 0, 0, 0, 1, 0], "leaked"),
            ([1, 2, 0, 0, 1, 0], "dropped 2 times"),
            ([0, 1, 0, 0, 1, 0], "lost"),
            ([2, 1, 0, 0, 1, 0], "received 2 times"),
            ([1, 1, 1, 0, 1, 0], "two fates"),
            ([1, 1, 0, 0, 1, 1], "two fates"),
            ([0, 1, 0, 0, 0, 1], "send never succeeded"),
            ([0, 1, 1, 0, 1, 0], "although its send had succeeded"),
            ([1, 1, 0, 0, 0, 0], "told the send failed"),
        ] {
            let got = story(Kind::Data, s).unwrap();
            assert!(got.contains(want), "{s:?}: {got}");
        }
    }

    #[test]
    fn a_leaked_receive_future_holds_at_most_its_value() {
        assert!(held_by_a_leak(Kind::Data, [0, 0, 0, 0, 1, 0]));
        assert!(
            !held_by_a_leak(Kind::Data, [0, 0, 0, 0, 0, 0]),
            "never sent"
        );
        assert!(!held_by_a_leak(Kind::Data, [1, 0, 0, 0, 1, 0]), "received");
        assert!(held_by_a_leak(Kind::Echo, [0, 0, 0, 0, 1, 0]));
        assert!(!held_by_a_leak(Kind::Stale, [0, 0, 0, 0, 0, 0]));
    }

    #[test]
    fn the_discard_counter_sits_above_the_others() {
        let s = CREATED + SENT + DROPPED + DISCARDED;
        assert_eq!(field(s, DISCARDED), 1);
        assert_eq!(field(s, CREATED), 1);
        assert_eq!(field(s, RECEIVED), 0);
    }

    #[test]
    fn origins_round_trip() {
        let o = Origin {
            kind: Kind::Echo,
            lane: 513,
            chan: 3,
            seq: 0xdead_beef,
        };
        assert_eq!(Origin::unpack(o.pack()), o);
    }
}
