//! The names a Rust user reaches for first: `bounded`/`unbounded`, `try_send`/`try_recv`,
//! the `is_*` helpers on every error, `sender_count`/`receiver_count`, a weak sender, alt
//! arms over references to ends, and a `DynLock` channel that says which backend it is.
#![cfg(not(loom))]

use chan::{
    alt, Chan, Receiver, RecvError, RecvTimeoutError, SendError, SendTimeoutError, Sender,
    TryRecvError, TrySendError, WeakSender,
};
use locks::{Backend, DynLock, Strategy};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use testkit::per_backend;

per_backend! {
    conventions:
    try_names_are_the_plan9_ones,
    counts_follow_clones_and_drops,
    a_weak_sender_does_not_keep_the_channel_open,
    upgrade_races_the_last_sender_drop,
    alt_arms_take_references_to_any_end,
}

#[test]
fn bounded_and_unbounded_infer_their_element_type() {
    // No turbofish: the default lock no longer stands in the way of inference.
    let (tx, rx) = chan::bounded(4);
    tx.send(1u8).unwrap();
    assert_eq!((rx.recv(), rx.capacity()), (Ok(1), 4));

    let (tx, rx) = chan::unbounded();
    (0..5000).for_each(|i| tx.send(i).unwrap());
    assert_eq!((rx.len(), rx.capacity()), (5000, usize::MAX));
    drop(tx);
    assert_eq!(rx.iter().sum::<i32>(), (0..5000).sum());

    // Rendezvous.
    let (tx, rx) = chan::bounded(0);
    assert!(tx.try_send("x").unwrap_err().is_full());
    let t = thread::spawn(move || tx.send("y"));
    assert_eq!(rx.recv(), Ok("y"));
    t.join().unwrap().unwrap();
}

fn try_names_are_the_plan9_ones<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(1, p);
    assert_eq!(c.try_send(1), Ok(()));
    assert_eq!(c.try_send(2), Err(TrySendError::Full(2)));
    assert_eq!(c.try_recv(), Ok(1));
    assert_eq!(c.try_recv(), Err(TryRecvError::Empty));

    let (tx, rx) = c.split();
    assert_eq!(tx.try_send(3), Ok(()));
    assert_eq!(rx.try_recv(), Ok(3));
    assert!(rx.try_recv().unwrap_err().is_empty());
    drop(rx);
    assert!(tx.try_send(4).unwrap_err().is_closed());
}

#[test]
fn every_error_says_what_it_is() {
    let send = SendError(1);
    assert!(send.is_closed() && send.is_disconnected());
    assert!(RecvError.is_closed() && RecvError.is_disconnected());

    let full = TrySendError::Full(1);
    let closed = TrySendError::Closed(1);
    assert!(full.is_full() && !full.is_closed() && !full.is_disconnected());
    assert!(!closed.is_full() && closed.is_closed() && closed.is_disconnected());

    let (empty, drained) = (TryRecvError::Empty, TryRecvError::Closed);
    assert!(empty.is_empty() && !empty.is_closed() && !empty.is_disconnected());
    assert!(!drained.is_empty() && drained.is_closed() && drained.is_disconnected());

    let (late, closed) = (SendTimeoutError::Timeout(1), SendTimeoutError::Closed(1));
    assert!(late.is_timeout() && !late.is_closed() && !late.is_disconnected());
    assert!(!closed.is_timeout() && closed.is_closed() && closed.is_disconnected());

    let (late, closed) = (RecvTimeoutError::Timeout, RecvTimeoutError::Closed);
    assert!(late.is_timeout() && !late.is_closed() && !late.is_disconnected());
    assert!(!closed.is_timeout() && closed.is_closed() && closed.is_disconnected());

    // And as a channel produces them.
    let c = Chan::<u8>::new(0);
    assert!(c
        .send_timeout(1, Duration::from_millis(1))
        .unwrap_err()
        .is_timeout());
    assert!(c
        .recv_timeout(Duration::from_millis(1))
        .unwrap_err()
        .is_timeout());
    c.close();
    assert!(c.send(1).unwrap_err().is_disconnected());
    assert!(c.recv().unwrap_err().is_disconnected());
    assert!(c.send_timeout(1, Duration::MAX).unwrap_err().is_closed());
    assert!(c.recv_timeout(Duration::MAX).unwrap_err().is_closed());
}

