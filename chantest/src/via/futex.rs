//! Futex wait and wake that work between processes.
//!
//! The `locks` crate's futexes are private (`FUTEX_PRIVATE_FLAG`): the kernel keys them by
//! address within one process, so a wake in one process never reaches a waiter in another.
//! These leave the flag off, so the kernel keys them by the page of the shared mapping, which
//! is what the `shm` transport needs.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `*word == expected`, for at most `timeout`. Returns `false` only if the
/// timeout expired; a wake, a changed value or an interrupting signal all return `true`, and
/// the caller re-checks its condition either way.
pub(super) fn wait(word: &AtomicU32, expected: u32, timeout: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(libc::time_t::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    // SAFETY: `word` is a live, aligned u32 for the duration of the call and `ts` a valid
    // timespec; FUTEX_WAIT only reads both. The last two arguments are unused by FUTEX_WAIT.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    !(rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT))
}

/// Wakes up to `n` waiters on `word`, in this process or any other that maps the same page.
pub(super) fn wake(word: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE uses only the address of `word` (it reads nothing there), and `word`
    // is live. A failure would mean a bad address, which a reference cannot be.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn times_out_and_wakes() {
        let w = AtomicU32::new(0);
        assert!(!wait(&w, 0, Duration::from_millis(5)), "times out");
        assert!(
            wait(&w, 1, Duration::from_secs(5)),
            "value differs: returns at once"
        );

        let w = Arc::new(AtomicU32::new(0));
        let t = {
            let w = Arc::clone(&w);
            std::thread::spawn(move || {
                while w.load(Ordering::SeqCst) == 0 {
                    wait(&w, 0, Duration::from_secs(5));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(10));
        w.store(1, Ordering::SeqCst);
        wake(&w, 1);
        t.join().unwrap();
    }
}
