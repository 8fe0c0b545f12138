//! Channel semantics, checked with flags and joins, never with sleeps or timing.
//!
//! The tests in `mod miri` (`miri::semantics::spin::rendezvous`, ...,
//! `miri::global_lock_channels`) are also Miri's, which checks every memory access for
//! undefined behaviour and data races and explores weak-memory outcomes. Each body is written
//! once and sized by `count(native, miri, min)`: natively its counts are a few hundred times
//! larger (`CHAN_TEST_SCALE` scales them). They cover rendezvous, buffers, close waking blocked
//! senders and receivers, `send_timeout` and `recv_timeout` racing a partner,
//! `nbsend`/`nbrecv`, drop counting and the global lock.
//! `cargo +nightly miri test -p plan9-chan --test semantics -- miri::` interprets them;
//! `.ci/miri` runs them over several seeds, under Stacked and Tree Borrows.
#![cfg(not(loom))]

use chan::{
    Alt, Chan, Fired, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError,
    TrySendError,
};
use locks::Strategy;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use testkit::{count, per_backend, Tracked};

per_backend! {
    semantics:
    rendezvous_send_waits_for_a_receiver,
    buffered_basics,
    close_semantics,
    timeouts,
    panicking_holder_does_not_wedge,
    iterators,
}

/// What Miri runs too (`.ci/miri` picks `miri::`), small enough for it under `cfg(miri)`.
mod miri {
    use super::*;

    per_backend! {
        semantics:
        rendezvous,
        buffered_fifo,
        close_wakes_blocked_receivers,
        close_wakes_blocked_senders,
        send_timeout_races_a_partner,
        recv_timeout_races_a_partner,
        nonblocking,
        every_value_dropped_exactly_once,
    }

    /// Plan 9's arrangement: two channels sharing one lock, both busy at once.
    #[test]
    fn global_lock_channels() {
        let n = count(300, 3, 1) as u64;
        let a = Chan::<u64, locks::SemLock>::with_global_lock(1, locks::NoParams);
        let b = Chan::<u64, locks::SemLock>::with_global_lock(0, locks::NoParams);
        let senders: Vec<_> = [a.clone(), b.clone()]
            .into_iter()
            .map(|c| thread::spawn(move || (0..n).for_each(|i| c.send(i).unwrap())))
            .collect();
        for c in [&a, &b] {
            assert!((0..n).eq((0..n).map(|_| c.recv().unwrap())));
        }
        senders.into_iter().for_each(|t| t.join().unwrap());
    }
}

fn rendezvous_send_waits_for_a_receiver<S: Strategy>(p: S::Params) {
    for round in 0..200 {
        let c = Chan::<u32, S>::with_params(0, p);
        let receiver_arrived = Arc::new(AtomicBool::new(false));
        let sender = {
            let (c, arrived) = (c.clone(), receiver_arrived.clone());
            thread::spawn(move || {
                c.send(round).unwrap();
                // The value was taken by a receive that began after the flag was raised.
                assert!(
                    arrived.load(SeqCst),
                    "send completed before any receiver arrived"
                );
            })
        };
        for _ in 0..round % 7 {
            thread::yield_now();
        }
        receiver_arrived.store(true, SeqCst);
        assert_eq!(c.recv(), Ok(round));
        sender.join().unwrap();
    }
}

fn buffered_basics<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(3, p);
    assert!(c.is_empty() && !c.is_full() && c.capacity() == 3);
    for i in 0..3 {
        c.nbsend(i).unwrap();
    }
    assert_eq!((c.len(), c.is_full()), (3, true));
    assert_eq!(c.nbsend(3), Err(TrySendError::Full(3)));
    // A full buffer with a sender waiting: the receiver moves that sender's value into the
    // freed slot, so order is kept and the sender completes.
    let sender = {
        let c = c.clone();
        thread::spawn(move || c.send(3))
    };
    let got: Vec<u32> = (0..4).map(|_| c.recv().unwrap()).collect();
    assert_eq!(got, [0, 1, 2, 3]);
    assert_eq!(sender.join().unwrap(), Ok(()));
    assert_eq!(c.nbrecv(), Err(TryRecvError::Empty));
    assert!(c.same_channel(&c.clone()));
    assert!(!c.same_channel(&Chan::with_params(3, p)));
}

