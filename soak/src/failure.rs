//! Broken checks, collected from whichever thread finds them, and the panics the soak raises
//! on purpose, which are not failures.
//!
//! A round's [`Failures`] live in its book, because a value's `Drop` can find a fault (a
//! value received twice inside a re-entrant drop) on any thread, inside the channel library,
//! with nothing but the value at hand.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

/// Keep this many messages; after the first few, more of the same only bury the cause.
const KEEP: usize = 12;

/// The panic a value's drop raises on purpose.
#[derive(Debug)]
pub(super) struct IntentionalPanic;

/// The panic a hostile waker raises on purpose.
#[derive(Debug)]
pub(super) struct WakerPanic;

/// A round's broken checks.
#[derive(Debug, Default)]
pub(super) struct Failures {
    failed: AtomicBool,
    messages: Mutex<(Vec<String>, usize)>,
}

impl Failures {
    /// Records a broken check. Cheap to poll afterwards through [`failed`](Self::failed).
    pub(super) fn fail(&self, message: String) {
        self.failed.store(true, Relaxed);
        let mut m = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if m.0.len() < KEEP {
            m.0.push(message);
        }
        m.1 += 1;
    }

    /// Whether any check has failed.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Relaxed)
    }

    /// The first few messages, and how many there were in all.
    pub(super) fn messages(&self) -> (Vec<String>, usize) {
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A panic's payload as text.
pub(super) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if p.is::<IntentionalPanic>() {
        "a value's intentional drop panic".into()
    } else if p.is::<WakerPanic>() {
        "a hostile waker's intentional panic, not caught".into()
    } else if let Some(s) = p.downcast_ref::<&str>() {
        (*s).into()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".into()
    }
}
