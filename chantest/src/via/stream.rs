//! `--via pipe` and `--via unix`: the workload over one kernel byte stream (Jesup's pipe,
//! the 2002 unix-socket test and the Linux 2.3 pipe-semaphore patch).
//!
//! M sender threads write S-byte messages (see [`super::record`]) into one pipe, or one end of
//! a `SOCK_STREAM` unix socket pair; the receiving thread reads the other end in large reads
//! and cuts the bytes back into messages, carrying a partial message over to the next read:
//! a stream keeps no message boundaries, and a read may end anywhere.
//!
//! Several writers on one stream:
//! - A pipe write of at most `PIPE_BUF` (4096) bytes is atomic: it is never interleaved with
//!   another writer's. Larger writes may be, so when M > 1 and S > 4096 the senders take turns
//!   through a mutex, each writing its whole message while holding it.
//! - A stream socket promises no atomicity at any size (Linux happens to keep small writes
//!   whole, but nothing says so), so when M > 1 its senders always take turns through the
//!   mutex.
//!
//! The mutex is part of what is measured: it is what a program would need. Were it missing,
//! interleaved messages would fail their checksums (exit 3).
//!
//! `-O` does not apply: the kernel's buffer (64 KiB for a pipe, the socket's send and receive
//! buffers for unix) is the buffer, and chantest leaves its size alone.

use super::record;
use super::spec::Spec;
use crate::affinity;
use crate::error::{usage, Error};
use crate::measure::{sample, Stamp, StartLine, Usage};
use crate::model::Sample;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

/// Reads this many bytes at a time (rounded down to whole messages, at least one).
const READ_BYTES: usize = 64 << 10;

/// Which byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `pipe2(2)`.
    Pipe,
    /// `socketpair(AF_UNIX, SOCK_STREAM)`.
    Unix,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Pipe => "pipe",
            Kind::Unix => "unix socket",
        }
    }

    /// The (read, write) ends of a fresh stream.
    fn open(self) -> io::Result<(File, File)> {
        match self {
            Kind::Pipe => {
                let mut fds = [0; 2];
                // SAFETY: `fds` has room for the two descriptors pipe2 writes.
                if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: pipe2 succeeded, so both are fresh descriptors owned by nobody else.
                let (r, w) =
                    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
                Ok((File::from(r), File::from(w)))
            }
            Kind::Unix => {
                let (r, w) = UnixStream::pair()?;
                Ok((File::from(OwnedFd::from(r)), File::from(OwnedFd::from(w))))
            }
        }
    }

    /// Whether `senders` writers of `size`-byte messages must take turns (see the module docs).
    pub(super) fn writers_take_turns(self, senders: usize, size: usize) -> bool {
        senders > 1
            && match self {
                Kind::Pipe => size > libc::PIPE_BUF,
                Kind::Unix => true,
            }
    }
}

/// The write end, shared by the senders; the last one to drop it closes the stream, which is
/// how the receiver learns that nothing more will come.
struct Writer {
    file: File,
    turns: Option<Mutex<()>>,
}

impl Writer {
    fn send(&self, msg: &[u8]) -> io::Result<()> {
        let _turn = self
            .turns
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        (&self.file).write_all(msg)
    }
}

/// One run over `kind`.
pub(super) fn run(kind: Kind, spec: &Spec<'_>) -> Result<Sample, Error> {
    let (m, n, size) = (spec.senders, spec.per_sender, spec.size);
    let (mut reader, file) = kind
        .open()
        .map_err(|e| usage!("cannot make a {}: {e}", kind.name()))?;
    let writer = Arc::new(Writer {
        file,
        turns: kind.writers_take_turns(m, size).then(|| Mutex::new(())),
    });
    let _restore = match spec.pin {
        Some(cpus) => Some(affinity::pin_receiver(cpus)?),
        None => None,
    };

    let barrier = Arc::new(Barrier::new(m + 1));
    let line = Arc::new(StartLine::default());
    let mut senders = Vec::with_capacity(m);
    for id in 0..m {
        let writer = Arc::clone(&writer);
        let barrier = Arc::clone(&barrier);
        let line = Arc::clone(&line);
        let cpu = spec.pin.map(|cpus| cpus.nth(id + 1));
        let fault = spec.fault;
        let spawned = thread::Builder::new()
            .name(format!("sender {id}"))
            .spawn(move || {
                if let Some(cpu) = cpu {
                    // Unpinned is still a valid run, just a noisier one.
                    let _ = affinity::pin_current(cpu);
                }
                let mut buf = vec![0u8; size];
                barrier.wait();
                line.mark();
                for i in 0..n {
                    record::write(&mut buf, record::tag(id, record::seq(fault, id, i)));
                    // Fails only once the receiver has gone (it found a fault): stop quietly.
                    if writer.send(&buf).is_err() {
                        return;
                    }
                }
            });
        match spawned {
            Ok(handle) => senders.push(handle),
            // As in the chan workload: the threads already started wait at a barrier that will
            // never fill, and end when the caller exits.
            Err(e) => return Err(usage!("cannot start sender thread {id} of {m}: {e}")),
        }
    }
    // Only the senders hold the write end now, so it closes when the last one finishes.
    drop(writer);

    let total = m as u64 * n;
    let mut tracker = record::Tracker::new(m);
    let mut buf = vec![0u8; (READ_BYTES / size).max(1) * size];
    let mut filled = 0;
    let mut received = 0u64;
    let usage0 = Usage::now();
    barrier.wait();
    let start = line.mark();
    while received < total {
        let got = read(&mut reader, &mut buf[filled..], kind, received, total)?;
        if got == 0 {
            return Err(Error::Transport(format!(
                "the {} reached end of file after {received} of {total} messages{}",
                kind.name(),
                if filled > 0 {
                    " and part of another"
                } else {
                    ""
                }
            )));
        }
        filled += got;
        let whole = filled - filled % size;
        for msg in buf[..whole].chunks_exact(size) {
            if received == total {
                return Err(too_many(total));
            }
            tracker.accept(record::read(msg)?)?;
            received += 1;
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
    }
    let end = Stamp::now();
    let used = Usage::now().since(&usage0);

    for (id, handle) in senders.into_iter().enumerate() {
        if handle.join().is_err() {
            return Err(Error::Violation(format!("sender {id} panicked")));
        }
    }
    // Every sender has finished and closed its end: anything more is a message too many.
    if filled > 0 || read(&mut reader, &mut buf, kind, received, total)? > 0 {
        return Err(too_many(total));
    }
    Ok(sample(end.since(&start), used))
}

/// One read, retried if a signal interrupts it.
fn read(
    r: &mut File,
    buf: &mut [u8],
    kind: Kind,
    received: u64,
    total: u64,
) -> Result<usize, Error> {
    loop {
        match r.read(buf) {
            Ok(got) => return Ok(got),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::Transport(format!(
                    "reading the {} after {received} of {total} messages: {e}",
                    kind.name()
                )))
            }
        }
    }
}

#[cold]
fn too_many(total: u64) -> Error {
    Error::Violation(format!(
        "bytes arrived after all {total} messages had been received"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_takes_turns() {
        assert!(!Kind::Pipe.writers_take_turns(1, 1 << 20));
        assert!(!Kind::Pipe.writers_take_turns(8, 4096));
        assert!(Kind::Pipe.writers_take_turns(2, 4097));
        assert!(!Kind::Unix.writers_take_turns(1, 8));
        assert!(Kind::Unix.writers_take_turns(2, 8));
    }
}
