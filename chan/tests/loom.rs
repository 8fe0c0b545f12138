//! Model checks of the channel protocols: rendezvous hand-off, full/empty wake-ups, close, and
//! a timed-out waiter racing its partner.
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p chan --test loom`
#![cfg(loom)]

use chan::{Chan, RecvTimeoutError, SendError};
use locks::{Backend, Strategy, Visit};
use loom::thread;
use std::time::Instant;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.max_branches = 20_000;
    b.check(f);
}

/// Runs a model with each strategy.
fn each(m: impl Visit<Output = ()> + Clone) {
    for b in Backend::ALL {
        b.visit(m.clone());
    }
}

#[derive(Clone)]
struct Rendezvous;
impl Visit for Rendezvous {
    type Output = ();
    fn visit<S: Strategy>(self, p: S::Params) {
        model(move || {
            let c = Chan::<u32, S>::with_params(0, p);
            let tx = c.clone();
            let t = thread::spawn(move || tx.send(7).unwrap());
            assert_eq!(c.recv(), Ok(7));
            t.join().unwrap();
        });
    }
}

#[test]
fn rendezvous_hand_off() {
    each(Rendezvous);
}

#[derive(Clone)]
struct FullEmpty;
impl Visit for FullEmpty {
    type Output = ();
    fn visit<S: Strategy>(self, p: S::Params) {
        model(move || {
            // One slot, two values: the sender must block once on full, and the receiver may
            // block on empty; both wake-ups must arrive, in order.
            let c = Chan::<u32, S>::with_params(1, p);
            let tx = c.clone();
            let t = thread::spawn(move || {
                tx.send(1).unwrap();
                tx.send(2).unwrap();
            });
            assert_eq!(c.recv(), Ok(1));
            assert_eq!(c.recv(), Ok(2));
            t.join().unwrap();
        });
    }
}

#[test]
fn full_and_empty_wake_ups() {
    each(FullEmpty);
}

#[derive(Clone)]
struct Close;
impl Visit for Close {
    type Output = ();
    fn visit<S: Strategy>(self, p: S::Params) {
        model(move || {
            // A blocked (or about to block) receiver and sender, each woken by close.
            let c = Chan::<u32, S>::with_params(0, p);
            let (rx, tx) = (c.clone(), c.clone());
            let r = thread::spawn(move || rx.recv());
            let s = thread::spawn(move || tx.send(5));
            c.close();
            let (got, sent) = (r.join().unwrap(), s.join().unwrap());
            // Either they met before the close, or both were refused.
            match got {
                Ok(v) => assert_eq!((v, sent), (5, Ok(()))),
                Err(_) => assert_eq!(sent, Err(SendError(5))),
            }
        });
    }
}

#[test]
fn close_wakes_everyone() {
    each(Close);
}

#[derive(Clone)]
struct TimeoutRace;
impl Visit for TimeoutRace {
    type Output = ();
    fn visit<S: Strategy>(self, p: S::Params) {
        model(move || {
            // Under loom a timed wait looks once and times out, so the receiver's cancel
            // races the sender's claim: the value must end up in exactly one place.
            let c = Chan::<u32, S>::with_params(0, p);
            let tx = c.clone();
            let t = thread::spawn(move || tx.send_deadline(9, Instant::now()).is_ok());
            let got = c.recv_deadline(Instant::now());
            let sent = t.join().unwrap();
            match got {
                Ok(v) => assert!(v == 9 && sent),
                Err(RecvTimeoutError::Timeout) => assert!(!sent),
                Err(e) => panic!("{e}"),
            }
        });
    }
}

#[test]
fn timeout_races_hand_off() {
    each(TimeoutRace);
}

#[derive(Clone)]
struct AltClaimedOnce;
impl Visit for AltClaimedOnce {
    type Output = ();
    fn visit<S: Strategy>(self, p: S::Params) {
        model(move || {
            // An alt receiving from two rendezvous channels is offered a value on each: by a
            // blocking sender on `a` and a non-blocking one on `b`. Exactly one arm fires, and
            // the other value is neither lost nor delivered twice.
            let a = Chan::<u32, S>::with_params(0, p);
            let b = Chan::<u32, S>::with_params(0, p);
            let (ta, tb) = (a.clone(), b.clone());
            let sa = thread::spawn(move || ta.send(1));
            let sb = thread::spawn(move || tb.nbsend(2).is_ok());
            let (mut x, mut y) = (None, None);
            let mut alt = chan::Alt::new();
            alt.recv(&a, &mut x);
            alt.recv(&b, &mut y);
            let fired = alt.wait();
            drop(alt);
            let b_sent = sb.join().unwrap();
            match fired.index {
                0 => assert_eq!((x, y, b_sent), (Some(1), None, false)),
                _ => {
                    assert_eq!((x, y, b_sent), (None, Some(2), true));
                    assert_eq!(a.recv(), Ok(1)); // release the blocked sender
                }
            }
            assert_eq!(sa.join().unwrap(), Ok(()));
        });
    }
}

#[test]
fn alt_is_claimed_by_exactly_one_channel() {
    each(AltClaimedOnce);
}
