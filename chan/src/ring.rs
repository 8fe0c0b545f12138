//! The channel's buffer: a FIFO ring of a power-of-two number of slots.
//!
//! `VecDeque` would do, and did, but every push and pop paid for its generality (a growth
//! check in `push_back`, wrap-around by compare and subtract, `Option` plumbing): about 29
//! instructions per message of a channel's ~150 (callgrind, O=100 M=1). Here a slot's index is
//! a mask away, and growing is a separate call that the channel makes only when the ring is
//! full, outside its fast path.

use std::mem::MaybeUninit;
use std::ptr;

/// A growable ring buffer; slots `head..head + len` (modulo the capacity) hold values.
pub(crate) struct Ring<T> {
    /// A power of two of them, or none (an empty ring that has not allocated).
    slots: Box<[MaybeUninit<T>]>,
    /// `slots.len() - 1` (meaningless while there are no slots, and then never used).
    mask: usize,
    head: usize,
    len: usize,
}

impl<T> Ring<T> {
    /// A ring with room for at least `n` values; allocates nothing when `n` is 0 (or `T` has
    /// no size).
    pub(crate) fn with_capacity(n: usize) -> Self {
        let cap = if n == 0 { 0 } else { n.next_power_of_two() };
        Ring {
            slots: Box::new_uninit_slice(cap),
            mask: cap.wrapping_sub(1),
            head: 0,
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many values fit before the ring must grow.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Whether a [`push`](Self::push) would have to grow the ring first.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.len == self.slots.len()
    }

    /// Appends `v`, growing the ring if it is full.
    #[inline]
    pub(crate) fn push(&mut self, v: T) {
        if self.is_full() {
            self.grow();
        }
        // SAFETY: not full, now.
        unsafe { self.push_unchecked(v) }
    }

    /// Appends `v` to a ring known to have room: [`push`](Self::push) without its test, for
    /// a caller that has already compared the length with a bound no larger than the
    /// [`capacity`](Self::capacity).
    ///
    /// # Safety
    /// The ring must not be [full](Self::is_full).
    #[inline]
    pub(crate) unsafe fn push_unchecked(&mut self, v: T) {
        debug_assert!(!self.is_full());
        let i = (self.head + self.len) & self.mask;
        // SAFETY: the ring is not full (the caller's promise), so it has slots and `mask` is
        // their count less one: `i < slots.len()`. Slot `i` is free: it follows the `len`
        // initialized ones, which leave at least one slot.
        unsafe { self.slots.get_unchecked_mut(i).write(v) };
        self.len += 1;
    }

    /// Puts `v` before every other value (it is popped next), growing the ring if it is full.
    pub(crate) fn push_front(&mut self, v: T) {
        if self.is_full() {
            self.grow();
        }
        let i = self.head.wrapping_sub(1) & self.mask;
        // SAFETY: as in `push`: the ring has slots, `i < slots.len()`, and slot `i` (just
        // before the first value) is free.
        unsafe { self.slots.get_unchecked_mut(i).write(v) };
        self.head = i;
        self.len += 1;
    }

    /// Removes the oldest value.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let i = self.head;
        self.head = (i + 1) & self.mask;
        self.len -= 1;
        // SAFETY: a value is there, so `head < slots.len()`, and slot `i` was the first of
        // the `len` initialized ones; moving `head` past it first means nothing reads it
        // again.
        Some(unsafe { self.slots.get_unchecked(i).assume_init_read() })
    }

    /// Doubles the capacity.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = self
            .capacity()
            .checked_mul(2)
            .expect("channel buffer capacity overflow")
            .max(1);
        self.resize(cap);
    }

    /// Gives memory back while keeping room for `max(n, len)` values (rounded up to a power
    /// of two; none at all when that is 0).
    pub(crate) fn shrink_to(&mut self, n: usize) {
        let want = n.max(self.len);
        let cap = if want == 0 {
            0
        } else {
            want.next_power_of_two()
        };
        if cap < self.capacity() {
            self.resize(cap);
        }
    }

    /// Moves the values, in order, to the start of a fresh array of `cap >= len` slots.
    fn resize(&mut self, cap: usize) {
        debug_assert!(cap >= self.len && (cap == 0 || cap.is_power_of_two()));
        let mut slots = Box::new_uninit_slice(cap);
        // The values sit in at most two runs: head..end of the array, then 0..the rest.
        let first = self.len.min(self.capacity() - self.head);
        let src = self.slots.as_ptr();
        let dst = slots.as_mut_ptr();
        // SAFETY: both runs lie inside the old array and hold the `len` initialized values;
        // the new array has room for `len` from index 0 and does not overlap the old one.
        // Moving them bitwise and then dropping the old array as `MaybeUninit` (which drops
        // nothing) transfers ownership exactly once.
        unsafe {
            ptr::copy_nonoverlapping(src.add(self.head), dst, first);
            ptr::copy_nonoverlapping(src, dst.add(first), self.len - first);
        }
        self.slots = slots;
        self.mask = cap.wrapping_sub(1);
        self.head = 0;
    }
}

impl<T> Default for Ring<T> {
    /// An empty ring without slots: allocates nothing (so it may be made under a lock).
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // A `Drop` that panics stops this loop, leaking the values after it; the slots' memory
        // is still freed by the field's own drop.
        while self.pop().is_some() {}
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Ring;
    use std::collections::VecDeque;
    use std::rc::Rc;

    /// Random pushes, pops, shrinks and regrowth agree with `VecDeque` at every step.
    #[test]
    fn behaves_as_a_fifo_through_wrapping_growth_and_shrinking() {
        let mut ring = Ring::with_capacity(3);
        let mut model = VecDeque::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 16 {
                0..=7 => {
                    ring.push(step);
                    model.push_back(step);
                }
                8..=13 => assert_eq!(ring.pop(), model.pop_front()),
                14 => {
                    ring.push_front(step);
                    model.push_front(step);
                }
                _ => ring.shrink_to((x >> 8) as usize % 8),
            }
            assert_eq!(ring.len(), model.len());
            assert!(ring.capacity() >= ring.len() && ring.capacity().is_power_of_two());
        }
        while let Some(v) = model.pop_front() {
            assert_eq!(ring.pop(), Some(v));
        }
        assert_eq!(ring.pop(), None);
    }

    #[test]
    fn capacity_is_rounded_up_and_grows_only_when_full() {
        let mut ring = Ring::with_capacity(10);
        assert_eq!(ring.capacity(), 16);
        (0..16).for_each(|i| ring.push(i));
        assert!(ring.is_full());
        assert_eq!(ring.capacity(), 16);
        ring.push(16);
        assert_eq!(ring.capacity(), 32);
        assert_eq!(ring.pop(), Some(0));
    }

    /// Every value is dropped exactly once: the ones popped by their taker, the rest by the
    /// ring, after resizes that moved them.
    #[test]
    fn drops_each_value_once() {
        let token = Rc::new(());
        {
            let mut ring = Ring::with_capacity(2);
            for _ in 0..5 {
                ring.push(token.clone());
            }
            drop(ring.pop());
            ring.push(token.clone());
            ring.shrink_to(0);
            assert_eq!(Rc::strong_count(&token), 6);
        }
        assert_eq!(Rc::strong_count(&token), 1);
    }

    #[test]
    fn holds_zero_sized_values() {
        let mut ring = Ring::default();
        (0..1000).for_each(|_| ring.push(()));
        assert_eq!(ring.len(), 1000);
        assert_eq!(ring.pop(), Some(()));
        ring.shrink_to(0);
        assert_eq!(ring.len(), 999);
    }
}
