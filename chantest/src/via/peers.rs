//! The peers as transports (`--via kanal,crossbeam,flume,std` with threads; `--via
//! kanal-async,flume-async,async-channel,tokio` with tasks, and each of those with `-mt` on
//! tokio's multi-thread runtime): other crates' channels, run by the very runner and checked by
//! the very check that run ours ([`super::chan::run_on`] for threads, [`super::task::run_on`]
//! for tasks). A peer is an adapter and nothing more: its constructor here, its send and
//! receive calls in the [`super::ends`] traits below. (Not to be confused with [`super::peer`],
//! the second process of `shm` and `signal`.)
//!
//! The peers' ends keep the contract through disconnection: a sender's end is dropped when it
//! finishes, the receiver's is dropped to hang up, and what `try_recv` still finds once every
//! sender has gone is left over. `async-channel` and tokio's mpsc have no rendezvous channel
//! (a capacity of 0 panics): at `-O 0` they run with one buffer, and the reports say so.
//!
//! Test hook: with `CHANTEST_BROKEN_PEER=1` in the environment, every peer's sending end is
//! wrapped in [`Lossy`], which drops each sender's third value: a broken adapter, which the
//! check must catch (exit 3).

use super::chan;
use super::ends::{AsyncRx, AsyncTx, Rx, Tx};
use super::spec::Spec;
use super::task::{self, Flavor};
use crate::error::Error;
use crate::model::{PeerChan, Sample};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The environment variable of the test hook (see the module docs).
pub(crate) const BROKEN_ENV: &str = "CHANTEST_BROKEN_PEER";

/// One run of the workload over `peer`'s channel.
pub(crate) fn run(peer: PeerChan, spec: &Spec<'_>) -> Result<Sample, Error> {
    use Flavor::{CurrentThread as One, MultiThread as Many};
    let n = if peer.no_rendezvous() {
        spec.nbuf.max(1)
    } else {
        spec.nbuf
    };
    match peer {
        PeerChan::Kanal => threads(kanal::bounded(n), spec),
        PeerChan::Crossbeam => threads(crossbeam_channel::bounded(n), spec),
        PeerChan::Flume => threads(flume::bounded(n), spec),
        PeerChan::Std => threads(std::sync::mpsc::sync_channel(n), spec),
        PeerChan::KanalAsync => tasks(One, kanal::bounded_async(n), spec),
        PeerChan::KanalAsyncMt => tasks(Many, kanal::bounded_async(n), spec),
        PeerChan::FlumeAsync => tasks(One, flume_async(n), spec),
        PeerChan::FlumeAsyncMt => tasks(Many, flume_async(n), spec),
        PeerChan::AsyncChannel => tasks(One, async_channel::bounded(n), spec),
        PeerChan::AsyncChannelMt => tasks(Many, async_channel::bounded(n), spec),
        PeerChan::Tokio => tasks(One, tokio::sync::mpsc::channel(n), spec),
        PeerChan::TokioMt => tasks(Many, tokio::sync::mpsc::channel(n), spec),
    }
}

/// The test hook (see the module docs).
fn broken() -> bool {
    std::env::var_os(BROKEN_ENV).is_some_and(|v| v == "1")
}

/// The thread runner on the ends `(tx, rx)`.
fn threads((tx, rx): (impl Tx<u64>, impl Rx<u64>), spec: &Spec<'_>) -> Result<Sample, Error> {
    if broken() {
        chan::run_on(Lossy::new(tx), rx, spec, |tag| tag, &mut Ok)
    } else {
        chan::run_on(tx, rx, spec, |tag| tag, &mut Ok)
    }
}

/// The task runner on the ends `(tx, rx)`, on a runtime of `flavor`.
fn tasks(
    flavor: Flavor,
    (tx, rx): (impl AsyncTx<u64>, impl AsyncRx<u64>),
    spec: &Spec<'_>,
) -> Result<Sample, Error> {
    if broken() {
        task::run_on(flavor, Lossy::new(tx), rx, spec, |tag| tag, Ok)
    } else {
        task::run_on(flavor, tx, rx, spec, |tag| tag, Ok)
    }
}

