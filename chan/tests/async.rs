//! Async send, receive and alt: on tokio (current-thread and multi-thread), `futures`'
//! executors and a hand-rolled one (`exec/`), mixed with blocking threads on the same
//! channels, with cancellation at every point. Every behaviour runs on every backend.
//!
//! The tests in `mod miri` (`miri::asynch::spin::async_tasks_and_threads`, ...) are Miri's
//! too, sized by `count(native, miri, min)`: tasks on the hand-rolled executor against threads,
//! cancellation races, an async alt, a sink. `.ci/miri` runs them as it runs `semantics.rs`'s.
#![cfg(not(loom))]

#[path = "exec/mod.rs"]
mod exec;

use chan::{Alt, Chan, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError};
use exec::{block_on, counting_waker, poll_once, poll_some, yield_now, Exec};
use locks::Strategy;
use std::collections::HashMap;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::thread;
use std::time::Duration;
use testkit::{count, per_backend, Tracked};

per_backend! {
    asynch:
    two_tasks_on_the_hand_rolled_executor,
    closed_channel_semantics,
    a_blocking_send_wakes_a_task,
    an_async_send_completes_a_blocked_thread,
    tokio_current_thread_mixed,
    tokio_multi_thread_mixed,
    futures_local_pool,
    a_new_waker_replaces_the_old,
    a_dropped_send_future_drops_its_value_once,
    a_dropped_recv_future_gives_its_value_back,
    a_dropped_recv_future_hands_its_value_to_a_waiting_receiver,
    a_dropped_claimed_send_future_has_sent,
    async_alt_reports_a_closed_arm_last,
    a_dropped_async_alt_gives_a_received_value_back,
    a_blocking_alt_with_an_async_partner,
    counting_with_random_cancellation,
    ends_of_a_split_channel,
    a_select_of_receives_loses_nothing,
}

/// What Miri runs too (`.ci/miri` picks `miri::`): async operations on the hand-rolled
/// executor (`exec/`), mixed with threads: the task context, the waker taken at the claim and
/// put back after it, `done`, and cancellation
/// (`cargo +nightly miri test -p plan9-chan --features stream,sink --test async -- miri::`).
mod miri {
    use super::*;

    per_backend! {
        asynch:
        async_tasks_and_threads,
        async_cancellation_races_a_partner,
        async_alt_mixes_threads_and_tasks,
        async_drops_on_one_thread,
        #[cfg(feature = "sink")]
        async_sink_with_a_thread_partner,
    }
}

fn two_tasks_on_the_hand_rolled_executor<S: Strategy>(p: S::Params) {
    let n = count(2000, 50, 10) as u64;
    for nbuf in [0, 1, 10] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let got = Mutex::new(Vec::new());
        let mut ex = Exec::new();
        ex.spawn(async {
            for i in 0..n {
                c.send_async(i).await.unwrap();
            }
        });
        ex.spawn(async {
            for _ in 0..n {
                let v = c.recv_async().await.unwrap();
                got.lock().unwrap().push(v);
            }
        });
        ex.run();
        drop(ex);
        assert_eq!(got.into_inner().unwrap(), (0..n).collect::<Vec<_>>());
    }
}

fn closed_channel_semantics<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(1, p);
    block_on(c.send_async(1)).unwrap();
    c.close();
    assert_eq!(block_on(c.send_async(2)), Err(SendError(2)));
    assert_eq!(block_on(c.recv_async()), Ok(1));
    assert_eq!(block_on(c.recv_async()), Err(RecvError));

    // Close wakes a queued sender (value given back) and a queued receiver.
    let c = Chan::<u32, S>::with_params(0, p);
    let (_, waker) = counting_waker();
    let mut s = pin!(c.send_async(5));
    let d = Chan::<u32, S>::with_params(0, p);
    let mut r = pin!(d.recv_async());
    assert!(poll_once(s.as_mut(), &waker).is_pending());
    assert!(poll_once(r.as_mut(), &waker).is_pending());
    c.close();
    d.close();
    assert_eq!(
        poll_once(s.as_mut(), &waker),
        Poll::Ready(Err(SendError(5)))
    );
    assert_eq!(poll_once(r.as_mut(), &waker), Poll::Ready(Err(RecvError)));
}

