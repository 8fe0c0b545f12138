//! Spin briefly, then sleep on a futex: the strategy of the Linux adaptive semaphore in seed
//! 003, glibc's adaptive mutex, Go's runtime lock, parking_lot and Rust's std.
//!
//! The lock word is 0 (free) or 1 (held), beside a count of the threads asleep on it. A
//! contended locker first watches the word with relaxed loads and a PAUSE hint for a budget of
//! *time* ([`AdaptiveParams::spin_ns`]), then keeps watching between `sched_yield`s for a
//! second budget ([`AdaptiveParams::yield_ns`]), and only then counts itself a sleeper and
//! sleeps on the futex. When the process may run on a single CPU it skips the spinning (the
//! holder cannot progress while we burn the only CPU) but still yields, which hands that CPU
//! to the thread we are waiting for. A thread whose spins keep missing, because the scheduler
//! has put it on the CPU of the thread it waits for, stops spinning too, and the wait at
//! which it stops sleeps at once instead of yielding: the wake-up is the scheduler's chance
//! to move it to a CPU of its own (see `STOPPED`).
//!
//! Unlock is a plain store, then a read of the sleeper count, and a futex wake only if it is
//! not 0 and no wake-up sent earlier is still on its way to a sleeper: no read-modify-write,
//! so an uncontended unlock costs what Plan 9's spin lock's does. (Drepper's three-state
//! mutex, std's, releases with a swap to learn whether anyone sleeps; that locked
//! instruction drains the store buffer on every unlock.) A store followed
//! by a load of another word needs a full fence on both sides to be sure one side sees the
//! other; here the unlock's side is a compiler fence and the sleeper's side, taken once before
//! it first sleeps, is `membarrier(2)` (see `barrier.rs`). Where that cannot be had, a
//! contended locker never sleeps: it keeps yielding, as Plan 9's lock does.

use crate::barrier;
use crate::futex;
use crate::migrate::{leave_cpu, Left};
use crate::spin::{spin_pays, spun, worth_spinning, Budget};
use crate::stats::count;
use crate::strategy::{parse_num, Params, Strategy, Waiter};
use crate::sync::{fence, spin_hint, yield_now, AtomicU32, Ordering::*};
use std::fmt;
use std::time::Instant;

/// Tuning of [`Adaptive`] and its waiter.
///
/// `#[non_exhaustive]`: start from [`DEFAULT`](Self::DEFAULT) and change what you need with
/// the `with_*` methods (or by assigning a field), so that a new knob is not a breaking change.
///
/// ```
/// use locks::AdaptiveParams;
/// let p = AdaptiveParams::DEFAULT.with_spin_ns(500).with_yield_ns(0);
/// assert_eq!(p.to_string(), ":spin_ns=500:yield_ns=0");
/// assert_eq!("adaptive:spin_ns=500:yield_ns=0".parse(), Ok(locks::Backend::Adaptive(p)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdaptiveParams {
    /// How long a locker that finds the lock held spins (PAUSE-hinted loads) before yielding,
    /// in nanoseconds; 0 never spins. Skipped when the process may run on only one CPU.
    pub spin_ns: u32,
    /// The same for an [`AdaptiveWaiter`] that is first in line
    /// ([`Strategy::first_waiter`]; `chan` asks for one on channels of at most one buffer):
    /// how long a blocked channel operation that will be served next spins before yielding.
    /// Waiters further back never spin: with more blocked threads than CPUs, spinning ones
    /// would take the CPU from the thread they wait for. A hand-off's locker
    /// ([`Strategy::lock_in_hand_off`], which `chan` uses on the same channels) spins as long.
    pub wait_spin_ns: u32,
    /// How long to keep calling `sched_yield` after spinning, before sleeping on the futex,
    /// in nanoseconds; 0 never yields.
    pub yield_ns: u32,
    /// How a task's locker ([`Strategy::lock_in_task`]) that finds the lock held waits, in
    /// microseconds: it yields once, and then, for as long as the lock stays held, sleeps this
    /// long between looks, woken by no unlock; 0 waits as a thread's locker does. Another
    /// worker holds the lock (tasks on one worker never contend for it), and keeping this
    /// worker off it for a while lets that worker run the exchange alone: on a two-worker
    /// tokio runtime with eight sender tasks, 4-5 times faster than both workers trading the
    /// lock (`docs/tuning.md`). The cost is latency: a contended task may wait this long, plus
    /// the kernel's timer slack (50 us by default), where it would otherwise wait microseconds.
    pub task_nap_us: u32,
    /// What a thread whose spins stop paying does: it most likely shares a CPU with the
    /// thread it waits for. With `true` (Linux only) it moves to another of its CPUs, by
    /// narrowing its CPU mask for one system call and restoring it, unless some thread of the
    /// process moved less than a millisecond ago. With `false` it never touches a mask: it
    /// sleeps instead, so that its wake-up may place it elsewhere, which parts the two only
    /// when a CPU is idle. With three threads on two CPUs, two rendezvous processes in five
    /// ran 3-5 times slower without moves, one in twenty with them (`docs/tuning.md`). The
    /// cost to a program: a CPU mask that another thread sets for this one at the very moment
    /// of a move is undone.
    pub moves: bool,
    /// A test aid, not a tuning knob, present only with the `test-aids` feature: busy-wait
    /// this many nanoseconds inside every critical section (after the lock is taken), so that
    /// a known slowdown can be injected and a regression test shown to catch it (`chantest
    /// --calibrate`). Without the feature the lock has no such branch at all.
    #[cfg(feature = "test-aids")]
    pub hold_ns: u32,
    /// A test aid like [`hold_ns`](Self::hold_ns), counted in loop turns instead of
    /// nanoseconds: the same work in every process. `hold_ns` converts to turns at a rate each
    /// process times once, so under callgrind, whose speed follows the machine's load, two
    /// processes' instruction counts differ; a hold measured in instructions needs this one.
    #[cfg(feature = "test-aids")]
    pub hold_loops: u32,
}

