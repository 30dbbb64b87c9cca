//! Spare serialisation buffers: the large text buffers of blobs a saver no
//! longer needs (it kept them compressed), kept by the thread for the next
//! large value to be serialised into.
//!
//! A buffer of megabytes freshly allocated is new memory, which the kernel
//! hands over one page fault at a time (~2.4 µs per 4 KiB on the benchmark's
//! VM: more than serialising into it); and glibc maps every allocation of that
//! size afresh. A thread that writes a large checkpoint at every run writes it
//! into the pages of the last one instead.

use std::cell::RefCell;

/// Buffers smaller than this are not kept (a fresh one costs little).
pub(crate) const MIN_BYTES: usize = 64 << 10;

/// At most this many bytes of buffers are kept per thread...
const MAX_TOTAL: usize = 32 << 20;

/// ...in at most this many buffers.
const MAX_COUNT: usize = 8;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// The largest buffer this thread keeps (empty), or a new empty one.
pub(crate) fn take() -> Vec<u8> {
    SPARE
        .with_borrow_mut(|spare| {
            let largest = (0..spare.len()).max_by_key(|&i| spare[i].capacity())?;
            Some(spare.swap_remove(largest))
        })
        .unwrap_or_default()
}

/// Keeps `buffer` for a later [`take`] when it is large and the thread's
/// spares have room; frees it otherwise.
pub(crate) fn give(mut buffer: Vec<u8>) {
    if buffer.capacity() < MIN_BYTES {
        return;
    }
    buffer.clear();
    SPARE.with_borrow_mut(|spare| {
        let total: usize = spare.iter().map(Vec::capacity).sum();
        if spare.len() < MAX_COUNT && total + buffer.capacity() <= MAX_TOTAL {
            spare.push(buffer);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_come_back_largest_first_within_the_limits() {
        // This test thread's own spares.
        assert_eq!(take().capacity(), 0);
        give(Vec::with_capacity(100));
        assert_eq!(take().capacity(), 0, "a small buffer is not kept");
        give(Vec::with_capacity(MIN_BYTES));
        let mut big = Vec::with_capacity(4 * MIN_BYTES);
        big.extend_from_slice(b"old text");
        give(big);
        let first = take();
        assert!(first.capacity() >= 4 * MIN_BYTES);
        assert!(first.is_empty(), "a kept buffer is cleared");
        assert!(take().capacity() >= MIN_BYTES);
        assert_eq!(take().capacity(), 0);
        // No more than the limits.
        give(Vec::with_capacity(MAX_TOTAL + 1));
        assert_eq!(take().capacity(), 0);
        for _ in 0..MAX_COUNT + 2 {
            give(Vec::with_capacity(MIN_BYTES));
        }
        let kept = std::iter::from_fn(|| Some(take()))
            .take_while(|b| b.capacity() > 0)
            .count();
        assert_eq!(kept, MAX_COUNT);
    }
}