fn a_blocking_send_wakes_a_task<S: Strategy>(p: S::Params) {
    let n = count(1000, 30, 5) as u64;
    for nbuf in [0, 1] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let tx = c.clone();
        let t = thread::spawn(move || (0..n).for_each(|i| tx.send(i).unwrap()));
        let got = block_on(async {
            let mut v = Vec::new();
            for _ in 0..n {
                v.push(c.recv_async().await.unwrap());
            }
            v
        });
        t.join().unwrap();
        assert_eq!(got, (0..n).collect::<Vec<_>>());
    }
}

fn an_async_send_completes_a_blocked_thread<S: Strategy>(p: S::Params) {
    let n = count(1000, 30, 5) as u64;
    for nbuf in [0, 1] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let rx = c.clone();
        let t = thread::spawn(move || (0..n).map(|_| rx.recv().unwrap()).collect::<Vec<_>>());
        block_on(async {
            for i in 0..n {
                c.send_async(i).await.unwrap();
            }
        });
        assert_eq!(t.join().unwrap(), (0..n).collect::<Vec<_>>());
    }
}

/// M sender tasks and a blocking sender thread into one channel; a receiver task and a
/// blocking receiver thread out of it: every value exactly once, each sender's in order per
/// receiver.
async fn mixed_workload<S: Strategy>(
    p: S::Params,
    nbuf: usize,
    spawn: impl Fn(
        std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u64>> + Send>>,
    ) -> tokio::task::JoinHandle<Vec<u64>>,
) {
    let n = count(500, 20, 5) as u64;
    let tasks = 3u64;
    let (tx, rx) = Chan::<u64, S>::with_params(nbuf, p).split();
    let mut senders = Vec::new();
    for s in 0..tasks {
        let tx = tx.clone();
        senders.push(spawn(Box::pin(async move {
            for i in 0..n {
                tx.send_async(s << 32 | i).await.unwrap();
            }
            Vec::new()
        })));
    }
    let thread_tx = tx.clone();
    let sender_thread = thread::spawn(move || {
        for i in 0..n {
            thread_tx.send(tasks << 32 | i).unwrap();
        }
    });
    drop(tx);
    let rx2 = rx.clone();
    let receiver_thread = thread::spawn(move || rx2.iter().collect::<Vec<_>>());
    let receiver_task = spawn(Box::pin(async move {
        let mut got = Vec::new();
        while let Ok(v) = rx.recv_async().await {
            got.push(v);
        }
        got
    }));
    for s in senders {
        s.await.unwrap();
    }
    sender_thread.join().unwrap();
    let a = receiver_task.await.unwrap();
    let b = receiver_thread.join().unwrap();
    check_exactly_once_in_order(&[a, b], tasks + 1, n);
}

/// `tokio::select!` over receive futures (the `Send` way to wait on several channels in a
/// multi-thread runtime's task, where `Alt` cannot go): every losing future is dropped, and
/// one that had already been handed a value gives it back, so the one receiver still gets
/// every value once and each sender's in order. Senders are tasks and a thread.
fn a_select_of_receives_loses_nothing<S: Strategy>(p: S::Params) {
    let n = count(2000, 50, 10) as u64;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    for nbuf in [0, 1, 10] {
        let (atx, arx) = Chan::<u64, S>::with_params(nbuf, p).split();
        let (btx, brx) = Chan::<u64, S>::with_params(nbuf, p).split();
        let got = rt.block_on(async move {
            let thread_tx = atx.clone();
            let thread =
                thread::spawn(move || (0..n).for_each(|i| thread_tx.send(2 << 32 | i).unwrap()));
            let mut senders = Vec::new();
            for (s, tx) in [(0, atx), (1, btx)] {
                senders.push(tokio::spawn(async move {
                    for i in 0..n {
                        tx.send_async(s << 32 | i).await.unwrap();
                    }
                }));
            }
            let receiver = tokio::spawn(async move {
                let (mut got, mut a_open, mut b_open) = (Vec::new(), true, true);
                while a_open || b_open {
                    tokio::select! {
                        v = arx.recv_async(), if a_open => match v {
                            Ok(v) => got.push(v),
                            Err(_) => a_open = false,
                        },
                        v = brx.recv_async(), if b_open => match v {
                            Ok(v) => got.push(v),
                            Err(_) => b_open = false,
                        },
                    }
                }
                got
            });
            for s in senders {
                s.await.unwrap();
            }
            thread.join().unwrap();
            receiver.await.unwrap()
        });
        check_exactly_once_in_order(&[got], 3, n);
    }
}

