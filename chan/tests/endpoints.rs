//! `Sender`/`Receiver` from `Chan::split`: dropping the last of either side closes the
//! channel, whoever is blocked on the other side (plainly or in an alt) wakes, and nothing is
//! lost or dropped twice; and unbounded channels.
#![cfg(not(loom))]

use chan::{Alt, Chan, RecvError, SendError, TrySendError};
use locks::Strategy;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use testkit::{per_backend, Tracked};

per_backend! {
    endpoints:
    last_sender_dropped_ends_a_blocked_receiver,
    last_sender_dropped_ends_a_receiving_alt,
    a_panicking_sender_thread_ends_the_receivers_loop,
    last_receiver_dropped_fails_a_blocked_sender,
    last_receiver_dropped_ends_a_sending_alt,
    last_receiver_dropped_drops_the_buffer,
    a_chan_handle_counts_as_both_ends,
    clones_keep_their_side_open,
    unbounded_never_blocks_and_gives_memory_back,
}

/// Spins until `f` holds, yielding: for waiting until a thread has blocked, observed through
/// the channel's own state, never through timing.
fn until(f: impl Fn() -> bool) {
    while !f() {
        thread::yield_now();
    }
}

fn last_sender_dropped_ends_a_blocked_receiver<S: Strategy>(p: S::Params) {
    for nbuf in [0, 3] {
        let (tx, rx) = Chan::<u32, S>::with_params(nbuf, p).split();
        let tx2 = tx.clone();
        let receiver = thread::spawn(move || rx.iter().collect::<Vec<_>>());
        if nbuf > 0 {
            tx.send(1).unwrap();
        }
        drop(tx);
        assert!(!tx2.is_closed(), "one sender is still there");
        drop(tx2);
        let got = receiver.join().unwrap();
        assert_eq!(got, if nbuf > 0 { vec![1] } else { vec![] });
    }
}

fn last_sender_dropped_ends_a_receiving_alt<S: Strategy>(p: S::Params) {
    let (tx, rx) = Chan::<u32, S>::with_params(0, p).split();
    let other = Chan::<u32, S>::with_params(0, p);
    let alt = {
        let other = other.clone();
        thread::spawn(move || {
            let (mut a, mut b) = (None, None);
            let mut alt = Alt::new();
            alt.recv(&other, &mut a);
            let i = alt.recv(&rx, &mut b);
            let fired = alt.wait();
            drop(alt);
            (fired, i, a, b)
        })
    };
    drop(tx);
    let (fired, i, a, b) = alt.join().unwrap();
    assert_eq!((fired.index, fired.closed, a, b), (i, true, None, None));
}

fn a_panicking_sender_thread_ends_the_receivers_loop<S: Strategy>(p: S::Params) {
    let (tx, rx) = Chan::<u32, S>::with_params(1, p).split();
    let sender = thread::spawn(move || {
        tx.send(7).unwrap();
        panic!("the sender dies before closing anything");
    });
    assert_eq!(rx.iter().collect::<Vec<_>>(), [7]);
    assert!(sender.join().is_err());
    assert_eq!(rx.recv(), Err(RecvError));
}

fn last_receiver_dropped_fails_a_blocked_sender<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1] {
        let (tx, rx) = Chan::<u32, S>::with_params(nbuf, p).split();
        (0..nbuf as u32).for_each(|i| tx.send(i).unwrap());
        let sender = {
            let tx = tx.clone();
            thread::spawn(move || tx.send(99))
        };
        drop(rx);
        assert_eq!(
            sender.join().unwrap(),
            Err(SendError(99)),
            "the value comes back"
        );
        assert_eq!(tx.send(5), Err(SendError(5)));
        assert_eq!(tx.nbsend(6), Err(TrySendError::Closed(6)));
    }
}

fn last_receiver_dropped_ends_a_sending_alt<S: Strategy>(p: S::Params) {
    let (tx, rx) = Chan::<u32, S>::with_params(0, p).split();
    let alt = thread::spawn(move || {
        let mut v = Some(3);
        let mut alt = Alt::new();
        alt.send(&tx, &mut v);
        let fired = alt.wait();
        drop(alt);
        (fired.closed, v)
    });
    drop(rx);
    assert_eq!(
        alt.join().unwrap(),
        (true, Some(3)),
        "the unsent value stays in place"
    );
}

fn last_receiver_dropped_drops_the_buffer<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = Chan::<Tracked, S>::with_params(4, p).split();
    for i in 0..3 {
        tx.send(Tracked::new(i, &drops)).unwrap();
    }
    let rx2 = rx.clone();
    drop(rx);
    assert_eq!(drops.load(SeqCst), 0, "a receiver is still there");
    drop(rx2);
    assert_eq!(drops.load(SeqCst), 3, "dropped when the last receiver went");
    let back = tx.send(Tracked::new(9, &drops)).unwrap_err().0;
    assert_eq!(back.id, 9);
    drop((back, tx));
    assert_eq!(drops.load(SeqCst), 4, "each value exactly once");
}

fn a_chan_handle_counts_as_both_ends<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(2, p);
    let (tx, rx) = c.clone().split();
    drop(tx);
    assert!(!c.is_closed(), "the Chan handle still counts as a sender");
    c.send(1).unwrap();
    drop(rx);
    assert!(!c.is_closed(), "and as a receiver");
    assert_eq!(c.recv(), Ok(1));
    drop(c);
}

fn clones_keep_their_side_open<S: Strategy>(p: S::Params) {
    let (tx, rx) = Chan::<u32, S>::with_params(8, p).split();
    let senders: Vec<_> = (0..4)
        .map(|k| {
            let tx = tx.clone();
            thread::spawn(move || (0..100).for_each(|i| tx.send(k * 1000 + i).unwrap()))
        })
        .collect();
    drop(tx);
    let receivers: Vec<_> = (0..2)
        .map(|_| {
            let rx = rx.clone();
            thread::spawn(move || rx.into_iter().collect::<Vec<_>>())
        })
        .collect();
    drop(rx);
    senders.into_iter().for_each(|s| s.join().unwrap());
    let mut got: Vec<u32> = receivers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    got.sort_unstable();
    let mut want: Vec<u32> = (0..4)
        .flat_map(|k| (0..100).map(move |i| k * 1000 + i))
        .collect();
    want.sort_unstable();
    assert_eq!(
        got, want,
        "every value once; the receivers' loops ended with the senders"
    );
}

fn unbounded_never_blocks_and_gives_memory_back<S: Strategy>(p: S::Params) {
    let c = Chan::<u64, S>::unbounded_with_params(p);
    assert_eq!(c.capacity(), usize::MAX);
    assert!(!c.is_full());
    for i in 0..100_000 {
        c.nbsend(i).unwrap();
    }
    assert_eq!(c.len(), 100_000);
    let (tx, rx) = c.split();
    let receiver = thread::spawn(move || rx.iter().sum::<u64>());
    until(|| tx.len() < 100_000);
    drop(tx);
    assert_eq!(receiver.join().unwrap(), (0..100_000).sum());
}
