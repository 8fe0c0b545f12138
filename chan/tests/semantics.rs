//! Channel semantics, checked with flags and joins, never with sleeps or timing.
#![cfg(not(loom))]

use testkit::per_backend;

use chan::{Chan, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
use locks::Strategy;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use testkit::Tracked;

per_backend! {
    semantics:
    rendezvous_send_waits_for_a_receiver,
    rendezvous_nonblocking,
    buffered_basics,
    close_semantics,
    close_wakes_blocked_parties,
    timeouts,
    drops_exactly_once,
    panicking_holder_does_not_wedge,
    iterators,
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

fn rendezvous_nonblocking<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    assert_eq!(c.nbsend(1), Err(TrySendError::Full(1)), "no receiver waits");
    assert_eq!(c.nbrecv(), Err(TryRecvError::Empty), "no sender waits");
    assert!(c.is_full() && c.is_empty() && c.capacity() == 0);
    // nbrecv succeeds once a sender is blocked in send.
    let sender = {
        let c = c.clone();
        thread::spawn(move || c.send(7))
    };
    let got = loop {
        match c.nbrecv() {
            Ok(v) => break v,
            Err(TryRecvError::Empty) => thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(got, 7);
    assert_eq!(sender.join().unwrap(), Ok(()));
    // nbsend succeeds once a receiver is blocked in recv.
    let receiver = {
        let c = c.clone();
        thread::spawn(move || c.recv())
    };
    let mut v = 9;
    loop {
        match c.nbsend(v) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) => v = back,
            Err(e) => panic!("{e}"),
        }
        thread::yield_now();
    }
    assert_eq!(receiver.join().unwrap(), Ok(9));
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

fn close_wakes_blocked_parties<S: Strategy>(p: S::Params) {
    for nbuf in [0, 2] {
        // Receivers blocked on an empty channel.
        let c = Chan::<u32, S>::with_params(nbuf, p);
        let receivers: Vec<_> = (0..3)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || c.recv())
            })
            .collect();
        c.close();
        for r in receivers {
            assert_eq!(r.join().unwrap(), Err(chan::RecvError));
        }

        // Senders blocked on a full channel get their own values back.
        let c = Chan::<u32, S>::with_params(nbuf, p);
        (0..nbuf as u32).for_each(|i| c.send(i).unwrap());
        let senders: Vec<_> = (100..103)
            .map(|v| {
                let c = c.clone();
                thread::spawn(move || (v, c.send(v)))
            })
            .collect();
        c.close();
        for s in senders {
            let (v, r) = s.join().unwrap();
            assert_eq!(r, Err(SendError(v)));
        }
        // What was buffered before the close is still there.
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            (0..nbuf as u32).collect::<Vec<_>>()
        );

        // An alt blocked on the channel reports the closed arm.
        let c = Chan::<u32, S>::with_params(nbuf, p);
        let other = Chan::<u32, S>::with_params(nbuf, p);
        let alt = {
            let (c, other) = (c.clone(), other.clone());
            thread::spawn(move || {
                let (mut a, mut b) = (None, None);
                let mut alt = chan::Alt::new();
                alt.recv(&other, &mut a);
                let i = alt.recv(&c, &mut b);
                let f = alt.wait();
                drop(alt);
                (f, i, a, b)
            })
        };
        c.close();
        let (f, i, a, b) = alt.join().unwrap();
        assert_eq!((f.index, f.closed, a, b), (i, true, None, None));
    }
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

fn drops_exactly_once<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let made;
    {
        let c = Chan::<Tracked, S>::with_params(8, p);
        let c2 = c.clone();
        for i in 0..5 {
            c.send(Tracked::new(i, &drops)).unwrap();
        }
        drop(c.recv().unwrap()); // 1 drop
        c.close();
        // Values handed back in errors are dropped by whoever gets them, once.
        let back = c.send(Tracked::new(99, &drops)).unwrap_err().into_inner();
        assert_eq!(back.id, 99);
        drop(back); // 2 drops
        let back = c2
            .nbsend(Tracked::new(98, &drops))
            .unwrap_err()
            .into_inner();
        drop(back); // 3 drops
        made = 7;
        assert_eq!(drops.load(SeqCst), 3);
        // Four values still buffered: dropped with the last handle.
    }
    assert_eq!(drops.load(SeqCst), made, "every value dropped exactly once");

    // Rendezvous: a blocked sender's value comes back on close and is dropped once.
    let drops = Arc::new(AtomicUsize::new(0));
    let c = Chan::<Tracked, S>::with_params(0, p);
    let s = {
        let (c, d) = (c.clone(), drops.clone());
        thread::spawn(move || c.send(Tracked::new(1, &d)).map_err(|e| e.into_inner().id))
    };
    c.close();
    assert_eq!(s.join().unwrap(), Err(1));
    drop(c);
    assert_eq!(drops.load(SeqCst), 1);
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
