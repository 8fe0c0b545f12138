//! Moving a thread off the CPU it shares with the thread it waits for.
//!
//! Two threads that trade messages without sleeping stay where the scheduler first put them,
//! and a new thread often starts on the CPU of the thread that made it. When both land on one
//! CPU, every hand-off between them waits for a context switch: a chantest process then runs
//! 3-10 times slower than one whose threads started apart. With three threads on two CPUs
//! it is worse: two of them must share a CPU, the kernel counts two threads against one as
//! balanced, and nothing ever parts a receiver from the sender beside it.
//!
//! The adaptive lock sees the symptom: its spins stop paying (`spin::spun`). What it can do
//! about it is limited, because Linux gives a process one handle on where a thread runs, its
//! CPU mask. So [`leave_cpu`] narrows the calling thread's mask to every CPU it may use but
//! the one it is on, which makes the kernel move it at once, and then restores the mask: the
//! mask ends as it began, and the thread stays where it went until the scheduler moves it. The
//! one cost to a program is a race it is unlikely to run: a mask that another thread sets for
//! this thread between the two calls is undone. A lock that must never touch a mask turns
//! [`AdaptiveParams::moves`](crate::AdaptiveParams::moves) off, and its threads sleep on a
//! stop instead, which lets the wake-up place them (on an idle CPU if there is one).
//!
//! Where the thread goes is the kernel's choice among the CPUs left in the mask: on Linux 6.x
//! the next in turn, not the least loaded, and on a machine of several sockets possibly
//! another socket. On two CPUs there is one choice. On many, the load balancer corrects a
//! poor one later; measured only on the two-CPU guest so far.
//!
//! Moves are rationed per process: one per [`EVERY_US`]. Both threads of a pair that shares
//! a CPU stop at about the same time (20-80 µs apart, measured), and unrationed they both
//! moved, to the same other CPU, and chased each other there and back 114 times in one
//! process.

// Only Linux moves threads; elsewhere (and under Miri and loom) every thread stays.
#![cfg_attr(not(all(target_os = "linux", not(miri), not(loom))), allow(dead_code))]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What came of [`leave_cpu`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// The thread now runs on another CPU.
    Moved,
    /// Some thread of the process moved less than [`EVERY_US`] ago (perhaps the one this
    /// thread waits for): this one stays put and waits on.
    Rationed,
    /// The thread may run on one CPU only: nothing can move it.
    Pinned,
    /// The thread was not moved (moves off, refused by the system, or not Linux), but the
    /// scheduler may move it: the caller sleeps, so that its wake-up can place it afresh.
    Stays,
}

/// The least time between two moves in a process, in microseconds: well beyond the gap between
/// the stops of a pair's two threads, short enough that a pair that one move did not part
/// (three threads on two CPUs, where the move took the wrong one) is moved again soon.
const EVERY_US: u32 = 1_000;

/// The process's ration of moves.
static MOVES: Ration = Ration::new();

/// Moves the calling thread to another of its CPUs if `allowed`, unless a thread of the
/// process moved less than [`EVERY_US`] ago.
pub(crate) fn leave_cpu(allowed: bool) -> Left {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    return linux::leave_cpu(if allowed { EVERY_US } else { 0 }, &MOVES);
    #[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
    {
        let _ = (allowed, &MOVES, EVERY_US);
        Left::Stays
    }
}

/// At most one move per interval, whichever thread makes it.
struct Ration {
    /// When the last move was made, in microseconds of the monotonic clock; 0 before any.
    last_us: AtomicU64,
}

impl Ration {
    const fn new() -> Self {
        Ration {
            last_us: AtomicU64::new(0),
        }
    }

    /// Whether a move may be made at `now_us`, with `every_us` between moves; if so, the
    /// move is this caller's, and the next one waits for `every_us` more.
    fn claim(&self, now_us: u64, every_us: u32) -> bool {
        let last = self.last_us.load(Relaxed);
        if last != 0 && now_us.saturating_sub(last) < u64::from(every_us) {
            return false;
        }
        // Of two threads that find the ration free, one moves.
        self.last_us
            .compare_exchange(last, now_us.max(1), Relaxed, Relaxed)
            .is_ok()
    }
}

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
mod linux {
    use super::{Left, Ration};
    use crate::spin::affinity;
    use std::mem::size_of;

