//! Wait and wake on a 32-bit word: the kernel's futex for real, a model of it under loom.
//!
//! `wait` may return spuriously; every caller re-checks its condition in a loop. `wake_*` take
//! a raw pointer because a waker's last touch of a waiter's word may come after the waiter has
//! already seen the new value and returned: the kernel treats a stale address as "nobody to
//! wake", so the call is harmless, but it must not go through a reference.

use crate::sync::AtomicU32;
#[cfg(not(loom))]
use std::time::Instant;

#[cfg(not(loom))]
mod imp {
    use super::*;

    /// The futex system call, `op` on the word at `addr` with `val` and a timeout (FUTEX_WAIT
    /// only; null: none).
    ///
    /// Called directly rather than through `atomic_wait`, which passes the word as an
    /// `&AtomicU32` where the call takes a `*mut u32`: Miri now rejects that mismatch of a
    /// variadic argument's type as undefined behaviour.
    ///
    /// # Safety
    /// `addr` must be the address of a 32-bit word (the kernel treats an address that holds
    /// no waiter as nobody to wake, so a stale one is harmless to FUTEX_WAKE), and `timeout`
    /// null or a valid relative timeout.
    #[cfg(target_os = "linux")]
    #[inline]
    unsafe fn futex(addr: *mut u32, op: libc::c_int, val: u32, timeout: *const libc::timespec) {
        // SAFETY: forwarded; the kernel reads only `addr` and `timeout`.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                addr,
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                timeout,
            );
        }
    }

    #[inline]
    pub(crate) fn wait(word: &AtomicU32, expected: u32) {
        crate::stats::count!(futex_waits);
        // SAFETY: `word` is a live, aligned 32-bit atomic for the whole call; FUTEX_WAIT only
        // reads it and compares with `expected`; no timeout.
        #[cfg(target_os = "linux")]
        unsafe {
            futex(word.as_ptr(), libc::FUTEX_WAIT, expected, std::ptr::null())
        };
        #[cfg(not(target_os = "linux"))]
        atomic_wait::wait(word, expected);
    }

    /// Like [`wait`], but gives up at `deadline`.
    #[cfg(target_os = "linux")]
    pub(crate) fn wait_until(word: &AtomicU32, expected: u32, deadline: Instant) {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        crate::stats::count!(futex_waits);
        let ts = libc::timespec {
            tv_sec: left.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `word` is a live, aligned 32-bit atomic for the whole call; FUTEX_WAIT only
        // reads it and compares with `expected`; `ts` is a valid relative timeout.
        unsafe { futex(word.as_ptr(), libc::FUTEX_WAIT, expected, &ts) };
    }

    /// Without a timed futex, poll: correct, if slower to notice a wake-up.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn wait_until(word: &AtomicU32, expected: u32, deadline: Instant) {
        use std::sync::atomic::Ordering;
        while word.load(Ordering::Acquire) == expected && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    #[inline]
    pub(crate) fn wake_one(word: *const AtomicU32) {
        crate::stats::count!(futex_wakes);
        // SAFETY: only the address is used, never dereferenced here (the word may be gone:
        // see the module's doc), and a cast, not `as_ptr`, keeps it so.
        #[cfg(target_os = "linux")]
        unsafe {
            futex(
                word.cast::<u32>().cast_mut(),
                libc::FUTEX_WAKE,
                1,
                std::ptr::null(),
            )
        };
        #[cfg(not(target_os = "linux"))]
        atomic_wait::wake_one(word);
    }
}

/// Loom has no futex. One global mutex and condition variable stand in for the kernel's hash
/// of wait queues: the value check happens under the mutex and every wake takes it, so a wake
/// can never fall between a waiter's check and its sleep, which is the property the real
/// futex guarantees. Waking everyone is allowed: callers tolerate spurious wake-ups.
#[cfg(loom)]
mod imp {
    use super::*;
    use crate::sync::Ordering;
    use loom::sync::{Condvar, Mutex};

    loom::lazy_static! {
        static ref KERNEL: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());
    }

    pub(crate) fn wait(word: &AtomicU32, expected: u32) {
        let guard = KERNEL.0.lock().unwrap();
        if word.load(Ordering::SeqCst) == expected {
            drop(KERNEL.1.wait(guard).unwrap());
        }
    }

    pub(crate) fn wake_one(word: *const AtomicU32) {
        wake_all(word)
    }

    pub(crate) fn wake_all(_word: *const AtomicU32) {
        let _guard = KERNEL.0.lock().unwrap();
        KERNEL.1.notify_all();
    }
}

pub(crate) use imp::*;
