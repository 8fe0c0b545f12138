//! A ring of message slots in memory shared by two processes: the `shm` transport's channel.
//!
//! The mapping holds a header and `slots` slots of `size` bytes. Senders (threads of one
//! process) append, one receiver (in the other process) takes from the front:
//!
//! - `head` counts messages published, `tail` messages consumed; slot `i % slots` holds
//!   message `i`. Only the receiver writes `tail`; only the holder of the senders' lock writes
//!   `head`.
//! - The senders share the ring through a lock in the mapping (Drepper's three-state futex
//!   mutex: 0 free, 1 held, 2 held with sleepers). A sender holds it while it waits for a free
//!   slot and copies its message in, so messages are published in slot order and the receiver
//!   needs no lock at all. One ring per sender would avoid the lock but make the receiver poll
//!   M rings, which is not the channel the seeds compare against.
//! - Blocking on "not full" and "not empty" uses an event: a futex word bumped by the side
//!   that makes progress, and a count of sleepers so that it makes the wake system call only
//!   when someone sleeps. Before sleeping a waiter spins briefly, then yields a few times: on
//!   two CPUs the other side is often running and about to make progress.
//! - Every sleep is a futex wait with a timeout of [`CHECK_EVERY`], after which the waiter
//!   calls its `alive` check: a peer that died holding the lock, or simply died, turns into an
//!   error within that time instead of a hang.
//!
//! The futexes are process-shared (see [`super::futex`]). Neither side trusts the sizes it
//! finds in the mapping beyond bounds-checking them against the mapping's length.

use super::futex;
use super::spec::Alive;
use crate::error::Error;
use crate::model::Placement;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// How long one futex sleep lasts before the sleeper checks that its peer is alive.
pub(super) const CHECK_EVERY: Duration = Duration::from_millis(100);
/// Checks of the condition, with a PAUSE between them, before yielding.
const SPINS: u32 = 64;
/// `sched_yield`s before sleeping (about 0.2 µs each on this project's machine).
const YIELDS: u32 = 16;
/// Marks a mapping made by [`Ring::create`]: "chanring".
const MAGIC: u64 = u64::from_le_bytes(*b"chanring");
/// The most bytes of slots a ring may have, so that `-O` × `-S` cannot ask for all memory.
pub(super) const MAX_BYTES: u64 = 1 << 30;

/// A value on a cache line of its own, so that the senders' `head` and the receiver's
/// `tail` do not slow each other down.
#[repr(C, align(64))]
struct Line<T>(T);

/// A futex word to sleep on and a count of who sleeps there.
#[repr(C)]
struct Event {
    seq: AtomicU32,
    sleepers: AtomicU32,
}

/// The start of the mapping. All-zero is the initial state of every atomic.
#[repr(C)]
struct Header {
    magic: u64,
    size: u64,
    slots: u64,
    senders: u64,
    per_sender: u64,
    flags: u64,
    /// 0 until the receiver starts the clock.
    go: Line<AtomicU32>,
    head: Line<AtomicU64>,
    tail: Line<AtomicU64>,
    lock: Line<AtomicU32>,
    not_full: Line<Event>,
    not_empty: Line<Event>,
}

/// Where the slots begin.
const DATA: usize = std::mem::size_of::<Header>();

const FLAG_FAULT: u64 = 1;
const FLAG_PIN: u64 = 2;
const FLAG_APART: u64 = 4;

/// What the receiver tells the senders through the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// Bytes per message.
    pub size: usize,
    /// Slots in the ring (at least 1).
    pub slots: usize,
    /// M.
    pub senders: usize,
    /// N.
    pub per_sender: u64,
    /// `--inject-fault`.
    pub fault: bool,
    /// `--pin`, and how.
    pub pin: Option<Placement>,
}

impl Shape {
    /// Bytes the mapping needs, or `None` if that overflows.
    fn bytes(&self) -> Option<usize> {
        self.slots.checked_mul(self.size)?.checked_add(DATA)
    }
}

/// One side's view of the ring.
#[derive(Debug)]
pub(super) struct Ring {
    base: NonNull<u8>,
    len: usize,
    shape: Shape,
}

