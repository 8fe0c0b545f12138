//! What one message carries on every transport, and how the receiver checks it.
//!
//! A message of `S` bytes (`-S`) is laid out as
//!
//! | bytes | what |
//! |---|---|
//! | 0..8 | the tag: `sender << SEQ_BITS \| seq`, native byte order |
//! | 8..16 | checksum of the payload (only when `S > 8`) |
//! | 16..S | payload: a pattern that depends on the tag (only when `S > 8`) |
//!
//! `S = 8` is the seed's ulong: the tag is the whole message, exactly what the `chan` workload
//! has always sent. Sizes from 9 to 15 are refused: there is no room for a checksum and no
//! reason to want one of them.
//!
//! Why every byte is written and read: a 2002 test measured a unix socket "faster than memcpy"
//! until the sender touched its buffer after each send: copy-on-write had hidden the copy. So
//! the sender writes every payload byte before each send ([`write()`]) and the receiver reads
//! every one to sum it ([`read`]), and the sum doubles as the integrity check: a record split,
//! interleaved with another or left stale shows up as a checksum that does not match.

use crate::error::Error;
use crate::model::{MAX_PER_SENDER, SEQ_BITS, TAG};

/// Bytes of tag and checksum: the smallest message with a payload.
pub(crate) const HEADER: usize = 16;

/// The tag of sender `id`'s value number `seq`.
#[inline]
pub(crate) fn tag(id: usize, seq: u64) -> u64 {
    (id as u64) << SEQ_BITS | seq
}

/// The `i`-th sequence number sender `id` sends: `i`, except that with `fault` sender 0 sends
/// its value 1 again in place of value 2 (the hidden `--inject-fault`, to test the checks).
#[inline]
pub(crate) fn seq(fault: bool, id: usize, i: u64) -> u64 {
    if fault && id == 0 && i == 2 {
        1
    } else {
        i
    }
}

/// Fills `buf` (the whole message) for `tag`, writing every byte.
#[inline]
pub(crate) fn write(buf: &mut [u8], tag: u64) {
    let (head, payload) = buf.split_at_mut(buf.len().min(HEADER));
    head[..TAG].copy_from_slice(&tag.to_ne_bytes());
    if head.len() == HEADER {
        let word = pattern(tag);
        fill(payload, word);
        head[TAG..].copy_from_slice(&expected_sum(payload.len(), word).to_ne_bytes());
    }
}

/// Reads every byte of `msg` and returns its tag, or the violation if its payload does not
/// add up to the checksum it carries.
#[inline]
pub(crate) fn read(msg: &[u8]) -> Result<u64, Error> {
    let tag = word_at(msg, 0);
    if msg.len() >= HEADER {
        let (carried, got) = (word_at(msg, TAG), sum(&msg[HEADER..]));
        if carried != got {
            return Err(bad_sum(tag, carried, got));
        }
    }
    Ok(tag)
}

#[cold]
fn bad_sum(tag: u64, carried: u64, got: u64) -> Error {
    let (id, seq) = (tag >> SEQ_BITS, tag & MAX_PER_SENDER);
    Error::Violation(format!(
        "sender {id}'s value {seq}: its payload sums to {got:#x}, not the {carried:#x} it \
         carries (bytes lost, corrupted, or interleaved with another message)"
    ))
}

/// The native-order word at `at`, or 0 past the end (the caller's sizes make that impossible).
#[inline]
fn word_at(msg: &[u8], at: usize) -> u64 {
    msg.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// The payload's repeating 8-byte pattern: a different word for every tag, so that a stale or
/// misplaced payload does not sum to the checksum of the message it appears in.
#[inline]
fn pattern(tag: u64) -> u64 {
    (tag ^ 0x5bd1_e995_a5a5_a5a5).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Writes `word` over and over into `payload` (a memset, more or less).
#[inline]
fn fill(payload: &mut [u8], word: u64) {
    let bytes = word.to_ne_bytes();
    let mut chunks = payload.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&bytes);
    }
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&bytes[..n]);
}

/// The checksum: the wrapping sum of the payload's native-order words, plus its last
/// `len % 8` bytes one by one. Cheap enough to run at memory speed.
#[inline]
fn sum(payload: &[u8]) -> u64 {
    let mut chunks = payload.chunks_exact(8);
    let mut s = 0u64;
    for c in &mut chunks {
        s = s.wrapping_add(c.try_into().map_or(0, u64::from_ne_bytes));
    }
    chunks
        .remainder()
        .iter()
        .fold(s, |s, &b| s.wrapping_add(u64::from(b)))
}