    /// [`super::leave_cpu`] with the interval and the ration given (0: never moves).
    pub(super) fn leave_cpu(every_us: u32, ration: &Ration) -> Left {
        let Some(all) = affinity(0) else {
            return Left::Stays;
        };
        // SAFETY: reads a valid `cpu_set_t`.
        if unsafe { libc::CPU_COUNT(&all) } < 2 {
            return Left::Pinned;
        }
        // SAFETY: no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        let here = usize::try_from(cpu).ok().filter(|&c| {
            // SAFETY: `c` is checked against CPU_SETSIZE, the bits of a `cpu_set_t`.
            c < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(c, &all) }
        });
        // Outside its own mask, the thread is being moved already (its mask changed a
        // moment ago).
        let Some(here) = here else {
            return Left::Stays;
        };
        if every_us == 0 {
            return Left::Stays;
        }
        if !ration.claim(now_us(), every_us) {
            return Left::Rationed;
        }
        let mut others = all;
        // SAFETY: `here` is below CPU_SETSIZE.
        unsafe { libc::CPU_CLR(here, &mut others) };
        if !set_affinity(&others) {
            return Left::Stays;
        }
        // The kernel has moved the thread before the call returned. Restoring cannot fail:
        // the mask holds the CPU the thread now runs on, which the kernel just accepted.
        set_affinity(&all);
        crate::stats::count!(moves);
        Left::Moved
    }

    /// Sets the calling thread's CPU mask; false if the system refused.
    fn set_affinity(set: &libc::cpu_set_t) -> bool {
        // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is the caller.
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) == 0 }
    }

    /// The monotonic clock in microseconds.
    fn now_us() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a writable `timespec`; CLOCK_MONOTONIC always exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_move_per_interval() {
        let r = Ration::new();
        assert!(r.claim(5_000, 1_000), "the first is free");
        assert!(!r.claim(5_999, 1_000), "too soon");
        assert!(r.claim(6_000, 1_000), "an interval later");
        assert!(!r.claim(6_000, 1_000), "taken");
    }

    #[test]
    fn a_clock_that_starts_at_zero_still_rations() {
        let r = Ration::new();
        assert!(r.claim(0, 1_000));
        assert!(!r.claim(10, 1_000));
    }

    /// A free thread moves at once, and its mask ends as it began.
    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_thread_leaves_its_cpu_and_keeps_its_mask() {
        crate::spin::tests::on_a_new_thread(|| {
            let before = crate::spin::affinity(0).unwrap();
            // SAFETY: reads a valid `cpu_set_t`.
            if unsafe { libc::CPU_COUNT(&before) } < 2 {
                eprintln!("skipped: this test needs two CPUs");
                return;
            }
            // A ration of its own, so that moves by other tests do not ration this one.
            let r = Ration::new();
            // SAFETY: no preconditions.
            let cpu = || unsafe { libc::sched_getcpu() };
            let here = cpu();
            assert_eq!(linux::leave_cpu(1_000_000, &r), Left::Moved);
            assert_ne!(cpu(), here, "moved before returning");
            let after = crate::spin::affinity(0).unwrap();
            // SAFETY: both are valid sets.
            let same = unsafe { libc::CPU_EQUAL(&before, &after) };
            assert!(same, "the mask is restored");
            assert_eq!(linux::leave_cpu(1_000_000, &r), Left::Rationed);
            assert_eq!(
                linux::leave_cpu(0, &Ration::new()),
                Left::Stays,
                "moves off"
            );
        });
    }

    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_pinned_thread_stays() {
        crate::spin::tests::on_a_new_thread(|| {
            // SAFETY: no preconditions.
            let here = unsafe { libc::sched_getcpu() };
            assert!(crate::spin::tests::pin(here as usize));
            assert_eq!(linux::leave_cpu(1_000, &Ration::new()), Left::Pinned);
            assert_eq!(linux::leave_cpu(0, &Ration::new()), Left::Pinned);
        });
    }
}