/// flume's channel with its async calls (its ends are the same types as for threads).
fn flume_async(
    n: usize,
) -> (
    FlumeAsync<flume::Sender<u64>>,
    FlumeAsync<flume::Receiver<u64>>,
) {
    let (tx, rx) = flume::bounded(n);
    (FlumeAsync(tx), FlumeAsync(rx))
}

/// A flume end used with `send_async` and `recv_async` (flume has one type of end for
/// blocking and async calls).
#[derive(Debug)]
struct FlumeAsync<E>(E);

impl<T> Clone for FlumeAsync<flume::Sender<T>> {
    fn clone(&self) -> Self {
        FlumeAsync(self.0.clone())
    }
}

/// The blocking peers: each spells sending, receiving and looking for a leftover value
/// `send(v)`, `recv()` and `try_recv()`, each returning a `Result`.
macro_rules! blocking {
    ($($tx:ty, $rx:ty;)*) => {$(
        impl<T: Send + 'static> Tx<T> for $tx {
            #[inline(always)]
            fn send(&self, v: T) -> bool {
                <$tx>::send(self, v).is_ok()
            }
        }

        impl<T: Send + 'static> Rx<T> for $rx {
            #[inline(always)]
            fn recv(&mut self) -> Option<T> {
                <$rx>::recv(self).ok()
            }

            fn leftover(self) -> Option<T> {
                self.try_recv().ok()
            }
        }
    )*};
}

blocking! {
    crossbeam_channel::Sender<T>, crossbeam_channel::Receiver<T>;
    flume::Sender<T>, flume::Receiver<T>;
    std::sync::mpsc::SyncSender<T>, std::sync::mpsc::Receiver<T>;
}

impl<T: Send + 'static> Tx<T> for kanal::Sender<T> {
    #[inline(always)]
    fn send(&self, v: T) -> bool {
        kanal::Sender::send(self, v).is_ok()
    }
}

impl<T: Send + 'static> Rx<T> for kanal::Receiver<T> {
    #[inline(always)]
    fn recv(&mut self) -> Option<T> {
        kanal::Receiver::recv(self).ok()
    }

    fn leftover(self) -> Option<T> {
        self.try_recv().ok().flatten()
    }
}

impl<T: Send + 'static> AsyncTx<T> for kanal::AsyncSender<T> {
    #[inline]
    async fn send(&self, v: T) -> bool {
        kanal::AsyncSender::send(self, v).await.is_ok()
    }
}

impl<T: Send + 'static> AsyncRx<T> for kanal::AsyncReceiver<T> {
    #[inline]
    async fn recv(&mut self) -> Option<T> {
        kanal::AsyncReceiver::recv(self).await.ok()
    }

    fn leftover(self) -> Option<T> {
        self.try_recv().ok().flatten()
    }
}

impl<T: Send + 'static> AsyncTx<T> for FlumeAsync<flume::Sender<T>> {
    #[inline]
    async fn send(&self, v: T) -> bool {
        self.0.send_async(v).await.is_ok()
    }
}

impl<T: Send + 'static> AsyncRx<T> for FlumeAsync<flume::Receiver<T>> {
    #[inline]
    async fn recv(&mut self) -> Option<T> {
        self.0.recv_async().await.ok()
    }

    fn leftover(self) -> Option<T> {
        self.0.try_recv().ok()
    }
}

impl<T: Send + 'static> AsyncTx<T> for async_channel::Sender<T> {
    #[inline]
    async fn send(&self, v: T) -> bool {
        async_channel::Sender::send(self, v).await.is_ok()
    }
}

impl<T: Send + 'static> AsyncRx<T> for async_channel::Receiver<T> {
    #[inline]
    async fn recv(&mut self) -> Option<T> {
        async_channel::Receiver::recv(self).await.ok()
    }

    fn leftover(self) -> Option<T> {
        self.try_recv().ok()
    }
}