fn check_exactly_once_in_order(received: &[Vec<u64>], senders: u64, n: u64) {
    let mut seen = HashMap::new();
    for got in received {
        let mut last = HashMap::new();
        for &v in got {
            let (s, i) = (v >> 32, v & 0xffff_ffff);
            if let Some(&prev) = last.get(&s) {
                assert!(i > prev, "sender {s}: {i} after {prev}");
            }
            last.insert(s, i);
            assert!(seen.insert(v, ()).is_none(), "{v:#x} received twice");
        }
    }
    assert_eq!(seen.len() as u64, senders * n, "values lost");
}

fn tokio_current_thread_mixed<S: Strategy>(p: S::Params) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for nbuf in [0, 1, 10] {
        rt.block_on(mixed_workload::<S>(p, nbuf, |f| tokio::spawn(f)));
    }
}

fn tokio_multi_thread_mixed<S: Strategy>(p: S::Params) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    for nbuf in [0, 1, 10] {
        rt.block_on(mixed_workload::<S>(p, nbuf, |f| tokio::spawn(f)));
    }
}

fn futures_local_pool<S: Strategy>(p: S::Params) {
    use futures::task::LocalSpawnExt;
    let n = count(500, 20, 5) as u64;
    for nbuf in [0, 3] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let mut pool = futures::executor::LocalPool::new();
        let spawner = pool.spawner();
        let got = Arc::new(Mutex::new(Vec::new()));
        for s in 0..2u64 {
            let c = c.clone();
            spawner
                .spawn_local(async move {
                    for i in 0..n {
                        c.send_async(s << 32 | i).await.unwrap();
                    }
                })
                .unwrap();
        }
        let (c2, got2) = (c.clone(), got.clone());
        spawner
            .spawn_local(async move {
                for _ in 0..2 * n {
                    let v = c2.recv_async().await.unwrap();
                    got2.lock().unwrap().push(v);
                }
            })
            .unwrap();
        pool.run();
        let got = got.lock().unwrap().clone();
        check_exactly_once_in_order(&[got], 2, n);
    }
}

fn a_new_waker_replaces_the_old<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let (a, wa) = counting_waker();
    let (b, wb) = counting_waker();
    let mut r = pin!(c.recv_async());
    assert!(poll_once(r.as_mut(), &wa).is_pending());
    assert!(poll_once(r.as_mut(), &wb).is_pending());
    // The same waker again: nothing changes.
    assert!(poll_once(r.as_mut(), &wb).is_pending());
    c.nbsend(9).unwrap(); // a receiver waits, so a rendezvous nbsend succeeds
    assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (0, 1));
    assert_eq!(poll_once(r.as_mut(), &wb), Poll::Ready(Ok(9)));

    // The same for a sender, woken by a blocking receive.
    let mut s = pin!(c.send_async(4));
    assert!(poll_once(s.as_mut(), &wa).is_pending());
    assert!(poll_once(s.as_mut(), &wb).is_pending());
    assert_eq!(c.recv(), Ok(4));
    assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (0, 2));
    assert_eq!(poll_once(s.as_mut(), &wb), Poll::Ready(Ok(())));
}