fn counts_follow_clones_and_drops<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(1, p);
    assert_eq!((c.sender_count(), c.receiver_count()), (1, 1));
    let c2 = c.clone();
    assert_eq!((c.sender_count(), c.receiver_count()), (2, 2));
    let (tx, rx) = c2.split();
    assert_eq!((tx.sender_count(), rx.receiver_count()), (2, 2));
    let (tx2, rx2, rx3) = (tx.clone(), rx.clone(), rx.clone());
    assert_eq!((c.sender_count(), c.receiver_count()), (3, 4));
    let weak = tx.downgrade();
    assert_eq!(c.sender_count(), 3, "a weak sender is not counted");
    drop((tx, tx2, rx2, rx3));
    assert_eq!((c.sender_count(), c.receiver_count()), (1, 2));
    let upgraded = weak.upgrade().expect("the Chan handle still sends");
    assert_eq!(upgraded.sender_count(), 2);
    drop((c, upgraded));
    assert_eq!((rx.sender_count(), rx.receiver_count()), (0, 1));
    assert!(rx.is_closed());
}

fn a_weak_sender_does_not_keep_the_channel_open<S: Strategy>(p: S::Params) {
    let (tx, rx) = Chan::<u32, S>::with_params(4, p).split();
    let weak: WeakSender<u32, S> = tx.downgrade();
    let weak2 = weak.clone();
    let up = weak.upgrade().unwrap();
    up.send(1).unwrap();
    drop(tx);
    assert!(!rx.is_closed(), "the upgraded sender keeps it open");
    up.send(2).unwrap();
    drop(up);
    assert!(rx.is_closed(), "weak senders alone do not keep it open");
    assert!(weak.upgrade().is_none());
    assert!(weak2.upgrade().is_none());
    assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    // A receiver blocked when the last strong sender goes wakes up, weak senders or not.
    let (tx, rx) = Chan::<u32, S>::new(0).split();
    let weak = tx.downgrade();
    let t = thread::spawn(move || rx.recv());
    thread::sleep(Duration::from_millis(5));
    drop(tx);
    assert_eq!(t.join().unwrap(), Err(RecvError));
    assert!(weak.upgrade().is_none());
    // Once every handle has gone, the weak sender holds nothing.
    let (tx, rx) = Chan::<Arc<()>, S>::new(1).split();
    let value = Arc::new(());
    tx.send(value.clone()).unwrap();
    let weak = tx.downgrade();
    drop((tx, rx));
    assert_eq!(Arc::strong_count(&value), 1, "the buffered value is gone");
    assert!(weak.upgrade().is_none());
    assert_eq!(format!("{weak:?}"), "WeakSender { .. }");
}

/// A weak sender upgraded while the last strong sender drops: either the upgrade wins (and the
/// channel stays open until its sender goes) or it returns `None` (and the channel is closed).
/// Never a sender on a channel that closed because its senders were gone, and the receiver
/// sees the end exactly once the last sender, upgraded or not, has gone.
fn upgrade_races_the_last_sender_drop<S: Strategy>(p: S::Params) {
    let rounds = testkit::count(2000, 10, 10);
    let (mut won, mut lost) = (0, 0);
    for _ in 0..rounds {
        let (tx, rx) = Chan::<u32, S>::with_params(1, p).split();
        let weak = tx.downgrade();
        let go = Arc::new(AtomicBool::new(false));
        let upgrader = {
            let go = go.clone();
            thread::spawn(move || {
                while !go.load(SeqCst) {
                    std::hint::spin_loop();
                }
                match weak.upgrade() {
                    Some(tx) => {
                        assert_eq!(tx.send(7), Ok(()), "an upgraded sender finds it open");
                        true
                    }
                    None => false,
                }
            })
        };
        go.store(true, SeqCst);
        drop(tx);
        let upgraded = upgrader.join().unwrap();
        if upgraded {
            won += 1;
            assert_eq!(rx.recv(), Ok(7));
        } else {
            lost += 1;
        }
        assert_eq!(rx.recv(), Err(RecvError));
        assert_eq!(rx.sender_count(), 0);
    }
    assert_eq!(won + lost, rounds);
}