impl AdaptiveParams {
    /// The defaults: never spin as a locker (`spin_ns` 0); spin 2 us only as the waiter first
    /// in line or a hand-off's locker (`wait_spin_ns`, which `chan` asks for on channels of
    /// at most one buffer);
    /// yield for up to 20 us before the futex sleep (`yield_ns`), since a futex sleep and wake
    /// costs far more than a yield; a task's locker naps 20 us at a time once a yield has not
    /// freed the lock (`task_nap_us`); a thread whose spins stop paying moves to another CPU
    /// (`moves`). Chosen by measurement: the figures are in the
    /// repository's `docs/tuning.md`.
    pub const DEFAULT: AdaptiveParams = AdaptiveParams {
        spin_ns: 0,
        wait_spin_ns: 2_000,
        yield_ns: 20_000,
        task_nap_us: 20,
        moves: true,
        #[cfg(feature = "test-aids")]
        hold_ns: 0,
        #[cfg(feature = "test-aids")]
        hold_loops: 0,
    };

    /// With [`spin_ns`](Self::spin_ns) set.
    pub const fn with_spin_ns(mut self, ns: u32) -> Self {
        self.spin_ns = ns;
        self
    }

    /// With [`wait_spin_ns`](Self::wait_spin_ns) set.
    pub const fn with_wait_spin_ns(mut self, ns: u32) -> Self {
        self.wait_spin_ns = ns;
        self
    }

    /// With [`yield_ns`](Self::yield_ns) set.
    pub const fn with_yield_ns(mut self, ns: u32) -> Self {
        self.yield_ns = ns;
        self
    }

    /// With [`task_nap_us`](Self::task_nap_us) set.
    pub const fn with_task_nap_us(mut self, us: u32) -> Self {
        self.task_nap_us = us;
        self
    }

    /// With [`moves`](Self::moves) set.
    pub const fn with_moves(mut self, moves: bool) -> Self {
        self.moves = moves;
        self
    }

    /// With [`hold_ns`](Self::hold_ns) set (a test aid: the `test-aids` feature).
    #[cfg(feature = "test-aids")]
    pub const fn with_hold_ns(mut self, ns: u32) -> Self {
        self.hold_ns = ns;
        self
    }

    /// With [`hold_loops`](Self::hold_loops) set (a test aid: the `test-aids` feature).
    #[cfg(feature = "test-aids")]
    pub const fn with_hold_loops(mut self, loops: u32) -> Self {
        self.hold_loops = loops;
        self
    }
}

impl Default for AdaptiveParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for AdaptiveParams {
    /// Only the parameters that differ from the defaults, each as `:key=value`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.spin_ns != Self::DEFAULT.spin_ns {
            write!(f, ":spin_ns={}", self.spin_ns)?;
        }
        if self.wait_spin_ns != Self::DEFAULT.wait_spin_ns {
            write!(f, ":wait_spin_ns={}", self.wait_spin_ns)?;
        }
        if self.yield_ns != Self::DEFAULT.yield_ns {
            write!(f, ":yield_ns={}", self.yield_ns)?;
        }
        if self.task_nap_us != Self::DEFAULT.task_nap_us {
            write!(f, ":task_nap_us={}", self.task_nap_us)?;
        }
        if self.moves != Self::DEFAULT.moves {
            write!(f, ":moves={}", u8::from(self.moves))?;
        }
        #[cfg(feature = "test-aids")]
        if self.hold_ns != Self::DEFAULT.hold_ns {
            write!(f, ":hold_ns={}", self.hold_ns)?;
        }
        #[cfg(feature = "test-aids")]
        if self.hold_loops != Self::DEFAULT.hold_loops {
            write!(f, ":hold_loops={}", self.hold_loops)?;
        }
        Ok(())
    }
}

/// The tuning keys, then any others (the test aids, when built in).
macro_rules! keys {
    ($($aid:literal),*) => {
        &["spin_ns", "wait_spin_ns", "yield_ns", "task_nap_us", "moves" $(, $aid)*]
    };
}

