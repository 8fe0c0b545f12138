//! What the figures were measured on, read from this machine: a [`Machine`] (a
//! [`crate::model`] type), saved beside them so that a baseline from another machine is
//! recognisable as such.

use crate::model::Machine;
use std::ffi::CStr;

/// Describes this machine; whatever cannot be read is left empty.
pub(crate) fn describe() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| cpu_model(&s))
        .unwrap_or_default();
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let (kernel, arch) = uname().unwrap_or_default();
    Machine {
        cpu,
        nproc,
        online_cpus: usize::try_from(online).unwrap_or(0),
        kernel,
        arch,
    }
}

/// The first `model name` in a /proc/cpuinfo (other architectures name it differently).
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        matches!(
            key.trim(),
            "model name" | "Model" | "cpu model" | "Processor"
        )
        .then(|| value.trim().to_string())
    })
}

/// (`sysname release version`, `machine`).
fn uname() -> Option<(String, String)> {
    // SAFETY: `utsname` is plain old data; all-zero is valid.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a writable `utsname`.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: uname fills each field with a NUL-terminated string within the array.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    let kernel = format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.version)
    );
    Some((kernel, field(&u.machine)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpuinfo() {
        let s = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) \n";
        assert_eq!(cpu_model(s).as_deref(), Some("Intel(R) Xeon(R)"));
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn describes_this_machine() {
        let m = describe();
        assert!(m.nproc >= 1 && m.online_cpus >= 1);
        assert!(!m.kernel.is_empty() && !m.arch.is_empty());
    }
}
