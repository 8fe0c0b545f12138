//! One round's workload, decided entirely by its seed.

use super::rng::{Rng, CONFIGS};
use locks::{AdaptiveParams, Backend};
use std::fmt;
use std::time::Duration;

/// Channel capacities a round draws from.
pub(super) const CAPACITIES: [usize; 5] = [0, 1, 2, 10, 100];
/// The most channels in a round (watchdog slots describe alt arms' channels in 3 bits).
pub(super) const MAX_CHANS: usize = 4;
/// The probe's channels print as these indices, after the workers' `c0..c3`.
pub(super) const PROBE_A: usize = MAX_CHANS;
/// See [`PROBE_A`].
pub(super) const PROBE_B: usize = MAX_CHANS + 1;
/// Logical senders per sending thread: values of different lanes may share an alt's arms on
/// one channel without the sender itself deciding their order.
pub(super) const LANES: usize = 3;
/// The fewest and most values a round sends.
const QUOTA: (u64, u64) = (2_000, 40_000);
/// The shortest and longest round, in milliseconds.
const LENGTH_MS: (u64, u64) = (150, 600);

/// The backends every run covers: each strategy, plus adaptive sleeping at once (no yield
/// phase), which puts every contended hand-off through the futex.
pub(super) fn backends() -> [Backend; 4] {
    let [spin, sem, adaptive] = Backend::ALL;
    let sleepy = Backend::Adaptive(AdaptiveParams::DEFAULT.with_yield_ns(0));
    [spin, sem, adaptive, sleepy]
}

/// A lock configuration: a backend, with a lock per channel or one for all.
pub(super) fn config(index: u64) -> (Backend, bool) {
    (backends()[(index % 4) as usize], index % CONFIGS >= 4)
}

/// What a thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Sends (every kind of send, and alts of send arms).
    Sender,
    /// Receives, blocking only on its home channel (and alts that include it), so that every
    /// open channel always has a thread that will take its values.
    Receiver {
        /// The channel it blocks on.
        home: usize,
    },
    /// Alts mixing send and receive arms; blocks only while it has a value to send.
    Mixed,
}

impl Role {
    /// Worker `i`'s name, as the watchdog and failures show it.
    pub(super) fn name(self, i: usize) -> String {
        match self {
            Role::Sender => format!("send {i}"),
            Role::Receiver { home } => format!("recv {i} (home c{home})"),
            Role::Mixed => format!("mixed {i}"),
        }
    }
}

/// Which rounds run some workers as async tasks (`--tasks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum TaskRounds {
    /// A fraction of the rounds, as their seeds decide.
    Some,
    /// Every round.
    Always,
    /// None: threads only.
    Never,
}

/// How a task waits for one async operation (the weights' order in [`Tasks::wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AsyncWait {
    /// `.await` to the end (only where a thread would block).
    Await,
    /// Raced against `tokio::time::timeout`; dropped when the timer wins.
    Race,
    /// Polled this many times (yielding between polls), then dropped if still pending.
    Polls(u32),
    /// The non-blocking form instead (`nbsend`, `nbrecv`, `Alt::try_wait`).
    Try,
}

/// The async side of a round: which workers are tasks, on what runtime, waiting how.
#[derive(Clone, Debug)]
pub(super) struct Tasks {
    /// A multi-thread runtime with this many worker threads; `None` for a current-thread one.
    pub multi: Option<usize>,
    /// Per worker: a task rather than a thread.
    pub task: Vec<bool>,
    /// Per worker: on the runtime's local set (the one thread that may hold an `Alt` across an
    /// await, since `Alt` is not `Send`) rather than spawned on its workers. Every task is
    /// local on a current-thread runtime.
    pub local: Vec<bool>,
    /// Weights of how an operation waits: await, race a timer, poll then drop, non-blocking.
    pub wait: [u32; 4],
    /// The most polls before a drop.
    pub polls: u32,
    /// Per 1024 futures, how many are polled with a waker that panics, and with one that
    /// re-enters a channel (see [`super::hostile`]; `--hostile-wakers` may turn either off).
    pub hostile: [u32; 2],
}