impl Params for AdaptiveParams {
    #[cfg(not(feature = "test-aids"))]
    const KEYS: &'static [&'static str] = keys!();
    #[cfg(feature = "test-aids")]
    const KEYS: &'static [&'static str] = keys!("hold_ns", "hold_loops");
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "spin_ns" => self.spin_ns = parse_num(key, value, 1_000_000_000)? as u32,
            "wait_spin_ns" => self.wait_spin_ns = parse_num(key, value, 1_000_000_000)? as u32,
            "yield_ns" => self.yield_ns = parse_num(key, value, 1_000_000_000)? as u32,
            // Capped at 1 s, as the other waits.
            "task_nap_us" => self.task_nap_us = parse_num(key, value, 1_000_000)? as u32,
            "moves" => self.moves = parse_num(key, value, 1)? == 1,
            // Capped at 1 ms: a longer hold only makes a test aid into a hang.
            #[cfg(feature = "test-aids")]
            "hold_ns" => self.hold_ns = parse_num(key, value, 1_000_000)? as u32,
            // Capped as `hold_ns` is: a million turns take about 1 ms at native speed.
            #[cfg(feature = "test-aids")]
            "hold_loops" => self.hold_loops = parse_num(key, value, 1_000_000)? as u32,
            #[cfg(not(feature = "test-aids"))]
            "hold_ns" | "hold_loops" => {
                return Err(format!(
                    "`{key}` is a test aid: build plan9-locks with its `test-aids` feature \
                     to use it"
                ))
            }
            _ => {
                return Err(format!(
                    "unknown parameter `{key}` for adaptive (valid: {})",
                    Self::KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }
}

/// Waits for `word` to leave the value `busy` without sleeping: PAUSE-spin for `spin_ns`
/// (only if another CPU could be running the thread we wait for), then yield until
/// `yield_ns` more have passed. Returns the last value seen, `busy` if the budgets ran out,
/// or [`STOPPED`] if the spin has just found that this thread's spins stopped paying: then
/// the caller sleeps at once instead of yielding (see there).
///
/// Inline, up to the first yield, where most waits end (on one CPU, the partner runs during
/// it): that part then runs in its caller's frame, whose registers are saved already, and
/// only the spin and the further yields are calls. (Out of line, a blocked channel operation
/// paid some 35 instructions per wait for the frames of this and its caller, by callgrind.)
///
/// Every call a wait makes cannot unwind, and the compiler knows it: the out-of-line parts
/// (`spin_while`, `yield_while`, `AdaptiveWaiter::sleep`, `count_cpus`) are `extern "C"`, and
/// the yield is libc's. A channel's blocking operation guards its wait against a waiter that
/// unwinds (`chan`'s `Abandon`); for this waiter the guard then compiles to nothing, where its
/// landing pad kept three stores and a spill on every wait (6 instructions a message at O=0,
/// by callgrind). None of these functions panics; if one ever did, the process would abort
/// rather than unwind (under loom too, where a model's failure is a panic: it is still
/// printed).
#[inline(always)]
fn wait_while(word: &AtomicU32, busy: u32, spin: Spin, yield_ns: u32) -> u32 {
    let s = word.load(Relaxed);
    if s != busy {
        return s;
    }
    if spin.0 != 0 && worth_spinning() {
        let s = spin_while(word, busy, spin);
        if s != busy {
            return s;
        }
    }
    if yield_ns == 0 {
        return busy;
    }
    // The clock is read only when a second yield is needed.
    count!(yields);
    yield_now();
    let s = word.load(Relaxed);
    if s != busy {
        return s;
    }
    yield_while(word, busy, yield_ns)
}

/// [`wait_while`]'s spin: PAUSE-hinted loads for `spin_ns`, unless this thread's spins have
/// stopped paying ([`spin_pays`]: it shares a CPU with the thread it waits for).
///
/// Out of line with its bookkeeping: the thread-local record in the inline part of
/// [`wait_while`] made LLVM stop inlining the waiter's wait into a channel's blocking path
/// (17 instructions a message more at O=0 M=1, by callgrind). `extern "C"`: see [`wait_while`].
#[inline(never)]
extern "C" fn spin_while(word: &AtomicU32, busy: u32, spin: Spin) -> u32 {
    if !spin_pays() {
        return word.load(Relaxed);
    }
    let budget = Budget::start(spin.ns());
    let mut spins = 0u32;
    let mut s = word.load(Relaxed);
    while s == busy && !budget.spent() {
        spin_hint();
        spins += 1;
        s = word.load(Relaxed);
    }
    count!(spins, spins);
    if spun(s != busy) {
        return match leave_cpu(spin.moves()) {
            Left::Stays => STOPPED,
            // Apart now, or parted a moment ago by the other's move: waits on. A thread
            // pinned to its CPU cannot be moved at all: it yields as before.
            Left::Moved | Left::Rationed | Left::Pinned => s,
        };
    }
    s
}

/// What [`wait_while`] returns when the wait's spin missed and so made this thread stop
/// spinning ([`spun`]), and the thread was not moved to another CPU but could be (moves are
/// off, or refused: [`leave_cpu`]): no word a wait watches ever holds it.
///
/// Its spins stop paying when the thread it waits for cannot run meanwhile, mostly because
/// the scheduler has put both on one CPU: a new thread often starts on the CPU of the
/// thread that made it, and two threads that trade messages without sleeping stay together
/// for tens of milliseconds before the load balancer parts them. Yielding keeps them
/// together. Moving does not ([`AdaptiveParams::moves`]), and neither does a futex sleep:
/// the wake-up is where the scheduler picks a CPU for the woken thread afresh, an idle one if
/// it can. So where it cannot move, the wait that finds the spins stopped paying sleeps at
/// once (at most once per 8 waits, and once per 253 after five stops without a hit: the
/// waits between skip the spin and yield as before). Rounds of O=0 M=1 that started with
/// both threads on one CPU took a median of 351 ns a message instead of 617, and O=1 M=2
/// went from 324 to 90 (`docs/tuning.md`, "Where the slow processes come from").
const STOPPED: u32 = u32::MAX;

/// A wait's spin budget in nanoseconds ([`AdaptiveParams::wait_spin_ns`] or
/// [`AdaptiveParams::spin_ns`]), with [`AdaptiveParams::moves`] in its top bit, so that a
/// waiter carries both in the one word it carried the budget in: a blocked operation writes
/// its waiter on every wait (a second word cost 2-3 instructions a message at O=0, by
/// callgrind). 0 whenever the budget is: a wait that never spins never stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
struct Spin(u32);

impl Spin {
    /// The bit that says a thread whose spins stop paying stays on its CPU. Budgets are capped
    /// below it, at 2.1 s.
    const STAYS: u32 = 1 << 31;

    const fn new(ns: u32, moves: bool) -> Spin {
        if ns == 0 {
            return Spin(0);
        }
        let ns = if ns < Self::STAYS {
            ns
        } else {
            Self::STAYS - 1
        };
        Spin(if moves { ns } else { ns | Self::STAYS })
    }

    fn ns(self) -> u32 {
        self.0 & !Self::STAYS
    }

    fn moves(self) -> bool {
        self.0 & Self::STAYS == 0
    }
}

/// [`wait_while`]'s yields after the first, for `yield_ns`. `extern "C"`: see [`wait_while`].
#[cold]
#[inline(never)]
extern "C" fn yield_while(word: &AtomicU32, busy: u32, yield_ns: u32) -> u32 {
    let budget = Budget::start(yield_ns);
    let mut s = busy;
    while s == busy && !budget.spent() {
        count!(yields);
        yield_now();
        s = word.load(Relaxed);
    }
    s
}

/// How many times a locker that has not slept may find the lock free and lose it to another
/// before it counts itself a sleeper and prepares to sleep.
const LOST_RACES: u32 = 4;

/// Busy-waits [`AdaptiveParams::hold_ns`] nanoseconds and then
/// [`AdaptiveParams::hold_loops`] loop turns, the injected slowdown. Out of line and cold so
/// that the lock's fast path keeps its shape when both are 0.
///
/// Counted, not timed: a clock read and a PAUSE cost tens of nanoseconds each, which made
/// `hold_ns=3` slow a ten-buffer channel 2.2 times, where a calibration needs slowdowns of a
/// few per cent. The loop's speed is measured once, on first use.
#[cfg(feature = "test-aids")]
#[cold]
#[inline(never)]
fn hold(params: &AdaptiveParams) {
    let timed = match params.hold_ns {
        0 => 0,
        ns => (u64::from(ns) * u64::from(hold_loops_per_1024ns())) >> 10,
    };
    for i in 0..timed + u64::from(params.hold_loops) {
        std::hint::black_box(i);
    }
}

#[cfg(feature = "test-aids")]
fn hold_loops_per_1024ns() -> u32 {
    static PER: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *PER.get_or_init(|| {
        // The fastest of several trials: being descheduled only ever makes a trial slower,
        // and a slow trial would make every later hold too short.
        const LOOPS: u64 = 1 << 18;
        let fastest = (0..8)
            .map(|_| {
                let start = Instant::now();
                for i in 0..LOOPS {
                    std::hint::black_box(i);
                }
                start.elapsed().as_nanos().max(1)
            })
            .min()
            .unwrap_or(1);
        (u128::from(LOOPS) * 1024 / fastest).clamp(1, u128::from(u32::MAX)) as u32
    })
}

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;

/// Sleeps `us` microseconds: a task's locker keeping its worker off a contended lock.
#[cfg(not(loom))]
fn nap(us: u32) {
    std::thread::sleep(std::time::Duration::from_micros(u64::from(us)));
}

/// Loom has no time: a nap is a yield, which lets the holder run.
#[cfg(loom)]
fn nap(_us: u32) {
    yield_now();
}

/// Spin for a bounded time, then block on a futex.
///
/// ```
/// use locks::{Adaptive, AdaptiveParams, Mutex};
/// let m = Mutex::<Adaptive, _>::new(0);
/// *m.lock() += 1;
/// // A lock that goes straight to the futex, for experiments:
/// let m = Mutex::from_raw(Adaptive::new(AdaptiveParams::DEFAULT.with_yield_ns(0)), 0);
/// assert_eq!(*m.lock(), 0);
/// ```
// `repr(C)`, the hot words last: where the lock word lies in a channel (`chan`'s `Shared`,
// where the lock comes just before the summary that every unlock writes) must not move with
// unrelated changes to this struct. Left to Rust, adding a field moved it 16 bytes, and a
// pinned rendezvous ran 5-9 % slower (`docs/tuning.md`).
#[repr(C)]
pub struct Adaptive {
    params: AdaptiveParams,
    /// A first waiter's [`Spin`], made once here rather than at every wait.
    first_spin: Spin,
    /// The word sleepers sleep on, odd while a wake-up is on its way to one of them: see
    /// [`wake_sleeper`](Self::wake_sleeper).
    wakes: AtomicU32,
    /// 1 while held.
    state: AtomicU32,
    /// Threads asleep on `wakes`, or about to sleep: an unlock that reads 0 here wakes nobody.
    sleepers: AtomicU32,
}

impl fmt::Debug for Adaptive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Adaptive")
            .field("locked", &(self.state.load(Relaxed) != UNLOCKED))
            .field("sleepers", &self.sleepers.load(Relaxed))
            .field("params", &self.params)
            .finish()
    }
}