fn close_semantics<S: Strategy>(p: S::Params) {
    let c = Chan::<String, S>::with_params(4, p);
    c.send("a".into()).unwrap();
    c.send("b".into()).unwrap();
    assert_eq!(c.closing(), None);
    assert!(!c.is_closed());
    assert!(c.close());
    assert!(!c.close(), "closing twice reports false");
    assert!(c.is_closed());
    assert_eq!(c.closing(), Some(2));
    assert_eq!(c.send("c".into()), Err(SendError("c".to_string())));
    assert_eq!(
        c.nbsend("d".into()),
        Err(TrySendError::Closed("d".to_string()))
    );
    assert_eq!(
        c.send_timeout("e".into(), Duration::from_secs(1)),
        Err(SendTimeoutError::Closed("e".to_string()))
    );
    assert_eq!(c.recv().as_deref(), Ok("a"));
    assert_eq!(c.closing(), Some(1));
    assert_eq!(c.nbrecv().as_deref(), Ok("b"));
    assert_eq!(c.closing(), Some(0));
    assert_eq!(c.recv(), Err(chan::RecvError));
    assert_eq!(c.nbrecv(), Err(TryRecvError::Closed));
    assert_eq!(
        c.recv_timeout(Duration::from_secs(1)),
        Err(RecvTimeoutError::Closed)
    );
}

fn timeouts<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(1, p);
    assert_eq!(
        c.recv_timeout(Duration::from_millis(1)),
        Err(RecvTimeoutError::Timeout)
    );
    c.send(1).unwrap();
    assert_eq!(
        c.send_timeout(2, Duration::from_millis(1)),
        Err(SendTimeoutError::Timeout(2))
    );
    assert_eq!(c.recv_timeout(Duration::from_secs(10)), Ok(1));
    // A huge timeout is "forever", not an overflow.
    c.send_timeout(3, Duration::MAX).unwrap();
    assert_eq!(c.recv_timeout(Duration::MAX), Ok(3));
    // After timing out, the channel still works and holds no stale waiter.
    let r = Chan::<u32, S>::with_params(0, p);
    assert!(r.recv_timeout(Duration::from_micros(10)).is_err());
    assert_eq!(
        r.nbsend(5),
        Err(TrySendError::Full(5)),
        "timed-out receiver was unlinked"
    );
}

fn panicking_holder_does_not_wedge<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(1, p);
    let bad = {
        let c = c.clone();
        thread::spawn(move || {
            c.send(1).unwrap();
            panic!("a thread holding a handle dies");
        })
    };
    assert!(bad.join().is_err());
    assert_eq!(c.recv(), Ok(1));
    let t = {
        let c = c.clone();
        thread::spawn(move || c.send(2))
    };
    assert_eq!(c.recv(), Ok(2));
    t.join().unwrap().unwrap();
}

fn iterators<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(10, p);
    (0..5).for_each(|i| c.send(i).unwrap());
    assert_eq!(c.try_iter().take(2).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(c.try_iter().collect::<Vec<_>>(), [2, 3, 4]);
    (5..8).for_each(|i| c.send(i).unwrap());
    c.close();
    assert_eq!((&c).into_iter().collect::<Vec<_>>(), [5, 6, 7]);
    assert_eq!(c.into_iter().count(), 0);
}

#[test]
fn errors_display_and_give_values_back() {
    let e = SendError(5u8);
    assert_eq!(e.to_string(), "sending on a closed channel");
    assert_eq!(format!("{e:?}"), "SendError { .. }");
    assert_eq!(TrySendError::Full(1).into_inner(), 1);
    assert!(TrySendError::Full(1).is_full() && TrySendError::Closed(1).is_closed());
    assert!(SendTimeoutError::Timeout(1).is_timeout());
    assert_eq!(
        TryRecvError::Empty.to_string(),
        "receiving on an empty channel"
    );
    let boxed: Box<dyn std::error::Error> = Box::new(RecvTimeoutError::Timeout);
    assert_eq!(boxed.to_string(), "timed out receiving on a channel");
}