impl Tasks {
    /// Draws the async side of a round with `workers` workers, if the round has one.
    fn draw(seed: u64, workers: usize, mode: TaskRounds) -> Option<Tasks> {
        // A stream of its own, so that the rest of a round's workload is the same whether or
        // not it runs tasks.
        let mut r = Rng::new(super::rng::mix(seed, 0x7a5c));
        // Drawn whatever the mode, so that `--tasks always` gives a round the tasks it has
        // when its seed picks it.
        let drawn = r.chance(384);
        let on = match mode {
            TaskRounds::Never => false,
            TaskRounds::Always => true,
            TaskRounds::Some => drawn,
        };
        if !on {
            return None;
        }
        let multi = r.chance(512).then(|| 1 + r.index(4));
        let mut task: Vec<bool> = (0..workers).map(|_| r.chance(512)).collect();
        let pick = r.index(workers);
        if !task.contains(&true) {
            task[pick] = true;
        } else if !task.contains(&false) && r.chance(768) {
            // Mostly mixed with threads; now and then tasks only.
            task[pick] = false;
        }
        let local = (0..workers)
            .map(|_| multi.is_none() || r.chance(512))
            .collect();
        let mut w = |n: u64| 1 + r.below(n) as u32;
        let wait = [w(8), w(6), w(6), w(3)];
        let polls = [1, 2, 4][r.index(3)];
        let hostile = [[16, 128, 512][r.index(3)], [16, 128, 512][r.index(3)]];
        Some(Tasks {
            multi,
            task,
            local,
            wait,
            polls,
            hostile,
        })
    }

    /// How many workers are tasks.
    pub(super) fn count(&self) -> usize {
        self.task.iter().filter(|&&t| t).count()
    }
}

/// A channel closed mid-run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Close {
    /// Which.
    pub chan: usize,
    /// When: once this many thousandths of the quota or of the round's length have passed.
    pub at_permille: u64,
}

/// How often each thing happens, per 1024 or as relative weights.
#[derive(Clone, Debug)]
pub(super) struct Mix {
    /// Weights of a sender's operations: send, nbsend, send_timeout, send_deadline, alt,
    /// send through a temporary clone.
    pub send: [u32; 6],
    /// Weights of a receiver's operations: recv, nbrecv, recv_timeout, recv_deadline,
    /// iter, try_iter, alt, alt!, len/closing.
    pub recv: [u32; 9],
    /// Weights of a mixed thread's operations: alt, any send operation, any receive operation.
    pub mixed: [u32; 3],
    /// A value's drop panics.
    pub panic: u32,
    /// A value's drop re-enters a channel.
    pub reenter: u32,
    /// An alt receive slot already holds a (stale) value, which the receive replaces.
    pub stale: u32,
    /// A stale value's drop re-enters a channel.
    pub stale_reenter: u32,
    /// A thread drops one of its handles and clones a fresh one, per operation.
    pub reclone: u32,
    /// An alt is biased.
    pub biased: u32,
    /// The longest timeout, in microseconds.
    pub timeout_us: u64,
}

/// Everything a round does, drawn from its seed.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    /// The round's seed.
    pub seed: u64,
    /// The lock backend.
    pub backend: Backend,
    /// One lock for every channel (Plan 9's), rather than one each.
    pub global: bool,
    /// Each channel's capacity.
    pub caps: Vec<usize>,
    /// Mid-run closes, in no particular order.
    pub closes: Vec<Close>,
    /// Channels that, once closed mid-run, receivers stop draining, so that values are left in
    /// them when they are destroyed.
    pub abandoned: Vec<bool>,
    /// Each worker's role.
    pub roles: Vec<Role>,
    /// Values the senders may make.
    pub quota: u64,
    /// How long senders keep sending.
    pub length: Duration,
    /// Operation weights and hazards.
    pub mix: Mix,
    /// The linearizability probe's two threads, if any, and its channels' capacities (see
    /// [`super::probe`]).
    pub probe: Option<(usize, usize)>,
    /// Workers that are async tasks, if any (see [`super::task`]).
    pub tasks: Option<Tasks>,
}

