//! Every message arrives exactly once, in order per sender: M senders x K receivers x
//! O in {0, 1, 2, 10, 100} x every backend, with randomized operation kinds and pauses.
#![cfg(not(loom))]

use chan::{Chan, RecvTimeoutError, SendTimeoutError, TryRecvError, TrySendError};
use locks::Strategy;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::thread;
use std::time::Duration;
use testkit::per_backend;

per_backend! { exactly_once: every_message_exactly_once_fifo_per_sender }
per_backend! { exactly_once_dyn: through_dyn_lock }

/// The same run on `Chan<u64, DynLock>`, the lock chosen at run time from the backend that
/// names `S` with these parameters (so `exactly_once_dyn::sem::through_dyn_lock` is
/// `Chan::<u64, DynLock>::with_params(n, "sem".parse()?)`).
fn through_dyn_lock<S: Strategy>(params: S::Params) {
    let backend: locks::Backend = testkit::name::<S>(params).parse().expect("its own name");
    every_message_exactly_once_fifo_per_sender::<locks::DynLock>(backend);
}

/// A value that says who sent it and its place in that sender's sequence.
fn encode(sender: u64, seq: u64) -> u64 {
    (sender << 32) | seq
}

/// Randomly perturbs timing so that different interleavings get exercised.
fn jitter(rng: &mut StdRng) {
    match rng.random_range(0..64) {
        0 => thread::yield_now(),
        1 => thread::sleep(Duration::from_micros(rng.random_range(1..50))),
        2..=4 => (0..rng.random_range(1..200)).for_each(|_| std::hint::spin_loop()),
        _ => {}
    }
}

fn send<S: Strategy>(c: &Chan<u64, S>, v: u64, rng: &mut StdRng) {
    match rng.random_range(0..8) {
        // Non-blocking attempts, then a blocking send: two parties that only ever poll a
        // rendezvous channel would never meet.
        0 => {
            let mut v = v;
            for _ in 0..20 {
                match c.nbsend(v) {
                    Ok(()) => return,
                    Err(TrySendError::Full(back)) => v = back,
                    Err(TrySendError::Closed(_)) => panic!("closed while sending"),
                }
                thread::yield_now();
            }
            c.send(v).expect("open channel")
        }
        1 => {
            let mut v = v;
            loop {
                match c.send_timeout(v, Duration::from_micros(rng.random_range(1..300))) {
                    Ok(()) => return,
                    Err(SendTimeoutError::Timeout(back)) => v = back,
                    Err(SendTimeoutError::Closed(_)) => panic!("closed while sending"),
                }
            }
        }
        _ => c.send(v).expect("open channel"),
    }
}

fn recv<S: Strategy>(c: &Chan<u64, S>, rng: &mut StdRng) -> Option<u64> {
    match rng.random_range(0..8) {
        0 => {
            for _ in 0..20 {
                match c.nbrecv() {
                    Ok(v) => return Some(v),
                    Err(TryRecvError::Empty) => thread::yield_now(),
                    Err(TryRecvError::Closed) => return None,
                }
            }
            c.recv().ok()
        }
        1 => loop {
            match c.recv_timeout(Duration::from_micros(rng.random_range(1..300))) {
                Ok(v) => return Some(v),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Closed) => return None,
            }
        },
        _ => c.recv().ok(),
    }
}

fn every_message_exactly_once_fifo_per_sender<S: Strategy>(params: S::Params) {
    // A fixed base seed keeps CI reproducible; CHAN_SEED explores others.
    let base = std::env::var("CHAN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9f4e_2013u64);
    let name = testkit::name::<S>(params);
    for (round, nbuf) in (0..3).flat_map(|r| [0usize, 1, 2, 10, 100].map(|o| (r, o))) {
        let seed = base ^ ((round << 16) | nbuf as u64) << 8;
        let mut rng = StdRng::seed_from_u64(seed);
        let senders = rng.random_range(1..=8u64);
        // Every channel sees one, two and four receivers over the rounds.
        let receivers = [1, 2, 4][round as usize];
        // Drawn at full size either way, so that a seed names the same run at every scale.
        let per_sender = testkit::scaled(rng.random_range(200..=800usize), 10) as u64;
        let ctx =
            format!("seed {seed:#x}: {name}, O={nbuf}, M={senders}, K={receivers}, N={per_sender}");

        let c = Chan::<u64, S>::with_params(nbuf, params);
        let sending: Vec<_> = (0..senders)
            .map(|id| {
                let (c, mut rng) = (c.clone(), StdRng::seed_from_u64(seed + id + 1));
                thread::spawn(move || {
                    for seq in 0..per_sender {
                        jitter(&mut rng);
                        send(&c, encode(id, seq), &mut rng);
                    }
                })
            })
            .collect();
        let receiving: Vec<_> = (0..receivers)
            .map(|r| {
                let (c, mut rng) = (c.clone(), StdRng::seed_from_u64(!seed + r as u64));
                let ctx = ctx.clone();
                thread::spawn(move || {
                    // What this receiver saw of each sender must be increasing.
                    let mut last = vec![None::<u64>; senders as usize];
                    let mut got = Vec::new();
                    while let Some(v) = recv(&c, &mut rng) {
                        let (id, seq) = ((v >> 32) as usize, v & 0xffff_ffff);
                        assert!(id < last.len(), "{ctx}: forged value {v:#x}");
                        assert!(
                            last[id].is_none_or(|l| l < seq),
                            "{ctx}: sender {id} out of order: {seq} after {:?}",
                            last[id]
                        );
                        last[id] = Some(seq);
                        got.push(v);
                        jitter(&mut rng);
                    }
                    got
                })
            })
            .collect();
        for s in sending {
            s.join()
                .unwrap_or_else(|_| panic!("{ctx}: a sender panicked"));
        }
        c.close();
        let mut all: Vec<u64> = receiving
            .into_iter()
            .flat_map(|r| {
                r.join()
                    .unwrap_or_else(|_| panic!("{ctx}: a receiver panicked"))
            })
            .collect();
        all.sort_unstable();
        let expected: Vec<u64> = (0..senders)
            .flat_map(|id| (0..per_sender).map(move |s| encode(id, s)))
            .collect();
        assert_eq!(
            all.len(),
            expected.len(),
            "{ctx}: lost or duplicated messages"
        );
        assert!(all == expected, "{ctx}: wrong set of messages");
    }
}

#[test]
fn global_lock_channels_exactly_once() {
    // Plan 9's arrangement: two channels sharing one lock, both busy at once.
    let a = Chan::<u64, locks::SemLock>::with_global_lock(4, locks::NoParams);
    let b = Chan::<u64, locks::SemLock>::with_global_lock(0, locks::NoParams);
    let t: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .map(|c| thread::spawn(move || (0..3000).for_each(|i| c.send(i).unwrap())))
        .collect();
    for c in [&a, &b] {
        assert!((0..3000).eq((0..3000).map(|_| c.recv().unwrap())));
    }
    t.into_iter().for_each(|t| t.join().unwrap());
}
