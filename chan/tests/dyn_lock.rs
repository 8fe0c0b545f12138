//! `Chan<T, DynLock>`: a channel whose lock strategy is chosen at run time. The exactly-once
//! run over every backend is `exactly_once_dyn` in `exactly_once.rs`; here, that the chosen
//! backend's waiter (with its parameters) is the one a blocked operation uses, and the rest
//! of the surface.
#![cfg(not(loom))]

use chan::{Alt, Chan, RecvTimeoutError};
use locks::{Backend, DynLock, Strategy};
use std::thread;
use std::time::{Duration, Instant};

/// How long `recv_timeout(10 ms)` on an empty channel takes with `backend`.
fn timed_out_recv(backend: &str) -> Duration {
    let c = Chan::<u64, DynLock>::with_params(1, backend.parse().expect("a backend"));
    let start = Instant::now();
    assert_eq!(
        c.recv_timeout(Duration::from_millis(10)),
        Err(RecvTimeoutError::Timeout)
    );
    start.elapsed()
}

#[test]
#[cfg_attr(miri, ignore)] // real time
fn a_blocked_operation_waits_with_the_chosen_backends_waiter() {
    // Each waiter gives itself away by how it overshoots a 10 ms deadline: the spin waiter
    // with no yields naps `sleep_us` before it looks at the clock again, and the adaptive
    // one yields for its whole `yield_ns` budget before it does; the semaphore waiter and the
    // adaptive one with its 20 us budget return about on time. A channel that waited with
    // any waiter other than the chosen one, or with default parameters, fails one of these.
    let slow = Duration::from_millis(250);
    for (backend, overshoots) in [
        ("spin:yields=0:sleep_us=400000", true),
        ("adaptive:yield_ns=400000000", true),
        ("spin", false),
        ("sem", false),
        ("adaptive", false),
    ] {
        let took = timed_out_recv(backend);
        if overshoots {
            assert!(
                took >= slow,
                "{backend}: timed out after {took:?}, not its own waiter"
            );
        } else {
            assert!(took < slow, "{backend}: timed out after {took:?}");
        }
    }
}

#[test]
fn the_lock_and_waiter_are_the_backends() {
    for b in testkit::backends() {
        let l = DynLock::with_params(b);
        assert_eq!(l.backend(), b);
        assert_eq!(Strategy::params(&l), b);
        assert_eq!(l.waiter().name(), b.name());
        assert_eq!(l.to_string(), b.to_string());
    }
    // `new` and the `Default` of the parameters are the adaptive lock.
    assert_eq!(Backend::default(), Backend::DEFAULT);
    assert_eq!(Backend::DEFAULT.to_string(), "adaptive");
    let c = Chan::<u8, DynLock>::new(1);
    assert!(format!("{c:?}").contains("lock: dyn(adaptive)"), "{c:?}");
}

fn rendezvous_and_close(backend: Backend) {
    let c = Chan::<u64, DynLock>::with_params(0, backend);
    let n = testkit::count(2000, 50, 10) as u64;
    let tx = c.clone();
    let t = thread::spawn(move || {
        for i in 0..n {
            tx.send(i).unwrap();
        }
        tx.close();
    });
    assert!(c.iter().eq(0..n), "{backend}");
    t.join().unwrap();
}

#[test]
fn rendezvous_and_close_on_every_backend() {
    for b in testkit::backends() {
        rendezvous_and_close(b);
    }
}

#[test]
fn global_lock_and_alt_on_every_backend() {
    for b in testkit::backends() {
        let (a, d) = (
            Chan::<u64, DynLock>::with_global_lock(1, b),
            Chan::<u64, DynLock>::with_global_lock(0, b),
        );
        let tx = d.clone();
        let t = thread::spawn(move || tx.send(7).unwrap());
        let (mut x, mut y) = (None, None);
        let mut alt = Alt::new();
        alt.recv(&a, &mut x);
        let yi = alt.recv(&d, &mut y);
        assert_eq!(alt.wait().index, yi, "{b}");
        drop(alt);
        assert_eq!((x, y), (None, Some(7)), "{b}");
        t.join().unwrap();
    }
}

#[test]
fn from_the_environment() {
    // `$LOCKS_BACKEND` as a program would read it (set here only when unset, so that a run
    // under another value tests that one).
    let b = Backend::from_env("sem".parse().unwrap()).expect("a valid LOCKS_BACKEND");
    let c: Chan<&str, DynLock> = Chan::with_params(1, b);
    c.send("ok").unwrap();
    assert_eq!(c.recv(), Ok("ok"));
}
