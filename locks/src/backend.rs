//! Choosing a strategy by name at run time.
//!
//! A name is `spin`, `sem` or `adaptive` (in any case), optionally followed by parameters:
//! `adaptive:spin_ns=0`, `spin:yields=10:sleep_us=50`. [`Backend`] and everything that lists
//! the strategies here ([`Backend::ALL`], names, parsing, [`Backend::visit`]) is made from
//! the one table of strategies in `lib.rs` (`strategies!`). A strategy registered at run time
//! ([`register`](crate::register)) is the one more variant, [`Backend::Registered`];
//! `chantest --lock all` and the error messages read [`Backend::all`], the built-ins and the
//! registered together.

use crate::adaptive::AdaptiveParams;
use crate::registry::{self, Registered};
use crate::strategy::{Params, Strategy};
use std::any::{Any, TypeId};
use std::fmt;
use std::str::FromStr;

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
    /// The default: the adaptive lock with its default parameters. It is also what
    /// [`Backend::default`], [`DynLock::INIT`](lock_api::RawMutex::INIT) (so
    /// `Mutex::<DynLock, _>::new`) and `Chan::<T, DynLock>::new` use.
    pub const DEFAULT: Backend = Backend::Adaptive(AdaptiveParams::DEFAULT);

    /// The environment variable [`from_env`](Backend::from_env) reads.
    pub const ENV: &'static str = "LOCKS_BACKEND";

    /// The backend named by `$LOCKS_BACKEND`, or `default` when the variable is unset or
    /// empty (`LOCKS_BACKEND=` reads as unset). Names are case-insensitive, as in
    /// [`from_str`](std::str::FromStr::from_str).
    ///
    /// ```
    /// let b = locks::Backend::from_env(locks::Backend::DEFAULT).expect("a valid LOCKS_BACKEND");
    /// let m = b.mutex(0u32);
    /// *m.lock() += 1;
    /// ```
    pub fn from_env(default: Backend) -> Result<Backend, ParseBackendError> {
        Self::from_var(std::env::var(Self::ENV), default)
    }

    /// [`from_env`](Self::from_env) given the variable's value as `std::env::var` reads it.
    fn from_var(
        var: Result<String, std::env::VarError>,
        default: Backend,
    ) -> Result<Backend, ParseBackendError> {
        match var {
            Ok(name) if name.trim().is_empty() => Ok(default),
            // Named, so that a user who set it long ago knows where the bad name comes from.
            Ok(name) => name
                .parse()
                .map_err(|e| ParseBackendError(format!("{}={name}: {e}", Self::ENV))),
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

    /// Parses a comma-separated list such as `spin,adaptive:spin_ns=0`; `all` is every
    /// backend, [`Backend::all`].
    pub fn parse_list(s: &str) -> Result<Vec<Backend>, ParseBackendError> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(Self::all());
        }
        s.split(',').map(str::parse).collect()
    }

    /// Every strategy known by name now, with default parameters: the built-ins
    /// ([`Backend::ALL`]), then the registered ones in the order of registration.
    pub fn all() -> Vec<Backend> {
        let mut all = Self::ALL.to_vec();
        all.extend(registry::registered().into_iter().map(Backend::Registered));
        all
    }

    /// The parameters, if this backend names the strategy `S`: how code compiled for `S`
    /// takes a backend parsed from a name (chantest's lanes do). A [`DynLock`](crate::DynLock)
    /// takes any backend.
    ///
    /// ```
    /// use locks::{Adaptive, Backend, SemLock};
    /// let b: Backend = "adaptive:spin_ns=500".parse().unwrap();
    /// assert_eq!(b.params::<Adaptive>().map(|p| p.spin_ns), Some(500));
    /// assert_eq!(b.params::<SemLock>(), None);
    /// ```
    pub fn params<S: Strategy>(&self) -> Option<S::Params> {
        #[cfg(not(loom))]
        if TypeId::of::<S>() == TypeId::of::<crate::DynLock>() {
            return (self as &dyn Any).downcast_ref::<S::Params>().copied();
        }
        match self {
            Backend::Registered(r) => r.params::<S>(),
            builtin => builtin.builtin_params::<S>(),
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
        let found = Self::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name.trim()))
            .or_else(|| registry::find(name.trim()).map(Backend::Registered));
        let Some(mut backend) = found else {
            let valid: Vec<_> = Self::all().iter().map(Backend::name).collect();
            return Err(ParseBackendError(format!(
                "unknown lock backend `{name}` (valid: {})",
                valid.join(", ")
            )));
        };
        let mut seen: Vec<&str> = Vec::new();
        for part in parts {
            let Some((key, value)) = part.split_once('=') else {
                return Err(ParseBackendError(format!(
                    "malformed parameter `{part}` in `{s}` (expected key=value)"
                )));
            };
            // The last would silently win: refused, as a backend listed twice is.
            if seen.contains(&key.trim()) {
                return Err(ParseBackendError(format!(
                    "parameter `{}` is given twice in `{s}`",
                    key.trim()
                )));
            }
            seen.push(key.trim());
            backend
                .set(key.trim(), value.trim())
                .map_err(|e| ParseBackendError(format!("in `{s}`: {e}")))?;
        }
        Ok(backend)
    }
}

