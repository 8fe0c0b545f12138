//! The async forms as users write them (as async Rust has them): streams and sinks that are `Unpin`
//! (`rx.stream().next().await`, `tx.sink().send(v).await` with no `pin!`), futures that are
//! `FusedFuture` (`futures::select!` without `.fuse()`), and futures that own their endpoint
//! (`tokio::spawn(rx.into_recv_async())`).
#![cfg(all(not(loom), feature = "stream", feature = "sink"))]

use chan::{Chan, Receiver, RecvError, SendAlt};
use futures::future::FusedFuture;
use futures::{SinkExt, StreamExt};

fn is_unpin<X: Unpin>(_: &X) {}

#[test]
fn streams_and_sinks_are_unpin() {
    let (tx, rx) = Chan::<u32>::new(4).split();
    is_unpin(&rx.stream());
    is_unpin(&tx.sink());
    futures::executor::block_on(async {
        let mut sink = tx.sink();
        sink.send(1).await.unwrap();
        sink.send(2).await.unwrap();
        drop(sink);
        let mut stream = rx.stream();
        assert_eq!(stream.next().await, Some(1));
        assert_eq!(stream.next().await, Some(2));
        drop(tx);
        assert_eq!(stream.next().await, None);
    });
}

#[test]
fn futures_are_fused() {
    let c = Chan::<u32>::new(1);
    futures::executor::block_on(async {
        let mut s = Box::pin(c.send_async(1));
        assert!(!s.is_terminated());
        s.as_mut().await.unwrap();
        assert!(s.is_terminated());
        let mut r = Box::pin(c.recv_async());
        let mut never = Box::pin(c.recv_async());
        futures::select! {
            v = r => assert_eq!(v, Ok(1)),
            _ = never => unreachable!(),
        }
        assert!(r.is_terminated() && !never.is_terminated());
    });
}

#[test]
#[cfg_attr(miri, ignore)] // tokio's multi-thread runtime: slow under Miri, and not what it checks
fn owned_futures_spawn() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = Chan::<u32>::new(0).split();
        let got = tokio::spawn(rx.clone().into_recv_async());
        tokio::spawn(tx.clone().into_send_async(9))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.await.unwrap(), Ok(9));
        // The owned futures were the endpoints' handles: dropping the last sender closes.
        drop(tx);
        assert_eq!(rx.into_recv_async().await, Err(RecvError));
    });
}

#[test]
fn a_dropped_owned_future_drops_its_endpoint() {
    let (tx, rx): (_, Receiver<u32>) = Chan::new(0).split();
    let f = tx.into_send_async(1);
    assert!(!rx.is_closed());
    drop(f);
    assert!(rx.is_closed(), "the future held the last sender");
}

#[test]
fn send_alt_futures_are_fused_and_send() {
    fn is_send<X: Send>(_: &X) {}
    let c = Chan::<u32>::new(1);
    c.send(5).unwrap();
    let mut v = None;
    let mut alt = SendAlt::new();
    alt.recv(&c, &mut v);
    let mut f = Box::pin(alt.wait_async());
    is_send(&f);
    assert!(!f.is_terminated());
    futures::executor::block_on(f.as_mut());
    assert!(f.is_terminated());
    drop(f);
    drop(alt);
    assert_eq!(v, Some(5));
}
