//! Children and scratch go when chantest goes.
//!
//! `--against`'s builds, `--per-process`' children and `--metric instructions`' valgrind runs
//! each run in a process group of their own (so that a hung one can be killed with whatever
//! it started, see [`crate::child`]); a Ctrl-C at the terminal therefore reaches chantest
//! alone, and a SIGTERM never reaches them. So that they do not run on under pid 1:
//!
//! * SIGINT, SIGTERM and SIGHUP are blocked in every thread ([`install`] runs before any
//!   thread is started, and threads inherit the mask) and taken by one thread with
//!   `sigwait`, which kills every registered process group, removes every registered scratch
//!   directory, and then dies of the same signal (so a shell sees what it sent). A thread of
//!   our own, not a handler, so that it may lock, allocate and remove files.
//! * Every child is started with `PR_SET_PDEATHSIG` = SIGKILL ([`die_with_parent`]), for
//!   the one signal no thread can take: a SIGKILL of chantest itself.
//!
//! Children started by `std::process::Command` begin with an empty signal mask (std resets
//! it), so blocking these signals here changes nothing for them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Process groups to kill, and directories to remove, if chantest is told to stop.
static LIVE: Mutex<Live> = Mutex::new(Live {
    groups: Vec::new(),
    dirs: Vec::new(),
});

struct Live {
    groups: Vec<libc::pid_t>,
    dirs: Vec<PathBuf>,
}

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given; sigaddset with valid signals.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        for sig in SIGNALS {
            libc::sigaddset(&mut s, sig);
        }
        s
    }
}

/// Blocks the stopping signals and starts the thread that takes them. Call first thing in
/// `main`, before any other thread exists: a thread started earlier would keep them unblocked
/// and could be the one the kernel delivers them to.
pub(crate) fn install() {
    let s = set();
    // SAFETY: a valid set; the old mask is not wanted.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &s, std::ptr::null_mut()) };
    let started = std::thread::Builder::new()
        .name("chantest-signals".into())
        .spawn(move || {
            // Every other signal stays off this thread: the signal transport waits for its
            // signals with them blocked in its own thread, and one delivered here instead
            // would kill the process (default action).
            // SAFETY: sigfillset initialises the set it is given.
            unsafe {
                let mut all: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
            }
            loop {
                let mut sig: libc::c_int = 0;
                // SAFETY: a valid set and a place for the signal's number.
                if unsafe { libc::sigwait(&s, &mut sig) } == 0 {
                    stop(sig);
                }
            }
        });
    if started.is_err() {
        // Without the thread nobody would take the signals: leave them as they were.
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &s, std::ptr::null_mut()) };
    }
}

/// Kills what is registered, removes the scratch, and dies of `sig`.
fn stop(sig: libc::c_int) -> ! {
    // A poisoned lock still holds the lists: the process is going anyway.
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for &g in &live.groups {
        // SAFETY: kill has no memory-safety preconditions; a negative pid names a group.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    for d in &live.dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    // SAFETY: restoring the default action and unblocking it in this thread, then raising it
    // here, ends the process as the signal would have; exit is the fallback.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}

/// A registration that ends when dropped.
#[must_use = "the registration ends when this is dropped"]
pub(crate) struct Registered(What);

enum What {
    Group(libc::pid_t),
    Dir(PathBuf),
}

/// Kills process group `pgid` if chantest is told to stop before the returned guard drops.
pub(crate) fn group(pgid: libc::pid_t) -> Registered {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .groups
        .push(pgid);
    Registered(What::Group(pgid))
}

/// Removes `dir` if chantest is told to stop before the returned guard drops; the guard
/// removes it too, so that no exit path, error or panic included, leaves it behind.
pub(crate) fn scratch(dir: &Path) -> Registered {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .dirs
        .push(dir.to_path_buf());
    Registered(What::Dir(dir.to_path_buf()))
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        match &self.0 {
            What::Group(g) => live.groups.retain(|x| x != g),
            What::Dir(d) => {
                live.dirs.retain(|x| x != d);
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}

/// Makes the child that `cmd` starts die (SIGKILL) when the thread that started it does,
/// which for our children is when chantest does: each is started by the thread that then
/// waits for it.
pub(crate) fn die_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid, prctl and _exit are async-signal-safe, and nothing here allocates.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            // The parent may have died before the prctl: then nobody would send the signal.
            if libc::getppid() != parent {
                libc::_exit(137);
            }
            Ok(())
        })
    }
}