fn a_dropped_send_future_drops_its_value_once<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let c = Chan::<Tracked, S>::with_params(0, p);
    let (_, w) = counting_waker();
    // Never polled.
    drop(c.send_async(Tracked::new(1, &drops)));
    assert_eq!(drops.load(SeqCst), 1);
    // Queued, then dropped: unlinked, value dropped once, the channel as before.
    {
        let mut s = Box::pin(c.send_async(Tracked::new(2, &drops)));
        assert!(poll_once(s.as_mut(), &w).is_pending());
        assert_eq!(drops.load(SeqCst), 1);
    }
    assert_eq!(drops.load(SeqCst), 2);
    assert!(matches!(c.nbrecv(), Err(TryRecvError::Empty)));
    // Closed while queued, then dropped without a poll: the value is dropped once.
    {
        let mut s = Box::pin(c.send_async(Tracked::new(3, &drops)));
        assert!(poll_once(s.as_mut(), &w).is_pending());
        c.close();
    }
    assert_eq!(drops.load(SeqCst), 3);
}

fn a_dropped_recv_future_gives_its_value_back<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1, 4] {
        let c = Chan::<u32, S>::with_params(nbuf, p);
        let (_, w) = counting_waker();
        {
            let mut r = Box::pin(c.recv_async());
            assert!(poll_once(r.as_mut(), &w).is_pending());
            c.nbsend(1).unwrap(); // handed straight to the queued future
            if nbuf > 0 {
                c.nbsend(2).unwrap(); // buffered behind it
            }
        } // dropped before it could deliver 1
        assert_eq!(
            c.nbrecv(),
            Ok(1),
            "O={nbuf}: the value went back to the front"
        );
        if nbuf > 0 {
            assert_eq!(c.nbrecv(), Ok(2));
        }
        assert!(matches!(c.nbrecv(), Err(TryRecvError::Empty)));
    }
    // On a full channel with a blocked sender: the value returns in front, the sender stays
    // queued until there is room again.
    let c = Chan::<u32, S>::with_params(1, p);
    let (_, w) = counting_waker();
    {
        let mut r = Box::pin(c.recv_async());
        assert!(poll_once(r.as_mut(), &w).is_pending());
        c.nbsend(1).unwrap();
        c.nbsend(2).unwrap();
        let mut s = Box::pin(c.send_async(3));
        assert!(poll_once(s.as_mut(), &w).is_pending());
        drop(r);
        assert_eq!(c.recv(), Ok(1));
        assert_eq!(c.recv(), Ok(2));
        assert_eq!(c.recv(), Ok(3));
        assert_eq!(poll_once(s.as_mut(), &w), Poll::Ready(Ok(())));
    }
}

fn a_dropped_recv_future_hands_its_value_to_a_waiting_receiver<S: Strategy>(p: S::Params) {
    let c = Chan::<u32, S>::with_params(0, p);
    let (_, w) = counting_waker();
    let (b, wb) = counting_waker();
    let mut r1 = Box::pin(c.recv_async());
    let mut r2 = Box::pin(c.recv_async());
    assert!(poll_once(r1.as_mut(), &w).is_pending());
    assert!(poll_once(r2.as_mut(), &wb).is_pending());
    c.nbsend(7).unwrap(); // to r1, the first queued
    drop(r1);
    assert_eq!(b.0.load(SeqCst), 1, "the next receiver was woken");
    assert_eq!(poll_once(r2.as_mut(), &wb), Poll::Ready(Ok(7)));
}

fn a_dropped_claimed_send_future_has_sent<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let c = Chan::<Tracked, S>::with_params(0, p);
    let (_, w) = counting_waker();
    let mut s = Box::pin(c.send_async(Tracked::new(1, &drops)));
    assert!(poll_once(s.as_mut(), &w).is_pending());
    let v = c.recv().unwrap(); // takes the queued value, claims the future
    drop(s);
    assert_eq!((v.id, drops.load(SeqCst)), (1, 0));
    drop(v);
    assert_eq!(drops.load(SeqCst), 1);
}

/// An async alt over two channels fed by a blocking thread and a task: every value once, each
/// sender's in order.
fn async_alt_mixes_threads_and_tasks<S: Strategy>(p: S::Params) {
    let n = count(300, 4, 2) as u64;
    let (a, b) = (
        Chan::<u64, S>::with_params(0, p),
        Chan::<u64, S>::with_params(1, p),
    );
    // A blocking thread sends on `a`; a task sends on `b`; a task alts over both.
    let ta = a.clone();
    let t = thread::spawn(move || (0..n).for_each(|i| ta.send(i).unwrap()));
    let got = Mutex::new(Vec::new());
    let mut ex = Exec::new();
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
    check_exactly_once_in_order(&[got], 2, n);
}