impl Adaptive {
    /// An unlocked lock with the given tuning.
    #[cfg(not(loom))]
    pub const fn new(params: AdaptiveParams) -> Self {
        Adaptive {
            state: AtomicU32::new(UNLOCKED),
            sleepers: AtomicU32::new(0),
            wakes: AtomicU32::new(0),
            params,
            first_spin: Spin::new(params.wait_spin_ns, params.moves),
        }
    }

    /// The table's constructor (`crate::strategies!`).
    #[cfg(not(loom))]
    pub(crate) const fn from_params(params: AdaptiveParams) -> Self {
        Self::new(params)
    }

    /// An unlocked lock with the given tuning.
    #[cfg(loom)]
    pub fn new(params: AdaptiveParams) -> Self {
        Adaptive {
            state: AtomicU32::new(UNLOCKED),
            sleepers: AtomicU32::new(0),
            wakes: AtomicU32::new(0),
            params,
            first_spin: Spin::new(params.wait_spin_ns, params.moves),
        }
    }

    #[inline]
    fn try_acquire(&self) -> bool {
        self.state
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .is_ok()
    }

    #[cold]
    fn lock_contended(&self) {
        self.lock_contended_until(self.params.spin_ns, None);
    }

    /// [`lock_contended`](Self::lock_contended) for a hand-off's lock: spins as a first
    /// waiter does (see [`Strategy::lock_in_hand_off`]).
    #[cold]
    fn lock_contended_in_hand_off(&self) {
        self.lock_contended_until(self.params.wait_spin_ns, None);
    }