/// What [`sum`] gives for `len` bytes of [`fill`] with `word`, without reading them back.
fn expected_sum(len: usize, word: u64) -> u64 {
    let tail = word.to_ne_bytes()[..len % 8]
        .iter()
        .fold(0u64, |s, &b| s.wrapping_add(u64::from(b)));
    ((len / 8) as u64).wrapping_mul(word).wrapping_add(tail)
}

/// The receiver's check that every sender's values arrive exactly once and in order.
///
/// It keeps the next sequence number it expects from each sender, so a lost, duplicated or
/// reordered value costs an index and a compare to catch.
#[derive(Debug)]
pub(crate) struct Tracker {
    next: Vec<u64>,
}

impl Tracker {
    /// Expects values from `senders` senders, each starting at 0.
    pub(crate) fn new(senders: usize) -> Tracker {
        Tracker {
            next: vec![0; senders],
        }
    }

    /// Takes the value tagged `tag`, or says what is wrong with it.
    #[inline]
    pub(crate) fn accept(&mut self, tag: u64) -> Result<(), Error> {
        let (id, seq) = ((tag >> SEQ_BITS) as usize, tag & MAX_PER_SENDER);
        match self.next.get_mut(id) {
            Some(expected) if *expected == seq => {
                *expected += 1;
                Ok(())
            }
            slot => Err(Error::Violation(describe(
                tag,
                id,
                seq,
                slot.copied(),
                self.next.len(),
            ))),
        }
    }
}

/// What went wrong with value `v`, which the receiver did not expect.
#[cold]
pub(crate) fn describe(
    v: u64,
    id: usize,
    seq: u64,
    expected: Option<u64>,
    senders: usize,
) -> String {
    match expected {
        None => format!("value {v:#x} names sender {id}, but there are only {senders}"),
        Some(e) if seq < e => format!(
            "sender {id}'s value {seq} arrived again, or out of order, after its value {}",
            e - 1
        ),
        Some(e) => format!(
            "sender {id}'s value {seq} arrived while {e} was expected: {} value(s) lost or \
             reordered",
            seq - e
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for size in [8, 16, 17, 23, 24, 4096, 4099] {
            let mut buf = vec![0u8; size];
            let t = tag(3, 12345);
            write(&mut buf, t);
            assert_eq!(read(&buf), Ok(t), "size {size}");
            assert_eq!(&buf[..8], &t.to_ne_bytes());
            if size > HEADER {
                assert!(buf[HEADER..].iter().any(|&b| b != 0), "payload written");
            }
        }
    }

    #[test]
    fn damage_is_caught() {
        let mut buf = vec![0u8; 100];
        write(&mut buf, tag(1, 7));
        buf[60] ^= 1;
        let e = read(&buf).unwrap_err();
        assert!(
            matches!(&e, Error::Violation(s) if s.contains("sender 1's value 7")),
            "{e}"
        );
        // A stale payload under a fresh header.
        let mut old = vec![0u8; 100];
        write(&mut old, tag(1, 7));
        let mut new = vec![0u8; 100];
        write(&mut new, tag(1, 8));
        new[HEADER..].copy_from_slice(&old[HEADER..]);
        assert!(read(&new).is_err());
    }

    #[test]
    fn the_sum_is_what_fill_promises() {
        for len in 0..40 {
            let mut p = vec![0u8; len];
            fill(&mut p, 0x0123_4567_89ab_cdef);
            assert_eq!(sum(&p), expected_sum(len, 0x0123_4567_89ab_cdef), "{len}");
        }
    }

    #[test]
    fn tracker_checks_order() {
        let mut t = Tracker::new(2);
        assert_eq!(t.accept(tag(0, 0)), Ok(()));
        assert_eq!(t.accept(tag(1, 0)), Ok(()));
        assert_eq!(t.accept(tag(0, 1)), Ok(()));
        let again = t.accept(tag(0, 1)).unwrap_err();
        assert!(again.to_string().contains("arrived again"), "{again}");
        assert!(t
            .accept(tag(2, 0))
            .unwrap_err()
            .to_string()
            .contains("only 2"));
        assert!(t
            .accept(tag(1, 5))
            .unwrap_err()
            .to_string()
            .contains("4 value(s) lost"));
    }

    #[test]
    fn faults_are_described() {
        assert!(describe(5 << SEQ_BITS, 5, 0, None, 2).contains("only 2"));
        assert!(describe(3, 0, 3, Some(4), 1).contains("again"));
        assert!(describe(9, 0, 9, Some(4), 1).contains("5 value(s) lost"));
    }

    #[test]
    fn the_fault_repeats_value_1() {
        let s: Vec<u64> = (0..4).map(|i| seq(true, 0, i)).collect();
        assert_eq!(s, [0, 1, 1, 3]);
        assert_eq!(seq(true, 1, 2), 2);
        assert_eq!(seq(false, 0, 2), 2);
    }
}
