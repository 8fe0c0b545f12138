//! Running another process with a deadline: `--against`'s builds and `--metric
//! instructions`' callgrind runs.
//!
//! A binary that never answers (a script that sleeps, a build that deadlocks) must not hang
//! chantest. The child runs in a process group of its own, so that when its time is up the
//! whole group is killed (a shell script's `sleep` included, which would otherwise keep the
//! output pipes open); a watchdog thread waits for the deadline, so nothing polls while the
//! child runs.

use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `cmd` (stdin from /dev/null, stdout and stderr captured) and returns its output, or
/// `None` if it had not exited within `limit` (it and its process group are then killed).
pub(crate) fn output_within(cmd: &mut Command, limit: Duration) -> io::Result<Option<Output>> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let (cancel, cancelled) = mpsc::channel::<()>();
    let pid = child.id() as libc::pid_t;
    let watchdog = thread::Builder::new()
        .name("chantest-watchdog".into())
        .spawn(move || match cancelled.recv_timeout(limit) {
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // SAFETY: kill has no memory-safety preconditions; a negative pid names the
                // child's process group, which `process_group(0)` made its own.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                true
            }
            _ => false,
        })?;
    let status = wait(&mut child);
    let _ = cancel.send(());
    let killed = watchdog.join().unwrap_or(false);
    let status = status?;
    if killed && status.signal() == Some(libc::SIGKILL) {
        // Whatever is left of the group is dead too; its readers end on their own.
        return Ok(None);
    }
    let join = |h: thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    Ok(Some(Output {
        status,
        stdout: join(out),
        stderr: join(err),
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

/// Reads `pipe` to its end on a thread of its own (two pipes read in turn could deadlock).
fn reader(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
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
        assert!(o.is_none());
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    }

    #[test]
    fn deadlines_are_written_briefly() {
        assert_eq!(secs(Duration::from_secs(2)), "2s");
        assert_eq!(secs(Duration::from_millis(1500)), "1.5s");
        assert_eq!(secs(Duration::from_secs_f64(61.4)), "61s");
    }
}