    /// The slow path of `lock` and, with a deadline, of `try_lock_until`, PAUSE-spinning up
    /// to `spin_ns` before it yields; `false` if the deadline passed first.
    #[cold]
    fn lock_contended_until(&self, spin_ns: u32, deadline: Option<Instant>) -> bool {
        count!(contended);
        let p = self.params;
        // Watch the word, spinning and then yielding. A race lost to another locker sends it
        // back to watching, a few times, before it gives up and sleeps.
        for _ in 0..LOST_RACES {
            // Budgets spent, or the spin stopped paying: sleep (see `STOPPED`).
            let s = wait_while(&self.state, LOCKED, Spin::new(spin_ns, p.moves), p.yield_ns);
            if s == LOCKED || s == STOPPED {
                break;
            }
            if self.try_acquire() {
                return true;
            }
        }
        if !self.sleepers_seen() {
            return self.poll_until(deadline);
        }
        let got = loop {
            let seen = self.take_wake();
            // Pairs with the fence in `wake_sleeper`: an unlocker that found a wake-up on its
            // way (and so woke nobody) either saw us take it, and woke, or made its unlock
            // before this look at the word.
            fence(SeqCst);
            if self.state.load(Relaxed) == UNLOCKED && self.try_acquire() {
                break true;
            }
            // Returns at once if `wakes` has moved on since we read it: a wake-up was sent
            // after our look, perhaps before we were there to receive it.
            match deadline {
                None => futex::wait(&self.wakes, seen),
                #[cfg(not(loom))]
                Some(d) if Instant::now() < d => futex::wait_until(&self.wakes, seen, d),
                Some(_) => break false,
            }
        };
        self.sleepers.fetch_sub(1, Relaxed);
        if !got && self.state.load(Relaxed) == UNLOCKED && self.sleepers.load(Relaxed) != 0 {
            // We may have taken the wake-up of the unlock just made; pass it on.
            self.wake_sleeper();
        }
        got
    }

    /// A sleeper about to look at the lock: marks any wake-up on its way as received (whoever
    /// it was meant for, this thread now looks at the lock, as the woken one would have), and
    /// returns the value of `wakes` to sleep on.
    fn take_wake(&self) -> u32 {
        let mut w = self.wakes.load(Relaxed);
        while w & 1 != 0 {
            match self
                .wakes
                .compare_exchange(w, w.wrapping_add(1), Relaxed, Relaxed)
            {
                Ok(_) => return w.wrapping_add(1),
                Err(now) => w = now,
            }
        }
        w
    }

