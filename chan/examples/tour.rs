//! The conventions a user reaches for first, in one program (CI runs it): `bounded` and
//! `unbounded` ends, `try_send`/`try_recv`, a `SendAlt` awaited inside `tokio::spawn` on the
//! multi-thread runtime, `rx.stream().next().await` with no `pin!`, and a weak sender that
//! does not keep the channel open.
//!
//! `cargo run -p plan9-chan --features stream --example tour`

use futures::StreamExt;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // A pipeline of threads over bounded ends.
    let (tx, rx) = chan::bounded::<u32>(4);
    let producer = std::thread::spawn(move || (1..=100).try_for_each(|i| tx.send(i)));
    let (sum_tx, sum_rx) = chan::unbounded::<u32>();
    let summer = std::thread::spawn(move || sum_tx.send(rx.iter().sum()));
    producer.join().unwrap().unwrap();
    summer.join().unwrap().unwrap();
    assert_eq!(sum_rx.try_recv(), Ok(5050));
    assert!(sum_rx.try_recv().unwrap_err().is_disconnected());

    // try_send on a full channel gives the value back.
    let (tx, rx) = chan::bounded::<&str>(1);
    tx.try_send("first").unwrap();
    let err = tx.try_send("second").unwrap_err();
    assert!(err.is_full());
    assert_eq!(rx.try_recv(), Ok("first"));

    // An alt of `Send` arms inside a spawned task: whichever of two channels is ready first.
    let (a_tx, a_rx) = chan::bounded::<u32>(0);
    let (b_tx, b_rx) = chan::bounded::<String>(0);
    let relay = tokio::spawn(async move {
        let mut got = Vec::new();
        for _ in 0..2 {
            let (mut n, mut s) = (None, None);
            let mut alt = chan::SendAlt::new();
            alt.recv(&a_rx, &mut n);
            alt.recv(&b_rx, &mut s);
            alt.wait_async().await;
            drop(alt);
            got.push(n.map(|n| n.to_string()).or(s).unwrap());
        }
        got.sort();
        got
    });
    a_tx.send_async(7).await.unwrap();
    b_tx.send_async("seven".to_string()).await.unwrap();
    assert_eq!(relay.await.unwrap(), ["7", "seven"]);

    // A stream of received values, and a weak sender that does not keep the channel open.
    let (tx, rx) = chan::bounded::<u32>(8);
    let weak = tx.downgrade();
    let feeder = tokio::spawn(async move {
        for i in 0..5 {
            tx.send_async(i).await.unwrap();
        }
        // `tx`, the only strong sender, goes here: the channel closes once drained.
    });
    let mut stream = rx.stream();
    let mut seen = Vec::new();
    while let Some(v) = stream.next().await {
        seen.push(v);
    }
    feeder.await.unwrap();
    assert_eq!(seen, [0, 1, 2, 3, 4]);
    assert!(
        weak.upgrade().is_none(),
        "the channel closed with its last sender"
    );
    println!("tour: ok");
}
