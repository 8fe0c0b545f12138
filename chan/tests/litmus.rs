//! The store-buffering litmus test of the non-blocking fast paths, natively and under Miri:
//! `a.send(1); b.nbrecv()` against `b.send(1); a.nbrecv()`, where both `Empty` is a bug.
//!
//! Natively it hunts for the outcome for a while per backend (`CHAN_TEST_SCALE` scales the
//! hunt); `cargo +nightly miri test -p plan9-chan --test litmus` interprets a few rounds per
//! seed, exploring the weak-memory outcomes Miri allows (`.ci/miri` runs it over more seeds
//! than the rest, on its own). Every backend (`miri::spin::litmus_nb_store_buffering`, ...,
//! `miri::adaptive_futex::litmus_nb_store_buffering`).
#![cfg(not(loom))]

use chan::{Chan, TryRecvError};
use locks::Strategy;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use testkit::{count, per_backend};

per_backend! { miri: litmus_nb_store_buffering }

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
