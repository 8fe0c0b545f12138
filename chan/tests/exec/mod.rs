//! A hand-rolled executor for the async tests: no runtime crate, nothing but `std`, so that
//! Miri can run it and the tests show the futures need nothing from a particular runtime.
//!
//! `Exec` runs any number of (borrowing, non-`Send`) tasks on the calling thread; wakers are
//! `Arc`s that push the task's index onto a run queue guarded by a mutex, with a condvar for
//! wake-ups from other threads (a blocked thread's `send` waking a task).
#![allow(dead_code)]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};

struct Queue {
    ready: Mutex<VecDeque<usize>>,
    cv: Condvar,
}

struct TaskWaker {
    id: usize,
    queued: AtomicBool,
    queue: Arc<Queue>,
    wakes: AtomicUsize,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Relaxed);
        if !self.queued.swap(true, AcqRel) {
            self.queue.ready.lock().unwrap().push_back(self.id);
            self.queue.cv.notify_one();
        }
    }
}

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Tasks on one thread, polled in wake-up order.
pub(crate) struct Exec<'a> {
    tasks: Vec<Option<(Task<'a>, Arc<TaskWaker>, Waker)>>,
    queue: Arc<Queue>,
    pub(crate) polls: usize,
}

impl<'a> Exec<'a> {
    pub(crate) fn new() -> Self {
        Exec {
            tasks: Vec::new(),
            queue: Arc::new(Queue {
                ready: Mutex::new(VecDeque::new()),
                cv: Condvar::new(),
            }),
            polls: 0,
        }
    }

    pub(crate) fn spawn(&mut self, f: impl Future<Output = ()> + 'a) {
        let id = self.tasks.len();
        let tw = Arc::new(TaskWaker {
            id,
            queued: AtomicBool::new(false),
            queue: self.queue.clone(),
            wakes: AtomicUsize::new(0),
        });
        let waker = Waker::from(tw.clone());
        self.tasks.push(Some((Box::pin(f), tw.clone(), waker)));
        tw.wake_by_ref();
    }

    /// Runs until every task has finished (a task never woken again hangs, as a lost
    /// wake-up should be seen to).
    pub(crate) fn run(&mut self) {
        let mut live = self.tasks.iter().filter(|t| t.is_some()).count();
        while live > 0 {
            let id = {
                let mut q = self.queue.ready.lock().unwrap();
                loop {
                    if let Some(id) = q.pop_front() {
                        break id;
                    }
                    q = self.queue.cv.wait(q).unwrap();
                }
            };
            let Some((task, tw, waker)) = self.tasks[id].as_mut() else {
                continue;
            };
            tw.queued.store(false, Release);
            self.polls += 1;
            if task
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                self.tasks[id] = None;
                live -= 1;
            }
        }
    }
}

/// Runs one future to completion on the calling thread.
pub(crate) fn block_on<T>(f: impl Future<Output = T>) -> T {
    let mut out = None;
    {
        let mut ex = Exec::new();
        ex.spawn(async { out = Some(f.await) });
        ex.run();
    }
    out.expect("the task ran to completion")
}

/// Polls `f` once with `waker`.
pub(crate) fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(waker))
}

/// A waker that counts its wake-ups and does nothing else.
pub(crate) struct CountingWaker(pub AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

pub(crate) fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let c = Arc::new(CountingWaker(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

/// Yields once to the executor.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// Polls `f` up to `polls` times (yielding between polls); `None` if it was still pending,
/// in which case it has been dropped (cancelled) mid-wait.
pub(crate) async fn poll_some<F: Future>(f: F, polls: usize) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    for i in 0..polls {
        if let Poll::Ready(v) = std::future::poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx))).await {
            return Some(v);
        }
        if i + 1 < polls {
            yield_now().await;
        }
    }
    None
}
