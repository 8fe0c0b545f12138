type Mutex<T> = locks::Mutex<Lock, T>;
type Condvar = locks::Condvar<Lock>;
type RwLock<T> = locks::RwLock<Lock, T>;

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread;

struct Config {
    scale: u64,
}

struct Queue {
    jobs: VecDeque<u64>,
    closed: bool,
}

fn main() {
    let queue = Arc::new((
        Mutex::new(Queue {
            jobs: VecDeque::new(),
            closed: false,
        }),
        Condvar::new(),
    ));
    let config = Arc::new(RwLock::new(Config { scale: 1 }));

    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, config) = (queue.clone(), config.clone());
            thread::spawn(move || {
                let (jobs, ready) = &*queue;
                let mut sum = 0;
                let mut q = jobs.lock();
                loop {
                    ready.wait_while(&mut q, |q| q.jobs.is_empty() && !q.closed);
                    let Some(job) = q.jobs.pop_front() else {
                        return sum;
                    };
                    drop(q);
                    sum += job * config.read().scale;
                    q = jobs.lock();
                }
            })
        })
        .collect();

    config.write().scale = 2;
    for job in 1..=100 {
        queue.0.lock().jobs.push_back(job);
        queue.1.notify_one();
    }
    queue.0.lock().closed = true;
    queue.1.notify_all();

    let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(total, 2 * 5050);
    println!("{}: {total}", <Lock as locks::Strategy>::NAME);
}