fn async_alt_reports_a_closed_arm_last<S: Strategy>(p: S::Params) {
    let (a, b) = (
        Chan::<u32, S>::with_params(1, p),
        Chan::<u32, S>::with_params(1, p),
    );
    a.close();
    b.send(3).unwrap();
    let (mut x, mut y) = (None, None);
    let mut alt = Alt::new();
    alt.recv(&a, &mut x);
    let bi = alt.recv(&b, &mut y);
    let fired = block_on(alt.wait_async());
    assert_eq!((fired.index, fired.closed), (bi, false));
    let fired = block_on(alt.wait_async());
    assert_eq!((fired.index, fired.closed), (0, true));
    drop(alt);
    assert_eq!((x, y), (None, Some(3)));

    // Closed while the alt waits: it wakes with the closed arm.
    let c = Chan::<u32, S>::with_params(0, p);
    let (_, w) = counting_waker();
    let mut slot = None;
    let mut alt = Alt::new();
    alt.recv(&c, &mut slot);
    let mut f = Box::pin(alt.wait_async());
    assert!(poll_once(f.as_mut(), &w).is_pending());
    c.close();
    let Poll::Ready(fired) = poll_once(f.as_mut(), &w) else {
        panic!("close wakes the alt")
    };
    assert!(fired.closed);
}

fn a_dropped_async_alt_gives_a_received_value_back<S: Strategy>(p: S::Params) {
    let drops = Arc::new(AtomicUsize::new(0));
    let (a, b) = (
        Chan::<u32, S>::with_params(0, p),
        Chan::<Tracked, S>::with_params(0, p),
    );
    let (_, w) = counting_waker();
    let (mut x, mut y) = (None, Some(Tracked::new(1, &drops)));
    {
        let mut alt = Alt::new();
        alt.recv(&a, &mut x);
        alt.send(&b, &mut y);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_once(f.as_mut(), &w).is_pending());
        a.nbsend(5).unwrap(); // fires the receive arm
    } // dropped before it could report it
    assert_eq!(
        x, None,
        "not left in the arm, where the next wait would drop it"
    );
    assert_eq!(a.nbrecv(), Ok(5), "back in the channel");
    assert_eq!(
        y.as_ref().map(|t| t.id),
        Some(1),
        "the unsent value is back in its place"
    );
    assert_eq!(drops.load(SeqCst), 0);

    // Not yet fired: dropped and unlinked, nothing queued is left behind.
    {
        let mut alt = Alt::new();
        alt.recv(&a, &mut x);
        alt.send(&b, &mut y);
        let mut f = Box::pin(alt.wait_async());
        assert!(poll_once(f.as_mut(), &w).is_pending());
    }
    assert!(a.nbsend(1).is_err() && b.nbrecv().is_err());
    assert_eq!(y.map(|t| t.id), Some(1));
}

fn a_blocking_alt_with_an_async_partner<S: Strategy>(p: S::Params) {
    let n = count(300, 10, 4) as u64;
    let (a, b) = (
        Chan::<u64, S>::with_params(0, p),
        Chan::<u64, S>::with_params(0, p),
    );
    let (ta, tb) = (a.clone(), b.clone());
    let t = thread::spawn(move || {
        let mut got = Vec::new();
        for _ in 0..2 * n {
            let (mut x, mut y) = (None, None);
            let mut alt = Alt::new();
            alt.recv(&ta, &mut x);
            alt.recv(&tb, &mut y);
            alt.wait();
            drop(alt);
            got.push(x.or(y).unwrap());
        }
        got
    });
    let mut ex = Exec::new();
    ex.spawn(async {
        for i in 0..n {
            a.send_async(i).await.unwrap();
        }
    });
    ex.spawn(async {
        for i in 0..n {
            b.send_async(1 << 32 | i).await.unwrap();
        }
    });
    ex.run();
    check_exactly_once_in_order(&[t.join().unwrap()], 2, n);
}