/// [`Backend`] and its lists of strategies, from the table (`strategies!` in `lib.rs`).
macro_rules! backend {
    ($($(#[$doc:meta])* $variant:ident($t:ty, $params:ty, $waiter:ty)),+ $(,)?) => {
        /// A lock strategy together with its parameters, as named on a command line or in an
        /// environment variable.
        ///
        /// ```
        /// use locks::Backend;
        /// let b: Backend = "adaptive:spin_ns=500".parse().unwrap();
        /// assert_eq!(b.name(), "adaptive");
        /// assert_eq!(b.to_string(), "adaptive:spin_ns=500");
        /// assert!("mcs".parse::<Backend>().unwrap_err().to_string().contains("spin, sem, adaptive"));
        /// assert_eq!("SEM".parse::<Backend>(), "sem".parse()); // names are case-insensitive
        /// ```
        ///
        /// It is also the [`Params`] of [`DynLock`](crate::DynLock), the strategy chosen at
        /// run time, so that a backend parsed from a name makes a channel:
        /// `Chan::<T, DynLock>::with_params(n, "sem".parse()?)`. As such, its [`Display`]
        /// is the whole name (`adaptive:spin_ns=500`) and [`Params::set`] sets a parameter
        /// of the strategy it names.
        ///
        /// A strategy of your own, registered with [`register`](crate::register), is the
        /// variant [`Registered`](Backend::Registered): its name parses once it is
        /// registered.
        ///
        /// [`Display`]: fmt::Display
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Backend {
            $($(#[$doc])* $variant($params),)+
            /// A strategy registered with [`register`](crate::register), and its parameters.
            Registered(Registered),
        }

        impl Backend {
            /// Every built-in strategy, with default parameters, in the order reports list
            /// them; [`Backend::all`] adds the registered ones.
            pub const ALL: [Backend; [$(stringify!($variant)),+].len()] =
                [$(Backend::$variant(<$params>::DEFAULT)),+];

            /// The strategy's name, without parameters.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Backend::$variant(_) => <$t as Strategy>::NAME,)+
                    Backend::Registered(r) => r.name(),
                }
            }

            /// Calls `v.visit::<S>(params)` with the strategy `S` this backend names.
            ///
            /// A registered strategy's type is unknown here, so its visit runs with
            /// [`DynLock`](crate::DynLock) and this backend as its parameters: the same
            /// strategy, reached through a table of functions. Code that must be compiled
            /// for the type itself takes it by [`Backend::params`], as chantest's lanes do.
            pub fn visit<V: Visit>(&self, v: V) -> V::Output {
                match *self {
                    $(Backend::$variant(p) => v.visit::<$t>(p),)+
                    #[cfg(not(loom))]
                    Backend::Registered(_) => v.visit::<crate::DynLock>(*self),
                    // Nothing registers under loom (`register` needs `DynLock`).
                    #[cfg(loom)]
                    Backend::Registered(r) => panic!("no strategy is registered under loom: {r}"),
                }
            }

            /// [`Backend::params`] of a built-in variant.
            fn builtin_params<S: Strategy>(&self) -> Option<S::Params> {
                match self {
                    $(Backend::$variant(p) if TypeId::of::<S>() == TypeId::of::<$t>() => {
                        (p as &dyn Any).downcast_ref::<S::Params>().copied()
                    })+
                    _ => None,
                }
            }
        }

        impl fmt::Display for Backend {
            /// The name, then every parameter that differs from its default.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(Backend::$variant(p) => {
                        f.write_str(self.name())?;
                        fmt::Display::fmt(p, f)
                    })+
                    Backend::Registered(r) => fmt::Display::fmt(r, f),
                }
            }
        }

        /// As the parameters of [`DynLock`](crate::DynLock).
        impl Params for Backend {
            /// Every key some built-in strategy takes, each once, in table order; which of
            /// them a backend accepts depends on the strategy it names (a registered one
            /// takes its own, unknown when this constant is made).
            const KEYS: &'static [&'static str] = {
                const LISTS: &[&[&str]] = &[$(<$params as Params>::KEYS),+];
                const KEYS: [&str; distinct_keys(LISTS)] = union_of_keys(LISTS);
                &KEYS
            };

            /// Sets one parameter of the strategy this backend names.
            fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
                match self {
                    $(Backend::$variant(p) => p.set(key, value),)+
                    Backend::Registered(r) => r.set(key, value),
                }
            }
        }
    };
}