/// `alt!` takes a `Chan`, a `Sender` or `Receiver`, or any reference to one (as `select!` does).
fn alt_arms_take_references_to_any_end<S: Strategy>(p: S::Params) {
    fn by_ref<S: Strategy>(c: &Chan<i32, S>, rx: &Receiver<i32, S>, tx: &Sender<i32, S>) -> i32 {
        alt! {
            recv(c) -> v => v.unwrap(),
            recv(rx) -> v => { v.unwrap() * 10 }
            send(tx, 5) -> sent => { sent.unwrap(); -1 }
        }
    }
    let c = Chan::<i32, S>::with_params(1, p);
    let (tx, rx) = Chan::<i32, S>::with_params(1, p).split();
    tx.send(4).unwrap();
    // `rx` has a value and `tx` no room: only the receive on `rx` can fire.
    assert_eq!(by_ref(&c, &rx, &tx), 40);
    c.send(3).unwrap();
    let (rc, rrx) = (&&c, &&rx);
    assert_eq!(
        alt! { recv(rc) -> v => v.unwrap(), recv(rrx) -> v => v.unwrap() * 10 },
        3
    );
    let mut m = c.clone();
    let boxed = Box::new(tx.clone());
    let shared = Arc::new(rx.clone());
    let rm = &mut m;
    assert!(alt! { send(rm, 8) -> s => s.is_ok(), default => false });
    assert_eq!(alt! { recv(&mut *rm) -> v => v, default => Ok(-1) }, Ok(8));
    assert!(alt! { send(boxed, 9) -> s => s.is_ok(), default => false });
    // A temporary lives as long as the alt.
    assert!(alt! { recv(Chan::<i32, S>::with_params(0, p)) -> _v => false, default => true });
    assert_eq!(alt! { recv(shared) -> v => v.unwrap(), default => -1 }, 9);
    // The builder takes them as well.
    let (mut a, mut b) = (None, None);
    let (rrx, rc) = (&rx, std::rc::Rc::new(&c));
    let mut alt = chan::Alt::new();
    alt.recv(&rrx, &mut a);
    alt.recv(&rc, &mut b);
    assert!(alt.try_wait().is_none());
}

#[test]
fn a_dyn_lock_channel_says_which_backend_it_is() {
    for name in ["sem", "spin:yields=10", "adaptive", "adaptive:yield_ns=0"] {
        let backend: Backend = name.parse().unwrap();
        let c = Chan::<u8, DynLock>::with_params(1, backend);
        assert_eq!(c.backend(), backend);
        assert_eq!(c.lock_params(), backend);
        let debug = format!("{c:?}");
        assert!(
            debug.contains(&format!("lock: dyn({name})")),
            "{name}: {debug}"
        );
        let (tx, rx) = c.split();
        assert_eq!((tx.backend(), rx.backend()), (backend, backend));
        assert!(format!("{tx:?}").contains(&format!("dyn({name})")));
    }
    let spin =
        Chan::<u8, locks::SpinYield>::with_params(0, locks::SpinParams::DEFAULT.with_yields(3));
    assert_eq!(
        format!("{spin:?}"),
        "Chan { lock: spin:yields=3, len: 0, capacity: 0, closed: false }"
    );
    assert!(format!("{:?}", Chan::<u8>::new(1)).contains("lock: adaptive,"));
}

/// Every value sent through upgraded weak senders from many threads arrives exactly once,
/// and the receiver's loop ends when the last strong sender and every upgrade are gone.
#[test]
fn weak_senders_from_many_threads() {
    let (tx, rx) = chan::bounded::<usize>(8);
    let sent = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let weak = tx.downgrade();
            let sent = sent.clone();
            thread::spawn(move || {
                for i in 0..1000 {
                    let Some(tx) = weak.upgrade() else { break };
                    if tx.send(t * 1000 + i).is_err() {
                        break;
                    }
                    sent.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    let mut got: Vec<_> = rx.iter().take(100).collect();
    drop(tx);
    got.extend(rx.iter());
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(got.len(), sent.load(SeqCst));
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), sent.load(SeqCst), "no value twice");
}

#[test]
fn async_alt_takes_expression_bodies() {
    let (tx, rx) = chan::bounded::<u32>(1);
    let got = futures::executor::block_on(async {
        let first = alt! { async;
            recv(&rx) -> v => v.ok(),
            default => None
        };
        tx.send(5).unwrap();
        let second = alt! { async; recv(rx) -> v => v.ok(), send(&tx, 6) -> _r => None };
        (first, second)
    });
    assert_eq!(got, (None, Some(5)));
}
