//! Strategies by name beyond the built-ins.
//!
//! A strategy registered once ([`register`]) is known by its name to [`Backend`]: parsing,
//! `Display`, [`Backend::all`] and the lists in error messages. Through `Backend` it reaches
//! [`DynLock`](crate::DynLock), `$LOCKS_BACKEND` and `chantest --lock`.
//!
//! A [`Backend`] is `Copy`, so a registered strategy's parameters are kept as a `&'static`
//! value: parsed through the strategy's own [`Params::set`] when the name is parsed, and
//! interned, each distinct value once, so that parsing the same name again allocates nothing.

// Under loom nothing registers (`register` makes `DynLock`s, which loom builds leave out).
#![cfg_attr(loom, allow(dead_code))]

#[cfg(not(loom))]
use crate::backend::Backend;
use crate::strategy::{Params, Strategy};
use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Every registered strategy, in the order of registration. Entries are leaked: a strategy
/// stays registered for the life of the process, so a `Backend` naming it stays valid.
static REGISTRY: Mutex<Vec<&'static Entry>> = Mutex::new(Vec::new());

/// What the registry knows of one strategy: its name, its type, and code for it compiled
/// when it was registered.
pub(crate) struct Entry {
    name: &'static str,
    type_id: TypeId,
    default: &'static dyn ErasedParams,
    /// Every parameter value parsed for this strategy, each once.
    interned: Mutex<Vec<&'static dyn ErasedParams>>,
    /// Makes this strategy's lock, for [`DynLock`](crate::DynLock).
    #[cfg(not(loom))]
    pub(crate) new_lock: fn(&dyn Any) -> Box<dyn crate::erased::ErasedLock>,
}

/// A strategy's parameters with their type erased: what [`Registered`] keeps.
pub(crate) trait ErasedParams: fmt::Debug + fmt::Display + Send + Sync + 'static {
    fn as_any(&self) -> &dyn Any;
    /// Whether `other` holds the same type and value.
    fn same(&self, other: &dyn ErasedParams) -> bool;
    /// A copy with `key` set to `value`, through the strategy's own [`Params::set`].
    fn with(&self, key: &str, value: &str) -> Result<Box<dyn ErasedParams>, String>;
}

impl<P: Params> ErasedParams for P {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same(&self, other: &dyn ErasedParams) -> bool {
        other.as_any().downcast_ref::<P>() == Some(self)
    }

    fn with(&self, key: &str, value: &str) -> Result<Box<dyn ErasedParams>, String> {
        let mut p = *self;
        p.set(key, value)?;
        Ok(Box::new(p))
    }
}

/// Makes `S` known by `S::NAME` to [`Backend`], and so to [`DynLock`](crate::DynLock),
/// `$LOCKS_BACKEND` and `chantest --lock`.
///
/// Registering the same strategy again under the same name is a no-op, so a program may
/// register wherever it starts; so is registering a built-in strategy under its own name.
/// A name already taken by a built-in or by another registered strategy is an error, as is
/// a name that `Backend` could not parse back (empty, or holding `:`, `,`, `=`, spaces, or
/// `all`). Names compare case-insensitively, as in parsing.
///
/// A registered strategy stays registered for the life of the process. Through a
/// [`DynLock`](crate::DynLock) its operations go through a table of functions compiled for
/// it here, and each of its waiters is allocated; code that knows the type
/// (`Chan<T, TicketLock>`, or [`Backend::params`] to pick the type by name) pays neither.
///
/// ```
/// use locks::{Backend, SpinYield};
/// // A built-in under its own name is already known.
/// assert_eq!(locks::register::<SpinYield>(), Ok(()));
/// // The name `sem` is taken by a built-in.
/// assert!(locks::register_as::<SpinYield>("sem").is_err());
/// assert!("spin".parse::<Backend>().is_ok());
/// ```
///
/// The documentation of [`Strategy`] registers a strategy of its own and picks it through
/// `$LOCKS_BACKEND`.
#[cfg(not(loom))]
pub fn register<S: Strategy>() -> Result<(), RegisterError> {
    register_as::<S>(S::NAME)
}

