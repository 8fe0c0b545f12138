//! The watchdog: names the thread that is stuck, and in which operation, then exits 3.
//!
//! Every thread of a round owns a [`Slot`] where it writes what it is doing before each
//! channel operation (one relaxed store) and counts its completed transfers. A value's drop
//! that re-enters a channel writes a second, inner line, so that a deadlock inside the
//! library's drop of a user's value shows as exactly that. The watchdog thread wakes ten
//! times a second; when no thread has completed anything for [`STALL`], or a round has run
//! far past its length, it prints every thread's slot and ends the process, since a thread
//! stuck in a lock cannot be joined.

use super::book::Book;
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long without any completed transfer counts as stuck.
pub(super) const STALL: Duration = Duration::from_secs(5);
/// How far past its planned length a round may run before it counts as stuck, even while
/// some threads still make progress.
pub(super) const OVERRUN: Duration = Duration::from_secs(30);
const TICK: Duration = Duration::from_millis(100);

/// An operation, as a slot shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Op {
    /// Between operations.
    Idle,
    /// `send`.
    Send,
    /// `nbsend`.
    NbSend,
    /// `send_timeout`.
    SendTimeout,
    /// `send_deadline`.
    SendDeadline,
    /// `recv`.
    Recv,
    /// `nbrecv`.
    NbRecv,
    /// `recv_timeout`.
    RecvTimeout,
    /// `recv_deadline`.
    RecvDeadline,
    /// `iter().take(n)`.
    Iter,
    /// `try_iter()`.
    TryIter,
    /// `len`, `closing`, `is_closed`.
    Len,
    /// `Alt::wait`.
    AltWait,
    /// `Alt::try_wait`.
    AltTryWait,
    /// `Alt::wait_timeout`.
    AltWaitTimeout,
    /// `Alt::wait_deadline`.
    AltWaitDeadline,
    /// `alt!` with a timeout.
    AltMacro,
    /// `send_async` (a task).
    SendAsync,
    /// `recv_async` (a task).
    RecvAsync,
    /// `Alt::wait_async` or `alt!(async; ..)` (a task).
    AltAsync,
    /// Dropping a pending future (a task's cancellation).
    Cancel,
    /// Dropping a handle and cloning a fresh one.
    Reclone,
    /// Dropping a value on the user's side (a received one, or one given back).
    UserDrop,
    /// `close`.
    Close,
    /// Receiving what is left in closed channels.
    Drain,
    /// The main thread waiting for the workers to finish.
    Wait,
    /// Joining the workers.
    Join,
    /// Destroying the round's channels.
    Teardown,
    /// The thread has finished.
    Done,
}

const OPS: [Op; 29] = [
    Op::Idle,
    Op::Send,
    Op::NbSend,
    Op::SendTimeout,
    Op::SendDeadline,
    Op::Recv,
    Op::NbRecv,
    Op::RecvTimeout,
    Op::RecvDeadline,
    Op::Iter,
    Op::TryIter,
    Op::Len,
    Op::AltWait,
    Op::AltTryWait,
    Op::AltWaitTimeout,
    Op::AltWaitDeadline,
    Op::AltMacro,
    Op::SendAsync,
    Op::RecvAsync,
    Op::AltAsync,
    Op::Cancel,
    Op::Reclone,
    Op::UserDrop,
    Op::Close,
    Op::Drain,
    Op::Wait,
    Op::Join,
    Op::Teardown,
    Op::Done,
];

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Idle => "between operations",
            Op::Send => "send",
            Op::NbSend => "nbsend",
            Op::SendTimeout => "send_timeout",
            Op::SendDeadline => "send_deadline",
            Op::Recv => "recv",
            Op::NbRecv => "nbrecv",
            Op::RecvTimeout => "recv_timeout",
            Op::RecvDeadline => "recv_deadline",
            Op::Iter => "iter",
            Op::TryIter => "try_iter",
            Op::Len => "len/closing",
            Op::AltWait => "alt.wait",
            Op::AltTryWait => "alt.try_wait",
            Op::AltWaitTimeout => "alt.wait_timeout",
            Op::AltWaitDeadline => "alt.wait_deadline",
            Op::AltMacro => "alt! with timeout",
            Op::SendAsync => "send_async",
            Op::RecvAsync => "recv_async",
            Op::AltAsync => "alt.wait_async",
            Op::Cancel => "dropping a pending future",
            Op::Reclone => "re-cloning a handle",
            Op::UserDrop => "dropping a value",
            Op::Close => "close",
            Op::Drain => "draining closed channels",
            Op::Wait => "waiting for the workers",
            Op::Join => "joining the workers",
            Op::Teardown => "destroying the channels",
            Op::Done => "finished",
        }
    }
}

