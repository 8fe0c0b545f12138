//! What the `DynLock` dispatch costs, counted in instructions: `benches/callgrind.sh`'s method
//! on the single-thread operations of the criterion group `dispatch` (`benches/locks.rs`).
//!
//! ```text
//! dispatch OP IMPL N      N times OP on IMPL, after a warm-up of 1000
//! ```
//!
//! OP is `lock` (an uncontended `*m.lock() += 1`) or `pair` (a send and a receive on one
//! thread through a channel of 10 buffers); IMPL is `adaptive` (the concrete type) or
//! `dyn-adaptive` (`DynLock` made from `Backend::DEFAULT`). Under callgrind, two values of N
//! give instructions per operation with start-up cancelled out:
//!
//! ```sh
//! cargo build --release -p benches --example dispatch
//! for n in 100000 200000; do
//!     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!         target/release/examples/dispatch pair dyn-adaptive $n 2>&1 | grep Collected
//! done   # (Ir(200000) - Ir(100000)) / 100000 = instructions per pair
//! ```

use locks::{Adaptive, Backend, DynLock, Strategy};
use std::hint::black_box;

fn lock<S: lock_api::RawMutex>(m: &locks::Mutex<S, u64>, n: u64) {
    for _ in 0..n {
        *black_box(m).lock() += 1;
    }
}

fn pair<S: Strategy>(c: &chan::Chan<u64, S>, n: u64) {
    for i in 0..n {
        c.send(black_box(i)).unwrap();
        black_box(c.recv().unwrap());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, imp, n] = &args[..] else {
        eprintln!("usage: dispatch lock|pair adaptive|dyn-adaptive N");
        std::process::exit(2);
    };
    let n: u64 = n.parse().unwrap_or_else(|_| {
        eprintln!("dispatch: N must be a number, not `{n}`");
        std::process::exit(2);
    });
    match (op.as_str(), imp.as_str()) {
        ("lock", "adaptive") => {
            let m = locks::Mutex::<Adaptive, u64>::new(0);
            lock(&m, 1000);
            lock(&m, n);
        }
        ("lock", "dyn-adaptive") => {
            let m = Backend::DEFAULT.mutex(0u64);
            lock(&m, 1000);
            lock(&m, n);
        }
        ("pair", "adaptive") => {
            let c = chan::Chan::<u64, Adaptive>::new(10);
            pair(&c, 1000);
            pair(&c, n);
        }
        ("pair", "dyn-adaptive") => {
            let c = chan::Chan::<u64, DynLock>::with_params(10, Backend::DEFAULT);
            pair(&c, 1000);
            pair(&c, n);
        }
        _ => {
            eprintln!("dispatch: unknown `{op} {imp}` (lock|pair adaptive|dyn-adaptive)");
            std::process::exit(2);
        }
    }
}