// SAFETY: the mapping is shared memory that every thread (and the other process) touches only
// through the atomics in the header and through slots that the head/tail protocol hands to one
// party at a time; the struct itself is never mutated after creation.
unsafe impl Send for Ring {}
// SAFETY: as for Send: `&Ring` gives access only through that protocol.
unsafe impl Sync for Ring {}

impl Ring {
    /// A fresh ring in a new memory file, and the file, for the other process to map.
    pub(super) fn create(shape: Shape) -> io::Result<(Ring, OwnedFd)> {
        let len = shape
            .bytes()
            .ok_or_else(|| io::Error::other("ring too large"))?;
        // SAFETY: the name is a NUL-terminated string; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"chantest-shm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let off = libc::off_t::try_from(len).map_err(io::Error::other)?;
        // SAFETY: `fd` is a valid memory file; ftruncate only sets its length (to zeros).
        if unsafe { libc::ftruncate(fd.as_raw_fd(), off) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let ring = Ring {
            base: map(fd.as_fd(), len)?,
            len,
            shape,
        };
        let h = ring.header_mut_raw();
        // SAFETY: the mapping is fresh, zeroed, at least DATA bytes long and page-aligned, and
        // no other party has it yet, so these plain writes race with nothing.
        unsafe {
            (*h).size = shape.size as u64;
            (*h).slots = shape.slots as u64;
            (*h).senders = shape.senders as u64;
            (*h).per_sender = shape.per_sender;
            let (pin, apart) = Placement::to_flags(shape.pin);
            (*h).flags = if shape.fault { FLAG_FAULT } else { 0 }
                | if pin { FLAG_PIN } else { 0 }
                | if apart { FLAG_APART } else { 0 };
            (*h).magic = MAGIC;
        }
        Ok((ring, fd))
    }

    /// Maps a ring that another process created and reads its shape.
    pub(super) fn open(fd: BorrowedFd<'_>) -> Result<Ring, String> {
        // SAFETY: all-zero is a valid `stat`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is a valid descriptor and `st` a writable `stat`.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(format!(
                "cannot stat the ring: {}",
                io::Error::last_os_error()
            ));
        }
        let len = usize::try_from(st.st_size).unwrap_or(0);
        if len < DATA {
            return Err(format!("the ring is {len} bytes, too short for its header"));
        }
        let base = map(fd, len).map_err(|e| format!("cannot map the ring: {e}"))?;
        let mut ring = Ring {
            base,
            len,
            shape: Shape {
                size: 0,
                slots: 0,
                senders: 0,
                per_sender: 0,
                fault: false,
                pin: None,
            },
        };
        let h = ring.header_mut_raw();
        // SAFETY: the mapping is at least DATA bytes; the creator wrote these fields before
        // this process was started, and nobody writes them afterwards.
        let (magic, size, slots, senders, per_sender, flags) = unsafe {
            (
                (*h).magic,
                (*h).size,
                (*h).slots,
                (*h).senders,
                (*h).per_sender,
                (*h).flags,
            )
        };
        if magic != MAGIC {
            return Err("the file on stdin is not a chantest ring".into());
        }
        let as_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        ring.shape = Shape {
            size: as_usize(size),
            slots: as_usize(slots),
            senders: as_usize(senders),
            per_sender,
            fault: flags & FLAG_FAULT != 0,
            pin: Placement::from_flags(flags & FLAG_PIN != 0, flags & FLAG_APART != 0),
        };
        match ring.shape.bytes() {
            Some(need) if need <= len && ring.shape.size >= 8 && ring.shape.slots >= 1 => Ok(ring),
            _ => Err(format!(
                "the ring's header ({} slots of {} bytes) does not fit its {len} bytes",
                ring.shape.slots, ring.shape.size
            )),
        }
    }

    /// The ring's shape.
    pub(super) fn shape(&self) -> Shape {
        self.shape
    }

    fn header_mut_raw(&self) -> *mut Header {
        self.base.as_ptr().cast::<Header>()
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned and at least DATA bytes; after creation the
        // header is accessed only through its atomics (shared references to atomics are fine
        // however many parties hold them), and the plain fields are never written again.
        unsafe { &*self.header_mut_raw() }
    }

    /// The address of the slot for message `i`: always within the mapping.
    fn slot(&self, i: u64) -> *mut u8 {
        let index = (i % self.shape.slots as u64) as usize;
        // SAFETY: index < slots and DATA + slots * size <= len (checked at create/open), so
        // the slot lies within the mapping.
        unsafe { self.base.as_ptr().add(DATA + index * self.shape.size) }
    }

    /// The receiver: lets the senders go.
    pub(super) fn start(&self) {
        let go = &self.header().go.0;
        go.store(1, Ordering::SeqCst);
        futex::wake(go, i32::MAX);
    }

    /// A sender: waits for [`start`](Ring::start).
    pub(super) fn wait_start(&self, alive: Alive<'_>) -> Result<(), Error> {
        let go = &self.header().go.0;
        while go.load(Ordering::SeqCst) == 0 {
            if !futex::wait(go, 0, CHECK_EVERY) {
                alive()?;
            }
        }
        Ok(())
    }

    /// A sender: copies `msg` (exactly `size` bytes) into the next slot, waiting for one to
    /// be free.
    pub(super) fn send(&self, msg: &[u8], alive: Alive<'_>) -> Result<(), Error> {
        debug_assert_eq!(msg.len(), self.shape.size);
        let h = self.header();
        self.lock(alive)?;
        // Only the lock holder writes head, so it cannot change under us.
        let head = h.head.0.load(Ordering::Relaxed);
        let slots = self.shape.slots as u64;
        let room = || head.wrapping_sub(h.tail.0.load(Ordering::SeqCst)) < slots;
        if let Err(e) = wait_for(&h.not_full.0, room, alive) {
            self.unlock();
            return Err(e);
        }
        let n = msg.len().min(self.shape.size);
        // SAFETY: the slot is within the mapping (see `slot`) and holds `size >= n` bytes; the
        // receiver has finished with it (tail has passed it: `room`, with SeqCst loads that
        // order its reads before our writes) and no other sender writes it (we hold the lock).
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), self.slot(head), n) };
        h.head.0.store(head.wrapping_add(1), Ordering::SeqCst);
        self.unlock();
        notify(&h.not_empty.0);
        Ok(())
    }

    /// The receiver: waits for the next message and hands its slot to `read`, then frees it.
    pub(super) fn recv<R>(
        &self,
        alive: Alive<'_>,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let h = self.header();
        // Only the receiver writes tail.
        let tail = h.tail.0.load(Ordering::Relaxed);
        wait_for(
            &h.not_empty.0,
            || h.head.0.load(Ordering::SeqCst) != tail,
            alive,
        )?;
        // SAFETY: the slot is within the mapping and holds `size` bytes; head has passed it,
        // so its sender finished writing it before publishing (SeqCst store and load), and no
        // sender writes it again until we advance tail below.
        let msg = unsafe { std::slice::from_raw_parts(self.slot(tail), self.shape.size) };
        let r = read(msg);
        h.tail.0.store(tail.wrapping_add(1), Ordering::SeqCst);
        notify(&h.not_full.0);
        Ok(r)
    }

    /// Messages published but not yet received.
    pub(super) fn pending(&self) -> u64 {
        let h = self.header();
        h.head
            .0
            .load(Ordering::SeqCst)
            .wrapping_sub(h.tail.0.load(Ordering::SeqCst))
    }

    /// Takes the senders' lock: spin, then sleep on the futex in state 2.
    fn lock(&self, alive: Alive<'_>) -> Result<(), Error> {
        let w = &self.header().lock.0;
        for _ in 0..SPINS {
            if w.load(Ordering::Relaxed) == 0
                && w.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        // A thread that has slept takes the lock as "held with sleepers", so that its unlock
        // wakes whoever slept after it.
        while w.swap(2, Ordering::Acquire) != 0 {
            if !futex::wait(w, 2, CHECK_EVERY) {
                alive()?;
            }
        }
        Ok(())
    }

    fn unlock(&self) {
        let w = &self.header().lock.0;
        if w.swap(0, Ordering::Release) == 2 {
            futex::wake(w, 1);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are the mapping made in `map`, unmapped only here; nothing
        // borrowed from it outlives `self`.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// Maps `len` bytes of `fd`, shared, for reading and writing.
fn map(fd: BorrowedFd<'_>, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of a file we hold; the kernel picks the address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

/// Waits until `ready()`: spins, yields, then sleeps on `ev` in [`CHECK_EVERY`] slices,
/// calling `alive` after each slice that timed out.
///
/// No lost wake-ups: a sleeper registers in `sleepers` and reads `seq` before its last check
/// of `ready`; the other side makes `ready` true and then, seeing a sleeper, bumps `seq` and
/// wakes. All of it SeqCst, so either the sleeper's check sees the progress, or the other side
/// sees the sleeper, and then the futex either finds `seq` changed or is woken.
fn wait_for(ev: &Event, ready: impl Fn() -> bool, alive: Alive<'_>) -> Result<(), Error> {
    for _ in 0..SPINS {
        if ready() {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    for _ in 0..YIELDS {
        if ready() {
            return Ok(());
        }
        std::thread::yield_now();
    }
    loop {
        ev.sleepers.fetch_add(1, Ordering::SeqCst);
        let seq = ev.seq.load(Ordering::SeqCst);
        if ready() {
            ev.sleepers.fetch_sub(1, Ordering::SeqCst);
            return Ok(());
        }
        let woken = futex::wait(&ev.seq, seq, CHECK_EVERY);
        ev.sleepers.fetch_sub(1, Ordering::SeqCst);
        if ready() {
            return Ok(());
        }
        if !woken {
            alive()?;
        }
    }
}

/// Wakes whoever sleeps on `ev`, after the caller has made progress.
fn notify(ev: &Event) {
    if ev.sleepers.load(Ordering::SeqCst) != 0 {
        ev.seq.fetch_add(1, Ordering::SeqCst);
        futex::wake(&ev.seq, i32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::via::record;

    fn shape(size: usize, slots: usize, senders: usize) -> Shape {
        Shape {
            size,
            slots,
            senders,
            per_sender: 500,
            fault: false,
            pin: None,
        }
    }

    #[test]
    fn create_and_open_agree() {
        let (ring, fd) = Ring::create(shape(24, 3, 2)).unwrap();
        let other = Ring::open(fd.as_fd()).unwrap();
        assert_eq!(other.shape(), ring.shape());
        let path = std::env::temp_dir().join(format!("chantest-ring-{}", std::process::id()));
        std::fs::write(&path, [0x41u8; 4096]).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        let e = Ring::open(file.as_fd()).unwrap_err();
        assert!(e.contains("not a chantest ring"), "{e}");
    }

    /// Senders and a receiver on two mappings of one file, as two processes would have them.
    #[test]
    fn messages_cross_in_order() {
        for (size, slots, senders) in [(8, 1, 1), (8, 4, 3), (40, 2, 2)] {
            let (rx, fd) = Ring::create(shape(size, slots, senders)).unwrap();
            let tx = std::sync::Arc::new(Ring::open(fd.as_fd()).unwrap());
            let threads: Vec<_> = (0..senders)
                .map(|id| {
                    let tx = std::sync::Arc::clone(&tx);
                    std::thread::spawn(move || {
                        tx.wait_start(&mut || Ok(())).unwrap();
                        let mut buf = vec![0u8; size];
                        for seq in 0..500 {
                            record::write(&mut buf, record::tag(id, seq));
                            tx.send(&buf, &mut || Ok(())).unwrap();
                        }
                    })
                })
                .collect();
            rx.start();
            let mut t = record::Tracker::new(senders);
            for _ in 0..500 * senders {
                let tag = rx.recv(&mut || Ok(()), record::read).unwrap().unwrap();
                t.accept(tag).unwrap();
            }
            threads.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(rx.pending(), 0);
        }
    }

    #[test]
    fn a_dead_peer_ends_the_wait() {
        let (rx, _fd) = Ring::create(shape(8, 1, 1)).unwrap();
        let mut calls = 0;
        let e = rx
            .recv(
                &mut || {
                    calls += 1;
                    Err(Error::Transport("gone".into()))
                },
                |_| (),
            )
            .unwrap_err();
        assert_eq!(e, Error::Transport("gone".into()));
        assert_eq!(calls, 1);
    }
}
