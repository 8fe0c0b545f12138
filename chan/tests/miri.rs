//! Channel checks small enough for Miri, which also run natively with larger counts.
//!
//! `cargo +nightly miri test -p plan9-chan --test miri` interprets them, checking every memory
//! access for undefined behaviour and data races and exploring weak-memory outcomes
//! (`.ci/miri` runs them over several seeds, under Stacked and under Tree Borrows). Natively,
//! `cargo test -p plan9-chan --test miri` runs the same bodies with counts a few hundred times larger
//! (`CHAN_TEST_SCALE` scales them). Every behaviour runs with every backend
//! (`miri::spin::rendezvous`, ..., `miri::adaptive_futex::rendezvous`).
//!
//! `litmus_nb_store_buffering` is the store-buffering litmus test of the non-blocking fast
//! paths; run it alone with `cargo test -p plan9-chan --test miri litmus` (or under `miri test`).
#![cfg(not(loom))]

use testkit::per_backend;

use chan::{
    Alt, Chan, Fired, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError,
    TrySendError,
};
use locks::Strategy;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use testkit::{count, Tracked};

per_backend! {
    miri:
    rendezvous,
    buffered_fifo,
    close_wakes_blocked_receivers,
    close_wakes_blocked_senders,
    close_wakes_blocked_alts,
    send_timeout_races_a_partner,
    recv_timeout_races_a_partner,
    alt_over_several_channels,
    alt_duplicate_arms_on_one_channel,
    nonblocking,
    drops_exactly_once,
    litmus_nb_store_buffering,
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

fn close_wakes_blocked_receivers<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        let receivers: Vec<_> = (0..2)
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

fn close_wakes_blocked_senders<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        (0..nbuf as u32).for_each(|i| c.send(i).unwrap());
        let senders: Vec<_> = (100..102)
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

fn close_wakes_blocked_alts<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1] {
        // A receiving alt over an open and a closing channel.
        let (open, closing) = (
            Chan::<u32, S>::with_params(nbuf, p),
            Chan::<u32, S>::with_params(nbuf, p),
        );
        let alt = {
            let (open, closing) = (open.clone(), closing.clone());
            thread::spawn(move || {
                let (mut a, mut b) = (None, None);
                let mut alt = Alt::new();
                alt.recv(&open, &mut a);
                let i = alt.recv(&closing, &mut b);
                let f = alt.wait();
                drop(alt);
                (f, i, a, b)
            })
        };
        thread::yield_now();
        closing.close();
        let (f, i, a, b) = alt.join().unwrap();
        assert_eq!((f.index, f.closed, a, b), (i, true, None, None), "O={nbuf}");

        // A sending alt whose only partner is full (or absent): the close fires the arm and
        // the value stays with the alt.
        let full = Chan::<u32, S>::with_params(nbuf, p);
        (0..nbuf as u32).for_each(|i| full.send(i).unwrap());
        let alt = {
            let full = full.clone();
            thread::spawn(move || {
                let mut out = Some(7);
                let mut alt = Alt::new();
                alt.send(&full, &mut out);
                let f = alt.wait();
                drop(alt);
                (f, out)
            })
        };
        thread::yield_now();
        full.close();
        let (f, out) = alt.join().unwrap();
        assert_eq!(
            (f, out),
            (
                Fired {
                    index: 0,
                    closed: true
                },
                Some(7)
            ),
            "O={nbuf}"
        );
        assert_eq!(
            full.iter().count(),
            nbuf,
            "O={nbuf}: only the buffered values"
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

/// One alt receiving from three channels (O = 0, 1, 2): a plain sender on the first, an alt
/// sender choosing between the other two. Every value arrives once; the plain sender's in
/// order.
fn alt_over_several_channels<S: Strategy>(p: S::Params) {
    let n = count(1000, 2, 1) as u32;
    let chans: Vec<Chan<u32, S>> = (0..3).map(|o| Chan::with_params(o, p)).collect();
    let plain = {
        let c = chans[0].clone();
        thread::spawn(move || (0..n).for_each(|i| c.send(i).unwrap()))
    };
    let alting = {
        let (b, c) = (chans[1].clone(), chans[2].clone());
        thread::spawn(move || {
            for i in 0..n {
                let (mut x, mut y) = (Some(1000 + i), Some(1000 + i));
                let mut alt = Alt::new();
                alt.send(&b, &mut x);
                alt.send(&c, &mut y);
                let f = alt.wait();
                drop(alt);
                assert!(!f.closed);
                assert_eq!([x, y][f.index], None, "the fired arm's value went out");
                assert_eq!(
                    [x, y][1 - f.index],
                    Some(1000 + i),
                    "the other arm kept its own"
                );
            }
        })
    };
    let (mut next_plain, mut from_alt) = (0, Vec::new());
    for _ in 0..2 * n {
        let mut got = [None, None, None];
        let mut alt = Alt::new();
        for (c, g) in chans.iter().zip(got.iter_mut()) {
            alt.recv(c, g);
        }
        let f = alt.wait();
        drop(alt);
        assert!(!f.closed);
        let v = got[f.index].expect("the fired arm received");
        assert_eq!(got.iter().flatten().count(), 1, "exactly one arm received");
        if f.index == 0 {
            assert_eq!(v, next_plain, "the plain sender's values in order");
            next_plain += 1;
        } else {
            from_alt.push(v);
        }
    }
    plain.join().unwrap();
    alting.join().unwrap();
    from_alt.sort_unstable();
    assert_eq!((next_plain, from_alt), (n, (1000..1000 + n).collect()));
}

/// Several arms on one channel: two receive arms, two send arms, and a send and a receive arm
/// together (an alt must never meet itself).
fn alt_duplicate_arms_on_one_channel<S: Strategy>(p: S::Params) {
    let n = count(500, 2, 1) as u32;
    for nbuf in [0, 1] {
        // Two receive arms on `c` (and one on an idle channel): one of them gets each value.
        let (c, idle) = (
            Chan::<u32, S>::with_params(nbuf, p),
            Chan::<u32, S>::with_params(nbuf, p),
        );
        let sender = {
            let c = c.clone();
            thread::spawn(move || (0..n).for_each(|i| c.send(i).unwrap()))
        };
        for i in 0..n {
            let (mut x, mut y, mut z) = (None, None, None);
            let mut alt = Alt::new();
            alt.recv(&c, &mut x);
            alt.recv(&idle, &mut z);
            alt.recv(&c, &mut y);
            let f = alt.wait();
            drop(alt);
            assert!(!f.closed && f.index != 1, "O={nbuf}: only c has values");
            let got = [x, z, y];
            assert_eq!(got[f.index], Some(i), "O={nbuf}: in order");
            assert_eq!(
                got.iter().flatten().count(),
                1,
                "O={nbuf}: one arm received"
            );
        }
        sender.join().unwrap();

        // Two send arms on `c`: each value received is the fired arm's, the other is kept.
        let receiver = {
            let c = c.clone();
            thread::spawn(move || (0..n).map(|_| c.recv().unwrap()).collect::<Vec<_>>())
        };
        let mut expect = Vec::new();
        for i in 0..n {
            let (mut x, mut y) = (Some(2 * i), Some(2 * i + 1));
            let mut alt = Alt::new();
            alt.send(&c, &mut x);
            alt.send(&c, &mut y);
            let f = alt.wait();
            drop(alt);
            assert!(!f.closed);
            let (sent, kept) = if f.index == 0 { (x, y) } else { (y, x) };
            assert_eq!(sent, None, "O={nbuf}: the fired arm's value went out");
            assert_eq!(
                kept,
                Some(2 * i + (1 - f.index as u32)),
                "O={nbuf}: the other stayed"
            );
            expect.push(2 * i + f.index as u32);
        }
        assert_eq!(receiver.join().unwrap(), expect, "O={nbuf}");

        // A send and a receive arm on one channel. With a partner that only receives, the
        // send arm must fire (on a rendezvous channel the alt cannot receive its own value).
        let receiver = {
            let c = c.clone();
            thread::spawn(move || c.recv().unwrap())
        };
        let (mut out, mut back) = (Some(42), None);
        let mut alt = Alt::new();
        let si = alt.send(&c, &mut out);
        alt.recv(&c, &mut back);
        let f = alt.wait();
        drop(alt);
        // Nothing but the alt's own send arm ever offers a value, so the receive arm firing
        // would mean the alt met itself (or received a value that was never sent).
        assert_eq!(
            f,
            Fired {
                index: si,
                closed: false
            },
            "O={nbuf}: got {back:?}"
        );
        assert_eq!(
            (out, back, receiver.join().unwrap()),
            (None, None, 42),
            "O={nbuf}"
        );
        assert_eq!(c.nbrecv(), Err(TryRecvError::Empty), "O={nbuf}");
    }
}

/// `nbsend` and `nbrecv`: on a buffer, on a rendezvous with a blocked partner, once closed.
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

/// Every value dropped exactly once: received ones, ones handed back in errors, ones a losing
/// alt arm keeps, and ones left buffered when the last handle goes.
fn drops_exactly_once<S: Strategy>(p: S::Params) {
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
        made += 4;
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

/// Where the two parties of a litmus round meet. Natively a spinning counter, so that both
/// start the round within nanoseconds of each other and no system call sits between; under
/// Miri, where a spin is thousands of interpreted steps per turn, a blocking barrier.
struct Gate(AtomicUsize, Barrier);

impl Gate {
    fn new() -> Gate {
        Gate(AtomicUsize::new(0), Barrier::new(2))
    }

    /// Waits until both parties have passed `*phase + 1` times.
    fn pass(&self, phase: &mut usize) {
        *phase += 1;
        if cfg!(miri) {
            self.1.wait();
            return;
        }
        self.0.fetch_add(1, AcqRel);
        let mut spins = 0u32;
        while self.0.load(Acquire) < 2 * *phase {
            spins += 1;
            if spins > 64 {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

const EMPTY: u8 = 1;
const GOT: u8 = 2;

/// The store-buffering litmus test over two channels of capacity 1:
///
/// ```text
/// thread 1: a.send(1); r1 = b.nbrecv()      thread 2: b.send(1); r2 = a.nbrecv()
/// ```
///
/// Each send completes before its thread's `nbrecv` begins, so at least one `nbrecv` must see
/// the other thread's value: both returning `Empty` means a completed send was invisible to a
/// later non-blocking receive (the fast path read a stale summary). Then the channels are
/// drained and checked: every value is received exactly once.
///
/// Natively: 200,000 rounds or 0.5 s per backend, whichever ends first (`CHAN_TEST_SCALE`
/// scales both, so `CHAN_TEST_SCALE=20` hunts for 10 s a backend); under Miri, whose seeds
/// pick the interleaving and which stores a load may still miss, a few rounds.
fn litmus_nb_store_buffering<S: Strategy>(p: S::Params) {
    let rounds = count(200_000, 4, 1);
    // Two parties that meet twice a round run far slower when another pair competes for the
    // CPUs (on two cores, 6 s against 0.7 s for the four backends): one litmus at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let deadline = Instant::now() + Duration::from_secs_f64(0.5 * testkit::scale());
    let (a, b) = (
        Chan::<u8, S>::with_params(1, p),
        Chan::<u8, S>::with_params(1, p),
    );
    let gate = Arc::new(Gate::new());
    let results = Arc::new([AtomicU8::new(0), AtomicU8::new(0)]);
    // Set before a party's first meeting of a round, read by both after it: they stop together.
    let stop = Arc::new(AtomicBool::new(false));
    let party = |me: usize, mine: Chan<u8, S>, theirs: Chan<u8, S>| {
        let (gate, results, stop) = (gate.clone(), results.clone(), stop.clone());
        thread::spawn(move || -> Result<usize, String> {
            let (mut phase, mut verdict) = (0, Ok(rounds));
            for round in 0..rounds {
                if me == 0 && round % 1024 == 1023 && Instant::now() > deadline {
                    stop.store(true, Relaxed);
                }
                gate.pass(&mut phase);
                if stop.load(Relaxed) {
                    return verdict.and(Ok(round));
                }
                mine.send(1).unwrap();
                let r = match theirs.nbrecv() {
                    Ok(1) => GOT,
                    Err(TryRecvError::Empty) => EMPTY,
                    other => Err(format!("round {round}: nbrecv gave {other:?}"))?,
                };
                results[me].store(r, Relaxed);
                gate.pass(&mut phase);
                // Both results are in. Whoever did not take this party's value left it
                // buffered: drain it before the next round.
                if results.iter().all(|r| r.load(Relaxed) == EMPTY) {
                    verdict = Err(format!(
                        "round {round} of {rounds}: both nbrecv returned Empty after both \
                         sends had completed (store buffering on the non-blocking fast path)"
                    ));
                    stop.store(true, Relaxed);
                    continue;
                }
                let taken = results[1 - me].load(Relaxed) == GOT;
                let left = mine.nbrecv().is_ok();
                if left == taken {
                    verdict = Err(format!(
                        "round {round}: party {me}'s value received {} times",
                        taken as u8 + left as u8
                    ));
                    stop.store(true, Relaxed);
                }
            }
            verdict
        })
    };
    let one = party(0, a.clone(), b.clone());
    let two = party(1, b, a);
    let (r1, r2) = (one.join().unwrap(), two.join().unwrap());
    let done = r1.clone().and(r2.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((r1, r2), (Ok(done), Ok(done)), "the parties disagree");
    assert!(done > 0, "no round ran");
    eprintln!("{} rounds, no store buffering seen", done);
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

// Async operations on the hand-rolled executor (`exec/`), mixed with threads: the task
// context, the waker taken at the claim and put back after it, `done`, and cancellation,
// under Miri's checks.

#[path = "exec/mod.rs"]
mod exec;

per_backend! {
    miri_async:
    async_tasks_and_threads,
    async_cancellation_races_a_partner,
    async_alt_with_a_thread_partner,
    async_drops_on_one_thread,
    #[cfg(feature = "sink")]
    async_sink_with_a_thread_partner,
}

/// Two tasks on one executor thread and a blocking thread, over a rendezvous and a one-slot
/// channel: every value once, in order per sender.
fn async_tasks_and_threads<S: Strategy>(p: S::Params) {
    let n = count(500, 6, 3) as u64;
    for nbuf in [0, 1] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let tx = c.clone();
        let t = thread::spawn(move || (0..n).for_each(|i| tx.send(1 << 32 | i).unwrap()));
        let got = Mutex::new(Vec::new());
        let mut ex = exec::Exec::new();
        ex.spawn(async {
            for i in 0..n {
                c.send_async(i).await.unwrap();
            }
        });
        ex.spawn(async {
            for _ in 0..2 * n {
                let v = c.recv_async().await.unwrap();
                got.lock().unwrap().push(v);
            }
        });
        ex.run();
        drop(ex);
        t.join().unwrap();
        let got = got.into_inner().unwrap();
        for s in [0u64, 1] {
            let mine: Vec<u64> = got
                .iter()
                .filter(|v| *v >> 32 == s)
                .map(|v| v & 0xffff_ffff)
                .collect();
            assert_eq!(mine, (0..n).collect::<Vec<_>>(), "O={nbuf}: sender {s}");
        }
    }
}

/// A queued send future and a queued receive future dropped while a thread completes them:
/// whichever wins, each value is received or dropped exactly once and nothing is left
/// linked.
fn async_cancellation_races_a_partner<S: Strategy>(p: S::Params) {
    let rounds = count(200, 3, 2);
    let drops = Arc::new(AtomicUsize::new(0));
    let (_, waker) = exec::counting_waker();
    for round in 0..rounds {
        // A send future against a blocking receiver.
        let c = Chan::<Tracked, S>::with_params(0, p);
        let rx = c.clone();
        let r = thread::spawn(move || rx.recv_timeout(Duration::from_millis(1 + round as u64 % 2)));
        {
            let mut s = Box::pin(c.send_async(Tracked::new(round as u64, &drops)));
            let _ = exec::poll_once(s.as_mut(), &waker);
            thread::yield_now();
        }
        let before = drops.load(SeqCst);
        match r.join().unwrap() {
            Ok(v) => {
                assert_eq!(v.id, round as u64);
                drop(v);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(e) => panic!("{e:?}"),
        }
        // The send future's value: received and dropped, or dropped with the future.
        assert!(before <= 2 * round + 1);
        assert_eq!(drops.load(SeqCst), 2 * round + 1, "round {round}");

        // A receive future against a blocking sender: a value handed to it and then
        // dropped goes back to the channel.
        let c = Chan::<Tracked, S>::with_params(0, p);
        let tx = c.clone();
        let v = Tracked::new(1000 + round as u64, &drops);
        let s = thread::spawn(move || tx.send_timeout(v, Duration::from_millis(1)));
        {
            let mut r = Box::pin(c.recv_async());
            if let std::task::Poll::Ready(v) = exec::poll_once(r.as_mut(), &waker) {
                drop(v.unwrap());
            }
            thread::yield_now();
        }
        match s.join().unwrap() {
            Ok(()) => {
                // Sent: received above, or given back to the channel by the dropped future.
                if let Ok(v) = c.nbrecv() {
                    assert_eq!(v.id, 1000 + round as u64);
                }
            }
            Err(SendTimeoutError::Timeout(v)) => drop(v),
            Err(e) => panic!("{e:?}"),
        }
        drop(c);
        assert_eq!(drops.load(SeqCst), 2 * round + 2, "round {round}");
    }
}

/// An async alt over two channels fed by a blocking thread and a task.
fn async_alt_with_a_thread_partner<S: Strategy>(p: S::Params) {
    let n = count(200, 4, 2) as u64;
    let (a, b) = (
        Chan::<u64, S>::with_params(0, p),
        Chan::<u64, S>::with_params(1, p),
    );
    let ta = a.clone();
    let t = thread::spawn(move || (0..n).for_each(|i| ta.send(i).unwrap()));
    let got = Mutex::new(Vec::new());
    let mut ex = exec::Exec::new();
    ex.spawn(async {
        for i in 0..n {
            b.send_async(1 << 32 | i).await.unwrap();
        }
    });
    ex.spawn(async {
        for _ in 0..2 * n {
            let (mut x, mut y) = (None, None);
            let mut alt = Alt::new();
            alt.recv(&a, &mut x);
            alt.recv(&b, &mut y);
            let fired = alt.wait_async().await;
            assert!(!fired.closed);
            drop(alt);
            got.lock().unwrap().push(x.or(y).unwrap());
        }
    });
    ex.run();
    drop(ex);
    t.join().unwrap();
    let got = got.into_inner().unwrap();
    assert_eq!(got.len() as u64, 2 * n);
    for s in [0u64, 1] {
        let mine: Vec<u64> = got
            .iter()
            .filter(|v| *v >> 32 == s)
            .map(|v| v & 0xffff_ffff)
            .collect();
        assert_eq!(mine, (0..n).collect::<Vec<_>>());
    }
}

/// Cancellation on one thread, every path: a queued send future dropped (value dropped
/// once), a receive future dropped after a value was handed to it (value back in the
/// channel), an async alt dropped after an arm fired (value back in its channel, the unsent
/// value back in its place), and a future re-polled with another waker.
fn async_drops_on_one_thread<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let (_, w) = exec::counting_waker();
    let (_, w2) = exec::counting_waker();
    let c = Chan::<Tracked, S>::with_params(0, p);
    {
        let mut s = Box::pin(c.send_async(Tracked::new(1, &drops)));
        assert!(exec::poll_once(s.as_mut(), &w).is_pending());
        assert!(exec::poll_once(s.as_mut(), &w2).is_pending());
    }
    assert_eq!(drops.load(SeqCst), 1);
    {
        let mut r = Box::pin(c.recv_async());
        assert!(exec::poll_once(r.as_mut(), &w).is_pending());
        assert!(c.nbsend(Tracked::new(2, &drops)).is_ok());
    }
    assert_eq!(c.nbrecv().map(|t| t.id).ok(), Some(2));
    assert_eq!(drops.load(SeqCst), 2);

    let d = Chan::<Tracked, S>::with_params(1, p);
    let (mut x, mut y) = (None, Some(Tracked::new(3, &drops)));
    d.nbsend(Tracked::new(4, &drops)).unwrap(); // full: the send arm cannot fire
    {
        let mut alt = Alt::new();
        alt.recv(&c, &mut x);
        alt.send(&d, &mut y);
        let mut f = Box::pin(alt.wait_async());
        assert!(exec::poll_once(f.as_mut(), &w).is_pending());
        assert!(exec::poll_once(f.as_mut(), &w2).is_pending());
        assert!(c.nbsend(Tracked::new(5, &drops)).is_ok());
    }
    assert!(x.is_none());
    assert_eq!(y.as_ref().map(|t| t.id), Some(3));
    assert_eq!(c.nbrecv().map(|t| t.id).ok(), Some(5));
    assert_eq!(drops.load(SeqCst), 3);
    drop((y, d));
    assert_eq!(drops.load(SeqCst), 5);
}

/// A sink's item in each place it can be when the sink goes: kept and never flushed, queued
/// and dropped, queued and taken by a blocked thread; and a sink feeding a thread.
#[cfg(feature = "sink")]
fn async_sink_with_a_thread_partner<S: Strategy>(p: S::Params) {
    use futures::future::poll_fn;
    use futures::sink::{Sink, SinkExt};
    let drops = Arc::new(AtomicUsize::new(0));
    let (_, w) = exec::counting_waker();
    let c = Chan::<Tracked, S>::with_params(0, p);
    {
        let mut sink = Box::pin(c.sink());
        sink.as_mut().start_send(Tracked::new(1, &drops)).unwrap();
    }
    assert_eq!(drops.load(SeqCst), 1);
    {
        let mut sink = Box::pin(c.sink());
        sink.as_mut().start_send(Tracked::new(2, &drops)).unwrap();
        let mut flush = Box::pin(poll_fn(|cx| sink.as_mut().poll_flush(cx)));
        assert!(exec::poll_once(flush.as_mut(), &w).is_pending());
    }
    assert_eq!(drops.load(SeqCst), 2);
    {
        let mut sink = Box::pin(c.sink());
        sink.as_mut().start_send(Tracked::new(3, &drops)).unwrap();
        {
            let mut flush = Box::pin(poll_fn(|cx| sink.as_mut().poll_flush(cx)));
            assert!(exec::poll_once(flush.as_mut(), &w).is_pending());
        }
        // A thread takes the queued item; the sink is dropped without another poll.
        let rx = c.clone();
        assert_eq!(
            thread::spawn(move || rx.recv().map(|t| t.id))
                .join()
                .unwrap(),
            Ok(3)
        );
    }
    assert_eq!(drops.load(SeqCst), 3);

    let n = count(100, 4, 2) as u64;
    let (tx, rx) = Chan::<u64, S>::with_params(1, p).split();
    let t = thread::spawn(move || rx.iter().collect::<Vec<_>>());
    exec::block_on(async move {
        let mut sink = Box::pin(tx.into_sink());
        for i in 0..n {
            sink.send(i).await.unwrap();
        }
    });
    assert_eq!(t.join().unwrap(), (0..n).collect::<Vec<_>>());
}