    /// Wakes a sleeper, unless a wake-up is already on its way to one: an unlocker that found
    /// sleepers.
    ///
    /// A woken sleeper may wait milliseconds for a CPU, and until it runs it is still counted.
    /// Were every unlock in that time to make its own futex call, the busy threads would pay
    /// one system call per unlock for nothing (eight senders on two CPUs: a wake call every
    /// 8-17 messages, against a sleep every 10,000 or more). So one wake-up is in flight at a
    /// time: the unlocker that sends it makes `wakes` odd, and the next sleeper to look at the
    /// lock makes it even again ([`take_wake`](Self::take_wake)), whichever sleeper the kernel
    /// woke. Each change also moves the word on, so a sleeper that read it before a wake-up
    /// was sent does not sleep through it. An odd word with nobody asleep is harmless: every
    /// sleeper takes the wake-up before its first look.
    #[cold]
    #[inline(never)]
    fn wake_sleeper(&self) {
        // Orders our unlock before the look at `wakes`: see `lock_contended_until`.
        fence(SeqCst);
        let w = self.wakes.load(Relaxed);
        if w & 1 != 0 {
            return;
        }
        // A failure means another unlocker sent one first.
        if self
            .wakes
            .compare_exchange(w, w.wrapping_add(1), Relaxed, Relaxed)
            .is_ok()
        {
            futex::wake_one(&self.wakes);
        }
    }

    /// Counts the caller among the sleepers and makes sure every unlock from now on sees it
    /// (the heavy side of the fence pair). `false`, with the count put back, where that
    /// cannot be done: the caller must not sleep.
    fn sleepers_seen(&self) -> bool {
        self.sleepers.fetch_add(1, Relaxed);
        if barrier::heavy() {
            return true;
        }
        self.sleepers.fetch_sub(1, Relaxed);
        false
    }

    /// Waits without sleeping, where no unlock could be trusted to see a sleeper: yield until
    /// the lock is free, as Plan 9's lock does.
    #[cold]
    fn poll_until(&self, deadline: Option<Instant>) -> bool {
        loop {
            if self.state.load(Relaxed) == UNLOCKED && self.try_acquire() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            count!(yields);
            yield_now();
        }
    }

    /// What every acquisition does once the lock is ours: count it, and with the `test-aids`
    /// feature, busy-wait `hold_ns` and `hold_loops`.
    #[inline(always)]
    fn acquired(&self) {
        count!(acquisitions);
        #[cfg(feature = "test-aids")]
        if self.params.hold_ns != 0 || self.params.hold_loops != 0 {
            hold(&self.params);
        }
    }

    /// The slow path of `lock_in_task`: one yield, then naps of `us` microseconds. The
    /// napper counts as no sleeper, so no unlock wakes it, and unlock stays a plain store.
    #[cold]
    fn lock_napping(&self, us: u32) {
        count!(contended);
        count!(yields);
        yield_now();
        loop {
            if self.state.load(Relaxed) == UNLOCKED && self.try_acquire() {
                return;
            }
            count!(sleeps);
            nap(us);
        }
    }

    /// Takes the lock unless `deadline` passes first; the engine of `RawMutexTimed`.
    #[cfg(not(loom))]
    pub(crate) fn try_lock_until(&self, deadline: Instant) -> bool {
        let ok =
            self.try_acquire() || self.lock_contended_until(self.params.spin_ns, Some(deadline));
        if ok {
            count!(acquisitions);
        }
        ok
    }
}

#[cfg(not(loom))]
raw_mutex_timed!(Adaptive);

// SAFETY: ownership is the transition of `state` from 0 to 1, by a compare-exchange with
// Acquire; unlock is a store of 0 with Release, so each holder's writes happen before the next
// holder's acquisition. Unlock never unwinds (a futex wake is a system call that cannot).
unsafe impl Strategy for Adaptive {
    type Params = AdaptiveParams;
    type Waiter = AdaptiveWaiter;
    const NAME: &'static str = "adaptive";

    fn with_params(params: AdaptiveParams) -> Self {
        Adaptive::new(params)
    }

    fn params(&self) -> AdaptiveParams {
        self.params
    }

    /// A waiter that yields, then sleeps, and never spins.
    fn waiter(&self) -> AdaptiveWaiter {
        AdaptiveWaiter::new(self.params.with_wait_spin_ns(0))
    }

    /// A waiter that spins for [`AdaptiveParams::wait_spin_ns`] first.
    fn first_waiter(&self) -> AdaptiveWaiter {
        AdaptiveWaiter {
            state: AtomicU32::new(EMPTY),
            spin: self.first_spin,
            yield_ns: self.params.yield_ns,
        }
    }

    #[inline]
    fn lock(&self) {
        if !self.try_acquire() {
            self.lock_contended();
        }
        self.acquired();
    }

    /// Spins for [`AdaptiveParams::wait_spin_ns`], as a first waiter does (never on one
    /// CPU), before it yields: see [`Strategy::lock_in_hand_off`].
    #[inline]
    fn lock_in_hand_off(&self) {
        if !self.try_acquire() {
            self.lock_contended_in_hand_off();
        }
        self.acquired();
    }

    /// Yields once, then naps [`AdaptiveParams::task_nap_us`] at a time until the lock is
    /// free: see there.
    #[inline]
    fn lock_in_task(&self) {
        if !self.try_acquire() {
            match self.params.task_nap_us {
                0 => self.lock_contended(),
                us => self.lock_napping(us),
            }
        }
        self.acquired();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let ok = self.try_acquire();
        if ok {
            self.acquired();
        }
        ok
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.state.store(UNLOCKED, Release);
        // The light side of the pair whose heavy side a sleeper takes before it sleeps: this
        // load sees its count, or it sees our store.
        barrier::light();
        if self.sleepers.load(Relaxed) != 0 {
            self.wake_sleeper();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Relaxed) != UNLOCKED
    }
}