#[test]
#[should_panic(expected = "exceeds u32::MAX")]
fn absurd_capacity_is_refused() {
    let _ = Chan::<u8>::new(usize::MAX);
}

/// Both orders of arrival on a rendezvous channel: the receiver first, the sender first.
fn rendezvous<S: Strategy>(p: S::Params) {
    let n = count(2000, 3, 1) as u32;
    let c = Chan::<u32, S>::with_params(0, p);
    assert_eq!(c.nbsend(0), Err(TrySendError::Full(0)), "no receiver waits");
    let tx = c.clone();
    let sender = thread::spawn(move || (0..n).for_each(|i| tx.send(i).unwrap()));
    for i in 0..n {
        assert_eq!(c.recv(), Ok(i));
    }
    sender.join().unwrap();

    let rx = c.clone();
    let receiver = thread::spawn(move || (0..n).map(|_| rx.recv().unwrap()).collect::<Vec<_>>());
    (0..n).for_each(|i| c.send(i).unwrap());
    assert_eq!(receiver.join().unwrap(), (0..n).collect::<Vec<_>>());
    assert_eq!(c.nbrecv(), Err(TryRecvError::Empty));
}

/// Two senders into a two-slot buffer, one receiver: complete and in order per sender.
fn buffered_fifo<S: Strategy>(p: S::Params) {
    let n = count(2000, 4, 1) as u32;
    let c = Chan::<u32, S>::with_params(2, p);
    let senders: Vec<_> = (0..2u32)
        .map(|s| {
            let c = c.clone();
            thread::spawn(move || (0..n).for_each(|i| c.send(s << 16 | i).unwrap()))
        })
        .collect();
    let mut next = [0u32; 2];
    for _ in 0..2 * n {
        let v = c.recv().unwrap();
        let (s, i) = ((v >> 16) as usize, v & 0xffff);
        assert_eq!(i, next[s], "sender {s} out of order");
        next[s] += 1;
    }
    senders.into_iter().for_each(|s| s.join().unwrap());
    assert_eq!(next, [n, n]);
    assert!(c.close());
    assert_eq!(c.recv(), Err(RecvError));
}

/// Receivers blocked on an empty channel, unbuffered and buffered, all woken by a close.
fn close_wakes_blocked_receivers<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1, 2] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        let receivers: Vec<_> = (0..testkit::pick(3, 2))
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || c.recv())
            })
            .collect();
        thread::yield_now();
        assert!(c.close());
        for r in receivers {
            assert_eq!(r.join().unwrap(), Err(RecvError), "O={nbuf}");
        }
        assert_eq!(c.nbrecv(), Err(TryRecvError::Closed));
    }
}

/// Senders blocked on a full channel, woken by a close, each with its own value back.
fn close_wakes_blocked_senders<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1, 2] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        (0..nbuf as u32).for_each(|i| c.send(i).unwrap());
        let senders: Vec<_> = (100..100 + testkit::pick(3, 2))
            .map(|v| {
                let c = c.clone();
                thread::spawn(move || (v, c.send(v)))
            })
            .collect();
        thread::yield_now();
        assert!(c.close());
        for s in senders {
            let (v, r) = s.join().unwrap();
            assert_eq!(
                r,
                Err(SendError(v)),
                "O={nbuf}: a sender gets its own value back"
            );
        }
        // What was buffered before the close is still there, and nothing else.
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            (0..nbuf as u32).collect::<Vec<_>>()
        );
    }
}

/// A short wait, different from round to round, so that timing out lands before, during and
/// after the partner's arrival.
fn short(round: usize) -> Duration {
    Duration::from_micros([0, 1, 10, 50, 200][round % 5])
}

/// After a race: the value that went out was received once (or is still buffered), and a value
/// that came back was never received.
fn settle<S: Strategy>(c: &Chan<u32, S>, v: u32, sent: bool, received: Option<u32>, ctx: &str) {
    let left = c.nbrecv().ok();
    if sent {
        assert_eq!(
            (
                received.is_some() as u8 + left.is_some() as u8,
                received.or(left)
            ),
            (1, Some(v)),
            "{ctx}: a sent value is received exactly once (received {received:?}, left {left:?})"
        );
    } else {
        assert_eq!(
            (received, left),
            (None, None),
            "{ctx}: a returned value went out too"
        );
    }
}

