//! Iterating over received values.

use crate::Chan;
use locks::Strategy;
use std::fmt;

/// Blocking iterator from [`Chan::iter`]: ends when the channel is closed and drained.
pub struct Iter<'a, T, L: Strategy> {
    pub(crate) chan: &'a Chan<T, L>,
}

/// Non-blocking iterator from [`Chan::try_iter`]: ends when nothing can be received at once.
pub struct TryIter<'a, T, L: Strategy> {
    pub(crate) chan: &'a Chan<T, L>,
}

/// Owning blocking iterator from `Chan::into_iter`.
pub struct IntoIter<T, L: Strategy> {
    chan: Chan<T, L>,
}

impl<T, L: Strategy> Iterator for Iter<'_, T, L> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.chan.recv().ok()
    }
}

impl<T, L: Strategy> Iterator for TryIter<'_, T, L> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.chan.nbrecv().ok()
    }
}

impl<T, L: Strategy> Iterator for IntoIter<T, L> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.chan.recv().ok()
    }
}

impl<'a, T, L: Strategy> IntoIterator for &'a Chan<T, L> {
    type Item = T;
    type IntoIter = Iter<'a, T, L>;
    fn into_iter(self) -> Iter<'a, T, L> {
        self.iter()
    }
}

impl<T, L: Strategy> IntoIterator for Chan<T, L> {
    type Item = T;
    type IntoIter = IntoIter<T, L>;
    fn into_iter(self) -> IntoIter<T, L> {
        IntoIter { chan: self }
    }
}

impl<T, L: Strategy> fmt::Debug for Iter<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("chan", self.chan).finish()
    }
}

impl<T, L: Strategy> fmt::Debug for TryIter<'_, T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").field("chan", self.chan).finish()
    }
}

impl<T, L: Strategy> fmt::Debug for IntoIter<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter")
            .field("chan", &self.chan)
            .finish()
    }
}
