//! Pinning threads to CPUs (`--pin`).
//!
//! Pinning takes the scheduler's thread placement out of the measurement: without it the
//! receiver and a sender may share a CPU in one run and not in the next. The CPUs are those the
//! process may already use (so `taskset` still works), dealt out by a [`Placement`]: the
//! receiver always gets the first; the senders follow it round-robin over all of them
//! (`spread`, sender `i` on the `(i + 1)`-th) or over the others only (`apart`, which keeps
//! the receiver's CPU its own however many senders there are).

use crate::error::Error;
use crate::model::Placement;
use std::io;
use std::mem;

/// The CPUs this process may run on, in ascending order, and how they are dealt out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cpus {
    cpus: Vec<usize>,
    placement: Placement,
}

impl Cpus {
    /// The calling thread's affinity mask; on the main thread before any pinning, the
    /// process's. Dealt out round-robin ([`Placement::Spread`]).
    pub(crate) fn current() -> io::Result<Cpus> {
        let set = get()?;
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, the number of bits in a `cpu_set_t`.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect();
        if cpus.is_empty() {
            return Err(io::Error::other("the affinity mask is empty"));
        }
        Ok(Cpus {
            cpus,
            placement: Placement::Spread,
        })
    }

    /// The CPUs to pin to with `placement`, as `--pin` names it in errors: the mask must hold
    /// two CPUs or more to keep one apart.
    pub(crate) fn for_pinning(placement: Placement) -> Result<Cpus, Error> {
        let cpus = Cpus::current()
            .map_err(|e| crate::error::usage!("--pin: cannot read the CPU mask: {e}"))?;
        cpus.placed(placement)
    }

    /// These CPUs, dealt out by `placement`.
    pub(crate) fn placed(self, placement: Placement) -> Result<Cpus, Error> {
        if placement == Placement::Apart && self.cpus.len() < 2 {
            return Err(crate::error::usage!(
                "--pin=apart keeps a CPU for the receiver and needs two or more; this process \
                 may use {} (see taskset)",
                self.cpus.len()
            ));
        }
        Ok(Cpus { placement, ..self })
    }

    /// How the CPUs are dealt out.
    pub(crate) fn placement(&self) -> Placement {
        self.placement
    }

    /// How many CPUs: at least one.
    pub(crate) fn count(&self) -> usize {
        self.cpus.len()
    }

    /// The CPU for the thread numbered `i`, 0 being the receiver's: see [`Placement`].
    pub(crate) fn nth(&self, i: usize) -> usize {
        let n = self.cpus.len();
        match self.placement {
            Placement::Apart if i > 0 && n > 1 => self.cpus[1 + (i - 1) % (n - 1)],
            _ => self.cpus[i % n],
        }
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

    fn cpus(list: &[usize], placement: Placement) -> Cpus {
        Cpus {
            cpus: list.to_vec(),
            placement,
        }
    }

    #[test]
    fn placements_deal_cpus_out() {
        let deal = |c: &Cpus| (0..7).map(|i| c.nth(i)).collect::<Vec<_>>();
        assert_eq!(
            deal(&cpus(&[2, 5, 7], Placement::Spread)),
            [2, 5, 7, 2, 5, 7, 2]
        );
        assert_eq!(
            deal(&cpus(&[2, 5, 7], Placement::Apart)),
            [2, 5, 7, 5, 7, 5, 7]
        );
        assert_eq!(
            deal(&cpus(&[3, 4], Placement::Apart)),
            [3, 4, 4, 4, 4, 4, 4]
        );
        assert_eq!(deal(&cpus(&[3], Placement::Spread)), [3; 7]);
    }

    #[test]
    fn placement_flags_round_trip() {
        for p in [None, Some(Placement::Spread), Some(Placement::Apart)] {
            let (pin, apart) = Placement::to_flags(p);
            assert_eq!(Placement::from_flags(pin, apart), p);
        }
        // A file that says apart but not pinned was not pinned.
        assert_eq!(Placement::from_flags(false, true), None);
    }

    #[test]
    fn apart_needs_two_cpus() {
        let e = cpus(&[3], Placement::Spread)
            .placed(Placement::Apart)
            .unwrap_err();
        assert!(e.to_string().contains("needs two or more"), "{e}");
        let two = cpus(&[3, 4], Placement::Spread)
            .placed(Placement::Apart)
            .unwrap();
        assert_eq!(two.nth(2), 4);
    }

    #[test]
    fn pin_and_restore() {
        let cpus = Cpus::current().unwrap();
        assert_eq!(cpus.nth(0), cpus.nth(cpus.count()));
        std::thread::spawn(move || {
            let restore = Restore::save().unwrap();
            pin_current(cpus.nth(1)).unwrap();
            assert_eq!(Cpus::current().unwrap().cpus, [cpus.nth(1)]);
            drop(restore);
            assert_eq!(Cpus::current().unwrap(), cpus);
        })
        .join()
        .unwrap();
    }
}
