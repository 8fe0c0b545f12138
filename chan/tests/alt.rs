//! `alt`: fairness, bias, non-blocking and timed forms, mixed types, losing send arms.
//!
//! The tests in `mod miri` (`miri::alt::spin::close_wakes_blocked_alts`, ...) are Miri's too,
//! sized by `count(native, miri, min)`: a close waking blocked alts, alts over several channels
//! and with several arms on one channel. `.ci/miri` runs them as it runs `semantics.rs`'s.
#![cfg(not(loom))]

use chan::{Alt, Chan, Fired, TryRecvError};
use locks::Strategy;
use std::thread;
use std::time::Duration;
use testkit::{count, per_backend};

per_backend! {
    alt:
    fair_among_ready,
    biased_takes_the_first,
    nonblocking_and_timeout,
    mixed_types_and_blocking,
    losing_send_arms_keep_values,
    closed_reported_last,
    alts_against_alts_exactly_once,
}

/// What Miri runs too (`.ci/miri` picks `miri::`), small enough for it under `cfg(miri)`.
mod miri {
    use super::*;

    per_backend! {
        alt:
        close_wakes_blocked_alts,
        alt_over_several_channels,
        alt_duplicate_arms_on_one_channel,
    }
}

fn fair_among_ready<S: Strategy>(p: S::Params) {
    const TRIALS: usize = 20_000;
    let chans: Vec<Chan<usize, S>> = (0..4).map(|_| Chan::with_params(1, p)).collect();
    for (i, c) in chans.iter().enumerate() {
        c.send(i).unwrap();
    }
    let mut counts = [0usize; 4];
    for _ in 0..TRIALS {
        let mut got = [None; 4];
        let mut alt = Alt::new();
        for (c, g) in chans.iter().zip(got.iter_mut()) {
            alt.recv(c, g);
        }
        let f = alt.wait();
        drop(alt);
        assert!(!f.closed);
        assert_eq!(got[f.index], Some(f.index));
        counts[f.index] += 1;
        chans[f.index].send(f.index).unwrap(); // every arm ready again
    }
    // Uniform would be 25 %; 15-35 % is more than 20 standard deviations away from flaking.
    for (i, n) in counts.iter().enumerate() {
        let share = *n as f64 / TRIALS as f64;
        assert!(
            (0.15..=0.35).contains(&share),
            "arm {i} chosen {share:.3} of the time"
        );
    }
}

fn biased_takes_the_first<S: Strategy>(p: S::Params) {
    let a = Chan::<u8, S>::with_params(1, p);
    let b = Chan::<u8, S>::with_params(1, p);
    b.send(2).unwrap();
    for _ in 0..100 {
        a.send(1).unwrap();
        let (mut x, mut y) = (None, None);
        let mut alt = Alt::new().biased();
        alt.recv(&a, &mut x);
        alt.recv(&b, &mut y);
        assert_eq!(
            alt.wait(),
            Fired {
                index: 0,
                closed: false
            }
        );
        drop(alt);
        assert_eq!((x, y), (Some(1), None));
    }
}

fn nonblocking_and_timeout<S: Strategy>(p: S::Params) {
    let a = Chan::<u8, S>::with_params(0, p);
    let b = Chan::<u8, S>::with_params(1, p);
    b.send(0).unwrap(); // b is full: a send arm on it cannot proceed
    let (mut x, mut out) = (None, Some(5));
    let mut alt = Alt::new();
    alt.recv(&a, &mut x);
    alt.send(&b, &mut out);
    assert_eq!(alt.try_wait(), None, "nothing is ready");
    assert_eq!(alt.wait_timeout(Duration::from_millis(2)), None);
    drop(alt);
    assert_eq!(
        (x, out),
        (None, Some(5)),
        "a timed-out alt keeps its values"
    );
    assert_eq!(
        a.nbsend(1),
        Err(chan::TrySendError::Full(1)),
        "the alt left no waiter"
    );
    assert_eq!(b.recv(), Ok(0));

    // Ready now: the non-blocking form fires it.
    let mut out = Some(6);
    let mut alt = Alt::new();
    let i = alt.send(&b, &mut out);
    assert_eq!(
        alt.try_wait(),
        Some(Fired {
            index: i,
            closed: false
        })
    );
    drop(alt);
    assert_eq!((out, b.recv()), (None, Ok(6)));

    // A disabled send arm (no value) never fires; an empty alt only times out.
    let mut none: Option<u8> = None;
    let mut alt = Alt::new();
    alt.send(&b, &mut none);
    assert_eq!(alt.try_wait(), None);
    let mut empty = Alt::<S>::new();
    assert!(empty.is_empty());
    assert_eq!(empty.wait_timeout(Duration::from_micros(1)), None);
}