/// Every value either received once or dropped unsent once; each sender's values arrive in
/// order; sends, receives and alts are cancelled at random points, on a multi-thread runtime
/// with blocking threads on the same channel.
fn counting_with_random_cancellation<S: Strategy>(p: S::Params) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let n = count(400, 15, 5) as u64;
    for nbuf in [0, 1, 8] {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = Chan::<Tracked, S>::with_params(nbuf, p).split();
        let received = rt.block_on(async {
            let mut senders = Vec::new();
            for s in 0..3u64 {
                let (tx, drops) = (tx.clone(), drops.clone());
                senders.push(tokio::spawn(async move {
                    let mut rng = s * 0x9e37_79b9 + 1;
                    let mut unsent = 0u64;
                    for i in 0..n {
                        let polls = (xorshift(&mut rng) % 4) as usize;
                        let v = Tracked::new(s << 32 | i, &drops);
                        if poll_some(tx.send_async(v), polls).await.is_none() {
                            unsent += 1; // sent or dropped: the counts tell
                        }
                    }
                    unsent
                }));
            }
            let thread_tx = tx.clone();
            let thread_drops = drops.clone();
            let sender_thread = thread::spawn(move || {
                for i in 0..n {
                    thread_tx
                        .send(Tracked::new(3 << 32 | i, &thread_drops))
                        .unwrap();
                }
            });
            drop(tx);
            let receiver = tokio::spawn(async move {
                let mut rng = 77u64;
                let mut got = Vec::new();
                loop {
                    let polls = (xorshift(&mut rng) % 4) as usize;
                    match poll_some(rx.recv_async(), polls.max(1)).await {
                        Some(Ok(v)) => got.push(v.id),
                        Some(Err(RecvError)) => break,
                        None => {}
                    }
                }
                got
            });
            for s in senders {
                s.await.unwrap();
            }
            sender_thread.join().unwrap();
            receiver.await.unwrap()
        });
        // Each received value was dropped by the receiver; each unsent one by its future.
        let total = 4 * n as usize;
        assert_eq!(
            drops.load(SeqCst),
            total,
            "O={nbuf}: every value dropped exactly once"
        );
        let mut last = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for v in &received {
            assert!(seen.insert(*v), "{v:#x} received twice");
            let (s, i) = (v >> 32, v & 0xffff_ffff);
            if let Some(&prev) = last.get(&s) {
                assert!(i > prev, "O={nbuf}: sender {s}: {i} after {prev}");
            }
            last.insert(s, i);
        }
        // The thread's sends are never cancelled: all of them arrive.
        assert_eq!(received.iter().filter(|v| *v >> 32 == 3).count() as u64, n);
    }
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn ends_of_a_split_channel<S: Strategy>(p: S::Params) {
    let (tx, rx) = Chan::<u32, S>::with_params(2, p).split();
    let got = block_on(async move {
        let t = async move {
            for i in 0..5 {
                tx.send_async(i).await.unwrap();
                yield_now().await;
            }
            // `tx` goes: the receiver's loop ends.
        };
        let r = async {
            let mut got = Vec::new();
            while let Ok(v) = rx.recv_async().await {
                got.push(v);
            }
            got
        };
        futures::join!(t, r).1
    });
    assert_eq!(got, [0, 1, 2, 3, 4]);
}

#[cfg(feature = "stream")]
#[test]
fn a_receiver_as_a_stream() {
    use futures::StreamExt;
    let (tx, rx) = Chan::<u32>::new(0).split();
    let t = thread::spawn(move || (0..100).for_each(|i| tx.send(i).unwrap()));
    let sum = block_on(async {
        let mut s = pin!(rx.stream());
        let mut sum = 0;
        while let Some(v) = s.next().await {
            sum += v;
        }
        sum
    });
    t.join().unwrap();
    assert_eq!(sum, 4950);
    assert_eq!(block_on(rx.into_stream().count()), 0);
}

