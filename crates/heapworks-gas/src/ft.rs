//! Seed 000's FT stress test as messages for the guests' FT program (`guests/entries/src/ft.rs`):
//! the seed's step list, each step a message or a message per account, run message by message
//! over persistent memory (pages charged per message).
//!
//! Invariant: the list depends on nothing but `quick`, so every guest gets the same messages.

use std::ops::Range;

/// An account id: the user's number, little-endian, in 32 bytes.
pub(crate) fn account(user: u64) -> [u8; 32] {
    let mut id = [0; 32];
    id[..8].copy_from_slice(&user.to_le_bytes());
    id
}

fn mint(to: u64, amount: u128) -> Vec<u8> {
    let mut m = vec![0];
    m.extend_from_slice(&account(to));
    m.extend_from_slice(&amount.to_le_bytes());
    m
}

fn transfer(from: u64, to: u64, amount: u128) -> Vec<u8> {
    let mut m = vec![1];
    m.extend_from_slice(&account(from));
    m.extend_from_slice(&account(to));
    m.extend_from_slice(&amount.to_le_bytes());
    m
}

fn balance(of: u64) -> Vec<u8> {
    let mut m = vec![2];
    m.extend_from_slice(&account(of));
    m
}

fn total_supply() -> Vec<u8> {
    vec![3]
}

/// The seed's step list; `quick` shortens the two long ranges (918..13400 to 918..1400) and
/// repeats the last pair of steps 3 times instead of 30.
pub fn stress_messages(quick: bool) -> Vec<Vec<u8>> {
    let many: Range<u64> = if quick { 918..1400 } else { 918..13400 };
    let repeats = if quick { 3 } else { 30 };
    let mut m = vec![total_supply(), mint(1, 1_000_000)];
    m.extend((1..=20).map(|to| transfer(1, to, 6_000)));
    m.push(balance(1));
    m.extend((1..=20).map(balance));
    m.extend((21..=100).map(|to| transfer(1 + (to - 21) % 20, to, 1_000)));
    m.extend((1..=20).map(balance));
    m.extend((21..=100).map(balance));
    m.push(mint(2, 1_000_000));
    m.extend((87..=120).map(|to| mint(to, 5_000)));
    m.extend((87..=120).map(balance));
    m.extend((87..=120).map(|from| transfer(from, 1, 1_000)));
    m.push(total_supply());
    m.extend(many.clone().map(balance));
    m.extend(many.clone().map(|to| mint(to, 5_000)));
    m.extend(many.map(|i| transfer(i, i * 2, u128::from(i / 4))));
    for _ in 0..repeats {
        m.extend((1..130).map(balance));
        m.extend((1..130).map(|from| transfer(from, 1, 1)));
    }
    m
}