impl Plan {
    /// The round with `seed`, with at most `max_threads` workers and at most `limit` values.
    pub(super) fn new(
        seed: u64,
        max_threads: usize,
        limit: Option<u64>,
        task_rounds: TaskRounds,
    ) -> Plan {
        let (backend, global) = config(seed);
        let mut r = Rng::new(seed);
        // Skew toward many threads and toward few, where the interesting interleavings are.
        let mut threads = match r.below(4) {
            0 => 2,
            1 => max_threads,
            _ => r.between(2, max_threads as u64) as usize,
        };
        // The probe's pair of threads comes out of the same budget.
        let probe = (threads >= 4 && r.chance(512)).then(|| {
            threads -= 2;
            (
                CAPACITIES[1 + r.index(3)],
                CAPACITIES[r.index(CAPACITIES.len())],
            )
        });
        let nchan = 1 + r.index(MAX_CHANS.min(threads - 1));
        let caps = (0..nchan)
            .map(|_| CAPACITIES[r.index(CAPACITIES.len())])
            .collect();

        let receivers = nchan + r.index(threads - nchan);
        let rest = threads - receivers;
        let mixed = r.index(rest + 1);
        let mut roles = vec![Role::Sender; rest - mixed];
        roles.extend((0..receivers).map(|i| Role::Receiver { home: i % nchan }));
        roles.extend((0..mixed).map(|_| Role::Mixed));

        let nclose = match r.below(10) {
            0..=3 => 0,
            4..=7 => 1,
            _ => r.between(1, nchan as u64) as usize,
        };
        let mut order: Vec<usize> = (0..nchan).collect();
        for i in 0..nchan {
            order.swap(i, i + r.index(nchan - i));
        }
        let mut abandoned = vec![false; nchan];
        let closes = order[..nclose]
            .iter()
            .map(|&chan| {
                abandoned[chan] = r.chance(512);
                Close {
                    chan,
                    at_permille: r.between(50, 900),
                }
            })
            .collect();

        let quota = r.between(QUOTA.0, QUOTA.1);
        let length = Duration::from_millis(r.between(LENGTH_MS.0, LENGTH_MS.1));
        let mut w = |n: u64| 1 + r.below(n) as u32;
        let send = [w(8), w(6), w(6), w(3), w(8), w(2)];
        let recv = [w(8), w(6), w(6), w(3), w(3), w(3), w(8), w(3), w(2)];
        let mixed_ops = [w(8), w(3), w(3)];
        let mix = Mix {
            send,
            recv,
            mixed: mixed_ops,
            panic: [0, 16, 128][r.index(3)],
            reenter: [0, 32, 256][r.index(3)],
            stale: [0, 128, 512][r.index(3)],
            stale_reenter: [0, 256, 768][r.index(3)],
            reclone: [0, 4, 32][r.index(3)],
            biased: [0, 256][r.index(2)],
            timeout_us: [0, 20, 300][r.index(3)],
        };
        let tasks = Tasks::draw(seed, roles.len(), task_rounds);
        Plan {
            seed,
            backend,
            global,
            caps,
            closes,
            abandoned,
            roles,
            quota: limit.map_or(quota, |l| quota.min(l)),
            length,
            mix,
            probe,
            tasks,
        }
    }

    /// How many threads the round runs: workers, and the probe's pair.
    pub(super) fn threads(&self) -> usize {
        self.roles.len() + if self.probe.is_some() { 2 } else { 0 }
    }