/// The most alt arms a slot can describe.
pub(super) const MAX_ARMS: usize = 8;
const NO_CHAN: u64 = 0xff;

/// What a thread is doing, packed in one word: the op, its channel, and an alt's arms
/// (4 bits each: a send flag and the channel).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Doing(u64);

impl Doing {
    /// `op` on channel `chan` (or on none).
    pub(super) fn op(op: Op, chan: Option<usize>) -> Doing {
        Doing(op as u64 | chan.map_or(NO_CHAN, |c| c as u64 & 0xff) << 8)
    }

    /// An alt waiting with `op` on `arms`: `(is_send, chan)` each.
    pub(super) fn alt(op: Op, arms: impl Iterator<Item = (bool, usize)>) -> Doing {
        let mut w = op as u64 | NO_CHAN << 8;
        let mut n = 0;
        for (send, chan) in arms.take(MAX_ARMS) {
            w |= (u64::from(send) << 3 | (chan as u64 & 7)) << (20 + 4 * n);
            n += 1;
        }
        Doing(w | n << 16)
    }

    fn op_code(self) -> Op {
        OPS.get((self.0 & 0xff) as usize)
            .copied()
            .unwrap_or(Op::Idle)
    }
}

impl fmt::Display for Doing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.op_code().name())?;
        let chan = (self.0 >> 8) & 0xff;
        if chan != NO_CHAN {
            write!(f, " on c{chan}")?;
        }
        let arms = (self.0 >> 16) & 0xf;
        if arms > 0 {
            f.write_str(" [")?;
            for i in 0..arms {
                let a = (self.0 >> (20 + 4 * i)) & 0xf;
                let dir = if a & 8 != 0 { "send" } else { "recv" };
                let sep = if i > 0 { ", " } else { "" };
                write!(f, "{sep}{dir} c{}", a & 7)?;
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

/// One thread's (or async task's) line on the watchdog's board.
pub(super) struct Slot {
    name: String,
    /// An async task's, rather than a thread's.
    task: bool,
    doing: AtomicU64,
    /// A re-entrant drop's operation (`Doing` in the low 32 bits, the value's id above), or 0.
    inner: AtomicU64,
    /// Bumped at every `begin`, so that the watchdog sees how long one operation has lasted.
    started: AtomicU64,
    /// Completed transfers: the watchdog's measure of progress.
    done: AtomicU64,
    /// The round's book, where the values the slot names are described.
    book: Arc<Book>,
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(self, None))
    }
}

impl Slot {
    fn new(name: String, task: bool, book: Arc<Book>) -> Slot {
        Slot {
            name,
            task,
            doing: AtomicU64::new(Doing::op(Op::Idle, None).0),
            inner: AtomicU64::new(0),
            started: AtomicU64::new(0),
            done: AtomicU64::new(0),
            book,
        }
    }