const EMPTY: u32 = 0;
const SET: u32 = 1;
const PARKED: u32 = 2;

/// The adaptive way to wait for an event: spin for the budget, then sleep on a futex.
/// Signalling costs a system call only if the waiter had gone to sleep.
pub struct AdaptiveWaiter {
    state: AtomicU32,
    /// [`AdaptiveParams::wait_spin_ns`] with [`AdaptiveParams::moves`], and
    /// [`AdaptiveParams::yield_ns`]: all a wait reads. A blocked operation writes its waiter
    /// on every wait, so it holds no more.
    spin: Spin,
    yield_ns: u32,
}

impl fmt::Debug for AdaptiveWaiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state.load(Relaxed) {
            EMPTY => "waiting",
            SET => "signalled",
            _ => "parked",
        };
        f.debug_struct("AdaptiveWaiter")
            .field("state", &state)
            .field("spin_ns", &self.spin.ns())
            .field("moves", &self.spin.moves())
            .field("yield_ns", &self.yield_ns)
            .finish()
    }
}

impl AdaptiveWaiter {
    /// An unsignalled waiter.
    pub fn new(params: AdaptiveParams) -> Self {
        AdaptiveWaiter {
            state: AtomicU32::new(EMPTY),
            spin: Spin::new(params.wait_spin_ns, params.moves),
            yield_ns: params.yield_ns,
        }
    }

    /// Sleeps until signalled or, given a deadline, until it passes; `true` if signalled.
    /// Inline up to the first yield, as [`wait_while`] is: see there.
    #[inline(always)]
    fn park(&self, deadline: Option<Instant>) -> bool {
        if wait_while(&self.state, EMPTY, self.spin, self.yield_ns) == SET {
            // The signal's Release is seen by a Relaxed load: this fence makes it
            // synchronise, as an Acquire load of the word would (no instruction on x86).
            // ThreadSanitizer does not model fences, so under it (`.ci/tsan` sets
            // `--cfg tsan`) the word is read again with Acquire instead, as std's `Arc`
            // does under its sanitizer cfg.
            #[cfg(not(tsan))]
            fence(Acquire);
            #[cfg(tsan)]
            self.state.load(Acquire);
            return true;
        }
        self.sleep(deadline.as_ref())
    }

    /// [`park`](Self::park) once the spin and the yields are spent: sleep on the futex.
    /// `extern "C"`, so that a wait cannot unwind (see [`wait_while`]).
    #[cold]
    #[inline(never)]
    extern "C" fn sleep(&self, deadline: Option<&Instant>) -> bool {
        loop {
            // Acquire on both outcomes: seeing SET must make the signaller's writes visible.
            if let Err(SET) = self.state.compare_exchange(EMPTY, PARKED, Acquire, Acquire) {
                return true;
            }
            match deadline {
                None => futex::wait(&self.state, PARKED),
                #[cfg(not(loom))]
                Some(&d) if Instant::now() < d => futex::wait_until(&self.state, PARKED, d),
                // Leave the word PARKED: a late signal then makes one harmless wake call.
                Some(_) => return self.is_signalled(),
            }
        }
    }
}

// SAFETY: `signal` publishes with one Release store or RMW of the waiter's word, which `wait`,
// `wait_checked`, `wait_until` and `is_signalled` read with Acquire before reporting a
// signal; afterwards it uses only the word's address (a futex wake, or nothing). It never
// waits.
unsafe impl Waiter for AdaptiveWaiter {
    #[inline]
    fn wait(&self) {
        self.park(None);
    }

    // Always: a channel's blocking path calls it once a wait, and LLVM's own choice flipped
    // with small changes to the wait (a call frame, 17 instructions a message at O=0 M=1).
    #[inline(always)]
    fn wait_checked(&self) -> bool {
        // `park` reports SET only having read it with Acquire (or a fence), and never
        // returns otherwise without a deadline.
        self.park(None)
    }

    fn wait_until(&self, deadline: Instant) -> bool {
        self.park(Some(deadline))
    }

    #[inline]
    fn is_signalled(&self) -> bool {
        self.state.load(Acquire) == SET
    }

    // Inline, the system call out of line: most signals find the waiter still spinning or
    // yielding, and a call to a function of its own cost a channel's rendezvous 4
    // instructions a message (callgrind, O=0).
    #[inline]
    unsafe fn signal(this: *const Self) {
        // A raw pointer, not a reference: once the swap has published SET the waiter may
        // return and free the word (a timed wait that wakes by itself sees SET without our
        // futex wake), and a reference used after that, even only to become the address the
        // wake takes, would be a dangling reference used (Miri catches it).
        // SAFETY: the caller guarantees `this` is live.
        let state = unsafe { &raw const (*this).state };
        // SAFETY: live until the swap lands; afterwards only the address is used.
        if unsafe { (*state).swap(SET, Release) } == PARKED {
            wake_parked(state);
        }
    }
}