/// `send_timeout` racing a receiver that is timed too, or only polls.
fn send_timeout_races_a_partner<S: Strategy>(p: S::Params) {
    let rounds = count(150, 3, 1);
    for nbuf in [0, 1] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        for round in 0..rounds {
            let v = round as u32;
            let polls = round % 2 == 1;
            let rx = c.clone();
            let receiver = thread::spawn(move || {
                if polls {
                    (0..3).find_map(|_| {
                        let r = rx.nbrecv().ok();
                        thread::yield_now();
                        r
                    })
                } else {
                    match rx.recv_timeout(short(round + 2)) {
                        Ok(v) => Some(v),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Closed) => panic!("closed"),
                    }
                }
            });
            let sent = match c.send_timeout(v, short(round)) {
                Ok(()) => true,
                Err(SendTimeoutError::Timeout(back)) => {
                    assert_eq!(back, v);
                    false
                }
                Err(SendTimeoutError::Closed(_)) => panic!("closed"),
            };
            let received = receiver.join().unwrap();
            let ctx = format!("O={nbuf} round {round} polls={polls}");
            settle(&c, v, sent, received, &ctx);
        }
    }
}

/// `recv_timeout` racing a sender that is timed too, or only polls.
fn recv_timeout_races_a_partner<S: Strategy>(p: S::Params) {
    let rounds = count(150, 3, 1);
    for nbuf in [0, 1] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        for round in 0..rounds {
            let v = round as u32;
            let polls = round % 2 == 0;
            let tx = c.clone();
            let sender = thread::spawn(move || {
                if polls {
                    let mut v = v;
                    for _ in 0..3 {
                        match tx.nbsend(v) {
                            Ok(()) => return true,
                            Err(TrySendError::Full(back)) => v = back,
                            Err(TrySendError::Closed(_)) => panic!("closed"),
                        }
                        thread::yield_now();
                    }
                    false
                } else {
                    match tx.send_timeout(v, short(round + 1)) {
                        Ok(()) => true,
                        Err(SendTimeoutError::Timeout(back)) => {
                            assert_eq!(back, v);
                            false
                        }
                        Err(SendTimeoutError::Closed(_)) => panic!("closed"),
                    }
                }
            });
            let received = match c.recv_timeout(short(round + 3)) {
                Ok(v) => Some(v),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Closed) => panic!("closed"),
            };
            let sent = sender.join().unwrap();
            let ctx = format!("O={nbuf} round {round} polls={polls}");
            settle(&c, v, sent, received, &ctx);
        }
    }
}

/// `nbsend` and `nbrecv`: on a buffer, on a rendezvous alone and with a blocked partner, once
/// closed.
fn nonblocking<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(2, p);
    assert_eq!(c.nbrecv(), Err(TryRecvError::Empty));
    c.nbsend(1).unwrap();
    c.nbsend(2).unwrap();
    assert_eq!(c.nbsend(3), Err(TrySendError::Full(3)));
    assert_eq!(
        (c.nbrecv(), c.nbrecv(), c.nbrecv()),
        (Ok(1), Ok(2), Err(TryRecvError::Empty))
    );

    let r = Chan::<u32, S>::with_params(0, p);
    assert_eq!(r.nbsend(1), Err(TrySendError::Full(1)), "no receiver waits");
    assert_eq!(r.nbrecv(), Err(TryRecvError::Empty), "no sender waits");
    assert!(r.is_full() && r.is_empty() && r.capacity() == 0);
    for round in 0..count(100, 2, 1) as u32 {
        // A receiver blocks; polling nbsend gets through once it waits.
        let rx = r.clone();
        let receiver = thread::spawn(move || rx.recv());
        let mut v = round;
        loop {
            match r.nbsend(v) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) => v = back,
                Err(e) => panic!("{e}"),
            }
            thread::yield_now();
        }
        assert_eq!(receiver.join().unwrap(), Ok(round));
        // A sender blocks; polling nbrecv gets its value.
        let tx = r.clone();
        let sender = thread::spawn(move || tx.send(round));
        let got = loop {
            match r.nbrecv() {
                Ok(v) => break v,
                Err(TryRecvError::Empty) => thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!((got, sender.join().unwrap()), (round, Ok(())));
    }

    c.nbsend(4).unwrap();
    c.close();
    assert_eq!(c.nbsend(5), Err(TrySendError::Closed(5)));
    assert_eq!((c.nbrecv(), c.nbrecv()), (Ok(4), Err(TryRecvError::Closed)));
    r.close();
    assert_eq!(r.nbsend(6), Err(TrySendError::Closed(6)));
    assert_eq!(r.nbrecv(), Err(TryRecvError::Closed));
}