    /// Says what the thread is about to do.
    #[inline]
    pub(super) fn begin(&self, doing: Doing) {
        self.doing.store(doing.0, Relaxed);
        self.started
            .store(self.started.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Counts one completed transfer (only the owning thread writes, so no atomic add).
    #[inline]
    pub(super) fn tick(&self) {
        self.done.store(self.done.load(Relaxed) + 1, Relaxed);
    }
}

thread_local! {
    /// The slot of the thread, or of the task it is polling. Per thread by nature: the panic
    /// hook and a value's drop learn from it where they run, and they are handed nothing. It
    /// holds the running round's slot only: set when a worker registers (a task brings its
    /// own in for each poll and takes it out again), cleared when the round ends.
    static MINE: RefCell<Option<Arc<Slot>>> = const { RefCell::new(None) };
}

/// The board: the current round's slots and what to say about the round.
struct Board {
    slots: Vec<Arc<Slot>>,
    /// Bumped by every round start, so that the watchdog forgets the last round's timings.
    generation: u64,
    book: Arc<Book>,
    round: String,
    replay: String,
    started: Instant,
    length: Duration,
    /// Between `round_begin` and `round_end`: the main thread's own work between rounds is
    /// not watched.
    active: bool,
}

/// The watchdog of a run, shared by its watching thread and the rounds.
#[derive(Debug, Default)]
pub(super) struct Watchdog {
    board: Mutex<Option<Board>>,
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Board")
            .field("round", &self.round)
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl Watchdog {
    fn board(&self) -> std::sync::MutexGuard<'_, Option<Board>> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new round begins: `book` is its book, `round` describes it, `replay` is the command
    /// that replays it.
    pub(super) fn round_begin(
        &self,
        book: Arc<Book>,
        round: String,
        replay: String,
        length: Duration,
    ) {
        let mut b = self.board();
        let generation = b.as_ref().map_or(0, |b| b.generation + 1);
        *b = Some(Board {
            slots: Vec::new(),
            generation,
            book,
            round,
            replay,
            started: Instant::now(),
            length,
            active: true,
        });
    }

    /// The round is over: its slots go.
    pub(super) fn round_end(&self) {
        if let Some(b) = self.board().as_mut() {
            b.slots.clear();
            b.active = false;
        }
        MINE.with(|m| m.borrow_mut().take());
    }

    /// Gives the calling thread a slot named `name` on the board, and returns it.
    pub(super) fn register(&self, name: String) -> Arc<Slot> {
        let slot = self.new_slot(name, false);
        MINE.with(|m| *m.borrow_mut() = Some(Arc::clone(&slot)));
        slot
    }

    /// A slot on the board for an async task named `name`: the task brings it in with
    /// [`swap_mine`] whenever it is polled, on whichever thread.
    pub(super) fn register_task(&self, name: String) -> Arc<Slot> {
        self.new_slot(name, true)
    }

    fn new_slot(&self, name: String, task: bool) -> Arc<Slot> {
        let mut b = self.board();
        let b = b.as_mut().expect("a slot is registered during a round");
        let slot = Arc::new(Slot::new(name, task, Arc::clone(&b.book)));
        b.slots.push(Arc::clone(&slot));
        slot
    }
}

/// Makes `slot` the calling thread's slot, returning the one it had.
pub(super) fn swap_mine(slot: Option<Arc<Slot>>) -> Option<Arc<Slot>> {
    MINE.try_with(|m| std::mem::replace(&mut *m.borrow_mut(), slot))
        .ok()
        .flatten()
}

/// The name of the running thread (or of the async task it is polling), for messages.
pub(super) fn thread_name() -> String {
    let thread = || {
        std::thread::current()
            .name()
            .unwrap_or("unnamed thread")
            .to_string()
    };
    let task = MINE.try_with(|m| {
        m.borrow()
            .as_ref()
            .filter(|s| s.task)
            .map(|s| s.name.clone())
    });
    match task.ok().flatten() {
        Some(task) => format!("{task}` (a task) on `{}", thread()),
        None => thread(),
    }
}

/// Counts a completed transfer for the calling thread (from code that has no slot at hand).
pub(super) fn tick() {
    let _ = MINE.try_with(|m| {
        if let Some(s) = m.borrow().as_ref() {
            s.tick();
        }
    });
}

/// Shows, until the guard is dropped, that the calling thread is inside a value's drop doing
/// `doing` to value `id`'s channel.
pub(super) fn inner(doing: Doing, id: u32) -> InnerGuard {
    let w = (doing.0 & 0xffff_ffff) | u64::from(id) << 32;
    let previous = MINE
        .try_with(|m| m.borrow().as_ref().map(|s| s.inner.swap(w, Relaxed)))
        .ok()
        .flatten();
    InnerGuard { previous }
}

/// Restores the slot's inner line; see [`inner`].
pub(super) struct InnerGuard {
    previous: Option<u64>,
}

impl Drop for InnerGuard {
    fn drop(&mut self) {
        if let Some(p) = self.previous {
            let _ = MINE.try_with(|m| {
                if let Some(s) = m.borrow().as_ref() {
                    s.inner.store(p, Relaxed);
                }
            });
        }
    }
}

/// What the calling thread is doing, for a panic message.
pub(super) fn current() -> String {
    MINE.try_with(|m| m.borrow().as_ref().map(|s| describe(s, None)))
        .ok()
        .flatten()
        .unwrap_or_else(|| "outside any operation".into())
}

fn describe(s: &Slot, for_how_long: Option<Duration>) -> String {
    let what = if s.task { "task" } else { "thread" };
    let mut line = format!("{what} `{}`: {}", s.name, Doing(s.doing.load(Relaxed)));
    if let Some(d) = for_how_long {
        line += &format!(" for {:.1} s", d.as_secs_f64());
    }
    let inner = s.inner.load(Relaxed);
    if inner != 0 {
        let id = (inner >> 32) as u32;
        line += &format!(
            ", inside the drop of value #{id} ({}): {}",
            s.book.ledger.origin(id),
            Doing(inner & 0xffff_ffff)
        );
    }
    line
}

/// Starts the watchdog thread. When it finds the process stuck it prints the board to
/// stderr, calls `on_stuck` with a one-line reason (which should print the summary) and the
/// round's note on its hostile wakers, if any, and exits with status 3.
pub(super) fn start(on_stuck: impl Fn(&str, Option<String>) + Send + 'static) -> Arc<Watchdog> {
    let dog = Arc::new(Watchdog::default());
    let watching = Arc::clone(&dog);
    let spawned = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || watch(&watching, on_stuck));
    // Without a watchdog the soak still checks everything; a hang would just not be named.
    if let Err(e) = spawned {
        eprintln!("chansoak: soak: cannot start the watchdog ({e}); a stuck thread will hang");
    }
    dog
}

fn watch(dog: &Watchdog, on_stuck: impl Fn(&str, Option<String>)) {
    let mut generation = u64::MAX;
    let mut progress = 0u64;
    let mut last_progress = Instant::now();
    // Per slot: the `started` count last seen, and since when.
    let mut seen: Vec<(u64, Instant)> = Vec::new();
    loop {
        std::thread::sleep(TICK);
        let now = Instant::now();
        let b = dog.board();
        let Some(b) = b.as_ref().filter(|b| b.active) else {
            continue;
        };
        if b.generation != generation {
            generation = b.generation;
            seen.clear();
            last_progress = now;
        }
        let total: u64 = b.slots.iter().map(|s| s.done.load(Relaxed)).sum();
        if total != progress {
            progress = total;
            last_progress = now;
        }
        seen.resize(b.slots.len(), (u64::MAX, now));
        for (s, (count, since)) in b.slots.iter().zip(seen.iter_mut()) {
            let c = s.started.load(Relaxed);
            if c != *count {
                *count = c;
                *since = now;
            }
        }
        let reason = if now - last_progress >= STALL {
            format!(
                "no thread completed a send or receive for {:.1} s",
                (now - last_progress).as_secs_f64()
            )
        } else if now - b.started >= b.length + OVERRUN {
            format!(
                "the round has run {:.1} s, planned for {:.1} s",
                (now - b.started).as_secs_f64(),
                b.length.as_secs_f64()
            )
        } else {
            continue;
        };
        let tasks = b
            .slots
            .iter()
            .filter(|s| s.task && Doing(s.doing.load(Relaxed)).op_code() != Op::Done)
            .count();
        let reason = match tasks {
            0 => reason,
            n => format!("{reason}; {n} async task workers unfinished"),
        };
        eprintln!("chansoak: soak: stuck: {reason}");
        eprintln!("  in {}", b.round);
        eprintln!(
            "  each unfinished thread's and task's operation, and how long it has been in it:"
        );
        for (s, (_, since)) in b.slots.iter().zip(&seen) {
            if Doing(s.doing.load(Relaxed)).op_code() == Op::Done {
                continue;
            }
            // Most threads of a stuck round merely wait for one that is really stuck; one
            // inside a value's drop, inside a channel operation, is the likeliest culprit.
            let mark = match (s.inner.load(Relaxed), s.task) {
                (0, false) => "",
                (0, true) => "  <- an async task, pending or being polled",
                _ => "  <- re-entered a channel from a value's drop",
            };
            eprintln!("  {}{mark}", describe(s, Some(now - *since)));
        }
        eprintln!("  replay: {}", b.replay);
        let who = if tasks > 0 {
            "a thread or task"
        } else {
            "a thread"
        };
        on_stuck(
            &format!("{who} was stuck ({reason}) in {}", b.round),
            b.book.stuck_note(),
        );
        std::process::exit(3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Ledger;
    use crate::settings::Settings;

    #[test]
    fn doing_reads_back() {
        assert_eq!(Doing::op(Op::Recv, Some(2)).to_string(), "recv on c2");
        assert_eq!(Doing::op(Op::Join, None).to_string(), "joining the workers");
        let alt = Doing::alt(Op::AltWait, [(false, 0), (true, 3), (false, 0)].into_iter());
        assert_eq!(alt.to_string(), "alt.wait [recv c0, send c3, recv c0]");
        for (i, op) in OPS.iter().enumerate() {
            assert_eq!(*op as usize, i);
        }
    }

    #[test]
    fn a_task_says_so() {
        let book = Arc::new(Book::new(
            0,
            Arc::new(Ledger::new()),
            Settings::default(),
            false,
        ));
        let task = Slot::new("recv 3 (home c1)".into(), true, Arc::clone(&book));
        task.begin(Doing::op(Op::RecvAsync, Some(1)));
        assert_eq!(
            describe(&task, None),
            "task `recv 3 (home c1)`: recv_async on c1"
        );
        let thread = Slot::new("send 0".into(), false, book);
        assert!(describe(&thread, None).starts_with("thread `send 0`: "));
    }
}