fn mixed_types_and_blocking<S: Strategy>(p: S::Params) {
    let nums = Chan::<u64, S>::with_params(0, p);
    let words = Chan::<String, S>::with_params(0, p);
    let vecs = Chan::<Vec<u8>, S>::with_params(0, p);
    for round in 0..300u64 {
        let peer = {
            let (nums, words, vecs) = (nums.clone(), words.clone(), vecs.clone());
            thread::spawn(move || match round % 3 {
                0 => nums.send(round).is_ok().then_some(0),
                1 => words.send(round.to_string()).is_ok().then_some(1),
                _ => vecs.recv().ok().map(|v| v.len()),
            })
        };
        let (mut n, mut w, mut v) = (None, None, Some(vec![0u8; 3]));
        let mut alt = Alt::new();
        alt.recv(&nums, &mut n);
        alt.recv(&words, &mut w);
        alt.send(&vecs, &mut v);
        let f = alt.wait();
        drop(alt);
        assert_eq!(f.index as u64, round % 3);
        match f.index {
            0 => assert_eq!((n, w.as_deref(), v.is_some()), (Some(round), None, true)),
            1 => assert_eq!((n, w, v.is_some()), (None, Some(round.to_string()), true)),
            _ => assert_eq!((n, w.as_deref(), v), (None, None, None)),
        }
        let r = peer.join().unwrap().unwrap();
        if f.index == 2 {
            assert_eq!(r, 3);
        }
    }
}

fn losing_send_arms_keep_values<S: Strategy>(p: S::Params) {
    // Two send arms on rendezvous channels and one receiver on one of them: the other arm's
    // value is neither lost nor sent.
    let a = Chan::<u32, S>::with_params(0, p);
    let b = Chan::<u32, S>::with_params(0, p);
    for round in 0..300u32 {
        let target = if round % 2 == 0 { a.clone() } else { b.clone() };
        let receiver = thread::spawn(move || target.recv());
        let (mut x, mut y) = (Some(round), Some(round + 1_000_000));
        let mut alt = Alt::new();
        alt.send(&a, &mut x);
        alt.send(&b, &mut y);
        let f = alt.wait();
        drop(alt);
        let got = receiver.join().unwrap().unwrap();
        assert_eq!(f.index as u32, round % 2);
        if f.index == 0 {
            assert_eq!((got, x, y), (round, None, Some(round + 1_000_000)));
        } else {
            assert_eq!((got, x, y), (round + 1_000_000, Some(round), None));
        }
        assert!(
            a.nbrecv().is_err() && b.nbrecv().is_err(),
            "nothing else was sent"
        );
    }
}

fn closed_reported_last<S: Strategy>(p: S::Params) {
    let open = Chan::<u8, S>::with_params(1, p);
    let closed = Chan::<u8, S>::with_params(1, p);
    closed.close();
    open.send(1).unwrap();
    for _ in 0..50 {
        let (mut x, mut y) = (None, None);
        let mut alt = Alt::new();
        alt.recv(&closed, &mut x);
        let i = alt.recv(&open, &mut y);
        let f = alt.wait();
        drop(alt);
        assert_eq!(
            f,
            Fired {
                index: i,
                closed: false
            },
            "a ready arm wins over a closed one"
        );
        open.send(y.unwrap()).unwrap();
    }
    let _ = open.recv();
    let (mut x, mut out) = (None, Some(3));
    let mut alt = Alt::new();
    alt.recv(&open, &mut x);
    let i = alt.send(&closed, &mut out);
    assert_eq!(
        alt.wait(),
        Fired {
            index: i,
            closed: true
        }
    );
    drop(alt);
    assert_eq!(out, Some(3), "a closed send arm keeps its value");
}