strategies!(backend);

impl Default for Backend {
    /// [`Backend::DEFAULT`], the adaptive lock.
    fn default() -> Self {
        Backend::DEFAULT
    }
}

/// Whether `lists[l][k]` appeared earlier in `lists`.
const fn seen_before(lists: &[&[&str]], l: usize, k: usize) -> bool {
    let key = lists[l][k].as_bytes();
    let (mut i, mut j) = (0, 0);
    while i < l || (i == l && j < k) {
        if j == lists[i].len() {
            (i, j) = (i + 1, 0);
            continue;
        }
        let other = lists[i][j].as_bytes();
        if other.len() == key.len() {
            let mut b = 0;
            while b < key.len() && other[b] == key[b] {
                b += 1;
            }
            if b == key.len() {
                return true;
            }
        }
        j += 1;
    }
    false
}

/// How many distinct keys `lists` hold.
const fn distinct_keys(lists: &[&[&str]]) -> usize {
    let mut n = 0;
    let mut l = 0;
    while l < lists.len() {
        let mut k = 0;
        while k < lists[l].len() {
            if !seen_before(lists, l, k) {
                n += 1;
            }
            k += 1;
        }
        l += 1;
    }
    n
}

/// The distinct keys of `lists`, in order; `N` is [`distinct_keys`].
const fn union_of_keys<const N: usize>(lists: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut n = 0;
    let mut l = 0;
    while l < lists.len() {
        let mut k = 0;
        while k < lists[l].len() {
            if !seen_before(lists, l, k) {
                out[n] = lists[l][k];
                n += 1;
            }
            k += 1;
        }
        l += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    #[test]
    fn an_empty_variable_reads_as_unset() {
        let sem: Backend = "sem".parse().unwrap();
        for value in ["", " ", "\t"] {
            assert_eq!(Backend::from_var(Ok(value.into()), sem), Ok(sem));
        }
        assert_eq!(Backend::from_var(Err(VarError::NotPresent), sem), Ok(sem));
        assert_eq!(
            Backend::from_var(Ok("spin".into()), sem),
            Ok(Backend::Spin(Default::default()))
        );
        let bad = Backend::from_var(Ok("mcs".into()), sem)
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("LOCKS_BACKEND=mcs: "), "{bad}");
    }

    #[test]
    fn names_are_case_insensitive() {
        let parsed: Vec<Backend> = ["SEM", "Spin:yields=10", " Adaptive "]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let expected: Vec<Backend> = ["sem", "spin:yields=10", "adaptive"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(parsed, expected);
        assert_eq!(Backend::parse_list("ALL").unwrap(), Backend::ALL.to_vec());
    }
}