impl<T: Send + 'static> AsyncTx<T> for tokio::sync::mpsc::Sender<T> {
    #[inline]
    async fn send(&self, v: T) -> bool {
        tokio::sync::mpsc::Sender::send(self, v).await.is_ok()
    }
}

impl<T: Send + 'static> AsyncRx<T> for tokio::sync::mpsc::Receiver<T> {
    #[inline]
    async fn recv(&mut self) -> Option<T> {
        tokio::sync::mpsc::Receiver::recv(self).await
    }

    fn leftover(mut self) -> Option<T> {
        self.try_recv().ok()
    }
}

/// A broken adapter, for the tests of the check: a sending end that drops its third value.
#[derive(Debug)]
struct Lossy<X> {
    inner: X,
    sent: AtomicU64,
}

impl<X> Lossy<X> {
    /// Which value (counting from 0) each sender loses.
    const LOST: u64 = 2;

    fn new(inner: X) -> Self {
        Lossy {
            inner,
            sent: AtomicU64::new(0),
        }
    }

    /// Whether the value being sent is the one to lose.
    fn loses(&self) -> bool {
        self.sent.fetch_add(1, Relaxed) == Self::LOST
    }
}

impl<X: Clone> Clone for Lossy<X> {
    /// Another sender's end, with a count of its own.
    fn clone(&self) -> Self {
        Lossy::new(self.inner.clone())
    }
}

impl<T, X: Tx<T>> Tx<T> for Lossy<X> {
    fn send(&self, v: T) -> bool {
        self.loses() || self.inner.send(v)
    }

    fn finish(self) {
        self.inner.finish();
    }
}

impl<T: Send, X: AsyncTx<T>> AsyncTx<T> for Lossy<X> {
    fn send(&self, v: T) -> impl Future<Output = bool> + Send {
        let lose = self.loses();
        async move { lose || self.inner.send(v).await }
    }

    fn finish(self) {
        self.inner.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(nbuf: usize, senders: usize) -> Spec<'static> {
        Spec {
            nbuf,
            senders,
            per_sender: 300,
            size: 8,
            global_lock: false,
            pin: None,
            fault: false,
        }
    }

    #[test]
    fn every_peer_delivers() {
        for peer in PeerChan::ALL {
            for (o, m) in [(0, 1), (0, 3), (4, 1), (4, 3)] {
                let s = run(peer, &spec(o, m)).unwrap_or_else(|e| panic!("{peer:?}: {e}"));
                assert!(s.ns > 0, "{peer:?} O={o} M={m}");
            }
        }
    }

    #[test]
    fn a_duplicate_is_caught_on_every_peer() {
        for peer in PeerChan::ALL {
            let e = run(
                peer,
                &Spec {
                    fault: true,
                    ..spec(1, 3)
                },
            )
            .unwrap_err();
            assert_eq!(
                e,
                Error::Violation(
                    "sender 0's value 1 arrived again, or out of order, after its value 1".into()
                ),
                "{peer:?}"
            );
        }
    }

    #[test]
    fn a_lossy_adapter_is_caught() {
        for peer in [PeerChan::Kanal, PeerChan::TokioMt] {
            let e = match peer {
                PeerChan::Kanal => {
                    let (tx, rx) = kanal::bounded(4);
                    chan::run_on(Lossy::new(tx), rx, &spec(4, 2), |t| t, &mut Ok)
                }
                _ => {
                    let (tx, rx) = tokio::sync::mpsc::channel(4);
                    task::run_on(
                        Flavor::MultiThread,
                        Lossy::new(tx),
                        rx,
                        &spec(4, 2),
                        |t| t,
                        Ok,
                    )
                }
            }
            .unwrap_err();
            assert!(
                e.to_string()
                    .contains("while 2 was expected: 1 value(s) lost"),
                "{peer:?}: {e}"
            );
        }
    }
}