fn alts_against_alts_exactly_once<S: Strategy>(p: S::Params) {
    // Two alt senders and two alt receivers over a rendezvous and a buffered channel, plus a
    // plain receiver: every value arrives exactly once.
    const PER: u32 = 400;
    let a = Chan::<u32, S>::with_params(0, p);
    let b = Chan::<u32, S>::with_params(2, p);
    let senders: Vec<_> = (0..2u32)
        .map(|s| {
            let (a, b) = (a.clone(), b.clone());
            thread::spawn(move || {
                for i in 0..PER {
                    let v = s * PER + i;
                    let (mut x, mut y) = (Some(v), Some(v));
                    let mut alt = Alt::new();
                    alt.send(&a, &mut x);
                    alt.send(&b, &mut y);
                    let f = alt.wait();
                    drop(alt);
                    // Exactly one of the two copies went out.
                    assert_eq!(x.is_none() as usize + y.is_none() as usize, 1);
                    assert_eq!([x, y][f.index], None);
                }
            })
        })
        .collect();
    let receivers: Vec<_> = (0..3)
        .map(|r| {
            let (a, b) = (a.clone(), b.clone());
            thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    if r == 2 {
                        match a.recv() {
                            Ok(v) => got.push(v),
                            Err(_) => return got,
                        }
                        continue;
                    }
                    let (mut x, mut y) = (None, None);
                    let mut alt = Alt::new();
                    alt.recv(&a, &mut x);
                    alt.recv(&b, &mut y);
                    let f = alt.wait();
                    drop(alt);
                    if f.closed {
                        // One channel is closed and drained; drain the other plainly.
                        let other = if f.index == 0 { &b } else { &a };
                        got.extend(other.iter());
                        return got;
                    }
                    got.extend(x.or(y));
                }
            })
        })
        .collect();
    senders.into_iter().for_each(|s| s.join().unwrap());
    a.close();
    b.close();
    let mut all: Vec<u32> = receivers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..2 * PER).collect::<Vec<_>>());
}

#[test]
fn alt_macro_arms_results_and_tails() {
    use chan::{alt, RecvError, SendError};
    // recv and send arms, blocking: exactly one body runs with the right result.
    let (a, b) = (Chan::<u32>::new(1), Chan::<String>::new(0));
    a.send(1).unwrap();
    let r = alt! {
        recv(a) -> v => { v.map(|v| v * 10) },
        send(b, "x".to_string()) -> _s => { Ok(0) },
    };
    assert_eq!(r, Ok(10), "b has no receiver, so only a's arm can fire");

    // A closed receive reports RecvError; a closed send gives its value back.
    let c = Chan::<u32>::new(0);
    c.close();
    let r = alt! { recv(c) -> v => { v } };
    assert_eq!(r, Err(RecvError));
    let r = alt! { send(c, 5) -> s => { s } };
    assert_eq!(r, Err(SendError(5)));

    // Tails: default when nothing is ready, timeout when nothing becomes ready.
    let d = Chan::<u32>::new(0);
    let r = alt! {
        recv(d) -> _v => { "recv" },
        default => { "default" },
    };
    assert_eq!(r, "default");
    let r = alt! {
        recv(d) -> _v => { "recv" },
        timeout(Duration::from_millis(1)) => { "timeout" },
    };
    assert_eq!(r, "timeout");

    // Blocking until a partner arrives.
    let e = Chan::<u32>::new(0);
    let t = {
        let e = e.clone();
        thread::spawn(move || e.send(42))
    };
    let r = alt! {
        recv(d) -> _v => { 0 },
        recv(e) -> v => { v.unwrap() },
    };
    assert_eq!(r, 42);
    t.join().unwrap().unwrap();
}

/// Alts blocked on a channel, unbuffered and buffered, woken by its close: a receiving alt
/// reports the closed arm, a sending alt keeps its value.
fn close_wakes_blocked_alts<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1, 2] {
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
