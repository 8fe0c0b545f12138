//! The second process of the `shm` and `signal` transports: chantest started again as its own
//! peer.
//!
//! The parent re-executes its own binary (`std::env::current_exe()`) as
//! `chantest --peer VIA ARGS…`. [`crate::main`] looks for `--peer` (through
//! [`super::main_if_peer`], which starts the transport's peer side) before parsing any flags,
//! so the peer never shows in `--help`. Re-executing rather than forking keeps the child
//! free of the parent's threads and locks: after a plain `fork()` of a threaded process only
//! async-signal-safe calls are allowed, which rules out allocating, let alone running senders.
//!
//! The two talk over the child's stdout, one line at a time:
//! - `ready`, once the child can take part (its signal is blocked, its ring mapped, its
//!   threads started): the parent starts the clock only after it, so exec and start-up are not
//!   timed;
//! - `usage CPU_NS VCSW IVCSW`, at the end: the child's CPU time and context switches over
//!   the run, added to the parent's own.
//!
//! Errors go to the child's stderr (inherited) as `chantest: VIA peer: …`, and its exit
//! status says what kind they were, as for chantest itself.
//!
//! Test hook: with `CHANTEST_PEER_DIE_AFTER=n` in the environment, a peer `_exit(9)`s
//! abruptly once it has sent `n` messages, so that a test can watch the survivor notice.

use crate::error::{usage, Error};
use crate::measure::Usage;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

/// The first argument that makes chantest a peer.
pub(crate) const FLAG: &str = "--peer";
/// The environment variable of the test hook (see the module docs).
pub(crate) const DIE_AFTER_ENV: &str = "CHANTEST_PEER_DIE_AFTER";
/// The exit status of a peer that the test hook killed.
pub(crate) const DIE_STATUS: i32 = 9;