/// Every value dropped exactly once: received ones, ones handed back in errors (through any
/// handle), ones a losing alt arm keeps, and ones left buffered when the last handle goes.
fn every_value_dropped_exactly_once<S: Strategy>(p: S::Params) {
    let n = count(500, 3, 1) as u64;
    let drops = Arc::new(AtomicUsize::new(0));
    let mut made = 0;
    {
        // Through a one-slot buffer to a receiver that stops early: what it leaves is
        // dropped with the channel.
        let c = Chan::<Tracked, S>::with_params(1, p);
        let tx = c.clone();
        let d = drops.clone();
        let sender = thread::spawn(move || {
            for i in 0..n {
                tx.send(Tracked::new(i, &d)).unwrap();
            }
        });
        for i in 0..n - 1 {
            assert_eq!(c.recv().unwrap().id, i);
        }
        sender.join().unwrap();
        made += n as usize;
        assert_eq!(c.len(), 1);
        assert_eq!(drops.load(SeqCst), made - 1);

        // Handed back by a closed channel, by a full one, and by a timed-out send.
        let f = Chan::<Tracked, S>::with_params(1, p);
        f.send(Tracked::new(1, &drops)).unwrap();
        assert!(f.nbsend(Tracked::new(2, &drops)).unwrap_err().is_full());
        let back = f.send_timeout(Tracked::new(3, &drops), Duration::ZERO);
        assert_eq!(back.unwrap_err().into_inner().id, 3);
        f.close();
        assert_eq!(f.send(Tracked::new(4, &drops)).unwrap_err().0.id, 4);
        let back = f.clone().nbsend(Tracked::new(40, &drops)).unwrap_err();
        assert!(back.is_closed());
        assert_eq!(back.into_inner().id, 40);
        made += 5;
        assert_eq!(drops.load(SeqCst), made - 2, "one left in c, one in f");

        // A rendezvous sender blocked at close gets its value back.
        let r = Chan::<Tracked, S>::with_params(0, p);
        let s = {
            let (r, d) = (r.clone(), drops.clone());
            thread::spawn(move || r.send(Tracked::new(5, &d)).map_err(|e| e.into_inner().id))
        };
        thread::yield_now();
        r.close();
        assert_eq!(s.join().unwrap(), Err(5));
        made += 1;

        // Losing send arms keep their values; the owner drops them.
        let (a, b) = (
            Chan::<Tracked, S>::with_params(1, p),
            Chan::<Tracked, S>::with_params(0, p),
        );
        let (mut x, mut y) = (Some(Tracked::new(6, &drops)), Some(Tracked::new(7, &drops)));
        let mut alt = Alt::new();
        alt.send(&a, &mut x);
        alt.send(&b, &mut y);
        assert_eq!(
            alt.wait(),
            Fired {
                index: 0,
                closed: false
            },
            "only a has room"
        );
        drop(alt);
        assert!(x.is_none());
        assert_eq!(y.take().map(|t| t.id), Some(7));
        made += 2;
        assert_eq!(drops.load(SeqCst), made - 3, "left in c, f and a");
        // c, f, a and b go here, with three values buffered.
    }
    assert_eq!(drops.load(SeqCst), made, "every value dropped exactly once");
}
