//! How far apart two of the machine's CPUs are right now: the round trip of a cache line
//! between two threads pinned one to each, timed just before each child process of
//! `--per-process` and `--against` starts, so that a slow run can be told from a slow machine.
//!
//! In a virtual machine the host decides where the guest's CPUs run, and it moves them. On the
//! 2-vCPU guest this was written on, the round trip took 51-92 ns, except for eight seconds in
//! which it took 216-442 ns (the host had put the two vCPUs on distant cores), and then 51 of
//! the 52 rendezvous processes that ran took four times their usual time: every hand-off
//! between threads on the two CPUs costs cache-line transfers (`docs/tuning.md`, "Moving off a
//! shared CPU"). Timing a chain of multiplications on each CPU showed nothing: the CPUs were as
//! fast as ever; only the distance between them had grown.
//!
//! The probe takes the first two CPUs of the caller's mask, so on a machine with many it
//! measures those two only; it says how the machine was, not where a run's threads ran.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::time::{Duration, Instant};

/// Round trips timed: about a millisecond at the usual 50-100 ns each.
const TRIPS: u32 = 10_000;

/// Beyond this the probe gives up (a partner thread that does not get its CPU): a missing
/// answer rather than a stalled sweep.
const GIVE_UP: Duration = Duration::from_millis(100);

/// The mean round trip, in nanoseconds, of a cache line between the first two CPUs of the
/// calling thread's mask; `None` where it may use fewer than two, a thread cannot be pinned,
/// or the partner did not answer in time.
pub(crate) fn cpu_round_trip_ns() -> Option<u64> {
    let cpus = crate::affinity::Cpus::current().ok()?;
    if cpus.count() < 2 {
        return None;
    }
    let (a, b) = (cpus.nth(0), cpus.nth(1));
    let ball = AtomicU32::new(0);
    let quit = AtomicBool::new(false);
    std::thread::scope(|s| {
        let partner = s.spawn(|| {
            if crate::affinity::pin_current(b).is_err() {
                quit.store(true, Relaxed);
                return;
            }
            // Sends the ball back each time it comes; stops when told to.
            let mut n = 0;
            while n < TRIPS {
                match ball.load(Acquire) {
                    1 => {
                        ball.store(0, Release);
                        n += 1;
                    }
                    _ if quit.load(Relaxed) => return,
                    _ => std::hint::spin_loop(),
                }
            }
        });
        let timed = s
            .spawn(|| {
                crate::affinity::pin_current(a).ok()?;
                let start = Instant::now();
                for _ in 0..TRIPS {
                    ball.store(1, Release);
                    let mut spins = 0u32;
                    while ball.load(Acquire) != 0 {
                        std::hint::spin_loop();
                        spins = spins.wrapping_add(1);
                        if (spins % 4096 == 0 && start.elapsed() > GIVE_UP) || quit.load(Relaxed) {
                            return None;
                        }
                    }
                }
                Some(start.elapsed().as_nanos() as u64 / u64::from(TRIPS))
            })
            .join()
            .ok()
            .flatten();
        quit.store(true, Relaxed);
        let _ = partner.join();
        timed.map(|ns| ns.max(1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_allowed_one_cpu_has_nothing_to_probe() {
        std::thread::spawn(|| {
            let here = crate::affinity::Cpus::current().unwrap().nth(0);
            crate::affinity::pin_current(here).unwrap();
            assert_eq!(cpu_round_trip_ns(), None);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn two_cpus_answer_in_nanoseconds() {
        if crate::affinity::Cpus::current().unwrap().count() < 2 {
            eprintln!("skipped: this test needs two CPUs");
            return;
        }
        // On a machine too busy to give the partner its CPU within the limit, a try answers
        // nothing; one of five answering is enough.
        let got = (0..5).find_map(|_| cpu_round_trip_ns());
        let ns = got.expect("a round trip in five tries");
        assert!((1..100_000).contains(&ns), "{ns} ns");
    }
}