/// The parent's handle on its peer. Dropping it kills and reaps the peer, so that no error
/// path leaves a child behind.
pub(crate) struct Peer {
    /// The transport's name (`shm`, `signal`): the peer's first argument, and in messages.
    via: &'static str,
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    /// Starts `chantest --peer VIA ARGS…`, with `stdin` as its standard input (or none).
    ///
    /// `via` is the transport's name, as [`super::Via::name`] gives it (a name rather than the
    /// type, so that this module, which the transports import, imports none of them back).
    pub(crate) fn spawn(
        via: &'static str,
        args: &[String],
        stdin: Option<OwnedFd>,
    ) -> Result<Peer, Error> {
        let exe = std::env::current_exe()
            .map_err(|e| usage!("--via {via}: cannot find chantest's own executable: {e}"))?;
        // The peer dies with us (SIGKILL included): it is started by the thread that runs the
        // transport, which waits for it before it ends.
        let mut child = crate::reaper::die_with_parent(&mut Command::new(exe))
            .arg(FLAG)
            .arg(via)
            .args(args)
            .stdin(stdin.map_or_else(Stdio::null, Stdio::from))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| usage!("--via {via}: cannot start the peer process: {e}"))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(usage!("--via {via}: the peer process has no stdout"));
        };
        Ok(Peer {
            via,
            child,
            stdout: BufReader::new(stdout),
        })
    }

    /// The peer's process id.
    pub(crate) fn pid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.child.id()).unwrap_or(0)
    }

    /// Waits for the peer's `ready`.
    pub(crate) fn ready(&mut self) -> Result<(), Error> {
        match self.line()? {
            Some(line) if line == "ready" => Ok(()),
            other => Err(self.unexpected(other, "before it was ready")),
        }
    }

    /// `Ok` while the peer runs; once it has exited, the error that says so, with how far the
    /// run had got.
    pub(crate) fn alive(&mut self, done: u64, total: u64) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(Error::Transport(format!(
                "the {} peer (pid {}) {} after {done} of {total} messages",
                self.via,
                self.child.id(),
                describe(status)
            ))),
            Err(e) => Err(Error::Transport(format!(
                "cannot check on the {} peer: {e}",
                self.via
            ))),
        }
    }

    /// Reads the peer's `usage` line and waits for it to exit; anything but a clean exit is an
    /// error.
    pub(crate) fn finish(mut self) -> Result<Usage, Error> {
        let line = self.line()?;
        let used = line.as_deref().and_then(parse_usage);
        let status = self
            .child
            .wait()
            .map_err(|e| Error::Transport(format!("cannot wait for the {} peer: {e}", self.via)))?;
        match used {
            Some(u) if status.success() => Ok(u),
            _ if !status.success() => Err(Error::Transport(format!(
                "the {} peer {} at the end of the run",
                self.via,
                describe(status)
            ))),
            _ => Err(self.unexpected(line, "at the end of the run")),
        }
    }

    /// The next line from the peer, without its newline; `None` at end of file.
    fn line(&mut self) -> Result<Option<String>, Error> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(line.trim_end().to_string())),
            Err(e) => Err(Error::Transport(format!(
                "cannot read from the {} peer: {e}",
                self.via
            ))),
        }
    }

    /// The error for a line that was not the one expected (`None`: the peer closed stdout,
    /// most likely by exiting).
    fn unexpected(&mut self, line: Option<String>, when: &str) -> Error {
        match line {
            Some(l) => Error::Transport(format!("the {} peer said `{l}` {when}", self.via)),
            None => {
                let how = self
                    .child
                    .wait()
                    .map_or_else(|e| format!("could not be waited for ({e})"), describe);
                Error::Transport(format!("the {} peer {how} {when}", self.via))
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // After `finish` the child is reaped and std sends nothing; otherwise this ends a peer
        // that an error left running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// "exited with status 9", "was killed by signal 9".
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => format!("ended ({status})"),
    }
}

fn parse_usage(line: &str) -> Option<Usage> {
    let mut words = line.strip_prefix("usage ")?.split(' ');
    let mut next = || words.next()?.parse::<u64>().ok();
    Some(Usage {
        cpu_ns: next()?,
        vcsw: next()?,
        ivcsw: next()?,
    })
}

/// In the peer: tells the parent it may start the clock.
pub(crate) fn say_ready() -> Result<(), Error> {
    say("ready")
}

/// In the peer: reports what the run cost this process.
pub(crate) fn say_usage(used: &Usage) -> Result<(), Error> {
    say(&format!(
        "usage {} {} {}",
        used.cpu_ns, used.vcsw, used.ivcsw
    ))
}

fn say(line: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::Transport(format!("cannot write to the parent: {e}")))
}

/// In the peer: the test hook's message count, if set.
pub(crate) fn die_after() -> Option<u64> {
    std::env::var(DIE_AFTER_ENV).ok()?.trim().parse().ok()
}

/// In the peer: ends the process abruptly, as a crash would, once `sent` reaches the hook's
/// count.
#[inline]
pub(crate) fn maybe_die(sent: u64, after: Option<u64>) {
    if after.is_some_and(|n| sent >= n) {
        // SAFETY: _exit ends the process at once, without unwinding or running destructors,
        // which is the point: the test wants the peer to vanish mid-run, locks held and all.
        unsafe { libc::_exit(DIE_STATUS) };
    }
}

/// In the peer: `Ok` while the process that started this one is still its parent.
pub(crate) fn parent_alive(parent: libc::pid_t) -> Result<(), Error> {
    // SAFETY: getppid has no preconditions and cannot fail.
    if unsafe { libc::getppid() } == parent {
        Ok(())
    } else {
        Err(Error::Transport(format!(
            "the chantest that started this peer (pid {parent}) exited mid-run"
        )))
    }
}

/// In the peer: the parent's process id.
pub(crate) fn parent() -> libc::pid_t {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines() {
        assert_eq!(
            parse_usage("usage 1 2 3"),
            Some(Usage {
                cpu_ns: 1,
                vcsw: 2,
                ivcsw: 3
            })
        );
        assert_eq!(parse_usage("usage 1 2"), None);
        assert_eq!(parse_usage("ready"), None);
    }
}
