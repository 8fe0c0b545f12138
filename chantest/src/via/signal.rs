//! `--via signal`: two processes ping-pong a signal (Tsilyurik's `p6s` on QNX).
//!
//! chantest sends its peer (see [`super::peer`]) a signal carrying a sequence number
//! (`sigqueue`); the peer checks the number and sends it back; N round trips make a run. The
//! figures are per signal, one way: half a round trip, as the seed reported them.
//!
//! Differences from the seed, and why:
//! - The signal is the first real-time one (`SIGRTMIN`), not `SIGUSR1`: real-time signals
//!   queue, so a stray signal arriving with ours cannot merge with it and leave both sides
//!   waiting. Only signals from the peer (`si_pid`, `SI_QUEUE`) count.
//! - It stays blocked and is taken with `sigtimedwait`, not caught by a handler and awaited
//!   with `pause()`: no handler frame to build and unwind, and a timeout (every
//!   [`CHECK_EVERY`]) after which each side checks the other is still alive. The seed's
//!   figure includes the handler; ours is the bare send, switch and receive.
//! - The value each signal carries is checked on both sides, like every other transport's.
//!
//! There is one sender (`-M 1`) and no payload (`-S 8`): signals carry one word. `-O` does not
//! apply.

use super::peer::{self, Peer};
use super::record;
use super::ring::CHECK_EVERY;
use super::spec::{Alive, Spec};
use crate::affinity;
use crate::error::{usage, Error};
use crate::measure::{sample, Stamp, Usage};
use crate::model::{Sample, Via, TAG};
use std::io;

/// The signal both sides use.
fn signo() -> libc::c_int {
    libc::SIGRTMIN()
}

fn sigset() -> libc::sigset_t {
    // SAFETY: all-zero is a valid `sigset_t` to initialize.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t and the signal number is valid.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo());
    }
    set
}

/// Blocks the signal in the calling thread and in every thread it starts afterwards.
///
/// The sweep calls this on the main thread before it starts any thread, because a process
/// signal goes to any thread that does not block it, and its default action would end the
/// process.
pub(crate) fn block() -> Result<(), Error> {
    let set = sigset();
    // SAFETY: `set` is a valid sigset_t; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(usage!(
            "--via signal: cannot block the signal: {}",
            io::Error::from_raw_os_error(rc)
        ));
    }
    Ok(())
}

/// Sends `value` to process `to` with the signal.
fn queue(to: libc::pid_t, value: u64) -> Result<(), Error> {
    let v = libc::sigval {
        sival_ptr: value as usize as *mut libc::c_void,
    };
    // SAFETY: sigqueue takes plain values; the pointer in `v` is only carried, never used.
    if unsafe { libc::sigqueue(to, signo(), v) } != 0 {
        return Err(Error::Transport(format!(
            "cannot signal pid {to}: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Waits for the signal from process `from` and returns the value it carries; signals from
/// anyone else are dropped.
fn receive(from: libc::pid_t, alive: Alive<'_>) -> Result<u64, Error> {
    let set = sigset();
    let timeout = libc::timespec {
        tv_sec: 0,
        tv_nsec: CHECK_EVERY.subsec_nanos().into(),
    };
    loop {
        // SAFETY: all-zero is a valid `siginfo_t` for sigtimedwait to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set`, `info` and `timeout` are valid for the call; the signal is blocked in
        // this thread (block()), as sigtimedwait requires.
        let rc = unsafe { libc::sigtimedwait(&set, &mut info, &timeout) };
        if rc == signo() {
            // SAFETY: for a signal sent with sigqueue (SI_QUEUE) the kernel filled in the
            // sender's pid and the value, which is what si_pid and si_value read.
            let (pid, value) = unsafe { (info.si_pid(), info.si_value()) };
            if info.si_code == libc::SI_QUEUE && pid == from {
                return Ok(value.sival_ptr as usize as u64);
            }
            continue;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) => alive()?,
            Some(libc::EINTR) => {}
            _ => return Err(Error::Transport(format!("sigtimedwait: {e}"))),
        }
    }
}

/// One run: N round trips with the peer.
pub(crate) fn run(spec: &Spec<'_>) -> Result<Sample, Error> {
    if spec.senders != 1 || spec.size != TAG {
        return Err(usage!(
            "--via signal ping-pongs one value between two processes: it needs -M 1 and -S 8"
        ));
    }
    block()?;
    let n = spec.per_sender;
    let cpu = spec
        .pin
        .map_or_else(|| "-".to_string(), |c| c.nth(1).to_string());
    // Started before pinning, so that the peer can pin itself anywhere in our mask.
    let mut peer = Peer::spawn(Via::Signal.name(), &[n.to_string(), cpu], None)?;
    peer.ready()?;
    let child = peer.pid();
    let _restore = match spec.pin {
        Some(cpus) => Some(affinity::pin_receiver(cpus)?),
        None => None,
    };

    let usage0 = Usage::now();
    let start = Stamp::now();
    for i in 0..n {
        let v = record::seq(spec.fault, 0, i);
        queue(child, v)?;
        let echo = receive(child, &mut || peer.alive(2 * i + 1, 2 * n))?;
        if echo != v {
            return Err(Error::Violation(format!(
                "the signal peer answered value {v} with {echo}"
            )));
        }
    }
    let end = Stamp::now();
    let used = Usage::now().since(&usage0).plus(&peer.finish()?);
    Ok(sample(end.since(&start), used))
}

/// The peer: `N CPU` (CPU: where to pin, or `-`). Echoes N signals, checking their order.
pub(crate) fn peer(args: &[String]) -> Result<(), Error> {
    let (n, cpu) = match args {
        [n, cpu] => (
            n.parse::<u64>().map_err(|_| usage!("bad count `{n}`"))?,
            cpu.parse::<usize>().ok(),
        ),
        _ => return Err(usage!("wants N and CPU, got {args:?}")),
    };
    block()?;
    if let Some(cpu) = cpu {
        // Unpinned is still a valid run, just a noisier one.
        let _ = affinity::pin_current(cpu);
    }
    let parent = peer::parent();
    let die_after = peer::die_after();
    let mut tracker = record::Tracker::new(1);
    peer::say_ready()?;
    let usage0 = Usage::now();
    for i in 0..n {
        let v = receive(parent, &mut || peer::parent_alive(parent))?;
        tracker.accept(record::tag(0, v))?;
        queue(parent, v)?;
        peer::maybe_die(i + 1, die_after);
    }
    peer::say_usage(&Usage::now().since(&usage0))
}
