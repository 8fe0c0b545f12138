//! Plain `send` and `recv` allocate nothing, even when they block: the waiter record lives on
//! the blocked thread's stack.
#![cfg(not(loom))]

use chan::Chan;
use locks::Strategy;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::thread;
use testkit::per_backend;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a const-initialised thread-local
// without a destructor, so touching it cannot allocate or recurse.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

per_backend! { no_alloc: blocking_send_and_recv_do_not_allocate }

fn blocking_send_and_recv_do_not_allocate<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let tx = c.clone();
        // Warm up: one-time set-up (thread-locals, the spin clock's calibration, the CPU
        // count) may allocate on first use; the steady state must not.
        let warm = {
            let tx = tx.clone();
            thread::spawn(move || (0..100).for_each(|i| tx.send(i).unwrap()))
        };
        (0..100).for_each(|_| {
            c.recv().unwrap();
        });
        warm.join().unwrap();
        // Rendezvous and a one-slot buffer make both sides block over and over.
        let sender = thread::spawn(move || {
            let before = allocs();
            (0..5000).for_each(|i| tx.send(i).unwrap());
            allocs() - before
        });
        let before = allocs();
        let sum: u64 = (0..5000).map(|_| c.recv().unwrap()).sum();
        let receiver_allocs = allocs() - before;
        assert_eq!(sum, 4999 * 5000 / 2);
        assert_eq!(
            sender.join().unwrap(),
            0,
            "{} O={nbuf}: send allocated",
            S::NAME
        );
        assert_eq!(receiver_allocs, 0, "{} O={nbuf}: recv allocated", S::NAME);
    }
}

#[path = "exec/mod.rs"]
mod exec;

per_backend! { no_alloc_async: async_send_and_recv_do_not_allocate }

/// Two tasks on the hand-rolled executor (this thread), waiting on each other over and over:
/// the wait nodes live in the futures, and a task's waker is cloned once per wait (a reference
/// count), so the steady state allocates nothing.
fn async_send_and_recv_do_not_allocate<S: Strategy>(p: S::Params) {
    for nbuf in [0, 1] {
        let c = Chan::<u64, S>::with_params(nbuf, p);
        let sum = Cell::new(0);
        let mut ex = exec::Exec::new();
        ex.spawn(async {
            for i in 0..5000 {
                c.send_async(i).await.unwrap();
            }
        });
        ex.spawn(async {
            for _ in 0..5000 {
                sum.set(sum.get() + c.recv_async().await.unwrap());
            }
        });
        // Spawning boxed the tasks and sized the run queue; running must not allocate.
        let before = allocs();
        ex.run();
        let during = allocs() - before;
        drop(ex);
        assert_eq!(sum.get(), 4999 * 5000 / 2);
        assert_eq!(during, 0, "{} O={nbuf}: async send/recv allocated", S::NAME);
    }
}