/// Wakes a waiter that went to sleep on its word (`AdaptiveWaiter::signal`); `extern "C"`
/// as the wait's out-of-line parts are (see [`wait_while`]), so that a signal cannot unwind.
#[cold]
#[inline(never)]
extern "C" fn wake_parked(state: *const AtomicU32) {
    futex::wake_one(state);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::spin::spun;
    use crate::spin::tests::on_a_new_thread;
    use std::sync::Arc;

    /// The lock word and the sleeper count, which every lock and unlock touch, are the
    /// lock's last 8 bytes: `chan` lays a channel out so that they share a cache line with
    /// what follows the lock (its layout test counts on this).
    #[test]
    fn the_hot_words_come_last() {
        use std::mem::{offset_of, size_of};
        let last = size_of::<Adaptive>() - 8;
        assert!(offset_of!(Adaptive, state) >= last);
        assert!(offset_of!(Adaptive, sleepers) >= last);
    }

    #[test]
    fn a_spin_carries_its_budget_and_whether_to_move() {
        assert_eq!(Spin::new(0, false), Spin(0), "no spin, no stop");
        assert_eq!(
            (
                Spin::new(2_000, false).ns(),
                Spin::new(2_000, false).moves()
            ),
            (2_000, false)
        );
        assert_eq!(
            (Spin::new(2_000, true).ns(), Spin::new(2_000, true).moves()),
            (2_000, true)
        );
        let most = Spin::new(u32::MAX, true);
        assert_eq!(
            (most.ns(), most.moves()),
            (Spin::STAYS - 1, true),
            "capped below the bit"
        );
        let l = Adaptive::new(AdaptiveParams::DEFAULT.with_moves(false));
        assert_eq!(l.first_waiter().spin, Spin::new(2_000, false));
        assert_eq!(l.waiter().spin, Spin(0));
    }

    /// Whether the calling thread could be moved by the scheduler (not pinned to one CPU).
    fn free() -> bool {
        leave_cpu(false) == Left::Stays
    }

    #[test]
    fn the_spin_that_stops_paying_says_so() {
        on_a_new_thread(|| {
            let word = AtomicU32::new(EMPTY);
            assert_eq!(
                spin_while(&word, EMPTY, Spin::new(1_000, false)),
                EMPTY,
                "one miss"
            );
            // With moves off, a free thread sleeps for the wake-up to place it. (A thread
            // confined to one CPU cannot be placed anywhere, and yields on: the test below.)
            let stopped = if free() { STOPPED } else { EMPTY };
            assert_eq!(
                spin_while(&word, EMPTY, Spin::new(1_000, false)),
                stopped,
                "two in a row"
            );
            // From now on the spin is skipped, and reports what it sees.
            word.store(SET, Relaxed);
            assert_eq!(spin_while(&word, EMPTY, Spin::new(1_000, false)), SET);
        });
    }

    /// With moves on, a thread on Linux whose spins stop paying moves (or finds that another
    /// thread just did) and waits on, without the sleep.
    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_thread_that_can_move_does_not_sleep() {
        on_a_new_thread(|| {
            let word = AtomicU32::new(EMPTY);
            assert_eq!(spin_while(&word, EMPTY, Spin::new(1_000, true)), EMPTY);
            assert_eq!(
                spin_while(&word, EMPTY, Spin::new(1_000, true)),
                EMPTY,
                "stopped, moved"
            );
        });
    }

    /// A thread pinned to its CPU can be moved neither by a wake-up nor by a move, so it
    /// neither sleeps nor moves: it yields on.
    #[test]
    #[cfg(all(target_os = "linux", not(miri)))]
    fn a_pinned_thread_whose_spins_stop_paying_yields_on() {
        for moves in [false, true] {
            on_a_new_thread(move || {
                // SAFETY: no preconditions.
                let here = unsafe { libc::sched_getcpu() };
                assert!(crate::spin::tests::pin(here as usize));
                assert!(!free());
                let word = AtomicU32::new(EMPTY);
                let spin = Spin::new(1_000, moves);
                assert_eq!(spin_while(&word, EMPTY, spin), EMPTY);
                assert_eq!(
                    spin_while(&word, EMPTY, spin),
                    EMPTY,
                    "stopped, but not sleeping (moves {moves})"
                );
            });
        }
    }

    /// A waiter whose spin stops paying sleeps at once (moves off) or moves (on), and its
    /// signal still wakes it.
    #[test]
    fn a_waiter_whose_spins_stopped_paying_is_woken() {
        for moves in [false, true] {
            on_a_new_thread(move || {
                let params = AdaptiveParams::DEFAULT.with_moves(moves);
                let w = Arc::new(AdaptiveWaiter::new(params));
                // One miss already: the wait's own spin, if it misses, is the second.
                spun(false);
                let signaller = {
                    let w = Arc::clone(&w);
                    std::thread::spawn(move || {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        // SAFETY: `w` is alive: this thread holds a reference.
                        unsafe { AdaptiveWaiter::signal(&*w) };
                    })
                };
                assert!(w.wait_checked());
                // Returned on the signal, not on `STOPPED` taken for one: the signaller
                // sleeps 20 ms before it signals.
                assert!(w.is_signalled());
                signaller.join().unwrap();
            });
        }
    }
}
