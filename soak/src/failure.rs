//! Broken checks, collected from whichever thread finds them.
//!
//! Global rather than per round because a value's `Drop` can find a fault (a value received
//! twice inside a re-entrant drop) on any thread, inside the channel library, with nothing
//! but the value at hand.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

/// Keep this many messages; after the first few, more of the same only bury the cause.
const KEEP: usize = 12;

static FAILED: AtomicBool = AtomicBool::new(false);
static MESSAGES: Mutex<(Vec<String>, usize)> = Mutex::new((Vec::new(), 0));

/// Records a broken check. Cheap to poll afterwards through [`failed`].
pub(super) fn fail(message: String) {
    FAILED.store(true, Relaxed);
    let mut m = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    if m.0.len() < KEEP {
        m.0.push(message);
    }
    m.1 += 1;
}

/// Whether any check has failed since the last [`take`].
pub(super) fn failed() -> bool {
    FAILED.load(Relaxed)
}

/// The recorded messages and how many there were in all; clears them.
pub(super) fn take() -> (Vec<String>, usize) {
    FAILED.store(false, Relaxed);
    let mut m = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::take(&mut *m)
}

/// The name of the running thread (or of the async task it is polling), for messages.
pub(super) fn thread_name() -> String {
    if let Some(task) = super::watchdog::task_name() {
        return format!("{task}` (a task) on `{}", thread_only());
    }
    thread_only()
}

fn thread_only() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed thread")
        .to_string()
}

/// A panic's payload as text.
pub(super) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if p.is::<super::value::IntentionalPanic>() {
        "a value's intentional drop panic".into()
    } else if super::hostile::is_waker_panic(p) {
        "a hostile waker's intentional panic, not caught".into()
    } else if let Some(s) = p.downcast_ref::<&str>() {
        (*s).into()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".into()
    }
}
