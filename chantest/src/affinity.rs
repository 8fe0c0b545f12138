//! Pinning threads to CPUs (`--pin`).
//!
//! Pinning takes the scheduler's thread placement out of the measurement: without it the
//! receiver and a sender may share a CPU in one run and not in the next. The CPUs are those the
//! process may already use (so `taskset` still works), dealt out round-robin: the receiver gets
//! the first, sender `i` the `(i + 1)`-th.

use crate::error::Error;
use std::io;
use std::mem;

/// The CPUs this process may run on, in ascending order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cpus(Vec<usize>);

impl Cpus {
    /// The calling thread's affinity mask; on the main thread before any pinning, the
    /// process's.
    pub(crate) fn current() -> io::Result<Cpus> {
        let set = get()?;
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, the number of bits in a `cpu_set_t`.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect();
        if cpus.is_empty() {
            return Err(io::Error::other("the affinity mask is empty"));
        }
        Ok(Cpus(cpus))
    }

    /// How many CPUs: at least one.
    pub(crate) fn count(&self) -> usize {
        self.0.len()
    }

    /// The CPU for the thread numbered `i`: round-robin over the mask.
    pub(crate) fn nth(&self, i: usize) -> usize {
        self.0[i % self.0.len()]
    }
}

/// Restricts the calling thread to `cpu`.
pub(crate) fn pin_current(cpu: usize) -> io::Result<()> {
    // SAFETY: `cpu_set_t` is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `cpu` came from a mask read with CPU_ISSET, so it is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_current(&set)
}

/// Puts the calling thread's affinity back as it was when this was made.
pub(crate) struct Restore(libc::cpu_set_t);

impl Restore {
    /// Remembers the calling thread's mask.
    pub(crate) fn save() -> io::Result<Restore> {
        get().map(Restore)
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // Best effort: the mask was valid a moment ago, and a failure leaves the thread
        // pinned, which only affects how later runs are placed.
        let _ = set_current(&self.0);
    }
}

fn get() -> io::Result<libc::cpu_set_t> {
    // SAFETY: all-zero is a valid (empty) `cpu_set_t`.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `set` is a writable `cpu_set_t` of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(set)
}

fn set_current(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread to the first CPU, returning what restores its mask.
pub(crate) fn pin_receiver(cpus: &Cpus) -> Result<Restore, Error> {
    let restore = Restore::save().map_err(|e| crate::error::usage!("--pin: {e}"))?;
    pin_current(cpus.nth(0)).map_err(|e| crate::error::usage!("--pin: {e}"))?;
    Ok(restore)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_restore() {
        let cpus = Cpus::current().unwrap();
        assert_eq!(cpus.nth(0), cpus.nth(cpus.0.len()));
        std::thread::spawn(move || {
            let restore = Restore::save().unwrap();
            pin_current(cpus.nth(1)).unwrap();
            assert_eq!(Cpus::current().unwrap().0, [cpus.nth(1)]);
            drop(restore);
            assert_eq!(Cpus::current().unwrap(), cpus);
        })
        .join()
        .unwrap();
    }
}
