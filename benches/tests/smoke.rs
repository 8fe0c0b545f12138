//! Every workload once, small, on every implementation: the suites must not hang or fail.

#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;

use chantest::workload::{self, Peer, Shape};
use common::mutex::{contended, for_each_lock, Counter, LockVisitor};
use common::select::Selector;

#[test]
fn every_lock_counts() {
    struct Check(Vec<String>);
    impl LockVisitor for Check {
        fn visit<C: Counter>(&mut self, name: &str) {
            let m = C::new();
            m.incr();
            assert_eq!(m.get(), 1);
            contended::<C>(3, 100, 2);
            self.0.push(name.to_owned());
        }
    }
    let mut check = Check(vec![]);
    for_each_lock(&mut check);
    assert_eq!(
        check.0,
        [
            "spin",
            "sem",
            "adaptive",
            "std",
            "parking_lot",
            "spin-crate"
        ]
    );
}

/// The `chan` suite's lanes: ours, and chantest's peers on threads, which include the ones
/// `benches/README.md` and `docs/results.md` name.
#[test]
fn every_channel_delivers() {
    let peers: Vec<Peer> = Peer::all().filter(|p| !p.on_tasks()).collect();
    let names: Vec<&str> = peers.iter().map(|p| p.name()).collect();
    for quoted in ["crossbeam", "std", "flume", "kanal"] {
        assert!(names.contains(&quoted), "{quoted} is not among {names:?}");
    }
    for nbuf in [0, 1, 10] {
        for senders in [1, 3] {
            let shape = Shape::new(nbuf, senders, 100);
            for b in locks::Backend::ALL {
                workload::ours_with(&b, shape);
            }
            for p in &peers {
                p.run(shape);
            }
        }
    }
}

#[test]
fn every_select_receives() {
    for sel in Selector::all() {
        for k in [1, 2, 4] {
            sel.ready(k, 100);
            sel.fed(k, 0, 100, 2);
            sel.fed(k, 16, 100, 2);
        }
    }
}

#[test]
fn every_condvar_and_rwlock_works() {
    use common::sync::{
        broadcast, for_each_sync, ping_pong, read_mostly, Condvars, Rw, SyncVisitor,
    };
    struct Check(Vec<String>);
    impl SyncVisitor for Check {
        fn visit<C: Condvars, R: Rw>(&mut self, name: &str) {
            ping_pong::<C>(50);
            broadcast::<C>(3, 20);
            read_mostly::<R>(3, 100, 2);
            self.0.push(name.to_owned());
        }
    }
    let mut check = Check(vec![]);
    for_each_sync(&mut check);
    assert_eq!(check.0, ["spin", "sem", "adaptive", "std", "parking_lot"]);
}
