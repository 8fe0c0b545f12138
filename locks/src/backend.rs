//! Choosing a strategy by name at run time.
//!
//! A name is `spin`, `sem` or `adaptive`, optionally followed by parameters:
//! `adaptive:spin_ns=0`, `spin:yields=10:sleep_us=50`. [`Backend::ALL`] is the one list of
//! strategies; everything else (parsing, error messages, `chantest --lock all`) reads it.

use crate::adaptive::{Adaptive, AdaptiveParams};
use crate::sem::SemLock;
use crate::spin_yield::{SpinParams, SpinYield};
use crate::strategy::{NoParams, Params, Strategy};
use std::fmt;
use std::str::FromStr;

/// A lock strategy together with its parameters, as named on a command line or in an
/// environment variable.
///
/// ```
/// use locks::Backend;
/// let b: Backend = "adaptive:spin_ns=500".parse().unwrap();
/// assert_eq!(b.name(), "adaptive");
/// assert_eq!(b.to_string(), "adaptive:spin_ns=500");
/// assert!("mcs".parse::<Backend>().unwrap_err().to_string().contains("spin, sem, adaptive"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// [`SpinYield`]: Plan 9's old test-and-set lock.
    Spin(SpinParams),
    /// [`SemLock`]: Plan 9's 2013 semaphore lock.
    Sem,
    /// [`Adaptive`]: spin (optionally) and yield for a while, then futex.
    Adaptive(AdaptiveParams),
}

/// Code generic over the strategy, to be run with the one a [`Backend`] names.
///
/// This is how a program that picks its backend at run time still gets code compiled for each
/// lock type: one `visit` instance per strategy, chosen by a `match`.
///
/// ```
/// use locks::{Backend, Strategy, Visit};
/// struct Name;
/// impl Visit for Name {
///     type Output = &'static str;
///     fn visit<S: Strategy>(self, _params: S::Params) -> &'static str { S::NAME }
/// }
/// let b: Backend = "sem".parse().unwrap();
/// assert_eq!(b.visit(Name), "sem");
/// ```
pub trait Visit {
    /// What the visit returns.
    type Output;
    /// Runs with `S`, the strategy the backend names, and its parameters.
    fn visit<S: Strategy>(self, params: S::Params) -> Self::Output;
}

impl Backend {
    /// Every strategy, with default parameters, in the order reports list them.
    pub const ALL: [Backend; 3] = [
        Backend::Spin(SpinParams::DEFAULT),
        Backend::Sem,
        Backend::Adaptive(AdaptiveParams::DEFAULT),
    ];

    /// The environment variable [`from_env`](Backend::from_env) reads.
    pub const ENV: &'static str = "LOCKS_BACKEND";

    /// The strategy's name, without parameters.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Spin(_) => SpinYield::NAME,
            Backend::Sem => SemLock::NAME,
            Backend::Adaptive(_) => Adaptive::NAME,
        }
    }

    /// Calls `v.visit::<S>(params)` with the strategy `S` this backend names.
    pub fn visit<V: Visit>(&self, v: V) -> V::Output {
        match *self {
            Backend::Spin(p) => v.visit::<SpinYield>(p),
            Backend::Sem => v.visit::<SemLock>(NoParams),
            Backend::Adaptive(p) => v.visit::<Adaptive>(p),
        }
    }

    /// The backend named by `$LOCKS_BACKEND`, or `default` when the variable is unset.
    ///
    /// ```
    /// let b = locks::Backend::from_env(locks::Backend::ALL[2]).expect("a valid LOCKS_BACKEND");
    /// let m = b.mutex(0u32);
    /// *m.lock() += 1;
    /// ```
    pub fn from_env(default: Backend) -> Result<Backend, ParseBackendError> {
        match std::env::var(Self::ENV) {
            Ok(name) => name.parse(),
            Err(std::env::VarError::NotPresent) => Ok(default),
            Err(std::env::VarError::NotUnicode(_)) => Err(ParseBackendError(format!(
                "{} is not valid UTF-8",
                Self::ENV
            ))),
        }
    }

    /// An unlocked lock of this backend, usable as `lock_api::RawMutex`.
    #[cfg(not(loom))]
    pub fn raw(&self) -> crate::DynLock {
        crate::DynLock::new(*self)
    }

    /// A mutex around `value` locked by this backend.
    #[cfg(not(loom))]
    pub fn mutex<T>(&self, value: T) -> crate::Mutex<crate::DynLock, T> {
        crate::Mutex::from_raw(self.raw(), value)
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match self {
            Backend::Spin(p) => p.set(key, value),
            Backend::Sem => NoParams.set(key, value),
            Backend::Adaptive(p) => p.set(key, value),
        }
    }

    /// Parses a comma-separated list such as `spin,adaptive:spin_ns=0`; `all` is every
    /// backend.
    pub fn parse_list(s: &str) -> Result<Vec<Backend>, ParseBackendError> {
        if s.trim() == "all" {
            return Ok(Self::ALL.to_vec());
        }
        s.split(',').map(str::parse).collect()
    }
}

impl fmt::Display for Backend {
    /// The name, then every parameter that differs from its default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Backend::Spin(p) => write!(f, "{p}"),
            Backend::Sem => Ok(()),
            Backend::Adaptive(p) => write!(f, "{p}"),
        }
    }
}

/// Why a backend name was rejected; the message lists what would have been accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseBackendError(String);

impl fmt::Display for ParseBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseBackendError {}

impl FromStr for Backend {
    type Err = ParseBackendError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.trim().split(':');
        let name = parts.next().unwrap_or_default();
        let Some(mut backend) = Self::ALL.into_iter().find(|b| b.name() == name) else {
            let valid: Vec<_> = Self::ALL.iter().map(Backend::name).collect();
            return Err(ParseBackendError(format!(
                "unknown lock backend `{name}` (valid: {})",
                valid.join(", ")
            )));
        };
        for part in parts {
            let Some((key, value)) = part.split_once('=') else {
                return Err(ParseBackendError(format!(
                    "malformed parameter `{part}` in `{s}` (expected key=value)"
                )));
            };
            backend
                .set(key.trim(), value.trim())
                .map_err(|e| ParseBackendError(format!("in `{s}`: {e}")))?;
        }
        Ok(backend)
    }
}