/// [`register`] under a name of your choosing instead of `S::NAME`: for a type whose name is
/// generic, such as [`Raw`](crate::Raw) over another crate's mutex
/// (`register_as::<Raw<parking_lot::RawMutex>>("parking_lot")`). A type has one name: the
/// same type under a second name is an error.
#[cfg(not(loom))]
pub fn register_as<S: Strategy>(name: &'static str) -> Result<(), RegisterError> {
    let err = |why: String| Err(RegisterError(format!("cannot register `{name}`: {why}")));
    if name.is_empty()
        || name.eq_ignore_ascii_case("all")
        || name
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, ':' | ',' | '='))
    {
        return err(
            "a backend name must be a word without `:`, `,`, `=` or spaces, and not `all`".into(),
        );
    }
    #[cfg(not(loom))]
    if TypeId::of::<S>() == TypeId::of::<crate::DynLock>() {
        return err("DynLock is whichever strategy its backend names, not one of its own".into());
    }
    if let Some(builtin) = Backend::ALL
        .iter()
        .find(|b| b.name().eq_ignore_ascii_case(name) || b.params::<S>().is_some())
    {
        return match builtin.params::<S>().is_some() && builtin.name() == name {
            true => Ok(()),
            false => err(format!("`{}` is built in", builtin.name())),
        };
    }
    // Made before the registry is locked: `default` is the strategy's code.
    let default = S::Params::default();
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = registry
        .iter()
        .find(|e| e.type_id == TypeId::of::<S>() || e.name.eq_ignore_ascii_case(name))
    {
        return match e.type_id == TypeId::of::<S>() && e.name == name {
            true => Ok(()),
            false if e.type_id == TypeId::of::<S>() => {
                err(format!("this type is registered as `{}`", e.name))
            }
            false => err(format!("`{}` names another registered strategy", e.name)),
        };
    }
    let default: &'static dyn ErasedParams = Box::leak(Box::new(default));
    registry.push(Box::leak(Box::new(Entry {
        name,
        type_id: TypeId::of::<S>(),
        default,
        interned: Mutex::new(vec![default]),
        #[cfg(not(loom))]
        new_lock: crate::erased::new_lock::<S>,
    })));
    Ok(())
}

/// The registered strategies, in the order they were registered.
pub(crate) fn registered() -> Vec<Registered> {
    let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    registry
        .iter()
        .map(|&e| Registered::default_of(e))
        .collect()
}

/// The name `S` is registered under, if it is.
pub(crate) fn name_of<S: Strategy>() -> Option<&'static str> {
    let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = registry.iter().find(|e| e.type_id == TypeId::of::<S>())?;
    Some(entry.name)
}

/// The registered strategy called `name` (in any case), with default parameters.
pub(crate) fn find(name: &str) -> Option<Registered> {
    let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = registry
        .iter()
        .find(|e| e.name.eq_ignore_ascii_case(name))?;
    Some(Registered::default_of(entry))
}

/// Why [`register`] refused a strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterError(String);

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RegisterError {}

/// A registered strategy and its parameters: the [`Backend::Registered`] variant, made by
/// parsing the strategy's name.
///
/// ```
/// # use locks::Backend;
/// // Only a registered strategy makes one; `Backend::all()` lists them after the built-ins.
/// assert!(Backend::all().len() >= Backend::ALL.len());
/// ```
#[derive(Clone, Copy)]
pub struct Registered {
    entry: &'static Entry,
    params: &'static dyn ErasedParams,
}

impl Registered {
    fn default_of(entry: &'static Entry) -> Self {
        Registered {
            entry,
            params: entry.default,
        }
    }

    /// The name the strategy was registered under.
    pub fn name(&self) -> &'static str {
        self.entry.name
    }

    /// The parameters, if the strategy is `S`.
    pub(crate) fn params<S: Strategy>(&self) -> Option<S::Params> {
        if self.entry.type_id != TypeId::of::<S>() {
            return None;
        }
        self.params.as_any().downcast_ref::<S::Params>().copied()
    }

    /// The parameters, typed as the registered strategy's, for code compiled for it.
    #[cfg(not(loom))]
    pub(crate) fn params_any(&self) -> &'static dyn Any {
        self.params.as_any()
    }

    /// The entry, for [`DynLock`](crate::DynLock) to make a lock from.
    #[cfg(not(loom))]
    pub(crate) fn entry(&self) -> &'static Entry {
        self.entry
    }

    /// Sets one parameter through the strategy's [`Params::set`].
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let new = self.params.with(key, value)?;
        self.params = self.entry.intern(new);
        Ok(())
    }
}

impl Entry {
    /// The interned copy of `params`, leaked the first time this value is seen.
    fn intern(&self, params: Box<dyn ErasedParams>) -> &'static dyn ErasedParams {
        // The comparisons run the strategy's `PartialEq`, user code, so not under the lock;
        // two threads interning the same new value may then both keep it, which costs a
        // little memory and nothing else (equality is by value).
        let seen = self
            .interned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(&p) = seen.iter().find(|p| p.same(&*params)) {
            return p;
        }
        let p: &'static dyn ErasedParams = Box::leak(params);
        let mut interned = self.interned.lock().unwrap_or_else(PoisonError::into_inner);
        interned.push(p);
        p
    }
}

impl PartialEq for Registered {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.entry, other.entry) && self.params.same(other.params)
    }
}

impl Eq for Registered {}

impl fmt::Display for Registered {
    /// The name, then the parameters as the strategy's [`Params`] writes them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.entry.name, self.params)
    }
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("name", &self.entry.name)
            .field("params", &self.params)
            .finish()
    }
}
