//! Running another process with a deadline: `--against`'s builds and `--metric
//! instructions`' callgrind runs.
//!
//! A binary that never answers (a script that sleeps, a build that deadlocks) must not hang
//! chantest. The child runs in a process group of its own, so that when its time is up the
//! whole group is killed (a shell script's `sleep` included, which would otherwise keep the
//! output pipes open); a watchdog thread waits for the deadline, so nothing polls while the
//! child runs. The group is registered with [`reaper`] while it runs, so that a chantest told
//! to stop takes it along, and the child dies with chantest even by SIGKILL.
//!
//! What a child prints is kept up to [`MAX_OUTPUT`] a stream: a results document is a few
//! kilobytes, and a program that prints without end (`yes garbage`) must not fill memory.

use crate::reaper;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// The most a child may print on one stream: a results document of the largest sweep is well
/// under a megabyte; beyond this the child is killed and refused.
pub(crate) const MAX_OUTPUT: usize = 8 << 20;

/// How a child that was stopped ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// It had not exited within the limit.
    Late,
    /// It printed more than [`MAX_OUTPUT`] on a stream.
    Flooded,
}

/// Runs `cmd` (stdin from /dev/null, stdout and stderr captured) and returns its output, or
/// why it was stopped: it had not exited within `limit`, or printed more than [`MAX_OUTPUT`]
/// on a stream (it and its process group are then killed).
pub(crate) fn output_within(
    cmd: &mut Command,
    limit: Duration,
) -> io::Result<Result<Output, Stopped>> {
    let mut child = reaper::die_with_parent(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pid = child.id() as libc::pid_t;
    let _registered = reaper::group(pid);
    let (cancel, cancelled) = mpsc::channel::<bool>();
    let out = reader(child.stdout.take(), cancel.clone());
    let err = reader(child.stderr.take(), cancel.clone());
    let watchdog = thread::Builder::new()
        .name("chantest-watchdog".into())
        .spawn(move || {
            let why = match cancelled.recv_timeout(limit) {
                Err(mpsc::RecvTimeoutError::Timeout) => Stopped::Late,
                Ok(true) => Stopped::Flooded,
                _ => return None,
            };
            // SAFETY: kill has no memory-safety preconditions; a negative pid names the
            // child's process group, which `process_group(0)` made its own.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            Some(why)
        })?;
    let status = wait(&mut child);
    let _ = cancel.send(false);
    let stopped = watchdog.join().unwrap_or(None);
    let status = status?;
    // A flood is refused however the child ended (its output is cut short); a child that
    // was late but exited on its own just before the kill has answered.
    match stopped {
        Some(Stopped::Flooded) => return Ok(Err(Stopped::Flooded)),
        Some(Stopped::Late) if status.signal() == Some(libc::SIGKILL) => {
            // Whatever is left of the group is dead too; its readers end on their own.
            return Ok(Err(Stopped::Late));
        }
        _ => {}
    }
    let join = |h: thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    let (stdout, stderr) = (join(out), join(err));
    // However the watchdog heard of it: output cut short is no answer.
    if stdout.len() > MAX_OUTPUT || stderr.len() > MAX_OUTPUT {
        return Ok(Err(Stopped::Flooded));
    }
    Ok(Ok(Output {
        status,
        stdout,
        stderr,
    }))
}

fn wait(child: &mut Child) -> io::Result<std::process::ExitStatus> {
    loop {
        match child.wait() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Reads `pipe` to its end on a thread of its own (two pipes read in turn could deadlock),
/// keeping at most [`MAX_OUTPUT`] bytes; past that it tells the watchdog (`true`) and stops.
fn reader(
    pipe: Option<impl Read + Send + 'static>,
    flooded: mpsc::Sender<bool>,
) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = pipe {
            let mut p = p.take(MAX_OUTPUT as u64 + 1);
            let _ = p.read_to_end(&mut buf);
            if buf.len() > MAX_OUTPUT {
                let _ = flooded.send(true);
            }
            // Closed only now: closed first, it would end the child (SIGPIPE) before the
            // watchdog heard why.
            drop(p);
        }
        buf
    })
}

/// `d` as a person would write it for a deadline: `2s`, `1.5s`, `90s`.
pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.1}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn answers_in_time() {
        let o = output_within(
            Command::new("sh").args(["-c", "echo hi; echo there >&2"]),
            Duration::from_secs(30),
        )
        .unwrap()
        .unwrap();
        assert!(o.status.success());
        assert_eq!(
            (&o.stdout[..], &o.stderr[..]),
            (&b"hi\n"[..], &b"there\n"[..])
        );
    }

    #[test]
    fn a_sleeper_and_its_children_are_killed() {
        let t = Instant::now();
        // The shell's `sleep` child holds the pipes: only killing the group ends it.
        let o = output_within(
            Command::new("sh").args(["-c", "sleep 1000; echo late"]),
            Duration::from_millis(300),
        )
        .unwrap();
        assert_eq!(o.unwrap_err(), Stopped::Late);
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    }

    #[test]
    fn a_flood_is_cut_off() {
        let t = Instant::now();
        // `yes` never ends on its own: only the cut-off ends it, long before the limit.
        let o =
            output_within(Command::new("yes").arg("garbage"), Duration::from_secs(600)).unwrap();
        assert_eq!(o.unwrap_err(), Stopped::Flooded);
        assert!(t.elapsed() < Duration::from_secs(120), "{:?}", t.elapsed());
        // Up to the cut-off, the output is kept.
        let o = output_within(
            Command::new("head").args(["-c", &MAX_OUTPUT.to_string(), "/dev/zero"]),
            Duration::from_secs(600),
        )
        .unwrap()
        .unwrap();
        assert_eq!(o.stdout.len(), MAX_OUTPUT);
    }

    #[test]
    fn deadlines_are_written_briefly() {
        assert_eq!(secs(Duration::from_secs(2)), "2s");
        assert_eq!(secs(Duration::from_millis(1500)), "1.5s");
        assert_eq!(secs(Duration::from_secs_f64(61.4)), "61s");
    }
}