/// The sink: items in order to a blocking receiver, a closed channel's refusal with the item
/// given back, and a sink dropped with an item queued drops it once and leaves the channel
/// as it was; on every backend.
#[cfg(feature = "sink")]
mod sink {
    use super::*;
    use futures::future::poll_fn;
    use futures::sink::{Sink, SinkExt};

    per_backend! {
        sink:
        a_sender_as_a_sink,
        a_sink_into_a_closed_channel_gives_the_item_back,
        a_dropped_sink_drops_its_item_once,
    }

    fn a_sender_as_a_sink<S: Strategy>(p: S::Params) {
        let n = count(2000, 50, 10) as u64;
        for nbuf in [0, 1, 10] {
            let (tx, rx) = Chan::<u64, S>::with_params(nbuf, p).split();
            let receiver = thread::spawn(move || rx.iter().collect::<Vec<_>>());
            let tx2 = tx.clone();
            block_on(async {
                {
                    let mut borrowed = pin!(tx2.sink());
                    borrowed.send(0).await.unwrap();
                }
                drop(tx2);
                let mut sink = pin!(tx.into_sink());
                for i in 1..n {
                    sink.feed(i).await.unwrap();
                }
                sink.flush().await.unwrap();
                sink.close().await.unwrap();
            });
            assert_eq!(receiver.join().unwrap(), (0..n).collect::<Vec<_>>());
        }
    }

    fn a_sink_into_a_closed_channel_gives_the_item_back<S: Strategy>(p: S::Params) {
        let c = Chan::<u32, S>::with_params(0, p);
        let (_, w) = counting_waker();
        let mut sink = pin!(c.sink());
        let ready = poll_once(pin!(poll_fn(|cx| sink.as_mut().poll_ready(cx))), &w);
        assert_eq!(ready, Poll::Ready(Ok(())));
        sink.as_mut().start_send(7).unwrap();
        {
            // Queued (no receiver), then the close gives the item back.
            let mut flush = pin!(poll_fn(|cx| sink.as_mut().poll_flush(cx)));
            assert!(poll_once(flush.as_mut(), &w).is_pending());
            c.close();
            assert_eq!(
                poll_once(flush.as_mut(), &w),
                Poll::Ready(Err(SendError(7)))
            );
        }
        // Closed already: refused on the first poll.
        sink.as_mut().start_send(8).unwrap();
        let closed = block_on(poll_fn(|cx| sink.as_mut().poll_close(cx)));
        assert_eq!(closed, Err(SendError(8)));
    }

    fn a_dropped_sink_drops_its_item_once<S: Strategy>(p: S::Params) {
        let drops = Arc::new(AtomicUsize::new(0));
        let c = Chan::<Tracked, S>::with_params(0, p);
        let (_, w) = counting_waker();
        // Kept, never flushed.
        {
            let mut sink = pin!(c.sink());
            sink.as_mut().start_send(Tracked::new(1, &drops)).unwrap();
        }
        assert_eq!(drops.load(SeqCst), 1);
        // Queued on the channel, then dropped: unlinked, the item dropped once.
        {
            let mut sink = Box::pin(c.sink());
            sink.as_mut().start_send(Tracked::new(2, &drops)).unwrap();
            let mut flush = pin!(poll_fn(|cx| sink.as_mut().poll_flush(cx)));
            assert!(poll_once(flush.as_mut(), &w).is_pending());
            assert_eq!(drops.load(SeqCst), 1);
        }
        assert_eq!(drops.load(SeqCst), 2);
        assert!(matches!(c.nbrecv(), Err(TryRecvError::Empty)));
        // Taken by a receiver while queued, then dropped: sent, not dropped by the sink.
        {
            let mut sink = Box::pin(c.sink());
            sink.as_mut().start_send(Tracked::new(3, &drops)).unwrap();
            let mut flush = pin!(poll_fn(|cx| sink.as_mut().poll_flush(cx)));
            assert!(poll_once(flush.as_mut(), &w).is_pending());
            let got = c.recv().unwrap();
            assert_eq!(drops.load(SeqCst), 2);
            drop(got);
        }
        assert_eq!(drops.load(SeqCst), 3);
    }
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
