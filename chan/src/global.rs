//! Plan 9's single channel lock: one lock per strategy and parameters, shared by every channel
//! that asks for it, created on first use and never freed.

use locks::Strategy;
use std::any::{Any, TypeId};
use std::sync::Mutex;

type Entry = (TypeId, Box<dyn Any + Send + Sync>);

static LOCKS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The process-wide lock of strategy `L` with `params`.
pub(crate) fn lock<L: Strategy>(params: L::Params) -> &'static L {
    let mut all = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    let found = all
        .iter()
        .filter(|(t, _)| *t == TypeId::of::<L>())
        .filter_map(|(_, e)| e.downcast_ref::<(L::Params, &'static L)>())
        .find(|(p, _)| *p == params);
    if let Some((_, l)) = found {
        return l;
    }
    let l: &'static L = Box::leak(Box::new(L::with_params(params)));
    all.push((TypeId::of::<L>(), Box::new((params, l))));
    l
}
