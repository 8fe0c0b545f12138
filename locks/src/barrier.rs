//! Asymmetric fences: a free one for a fast path that runs millions of times, paired with a
//! costly one for a slow path that runs rarely (Linux's `membarrier(2)`, the pattern of its
//! manual page).
//!
//! The adaptive lock's unlock must not miss a thread about to sleep: the unlocker stores
//! "free" and then reads the count of sleepers; a sleeper raises that count and then reads the
//! lock word (inside the futex wait). Each side writes one word and reads the other, so
//! without a full fence on both sides each could miss the other's write (store buffering)
//! and the sleeper would sleep through the unlock. A SeqCst fence or an RMW on every unlock
//! costs the fast path a store-buffer drain. Instead the unlocker orders its store and load
//! with a compiler fence only ([`light`]), and the sleeper, before it sleeps, runs
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED` ([`heavy`]): the kernel interrupts every CPU running a
//! thread of this process and makes it execute a full fence, which is a full fence between the
//! unlocker's store and load wherever the unlocker is at that moment.
//!
//! Where that is not available (another OS, Miri, an old kernel or a seccomp filter) [`light`]
//! cannot be trusted and [`heavy`] says so: the caller must then not sleep (the adaptive lock
//! keeps yielding instead). Under loom both are SeqCst fences, so the models check the
//! protocol with a fence on each side, which is what the asymmetric pair provides.

/// The fast side: orders the caller's earlier store before its later load, given that every
/// thread that relies on it has run [`heavy`] (and been told `true`) before reading what the
/// store wrote.
#[inline(always)]
pub(crate) fn light() {
    #[cfg(loom)]
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// The slow side: a full fence on every thread of the process. `false` if that cannot be
/// done here, in which case [`light`] orders nothing and the caller must not rely on it.
#[cfg(loom)]
pub(crate) fn heavy() -> bool {
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    true
}

#[cfg(all(not(loom), target_os = "linux", not(miri)))]
pub(crate) fn heavy() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    // From <linux/membarrier.h>; not in the libc crate.
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
    const UNKNOWN: u8 = 0;
    const YES: u8 = 1;
    const NO: u8 = 2;
    static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

    fn membarrier(cmd: libc::c_int) -> bool {
        // SAFETY: membarrier takes no pointers; an unknown command or an unregistered
        // process is an error return, nothing worse.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_uint,
                0 as libc::c_int,
            ) == 0
        }
    }

    let state = match STATE.load(Relaxed) {
        UNKNOWN => {
            // Registering twice is harmless, so racing first callers need no lock.
            let s = if membarrier(REGISTER_PRIVATE_EXPEDITED) {
                YES
            } else {
                NO
            };
            STATE.store(s, Relaxed);
            s
        }
        s => s,
    };
    state == YES && membarrier(PRIVATE_EXPEDITED)
}

#[cfg(all(not(loom), not(all(target_os = "linux", not(miri)))))]
pub(crate) fn heavy() -> bool {
    false
}
