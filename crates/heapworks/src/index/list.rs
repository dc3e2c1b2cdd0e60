//! Link words of free chunks, and doubly linked lists of them that end in null, shared by the
//! tree and list indexes (the bins keep their own lists, which end in a sink).
//!
//! A free chunk's payload words are its links: word [`NEXT`] and [`PREV`] exist in every free
//! chunk (see [`crate::chunk`]), words [`LEFT`] and [`RIGHT`] only in chunks of at least six
//! words. Invariants of a list headed by `head`: `head`'s `prev` is null, every other entry's
//! `prev` names the entry before it and that entry's `next` names it back, the last `next` is
//! null.

use crate::chunk::Chunk;

/// Link word numbers, counted in words from the payload.
pub(crate) const NEXT: usize = 0;
pub(crate) const PREV: usize = 1;
pub(crate) const LEFT: usize = 2;
pub(crate) const RIGHT: usize = 3;

/// Where link `word` of the free chunk `chunk` lives. Computing the address reads nothing.
#[inline(always)]
pub(crate) fn link(chunk: Chunk, word: usize) -> *mut Option<Chunk> {
    chunk
        .payload()
        .as_ptr()
        .cast::<Option<Chunk>>()
        .wrapping_add(word)
}

/// Link `word` of a free chunk.
///
/// # Safety
/// `chunk` is a free chunk with that link word (the first two for any chunk, all four for a
/// chunk of at least six words).
#[inline(always)]
pub(crate) unsafe fn get(chunk: Chunk, word: usize) -> Option<Chunk> {
    // SAFETY: forwarded from the caller; `Option<Chunk>` is valid for any word.
    unsafe { link(chunk, word).read() }
}

/// Sets link `word` of a free chunk.
///
/// # Safety
/// As for [`get`].
#[inline(always)]
pub(crate) unsafe fn set(chunk: Chunk, word: usize, to: Option<Chunk>) {
    // SAFETY: forwarded from the caller.
    unsafe { link(chunk, word).write(to) }
}

/// Puts `chunk` at the head of the list `head`.
///
/// # Safety
/// `chunk` is a free chunk in no list; the list is consistent.
#[inline(always)]
pub(crate) unsafe fn push(head: &mut Option<Chunk>, chunk: Chunk) {
    // SAFETY: list entries and `chunk` are free chunks, with `next` and `prev` words.
    unsafe {
        set(chunk, NEXT, *head);
        set(chunk, PREV, None);
        if let Some(old) = *head {
            set(old, PREV, Some(chunk));
        }
    }
    *head = Some(chunk);
}

/// Takes `chunk` out of the list `head`.
///
/// # Safety
/// `chunk` is in the list; the list is consistent.
#[inline(always)]
pub(crate) unsafe fn remove(head: &mut Option<Chunk>, chunk: Chunk) {
    // SAFETY: list entries are free chunks, with `next` and `prev` words.
    unsafe {
        let next = get(chunk, NEXT);
        match get(chunk, PREV) {
            Some(prev) => set(prev, NEXT, next),
            None => *head = next,
        }
        if let Some(next) = next {
            set(next, PREV, get(chunk, PREV));
        }
    }
}

/// Whether `chunk` is among the first `limit` entries of the list `head` (for the checker,
/// on a heap whose lists it already walked that far).
pub(crate) fn holds(head: Option<Chunk>, chunk: Chunk, limit: usize) -> bool {
    let mut cursor = head;
    for _ in 0..limit {
        let Some(entry) = cursor else { return false };
        if entry == chunk {
            return true;
        }
        // SAFETY: the entries up to `limit` were read by the checker's tally.
        cursor = unsafe { get(entry, NEXT) };
    }
    false
}