    /// Whether worker `i` is an async task.
    pub(super) fn is_task(&self, i: usize) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.task[i])
    }

    /// How many workers send (senders and mixed threads).
    pub(super) fn sending_threads(&self) -> usize {
        self.roles
            .iter()
            .filter(|r| matches!(r, Role::Sender | Role::Mixed))
            .count()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lock = if self.global {
            "global lock"
        } else {
            "lock per channel"
        };
        write!(f, "seed {:#x}: {}, {lock}; ", self.seed, self.backend)?;
        for (c, cap) in self.caps.iter().enumerate() {
            let sep = if c > 0 { ", " } else { "" };
            write!(f, "{sep}c{c} O={cap}")?;
            if let Some(close) = self.closes.iter().find(|x| x.chan == c) {
                let left = if self.abandoned[c] {
                    ", left undrained"
                } else {
                    ""
                };
                write!(f, " (closed at {}‰{left})", close.at_permille)?;
            }
        }
        if let Some((a, b)) = self.probe {
            write!(f, "; probe c{PROBE_A} O={a}, c{PROBE_B} O={b}")?;
        }
        let count = |want: fn(&Role) -> bool| self.roles.iter().filter(|r| want(r)).count();
        write!(
            f,
            "; {} threads: {} senders, {} receivers, {} mixed; {} values, {} ms",
            self.threads(),
            count(|r| *r == Role::Sender),
            count(|r| matches!(r, Role::Receiver { .. })),
            count(|r| *r == Role::Mixed),
            self.quota,
            self.length.as_millis()
        )?;
        if let Some(t) = &self.tasks {
            let runtime = match t.multi {
                Some(n) => format!("a multi-thread runtime of {n} workers"),
                None => "a current-thread runtime".into(),
            };
            let tasks: Vec<String> = (0..self.roles.len())
                .filter(|&i| t.task[i])
                .map(|i| format!("{i}{}", if t.local[i] { "" } else { "s" }))
                .collect();
            write!(
                f,
                "; workers {} are tasks on {runtime} (s: spawned, the rest local), wakers \
                 {}/1024 panicking, {}/1024 re-entrant",
                tasks.join(", "),
                t.hostile[0],
                t.hostile[1]
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_open_channel_has_a_receiver_and_someone_sends() {
        for seed in 0..2000 {
            for max in [2, 3, 16] {
                let p = Plan::new(seed, max, None, TaskRounds::Some);
                assert!((2..=max).contains(&p.threads()), "{p}");
                assert!(p.roles.len() >= 2, "{p}");
                assert!(p.sending_threads() >= 1, "{p}");
                for c in 0..p.caps.len() {
                    assert!(p.roles.contains(&Role::Receiver { home: c }), "{p}");
                }
                assert_eq!(p.backend, config(seed).0);
            }
        }
    }

    #[test]
    fn tasks_come_from_the_seed_and_leave_the_rest_of_the_round_alone() {
        let mut rounds = 0;
        for seed in 0..2000 {
            let never = Plan::new(seed, 16, None, TaskRounds::Never);
            let some = Plan::new(seed, 16, None, TaskRounds::Some);
            let always = Plan::new(seed, 16, None, TaskRounds::Always);
            assert!(never.tasks.is_none());
            let threads_only = never.to_string();
            assert!(always.to_string().starts_with(&threads_only), "{always}");
            assert!(some.to_string().starts_with(&threads_only), "{some}");
            let t = always.tasks.as_ref().expect("tasks every round");
            assert!(t.count() >= 1, "{always}");
            assert!(t.multi.is_some() || t.local.iter().all(|&l| l), "{always}");
            if let Some(s) = &some.tasks {
                rounds += 1;
                assert_eq!((s.multi, &s.task, &s.wait), (t.multi, &t.task, &t.wait));
            }
        }
        // About three rounds in eight.
        assert!((500..1000).contains(&rounds), "{rounds} of 2000");
    }
}
